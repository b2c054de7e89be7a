// Array files for the apps: NumPy .npy (read: format 1.0, 2.0 and 3.0; write: 1.0) for 2-D C-order
// little-endian float arrays, and raw float32 with explicit dimensions.
//
// Bad input (DESIGN §9): every defect is reported by one exception whose what() is a single line
// "<path>: <what is wrong>; <what to do>". Nothing is silently converted into garbage: NaN and Inf
// are refused with their position, float64 is narrowed only where every value fits float32.
//
// Writers never overwrite the caller's protected input (pass the input path) and replace the
// destination atomically (temporary file in the same directory, then rename), so a reader never
// sees a half-written file and a failed write leaves the old destination untouched.
//
// The .npy format: "\x93NUMPY", major, minor, header length (uint16 LE for 1.0, uint32 LE for
// 2.0/3.0), an ASCII Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (r, c), }
// padded with spaces and '\n' so the data starts at a multiple of 64 bytes, then the raw data.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace io {

// A defect in an input file (or its name, or the dimensions given for it).
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A refused or failed write (protected input, unwritable destination, disk full...).
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A row-major rows x cols array; data.size() == rows * cols.
struct Array2D {
  int rows = 0;
  int cols = 0;
  std::vector<float> data;
};

// What read_npy_f32 does with a '<f8' (float64) file.
enum class F64Policy {
  Convert,  // narrow to float32; refused where a value is outside float32's range
  Refuse,   // report the dtype and how to convert it
};

// Reads a 2-D C-order '<f4' .npy file (or '<f8' under F64Policy::Convert). Throws InputError on:
// a missing or unreadable file, bad magic, an unsupported version, a truncated or malformed header,
// a shape that is not 2-D or has a zero-sized dimension, fortran_order True, any other dtype
// (named in the message), a dimension above INT_MAX or a size that overflows, data shorter or
// longer than the shape says, NaN or Inf (row and column named).
Array2D read_npy_f32(const std::string& path, F64Policy f64 = F64Policy::Convert);

// A 2-D .npy file's shape and data type as read_npy_f32 checks them, and where its data starts.
struct NpyLayout {
  int rows = 0, cols = 0;
  bool f64 = false;  // '<f8' (read as float32); else '<f4'
  std::uint64_t data_start = 0;
};
// read_npy_f32's checks on the file but its values, without reading them.
NpyLayout read_npy_layout(const std::string& path, F64Policy f64 = F64Policy::Convert);
// Rows [row0, row0 + rows) of the file `layout` describes, into dst (rows x cols floats), with
// read_npy_f32's checks on their values (rows named as in the whole array). InputError as
// there, and where the rows are outside the array or the file's size has changed.
void read_npy_rows_f32(const std::string& path, const NpyLayout& layout, int row0, int rows, float* dst);

// Reads raw little-endian float32 samples, row-major rows x cols. The file size must be exactly
// rows * cols * 4 bytes. Same checks on the values as read_npy_f32.
Array2D read_raw_f32(const std::string& path, long long rows, long long cols);

// Writes rows x cols float32 values (row-major) as a .npy 1.0 file, atomically. Throws
// OutputError where `path` names the same file as `protected_input` (empty: no protection),
// where rows or cols is not positive, or where the write fails (the message names the reason).
void write_npy_f32(const std::string& path, int rows, int cols, const float* data,
                   const std::string& protected_input = {});
// The same for float64 ('<f8'): reference results and cross-checks.
void write_npy_f64(const std::string& path, int rows, int cols, const double* data,
                   const std::string& protected_input = {});
// Raw little-endian float32, no header; same protection and atomicity.
void write_raw_f32(const std::string& path, int rows, int cols, const float* data,
                   const std::string& protected_input = {});

// A float32 .npy written in parts, by several processes (the ranks of a job): its creator makes
// it under a temporary name beside `path`, with the header and the whole array's size; each
// part's writer opens that temporary (NpyRows) and writes its rows in place; once all have, the
// creator commits it into place. `path` names only ever a complete file. The constructor
// checks `path` as write_npy_f32 does; OutputError where any step fails.
class NpyParts {
 public:
  NpyParts(const std::string& path, int rows, int cols, const std::string& protected_input = {});
  ~NpyParts();  // removes the temporary unless committed
  NpyParts(const NpyParts&) = delete;
  NpyParts& operator=(const NpyParts&) = delete;
  const std::string& temp() const;
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One writer's view of a NpyParts file of rows x cols: its temporary `temp` (the creator's
// temp()) opened for writing, rows written in place; `path` names the file in messages.
class NpyRows {
 public:
  NpyRows(const std::string& path, const std::string& temp, int rows, int cols);
  ~NpyRows();
  NpyRows(const NpyRows&) = delete;
  NpyRows& operator=(const NpyRows&) = delete;
  // Rows [row0, row0 + n) of the array from src (n x cols floats, row-major).
  void write(int row0, int n, const float* src);
  // Columns [col0, col0 + ncols) of rows [row0, row0 + n), from src's rows (ld floats apart).
  void write(int row0, int n, int col0, int ncols, const float* src, std::size_t ld);
  // Closes the file, reporting what the writes left (OutputError).
  void close();

 private:
  void write_at(std::size_t offset, const float* src, std::size_t bytes);
  std::string path_;
  int rows_, cols_, fd_ = -1;
  std::size_t data_start_;
};

// True where a and b name the same file (same inode after resolving links and '..'), or the same
// normalised absolute path where b does not exist yet. Exposed for the apps' own checks.
bool same_file(const std::string& a, const std::string& b);

}  // namespace io
