// apps::mpi::items_by_finish: the ranks' shares of a job's equal items by earliest finish.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "apps/rank_shares.hpp"

namespace {

using apps::mpi::items_by_finish;
using apps::mpi::RankSpeed;

int sum(const std::vector<int>& v) { return std::accumulate(v.begin(), v.end(), 0); }

// One worker a rank (fastest == total): the split is proportional to the speeds, within one
// item, as seed 000's eq. 7 divides equal units.
TEST(RankShares, OneWorkerARankIsProportional) {
  const std::vector<int> c = items_by_finish(24, {{3, 3}, {1, 1}});
  EXPECT_EQ(c, (std::vector<int>{18, 6}));
  const std::vector<int> d = items_by_finish(100, {{1, 1}, {1, 1}, {2, 2}});
  EXPECT_EQ(sum(d), 100);
  EXPECT_NEAR(d[0], 25, 1);
  EXPECT_NEAR(d[1], 25, 1);
  EXPECT_NEAR(d[2], 50, 1);
}

// The GPU node beside a node of slow cores (the H200 machine split in two ranks): rank 1's 7
// cores together are 1/400 of rank 0, and one core runs an item 2800x slower than rank 0's
// GPU. Proportional shares would give it 1 of 256 items, which it would finish long after rank
// 0 finished all the others; by earliest finish it gets none.
TEST(RankShares, ARankTooSlowForOneItemGetsNone) {
  const std::vector<int> c = items_by_finish(256, {{52000, 50000}, {130, 18}});
  EXPECT_EQ(c, (std::vector<int>{256, 0}));
}

// A rank takes items once the others' time exceeds its time for one item: here rank 1 finishes
// one item in 1/2 (its fastest worker) while rank 0 needs n/10 for n; from n = 5 on, rank 1
// helps, its many workers then taking items at its total speed.
TEST(RankShares, ASlowWorkerRankHelpsOnceTheJobIsLongEnough) {
  EXPECT_EQ(items_by_finish(4, {{10, 10}, {8, 2}}), (std::vector<int>{4, 0}));
  const std::vector<int> c = items_by_finish(90, {{10, 10}, {8, 2}});
  EXPECT_EQ(sum(c), 90);
  EXPECT_NEAR(c[1], 40, 1);  // 8 / 18 of the items once both ranks work: the totals' ratio
}

TEST(RankShares, EveryItemIsPlacedAndTiesGoToTheLowerRank) {
  EXPECT_EQ(items_by_finish(1, {{1, 1}, {1, 1}}), (std::vector<int>{1, 0}));
  EXPECT_EQ(items_by_finish(0, {{1, 1}, {1, 1}}), (std::vector<int>{0, 0}));
  EXPECT_EQ(items_by_finish(7, {{1, 1}}), (std::vector<int>{7}));
}

}  // namespace
