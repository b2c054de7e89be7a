// DTPS dispatch of a batch as the scheduler sees it (scheduler/dtps_dispatch.hpp; seed 001 §1.2
// eq. (6), §1.3 case (1)): eq. (5) ordering and eq. (6) verdicts on a hand example, the cut
// for a share alpha, a seed 001 §2.2.3 batch of mixed GEMM blocks under both orders, and agreement with weights::partition (codelets/), which
// states the same rule for the codelets' side.
#include <gtest/gtest.h>

#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include "codelets/subtask_weights.hpp"
#include "tests/dtps_decide.hpp"
#include "scheduler/dtps_dispatch.hpp"

namespace {

namespace dd = sched::dtps_dispatch;
using dd::Item;
using dd::Side;

// A: much compute, little data; B: much of both; C: little of both; D: much data.
// P = 211, Q = 32, N = 4: p = 26.375, q = 4.
const std::vector<Item> kBatch = {{100, 1}, {100, 10}, {1, 1}, {10, 20}};

TEST(DtpsDispatch, Eq5WeightAndEq6Verdicts) {
  EXPECT_DOUBLE_EQ(dd::weight({140, 8}), 17.5);
  EXPECT_EQ(dd::weight({1, 0}), std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(dd::weight({0, 0}), 0);
  EXPECT_DOUBLE_EQ(dd::weight({-3, 2}), 0);
  const dd::Thresholds th = dd::thresholds(kBatch);
  EXPECT_DOUBLE_EQ(th.p, 26.375);
  EXPECT_DOUBLE_EQ(th.q, 4);
  EXPECT_EQ(dd::eq6(kBatch[0], th), Side::Gpu);
  EXPECT_EQ(dd::eq6(kBatch[1], th), Side::Cpu);  // communication comes first
  EXPECT_EQ(dd::eq6(kBatch[2], th), Side::Either);
  EXPECT_EQ(dd::eq6(kBatch[3], th), Side::Cpu);
  EXPECT_EQ(dd::eq6({100, 4}, th), Side::Either);  // DA = q exactly
  EXPECT_DOUBLE_EQ(dd::thresholds({}).p, 0);
}

TEST(DtpsDispatch, CutInAGivenOrder) {
  // Work 4, 3, 2, 1 (total 10). alpha 0.3, GPU target 7: 4 (mid 2) in, 3 (mid 5.5) in,
  // 2 (mid 8) out: the GPU class takes the first 2, the CPU class the last 2.
  EXPECT_EQ(dd::gpu_front({4, 3, 2, 1}, 0.3), 2u);
  EXPECT_EQ(dd::gpu_front({4, 3, 2, 1}, 0.0), 4u);
  EXPECT_EQ(dd::gpu_front({4, 3, 2, 1}, -1), 4u);
  EXPECT_EQ(dd::gpu_front({4, 3, 2, 1}, 1.0), 0u);
  EXPECT_EQ(dd::gpu_front({4, 3, 2, 1}, 0.05), 4u);  // target 9.5: the last one's middle at 9.5
  EXPECT_EQ(dd::gpu_front({4, 3, 2, 1}, 0.06), 3u);
  EXPECT_EQ(dd::gpu_front({4, 3, 2, 1}, std::numeric_limits<double>::quiet_NaN()), 1u);  // 0.5: target 5
  EXPECT_EQ(dd::gpu_front({0, 0, 0, 0, 0}, 0.4), 3u);  // no work: by count
  EXPECT_EQ(dd::gpu_front({}, 0.4), 0u);
  // Many equal items: the CPU class gets alpha of the work, within half an item.
  const std::vector<double> equal(1000, 2.0);
  for (double alpha : {0.013, 0.25, 0.5, 0.9})
    EXPECT_NEAR(1.0 - double(dd::gpu_front(equal, alpha)) / 1000.0, alpha, 0.0005 + 1e-12) << alpha;
}

TEST(DtpsDispatch, HandBatch) {
  // Order: Gpu {A}, Either {C}, Cpu by weight {B (10), D (0.5)}: A, C, B, D. alpha 0.5, GPU
  // target 105.5: A (50) in, C (100.5) in, B (151) out.
  const dd::Decision d = dd::decide(kBatch, 0.5);
  EXPECT_EQ(d.order, (std::vector<std::size_t>{0, 2, 1, 3}));
  EXPECT_EQ(d.gpu_count, 2u);
  EXPECT_EQ(d.side, (std::vector<Side>{Side::Gpu, Side::Cpu, Side::Gpu, Side::Cpu}));
  EXPECT_DOUBLE_EQ(d.gpu_work, 101);
  EXPECT_DOUBLE_EQ(d.cpu_work, 110);
  EXPECT_EQ(dd::decide(kBatch, 0.2).gpu_count, 3u);
  EXPECT_EQ(dd::decide(kBatch, 1).gpu_count, 0u);
  EXPECT_TRUE(dd::decide({}, 0.3).order.empty());
}

// Seed 001 §2.2.3: C blocks of widths 2048, 1024, 512 in turn (2d: each over the whole k =
// 16384, float), so IA = 2 a b k and DA = (a k + k b + a b) 4 bytes differ by block, and the
// eq. (5) weight grows with the block.
std::vector<Item> mixed_blocks() {
  const double k = 16384;
  const std::vector<double> widths = {2048, 1024, 512, 2048, 1024, 512};
  std::vector<Item> batch;
  for (double a : widths)
    for (double b : widths) batch.push_back({2 * a * b * k, (a * k + k * b + a * b) * 4});
  return batch;
}
constexpr double kSmall = 2.0 * 512 * 512 * 16384;  // IA of a 512 x 512 block

// Ordered by weight alone, the CPU class's share is the smallest blocks.
TEST(DtpsDispatch, MixedBlocksByWeightSmallestToTheCpu) {
  const std::vector<Item> batch = mixed_blocks();
  EXPECT_LT(dd::weight(batch[2 * 6 + 2]), dd::weight(batch[1 * 6 + 2]));  // 512^2 < 1024 x 512
  EXPECT_LT(dd::weight(batch[1 * 6 + 2]), dd::weight(batch[0]));          // ... < 2048^2
  const dd::Decision d = dd::decide(batch, 0.015, dd::Order::Weight);  // 3 of the 4 512^2 blocks
  const double total = d.cpu_work + d.gpu_work;
  ASSERT_GT(d.cpu_work, 0);
  EXPECT_NEAR(d.cpu_work / total, 0.015, 0.5 * kSmall / total);
  double cpu_max = 0, gpu_min = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (d.side[i] == Side::Cpu) {
      cpu_max = std::max(cpu_max, dd::weight(batch[i]));
      EXPECT_DOUBLE_EQ(batch[i].work, kSmall) << i;
    } else {
      gpu_min = std::min(gpu_min, dd::weight(batch[i]));
    }
  }
  EXPECT_LE(cpu_max, gpu_min);
}

// Seed 001 as written (eq. (6) first): the largest blocks are heavy in IA and in DA, a conflict
// that eq. (6) sends to the CPU, so the CPU class's share comes from them (the lowest weights
// among them), not from the smallest blocks.
TEST(DtpsDispatch, MixedBlocksByEq6LargeBlocksAreCpuBound) {
  const std::vector<Item> batch = mixed_blocks();
  const dd::Thresholds th = dd::thresholds(batch);
  EXPECT_EQ(dd::eq6(batch[0], th), Side::Cpu);          // 2048 x 2048: IA > p and DA > q
  EXPECT_EQ(dd::eq6(batch[2 * 6 + 2], th), Side::Either);  // 512 x 512: little of both
  const dd::Decision d = dd::decide(batch, 0.05, dd::Order::Eq6);
  ASSERT_GT(d.cpu_work, 0);
  double cpu_max = 0, other_cpu_bound_min = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (d.side[i] == Side::Cpu) {
      EXPECT_EQ(dd::eq6(batch[i], th), Side::Cpu) << i;
      EXPECT_GT(batch[i].work, kSmall) << i;
      cpu_max = std::max(cpu_max, dd::weight(batch[i]));
    } else if (dd::eq6(batch[i], th) == Side::Cpu) {
      other_cpu_bound_min = std::min(other_cpu_bound_min, dd::weight(batch[i]));
    }
  }
  EXPECT_LE(cpu_max, other_cpu_bound_min);
}

// The scheduler's rule and the codelets' (weights::partition) are the same on any batch.
TEST(DtpsDispatch, AgreesWithTheCodeletsPartition) {
  std::mt19937 gen(7);
  std::lognormal_distribution<double> size(0, 2);
  for (int round = 0; round < 200; ++round) {
    const std::size_t n = std::size_t(1 + round % 37);
    std::vector<Item> batch;
    std::vector<weights::SubTaskWeight> subs;
    for (std::size_t i = 0; i < n; ++i) {
      const double ia = round % 11 == 0 ? 0 : size(gen), da = i % 5 == 0 ? size(gen) : size(gen) * 3;
      batch.push_back({ia, da});
      subs.push_back({ia, da});
    }
    const double alpha = double(round % 10) / 9.0;
    const dd::Decision d = dd::decide(batch, alpha);
    const weights::Partition p = weights::partition(subs, alpha);
    ASSERT_EQ(d.order, p.order) << round;
    ASSERT_EQ(d.gpu_count, p.gpu_count) << round;
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(d.side[i] == Side::Gpu, p.assignment[i] == weights::Class::Gpu) << round << " " << i;
  }
}

// The scheduler's streaming cut: bins of the previous batch's work by weight, the heavy end to
// the GPU class. Where every task of a batch fell into its bin by the cut, the classes' work
// is decide(Order::Weight)'s: within a part of a bin of each share.
TEST(DtpsDispatch, StreamingCutMatchesTheWeightOrder) {
  const std::vector<Item> batch = mixed_blocks();
  std::vector<double> bins(dd::kBins, 0.0);
  double total = 0;
  for (const Item& t : batch) bins[std::size_t(dd::weight_bin(dd::weight(t)))] += t.work, total += t.work;
  for (double alpha : {0.015, 0.1, 0.3, 0.6}) {
    SCOPED_TRACE(alpha);
    const dd::Cut cut = dd::weight_cut(bins.data(), dd::kBins, alpha);
    ASSERT_GE(cut.bin, 0);
    ASSERT_GE(cut.gpu_fraction, 0.0);
    ASSERT_LE(cut.gpu_fraction, 1.0);
    double gpu = 0;
    for (int b = cut.bin + 1; b < dd::kBins; ++b) gpu += bins[std::size_t(b)];
    gpu += cut.gpu_fraction * bins[std::size_t(cut.bin)];
    EXPECT_NEAR(gpu / total, 1 - alpha, 1e-12);  // the cut's own share, exact
    const dd::Decision d = dd::decide(batch, alpha, dd::Order::Weight);
    EXPECT_NEAR(gpu, d.gpu_work, 2.0 * 2048 * 2048 * 16384) << "within one block of the batch-wide decision";
  }
}

TEST(DtpsDispatch, StreamingCutLeavesUniformAndOneClassBatchesAlone) {
  std::vector<double> bins(dd::kBins, 0.0);
  bins[40] = 100;
  EXPECT_LT(dd::weight_cut(bins.data(), dd::kBins, 0.3).bin, 0) << "one weight: as today";
  bins[60] = 100;
  EXPECT_EQ(dd::weight_cut(bins.data(), dd::kBins, 0.5).bin, 60);
  EXPECT_LT(dd::weight_cut(bins.data(), dd::kBins, 0.0).bin, 0) << "the GPU class alone";
  EXPECT_LT(dd::weight_cut(bins.data(), dd::kBins, 1.0).bin, 0) << "the CPU class alone";
  EXPECT_EQ(dd::weight_bin(0.0), 0);
  EXPECT_EQ(dd::weight_bin(std::numeric_limits<double>::infinity()), dd::kBins - 1);
  EXPECT_EQ(dd::weight_bin(2.0) - dd::weight_bin(1.0), dd::kBinsPerOctave);
}

// DTPS over a batch of independent units: seed 000 eq. (7) with whole units, a class of k
// workers running m units in ceil(m / k) of its unit time. The model's count must reach the
// least makespan over every possible count.
double unit_makespan(std::size_t n, std::size_t cpu, double cu, int k, double gu) {
  return std::max(double((cpu + std::size_t(k) - 1) / std::size_t(k)) * cu, double(n - cpu) * gu);
}

TEST(DtpsUnits, TheModelsCountReachesTheLeastMakespan) {
  struct Case {
    std::size_t n;
    double cu;
    int k;
    double gu;
  };
  // The simulated H200 node's LWT 16384^2 (a strip 32 ms on a core, 0.62 ms of the GPU's time),
  // the real node's (~22 ms, 0.41 ms), a slow GPU, a GEMM whose tile outlasts the GPU's product.
  for (const Case& c : {Case{64, 31.96, 15, 0.624}, Case{64, 22.0, 14, 0.41}, Case{64, 5.0, 4, 1.0},
                        Case{256, 490.0, 14, 1.1}, Case{7, 3.0, 2, 1.0}}) {
    SCOPED_TRACE(c.cu);
    const std::size_t got = dd::model_cpu_units(c.n, c.cu, c.k, c.gu, 1);
    double best = HUGE_VAL;
    for (std::size_t m = 0; m <= c.n; ++m) best = std::min(best, unit_makespan(c.n, m, c.cu, c.k, c.gu));
    EXPECT_DOUBLE_EQ(unit_makespan(c.n, got, c.cu, c.k, c.gu), best) << got << " units to the CPU class";
    EXPECT_LE(got, dd::max_cpu_units(c.n, c.cu, c.k, c.gu, 1));
  }
  EXPECT_EQ(dd::model_cpu_units(64, 31.96, 15, 0.624, 1), 13u);
  EXPECT_EQ(dd::model_cpu_units(256, 490.0, 14, 1.1, 1), 0u) << "a core's tile outlasts the whole product";
  EXPECT_EQ(dd::model_cpu_units(10, 1.0, 0, 1.0, 1), 0u) << "no CPU workers";
  EXPECT_EQ(dd::model_cpu_units(10, 1.0, 2, 1.0, 0), 10u) << "no GPU workers";
  EXPECT_EQ(dd::model_cpu_units(10, NAN, 2, 1.0, 1), 0u) << "a core's time unknown";
}

TEST(DtpsUnits, SeedOnesCountGoesToWholeRoundsOfTheCpuWorkers) {
  // Simulated seed2017: 2 cores, a unit 32 ms on one; 8 units ran in 130 ms on the cores, the
  // GPUs' 56 in 161. Seed 001 asks 9: the cores would take 5 rounds (160 ms) for it, the same
  // as 10. Eight: 161 (the GPUs); ten: max(162.5, 155.3).
  EXPECT_EQ(dd::whole_rounds(64, 9, 2, 10, 8, 130, 161), 8u);
  EXPECT_EQ(dd::whole_rounds(64, 9, 2, 10, 8, 130, 200), 10u) << "the GPUs far behind: the higher round";
  EXPECT_EQ(dd::whole_rounds(64, 9, 2, 8, 8, 130, 200), 8u) << "never above most";
  EXPECT_EQ(dd::whole_rounds(64, 13, 15, 15, 13, 32, 30), 13u) << "one round of 15 workers: as asked";
  EXPECT_EQ(dd::whole_rounds(64, 10, 2, 12, 8, 130, 161), 10u) << "whole rounds already";
  EXPECT_EQ(dd::whole_rounds(64, 9, 2, 12, 0, NAN, NAN), 9u) << "nothing measured to scale from";
  EXPECT_EQ(dd::whole_rounds(64, 9, 1, 12, 8, 130, 161), 9u) << "one worker: every count is whole";
}

TEST(DtpsUnits, TheCpuClassNeverTakesMoreThanItEndsWithinTheGpusTime) {
  EXPECT_EQ(dd::max_cpu_units(64, 31.96, 15, 0.624, 1), 15u) << "one round of the 15 cores in 39.9 ms";
  EXPECT_EQ(dd::max_cpu_units(64, 10.0, 15, 0.624, 1), 45u) << "three rounds";
  EXPECT_EQ(dd::max_cpu_units(64, 10.0, 30, 0.624, 1), 64u) << "never more than the batch";
  EXPECT_EQ(dd::max_cpu_units(256, 490.0, 14, 1.1, 1), 0u);
}

TEST(DtpsUnits, PlanGivesTheFirstUnitsToTheCpuClass) {
  const dd::UnitPlan plan{64, 13};
  EXPECT_TRUE(plan.splits());
  EXPECT_EQ(dd::unit_class(plan, 0), 0);
  EXPECT_EQ(dd::unit_class(plan, 12), 0);
  EXPECT_EQ(dd::unit_class(plan, 13), 1);
  EXPECT_EQ(dd::unit_class(plan, 63), 1);
  EXPECT_EQ(dd::unit_class(plan, 64), -1) << "a unit the plan did not count: placement decides";
  EXPECT_EQ(dd::unit_class(dd::UnitPlan{64, 0}, 0), -1) << "no split: placement decides";
  EXPECT_EQ(dd::unit_class(dd::UnitPlan{64, 64}, 0), -1);
  EXPECT_EQ(dd::unit_class(dd::UnitPlan{}, 0), -1);
}

// An MPI rank's edge units come first (lwt's unit_priority) and are urgent: the GPU class takes
// them, and the CPU class the first 13 of the others, so that it keeps its count.
TEST(DtpsUnits, UrgentUnitsGoToTheGpuClassAndTheCpuClassKeepsItsCount) {
  EXPECT_FALSE(dd::urgent_unit(0)) << "StarPU's default priority";
  EXPECT_FALSE(dd::urgent_unit(-3));
  EXPECT_TRUE(dd::urgent_unit(5));
  const dd::UnitPlan plan{76, 13};
  std::size_t urgent = 0, cpu = 0;
  for (std::size_t k = 0; k < 76; ++k) {
    const bool is_urgent = k < 4;  // the first 4 seen, as a rank's edge units are
    const int cls = dd::unit_class(plan, k, is_urgent, urgent);
    if (is_urgent) EXPECT_EQ(cls, 1) << "urgent unit " << k;
    else EXPECT_EQ(cls, k < 4 + 13 ? 0 : 1) << "unit " << k;
    urgent += is_urgent;
    cpu += cls == 0;
  }
  EXPECT_EQ(cpu, 13u);
  EXPECT_EQ(dd::unit_class(plan, 76, true, 4), -1) << "beyond the plan: placement decides";
  EXPECT_EQ(dd::unit_class(dd::UnitPlan{76, 0}, 0, true, 0), -1) << "no split: placement decides";
}

TEST(DtpsUnits, HalosJoinNoUnitTilesDo) {
  const double strip = 256.0 * 16384 * 4, halo = 4.0 * 16384 * 4;
  EXPECT_TRUE(dd::small_handle(halo, strip));
  EXPECT_FALSE(dd::small_handle(strip, strip));
  EXPECT_FALSE(dd::small_handle(strip / 2, strip)) << "a strip's half-size LL band is the unit's";
}

}  // namespace
