// The reference CDF 9/7 lifting against PyWavelets (DESIGN §4.1): random data of even and odd
// sizes, one level, double precision; tests/pywt_check.py does the comparison (the mapping and
// the tolerance are explained there). Skips only where no python3 with pywt and numpy exists.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "apps/io/npy.hpp"
#include "codelets/lifting.hpp"

#ifndef FNNDTPS_PYWT_CHECK
#error "FNNDTPS_PYWT_CHECK (the path of tests/pywt_check.py) must be defined"
#endif

namespace fs = std::filesystem;

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The first interpreter that imports pywt and numpy: $FNNDTPS_PYTHON, python3 on PATH, then
// /usr/bin/python3 (Debian's python3-pywt lives there; a pyenv python3 on PATH may lack it).
std::string find_python(std::string& tried) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("FNNDTPS_PYTHON"); env && *env) candidates.emplace_back(env);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  for (const auto& py : candidates) {
    tried += (tried.empty() ? "" : ", ") + py;
    const std::string cmd = shell_quote(py) + " -c 'import pywt, numpy' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return {};
}

struct ProcResult {
  int status = -1;
  std::string output;
};

ProcResult run(const std::string& cmd) {
  ProcResult r;
  std::FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

constexpr double kPi = 3.14159265358979323846;

// N(0,1) by Box-Muller over mt19937_64 (portable bit for bit), with a few exact zeros.
std::vector<double> normal(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  auto u01 = [&] { return (static_cast<double>(g() >> 11) + 0.5) * 0x1.0p-53; };
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(u01())), t = 2.0 * kPi * u01();
    v[i] = r * std::cos(t);
    if (i + 1 < n) v[i + 1] = r * std::sin(t);
  }
  for (std::size_t i = 3; i < n; i += 11) v[i] = 0.0;
  return v;
}

class PywtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tried;
    python_ = find_python(tried);
    if (python_.empty())
      GTEST_SKIP() << "no python3 with PyWavelets and numpy (tried " << tried
                   << "); install python3-pywt or set FNNDTPS_PYTHON";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("test_pywt_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty() && !HasFailure()) fs::remove_all(dir_);
  }

  void case_1d(const std::string& name, int n, std::uint64_t seed, double perturb = 0) {
    const auto x = normal(std::size_t(n), seed);
    std::vector<double> c(static_cast<std::size_t>(n));
    lwt::ref::forward_1d(x.data(), 1, n, c.data(), 1);
    double peak = 0;
    for (double v : c) peak = std::max(peak, std::fabs(v));
    c[std::size_t(n) / 2] += perturb * peak;
    io::write_npy_f64((dir_ / ("1d_" + name + "_x.npy")).string(), 1, n, x.data());
    io::write_npy_f64((dir_ / ("1d_" + name + "_c.npy")).string(), 1, n, c.data());
  }
  void case_2d(const std::string& name, int rows, int cols, std::uint64_t seed) {
    const auto x = normal(std::size_t(rows) * cols, seed);
    std::vector<double> c(x.size());
    lwt::ref::forward_2d(x.data(), rows, cols, 1, c.data());
    io::write_npy_f64((dir_ / ("2d_" + name + "_x.npy")).string(), rows, cols, x.data());
    io::write_npy_f64((dir_ / ("2d_" + name + "_c.npy")).string(), rows, cols, c.data());
  }
  ProcResult check() {
    return run(shell_quote(python_) + " " + shell_quote(FNNDTPS_PYWT_CHECK) + " " +
               shell_quote(dir_.string()));
  }

  std::string python_;
  fs::path dir_;
};

TEST_F(PywtTest, ReferenceMatchesPyWaveletsBior44Reflect) {
  std::uint64_t seed = 1;
  for (int n : {2, 3, 4, 5, 16, 17, 40, 41}) case_1d("n" + std::to_string(n), n, seed++);
  for (auto [r, c] : {std::pair{20, 31}, {33, 18}, {16, 16}, {2, 3}, {5, 2}, {9, 64}})
    case_2d(std::to_string(r) + "x" + std::to_string(c), r, c, seed++);
  const ProcResult r = check();
  EXPECT_EQ(r.status, 0) << "pywt_check.py failed (files kept in " << dir_ << "):\n" << r.output;
  EXPECT_NE(r.output.find("max relative error"), std::string::npos) << r.output;
  std::printf("%s", r.output.substr(r.output.rfind("pywt_check:")).c_str());
}

// The check is not vacuous: one coefficient off by 1e-7 of the largest is caught.
TEST_F(PywtTest, CheckCatchesASmallError) {
  case_1d("bad", 41, 99, 1e-7);
  const ProcResult r = check();
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("MISMATCH"), std::string::npos) << r.output;
}

}  // namespace
