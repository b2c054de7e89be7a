// Sub-task weights and dispatch (seed 001 §1.1-1.2, codelets/subtask_weights.hpp): eqs. (3)-(6)
// and the one-cut partition on a small hand example, shares on many equal tiles, and the
// compute-heavy end going to the GPU class.
#include <gtest/gtest.h>

#include <cstddef>
#include <limits>
#include <vector>

#include "codelets/subtask_weights.hpp"

namespace {

using weights::Class;
using weights::SubTaskWeight;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Seed 001 §1.1-1.2: weights and dispatch on a hand example

TEST(Weights, ComputeSizeAndCommunication) {
  // Eq. (3): 100 additions worth 1 and 10 divisions worth 4 standard operations.
  EXPECT_DOUBLE_EQ(weights::compute_size({{100.0, 1.0}, {10.0, 4.0}}), 140.0);
  EXPECT_DOUBLE_EQ(weights::compute_size({}), 0.0);
  EXPECT_DOUBLE_EQ(weights::compute_size({{-5.0, 1.0}, {2.0, kNaN}}), 0.0);
  // Eq. (4).
  EXPECT_DOUBLE_EQ(weights::communication(3.0, 5.0), 8.0);
  EXPECT_DOUBLE_EQ(weights::communication(-3.0, 5.0), 5.0);
}

TEST(Weights, OrderingWeight) {
  EXPECT_DOUBLE_EQ(weights::ordering_weight({140.0, 8.0}), 17.5);
  EXPECT_EQ(weights::ordering_weight({1.0, 0.0}), kInf);
  EXPECT_DOUBLE_EQ(weights::ordering_weight({0.0, 0.0}), 0.0);
  EXPECT_DOUBLE_EQ(weights::ordering_weight({0.0, 4.0}), 0.0);
  // Scale-free: halving a tile keeps its weight.
  EXPECT_DOUBLE_EQ(weights::ordering_weight({70.0, 4.0}), weights::ordering_weight({140.0, 8.0}));
}

// A: much compute, little data; B: much of both (conflict); C: little of both; D: much data.
// P = 211, Q = 32, N = 4: p = 211/8 = 26.375, q = 32/8 = 4.
const std::vector<SubTaskWeight> kJob = {{100.0, 1.0}, {100.0, 10.0}, {1.0, 1.0}, {10.0, 20.0}};

TEST(Dispatch, HandExample) {
  const weights::DispatchThresholds t = weights::dispatch_thresholds(kJob);
  EXPECT_DOUBLE_EQ(t.p, 26.375);
  EXPECT_DOUBLE_EQ(t.q, 4.0);
  EXPECT_EQ(weights::dispatch(kJob[0], t.p, t.q), Class::Gpu);
  EXPECT_EQ(weights::dispatch(kJob[1], t.p, t.q), Class::Cpu);  // communication first
  EXPECT_EQ(weights::dispatch(kJob[2], t.p, t.q), Class::Either);
  EXPECT_EQ(weights::dispatch(kJob[3], t.p, t.q), Class::Cpu);
  EXPECT_EQ(weights::dispatch({100.0, 4.0}, t.p, t.q), Class::Either);  // DA = q exactly
  EXPECT_STREQ(weights::to_string(Class::Gpu), "gpu");
  const weights::DispatchThresholds none = weights::dispatch_thresholds({});
  EXPECT_DOUBLE_EQ(none.p, 0.0);
  EXPECT_DOUBLE_EQ(none.q, 0.0);
}

TEST(Partition, HandExample) {
  // Order: Gpu {A}, Either {C}, Cpu by weight {B (10), D (0.5)} = A, C, B, D.
  // alpha 0.5: GPU target 105.5. A: 0 + 50 <= 105.5 in; C: 100 + 0.5 <= 105.5 in;
  // B: 101 + 50 > 105.5, cut.
  weights::Partition p = weights::partition(kJob, 0.5);
  EXPECT_EQ(p.order, (std::vector<std::size_t>{0, 2, 1, 3}));
  EXPECT_EQ(p.gpu_count, 2u);
  EXPECT_EQ(p.assignment, (std::vector<Class>{Class::Gpu, Class::Cpu, Class::Gpu, Class::Cpu}));
  EXPECT_DOUBLE_EQ(p.gpu_ia, 101.0);
  EXPECT_DOUBLE_EQ(p.cpu_ia, 110.0);
  // alpha 0.3: GPU target 147.7: A, C in; B: 101 + 50 = 151 > 147.7, cut.
  p = weights::partition(kJob, 0.3);
  EXPECT_EQ(p.gpu_count, 2u);
  // alpha 0.2: GPU target 168.8: B: 151 <= 168.8 in; D: 201 + 5 > 168.8.
  p = weights::partition(kJob, 0.2);
  EXPECT_EQ(p.gpu_count, 3u);
  EXPECT_EQ(p.assignment[3], Class::Cpu);
  // The ends: no CPU share, no GPU share.
  p = weights::partition(kJob, 0.0);
  EXPECT_EQ(p.gpu_count, 4u);
  EXPECT_DOUBLE_EQ(p.cpu_ia, 0.0);
  p = weights::partition(kJob, 1.0);
  EXPECT_EQ(p.gpu_count, 0u);
  EXPECT_DOUBLE_EQ(p.gpu_ia, 0.0);
  EXPECT_EQ(p.order, (std::vector<std::size_t>{0, 2, 1, 3}));
}

TEST(Partition, SharesFollowAlphaOnManyEqualTiles) {
  // 100 equal tiles: the GPU class gets round(beta * 100) of them.
  const std::vector<SubTaskWeight> tiles(100, SubTaskWeight{8.0, 2.0});
  for (double alpha : {0.01, 0.2, 0.37, 0.5, 0.9}) {
    const weights::Partition p = weights::partition(tiles, alpha);
    EXPECT_NEAR(p.cpu_ia / (p.cpu_ia + p.gpu_ia), alpha, 0.005 + 1e-12) << alpha;
  }
  // All IA zero: by count.
  const std::vector<SubTaskWeight> empty_tiles(10, SubTaskWeight{0.0, 1.0});
  EXPECT_EQ(weights::partition(empty_tiles, 0.3).gpu_count, 7u);
  EXPECT_EQ(weights::partition({}, 0.3).gpu_count, 0u);
  EXPECT_TRUE(weights::partition({}, 0.3).order.empty());
}

TEST(Partition, ComputeHeavyEndGoesToTheGpu) {
  // Same DA, rising IA: the heaviest tiles are the GPU's.
  std::vector<SubTaskWeight> tiles;
  for (int i = 1; i <= 8; ++i) tiles.push_back({static_cast<double>(i), 1.0});
  const weights::Partition p = weights::partition(tiles, 0.5);
  for (std::size_t k = 0; k < p.gpu_count; ++k)
    for (std::size_t j = p.gpu_count; j < tiles.size(); ++j)
      EXPECT_GE(weights::ordering_weight(tiles[p.order[k]]),
                weights::ordering_weight(tiles[p.order[j]]));
}

}  // namespace
