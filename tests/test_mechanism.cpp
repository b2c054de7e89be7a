// The scheduler's queues (ready-first pop, priority order) and cost model (earliest finish
// divides equal units in proportion to speed, seed 000 eq. 7; the five speed sources), without
// StarPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "scheduler/cost.hpp"
#include "scheduler/queue.hpp"

namespace {

using sched::QueuedTask;
using sched::SpeedSource;
using sched::TaskQueue;
using sched::kEwma;
using sched::kWarmRuns;
using sched::next_measured;

void* task(std::intptr_t i) { return reinterpret_cast<void*>(i); }
std::intptr_t id(const QueuedTask& q) { return reinterpret_cast<std::intptr_t>(q.task); }

std::vector<std::intptr_t> drain(TaskQueue& q, const std::vector<std::intptr_t>& missing = {}) {
  std::vector<std::intptr_t> order;
  QueuedTask t;
  auto miss = [&](void* x) {
    for (auto m : missing)
      if (m == reinterpret_cast<std::intptr_t>(x)) return 1.0;
    return 0.0;
  };
  while (q.pop_ready(&t, miss)) order.push_back(id(t));
  return order;
}

TEST(TaskQueue, HigherPriorityFirstThenPushOrder) {
  TaskQueue q;
  const int prio[] = {0, 5, 0, 1, 5, -2, 1};
  for (int i = 0; i < 7; ++i) q.push(QueuedTask{task(i + 1), prio[i]});
  EXPECT_EQ(drain(q), (std::vector<std::intptr_t>{2, 5, 4, 7, 1, 3, 6}));
}

TEST(TaskQueue, PopTakesTheFirstReadyTaskOfTheHeadPriority) {
  TaskQueue q;
  for (int i = 1; i <= 4; ++i) q.push(QueuedTask{task(i), 0});
  // 1 and 2 wait for their data, 3 is ready: 3 first, then the rest in order.
  EXPECT_EQ(drain(q, {1, 2}), (std::vector<std::intptr_t>{3, 4, 1, 2}));
}

TEST(TaskQueue, AReadyTaskNeverOvertakesAHigherPriorityOne) {
  TaskQueue q;
  q.push(QueuedTask{task(1), 3});
  q.push(QueuedTask{task(2), 0});
  EXPECT_EQ(drain(q, {1}), (std::vector<std::intptr_t>{1, 2}));
}

TEST(TaskQueue, PopBackTakesTheLastAcceptedTask) {
  TaskQueue q;
  for (int i = 1; i <= 4; ++i) q.push(QueuedTask{task(i), i == 4 ? 9 : 0});  // 4 first: order 4 1 2 3
  QueuedTask t;
  ASSERT_TRUE(q.pop_back_if(4, &t, [](const QueuedTask& x) { return id(x) != 3; }));
  EXPECT_EQ(id(t), 2);
  EXPECT_FALSE(q.pop_back_if(4, &t, [](const QueuedTask&) { return false; }));
  EXPECT_FALSE(q.pop_back_if(1, &t, [](const QueuedTask& x) { return id(x) == 1; }));  // 1 is second from the back
  EXPECT_EQ(drain(q), (std::vector<std::intptr_t>{4, 1, 3}));
}

// A task waits behind the queued tasks of its priority or higher, as dmdas's
// exp_len_per_priority counts them: a critical-path task of a tiled LU sees a short queue.
TEST(TaskQueue, AheadOfCountsTheTasksOfAnEqualOrHigherPriority) {
  TaskQueue q;
  EXPECT_EQ(q.ahead_of(0), 0.0);
  const int prio[] = {0, 5, 0, 1, 5};
  const double us[] = {10, 20, 40, 80, 160};
  for (int i = 0; i < 5; ++i) q.push(QueuedTask{task(i + 1), prio[i], us[i]});
  EXPECT_EQ(q.front_priority(), 5);
  EXPECT_EQ(q.back_priority(), 0);
  EXPECT_EQ(q.ahead_of(6), 0.0);
  EXPECT_EQ(q.ahead_of(5), 180.0);
  EXPECT_EQ(q.ahead_of(3), 180.0);
  EXPECT_EQ(q.ahead_of(1), 260.0);
  EXPECT_EQ(q.ahead_of(0), 310.0);
  EXPECT_EQ(q.ahead_of(-7), 310.0);
}

// N equal independent units placed one by one on the worker of earliest expected finish.
std::vector<int> place(const std::vector<double>& speed, int units, double work, double transfer = 0) {
  std::vector<double> end(speed.size(), 0);
  std::vector<int> count(speed.size(), 0);
  for (int u = 0; u < units; ++u) {
    std::size_t best = 0;
    double best_end = 0;
    for (std::size_t w = 0; w < speed.size(); ++w) {
      const double e = sched::expected_finish(0, end[w], transfer, work / speed[w]);
      if (w == 0 || e < best_end) best = w, best_end = e;
    }
    end[best] = best_end;
    ++count[best];
  }
  return count;
}

TEST(CostModel, EqualUnitsDivideInProportionToSpeed) {  // seed 000 eq. 7
  const std::vector<double> speed = {1, 1, 2, 4, 8};
  const int units = 480;
  const std::vector<int> got = place(speed, units, 1.0);
  for (std::size_t w = 0; w < speed.size(); ++w)
    EXPECT_NEAR(got[w], units * speed[w] / 16.0, 1.0) << "worker " << w;
}

TEST(CostModel, AWorkerSlowerThanTheWholeBatchGetsNothing) {
  // 64 units of 1 us on a worker of speed 100 end at 0.64 us; one unit on speed 0.5 takes 2 us.
  const std::vector<int> got = place({100, 0.5}, 64, 1.0);
  EXPECT_EQ(got[1], 0);
  EXPECT_EQ(got[0], 64);
}

TEST(CostModel, TheTransferOverlapsQueuedWork) {
  EXPECT_DOUBLE_EQ(sched::expected_finish(10, 50, 5, 2), 52);   // arrives while the queue runs
  EXPECT_DOUBLE_EQ(sched::expected_finish(10, 12, 5, 2), 17);   // waits for it
}

sched::SpeedInputs inputs() {
  sched::SpeedInputs in;
  in.measured = {1, 1, 0, 30};  // worker 2 untimed
  in.gpu = {0, 0, 0, 1};
  return in;
}

TEST(Speeds, AColdFirstTimingIsForgottenThenTimingsAverage) {
  double m = next_measured(0, 1, 1);  // a GPU's first launch, loading its kernel: 100x slow
  EXPECT_EQ(m, 1);
  m = next_measured(m, 100, 2);  // warm
  EXPECT_EQ(m, 100);
  for (long runs = 3; runs <= kWarmRuns; ++runs) m = next_measured(m, 90, runs);
  EXPECT_EQ(m, 100) << "the fastest of the first kWarmRuns";
  m = next_measured(m, 50, kWarmRuns + 1);  // then a slowdown: followed, smoothed
  EXPECT_DOUBLE_EQ(m, (1 - kEwma) * 100 + kEwma * 50);
}

TEST(Speeds, EvenGivesEveryWorkerTheMeanMeasuredSpeed) {
  for (double s : sched::speeds(SpeedSource::Even, inputs())) EXPECT_DOUBLE_EQ(s, 32.0 / 3);
}

TEST(Speeds, BoyerIsTheMeasuredSpeedUntimedAtTheMean) {
  EXPECT_EQ(sched::speeds(SpeedSource::Boyer, inputs()), (std::vector<double>{1, 1, 32.0 / 3, 30}));
}

TEST(Speeds, FnnScalesPredictedAbilityToTheMeasuredTotal) {
  sched::SpeedInputs in = inputs();
  EXPECT_EQ(sched::speeds(SpeedSource::Fnn, in), sched::speeds(SpeedSource::Boyer, in));  // no model yet
  in.ability = {0.1, 0.1, 0.1, 2.0};
  const auto s = sched::speeds(SpeedSource::Fnn, in);
  EXPECT_NEAR(s[0] + s[1] + s[3], 32, 1e-12);  // the timed workers keep their measured total
  EXPECT_NEAR(s[3] / s[0], 20, 1e-12);         // in the predicted ratio
  EXPECT_NEAR(s[2], s[0], 1e-12);              // the untimed one at its predicted ability
}

TEST(Speeds, FnnMovesAMeasuredSpeedByThePredictedChange) {
  sched::SpeedInputs in = inputs();
  in.ability = {0.1, 0.05, 0.1, 1.0};           // worker 1's state changed: half its ability
  in.ability_measured = {0.1, 0.1, 0, 1.0};
  const auto s = sched::speeds(SpeedSource::Fnn, in);
  EXPECT_DOUBLE_EQ(s[0], 1);
  EXPECT_DOUBLE_EQ(s[1], 0.5);
  EXPECT_DOUBLE_EQ(s[3], 30);
  // A prediction moves a measured speed by at most kMaxFnnChange.
  in.ability = {1.0, 0.001, 0.1, 1.0};
  const auto bounded = sched::speeds(SpeedSource::Fnn, in);
  EXPECT_DOUBLE_EQ(bounded[0], 1 * sched::kMaxFnnChange);
  EXPECT_DOUBLE_EQ(bounded[1], 1 / sched::kMaxFnnChange);
  // A model that calls every worker alike changes nothing the measurements say.
  in.ability = in.ability_measured = {0.9, 0.9, 0.9, 0.9};
  const auto same = sched::speeds(SpeedSource::Fnn, in);
  EXPECT_DOUBLE_EQ(same[0], 1);
  EXPECT_DOUBLE_EQ(same[3], 30);
}

TEST(Speeds, DtpsSplitsTheMeasuredTotalByAlphaEqualWithinAClass) {
  sched::SpeedInputs in = inputs();
  EXPECT_EQ(sched::speeds(SpeedSource::Dtps, in), sched::speeds(SpeedSource::Boyer, in));  // no alpha yet
  in.alpha = 0.25;
  const auto s = sched::speeds(SpeedSource::Dtps, in);
  const double total = 1 + 1 + 32.0 / 3 + 30;
  EXPECT_NEAR(s[0], 0.25 * total / 3, 1e-12);
  EXPECT_NEAR(s[2], s[0], 1e-12);
  EXPECT_NEAR(s[3], 0.75 * total, 1e-12);
}

TEST(Speeds, FnnDtpsSplitsEachClassByPredictedAbility) {
  sched::SpeedInputs in = inputs();
  in.measured = {1, 1, 0, 30, 30};
  in.gpu = {0, 0, 0, 1, 1};
  in.ability = {1, 2, 1, 10, 30};
  in.alpha = 0.1;
  const auto s = sched::speeds(SpeedSource::FnnDtps, in);
  double cpu = 0, gpu = 0;
  for (std::size_t w = 0; w < s.size(); ++w) (in.gpu[w] ? gpu : cpu) += s[w];
  EXPECT_NEAR(cpu / (cpu + gpu), 0.1, 1e-12);
  EXPECT_NEAR(s[1] / s[0], 2, 1e-12);
  EXPECT_NEAR(s[4] / s[3], 3, 1e-12);
}

TEST(Speeds, OneClassAloneKeepsItsMeasuredSpeeds) {
  sched::SpeedInputs in;
  in.measured = {3, 5};
  in.gpu = {1, 1};
  in.alpha = 0;  // DTPS's share for a node without CPU workers
  EXPECT_EQ(sched::speeds(SpeedSource::Dtps, in), (std::vector<double>{3, 5}));
  EXPECT_EQ(sched::speeds(SpeedSource::FnnDtps, in), (std::vector<double>{3, 5}));
}

TEST(Speeds, NothingTimedGivesEqualSpeeds) {
  sched::SpeedInputs in;
  in.measured = {0, 0};
  in.gpu = {0, 1};
  for (SpeedSource src : {SpeedSource::Even, SpeedSource::Boyer, SpeedSource::Fnn, SpeedSource::Dtps, SpeedSource::FnnDtps})
    EXPECT_EQ(sched::speeds(src, in), (std::vector<double>{1, 1})) << sched::to_string(src);
}

}  // namespace
