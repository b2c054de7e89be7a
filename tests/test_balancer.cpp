// The placement and re-balancing mechanism on its own (no StarPU).
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "scheduler/balancer.hpp"

namespace {

const void* unit(int i) { return reinterpret_cast<const void*>(std::uintptr_t(0x1000 + 16 * i)); }

TEST(Balancer, PlacesUnitsInProportionToShares) {
  sched::Balancer b(4);
  b.set_shares({4, 2, 1, 1});  // normalised to 1/2, 1/4, 1/8, 1/8
  std::vector<int> count(4, 0);
  const std::vector<char> all(4, 1);
  for (int i = 0; i < 80; ++i) ++count[std::size_t(b.place(unit(i), 1.0, all))];
  EXPECT_EQ(count, (std::vector<int>{40, 20, 10, 10}));
  EXPECT_DOUBLE_EQ(b.shares()[0], 0.5);
}

TEST(Balancer, OnlyEligibleWorkersAndSharesRenormalised) {
  sched::Balancer b(3);
  b.set_shares({1, 1, 2});
  const std::vector<char> some = {1, 0, 1};
  std::vector<int> count(3, 0);
  for (int i = 0; i < 30; ++i) ++count[std::size_t(b.place(unit(i), 1.0, some))];
  EXPECT_EQ(count, (std::vector<int>{10, 0, 20}));
  EXPECT_EQ(b.place(unit(99), 1.0, {0, 0, 0}), -1);
}

TEST(Balancer, UnitsKeepTheirOwnerAndLastBatchOwnerWhileBelowShare) {
  sched::Balancer b(2);
  const std::vector<char> all(2, 1);
  const int w = b.place(unit(1), 1.0, all);
  EXPECT_EQ(b.owner(unit(1)), w);
  b.start_batch();
  EXPECT_EQ(b.owner(unit(1)), -1);          // a new batch places again...
  EXPECT_EQ(b.place(unit(1), 1.0, all), w);  // ...on the same worker while below its share
  b.set_shares({0, 1});
  b.start_batch();
  EXPECT_EQ(b.place(unit(1), 1.0, all), 1);  // unless the shares moved it
}

TEST(Balancer, TasksWithoutDataAreSpreadNotOwned) {
  sched::Balancer b(2);
  const std::vector<char> all(2, 1);
  EXPECT_EQ(b.place(nullptr, 1.0, all), 0);
  EXPECT_EQ(b.place(nullptr, 1.0, all), 1);
  EXPECT_EQ(b.owner(nullptr), -1);
}

TEST(Balancer, RebalanceMovesWholeUnitsFromTheBusiestWorker) {
  sched::Balancer b(3);
  int tasks[10];
  // Worker 0: units A (3 tasks) and B (1 task); worker 1: one task; worker 2 idle.
  for (int i = 0; i < 3; ++i) b.push(0, {&tasks[i], unit(1), 1.0, 0});
  b.push(0, {&tasks[3], unit(2), 1.0, 0});
  b.push(1, {&tasks[4], unit(3), 1.0, 0});
  auto cost = [](int, const sched::Queued& q) { return q.bytes; };  // 1 s a task everywhere
  const std::size_t moved = b.rebalance(2, cost, 1.0, [](void*) { return true; });
  EXPECT_EQ(moved, 1u);  // the last unit queued on worker 0 (B) moves whole
  EXPECT_EQ(b.queued(0), 3u);
  EXPECT_EQ(b.queued(2), 1u);
  EXPECT_EQ(b.owner(unit(2)), 2);
  sched::Queued q;
  ASSERT_TRUE(b.pop(2, &q));
  EXPECT_EQ(q.task, &tasks[3]);
}

TEST(Balancer, NoMoveWhenItWouldNotFinishSooner) {
  sched::Balancer b(2);
  int t;
  b.push(0, {&t, unit(1), 1.0, 0});
  // The idle worker is 10x slower: moving the only unit would end later.
  auto cost = [](int w, const sched::Queued& q) { return w == 1 ? 10 * q.bytes : q.bytes; };
  EXPECT_EQ(b.rebalance(1, cost, 1.0, [](void*) { return true; }), 0u);
  EXPECT_EQ(b.rebalance(1, cost, 0.05, [](void*) { return true; }), 1u);  // a lower threshold moves it
}

TEST(Balancer, NoMoveToAWorkerThatWouldEndAfterTheFasterOnesShareTheQueue) {
  // Worker 0 (a GPU) has 100 units of 1 s queued; worker 1 is a second GPU, workers 2 and 3
  // CPU cores that take 80 s a unit. A core would finish a unit before worker 0's queue
  // (100 s), but the two GPUs share the queue in 50 s: its unit would end 30 s after the rest.
  sched::Balancer b(4);
  int t[100];
  for (int i = 0; i < 100; ++i) b.push(0, {&t[i], unit(i), 1.0, 0});
  auto cost = [](int w, const sched::Queued& q) { return w >= 2 ? 80 * q.bytes : q.bytes; };
  EXPECT_DOUBLE_EQ(b.faster_bound(2, cost), 50.0);  // the GPUs; not the other core
  EXPECT_EQ(b.faster_bound(1, cost), std::numeric_limits<double>::infinity());  // none twice as fast
  EXPECT_EQ(b.rebalance(2, cost, 1.0, [](void*) { return true; }), 0u);
  EXPECT_EQ(b.rebalance(1, cost, 1.0, [](void*) { return true; }), 50u);  // the other GPU takes half
}

TEST(Balancer, SlowWorkersStillHelpWhenTheFastOneAloneWouldEndLater) {
  // One GPU with 40 units of 1 ms queued, four cores at 30 ms a unit: each core takes one and
  // ends at 30 ms, before the GPU (36 ms); none takes two (60 ms). Equal cores count for
  // nothing in each other's bound: their units are no finer than the idle one's.
  sched::Balancer b(5);
  int t[40];
  for (int i = 0; i < 40; ++i) b.push(0, {&t[i], unit(i), 1.0, 0});
  auto cost = [](int w, const sched::Queued& q) { return w >= 1 ? 30 * q.bytes : q.bytes; };
  EXPECT_DOUBLE_EQ(b.faster_bound(1, cost), 40.0);
  std::size_t moved = 0;
  for (int core = 1; core <= 4; ++core) moved += b.rebalance(core, cost, 1.0, [](void*) { return true; });
  EXPECT_EQ(moved, 4u);
  EXPECT_EQ(b.queued(0), 36u);
}

TEST(Balancer, AUnitsTasksStillToComeCountWhenItMoves) {
  // A chain unit (a GEMM C tile: its k-steps pushed one at a time, each after the last ends)
  // ran 8 tasks in the last batch. Worker 1 is 2x slower than worker 0.
  sched::Balancer b(2);
  const std::vector<char> all(2, 1);
  auto cost = [](int w, const sched::Queued& q) { return w == 1 ? 2 * q.bytes : q.bytes; };
  int t[8];
  b.start_batch();
  ASSERT_EQ(b.place(unit(1), 1.0, all), 0);
  sched::Queued q;
  for (int k = 0; k < 8; ++k) {
    b.push(0, {&t[k], unit(1), 1.0, 0});
    ASSERT_TRUE(b.pop(0, &q));
  }
  // Next batch: five one-task units, then the chain's first step, queued on worker 0 (6 s of
  // work). The step alone would take worker 1 2 s, but the chain's 8 steps take it 16 s.
  b.start_batch();
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(b.place(unit(10 + i), 1.0, {1, 0}), 0);
    b.push(0, {&t[i], unit(10 + i), 1.0, 0});
  }
  ASSERT_EQ(b.place(unit(1), 1.0, {1, 0}), 0);
  b.push(0, {&t[5], unit(1), 1.0, 0});
  EXPECT_EQ(b.expected_tasks(unit(1), 1), 8.0);
  EXPECT_EQ(b.expected_tasks(unit(10), 1), 1.0);  // no history: what is queued
  EXPECT_EQ(b.rebalance(1, cost, 1.0, [](void*) { return true; }), 0u);
  // A one-task unit queued last moves as before.
  ASSERT_EQ(b.place(unit(20), 1.0, {1, 0}), 0);
  b.push(0, {&t[6], unit(20), 1.0, 0});
  EXPECT_EQ(b.rebalance(1, cost, 1.0, [](void*) { return true; }), 1u);
  EXPECT_EQ(b.owner(unit(20)), 1);
}

TEST(Balancer, SharedQueueGoesToTheFirstWorkerThatCanRunItAndOwnsIt) {
  // Cold start: worker 0 cannot run the first shared task; worker 1 takes it and owns its unit.
  sched::Balancer b(2);
  int t[3];
  b.start_batch();
  b.push_shared({&t[0], unit(1), 1.0, 0});
  b.push_shared({&t[1], unit(2), 1.0, 0});
  EXPECT_EQ(b.shared(), 2u);
  EXPECT_EQ(b.queued_total(), 2u);
  sched::Queued q;
  ASSERT_TRUE(b.pop_shared(0, &q, [&](void* task) { return task != &t[0]; }));
  EXPECT_EQ(q.task, &t[1]);
  EXPECT_EQ(b.owner(unit(2)), 0);
  EXPECT_EQ(b.owner(unit(1)), -1);
  ASSERT_TRUE(b.pop_shared(1, &q, [](void*) { return true; }));
  EXPECT_EQ(q.task, &t[0]);
  EXPECT_EQ(b.owner(unit(1)), 1);
  EXPECT_EQ(b.assigned()[1], 1.0);
  EXPECT_FALSE(b.pop_shared(1, &q, [](void*) { return true; }));
  EXPECT_EQ(b.queued_total(), 0u);
}

TEST(Balancer, NoMoveOfTasksTheIdleWorkerCannotRun) {
  sched::Balancer b(2);
  int t[2];
  b.push(0, {&t[0], unit(1), 1.0, 0});
  b.push(0, {&t[1], unit(2), 1.0, 0});
  auto cost = [](int, const sched::Queued& q) { return q.bytes; };
  EXPECT_EQ(b.rebalance(1, cost, 0.5, [](void*) { return false; }), 0u);
}

TEST(DropFractionalWorkers, WorkersUnderOneUnitGetNone) {
  // A GPU 200x a CPU core, 15 cores, 64 units: each core's part is 64/(200+15) = 0.3 unit.
  std::vector<double> s(16, 1.0);
  s[15] = 200;
  sched::drop_fractional_workers(s, {}, 64);
  for (int w = 0; w < 15; ++w) EXPECT_EQ(s[std::size_t(w)], 0.0);
  EXPECT_EQ(s[15], 200.0);
  // 1000 units: each core's part is 4.7 units, so all keep theirs.
  std::vector<double> t(16, 1.0);
  t[15] = 200;
  sched::drop_fractional_workers(t, {}, 1000);
  EXPECT_EQ(t[0], 1.0);
}

TEST(DropFractionalWorkers, DroppingOneRaisesTheOthersAndIneligibleDoNotCount) {
  // Parts of 10 units: 4.5, 4.5, 0.9, 0.09: the last two are under one unit.
  std::vector<double> s = {5, 5, 1, 0.1};
  sched::drop_fractional_workers(s, {}, 10);
  EXPECT_EQ(s, (std::vector<double>{5, 5, 0, 0}));
  // Parts of 4 units over {1, 1, 3}: 1, 1, 2; drop none. An ineligible worker's share
  // neither counts in the sum nor gets touched.
  std::vector<double> t = {1, 1, 2, 100};
  sched::drop_fractional_workers(t, {1, 1, 1, 0}, 4);
  EXPECT_EQ(t, (std::vector<double>{1, 1, 2, 100}));
  // The largest share survives even when every part is under one unit.
  std::vector<double> u = {1, 2};
  sched::drop_fractional_workers(u, {}, 0.5);
  EXPECT_EQ(u, (std::vector<double>{0, 2}));
}

}  // namespace
