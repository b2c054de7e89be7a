// lwt_io: .npy / raw readers and writers (every defect of DESIGN §9 refused with a message that
// names it) and the synthetic surface (deterministic across thread counts, the intended mix).
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "apps/io/npy.hpp"
#include "apps/io/output.hpp"
#include "apps/io/surface.hpp"
#include "base/atomic_file.hpp"
#include "base/host_threads.hpp"

namespace fs = std::filesystem;

namespace {

// A fresh directory per test, removed afterwards.
class IoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("test_io_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A .npy file made by hand: version, header dict (padded like numpy does) and payload.
std::string npy_bytes(const std::string& dict, const std::string& payload, int major = 1) {
  std::string h = dict;
  const std::size_t pre = major == 1 ? 10 : 12;
  while ((pre + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t n = h.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  return out + h + payload;
}

std::string dict(const std::string& descr, const std::string& shape,
                 const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

template <typename T>
std::string payload(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::vector<float> iota_f(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.5f * static_cast<float>(i) - 3.0f;
  return v;
}

// The message of the io::InputError that reading `file` throws ("" where none is thrown).
std::string read_error(const std::string& file) {
  try {
    io::read_npy_f32(file);
  } catch (const io::InputError& e) {
    return e.what();
  }
  return "";
}

// Every message is one line that starts with the file name.
void expect_one_line_about(const std::string& msg, const std::string& file) {
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(msg.rfind(file, 0), 0u) << msg;
}

#define EXPECT_REFUSED(file, needle)                                                 \
  do {                                                                               \
    const std::string msg_ = read_error(file);                                       \
    ASSERT_FALSE(msg_.empty()) << "no error for " << (file);                         \
    EXPECT_NE(msg_.find(needle), std::string::npos) << "message: " << msg_;          \
    expect_one_line_about(msg_, file);                                               \
  } while (0)

// ---- Round trips ------------------------------------------------------------------------

TEST_F(IoTest, NpyRoundTripF32) {
  for (auto [r, c] : {std::pair{1, 1}, {3, 5}, {17, 64}, {64, 3}}) {
    const auto v = iota_f(std::size_t(r) * c);
    const std::string p = path("a.npy");
    io::write_npy_f32(p, r, c, v.data());
    const io::Array2D a = io::read_npy_f32(p);
    EXPECT_EQ(a.rows, r);
    EXPECT_EQ(a.cols, c);
    EXPECT_EQ(a.data, v);
    // numpy's layout: data starts at a multiple of 64 bytes.
    EXPECT_EQ((fs::file_size(p) - v.size() * 4) % 64, 0u);
  }
  // No temporary files left behind.
  int files = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 1);
}

TEST_F(IoTest, NpyF64IsConvertedOrReported) {
  const std::vector<double> v{1.0, -2.5, 3.25, 1e-3, 7.0, 8.0};
  const std::string p = path("d.npy");
  io::write_npy_f64(p, 2, 3, v.data());
  const io::Array2D a = io::read_npy_f32(p);
  ASSERT_EQ(a.rows, 2);
  ASSERT_EQ(a.cols, 3);
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(a.data[i], static_cast<float>(v[i]));
  try {
    io::read_npy_f32(p, io::F64Policy::Refuse);
    FAIL() << "float64 accepted under F64Policy::Refuse";
  } catch (const io::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("float64"), std::string::npos) << e.what();
  }
  const std::vector<double> big{1.0, 1e300};
  write_bytes(path("big.npy"), npy_bytes(dict("<f8", "(1, 2)"), payload(big)));
  EXPECT_REFUSED(path("big.npy"), "outside float32's range");
  const std::vector<double> nan{1.0, 2.0, std::nan(""), 4.0};
  write_bytes(path("nan8.npy"), npy_bytes(dict("<f8", "(2, 2)"), payload(nan)));
  EXPECT_REFUSED(path("nan8.npy"), "NaN at row 1, column 0");
}

TEST_F(IoTest, NpyVersion2And3HeadersAreRead) {
  const auto v = iota_f(6);
  for (int major : {2, 3}) {
    const std::string p = path("v" + std::to_string(major) + ".npy");
    write_bytes(p, npy_bytes(dict("<f4", "(2, 3)"), payload(v), major));
    const io::Array2D a = io::read_npy_f32(p);
    EXPECT_EQ(a.rows, 2);
    EXPECT_EQ(a.cols, 3);
    EXPECT_EQ(a.data, v);
  }
  // Key order, double quotes, no trailing comma and Python 2 longs are all valid dicts.
  const std::string p = path("keys.npy");
  write_bytes(p, npy_bytes("{\"shape\": (2L, 3L), \"fortran_order\": False, \"descr\": \"<f4\"}",
                           payload(v)));
  EXPECT_EQ(io::read_npy_f32(p).data, v);
}

// ---- Defects ------------------------------------------------------------------------------

TEST_F(IoTest, MissingOrUnreadableFile) {
  EXPECT_REFUSED(path("nope.npy"), "cannot open");
  EXPECT_REFUSED(dir_.string(), "is a directory");
  const std::string p = path("empty.npy");
  write_bytes(p, "");
  EXPECT_REFUSED(p, "truncated header");
}

TEST_F(IoTest, BadMagic) {
  const std::string p = path("magic.npy");
  const char zip[] = "PK\x03\x04 this is a zip archive, not an npy file";
  write_bytes(p, std::string(zip, sizeof zip - 1));
  EXPECT_REFUSED(p, "bad magic");
}

TEST_F(IoTest, UnsupportedVersion) {
  const std::string p = path("v9.npy");
  std::string b = npy_bytes(dict("<f4", "(1, 1)"), payload(iota_f(1)));
  b[6] = 9;
  write_bytes(p, b);
  EXPECT_REFUSED(p, "unsupported .npy format version 9.0");
}

TEST_F(IoTest, TruncatedHeader) {
  const std::string full = npy_bytes(dict("<f4", "(2, 2)"), payload(iota_f(4)));
  const std::string p = path("th.npy");
  write_bytes(p, full.substr(0, 40));  // cut inside the dict
  EXPECT_REFUSED(p, "truncated header");
  write_bytes(p, full.substr(0, 9));  // cut inside the length field
  EXPECT_REFUSED(p, "truncated header");
}

TEST_F(IoTest, MalformedHeader) {
  const std::string p = path("mh.npy");
  write_bytes(p, npy_bytes("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1, 1), }",
                           payload(iota_f(1))));
  EXPECT_REFUSED(p, "malformed .npy header");
  write_bytes(p, npy_bytes("{'descr': '<f4', 'fortran_order': False}", payload(iota_f(1))));
  EXPECT_REFUSED(p, "no 'shape' key");
  write_bytes(p, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 2)}",
                           payload(iota_f(1))));
  EXPECT_REFUSED(p, "negative dimension");
}

TEST_F(IoTest, TruncatedData) {
  const std::string p = path("td.npy");
  write_bytes(p, npy_bytes(dict("<f4", "(4, 4)"), payload(iota_f(15))));
  EXPECT_REFUSED(p, "data truncated");
  write_bytes(p, npy_bytes(dict("<f4", "(2, 2)"), payload(iota_f(5))));
  EXPECT_REFUSED(p, "unexpected bytes after the data");
}

TEST_F(IoTest, NotTwoDimensional) {
  const std::string p = path("nd.npy");
  write_bytes(p, npy_bytes(dict("<f4", "(6,)"), payload(iota_f(6))));
  EXPECT_REFUSED(p, "1-D with shape (6,)");
  write_bytes(p, npy_bytes(dict("<f4", "(1, 2, 3)"), payload(iota_f(6))));
  EXPECT_REFUSED(p, "3-D with shape (1, 2, 3)");
  write_bytes(p, npy_bytes(dict("<f4", "()"), payload(iota_f(1))));
  EXPECT_REFUSED(p, "0-D");
}

TEST_F(IoTest, FortranOrder) {
  const std::string p = path("f.npy");
  write_bytes(p, npy_bytes(dict("<f4", "(2, 3)", "True"), payload(iota_f(6))));
  EXPECT_REFUSED(p, "Fortran");
}

TEST_F(IoTest, WrongDtypeIsNamed) {
  const std::string p = path("dt.npy");
  const std::vector<std::int64_t> i64(6, 1);
  write_bytes(p, npy_bytes(dict("<i8", "(2, 3)"), payload(i64)));
  EXPECT_REFUSED(p, "'<i8' (int64)");
  write_bytes(p, npy_bytes(dict(">f4", "(2, 3)"), payload(iota_f(6))));
  EXPECT_REFUSED(p, "big-endian float32");
  write_bytes(p, npy_bytes(dict("<f2", "(2, 3)"), std::string(12, '\0')));
  EXPECT_REFUSED(p, "float16");
  write_bytes(p, npy_bytes("{'descr': [('x', '<f4'), ('y', '<f4')], 'fortran_order': False, "
                           "'shape': (3, 1), }",
                           payload(iota_f(6))));
  EXPECT_REFUSED(p, "structured");
}

TEST_F(IoTest, ZeroSizedDimension) {
  const std::string p = path("z.npy");
  write_bytes(p, npy_bytes(dict("<f4", "(0, 5)"), ""));
  EXPECT_REFUSED(p, "zero-sized dimension");
  write_bytes(p, npy_bytes(dict("<f4", "(5, 0)"), ""));
  EXPECT_REFUSED(p, "zero-sized dimension");
}

// Rows of a file without reading the rest (each rank of lwt2d-mpi reads its own strips): the
// same values as the whole array's rows, float64 narrowed, non-finite values placed by their row
// in the whole array, rows outside it refused.
TEST_F(IoTest, NpyRowsAreTheWholeArraysRows) {
  const int r = 37, c = 13;  // awkward sizes
  const auto v = iota_f(std::size_t(r) * c);
  const std::string p = path("rows.npy");
  io::write_npy_f32(p, r, c, v.data());
  const io::NpyLayout l = io::read_npy_layout(p);
  EXPECT_EQ(l.rows, r);
  EXPECT_EQ(l.cols, c);
  EXPECT_FALSE(l.f64);
  for (auto [row0, rows] : {std::pair{0, 1}, {5, 11}, {36, 1}, {0, 37}, {20, 0}}) {
    std::vector<float> got(std::size_t(rows) * c, -1.0f);
    io::read_npy_rows_f32(p, l, row0, rows, got.data());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), v.begin() + std::ptrdiff_t(row0) * c)) << row0 << "+" << rows;
  }
  std::vector<float> sink(std::size_t(r) * c);
  EXPECT_THROW(io::read_npy_rows_f32(p, l, 30, 8, sink.data()), io::InputError);
  EXPECT_THROW(io::read_npy_rows_f32(p, l, -1, 2, sink.data()), io::InputError);

  const std::vector<double> d{1.0, -2.5, 3.25, 1e-3, 7.0, std::nan("")};
  io::write_npy_f64(path("d.npy"), 3, 2, d.data());
  const io::NpyLayout ld = io::read_npy_layout(path("d.npy"));
  EXPECT_TRUE(ld.f64);
  float two[2];
  io::read_npy_rows_f32(path("d.npy"), ld, 1, 1, two);
  EXPECT_EQ(two[0], 3.25f);
  EXPECT_EQ(two[1], 1e-3f);
  try {
    io::read_npy_rows_f32(path("d.npy"), ld, 2, 1, two);
    FAIL() << "a NaN read";
  } catch (const io::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("NaN at row 2, column 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(io::read_npy_layout(path("d.npy"), io::F64Policy::Refuse), io::InputError);
}

TEST_F(IoTest, NonFiniteValuesArePlaced) {
  const std::string p = path("nan.npy");
  auto v = iota_f(12);
  v[7] = std::numeric_limits<float>::quiet_NaN();  // row 1, column 3 of a 3 x 4 array
  v[9] = std::numeric_limits<float>::infinity();
  write_bytes(p, npy_bytes(dict("<f4", "(3, 4)"), payload(v)));
  EXPECT_REFUSED(p, "NaN at row 1, column 3");
  EXPECT_REFUSED(p, "2 non-finite values");
  v[7] = 0;
  v[9] = -std::numeric_limits<float>::infinity();
  write_bytes(p, npy_bytes(dict("<f4", "(3, 4)"), payload(v)));
  EXPECT_REFUSED(p, "-Inf at row 2, column 1");
}

TEST_F(IoTest, SizeOverflow) {
  const std::string p = path("ov.npy");
  write_bytes(p, npy_bytes(dict("<f8", "(2147483647, 2147483647)"), payload(iota_f(4))));
  EXPECT_REFUSED(p, "size overflow");
  write_bytes(p, npy_bytes(dict("<f4", "(3000000000, 2)"), payload(iota_f(4))));
  EXPECT_REFUSED(p, "has a dimension above 2147483647");
  write_bytes(p, npy_bytes(dict("<f4", "(99999999999999999999999999, 2)"), payload(iota_f(4))));
  EXPECT_REFUSED(p, "has a dimension above");
  // A large but representable shape over a small file: truncated, never allocated.
  write_bytes(p, npy_bytes(dict("<f4", "(2000000000, 2000000000)"), payload(iota_f(4))));
  EXPECT_REFUSED(p, "data truncated");
}

TEST_F(IoTest, CorruptedFilesAreRefusedNeverCrash) {
  // Flip, truncate or extend a valid file at random: every outcome is a valid array of the right
  // size or one io::InputError line, never a crash or another exception.
  const std::string good = npy_bytes(dict("<f4", "(3, 5)"), payload(iota_f(15)));
  std::mt19937 g(12345);
  const std::string p = path("fuzz.npy");
  int refused = 0;
  for (int it = 0; it < 3000; ++it) {
    std::string b = good;
    const int edits = 1 + int(g() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t at = g() % b.size();
      switch (g() % 4) {
        case 0: b[at] = static_cast<char>(g() & 0xff); break;
        case 1: b.resize(at); break;
        case 2: b.insert(at, 1, "{}(),:' 0123456789TF<f48\n"[g() % 25]); break;
        default: b += static_cast<char>(g() & 0xff); break;
      }
      if (b.empty()) b = "x";
    }
    write_bytes(p, b);
    try {
      const io::Array2D a = io::read_npy_f32(p);
      ASSERT_EQ(a.data.size(), std::size_t(a.rows) * std::size_t(a.cols));
    } catch (const io::InputError& e) {
      ++refused;
      ASSERT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(refused, 1000);
}

// ---- Raw float32 ----------------------------------------------------------------------------

TEST_F(IoTest, RawReadChecksTheSizeExactly) {
  const auto v = iota_f(12);
  const std::string p = path("a.raw");
  io::write_raw_f32(p, 3, 4, v.data());
  EXPECT_EQ(fs::file_size(p), 48u);
  const io::Array2D a = io::read_raw_f32(p, 3, 4);
  EXPECT_EQ(a.rows, 3);
  EXPECT_EQ(a.cols, 4);
  EXPECT_EQ(a.data, v);
  EXPECT_EQ(io::read_raw_f32(p, 2, 6).data, v);

  auto raw_error = [](const std::string& f, long long r, long long c) -> std::string {
    try {
      io::read_raw_f32(f, r, c);
    } catch (const io::InputError& e) {
      return e.what();
    }
    return "";
  };
  std::string m = raw_error(p, 4, 4);
  EXPECT_NE(m.find("has 48 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("needs 64"), std::string::npos) << m;
  m = raw_error(p, 2, 4);
  EXPECT_NE(m.find("needs 32"), std::string::npos) << m;
  m = raw_error(p, 0, 4);
  EXPECT_NE(m.find("positive dimensions"), std::string::npos) << m;
  m = raw_error(p, -3, 4);
  EXPECT_NE(m.find("positive dimensions"), std::string::npos) << m;
  m = raw_error(p, 3000000000LL, 1);
  EXPECT_NE(m.find("dimension above"), std::string::npos) << m;
  m = raw_error(path("missing.raw"), 3, 4);
  EXPECT_NE(m.find("cannot open"), std::string::npos) << m;
  write_bytes(p, payload(v) + "xy");
  m = raw_error(p, 3, 4);
  EXPECT_NE(m.find("2 stray bytes"), std::string::npos) << m;
  auto w = v;
  w[5] = std::numeric_limits<float>::quiet_NaN();
  io::write_raw_f32(p, 3, 4, w.data());
  m = raw_error(p, 3, 4);
  EXPECT_NE(m.find("NaN at row 1, column 1"), std::string::npos) << m;
}

// ---- Writing ------------------------------------------------------------------------------

TEST_F(IoTest, WriteRefusesToOverwriteTheInput) {
  const auto v = iota_f(6);
  const std::string in = path("in.npy");
  io::write_npy_f32(in, 2, 3, v.data());
  const auto before = fs::file_size(in);
  const auto zeros = std::vector<float>(6, 0.0f);
  auto refused = [&](const std::string& out) {
    try {
      io::write_npy_f32(out, 2, 3, zeros.data(), in);
    } catch (const io::OutputError& e) {
      EXPECT_NE(std::string(e.what()).find("refusing to overwrite the input"), std::string::npos)
          << e.what();
      return true;
    }
    return false;
  };
  EXPECT_TRUE(refused(in));
  EXPECT_TRUE(refused((dir_ / "." / "in.npy").string()));             // another spelling
  EXPECT_TRUE(refused((dir_ / "sub" / ".." / "in.npy").string()));    // through '..' (sub absent)
  fs::create_symlink(in, path("link.npy"));
  EXPECT_TRUE(refused(path("link.npy")));                             // through a link
  fs::create_hard_link(in, path("hard.npy"));
  EXPECT_TRUE(refused(path("hard.npy")));                             // a hard link
  EXPECT_THROW(io::write_raw_f32(in, 2, 3, zeros.data(), in), io::OutputError);
  EXPECT_EQ(fs::file_size(in), before);
  EXPECT_EQ(io::read_npy_f32(in).data, v);
  // Another name is fine, and replaces an existing file.
  io::write_npy_f32(path("out.npy"), 2, 3, zeros.data(), in);
  io::write_npy_f32(path("out.npy"), 2, 3, v.data(), in);
  EXPECT_EQ(io::read_npy_f32(path("out.npy")).data, v);
}

TEST_F(IoTest, WriteFailuresAreReported) {
  const auto v = iota_f(6);
  EXPECT_THROW(io::write_npy_f32(path("no/such/dir/x.npy"), 2, 3, v.data()), io::OutputError);
  EXPECT_THROW(io::write_npy_f32(path("x.npy"), 0, 3, v.data()), io::OutputError);
  EXPECT_THROW(io::write_npy_f32(path("x.npy"), 2, 3, nullptr), io::OutputError);
  EXPECT_THROW(io::write_npy_f32(dir_.string(), 2, 3, v.data()), io::OutputError);
  EXPECT_FALSE(fs::exists(path("x.npy")));
  int files = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir_)) ++files;
  EXPECT_EQ(files, 0);  // no temporary left behind
}

// ---- Output paths, staged sets, temporaries on a signal ----------------------------------

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST_F(IoTest, OutputPathsAreCheckedBeforeWork) {
  EXPECT_NO_THROW(io::check_output_file(path("x.npy")));
  EXPECT_NO_THROW(io::check_output_dir(path("new/deeper")));  // created when written
  EXPECT_THROW(io::check_output_file(path("no/such/x.npy")), io::OutputPathError);
  EXPECT_THROW(io::check_output_file(dir_.string()), io::OutputPathError);  // a folder
  EXPECT_THROW(io::check_output_file(""), io::OutputPathError);
  EXPECT_THROW(io::check_output_file("/dev/null"), io::OutputPathError);  // would replace the device
  write_bytes(path("file"), "x");
  EXPECT_THROW(io::check_output_dir(path("file")), io::OutputPathError);
  EXPECT_THROW(io::check_output_dir(path("file/sub")), io::OutputPathError);
  EXPECT_THROW(io::check_output_file(path("file/x.npy")), io::OutputPathError);
  try {
    io::check_output_file(path("no/such/x.npy"));
  } catch (const io::OutputPathError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  // A location that takes no new file: a read-only folder (root writes there anyway, so /sys,
  // where no one creates files, stands in).
  fs::create_directory(path("ro"));
  fs::permissions(path("ro"), fs::perms::owner_read | fs::perms::owner_exec);
  const std::string ro = ::access(path("ro").c_str(), W_OK) == 0 ? "/sys" : path("ro");
  EXPECT_THROW(io::check_output_file(ro + "/x.npy"), io::OutputPathError);
  EXPECT_THROW(io::check_output_dir(ro + "/out"), io::OutputPathError);
  fs::permissions(path("ro"), fs::perms::owner_all);
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"file", "ro"}));  // the probes are gone
}

TEST_F(IoTest, StagedFilesMoveAllOrNone) {
  const std::string out = path("out");
  fs::create_directory(out);
  write_bytes(out + "/a.npy", "old a");
  {
    io::Staging stage(out);
    write_bytes(stage.path("a.npy"), "new a");
    write_bytes(stage.path("b.npy"), "new b");
    stage.path("c.npy");  // never written: its move fails after a's and b's
    EXPECT_THROW(stage.commit(), io::OutputError);
  }
  EXPECT_EQ(listing(out), std::vector<std::string>{"a.npy"});  // b taken back, no staging folder
  EXPECT_EQ(slurp(out + "/a.npy"), "old a");                    // the file a replaced, restored
  {
    io::Staging stage(out);
    write_bytes(stage.path("a.npy"), "new a");
    write_bytes(stage.path("b.npy"), "new b");
    EXPECT_EQ(stage.commit(), (std::vector<std::string>{out + "/a.npy", out + "/b.npy"}));
  }
  EXPECT_EQ(listing(out), (std::vector<std::string>{"a.npy", "b.npy"}));
  EXPECT_EQ(slurp(out + "/a.npy"), "new a");
  // A folder the run created goes with a failed run.
  {
    io::Staging stage(path("made/here"));
    stage.path("x.npy");
  }
  EXPECT_FALSE(fs::exists(path("made")));
}

// Every writer's AtomicFile: the new file whole on commit, else the old one, and no temporary
// (nor kInFolder's folder) either way.
TEST_F(IoTest, AtomicFileReplacesWholeOrNotAtAll) {
  const std::string target = path("t.txt");
  write_bytes(target, "old");
  {
    base::AtomicFile f(target);
    std::FILE* out = f.open();
    ASSERT_NE(out, nullptr);
    std::fputs("half", out);
    EXPECT_EQ(slurp(target), "old");  // not yet
  }  // no commit: abandoned
  EXPECT_EQ(slurp(target), "old");
  EXPECT_EQ(listing(dir_), std::vector<std::string>{"t.txt"});
  EXPECT_EQ(base::replace_file(target, "new"), 0);
  EXPECT_EQ(slurp(target), "new");
  for (bool commit : {false, true}) {
    base::AtomicFile f(path("z.x3p"), base::AtomicFile::kInFolder);
    ASSERT_EQ(f.prepare(), 0);
    write_bytes(f.temp(), "zip");
    write_bytes(f.temp() + ".AbCdEf", "libzip's own");
    if (commit) {
      EXPECT_EQ(f.commit(), 0);
    }
    f.discard();
    EXPECT_EQ(listing(dir_), commit ? (std::vector<std::string>{"t.txt", "z.x3p"}) : std::vector<std::string>{"t.txt"});
  }
  EXPECT_NE(base::replace_file(path("none/t.txt"), "x"), 0);  // a missing folder: errno
}

// A child registers a file and a folder (with a file in it, as libzip's temporary), then is
// ended by the signal: both are gone, and it died of that signal.
TEST_F(IoTest, SignalsRemoveTheTemporariesInFlight) {
  io::remove_temporaries_on_signal();
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction now {};
    sigaction(sig, nullptr, &now);
    if (now.sa_handler == SIG_IGN) continue;  // ignored when the handlers went in (nohup): stays so
    const std::string file = path("x.npy.tmp-1-0"), folder = path("y.x3p.tmp-1-1");
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      const io::InFlight a(file), b(folder, io::InFlight::kFolder);
      write_bytes(file, "partial");
      fs::create_directories(folder + "/sub");
      write_bytes(folder + "/surface.x3p.AbCdEf", "partial");
      write_bytes(folder + "/sub/more", "partial");
      raise(sig);
      _exit(0);  // not reached
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "status " << status;
    EXPECT_FALSE(fs::exists(file));
    EXPECT_FALSE(fs::exists(folder));
  }
  // An unregistered path stays, and so does everything after the guard's end.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    { const io::InFlight a(path("done")); }
    write_bytes(path("done"), "complete");
    raise(SIGTERM);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(fs::exists(path("done")));
}

// ---- Surface ------------------------------------------------------------------------------

std::vector<float> surface(int rows, int cols, std::uint64_t seed, int threads,
                           unsigned parts = io::kSurfaceAll) {
  std::vector<float> s(std::size_t(rows) * cols);
  io::make_surface(rows, cols, seed, s.data(), threads, parts);
  return s;
}

TEST(Surface, DeterministicAcrossThreadCounts) {
  for (auto [r, c] : {std::pair{1, 1}, {7, 300}, {257, 129}}) {
    const auto one = surface(r, c, 42, 1);
    for (int t : {2, 3, 8, 64}) {
      const auto many = surface(r, c, 42, t);
      ASSERT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0)
          << r << " x " << c << " with " << t << " threads";
    }
  }
  EXPECT_NE(surface(64, 64, 1, 2), surface(64, 64, 2, 2));
}

TEST(Surface, RejectsBadArguments) {
  float x = 0;
  EXPECT_THROW(io::make_surface(0, 4, 1, &x), std::invalid_argument);
  EXPECT_THROW(io::make_surface(4, -1, 1, &x), std::invalid_argument);
  EXPECT_THROW(io::make_surface(1, 1, 1, nullptr), std::invalid_argument);
}

struct Stats {
  double mean = 0, var = 0, min = 0, max = 0;
};
Stats stats(const std::vector<double>& v) {
  Stats s;
  s.min = s.max = v[0];
  for (double x : v) {
    s.mean += x;
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
  }
  s.mean /= double(v.size());
  for (double x : v) s.var += (x - s.mean) * (x - s.mean);
  s.var /= double(v.size());
  return s;
}

// Residual of a k x k moving average (interior only): what a high-pass keeps.
std::vector<double> high_pass(const std::vector<float>& z, int rows, int cols, int k) {
  std::vector<double> out;
  for (int r = k; r < rows - k; ++r)
    for (int c = k; c < cols - k; ++c) {
      double s = 0;
      for (int i = -k; i <= k; ++i)
        for (int j = -k; j <= k; ++j) s += z[std::size_t(r + i) * cols + (c + j)];
      out.push_back(z[std::size_t(r) * cols + c] - s / double((2 * k + 1) * (2 * k + 1)));
    }
  return out;
}

TEST(Surface, HasTheIntendedSpectralMix) {
  const int n = 256;
  const auto all = surface(n, n, 7, 2);
  const auto form = surface(n, n, 7, 2, io::kSurfaceForm);
  const auto wav = surface(n, n, 7, 2, io::kSurfaceWaviness);
  const auto rough = surface(n, n, 7, 2, io::kSurfaceRoughness);
  for (float x : all) ASSERT_TRUE(std::isfinite(x));

  // The parts sum to the whole.
  double worst = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    worst = std::max(worst, std::fabs(double(all[i]) - (double(form[i]) + wav[i] + rough[i])));
  EXPECT_LT(worst, 1e-4);

  auto as_double = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  const Stats sf = stats(as_double(form)), sw = stats(as_double(wav)),
              sr = stats(as_double(rough)), sa = stats(as_double(all));
  EXPECT_GT(sa.var, 0.0);
  // Form: several micrometres over the field; waviness: around a micrometre RMS; roughness:
  // a few tenths (0.3 um field + ~0.2 um of waves).
  EXPECT_GT(sf.max - sf.min, 4.0);
  EXPECT_LT(sf.max - sf.min, 40.0);
  EXPECT_GT(std::sqrt(sw.var), 0.3);
  EXPECT_LT(std::sqrt(sw.var), 3.0);
  EXPECT_GT(std::sqrt(sr.var), 0.2);
  EXPECT_LT(std::sqrt(sr.var), 0.6);
  EXPECT_NEAR(sr.mean, 0.0, 0.1);

  // A 5 x 5 high-pass of the whole surface keeps mostly roughness: non-zero, far below the
  // form's range, and the form's own high-pass residual is tiny (it is smooth).
  const Stats hp = stats(high_pass(all, n, n, 2));
  const Stats hp_form = stats(high_pass(form, n, n, 2));
  EXPECT_GT(hp.var, 1e-3);
  EXPECT_LT(std::sqrt(hp.var), 0.1 * (sf.max - sf.min));
  EXPECT_LT(hp_form.var, 1e-3 * hp.var);

  // Not a trivial pattern: neighbouring roughness samples correlate (band-limited), far ones
  // hardly at all.
  auto corr = [&](int dr, int dc) {
    double s = 0;
    int cnt = 0;
    for (int r = 0; r + dr < n; ++r)
      for (int c = 0; c + dc < n; ++c) {
        s += (rough[std::size_t(r) * n + c] - sr.mean) *
             (rough[std::size_t(r + dr) * n + c + dc] - sr.mean);
        ++cnt;
      }
    return s / cnt / sr.var;
  };
  EXPECT_GT(corr(0, 1), 0.3);
  EXPECT_GT(corr(1, 0), 0.3);
  EXPECT_LT(std::fabs(corr(0, 100)), 0.3);
}

TEST(LayeredSurface, PartsSumToTheWholeWithTheirStatedSizes) {
  const int rows = 200, cols = 300;
  auto layered = [&](unsigned parts, std::uint64_t seed = 9) {
    std::vector<float> s(std::size_t(rows) * cols);
    io::make_layered_surface(rows, cols, seed, 20.0, s.data(), parts);
    return s;
  };
  const auto all = layered(io::kSurfaceAll), form = layered(io::kSurfaceForm),
             wav = layered(io::kSurfaceWaviness), rough = layered(io::kSurfaceRoughness);
  double worst = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    worst = std::max(worst, std::fabs(double(all[i]) - (double(form[i]) + wav[i] + rough[i])));
  EXPECT_LT(worst, 1e-5);  // float rounding of values up to ~20
  EXPECT_EQ(layered(io::kSurfaceAll), all);
  EXPECT_NE(layered(io::kSurfaceAll, 10), all);
  auto as_double = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
  const Stats sw = stats(as_double(wav)), sr = stats(as_double(rough)), sf = stats(as_double(form));
  // One wave of amplitude 1: RMS 1/sqrt(2) over whole periods (300 and 200 samples hold 10-15
  // periods of 20; the rest of a period moves it by a few per cent at most).
  EXPECT_NEAR(std::sqrt(sw.var), 1 / std::sqrt(2.0), 0.03);
  EXPECT_LE(sw.max, 1.0);
  // Uniform noise of RMS 0.3 from 60000 samples: the sample RMS is within 1% (its relative
  // standard error is sqrt(0.8 / n) / 2 ~ 0.2%).
  EXPECT_NEAR(std::sqrt(sr.var), 0.3, 0.003);
  EXPECT_NEAR(sr.mean, 0.0, 0.01);
  EXPECT_LE(sr.max, 0.3 * std::sqrt(3.0));
  // Form: the cap's sag (2-5 um) plus the tilt over the field.
  EXPECT_GT(sf.max - sf.min, 2.0);
  EXPECT_LT(sf.max - sf.min, 25.0);
  float x = 0;
  EXPECT_THROW(io::make_layered_surface(4, 4, 1, 1.0, &x), std::invalid_argument);
  EXPECT_THROW(io::make_layered_surface(0, 4, 1, 20.0, &x), std::invalid_argument);
}

TEST(Surface, RandomFieldIsStationaryAcrossTheEdges) {
  // Sizes differ only in the form/wave normalisation; a single-part random field of one seed
  // still varies, and a one-row surface works.
  const auto a = surface(1, 1000, 3, 2, io::kSurfaceRoughness);
  const Stats s = stats(std::vector<double>(a.begin(), a.end()));
  EXPECT_GT(s.var, 0.01);
}

}  // namespace

// The apps' host-side helpers run on every core the process started with, even when started
// from a thread bound to one core, as StarPU binds the program's main thread
// (STARPU_MAIN_THREAD_BIND). Run in a thread of its own, bound here, so that the test binary's
// main thread keeps its mask.
TEST(HostThreads, HelpersGetTheProcessStartCoresWhenTheCallerIsBoundToOne) {
  cpu_set_t start;
  ASSERT_EQ(sched_getaffinity(0, sizeof start, &start), 0);
  ASSERT_EQ(base::host_threads(), unsigned(CPU_COUNT(&start)));
  std::vector<int> seen(4, -1);
  std::thread caller([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &start)) {
        CPU_SET(c, &one);
        break;
      }
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof one, &one), 0);
    base::run_on_host_threads(4, [&](unsigned t) {
      cpu_set_t mine;
      if (pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0) seen[t] = CPU_EQUAL(&mine, &start) ? 1 : 0;
    });
  });
  caller.join();
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(HostThreads, EveryIndexRunsOnceAndTheFirstErrorIsRethrown) {
  std::vector<int> runs(7, 0);
  base::run_on_host_threads(7, [&](unsigned t) { ++runs[t]; });
  EXPECT_EQ(runs, std::vector<int>(7, 1));
  EXPECT_THROW(base::run_on_host_threads(3,
                                         [](unsigned t) {
                                           if (t == 1) throw std::runtime_error("thread 1");
                                         }),
               std::runtime_error);
}
