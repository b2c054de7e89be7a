// DTPS controller tests (seed 001 §1.3-1.4): the three cases of §1.3 with hand-computed
// results, convergence on a synthetic two-class model, the per-kind store across runs,
// refused store files and degenerate inputs. Eqs. (3)-(6) are tests/test_subtask_weights.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "scheduler/dtps.hpp"

namespace {

using sched::DtpsCase;
using sched::DtpsConfig;
using sched::DtpsController;
using sched::DtpsState;
using sched::DtpsStore;
using sched::DtpsStoreError;
using sched::DtpsUpdate;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Eq. (7) and eq. (8)

TEST(DelayCoefficient, SignAndScale) {
  EXPECT_DOUBLE_EQ(sched::delay_coefficient(2.0, 1.0), 0.5);   // CPU late
  EXPECT_DOUBLE_EQ(sched::delay_coefficient(1.0, 2.0), -0.5);  // GPU late
  EXPECT_DOUBLE_EQ(sched::delay_coefficient(3.0, 3.0), 0.0);
  EXPECT_DOUBLE_EQ(sched::delay_coefficient(200.0, 100.0), 0.5);  // scale-free
  EXPECT_NEAR(sched::delay_coefficient(1e6, 1.0), 1.0, 1e-5);
  for (double bad : {0.0, -1.0, kNaN, kInf}) {
    EXPECT_TRUE(std::isnan(sched::delay_coefficient(bad, 1.0))) << bad;
    EXPECT_TRUE(std::isnan(sched::delay_coefficient(1.0, bad))) << bad;
  }
}

TEST(InitialTheta, ShareOfTheLateClass) {
  EXPECT_DOUBLE_EQ(sched::initial_theta(0.5, 0.25), 0.125);   // CPU late: |m| * alpha
  EXPECT_DOUBLE_EQ(sched::initial_theta(-0.5, 0.25), 0.375);  // GPU late: |m| * beta
  EXPECT_DOUBLE_EQ(sched::initial_theta(0.0, 0.25), 0.0);
  EXPECT_DOUBLE_EQ(sched::initial_theta(kNaN, 0.25), 0.0);
  // The first step never takes the late class's share below 0.
  for (double m : {-1.0, -0.7, -0.2, 0.2, 0.7, 1.0}) {
    for (double a : {0.001, 0.1, 0.5, 0.9, 0.999}) {
      const double theta = sched::initial_theta(m, a);
      const double next = m > 0 ? a - theta : a + theta;
      EXPECT_GE(next, 0.0);
      EXPECT_LE(next, 1.0);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Seed 001 §1.3, the three cases, one update each, results worked by hand.
// Linear model: T_c' = T_c * a/a0, T_g' = T_g * (1-a)/(1-a0); m = (T_c - T_g)/max(T_c, T_g).

TEST(ThreeCases, Case1BalancedKeepsTheRatio) {
  DtpsController c;
  ASSERT_DOUBLE_EQ(c.alpha(), 0.5);
  const DtpsUpdate u = c.end_batch(1.0, 0.9375);  // m = 0.0625
  EXPECT_EQ(u.kind, DtpsCase::Balanced);
  EXPECT_DOUBLE_EQ(u.m_before, 0.0625);
  EXPECT_DOUBLE_EQ(u.m_after, 0.0625);
  EXPECT_DOUBLE_EQ(u.alpha, 0.5);
  EXPECT_DOUBLE_EQ(c.alpha(), 0.5);
  EXPECT_DOUBLE_EQ(c.beta(), 0.5);
  EXPECT_DOUBLE_EQ(c.theta(), 0.0);
  EXPECT_EQ(c.turn(), 0);
  EXPECT_EQ(u.iterations, 0);
  EXPECT_EQ(c.end_batch(0.9375, 1.0).kind, DtpsCase::Balanced);  // m = -0.0625
  // The band's edges are inside it: -tolerance <= m <= tolerance (0.25: exact in binary).
  DtpsConfig cfg;
  cfg.tolerance = 0.25;
  DtpsController d(cfg);
  EXPECT_EQ(d.end_batch(1.0, 0.75).kind, DtpsCase::Balanced);  // m = +0.25
  EXPECT_EQ(d.end_batch(0.75, 1.0).kind, DtpsCase::Balanced);  // m = -0.25
  EXPECT_EQ(d.end_batch(1.0, 0.7).kind, DtpsCase::CpuOverloaded);
  EXPECT_EQ(d.turn(), 1);
}

TEST(ThreeCases, Case2GpuOverloadedOvershootsAndComesBack) {
  // alpha 0.5, T_c = 1, T_g = 2: m = -0.5; theta_0 = 0.5 * beta = 0.25.
  //   a = 0.75,   theta 0.125:   T_c' = 1.5,   T_g' = 1.0   m = +1/3  (overshoot: go back)
  //   a = 0.625,  theta 0.0625:  T_c' = 1.25,  T_g' = 1.5   m = -1/6
  //   a = 0.6875, theta 0.03125: T_c' = 1.375, T_g' = 1.25  m = +1/11  in range, stop.
  DtpsController c;
  const DtpsUpdate u = c.end_batch(1.0, 2.0);
  EXPECT_EQ(u.kind, DtpsCase::GpuOverloaded);
  EXPECT_DOUBLE_EQ(u.m_before, -0.5);
  EXPECT_EQ(u.iterations, 3);
  EXPECT_DOUBLE_EQ(u.alpha, 0.6875);
  EXPECT_DOUBLE_EQ(u.theta, 0.03125);
  EXPECT_DOUBLE_EQ(u.m_after, 1.0 / 11.0);
  EXPECT_EQ(u.turn, 1);
  EXPECT_FALSE(u.saturated);
  EXPECT_DOUBLE_EQ(c.alpha(), 0.6875);
  EXPECT_DOUBLE_EQ(c.beta(), 0.3125);
  EXPECT_DOUBLE_EQ(c.theta(), 0.03125);
  EXPECT_EQ(c.turn(), 1);
}

TEST(ThreeCases, Case2OneStepWithinRange) {
  // alpha 0.75, T_c = 0.75, T_g = 0.9375: m = -0.2; theta_0 = 0.2 * 0.25 = 0.05.
  //   a = 0.8, theta 0.025: T_c' = 0.8, T_g' = 0.75, m = 0.0625: in range after one step.
  DtpsConfig cfg;
  cfg.initial_alpha = 0.75;
  DtpsController c(cfg);
  const DtpsUpdate u = c.end_batch(0.75, 0.9375);
  EXPECT_EQ(u.kind, DtpsCase::GpuOverloaded);
  EXPECT_DOUBLE_EQ(u.m_before, -0.2);
  EXPECT_EQ(u.iterations, 1);
  EXPECT_DOUBLE_EQ(u.alpha, 0.8);
  EXPECT_DOUBLE_EQ(u.theta, 0.025);
  EXPECT_NEAR(u.m_after, 0.0625, 1e-15);
  EXPECT_EQ(u.turn, 1);
}

TEST(ThreeCases, Case3CpuOverloadedLowersAlphaFirst) {
  // The mirror of case (2): alpha 0.5, T_c = 2, T_g = 1: m = 0.5; theta_0 = 0.5 * alpha = 0.25.
  //   a = 0.25,   theta 0.125:   T_c' = 1.0,   T_g' = 1.5    m = -1/3
  //   a = 0.375,  theta 0.0625:  T_c' = 1.5,   T_g' = 1.25   m = +1/6
  //   a = 0.3125, theta 0.03125: T_c' = 1.25,  T_g' = 1.375  m = -1/11  in range, stop.
  DtpsController c;
  const DtpsUpdate u = c.end_batch(2.0, 1.0);
  EXPECT_EQ(u.kind, DtpsCase::CpuOverloaded);
  EXPECT_DOUBLE_EQ(u.m_before, 0.5);
  EXPECT_EQ(u.iterations, 3);
  EXPECT_DOUBLE_EQ(u.alpha, 0.3125);
  EXPECT_DOUBLE_EQ(u.theta, 0.03125);
  EXPECT_DOUBLE_EQ(u.m_after, -1.0 / 11.0);
  EXPECT_EQ(u.turn, 1);
  EXPECT_DOUBLE_EQ(c.beta(), 0.6875);
}

TEST(ThreeCases, RealisedShareIsWhereTheSearchStarts) {
  // The controller says 0.5 but the batch ran 0.25 on the CPU class (whole units); equal
  // speeds: T_c = 0.25, T_g = 0.75, m = -2/3, theta_0 = 2/3 * 0.75 = 0.5.
  //   a = 0.75, theta 0.25:  m = +2/3;   a = 0.5, theta 0.125: m = 0, stop.
  DtpsController c;
  const DtpsUpdate u = c.end_batch(0.25, 0.75, 0.25);
  EXPECT_EQ(u.kind, DtpsCase::GpuOverloaded);
  EXPECT_DOUBLE_EQ(u.alpha_before, 0.25);
  EXPECT_EQ(u.iterations, 2);
  EXPECT_DOUBLE_EQ(u.alpha, 0.5);
  EXPECT_DOUBLE_EQ(u.theta, 0.125);
  EXPECT_DOUBLE_EQ(u.m_after, 0.0);
}

TEST(ThreeCases, BalancedAtARealisedShareKeepsThatShare) {
  // Planned 0.5, but whole units (or re-balancing) made the batch run 0.3 on the CPU class,
  // and it ended balanced (m = -0.05): 0.3 is the split to plan next time.
  DtpsController c;
  const DtpsUpdate u = c.end_batch(0.95, 1.0, 0.3);
  EXPECT_EQ(u.kind, DtpsCase::Balanced);
  EXPECT_DOUBLE_EQ(u.alpha, 0.3);
  EXPECT_DOUBLE_EQ(c.alpha(), 0.3);
}

TEST(ThreeCases, InnerIterationsAreBounded) {
  DtpsConfig cfg;
  cfg.max_iterations = 2;
  DtpsController c(cfg);
  const DtpsUpdate u = c.end_batch(1.0, 2.0);  // needs 3, see above
  EXPECT_EQ(u.iterations, 2);
  EXPECT_DOUBLE_EQ(u.alpha, 0.625);
  EXPECT_DOUBLE_EQ(u.theta, 0.0625);
  EXPECT_NEAR(u.m_after, -1.0 / 6.0, 1e-15);
}

TEST(ThreeCases, ThetaIsReDerivedEachRoundAndResetForANewKind) {
  DtpsController c;
  c.end_batch(1.0, 2.0);
  ASSERT_EQ(c.turn(), 1);
  // Round 2 from alpha 0.6875: T_c = 1, T_g = 2 again (the GPU slowed down): m = -0.5,
  // theta_0 = 0.5 * 0.3125, not the carried 0.03125.
  const DtpsUpdate u = c.end_batch(1.0, 2.0);
  EXPECT_EQ(u.turn, 2);
  EXPECT_DOUBLE_EQ(u.theta * std::ldexp(1.0, u.iterations), 0.5 * 0.3125);
  c.reset();
  EXPECT_DOUBLE_EQ(c.alpha(), 0.5);
  EXPECT_DOUBLE_EQ(c.theta(), 0.0);
  EXPECT_EQ(c.turn(), 0);
}

// ---------------------------------------------------------------------------------------------
// Synthetic two-class model: the CPU class runs r_c units of work per second, the GPU class
// r_g; a batch of W units gives T_c = alpha W / r_c, T_g = beta W / r_g.

struct TwoClass {
  double r_c, r_g, w = 1000.0;
  double overhead_c = 0.0, overhead_g = 0.0;  // fixed cost per batch (not in the linear model)
  double t_cpu(double alpha) const { return alpha * w / r_c + overhead_c; }
  double t_gpu(double alpha) const { return (1.0 - alpha) * w / r_g + overhead_g; }
  double m(double alpha) const { return sched::delay_coefficient(t_cpu(alpha), t_gpu(alpha)); }
};

// Batches until one ends balanced (case (1)); 0 when the first is; -1 when none in `limit`.
int batches_to_balance(DtpsController& c, const TwoClass& model, int limit) {
  for (int b = 0; b < limit; ++b) {
    const double a = c.alpha();
    const DtpsUpdate u = c.end_batch(model.t_cpu(a), model.t_gpu(a));
    if (u.kind == DtpsCase::Balanced) return b;
  }
  return -1;
}

TEST(SyntheticModel, ReachesBalanceWithinEightBatches) {
  const double ratios[] = {1, 2, 3, 5, 10, 20, 35, 50};  // r_c : r_g = 1 : ratio
  for (double ratio : ratios) {
    for (double start : {0.5, 0.9}) {
      for (bool gpu_faster : {true, false}) {
        const TwoClass model = gpu_faster ? TwoClass{1.0, ratio} : TwoClass{ratio, 1.0};
        DtpsConfig cfg;
        cfg.initial_alpha = start;
        DtpsController c(cfg);
        const int adjusting = batches_to_balance(c, model, 8);
        SCOPED_TRACE("r_c:r_g = " + std::to_string(model.r_c) + ":" + std::to_string(model.r_g) +
                     ", alpha_0 = " + std::to_string(start));
        ASSERT_GE(adjusting, 0);
        // The linear model is exact here, so one adjusting round suffices.
        EXPECT_LE(adjusting, 1);
        EXPECT_LE(std::fabs(model.m(c.alpha())), 0.1);
        EXPECT_LE(c.turn(), 1);
        // And it stays balanced.
        for (int b = 0; b < 4; ++b) {
          const double a = c.alpha();
          EXPECT_EQ(c.end_batch(model.t_cpu(a), model.t_gpu(a)).kind, DtpsCase::Balanced);
        }
      }
    }
  }
}

TEST(SyntheticModel, FixedCostsOutsideTheLinearModelStillConverge) {
  // A per-batch cost (GPU transfers, CPU start-up) the linear model does not know about: the
  // prediction is off, and later batches correct it. Costs of 5% (CPU) and 10% (GPU) of the
  // balanced batch span take at most 3 adjusting rounds here.
  for (double ratio : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0}) {
    for (double start : {0.5, 0.9}) {
      TwoClass model{1.0, ratio};
      const double span = model.w / (model.r_c + model.r_g);
      model.overhead_c = 0.05 * span;
      model.overhead_g = 0.1 * span;
      DtpsConfig cfg;
      cfg.initial_alpha = start;
      DtpsController c(cfg);
      SCOPED_TRACE("1:" + std::to_string(ratio) + " from " + std::to_string(start));
      const int adjusting = batches_to_balance(c, model, 8);
      EXPECT_GE(adjusting, 0);
      EXPECT_LE(adjusting, 4);
      EXPECT_LE(std::fabs(model.m(c.alpha())), 0.1);
    }
  }
  // An extreme case: the CPU class's fixed cost is as long as the GPU class's whole balanced
  // batch. The linear model's guesses are poor; convergence is slower but still comes.
  for (double ratio : {1.0, 5.0, 20.0, 50.0}) {
    TwoClass model{1.0, ratio};
    model.overhead_c = 0.02 * model.w;
    model.overhead_g = 0.1 * model.w / ratio;
    DtpsController c;
    SCOPED_TRACE("extreme 1:" + std::to_string(ratio));
    EXPECT_GE(batches_to_balance(c, model, 16), 0);
    EXPECT_LE(std::fabs(model.m(c.alpha())), 0.1);
  }
}

TEST(SyntheticModel, NoisyTimesStayNearBalance) {
  // +-3% multiplicative noise on each measured time: after settling, the true m of the ratio
  // in use stays near the band and alpha does not drift.
  std::mt19937 rng(12345);
  std::uniform_real_distribution<double> noise(0.97, 1.03);
  for (double ratio : {1.0, 10.0, 50.0}) {
    const TwoClass model{1.0, ratio};
    DtpsController c;
    for (int b = 0; b < 200; ++b) {
      const double a = c.alpha();
      c.end_batch(model.t_cpu(a) * noise(rng), model.t_gpu(a) * noise(rng));
      if (b >= 8) {
        EXPECT_LE(std::fabs(model.m(c.alpha())), 0.17) << "batch " << b;
      }
    }
    EXPECT_LE(c.turn(), 60);  // most batches fall in case (1)
  }
}

TEST(SyntheticModel, SaturatesAtTheShareBounds) {
  // The CPU class is a million times slower: alpha goes to min_share and stays.
  const TwoClass model{1.0, 1e6};
  DtpsController c;
  DtpsUpdate u = c.end_batch(model.t_cpu(c.alpha()), model.t_gpu(c.alpha()));
  EXPECT_EQ(u.kind, DtpsCase::CpuOverloaded);
  EXPECT_DOUBLE_EQ(c.alpha(), 0.001);
  EXPECT_TRUE(u.saturated);
  u = c.end_batch(model.t_cpu(c.alpha()), model.t_gpu(c.alpha()));
  EXPECT_TRUE(u.saturated);
  EXPECT_DOUBLE_EQ(c.alpha(), 0.001);
  EXPECT_LE(u.iterations, 1);
  // And the mirror.
  const TwoClass slow_gpu{1e6, 1.0};
  DtpsController d;
  u = d.end_batch(slow_gpu.t_cpu(d.alpha()), slow_gpu.t_gpu(d.alpha()));
  EXPECT_EQ(u.kind, DtpsCase::GpuOverloaded);
  EXPECT_DOUBLE_EQ(d.alpha(), 0.999);
  EXPECT_TRUE(u.saturated);
}

// ---------------------------------------------------------------------------------------------
// Degenerate inputs

TEST(Degenerate, UnusableTimesAreIgnoredAndReported) {
  DtpsController c;
  c.end_batch(1.0, 2.0);
  const DtpsState before = c.state();
  const double bad[] = {0.0, -1.0, kNaN, kInf, -kInf};
  for (double t : bad) {
    for (int side = 0; side < 2; ++side) {
      const DtpsUpdate u = side == 0 ? c.end_batch(t, 1.0) : c.end_batch(1.0, t);
      EXPECT_EQ(u.kind, DtpsCase::Ignored) << t;
      EXPECT_FALSE(u.reason.empty());
      EXPECT_EQ(u.reason.find('\n'), std::string::npos);
      EXPECT_TRUE(std::isnan(u.m_before));
      EXPECT_DOUBLE_EQ(c.alpha(), before.alpha);
      EXPECT_DOUBLE_EQ(c.theta(), before.theta);
      EXPECT_EQ(c.turn(), before.turn);
    }
  }
  EXPECT_NE(c.end_batch(0.0, 1.0).reason.find("CPU"), std::string::npos);
  EXPECT_NE(c.end_batch(1.0, kNaN).reason.find("GPU"), std::string::npos);
  for (double a : {0.0, 1.0, -0.5, 1.5, kNaN}) {
    const DtpsUpdate u = c.end_batch(1.0, 2.0, a);
    EXPECT_EQ(u.kind, DtpsCase::Ignored) << a;
    EXPECT_NE(u.reason.find("realised"), std::string::npos);
  }
  EXPECT_DOUBLE_EQ(c.alpha(), before.alpha);
}

TEST(Degenerate, EmptyClassFixesAlphaButKeepsWhatWasLearned) {
  DtpsController c;
  c.end_batch(1.0, 2.0);  // learned 0.6875
  c.set_classes(false, true);
  EXPECT_DOUBLE_EQ(c.alpha(), 0.0);
  EXPECT_DOUBLE_EQ(c.beta(), 1.0);
  DtpsUpdate u = c.end_batch(kNaN, 1.0);
  EXPECT_EQ(u.kind, DtpsCase::Fixed);
  EXPECT_DOUBLE_EQ(u.alpha, 0.0);
  EXPECT_NE(u.reason.find("no CPU"), std::string::npos);
  c.set_classes(true, false);
  EXPECT_DOUBLE_EQ(c.alpha(), 1.0);
  u = c.end_batch(1.0, 0.0);
  EXPECT_EQ(u.kind, DtpsCase::Fixed);
  EXPECT_NE(u.reason.find("no GPU"), std::string::npos);
  c.set_classes(false, false);
  EXPECT_EQ(c.end_batch(1.0, 1.0).kind, DtpsCase::Fixed);
  c.set_classes(true, true);
  EXPECT_DOUBLE_EQ(c.alpha(), 0.6875);
  EXPECT_EQ(c.turn(), 1);
}

TEST(Degenerate, BadConfigAndStateAreRefusedOrRepaired) {
  const auto with = [](auto change) {
    DtpsConfig cfg;
    change(cfg);
    return cfg;
  };
  EXPECT_THROW(DtpsController(with([](DtpsConfig& c) { c.tolerance = 0.0; })),
               std::invalid_argument);
  EXPECT_THROW(DtpsController(with([](DtpsConfig& c) { c.tolerance = kNaN; })),
               std::invalid_argument);
  EXPECT_THROW(DtpsController(with([](DtpsConfig& c) { c.min_share = 0.0; })),
               std::invalid_argument);
  EXPECT_THROW(DtpsController(with([](DtpsConfig& c) { c.min_share = 0.5; })),
               std::invalid_argument);
  EXPECT_THROW(DtpsController(with([](DtpsConfig& c) { c.max_iterations = 0; })),
               std::invalid_argument);
  EXPECT_THROW(DtpsController(with([](DtpsConfig& c) { c.initial_alpha = 1.5; })),
               std::invalid_argument);
  EXPECT_THROW(DtpsStore(with([](DtpsConfig& c) { c.tolerance = 2.0; })), std::invalid_argument);

  // Alpha 0 and 1 are clamped to [min_share, 1 - min_share]; a NaN alpha starts over.
  EXPECT_DOUBLE_EQ(DtpsController(DtpsConfig{}, DtpsState{0.0, 0.0, 0}).alpha(), 0.001);
  EXPECT_DOUBLE_EQ(DtpsController(DtpsConfig{}, DtpsState{1.0, 0.0, 0}).alpha(), 0.999);
  EXPECT_DOUBLE_EQ(DtpsController(DtpsConfig{}, DtpsState{kNaN, 0.0, 0}).alpha(), 0.5);
  const DtpsController repaired(DtpsConfig{}, DtpsState{0.3, -1.0, -4});
  EXPECT_DOUBLE_EQ(repaired.theta(), 0.0);
  EXPECT_EQ(repaired.turn(), 0);
}

// ---------------------------------------------------------------------------------------------
// The store

class TempDir {
 public:
  TempDir() {
    static int n = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("test_dtps." + std::to_string(static_cast<long>(::getpid())) + "." +
             std::to_string(n++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_all(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

// The store's checksum, to forge files that are well-formed but wrong in content.
std::string with_checksum(const std::string& body) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : body) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return body + "checksum fnv1a64 " + buf + "\n";
}

TEST(Store, SecondRunStartsFromTheSavedRatio) {
  TempDir dir;
  const TwoClass gemm{1.0, 20.0};
  const TwoClass lwt{3.0, 4.0};
  const std::string odd_name = "lwt fused\tpass %1 \xc3\xbc";  // spaces, tab, '%', UTF-8
  {
    // First run: both kinds adjust.
    DtpsStore store;
    EXPECT_FALSE(store.load(dir.path()));  // nothing saved yet
    EXPECT_EQ(store.size(), 0u);
    for (auto [name, model] : {std::pair{std::string("gemm_tile"), gemm}, {odd_name, lwt}}) {
      DtpsController& c = store.controller(name);
      EXPECT_GE(batches_to_balance(c, model, 8), 1) << name;
    }
    store.save(dir.path());
  }
  // No temporary file left behind.
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    EXPECT_EQ(e.path().filename(), DtpsStore::kFileName);
  }
  EXPECT_EQ(files, 1u);

  // Second run: loaded ratios are balanced at once, no further adjustment.
  DtpsStore store;
  ASSERT_TRUE(store.load(dir.path()));
  ASSERT_EQ(store.size(), 2u);
  for (auto [name, model] : {std::pair{std::string("gemm_tile"), gemm}, {odd_name, lwt}}) {
    const DtpsController* saved = store.find(name);
    ASSERT_NE(saved, nullptr) << name;
    EXPECT_EQ(saved->turn(), 1);
    DtpsController& c = store.controller(name);
    const double a = c.alpha();
    EXPECT_EQ(batches_to_balance(c, model, 8), 0) << name;
    EXPECT_DOUBLE_EQ(c.alpha(), a);
    EXPECT_EQ(c.turn(), 1);
  }
  // A kind never seen starts at the initial alpha.
  EXPECT_EQ(store.find("other"), nullptr);
  EXPECT_DOUBLE_EQ(store.controller("other").alpha(), 0.5);
}

TEST(Store, RoundTripIsBitExactAndSavesOverAnOldFile) {
  TempDir dir;
  DtpsStore store;
  store.controller("a").end_batch(1.0, 2.0);
  store.controller("b").end_batch(0.1, 0.7);
  store.controller("c");
  store.save(dir.path());
  store.controller("a").end_batch(2.0, 1.0);  // change, save again over the old file
  store.save(dir.path());
  DtpsStore back;
  ASSERT_TRUE(back.load(dir.path()));
  EXPECT_EQ(back.kinds(), store.kinds());
  for (const std::string& k : store.kinds()) {
    EXPECT_EQ(back.find(k)->state().alpha, store.find(k)->state().alpha) << k;
    EXPECT_EQ(back.find(k)->state().theta, store.find(k)->state().theta) << k;
    EXPECT_EQ(back.find(k)->state().turn, store.find(k)->state().turn) << k;
  }
  EXPECT_EQ(back.to_text(), store.to_text());
  EXPECT_EQ(read_all(DtpsStore::file_in(dir.path())), store.to_text());
}

TEST(Store, SaveCreatesTheModelDirectoryAndReportsFailure) {
  TempDir dir;
  DtpsStore store;
  store.controller("k");
  store.save(dir.path() / "models" / "node1");
  EXPECT_TRUE(std::filesystem::exists(DtpsStore::file_in(dir.path() / "models" / "node1")));
  write_all(dir.path() / "plain", "x");
  EXPECT_THROW(store.save(dir.path() / "plain"), std::runtime_error);
}

TEST(Store, ClassesApplyToLoadedAndNewKinds) {
  TempDir dir;
  DtpsStore store;
  store.controller("k").end_batch(1.0, 2.0);
  store.save(dir.path());
  DtpsStore cpu_only;
  cpu_only.set_classes(true, false);
  ASSERT_TRUE(cpu_only.load(dir.path()));
  EXPECT_DOUBLE_EQ(cpu_only.controller("k").alpha(), 1.0);
  EXPECT_DOUBLE_EQ(cpu_only.controller("new").alpha(), 1.0);
  cpu_only.set_classes(true, true);
  EXPECT_DOUBLE_EQ(cpu_only.controller("k").alpha(), 0.6875);
}

// Every refused file: DtpsStoreError, a one-line message naming the file, store unchanged.
void expect_refused(const std::string& text, const std::string& needle) {
  TempDir dir;
  write_all(DtpsStore::file_in(dir.path()), text);
  DtpsStore store;
  store.controller("kept").end_batch(1.0, 2.0);
  try {
    store.load(dir.path());
    ADD_FAILURE() << "accepted: " << text.substr(0, 200);
  } catch (const DtpsStoreError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find(DtpsStore::kFileName), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
    EXPECT_LT(what.size(), 300u) << what;
  }
  ASSERT_EQ(store.size(), 1u);
  EXPECT_DOUBLE_EQ(store.find("kept")->alpha(), 0.6875);
}

std::string good_text() {
  DtpsStore store;
  store.controller("gemm").end_batch(1.0, 2.0);
  store.controller("lwt").end_batch(3.0, 1.0);
  return store.to_text();
}

TEST(Store, RefusesCorruptFiles) {
  const std::string good = good_text();
  expect_refused("", "empty");
  expect_refused("hello\n", "not a DTPS store");
  expect_refused(std::string("\x7f" "ELF\x02\x01\x01\0\0\0", 10), "not a DTPS store");
  expect_refused(with_checksum("fnndtps-dtps 2\nkinds 0\n"), "version 2 is not supported");
  expect_refused(with_checksum("fnndtps-dtps x\nkinds 0\n"), "version");
  expect_refused(with_checksum("fnndtps-dtps 1\nkinds 1\nkind a 2.5 0 1\n"), "outside [0, 1]");
  expect_refused(with_checksum("fnndtps-dtps 1\nkinds 1\nkind a nan 0 1\n"), "finite");
  expect_refused(with_checksum("fnndtps-dtps 1\nkinds 1\nkind a 0.5 -1 1\n"), "theta");
  expect_refused(with_checksum("fnndtps-dtps 1\nkinds 1\nkind a 0.5 0 -1\n"), "turn");
  expect_refused(with_checksum("fnndtps-dtps 1\nkinds 1\nkind a 0.5 0\n"), "4 fields");
  expect_refused(with_checksum("fnndtps-dtps 1\nkinds 1\nkind a%G1 0.5 0 1\n"), "%-encoding");
  expect_refused(with_checksum("fnndtps-dtps 1\nkinds 1\nkind a% 0.5 0 1\n"), "%-encoding");
  expect_refused(with_checksum("fnndtps-dtps 1\nkinds 2\nkind a 0.5 0 1\nkind a 0.4 0 1\n"),
                 "twice");
  expect_refused(with_checksum("fnndtps-dtps 1\nkinds 2\nkind a 0.5 0 1\n"), "expected 'kind");
  expect_refused(with_checksum("fnndtps-dtps 1\nkinds 99999999999\n"), "too large");
  expect_refused(good + "kind extra 0.5 0 1\n", "after the checksum");
  // A changed digit that still parses: only the checksum catches it.
  std::string edited = good;
  const std::size_t at = edited.find("kind gemm 0.6875");
  ASSERT_NE(at, std::string::npos);
  edited[at + 12] = '7';
  expect_refused(edited, "checksum mismatch");
  std::string wrong_algo = good;
  wrong_algo.replace(wrong_algo.find("fnv1a64"), 7, "crc32xx");
  expect_refused(wrong_algo, "unknown checksum");
}

TEST(Store, RefusesEveryTruncation) {
  const std::string good = good_text();
  TempDir dir;
  // Every proper prefix that drops a non-blank character is refused; none crashes.
  for (std::size_t n = 0; n + 1 < good.size(); ++n) {
    write_all(DtpsStore::file_in(dir.path()), good.substr(0, n));
    DtpsStore store;
    EXPECT_THROW(store.load(dir.path()), DtpsStoreError) << "prefix of " << n << " bytes";
    EXPECT_EQ(store.size(), 0u);
  }
  // Without only its final newline the file is still whole.
  write_all(DtpsStore::file_in(dir.path()), good.substr(0, good.size() - 1));
  DtpsStore store;
  EXPECT_TRUE(store.load(dir.path()));
  EXPECT_EQ(store.size(), 2u);
}

TEST(Store, RandomByteCorruptionNeverCrashes) {
  const std::string good = good_text();
  std::mt19937 rng(7);
  int refused = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text = good;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      text[rng() % text.size()] = static_cast<char>(rng() % 256);
    }
    if (text == good) continue;
    try {
      (void)DtpsStore::parse(text, "random");
    } catch (const DtpsStoreError& e) {
      ++refused;
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
  // A flip inside a comment or of spaces into tabs can leave a valid file; the rest are caught.
  EXPECT_GT(refused, 1500);
}

TEST(Store, RefusesADirectoryInPlaceOfTheFile) {
  TempDir dir;
  std::filesystem::create_directories(DtpsStore::file_in(dir.path()));
  DtpsStore store;
  EXPECT_THROW(store.load(dir.path()), DtpsStoreError);
}

TEST(Names, CasesPrint) {
  EXPECT_STREQ(sched::to_string(DtpsCase::Balanced), "balanced");
  EXPECT_STREQ(sched::to_string(DtpsCase::GpuOverloaded), "gpu-overloaded");
  EXPECT_STREQ(sched::to_string(DtpsCase::CpuOverloaded), "cpu-overloaded");
  EXPECT_STREQ(sched::to_string(DtpsCase::Ignored), "ignored");
  EXPECT_STREQ(sched::to_string(DtpsCase::Fixed), "fixed");
  EXPECT_STREQ(sched::to_string(DtpsCase::Probe), "guard-probe");
  EXPECT_STREQ(sched::to_string(DtpsCase::Guarded), "guarded");
}

// ---------------------------------------------------------------------------------------------
// The makespan guard (DESIGN §6, beyond seed 001). Throughputs are work per us of a batch's
// makespan; equal class times keep seed 001's split (case (1)) so that only the guard moves it.

constexpr double kLo = 0.001;  // DtpsConfig's default min_share

TEST(Guard, ProbesTheFasterClassAloneAfterTwoCoRuns) {
  DtpsController c(DtpsConfig{}, DtpsState{0.3, 0, 0});
  EXPECT_EQ(c.end_batch(10, 10, 0.3, 1.0).kind, DtpsCase::Balanced);  // the first co-run: no probe yet
  const DtpsUpdate u = c.end_batch(10, 10, 0.3, 1.0);
  EXPECT_EQ(u.kind, DtpsCase::Probe);
  EXPECT_DOUBLE_EQ(c.alpha(), kLo) << "the GPU class did 0.7 of the work in the same time: it runs alone";
  DtpsController cpu(DtpsConfig{}, DtpsState{0.8, 0, 0});
  cpu.end_batch(10, 10, 0.8, 1.0);
  cpu.end_batch(10, 10, 0.8, 1.0);
  EXPECT_DOUBLE_EQ(cpu.alpha(), 1 - kLo) << "here the CPU class is the faster one";
}

// Classes that share nothing (the nodes of an MPI job): the faster one alone would take its
// time over its share, so it is tried alone only where that could beat the co-run.
TEST(Guard, IndependentClassesAreProbedOnlyWhereAloneCouldWin) {
  DtpsConfig apart;
  apart.independent_classes = true;
  DtpsController even(apart, DtpsState{0.5, 0, 0});  // two like nodes: alone would take 20
  for (int i = 0; i < 6; ++i) EXPECT_EQ(even.end_batch(10, 10, 0.5, 1.0).kind, DtpsCase::Balanced) << "batch " << i;
  EXPECT_DOUBLE_EQ(even.alpha(), 0.5);
  DtpsController small(apart, DtpsState{0.02, 0, 0});  // a node doing 2% in the same time
  small.end_batch(10, 10, 0.02, 1.0);
  const DtpsUpdate u = small.end_batch(10, 10, 0.02, 1.0);  // alone 10 / 0.98 = 10.2, within the margin
  EXPECT_EQ(u.kind, DtpsCase::Probe) << u.reason;
  EXPECT_DOUBLE_EQ(small.alpha(), kLo);
}

TEST(Guard, CoRunningSlowerThanOneClassAloneEndsAlone) {
  DtpsController c(DtpsConfig{}, DtpsState{0.3, 0, 0});
  c.end_batch(10, 10, 0.3, 1.0);
  c.end_batch(10, 10, 0.3, 1.0);                         // probe: GPU alone next
  DtpsUpdate u = c.end_batch(0, 5, 0.0, 2.0);            // alone: twice the co-run's throughput
  EXPECT_EQ(u.kind, DtpsCase::Guarded) << u.reason;
  EXPECT_DOUBLE_EQ(c.alpha(), kLo);
  for (int i = 0; i < 3; ++i) {                          // it stays there
    u = c.end_batch(0, 5, 0.0, 2.0);
    EXPECT_EQ(u.kind, DtpsCase::Guarded);
    EXPECT_DOUBLE_EQ(c.alpha(), kLo);
  }
  EXPECT_EQ(c.guard().alone_class, 1);
}

TEST(Guard, TheFirstCoRunAfterABatchAloneIsAWarmUp) {
  DtpsController c(DtpsConfig{}, DtpsState{0.3, 0, 0});
  DtpsUpdate u = c.end_batch(0, 5, 0.0, 2.0);            // alone first: nothing to compare with
  EXPECT_EQ(u.kind, DtpsCase::Ignored) << u.reason;
  EXPECT_FALSE(u.warm_up) << "a batch alone is no co-run's warm-up";
  u = c.end_batch(30, 10, 0.3, 0.5);                     // a cold co-run, 4x slower: not judged
  EXPECT_EQ(u.kind, DtpsCase::Ignored) << "neither by seed 001 (m = 0.67) nor by the guard";
  EXPECT_TRUE(u.warm_up) << "what an MPI rank's DTPS is told (RankDtps::end_round's warming)";
  EXPECT_DOUBLE_EQ(c.alpha(), 0.3);
  u = c.end_batch(10, 10, 0.3, 1.0);                     // still slower than alone: back off
  EXPECT_EQ(u.kind, DtpsCase::Guarded);
  EXPECT_DOUBLE_EQ(c.alpha(), kLo);
  c.end_batch(0, 5, 0.0, 0.5);                           // alone and slowed: the co-run's split back
  EXPECT_DOUBLE_EQ(c.alpha(), 0.3);
  u = c.end_batch(10, 10, 0.3, 0.25);                    // warm now: judged at once
  EXPECT_EQ(u.kind, DtpsCase::Guarded);
  EXPECT_DOUBLE_EQ(c.alpha(), kLo);
}

TEST(Guard, CoRunningFasterRestoresItsSplit) {
  DtpsController c(DtpsConfig{}, DtpsState{0.3, 0, 0});
  c.end_batch(10, 10, 0.3, 2.0);
  c.end_batch(10, 10, 0.3, 2.0);
  DtpsUpdate u = c.end_batch(0, 5, 0.0, 1.0);            // alone: half the co-run's throughput
  EXPECT_EQ(u.kind, DtpsCase::Guarded);
  EXPECT_DOUBLE_EQ(c.alpha(), 0.3);
  u = c.end_batch(10, 10, 0.3, 2.0);                     // co-running again: seed 001 decides
  EXPECT_EQ(u.kind, DtpsCase::Balanced) << "the run's co-runs are warm: no second warm-up";
  EXPECT_DOUBLE_EQ(c.alpha(), 0.3);
  u = c.end_batch(10, 10, 0.3, 0.99);                    // as fast as alone, within the margin
  EXPECT_EQ(u.kind, DtpsCase::Balanced) << "within kGuardMargin of alone's 1.0: the same";
  u = c.end_batch(10, 10, 0.3, 0.9);                     // slower than alone: back off
  EXPECT_EQ(u.kind, DtpsCase::Guarded);
  EXPECT_DOUBLE_EQ(c.alpha(), kLo);
}

TEST(Guard, FollowsAClassAloneThatSlowsDown) {
  DtpsController c(DtpsConfig{}, DtpsState{0.3, 0, 0});
  c.end_batch(10, 10, 0.3, 1.0);
  c.end_batch(10, 10, 0.3, 1.0);
  c.end_batch(0, 5, 0.0, 2.0);
  EXPECT_DOUBLE_EQ(c.alpha(), kLo);
  const DtpsUpdate u = c.end_batch(0, 20, 0.0, 0.5);     // the GPU slowed to a quarter
  EXPECT_EQ(u.kind, DtpsCase::Guarded);
  EXPECT_DOUBLE_EQ(c.alpha(), 0.3) << "the latest co-run's split again";
}

// Seed2017-like: whole units, the balanced split (10 units of 64) slower than the unbalanced
// one (8 units) that seed 001 left.
TEST(Guard, KeepsTheFastestCoRunSplit) {
  DtpsController c(DtpsConfig{}, DtpsState{0.125, 0, 0});
  c.end_batch(0, 160, 0.0, 1.0);                         // the GPU class alone
  c.end_batch(160, 190, 0.125, 0.8);                     // the warm-up co-run
  DtpsUpdate u = c.end_batch(130, 147, 0.125, 1.1);      // faster than alone; GPU late by 12%
  EXPECT_EQ(u.kind, DtpsCase::GpuOverloaded);
  EXPECT_GT(c.alpha(), 0.14) << "seed 001 moves work to the CPU class";
  u = c.end_batch(163, 161, 0.15625, 0.98);              // balanced, but 11% slower
  EXPECT_EQ(u.kind, DtpsCase::Guarded) << u.reason;
  EXPECT_DOUBLE_EQ(c.alpha(), 0.125);
  EXPECT_TRUE(c.guard().held);
  u = c.end_batch(130, 147, 0.125, 1.09);                // as fast again: held against seed 001
  EXPECT_EQ(u.kind, DtpsCase::Guarded) << u.reason;
  EXPECT_DOUBLE_EQ(c.alpha(), 0.125);
  u = c.end_batch(130, 147, 0.125, 1.0);                 // the held split slowed: seed 001 again
  EXPECT_EQ(u.kind, DtpsCase::GpuOverloaded) << u.reason;
  EXPECT_GT(c.alpha(), 0.14);
  EXPECT_FALSE(c.guard().held);
  u = c.end_batch(163, 161, 0.15625, 1.05);              // now the faster split: it is the best
  EXPECT_EQ(u.kind, DtpsCase::Balanced) << u.reason;
  EXPECT_DOUBLE_EQ(c.guard().best_alpha, 0.15625);
}

TEST(Guard, WithoutAThroughputSeed001Alone) {
  DtpsController c(DtpsConfig{}, DtpsState{0.3, 0, 0});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c.end_batch(10, 10, 0.3).kind, DtpsCase::Balanced);
  EXPECT_DOUBLE_EQ(c.alpha(), 0.3);
  EXPECT_EQ(c.guard().coruns, 0);
}

}  // namespace
