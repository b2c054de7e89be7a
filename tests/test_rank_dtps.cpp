// apps::mpi::RankDtps: seed 001's DTPS over R ranks by recursive bisection (apps/rank_dtps.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "apps/rank_dtps.hpp"

namespace {

using apps::mpi::RankDtps;

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// Two ranks are one node, rank 0 against rank 1: the same alphas, round after round, as one
// controller fed the same times, realised shares and throughputs (the makespan guard included).
TEST(RankDtps, TwoRanksAreOneController) {
  const int units = 24;
  RankDtps tree(2, {10, 14});
  sched::DtpsController plain(sched::DtpsConfig{}, sched::DtpsState{10.0 / 24, 0.0, 0});
  ASSERT_EQ(tree.nodes(), 1u);
  for (int round = 0; round < 20; ++round) {
    const std::vector<double> s = tree.shares();
    ASSERT_EQ(s[0], plain.alpha());
    ASSERT_EQ(s[1], 1 - plain.alpha());
    const int first = std::clamp(int(std::lround(s[0] * units)), 0, units);
    // Rank 1 3x slower; the makespan a little above the later rank's time.
    const double t0 = first * 1.0, t1 = (units - first) * 3.0, makespan = std::fmax(t0, t1) + 0.5;
    const std::vector<RankDtps::NodeRound> u =
        tree.end_round({t0, t1}, {double(first), double(units - first)}, makespan);
    const sched::DtpsUpdate p = plain.end_batch(first > 0 ? t0 : 0, first < units ? t1 : 0, double(first) / units,
                                                units / makespan);
    ASSERT_EQ(u.size(), 1u);
    EXPECT_EQ(u[0].update.kind, p.kind) << "round " << round;
    EXPECT_EQ(u[0].share_after, plain.alpha()) << "round " << round;
    EXPECT_EQ(tree.prefix(u[0]), "");
    EXPECT_EQ(RankDtps::group(u[0].lo, u[0].mid), "rank 0");
  }
}

// R ranks, one of them 2x slower (its time is its share times 2, the others' their share):
// balanced, every rank finishes together, so the slow rank's share is half the others'.
void converges(int ranks, int slow) {
  RankDtps tree(ranks);
  for (int round = 0; round < 40; ++round) {
    const std::vector<double> s = tree.shares();
    std::vector<double> t(s.size());
    for (std::size_t r = 0; r < s.size(); ++r) t[r] = s[r] * (int(r) == slow ? 2.0 : 1.0) * 100;
    tree.end_round(t, s);  // no makespan: seed 001 alone
  }
  const std::vector<double> s = tree.shares();
  EXPECT_NEAR(sum(s), 1.0, 1e-12);
  for (int r = 0; r < ranks; ++r)
    if (r != slow) {
      EXPECT_NEAR(s[std::size_t(slow)] / s[std::size_t(r)], 0.5, 0.5 * 0.15) << "rank " << r;
    }
}
TEST(RankDtps, ThreeRanksOneSlowHalvesItsShare) {
  converges(3, 2);
  converges(3, 0);
}
TEST(RankDtps, FourRanksOneSlowHalvesItsShare) {
  converges(4, 3);
  converges(4, 1);
}

// The tree's shape: 3 ranks are rank 0 against ranks 1-2, then rank 1 against rank 2; even
// shares by default; a start split sets each node's alpha.
TEST(RankDtps, BisectionAndStartShares) {
  RankDtps three(3);
  ASSERT_EQ(three.nodes(), 2u);
  const std::vector<double> s = three.shares();
  for (double x : s) EXPECT_NEAR(x, 1.0 / 3, 1e-12);
  RankDtps four(4, {4, 2, 1, 1});
  ASSERT_EQ(four.nodes(), 3u);
  EXPECT_NEAR(four.controller(0).alpha(), 0.75, 1e-12);
  EXPECT_NEAR(four.controller(1).alpha(), 2.0 / 3, 1e-12);
  EXPECT_NEAR(four.controller(2).alpha(), 0.5, 1e-12);
  const std::vector<double> f = four.shares();
  EXPECT_NEAR(f[0], 0.5, 1e-12);
  EXPECT_NEAR(f[3], 0.125, 1e-12);
  EXPECT_EQ(RankDtps(1).nodes(), 0u);
  EXPECT_EQ(RankDtps(1).shares(), std::vector<double>{1.0});
  EXPECT_THROW(RankDtps(3, {1, 2}), std::invalid_argument);
}

// A node whose ranks got no work (the root ran its other half alone) is skipped: its alpha is
// kept, and the root sees its first half alone.
TEST(RankDtps, ANodeWithoutWorkIsSkipped) {
  RankDtps tree(4);
  const double before = tree.controller(2).alpha();
  const std::vector<RankDtps::NodeRound> u = tree.end_round({5, 7, 99, 99}, {1, 1, 0, 0}, 8.0);
  ASSERT_EQ(u.size(), 3u);
  EXPECT_FALSE(u[0].skipped);
  EXPECT_EQ(u[0].t_first, 7);
  EXPECT_EQ(u[0].t_second, 0);  // the idle ranks' times are ignored
  EXPECT_EQ(u[0].share_before, 1.0);
  EXPECT_FALSE(u[1].skipped);
  EXPECT_TRUE(u[2].skipped);
  EXPECT_EQ(u[2].share_after, before);
  EXPECT_EQ(tree.controller(2).alpha(), before);
  EXPECT_EQ(RankDtps::case_name(u[2]), "no work, skipped");
  EXPECT_EQ(tree.prefix(u[2]), "ranks 2-3: ");
  EXPECT_EQ(RankDtps::case_name(u[1]), "rank 1 late");
  EXPECT_NEAR(sum(tree.shares()), 1.0, 1e-12);
}

}  // namespace

// A node whose halves share no host has independent classes (its guard probes one half alone
// only where that could win); one whose halves share a host's memory has not.
TEST(RankDtps, HalvesOnDifferentHostsAreIndependent) {
  const RankDtps apart(4, {}, sched::DtpsConfig{}, {1, 2, 3, 4});
  for (std::size_t n = 0; n < apart.nodes(); ++n) EXPECT_TRUE(apart.controller(n).config().independent_classes) << n;
  const RankDtps paired(4, {}, sched::DtpsConfig{}, {7, 7, 9, 9});  // ranks 0-1 on one host, 2-3 on another
  EXPECT_TRUE(paired.controller(0).config().independent_classes) << "0-1 against 2-3: no host in both";
  EXPECT_FALSE(paired.controller(1).config().independent_classes) << "rank 0 against rank 1: one host";
  EXPECT_FALSE(paired.controller(2).config().independent_classes);
  const RankDtps unknown(2);
  EXPECT_FALSE(unknown.controller(0).config().independent_classes);
  EXPECT_THROW(RankDtps(2, {}, sched::DtpsConfig{}, {1.0}), std::invalid_argument);
}

// A rank whose policy warmed up a co-run in the round: every node over it keeps its share, the
// others judge their halves as usual.
TEST(RankDtps, ANodeWithARankWarmingUpKeepsItsShare) {
  RankDtps tree(4);
  const double root = tree.controller(0).alpha(), left = tree.controller(1).alpha();
  const std::vector<RankDtps::NodeRound> u =
      tree.end_round({10, 30, 10, 10}, {1, 1, 1, 1}, 30.0, {false, true, false, false});
  ASSERT_EQ(u.size(), 3u);
  EXPECT_TRUE(u[0].skipped && u[0].warming) << "the root holds rank 1";
  EXPECT_TRUE(u[1].skipped && u[1].warming) << "ranks 0-1 hold rank 1";
  EXPECT_FALSE(u[2].skipped || u[2].warming) << "ranks 2-3 do not";
  EXPECT_EQ(tree.controller(0).alpha(), root);
  EXPECT_EQ(tree.controller(1).alpha(), left) << "rank 1's 30 ms against rank 0's 10 would have moved it";
  EXPECT_EQ(RankDtps::case_name(u[1]), "a rank warming up, skipped");
  EXPECT_NEAR(sum(tree.shares()), 1.0, 1e-12);
  // Without the flag the same round moves ranks 0-1's share.
  RankDtps plain(4);
  plain.end_round({10, 30, 10, 10}, {1, 1, 1, 1}, 30.0);
  EXPECT_GT(plain.controller(1).alpha(), left);
  EXPECT_THROW(tree.end_round({1, 1, 1, 1}, {1, 1, 1, 1}, 1.0, {true}), std::invalid_argument);
}
