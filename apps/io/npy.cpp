// .npy and raw float32 reading and writing; see npy.hpp for the format and the error policy.
#include "apps/io/npy.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>
#include <algorithm>
#include <functional>

#include "apps/io/output.hpp"

namespace io {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
// Samples converted or checked per chunk while streaming float64 data.
constexpr std::size_t kChunk = std::size_t(1) << 16;

bool host_is_little_endian() {
  const std::uint32_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw InputError(path + ": " + what);
}

[[noreturn]] void fail_out(const std::string& path, const std::string& what) {
  throw OutputError(path + ": " + what);
}

std::string errno_text(int err) { return std::strerror(err); }

// Printable excerpt of a header for messages: one line, at most 80 characters.
std::string excerpt(std::string_view s) {
  std::string out;
  for (char ch : s.substr(0, 80)) {
    const auto u = static_cast<unsigned char>(ch);
    out += (u >= 32 && u < 127) ? ch : '?';
  }
  if (s.size() > 80) out += "...";
  return out;
}

struct FileCloser {
  std::FILE* f;
  ~FileCloser() {
    if (f) std::fclose(f);
  }
};

// Opens `path` for reading after checking that it is a regular file; returns its size.
std::FILE* open_input(const std::string& path, std::uintmax_t& size) {
  if (path.empty()) throw InputError("empty input path; give a file name");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    const int err = ec ? ec.value() : ENOENT;
    fail(path, "cannot open (" + errno_text(err) + "); check the path");
  }
  if (fs::is_directory(st)) fail(path, "is a directory, not a data file; give the file's path");
  if (!fs::is_regular_file(st)) fail(path, "is not a regular file; give a plain data file");
  size = fs::file_size(path, ec);
  if (ec) fail(path, "cannot read its size (" + ec.message() + ")");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(path, "cannot open (" + errno_text(errno) + "); check the path and permissions");
  return f;
}

void read_exact(std::FILE* f, const std::string& path, void* dst, std::size_t bytes,
                const char* what) {
  const std::size_t got = std::fread(dst, 1, bytes, f);
  if (got != bytes) {
    const std::string why = std::ferror(f) ? errno_text(errno) : "unexpected end of file";
    fail(path, std::string("read error in the ") + what + " after " + std::to_string(got) +
                   " of " + std::to_string(bytes) + " bytes (" + why +
                   "); check that the file is complete and readable");
  }
}

// ---- The header dict: a Python literal {'key': value, ...} --------------------------------

struct Header {
  bool has_descr = false, has_fortran = false, has_shape = false;
  std::string descr;
  bool descr_is_structured = false;
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  Header parse() {
    Header h;
    expect('{');
    skip_ws();
    while (peek() != '}') {
      const std::string key = parse_string();
      expect(':');
      if (key == "descr") {
        h.has_descr = true;
        skip_ws();
        if (peek() == '[') {
          h.descr_is_structured = true;
          skip_value();
        } else {
          h.descr = parse_string();
        }
      } else if (key == "fortran_order") {
        h.has_fortran = true;
        h.fortran_order = parse_bool();
      } else if (key == "shape") {
        h.has_shape = true;
        h.shape = parse_shape();
      } else {
        skip_value();  // unknown keys are tolerated, as numpy does not write any
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != '}') {
        malformed("expected ',' or '}'");
      }
    }
    ++pos_;
    skip_ws();
    if (pos_ != s_.size()) malformed("text after the closing '}'");
    return h;
  }

 private:
  [[noreturn]] void malformed(const std::string& why) {
    fail(path_, "malformed .npy header (" + why + " at character " + std::to_string(pos_) +
                    " of \"" + excerpt(s_) + "\"); re-save the array with numpy.save");
  }
  char peek() {
    if (pos_ >= s_.size()) malformed("unexpected end of header");
    return s_[pos_];
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) malformed(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    skip_ws();
    const char q = peek();
    if (q != '\'' && q != '"') malformed("expected a quoted string");
    ++pos_;
    std::string out;
    while (peek() != q) {
      if (s_[pos_] == '\\') ++pos_;
      out += peek();
      ++pos_;
    }
    ++pos_;
    return out;
  }
  bool parse_bool() {
    skip_ws();
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    malformed("expected True or False");
  }
  std::uint64_t parse_uint() {
    skip_ws();
    if (peek() == '-') malformed("negative dimension");
    if (peek() < '0' || peek() > '9') malformed("expected a dimension");
    std::uint64_t v = 0;
    bool overflow = false;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const auto digit = static_cast<std::uint64_t>(s_[pos_] - '0');
      if (v > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) overflow = true;
      v = v * 10 + digit;
      ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long literal
    return overflow ? std::numeric_limits<std::uint64_t>::max() : v;
  }
  std::vector<std::uint64_t> parse_shape() {
    expect('(');
    std::vector<std::uint64_t> dims;
    skip_ws();
    while (peek() != ')') {
      dims.push_back(parse_uint());
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != ')') {
        malformed("expected ',' or ')' in the shape");
      }
    }
    ++pos_;
    return dims;
  }
  // Skips a value of any kind (nested brackets and strings), for keys we do not use.
  void skip_value() {
    skip_ws();
    int depth = 0;
    while (true) {
      const char c = peek();
      if (c == '\'' || c == '"') {
        parse_string();
        continue;
      }
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') {
        if (depth == 0) return;
        --depth;
      }
      if (c == ',' && depth == 0) return;
      ++pos_;
    }
  }

  std::string_view s_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

std::string shape_text(const std::vector<std::uint64_t>& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  if (dims.size() == 1) s += ",";
  return s + ")";
}

// A readable name for a NumPy dtype string such as '<i8'.
std::string dtype_name(const std::string& d) {
  if (d.size() < 2) return "unknown";
  const char order = d[0];
  const std::string body = (order == '<' || order == '>' || order == '|' || order == '=')
                               ? d.substr(1)
                               : d;
  std::string name;
  if (body.empty()) return "unknown";
  const char kind = body[0];
  const std::string bytes = body.substr(1);
  int bits = 0;
  try {
    bits = bytes.empty() ? 0 : 8 * std::stoi(bytes);
  } catch (...) {
    bits = 0;
  }
  const std::string b = bits ? std::to_string(bits) : std::string();
  switch (kind) {
    case 'f': name = "float" + b; break;
    case 'i': name = "int" + b; break;
    case 'u': name = "uint" + b; break;
    case 'c': name = "complex" + b; break;
    case 'b': name = "bool"; break;
    case 'U': name = "unicode string"; break;
    case 'S': name = "byte string"; break;
    case 'O': name = "Python object"; break;
    case 'M': name = "datetime64"; break;
    case 'm': name = "timedelta64"; break;
    case 'V': name = "void/structured"; break;
    default: name = "unknown"; break;
  }
  if (order == '>') name = "big-endian " + name;
  return name;
}

// Refuses dimensions the apps cannot index and sizes that overflow.
void check_dims(const std::string& path, std::uint64_t rows, std::uint64_t cols,
                std::size_t itemsize, const std::string& shape) {
  const std::uint64_t lim = static_cast<std::uint64_t>(INT_MAX);
  if (rows > lim || cols > lim)
    fail(path, "shape " + shape + " has a dimension above " + std::to_string(lim) +
                   "; split the array into smaller files");
  const std::uint64_t max_elems = std::numeric_limits<std::size_t>::max() / itemsize;
  if (rows != 0 && cols > max_elems / rows)
    fail(path, "size overflow: shape " + shape + " of " + std::to_string(itemsize) +
                   "-byte values does not fit in memory addresses; the header is corrupt or the "
                   "array too large");
}

// Scans for NaN or Inf; reports the first with its position and the count.
template <typename T>
void check_finite(const T* v, std::size_t n, std::size_t first_index, std::size_t& bad,
                  std::size_t& first_bad, T& first_value) {
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i])) {
      if (bad == 0) {
        first_bad = first_index + i;
        first_value = v[i];
      }
      ++bad;
    }
  }
}

template <typename T>
void report_non_finite(const std::string& path, std::size_t bad, std::size_t first_bad,
                       T first_value, int cols) {
  if (bad == 0) return;
  const std::size_t r = first_bad / static_cast<std::size_t>(cols);
  const std::size_t c = first_bad % static_cast<std::size_t>(cols);
  const char* kind = std::isnan(first_value) ? "NaN" : (first_value > 0 ? "+Inf" : "-Inf");
  const std::string count = bad == 1 ? std::string("the only non-finite value")
                                      : std::to_string(bad) + " non-finite values in all";
  fail(path, std::string(kind) + " at row " + std::to_string(r) + ", column " +
                 std::to_string(c) + " (0-based; " + count +
                 "); replace or mask them before the transform, e.g. numpy.nan_to_num");
}

// Reads rows x cols float32 values from f (already past any header) into out.data.
// Reads n float32 values into dst; `first` is the first one's index in the file's array (for
// messages), `cols` its width.
void read_f32_values(std::FILE* f, const std::string& path, float* dst, std::size_t n, std::size_t first, int cols) {
  read_exact(f, path, dst, n * sizeof(float), "data");
  std::size_t bad = 0, first_bad = 0;
  float first_value = 0;
  check_finite(dst, n, first, bad, first_bad, first_value);
  report_non_finite(path, bad, first_bad, first_value, cols);
}

// read_f32_values of the data at `offset` of `path`, in parts on up to kReadThreads threads,
// each reading its part with pread and checking it while it is in cache: one thread's read
// and check of 1 GiB from the page cache took 660-800 ms on the GPU machine's host, most of a
// forward's process. The first failing part's error; the first non-finite value in the file.
constexpr unsigned kReadThreads = 8;
constexpr std::size_t kReadPart = std::size_t(64) << 20;  // bytes: less is one thread's
void read_f32_parallel(const std::string& path, off_t offset, float* dst, std::size_t n, std::size_t first, int cols) {
  const std::size_t bytes = n * sizeof(float);
  const unsigned threads = unsigned(std::min<std::size_t>({kReadThreads, std::max(1u, std::thread::hardware_concurrency()),
                                                           std::max<std::size_t>(1, bytes / kReadPart)}));
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, "cannot open (" + errno_text(errno) + "); check the path and permissions");
  struct Part {
    std::size_t begin = 0, end = 0, got = 0, bad = 0, first_bad = 0;
    float first_value = 0;
    int err = 0;  // errno of a failed pread; 0 and got < end - begin: the file ended
  };
  std::vector<Part> parts(threads);
  const std::size_t per = (n + threads - 1) / threads;
  const auto run = [&](Part& pt) {
    auto* out = reinterpret_cast<char*>(dst + pt.begin);
    const std::size_t want = (pt.end - pt.begin) * sizeof(float);
    while (pt.got < want) {
      const ssize_t r = ::pread(fd, out + pt.got, want - pt.got, offset + off_t(pt.begin * sizeof(float) + pt.got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        pt.err = r < 0 ? errno : 0;
        return;
      }
      pt.got += std::size_t(r);
    }
    check_finite(dst + pt.begin, pt.end - pt.begin, first + pt.begin, pt.bad, pt.first_bad, pt.first_value);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    parts[t].begin = std::min(n, std::size_t(t) * per);
    parts[t].end = std::min(n, parts[t].begin + per);
    if (t > 0) pool.emplace_back(run, std::ref(parts[t]));
  }
  run(parts[0]);
  for (std::thread& th : pool) th.join();
  ::close(fd);
  std::size_t done = 0, bad = 0, first_bad = 0;
  float first_value = 0;
  for (const Part& pt : parts) {
    if (pt.got < (pt.end - pt.begin) * sizeof(float)) {
      const std::string why = pt.err ? errno_text(pt.err) : "unexpected end of file";
      fail(path, "read error in the data after " + std::to_string(done + pt.got) + " of " + std::to_string(bytes) +
                     " bytes (" + why + "); check that the file is complete and readable");
    }
    done += pt.got;
    if (pt.bad && bad == 0) first_bad = pt.first_bad, first_value = pt.first_value;
    bad += pt.bad;
  }
  report_non_finite(path, bad, first_bad, first_value, cols);
}

void read_f32_body(std::FILE* f, const std::string& path, Array2D& out) {
  const std::size_t n = static_cast<std::size_t>(out.rows) * static_cast<std::size_t>(out.cols);
  out.data.resize(n);
  read_f32_values(f, path, out.data.data(), n, 0, out.cols);
}

// Reads n float64 values and narrows them into dst, refusing non-finite and out-of-range
// values; `first` and `cols` as for read_f32_values.
void read_f64_values(std::FILE* f, const std::string& path, float* dst, std::size_t n, std::size_t first, int cols) {
  std::vector<double> buf(kChunk);
  std::size_t bad = 0, first_bad = 0;
  double first_value = 0;
  const double fmax = static_cast<double>(std::numeric_limits<float>::max());
  for (std::size_t done = 0; done < n;) {
    const std::size_t m = std::min(kChunk, n - done);
    read_exact(f, path, buf.data(), m * sizeof(double), "data");
    check_finite(buf.data(), m, first + done, bad, first_bad, first_value);
    for (std::size_t i = 0; i < m; ++i) {
      const double v = buf[i];
      if (std::isfinite(v) && std::fabs(v) > fmax) {
        const std::size_t k = first + done + i;
        std::ostringstream os;
        os << "float64 value " << v << " at row " << k / static_cast<std::size_t>(cols)
           << ", column " << k % static_cast<std::size_t>(cols)
           << " (0-based) is outside float32's range; scale the data or save it as float32";
        fail(path, os.str());
      }
      dst[done + i] = static_cast<float>(v);
    }
    done += m;
  }
  report_non_finite(path, bad, first_bad, first_value, cols);
}

// ---- Writing ------------------------------------------------------------------------------

std::string npy_header(const char* descr, int rows, int cols) {
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" +
                     std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  // Preamble: magic (6) + version (2) + length (2); the data starts at a multiple of 64.
  const std::size_t pre = kMagicLen + 2 + 2;
  const std::size_t total = (pre + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - pre - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicLen);
  out += '\x01';
  out += '\x00';
  const std::size_t len = dict.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  return out + dict;
}

// Writes header + data to a temporary file next to `path`, then renames it over `path`.
void write_atomic(const std::string& path, const std::string& header, const void* data,
                  std::size_t bytes, int rows, int cols, const std::string& protected_input) {
  if (rows <= 0 || cols <= 0)
    fail_out(path, "cannot write a " + std::to_string(rows) + " x " + std::to_string(cols) +
                       " array; rows and cols must be positive");
  if (!data) fail_out(path, "no data to write (null pointer)");
  if (!host_is_little_endian())
    fail_out(path, "this writer supports little-endian hosts only");
  if (path.empty()) throw OutputError("empty output path; give a file name");
  if (!protected_input.empty() && same_file(path, protected_input))
    fail_out(path, "refusing to overwrite the input file " + protected_input +
                       "; choose a different output path");
  std::error_code ec;
  if (fs::is_directory(path, ec))
    fail_out(path, "is a directory; give a file name for the output");

  base::AtomicFile file(path);
  std::FILE* f = file.open();
  if (!f)
    fail_out(path, "cannot create the temporary file " + file.temp() + " (" + errno_text(errno) +
                       "); check that the directory exists and is writable");
  auto abandon = [&](const std::string& why) {
    fail_out(path, "write failed (" + why + "); check free disk space and permissions");
  };
  if (!header.empty() && std::fwrite(header.data(), 1, header.size(), f) != header.size())
    abandon(errno_text(errno));
  const auto* p = static_cast<const unsigned char*>(data);
  constexpr std::size_t kBlock = std::size_t(1) << 24;
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t m = std::min(kBlock, bytes - done);
    if (std::fwrite(p + done, 1, m, f) != m) abandon(errno_text(errno));
    done += m;
  }
  if (std::fflush(f) != 0) abandon(errno_text(errno));
  if (const int err = file.close()) fail_out(path, "write failed (" + errno_text(err) + "); check free disk space");
  if (const int err = file.commit())
    fail_out(path, "cannot move the finished file into place (" + errno_text(err) + ")");
}

}  // namespace

struct NpyParts::Impl {
  explicit Impl(const std::string& p) : path(p), file(p) {}
  std::string path;
  base::AtomicFile file;
};

NpyParts::NpyParts(const std::string& path, int rows, int cols, const std::string& protected_input)
    : impl_(std::make_unique<Impl>(path)) {
  if (rows <= 0 || cols <= 0)
    fail_out(path, "cannot write a " + std::to_string(rows) + " x " + std::to_string(cols) +
                       " array; rows and cols must be positive");
  if (!host_is_little_endian()) fail_out(path, "this writer supports little-endian hosts only");
  if (!protected_input.empty() && same_file(path, protected_input))
    fail_out(path, "refusing to overwrite the input file " + protected_input + "; choose a different output path");
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail_out(path, "is a directory; give a file name for the output");
  std::FILE* f = impl_->file.open();
  if (!f)
    fail_out(path, "cannot create the temporary file " + impl_->file.temp() + " (" + errno_text(errno) +
                       "); check that the directory exists and is writable");
  const std::string header = npy_header("<f4", rows, cols);
  const auto size = off_t(header.size() + std::size_t(rows) * std::size_t(cols) * sizeof(float));
  if (std::fwrite(header.data(), 1, header.size(), f) != header.size() || std::fflush(f) != 0 ||
      ftruncate(fileno(f), size) != 0)
    fail_out(path, "write failed (" + errno_text(errno) + "); check free disk space and permissions");
  if (const int err = impl_->file.close()) fail_out(path, "write failed (" + errno_text(err) + ")");
}

NpyParts::~NpyParts() = default;

const std::string& NpyParts::temp() const { return impl_->file.temp(); }

void NpyParts::commit() {
  if (const int err = impl_->file.commit())
    fail_out(impl_->path, "cannot move the finished file into place (" + errno_text(err) + ")");
}

NpyRows::NpyRows(const std::string& path, const std::string& temp, int rows, int cols)
    : path_(path), rows_(rows), cols_(cols), data_start_(npy_header("<f4", rows, cols).size()) {
  fd_ = ::open(temp.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) fail_out(path_, "cannot open the file being written, " + temp + " (" + errno_text(errno) + ")");
}

NpyRows::~NpyRows() {
  if (fd_ >= 0) ::close(fd_);
}

void NpyRows::write(int row0, int n, const float* src) { write(row0, n, 0, cols_, src, std::size_t(cols_)); }

void NpyRows::write(int row0, int n, int col0, int ncols, const float* src, std::size_t ld) {
  if (row0 < 0 || n < 0 || row0 + n > rows_ || col0 < 0 || ncols < 0 || col0 + ncols > cols_)
    fail_out(path_, "rows " + std::to_string(row0) + " to " + std::to_string(row0 + n) + ", columns " +
                        std::to_string(col0) + " to " + std::to_string(col0 + ncols) + " are outside its " +
                        std::to_string(rows_) + " x " + std::to_string(cols_));
  const bool whole = col0 == 0 && ncols == cols_ && ld == std::size_t(cols_);  // one write
  for (int i = 0; i < (whole ? 1 : n); ++i)
    write_at(data_start_ + (std::size_t(row0 + i) * std::size_t(cols_) + std::size_t(col0)) * sizeof(float),
             src + std::size_t(i) * ld, std::size_t(whole ? n : 1) * std::size_t(ncols) * sizeof(float));
}

void NpyRows::write_at(std::size_t offset, const float* src, std::size_t bytes) {
  const auto* p = reinterpret_cast<const char*>(src);
  std::size_t left = bytes;
  auto at = off_t(offset);
  while (left > 0) {
    const ssize_t w = ::pwrite(fd_, p, std::min(left, std::size_t(1) << 30), at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail_out(path_, "write failed (" + errno_text(w < 0 ? errno : ENOSPC) + "); check free disk space");
    p += w, at += w, left -= std::size_t(w);
  }
}

void NpyRows::close() {
  const int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0) fail_out(path_, "write failed (" + errno_text(errno) + ")");
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ea, eb;
  const bool ea_exists = fs::exists(a, ea), eb_exists = fs::exists(b, eb);
  if (ea_exists && eb_exists) {
    std::error_code ec;
    const bool eq = fs::equivalent(a, b, ec);
    if (!ec) return eq;
  }
  std::error_code ca, cb;
  const fs::path pa = fs::weakly_canonical(fs::absolute(a, ca), ca);
  const fs::path pb = fs::weakly_canonical(fs::absolute(b, cb), cb);
  if (ca || cb) return fs::absolute(a).lexically_normal() == fs::absolute(b).lexically_normal();
  return pa == pb;
}

namespace {

// read_npy_layout's checks, on `f` (of `size` bytes) left at the data's start.
NpyLayout read_layout(std::FILE* f, const std::string& path, std::uintmax_t size, F64Policy f64) {

  constexpr std::size_t kPre = kMagicLen + 2;
  unsigned char pre[kPre + 4];
  if (size < kPre + 2)
    fail(path, "truncated header: the file has " + std::to_string(size) +
                   " bytes, fewer than a .npy preamble (10); it is empty or not a .npy file");
  read_exact(f, path, pre, kPre, "preamble");
  if (std::memcmp(pre, kMagic, kMagicLen) != 0)
    fail(path, "not a .npy file (bad magic: it does not start with \\x93NUMPY); save the array "
               "with numpy.save, or read raw float32 with explicit dimensions");
  const int major = pre[6], minor = pre[7];
  std::size_t len_bytes = 0;
  if (major == 1) {
    len_bytes = 2;
  } else if (major == 2 || major == 3) {
    len_bytes = 4;
  } else {
    fail(path, "unsupported .npy format version " + std::to_string(major) + "." +
                   std::to_string(minor) + " (1.0, 2.0 and 3.0 are read); re-save with numpy.save");
  }
  if (size < kPre + len_bytes)
    fail(path, "truncated header: the file ends inside the header length field");
  read_exact(f, path, pre + kPre, len_bytes, "header length");
  std::uint64_t hlen = 0;
  for (std::size_t i = 0; i < len_bytes; ++i)
    hlen |= static_cast<std::uint64_t>(pre[kPre + i]) << (8 * i);
  const std::uint64_t data_start = kPre + len_bytes + hlen;
  if (data_start > size)
    fail(path, "truncated header: it declares " + std::to_string(hlen) + " bytes but only " +
                   std::to_string(size - (kPre + len_bytes)) +
                   " follow; the file is incomplete (re-copy or re-save it)");
  std::string text(static_cast<std::size_t>(hlen), '\0');
  read_exact(f, path, text.data(), text.size(), "header");
  const Header h = HeaderParser(text, path).parse();
  if (!h.has_descr || !h.has_fortran || !h.has_shape)
    fail(path, std::string("malformed .npy header (no '") +
                   (!h.has_descr ? "descr" : !h.has_fortran ? "fortran_order" : "shape") +
                   "' key in \"" + excerpt(text) + "\"); re-save the array with numpy.save");

  if (h.descr_is_structured)
    fail(path, "dtype is a structured (record) type; a plain float32 ('<f4') array is needed: "
               "save one field, e.g. numpy.save(path, a['z'].astype(numpy.float32))");
  const bool is_f4 = h.descr == "<f4", is_f8 = h.descr == "<f8";
  if (!is_f4 && !(is_f8 && f64 == F64Policy::Convert)) {
    fail(path, "dtype is '" + excerpt(h.descr) + "' (" + dtype_name(h.descr) +
                   "); float32 ('<f4') is needed: save a.astype('<f4')");
  }
  if (h.fortran_order)
    fail(path, "array is in Fortran (column-major) order; save numpy.ascontiguousarray(a) instead");
  const std::string shape = shape_text(h.shape);
  if (h.shape.size() != 2) {
    const std::string dims =
        h.shape.empty() ? "0-D (a scalar)" : std::to_string(h.shape.size()) + "-D";
    fail(path, "array is " + dims + " with shape " + shape +
                   "; a 2-D (rows, cols) array is needed, e.g. save a.reshape(rows, cols)");
  }
  if (h.shape[0] == 0 || h.shape[1] == 0)
    fail(path, "array has a zero-sized dimension (shape " + shape + "); give a non-empty array");
  const std::size_t itemsize = is_f4 ? 4 : 8;
  check_dims(path, h.shape[0], h.shape[1], itemsize, shape);
  const std::uint64_t need = h.shape[0] * h.shape[1] * itemsize;
  const std::uint64_t have = size - data_start;
  if (have < need)
    fail(path, "data truncated: shape " + shape + " of '" + h.descr + "' needs " +
                   std::to_string(need) + " bytes after the header, the file has " +
                   std::to_string(have) + "; the file is incomplete (re-copy or re-save it)");
  if (have > need)
    fail(path, std::to_string(have - need) + " unexpected bytes after the data of shape " + shape +
                   "; this is not a plain .npy array (re-save it with numpy.save)");

  NpyLayout l;
  l.rows = static_cast<int>(h.shape[0]);
  l.cols = static_cast<int>(h.shape[1]);
  l.f64 = is_f8;
  l.data_start = data_start;
  return l;
}

}  // namespace

NpyLayout read_npy_layout(const std::string& path, F64Policy f64) {
  if (!host_is_little_endian())
    fail(path, "this reader supports little-endian hosts only");
  std::uintmax_t size = 0;
  FileCloser fc{open_input(path, size)};
  return read_layout(fc.f, path, size, f64);
}

Array2D read_npy_f32(const std::string& path, F64Policy f64) {
  if (!host_is_little_endian())
    fail(path, "this reader supports little-endian hosts only");
  std::uintmax_t size = 0;
  FileCloser fc{open_input(path, size)};
  const NpyLayout l = read_layout(fc.f, path, size, f64);
  Array2D out;
  out.rows = l.rows;
  out.cols = l.cols;
  const std::size_t n = std::size_t(l.rows) * std::size_t(l.cols);
  out.data.resize(n);
  if (l.f64) read_f64_values(fc.f, path, out.data.data(), n, 0, l.cols);
  else read_f32_values(fc.f, path, out.data.data(), n, 0, l.cols);
  return out;
}

void read_npy_rows_f32(const std::string& path, const NpyLayout& l, int row0, int rows, float* dst) {
  if (row0 < 0 || rows < 0 || row0 > l.rows - rows)
    fail(path, "rows " + std::to_string(row0) + " to " + std::to_string(row0 + rows) + " are outside its " +
                   std::to_string(l.rows) + " rows");
  std::uintmax_t size = 0;
  FileCloser fc{open_input(path, size)};
  const std::size_t item = l.f64 ? 8 : 4, first = std::size_t(row0) * std::size_t(l.cols);
  if (size != l.data_start + std::uint64_t(l.rows) * std::uint64_t(l.cols) * item)
    fail(path, "changed since its header was read (" + std::to_string(size) + " bytes now)");
  const std::size_t n = std::size_t(rows) * std::size_t(l.cols);
  const off_t at = off_t(l.data_start + first * item);
  if (!l.f64) return read_f32_parallel(path, at, dst, n, first, l.cols);
  if (fseeko(fc.f, at, SEEK_SET) != 0)
    fail(path, "cannot seek to row " + std::to_string(row0) + " (" + errno_text(errno) + ")");
  read_f64_values(fc.f, path, dst, n, first, l.cols);
}

Array2D read_raw_f32(const std::string& path, long long rows, long long cols) {
  if (rows <= 0 || cols <= 0)
    fail(path, "raw float32 needs positive dimensions, got " + std::to_string(rows) + " x " +
                   std::to_string(cols) + "; give the array's rows and cols");
  if (!host_is_little_endian())
    fail(path, "this reader supports little-endian hosts only");
  const std::string shape =
      "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
  check_dims(path, static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(cols), 4, shape);
  std::uintmax_t size = 0;
  FileCloser fc{open_input(path, size)};
  const std::uint64_t need = static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) * 4;
  if (size != need) {
    std::string samples = std::to_string(size / 4) + " samples";
    if (size % 4) samples += " and " + std::to_string(size % 4) + " stray bytes";
    fail(path, "has " + std::to_string(size) + " bytes (" + samples + ") but " +
                   std::to_string(rows) + " x " + std::to_string(cols) + " float32 needs " +
                   std::to_string(need) + "; check the dimensions given for it");
  }
  Array2D out;
  out.rows = static_cast<int>(rows);
  out.cols = static_cast<int>(cols);
  read_f32_body(fc.f, path, out);
  return out;
}

void write_npy_f32(const std::string& path, int rows, int cols, const float* data,
                   const std::string& protected_input) {
  const std::size_t n = rows > 0 && cols > 0 ? std::size_t(rows) * std::size_t(cols) : 0;
  write_atomic(path, npy_header("<f4", rows, cols), data, n * sizeof(float), rows, cols,
               protected_input);
}

void write_npy_f64(const std::string& path, int rows, int cols, const double* data,
                   const std::string& protected_input) {
  const std::size_t n = rows > 0 && cols > 0 ? std::size_t(rows) * std::size_t(cols) : 0;
  write_atomic(path, npy_header("<f8", rows, cols), data, n * sizeof(double), rows, cols,
               protected_input);
}

void write_raw_f32(const std::string& path, int rows, int cols, const float* data,
                   const std::string& protected_input) {
  const std::size_t n = rows > 0 && cols > 0 ? std::size_t(rows) * std::size_t(cols) : 0;
  write_atomic(path, std::string(), data, n * sizeof(float), rows, cols, protected_input);
}

}  // namespace io
