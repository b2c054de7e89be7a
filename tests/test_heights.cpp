// The height sums (codelets/heights.hpp) on every backend against the plain two-pass reference
// (filter::height_params): strips with odd strides, fewer rows than parts, invalid points (a mask)
// and non-finite heights; the first pass's residual and marks; then the same as StarPU tasks
// over several strips (CPU workers here, CPUs and a GPU where one is present).
#include <gtest/gtest.h>
#include <starpu.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "apps/filter/surface_params.hpp"
#include "codelets/height_tasks.hpp"
#include "codelets/heights.hpp"
#ifdef FNNDTPS_TEST_CUDA
#include "tests/backend_cases.hpp"
namespace heights_test {
void cuda_first_pass(heights::Strip& s, bool mark, heights::Partial* parts);
void cuda_moments(heights::Strip& s, double mean, heights::Partial* parts);
}  // namespace heights_test
#endif

namespace {

constexpr float kPad = 1e30f;  // in the strides' padding: never summed, never written

// A strip's data with its padding: rows x cols heights N(2, 1.5), every 97th NaN, every 53rd point
// masked; a residual of other values.
struct Data {
  int rows, cols, ld, ld_r, ld_m;
  std::vector<float> z, r;
  std::vector<unsigned char> m;
  Data(int rows_, int cols_, unsigned seed) : rows(rows_), cols(cols_), ld(cols_ + 3), ld_r(cols_ + 5), ld_m(cols_ + 7) {
    z.assign(std::size_t(rows) * ld, kPad);
    r.assign(std::size_t(rows) * ld_r, kPad);
    m.assign(std::size_t(rows) * ld_m, 1);
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(2.0f, 1.5f);
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) {
        const long k = long(i) * cols + j;
        z[std::size_t(i) * ld + j] = k % 97 == 5 ? std::numeric_limits<float>::quiet_NaN() : normal(gen);
        r[std::size_t(i) * ld_r + j] = 3 * normal(gen);
        m[std::size_t(i) * ld_m + j] = k % 53 == 7;
      }
  }
  heights::Strip strip(bool residual, bool mask) {
    heights::Strip s;
    s.z = z.data();
    s.ld = ld;
    s.residual = residual ? r.data() : nullptr;
    s.ld_residual = ld_r;
    s.mask = mask ? m.data() : nullptr;
    s.ld_mask = ld_m;
    s.rows = rows;
    s.cols = cols;
    return s;
  }
  // The heights as the reference sees them: masked points NaN (invalid), packed.
  std::vector<float> reference_view(bool mask) const {
    std::vector<float> v;
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j)
        v.push_back(mask && m[std::size_t(i) * ld_m + j] ? std::numeric_limits<float>::quiet_NaN()
                                                         : z[std::size_t(i) * ld + j]);
    return v;
  }
};

heights::Partial add(const std::vector<heights::Partial>& parts) {
  heights::Partial t;
  for (const heights::Partial& q : parts) heights::add_part(t, q);
  return t;
}

filter::HeightParams params(const heights::Partial& m) {
  filter::CentralSums c;
  c.points = std::size_t(m.points);
  c.s1 = m.s1, c.s2 = m.s2, c.s3 = m.s3, c.s4 = m.s4, c.hi = m.hi, c.lo = m.lo;
  return filter::from_central_sums(c);
}

// Double sums of at most ~2e4 O(1) float values, in two orders: each is within n eps ~ 4e-12 of
// the exact sum relative to the sum of magnitudes, so the parameters agree to 1e-11 relative
// (Ssk, Sku: absolute, as their sums may cancel); a lost row or part moves them by > 1e-4.
void expect_params_near(const filter::HeightParams& p, const filter::HeightParams& want) {
  EXPECT_EQ(p.points, want.points);
  for (auto [got, ref] : {std::pair{p.sa, want.sa}, {p.sq, want.sq}, {p.sp, want.sp}, {p.sv, want.sv}})
    EXPECT_NEAR(got, ref, 1e-11 * std::fabs(ref));
  EXPECT_NEAR(p.ssk, want.ssk, 1e-10);
  EXPECT_NEAR(p.sku, want.sku, 1e-10);
}

struct Backend {
  std::string name;
  std::function<void(heights::Strip&, bool, heights::Partial*)> first;
  std::function<void(heights::Strip&, double, heights::Partial*)> moments;
};

std::vector<Backend> backends() {
  std::vector<Backend> b{{"cpu", [](heights::Strip& s, bool mark, heights::Partial* p) { heights::cpu::first_pass(s, mark, p); },
                          [](heights::Strip& s, double mean, heights::Partial* p) { heights::cpu::moments(s, mean, p); }}};
#ifdef FNNDTPS_TEST_CUDA
  std::string why;
  if (test_support::cuda_device_present(&why))
    b.push_back({"cuda", heights_test::cuda_first_pass, heights_test::cuda_moments});
#endif
  return b;
}

class HeightSums : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

// The two passes give the reference's parameters; the first leaves z (unmarked) and the
// padding alone, and its largest is max |z| over every point, masked ones too.
TEST_P(HeightSums, ParametersMatchTheReference) {
  const auto [rows, cols, masked] = GetParam();
  for (const Backend& be : backends()) {
    SCOPED_TRACE(be.name);
    Data d(rows, cols, unsigned(rows * 7 + cols));
    const std::vector<float> z0 = d.z;
    const std::vector<float> view = d.reference_view(masked);
    heights::Strip s = d.strip(false, masked);
    std::vector<heights::Partial> parts(heights::kParts);
    be.first(s, false, parts.data());
    const heights::Partial f = add(parts);
    double largest = 0;
    std::size_t points = 0;
    for (float v : d.reference_view(false))
      if (std::isfinite(v)) largest = std::max(largest, std::fabs(double(v)));
    for (float v : view) points += std::isfinite(v);
    EXPECT_EQ(f.points, points);
    EXPECT_EQ(f.largest, largest);
    EXPECT_EQ(std::memcmp(d.z.data(), z0.data(), z0.size() * sizeof(float)), 0) << "z or its padding changed";
    be.moments(s, f.sum / double(f.points), parts.data());
    expect_params_near(params(add(parts)), filter::height_params(view.data(), view.size()));
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, HeightSums,
                         ::testing::Combine(::testing::Values(1, 37, 301), ::testing::Values(1, 61, 300),
                                            ::testing::Bool()));

// With a residual: residual -= z on every point, bit for bit as float32, largest = the max
// |residual| after; with mark, masked heights become NaN and only they; padding untouched.
TEST(HeightSums, FirstPassSubtractsAndMarks) {
  for (const Backend& be : backends()) {
    SCOPED_TRACE(be.name);
    Data d(301, 61, 9);
    const Data before = d;
    heights::Strip s = d.strip(true, true);
    std::vector<heights::Partial> parts(heights::kParts);
    be.first(s, true, parts.data());
    const heights::Partial f = add(parts);
    double largest = 0;
    for (int i = 0; i < d.rows; ++i)
      for (int j = 0; j < d.ld_r; ++j) {
        const std::size_t at = std::size_t(i) * d.ld_r + j;
        if (j >= d.cols) {
          ASSERT_EQ(d.r[at], kPad);
          continue;
        }
        const float want = before.r[at] - before.z[std::size_t(i) * d.ld + j];
        if (std::isnan(want))  // IEEE 754 leaves a NaN's payload to the hardware
          ASSERT_TRUE(std::isnan(d.r[at])) << i << "," << j;
        else
          ASSERT_TRUE(std::memcmp(&d.r[at], &want, sizeof want) == 0) << i << "," << j;
        largest = std::max(largest, std::fabs(double(want)));
      }
    EXPECT_EQ(f.largest, largest);
    for (int i = 0; i < d.rows; ++i)
      for (int j = 0; j < d.ld; ++j) {
        const std::size_t at = std::size_t(i) * d.ld + j;
        if (j < d.cols && d.m[std::size_t(i) * d.ld_m + j]) EXPECT_TRUE(std::isnan(d.z[at]));
        else EXPECT_TRUE(std::memcmp(&d.z[at], &before.z[at], sizeof(float)) == 0);
      }
    const std::vector<float> view = before.reference_view(true);
    std::size_t points = 0;
    for (float v : view) points += std::isfinite(v);
    EXPECT_EQ(f.points, points);
  }
}

class StarpuEnv : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("STARPU_SILENT", "1", 0);
    setenv("STARPU_NCPU", "2", 0);
    ASSERT_EQ(starpu_init(nullptr), 0);
  }
  void TearDown() override { starpu_shutdown(); }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new StarpuEnv);

// As tasks over three uneven strips of one surface: the input's parameters, then a band's pass
// with the surface as residual (the band's masked points NaN after it comes home) and its
// parameters, all against the reference.
TEST(HeightTasks, PassesOverStripsMatchTheReference) {
  const int rows = 301, cols = 61;
  const std::size_t n = std::size_t(rows) * cols;
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(2.0f, 1.5f);
  std::vector<float> surface(n), band(n);
  std::vector<unsigned char> mask(n);
  for (std::size_t i = 0; i < n; ++i) {
    surface[i] = normal(gen);
    band[i] = surface[i] / 2 + 0.25f * normal(gen);
    mask[i] = i % 41 == 3;
  }
  std::vector<float> masked_surface(surface), masked_band(band), residual(n);
  for (std::size_t i = 0; i < n; ++i) {
    residual[i] = surface[i] - band[i];
    if (mask[i]) masked_surface[i] = masked_band[i] = std::numeric_limits<float>::quiet_NaN();
  }
  const std::vector<int> row0{0, 100, 211}, nrows{100, 111, 90};
  std::vector<heights::StripData> s = heights::register_strips(surface.data(), mask.data(), cols, row0, nrows);
  auto two_passes = [&](const std::vector<heights::StripData>& strips, bool mark, heights::Partial* first) {
    heights::Pass f = heights::Pass::first(strips.size(), mark);
    for (std::size_t k = strips.size(); k-- > 0;) f.submit(k, strips[k]);  // any order
    *first = f.total();
    heights::Pass m = heights::Pass::moments(strips.size(), first->sum / double(first->points));
    m.submit_all(strips);
    return params(m.total());
  };
  heights::Partial f;
  expect_params_near(two_passes(s, false, &f), filter::height_params(masked_surface.data(), n));
  double largest = 0;
  for (float v : surface) largest = std::max(largest, std::fabs(double(v)));
  EXPECT_EQ(f.largest, largest);

  std::vector<heights::StripData> b = heights::register_strips(band.data(), nullptr, cols, row0, nrows);
  std::vector<heights::StripData> with(3);
  for (std::size_t k = 0; k < 3; ++k) with[k] = {b[k].z, s[k].z, s[k].mask};
  const filter::HeightParams pb = two_passes(with, true, &f);
  largest = 0;
  for (float v : residual) largest = std::max(largest, std::fabs(double(v)));
  EXPECT_EQ(f.largest, largest);
  for (heights::StripData& d : b) starpu_data_unregister(d.z);  // brings the band home
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(std::isnan(band[i]), bool(mask[i])) << i;
  expect_params_near(pb, filter::height_params(masked_band.data(), n));
  heights::unregister_no_copy(s);
}

}  // namespace
