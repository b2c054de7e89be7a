// The local-transform layout under StarPU (seed 002): per-unit results, permuted to the
// Mallat layout, equal the global reference transform; steps == fused; forward then inverse
// returns the input. Runs on the CPU workers here and on CPUs + GPU where CUDA workers exist.
#include <gtest/gtest.h>
#include <starpu.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "apps/unit_files.hpp"
#include "codelets/lifting.hpp"
#include "codelets/lwt_tasks.hpp"
#include "codelets/plan.hpp"

namespace {

// float32 lifting of N(0,1) data: each coefficient is a sum of a few tens of products of
// O(1) numbers, so rounding stays within a few float epsilons (1.2e-7) of the data's scale.
// 5 levels compound that; 1e-5 relative to max |coefficient| leaves ample margin while any
// indexing or halo mistake produces O(1) errors.
constexpr double kTol = 1e-5;

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i])) return INFINITY;
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return diff / scale;
}

std::vector<float> random_image(int H, int W, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(std::size_t(H) * W);
  for (auto& v : x) v = normal(gen);
  for (std::size_t i = 0; i < x.size(); i += 7) x[i] = 0;  // zeros in the data
  return x;
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

struct Case {
  int H, W, units, levels;
};

class UnitsEqualGlobal : public ::testing::TestWithParam<std::tuple<lwt::Pipeline, int, int>> {};

TEST_P(UnitsEqualGlobal, ForwardMatchesReferenceAndRoundTrips) {
  const auto [pipeline, units, levels] = GetParam();
  // 227 rows are not divisible by 3 or 7 units; 61 columns odd and wider ones elsewhere.
  const int H = units * levels >= 21 ? 453 : 227, W = 61;
  const lwt::Plan plan(H, W, levels, units);
  ASSERT_EQ(plan.units(), units);
  const auto x = random_image(H, W, unsigned(units * 10 + levels));
  std::vector<float> c(x.size(), NAN), mallat(x.size(), NAN), ref(x.size()), y(x.size(), NAN);
  lwt::forward(plan, pipeline, x.data(), c.data());
  plan.to_mallat(c.data(), mallat.data());
  lwt::ref::forward_2d(x.data(), H, W, levels, ref.data());
  EXPECT_LT(relative_error(mallat, ref), kTol);
  lwt::inverse(plan, pipeline, c.data(), y.data());
  EXPECT_LT(relative_error(y, x), kTol);
}

INSTANTIATE_TEST_SUITE_P(AllUnitsAndLevels, UnitsEqualGlobal,
                         ::testing::Combine(::testing::Values(lwt::Pipeline::Fused, lwt::Pipeline::Steps),
                                            ::testing::Values(1, 2, 3, 7), ::testing::Values(1, 2, 3, 4, 5)),
                         [](const auto& tp) {
                           return std::string(lwt::pipeline_name(std::get<0>(tp.param))) + "_units" +
                                  std::to_string(std::get<1>(tp.param)) + "_levels" +
                                  std::to_string(std::get<2>(tp.param));
                         });

TEST(LocalTransform, AwkwardShapes) {
  // Two rows, one unit; wider than tall; taller than wide; odd everything.
  for (const Case& cs : {Case{2, 9, 1, 1}, Case{3, 5, 1, 2}, Case{16, 301, 2, 2}, Case{401, 7, 5, 3},
                         Case{129, 129, 4, 4}}) {
    SCOPED_TRACE(::testing::Message() << cs.H << "x" << cs.W << " units " << cs.units << " levels " << cs.levels);
    const lwt::Plan plan(cs.H, cs.W, cs.levels, cs.units);
    const auto x = random_image(cs.H, cs.W, 7);
    std::vector<float> c(x.size(), NAN), mallat(x.size(), NAN), ref(x.size()), y(x.size(), NAN);
    lwt::forward(plan, lwt::Pipeline::Fused, x.data(), c.data());
    plan.to_mallat(c.data(), mallat.data());
    lwt::ref::forward_2d(x.data(), cs.H, cs.W, cs.levels, ref.data());
    EXPECT_LT(relative_error(mallat, ref), kTol);
    lwt::inverse(plan, lwt::Pipeline::Fused, c.data(), y.data());
    EXPECT_LT(relative_error(y, x), kTol);
  }
}

// A band's inverse (lwt2d filter): the levels outside `keep` are zeroed by each unit's first
// task on its worker. It equals, bit for bit, the inverse of coefficients masked beforehand
// (on the host, by lwt::cpu::copy_levels over the same per-unit blocks); the bands of a
// partition sum to the whole inverse.
TEST(LocalTransform, InverseOfSomeLevelsEqualsInverseOfMaskedCoefficients) {
  const lwt::Plan plan(403, 229, 4, 5);
  const auto x = random_image(403, 229, 11);
  std::vector<float> c(x.size(), NAN), all(x.size(), NAN);
  lwt::forward(plan, lwt::Pipeline::Fused, x.data(), c.data());
  lwt::inverse(plan, lwt::Pipeline::Fused, c.data(), all.data());
  for (const lwt::Pipeline p : {lwt::Pipeline::Fused, lwt::Pipeline::Steps}) {
    std::vector<double> sum(x.size(), 0.0);
    for (const lwt::LevelSet keep : {0b00011u, 0b01100u, 0b10000u}) {  // levels 0-1, 2-3, 4
      SCOPED_TRACE(::testing::Message() << lwt::pipeline_name(p) << " keep " << keep);
      std::vector<float> masked(x.size(), NAN), want(x.size(), NAN), got(x.size(), NAN);
      for (int k = 0; k < plan.units(); ++k) {
        const std::size_t at = std::size_t(plan.unit_row0(0, k)) * std::size_t(plan.width());
        lwt::cpu::copy_levels(c.data() + at, plan.width(), masked.data() + at, plan.width(), plan.unit_rows(0, k),
                              plan.width(), plan.levels(), keep);
      }
      lwt::inverse(plan, p, masked.data(), want.data());
      lwt::inverse(plan, p, c.data(), got.data(), nullptr, keep);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += got[i];
    }
    std::vector<float> total(sum.begin(), sum.end());
    EXPECT_LT(relative_error(total, all), kTol);
  }
}

TEST(LocalTransform, StepsEqualsFused) {
  const lwt::Plan plan(300, 211, 3, 4);
  const auto x = random_image(300, 211, 3);
  std::vector<float> a(x.size(), NAN), b(x.size(), NAN);
  lwt::forward(plan, lwt::Pipeline::Fused, x.data(), a.data());
  lwt::forward(plan, lwt::Pipeline::Steps, x.data(), b.data());
  EXPECT_LT(relative_error(a, b), 1e-6);
}

TEST(Plan, MallatPermutationRoundTrips) {
  const lwt::Plan plan(453, 38, 4, 3);
  const auto x = random_image(453, 38, 5);
  std::vector<float> m(x.size(), NAN), back(x.size(), NAN);
  plan.to_mallat(x.data(), m.data());
  plan.from_mallat(m.data(), back.data());
  EXPECT_EQ(back, x);
  EXPECT_NE(m, x);
}

// Each rank of lwt2d-mpi reads only its units' rows of an inverse's input: for every unit, the
// rows unit_mallat_rows names are all from_mallat_unit reads, and it writes that unit's rows
// only, as from_mallat does (odd sizes, uneven units).
TEST(Plan, EachUnitReadsOnlyItsMallatRows) {
  const lwt::Plan plan(453, 38, 4, 3);
  const auto x = random_image(453, 38, 6);
  std::vector<float> m(x.size(), NAN), whole(x.size(), NAN);
  plan.to_mallat(x.data(), m.data());
  plan.from_mallat(m.data(), whole.data());
  const std::size_t W = 38;
  for (int k = 0; k < plan.units(); ++k) {
    std::vector<float> only(m.size(), NAN), out(x.size(), NAN);
    for (auto [row0, rows] : plan.unit_mallat_rows(k))
      std::copy(m.begin() + std::ptrdiff_t(row0 * W), m.begin() + std::ptrdiff_t((row0 + rows) * W),
                only.begin() + std::ptrdiff_t(row0 * W));
    plan.from_mallat_unit(k, only.data(), out.data());
    const std::size_t lo = std::size_t(plan.unit_row0(0, k)) * W, hi = lo + std::size_t(plan.unit_rows(0, k)) * W;
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (i >= lo && i < hi) ASSERT_EQ(out[i], whole[i]) << "unit " << k << ", element " << i;
      else ASSERT_TRUE(std::isnan(out[i])) << "unit " << k << " wrote element " << i;
    }
  }
}

// Each rank of lwt2d-mpi writes only its units' coefficients into the one output file: the
// units' unit_mallat_blocks tile the Mallat layout, each element once, and to_mallat_unit
// writes exactly its unit's blocks, with to_mallat's values (odd sizes, uneven units).
TEST(Plan, UnitsMallatBlocksTileTheLayout) {
  for (const auto& [rows, cols, levels, units] : {std::array<int, 4>{453, 38, 4, 3}, std::array<int, 4>{299, 131, 3, 7},
                                                  std::array<int, 4>{300, 200, 3, 8}}) {
    const lwt::Plan plan(rows, cols, levels, units);
    const auto x = random_image(rows, cols, 7);
    std::vector<float> whole(x.size(), NAN);
    plan.to_mallat(x.data(), whole.data());
    const std::size_t W = std::size_t(cols);
    std::vector<int> owner(x.size(), -1);
    for (int k = 0; k < plan.units(); ++k) {
      std::vector<float> mine(x.size(), NAN);
      plan.to_mallat_unit(k, x.data(), mine.data());
      std::vector<char> in_block(x.size(), 0);
      for (const lwt::Plan::Block& b : plan.unit_mallat_blocks(k))
        for (int r = b.row0; r < b.row0 + b.rows; ++r)
          for (int c = b.col0; c < b.col0 + b.cols; ++c) {
            const std::size_t i = std::size_t(r) * W + std::size_t(c);
            ASSERT_EQ(owner[i], -1) << rows << "x" << cols << ": units " << owner[i] << " and " << k << " at " << r << "," << c;
            owner[i] = k;
            in_block[i] = 1;
          }
      for (std::size_t i = 0; i < mine.size(); ++i) {
        if (in_block[i]) ASSERT_EQ(mine[i], whole[i]) << "unit " << k << ", element " << i;
        else ASSERT_TRUE(std::isnan(mine[i])) << "unit " << k << " wrote element " << i << " outside its blocks";
      }
    }
    EXPECT_EQ(std::count(owner.begin(), owner.end(), -1), 0) << rows << "x" << cols << ": elements in no unit's block";
  }
}

TEST(Plan, UnitsStartOnMultiplesOfTwoToTheLevels) {
  const lwt::Plan plan(1000, 10, 3, 7);
  for (int k = 1; k < plan.units(); ++k) {
    EXPECT_EQ(plan.unit_row0(0, k) % 8, 0);
    EXPECT_GE(plan.unit_rows(0, k - 1), 32);
  }
  EXPECT_EQ(plan.unit_row0(0, 0), 0);
}

TEST(Plan, RefusesGeometryItCannotTransform) {
  EXPECT_THROW(lwt::Plan(0, 10, 1, 1), lwt::PlanError);
  EXPECT_THROW(lwt::Plan(10, -1, 1, 1), lwt::PlanError);
  EXPECT_THROW(lwt::Plan(10, 10, 0, 1), lwt::PlanError);
  EXPECT_THROW(lwt::Plan(10, 10, 5, 1), lwt::PlanError);     // too many levels for 10 samples
  EXPECT_THROW(lwt::Plan(100, 100, 4, 50), lwt::PlanError);  // units too small for 4 levels
  EXPECT_NO_THROW(lwt::Plan(100, 100, 4, 3));
  EXPECT_EQ(lwt::Plan::max_units(128, 2), 16);  // 8 rows per unit at 2 levels (seed 002 eq. 6.8)
}

TEST(Tasks, EveryUnitRunsAndTheCountsMatchTheGraph) {
  const lwt::Plan plan(256, 64, 3, 4);
  const auto x = random_image(256, 64, 9);
  std::vector<float> c(x.size()), y(x.size());
  for (lwt::Pipeline p : {lwt::Pipeline::Fused, lwt::Pipeline::Steps}) {
    std::vector<lwt::WorkerStats> fwd, inv;
    lwt::forward(plan, p, x.data(), c.data(), &fwd);
    lwt::inverse(plan, p, c.data(), y.data(), &inv);
    long nf = 0, ni = 0;
    unsigned units = 0;
    for (const auto& w : fwd) nf += w.tasks, units += w.units;
    for (const auto& w : inv) ni += w.tasks;
    EXPECT_EQ(nf, lwt::task_count(plan, p, true));
    EXPECT_EQ(ni, lwt::task_count(plan, p, false));
    EXPECT_GE(units, 4u);  // each unit ran somewhere
  }
  EXPECT_EQ(lwt::task_count(plan, lwt::Pipeline::Fused, true), 2 * 4 * 3);
}

// lwt2d's streamed files (apps::UnitStream): a forward whose input comes in chunks out of order
// (later chunks first) gives the whole input's result bit for bit, so no unit's first task ran
// before its rows were in (the buffer starts as NaN); each unit's result is handed over once,
// after its last task; an inverse streams its output alone. Odd sizes, uneven units and chunks;
// on threads of its own, and without (the input read first, each unit written in its callback).
class StreamThreads : public ::testing::TestWithParam<std::pair<unsigned, unsigned>> {};

TEST_P(StreamThreads, StreamedTransformsEqualWholeOnes) {
  const auto [readers, writers] = GetParam();
  const int H = 453, W = 61, L = 3;
  const lwt::Plan plan(H, W, L, 5);
  const auto x = random_image(H, W, 11);
  std::vector<float> c(x.size(), NAN), want(x.size(), NAN), y_want(x.size(), NAN);
  lwt::forward(plan, lwt::Pipeline::Fused, x.data(), c.data());
  plan.to_mallat(c.data(), want.data());
  lwt::inverse(plan, lwt::Pipeline::Fused, c.data(), y_want.data());

  const int chunk = 7, chunks = (H + chunk - 1) / chunk;
  std::vector<float> in(x.size(), NAN), out(x.size(), NAN), got(x.size(), NAN);
  std::vector<int> written(std::size_t(plan.units()), 0);
  {
    apps::UnitStream stream(
        H, chunk,
        [&](int row0, int rows) {
          std::this_thread::sleep_for(std::chrono::microseconds(200 * (chunks - row0 / chunk)));
          std::copy_n(x.begin() + std::ptrdiff_t(row0) * W, std::size_t(rows) * W, in.begin() + std::ptrdiff_t(row0) * W);
        },
        [&](int k) {
          ++written[std::size_t(k)];
          plan.to_mallat_unit(k, out.data(), got.data());
        },
        readers, writers);
    lwt::forward(plan, lwt::Pipeline::Fused, in.data(), out.data(), nullptr, &stream.hooks(plan));
    stream.finish();
  }
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
  EXPECT_EQ(written, std::vector<int>(std::size_t(plan.units()), 1));

  std::vector<float> y(x.size(), NAN), y_got(x.size(), NAN);
  {
    apps::UnitStream stream(H, chunk, {}, [&](int k) {
      const std::size_t lo = std::size_t(plan.unit_row0(0, k)) * W, n = std::size_t(plan.unit_rows(0, k)) * W;
      std::copy_n(y.begin() + std::ptrdiff_t(lo), n, y_got.begin() + std::ptrdiff_t(lo));
    }, readers, writers);
    lwt::inverse(plan, lwt::Pipeline::Fused, c.data(), y.data(), nullptr, lwt::kAllLevels, nullptr, &stream.hooks(plan));
    stream.finish();
  }
  EXPECT_EQ(std::memcmp(y_got.data(), y_want.data(), y_got.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(UnitStream, StreamThreads,
                         ::testing::Values(std::make_pair(3u, 2u), std::make_pair(1u, 1u), std::make_pair(0u, 0u)));

// A read or a write that fails ends nothing early: the transform completes (no unit waits for
// rows that will not come), the later reads and writes are skipped, and finish() throws the
// first error, of its own type.
TEST(UnitStream, TheFirstFailureComesOutOfFinish) {
  const int H = 300, W = 40;
  const lwt::Plan plan(H, W, 2, 4);
  std::vector<float> in(std::size_t(H) * W, 1.0f), out(in.size());
  int reads_after = 0;
  {
    apps::UnitStream stream(
        H, 10,
        [&](int row0, int) {
          if (row0 == 50) throw std::invalid_argument("chunk at row 50 unreadable");
          if (row0 > 50) ++reads_after;
        },
        [](int) {}, 1, 1);
    lwt::forward(plan, lwt::Pipeline::Fused, in.data(), out.data(), nullptr, &stream.hooks(plan));
    EXPECT_THROW(
        try { stream.finish(); } catch (const std::invalid_argument& e) {
          EXPECT_STREQ(e.what(), "chunk at row 50 unreadable");
          throw;
        },
        std::invalid_argument);
  }
  EXPECT_EQ(reads_after, 0);
  int writes = 0;
  {
    apps::UnitStream stream(H, 10, {}, [&](int k) {
      ++writes;
      if (k == 0) throw std::runtime_error("disk full");
    }, 1, 1);
    lwt::inverse(plan, lwt::Pipeline::Fused, in.data(), out.data(), nullptr, lwt::kAllLevels, nullptr, &stream.hooks(plan));
    EXPECT_THROW(stream.finish(), std::runtime_error);
  }
  EXPECT_GE(writes, 1);
}

}  // namespace
