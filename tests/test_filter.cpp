// lwt2d filter's parts without StarPU: the band spec (partition of the levels, every bad spec
// refused), the band masks (they partition the Mallat layout), ISO 25178-2 height parameters on
// hand-checked data, and X3P files written and read back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "apps/filter/bands.hpp"
#include "apps/filter/surface_params.hpp"
#include "apps/io/x3p.hpp"
#include "codelets/lifting.hpp"

namespace fs = std::filesystem;

namespace {

TEST(Bands, RestTakesTheApproximationAndUnnamedLevels) {
  const auto b = filter::parse_bands("roughness=1-2,form=rest,waviness=4", 5);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].name, "roughness");
  EXPECT_EQ(b[0].levels_text(), "1-2");
  EXPECT_EQ(b[1].name, "form");
  EXPECT_EQ(b[1].levels_text(), "3,5 + approximation");
  EXPECT_TRUE(b[1].approximation);
  EXPECT_EQ(b[2].levels_text(), "4");
  // Every level in exactly one band.
  for (int l = 1; l <= 5; ++l) EXPECT_EQ(int(b[0].level[l]) + b[1].level[l] + b[2].level[l], 1) << l;
}

TEST(Bands, RefusesBadSpecs) {
  for (const char* spec : {"texture=1-2,form=rest", "roughness=1-3,waviness=3-4,form=rest",
                           "roughness=3-2,form=rest", "roughness=,form=rest", "roughness=1-9,form=rest",
                           "roughness=0-1,form=rest", "roughness=1-2", "roughness=rest,form=rest",
                           "roughness=1,roughness=2,form=rest", "roughness=a-b,form=rest", "roughness",
                           ""})
    EXPECT_THROW(filter::parse_bands(spec, 4), filter::BandError) << spec;
}

TEST(Bands, MasksPartitionTheMallatLayout) {
  // Odd sizes: the level blocks are ceil(n / 2^l).
  const int rows = 37, cols = 23, levels = 3;
  std::vector<float> m(rows * cols);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = float(i + 1);
  const auto bands = filter::parse_bands("roughness=1,waviness=2,form=rest", levels);
  std::vector<float> sum(m.size(), 0.0f), part(m.size());
  std::vector<int> owners(m.size(), 0);
  for (const auto& b : bands) {
    filter::band_coefficients(b, m.data(), rows, cols, levels, part.data());
    for (std::size_t i = 0; i < m.size(); ++i) {
      sum[i] += part[i];
      owners[i] += part[i] != 0.0f;
    }
  }
  for (std::size_t i = 0; i < m.size(); ++i) {
    ASSERT_EQ(sum[i], m[i]) << i;
    ASSERT_EQ(owners[i], 1) << i;
  }
  // Level 1 is the outer L shape: rows >= 19 or cols >= 12.
  filter::band_coefficients(bands[0], m.data(), rows, cols, levels, part.data());
  EXPECT_NE(part[18 * cols + 12], 0.0f);
  EXPECT_EQ(part[18 * cols + 11], 0.0f);
  EXPECT_NE(part[19 * cols + 0], 0.0f);
}

TEST(Bands, UnitLayoutSelectsWhatTheMallatLayoutSelects) {
  // Odd sizes, several units: a band's levels kept per unit (Band::levels, copy_levels) equal
  // its Mallat mask permuted.
  for (auto [rows, cols, levels, units] : {std::array{37, 23, 3, 1}, std::array{101, 67, 3, 3},
                                          std::array{256, 130, 4, 4}}) {
    const lwt::Plan plan(rows, cols, levels, units);
    ASSERT_EQ(plan.units(), units);
    std::vector<float> m(std::size_t(rows) * cols), u(m.size()), a(m.size()), b(m.size()), ua(m.size());
    for (std::size_t i = 0; i < m.size(); ++i) m[i] = float(i + 1);
    plan.from_mallat(m.data(), u.data());
    for (const auto& band : filter::parse_bands("roughness=1,waviness=2,form=rest", levels)) {
      filter::band_coefficients(band, m.data(), rows, cols, levels, a.data());
      plan.from_mallat(a.data(), ua.data());
      for (int k = 0; k < plan.units(); ++k) {  // what lwt::inverse's first task per unit keeps
        const std::size_t at = std::size_t(plan.unit_row0(0, k)) * std::size_t(cols);
        lwt::cpu::copy_levels(u.data() + at, cols, b.data() + at, cols, plan.unit_rows(0, k), cols, levels,
                              band.levels());
      }
      ASSERT_EQ(ua, b) << rows << " x " << cols << ", " << units << " units, band " << band.name;
    }
  }
}

// Over several of copy_marking_invalid's chunks (2^20 heights each) and a ragged last one:
// finite heights copied bit for bit, every non-finite one NaN and counted.
TEST(HeightParams, CopyMarksEveryNonFiniteHeightInvalid) {
  const std::size_t n = (std::size_t(3) << 20) + 12345;
  std::vector<float> in(n), out(n, 7.0f);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> height(-1e3f, 1e3f);
  for (float& v : in) v = height(rng);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::size_t> bad = {0, 1, (std::size_t(1) << 20) - 1, std::size_t(1) << 20, n - 1};
  for (std::size_t k = 0; k < bad.size(); ++k)
    in[bad[k]] = k % 3 == 0 ? inf : k % 3 == 1 ? -inf : std::numeric_limits<float>::quiet_NaN();
  in[42] = std::numeric_limits<float>::max();          // finite: kept
  in[43] = std::numeric_limits<float>::denorm_min();   // finite: kept
  EXPECT_EQ(filter::copy_marking_invalid(in.data(), out.data(), n), bad.size());
  std::size_t nan = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(out[i])) {
      ++nan;
      EXPECT_FALSE(std::isfinite(in[i])) << i;
    } else {
      ASSERT_EQ(std::memcmp(&in[i], &out[i], sizeof(float)), 0) << i;
    }
  }
  EXPECT_EQ(nan, bad.size());
  EXPECT_EQ(filter::copy_marking_invalid(in.data(), out.data(), 0), 0u);
}

TEST(HeightParams, MatchHandComputedValues) {
  // Heights 1, 2, 3, 6 (mean 3): deviations -2, -1, 0, 3.
  const float z[] = {1, 2, 3, 6, std::numeric_limits<float>::quiet_NaN()};
  const auto p = filter::height_params(z, 5);
  EXPECT_EQ(p.points, 4u);
  EXPECT_DOUBLE_EQ(p.sa, 6.0 / 4);
  const double sq = std::sqrt(14.0 / 4);
  EXPECT_DOUBLE_EQ(p.sq, sq);
  EXPECT_DOUBLE_EQ(p.sp, 3.0);
  EXPECT_DOUBLE_EQ(p.sv, 2.0);
  EXPECT_DOUBLE_EQ(p.sz, 5.0);
  EXPECT_NEAR(p.ssk, (-8.0 - 1 + 27) / 4 / (sq * sq * sq), 1e-12);
  EXPECT_NEAR(p.sku, (16.0 + 1 + 81) / 4 / (sq * sq * sq * sq), 1e-12);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(filter::height_params(&nan, 1), std::invalid_argument);
}

// Over several of the sums' chunks (2^20 samples each, a ragged last one, invalid points in
// each): the parameters match one pass in long double. Double sums of 3e6 terms of O(1) lose
// at most ~3e6 * 1.1e-16 relative; 1e-9 leaves a wide margin and catches a lost chunk (3e-7).
TEST(HeightParams, ChunkedSumsMatchOnePass) {
  const std::size_t n = 3 * (std::size_t(1) << 20) + 12345;
  std::vector<float> z(n);
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(2.0f, 1.5f);
  for (float& v : z) v = normal(gen);
  for (std::size_t i = 0; i < n; i += 100003) z[i] = std::numeric_limits<float>::quiet_NaN();
  long double sum = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0;
  std::size_t m = 0;
  for (float v : z)
    if (std::isfinite(v)) sum += v, ++m;
  const long double mean = sum / m;
  double hi = -INFINITY;
  for (float v : z) {
    if (!std::isfinite(v)) continue;
    const long double d = v - mean;
    s1 += std::fabs(d), s2 += d * d, s3 += d * d * d, s4 += d * d * d * d;
    hi = std::max(hi, double(d));
  }
  const auto p = filter::height_params(z.data(), n);
  EXPECT_EQ(p.points, m);
  EXPECT_NEAR(p.sa, double(s1 / m), 1e-9 * double(s1 / m));
  const double sq = std::sqrt(double(s2 / m));
  EXPECT_NEAR(p.sq, sq, 1e-9 * sq);
  EXPECT_NEAR(p.sp, hi, 1e-9 * hi);
  EXPECT_NEAR(p.ssk, double(s3 / m) / (sq * sq * sq), 1e-9);
  EXPECT_NEAR(p.sku, double(s4 / m) / (sq * sq * sq * sq), 1e-9 * 3);
}

class X3pTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("test_filter_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& n) const { return (dir_ / n).string(); }
  fs::path dir_;
};

TEST_F(X3pTest, RoundTripKeepsHeightsAxesAndInvalidPoints) {
  const int rows = 5, cols = 7;
  std::vector<float> z(rows * cols);
  for (int i = 0; i < rows * cols; ++i) z[i] = float(1e-6 * std::sin(0.37 * i) + 3e-9 * i);
  z[8] = std::numeric_limits<float>::quiet_NaN();
  io::write_x3p(path("a.x3p"), rows, cols, z.data(), 2.5e-6, 1.25e-6);
  const io::X3pSurface s = io::read_x3p(path("a.x3p"));
  EXPECT_EQ(s.z.rows, rows);
  EXPECT_EQ(s.z.cols, cols);
  EXPECT_DOUBLE_EQ(s.dx, 2.5e-6);
  EXPECT_DOUBLE_EQ(s.dy, 1.25e-6);
  EXPECT_EQ(s.invalid, 1u);
  for (int i = 0; i < rows * cols; ++i) {
    if (i == 8) EXPECT_TRUE(std::isnan(s.z.data[i]));
    else EXPECT_EQ(s.z.data[i], z[i]) << i;  // float -> double -> float is exact
  }
  // No temporary left behind; the input is protected.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  EXPECT_THROW(io::write_x3p(path("a.x3p"), rows, cols, z.data(), 1, 1, path("a.x3p")), io::OutputError);
}

TEST_F(X3pTest, RefusesFilesThatAreNotX3p) {
  EXPECT_THROW(io::read_x3p(path("missing.x3p")), io::InputError);
  std::ofstream(path("text.x3p")) << "not a zip\n";
  try {
    io::read_x3p(path("text.x3p"));
    FAIL() << "read a text file as X3P";
  } catch (const io::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a readable X3P"), std::string::npos) << e.what();
  }
}

}  // namespace
