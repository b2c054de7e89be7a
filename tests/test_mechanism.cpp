// The scheduler's queues (ready-first pop, priority order) and cost model (earliest finish
// divides equal units in proportion to speed, seed 000 eq. 7; the five speed sources), without
// StarPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "scheduler/cost.hpp"
#include "scheduler/task_costs.hpp"
#include "scheduler/queue.hpp"

namespace {

using sched::QueuedTask;
using sched::SpeedSource;
using sched::TaskQueue;

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

// A GPU placed by a program's model that says 1000 us a task, its tasks taking 1170 (StarPU's
// parallel_independent_heterogeneous_tasks_data on the GPU machine): 614 tasks pushed at once,
// the last planned to end at 614 ms. Each pop plans the next task from the moment it takes it,
// so its pops show one task's slip; its queue's last task shows 17% of the queue.
TEST(Slip, AWorkerSlowerThanItsPlanFallsBehindByItsQueueNotByOneTask) {
  const double planned = 1000, dt = 1170, back_end = 614 * planned;
  double slip = 1, now = 0, pipe_end = 0;
  for (int i = 0; i < 350; ++i) {
    pipe_end = std::max(now, pipe_end) + planned;  // pop
    now += dt;                                      // its end
    slip = sched::slip_after(slip, dt, planned);
  }
  EXPECT_NEAR(slip, 1.17, 1e-9);
  EXPECT_NEAR(now - pipe_end, 170.0, 1e-6);  // what a pop's plan alone would show
  const double exp_len = 264 * planned;     // still queued, as planned
  const double left = sched::remaining_us(now, pipe_end, exp_len, slip);
  EXPECT_NEAR(left, 264 * 1170.0, 1e-6);
  EXPECT_NEAR(sched::behind_plan_us(now, left, back_end), 614 * 170.0, 1e-6);
}

TEST(Slip, OnPlanIsNeverLateAndEarlyIsNotLateEither) {
  double slip = 1;
  for (int i = 0; i < 100; ++i) slip = sched::slip_after(slip, 1000, 1000);
  EXPECT_DOUBLE_EQ(slip, 1);
  // 8 tasks of 1000 us queued behind one that ends at 6000: the last one planned to end at 14000.
  EXPECT_DOUBLE_EQ(sched::behind_plan_us(5000, sched::remaining_us(5000, 6000, 8000, slip), 14000), 0);
  for (int i = 0; i < 100; ++i) slip = sched::slip_after(slip, 800, 1000);
  EXPECT_LT(slip, 1);
  // A queue that runs early leaves no more to run than planned, and is not counted shorter.
  EXPECT_DOUBLE_EQ(sched::remaining_us(5000, 5000, 8000, slip), 8000);
  EXPECT_DOUBLE_EQ(sched::behind_plan_us(5000, 8000, 13000), 0);
}

TEST(Slip, AColdFirstLaunchCountsAsAtMostKSlipClampTimesItsPlan) {
  EXPECT_DOUBLE_EQ(sched::slip_after(1, 100 * 1000.0, 1000), 1 + sched::kSlipWeight * (sched::kSlipClamp - 1));
  EXPECT_DOUBLE_EQ(sched::slip_after(1, 1, 1000), 1 + sched::kSlipWeight * (1 / sched::kSlipClamp - 1));
  // A task without a plan (StarPU gave it to the worker directly) leaves it as it was.
  EXPECT_DOUBLE_EQ(sched::slip_after(1.3, 5000, 0), 1.3);
}

sched::SpeedInputs inputs() {
  sched::SpeedInputs in;
  in.measured = {1, 1, 0, 30};  // worker 2 untimed
  in.gpu = {0, 0, 0, 1};
  return in;
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

// ------------------------------------------------------------------ task costs (task_costs.hpp)
using sched::ArchPrior;
using sched::TaskCosts;

TaskCosts two_archs() {
  TaskCosts c({"cpu", "cuda0"});
  c.set_prior(0, ArchPrior::from_peak(80, false, false));     // a 2.5 GHz AVX-512 core
  c.set_prior(1, ArchPrior::from_peak(67000, true, false));   // an H200
  return c;
}

TEST(TaskCosts, APriorFromThePeakRatesKeepsACoreOffWorkTheGpuEndsFirst) {
  const TaskCosts c = two_archs();
  const double strip = 16.0 * (1 << 20);  // one 16 MiB pass
  const double cpu = c.fitted_us(0, strip).us, gpu = c.fitted_us(1, strip).us;
  EXPECT_EQ(c.fitted_us(0, strip).source, sched::CostSource::Prior);
  EXPECT_DOUBLE_EQ(c.throughput(1) / c.throughput(0), 67000.0 / 80) << "bytes at the peak rates' ratio";
  EXPECT_GT(cpu / gpu, 400) << "a GPU's fixed cost per task is 5x a core's";
  EXPECT_NEAR(cpu, sched::kPriorFixedCpuUs + strip / (80 * sched::kPriorBytesPerGflop), 1e-6 * cpu);
  // Flops at kPriorFlopEfficiency of the peak: a 1024^3 GEMM tile, 2.1 GFLOP.
  const ArchPrior f = ArchPrior::from_peak(80, false, true);
  EXPECT_NEAR(f.fixed_us + 2.147e9 / f.throughput, 2.147e9 / 40e3 + sched::kPriorFixedCpuUs, 1e-3);
  EXPECT_GT(ArchPrior::from_peak(0, false, false).throughput, 0) << "an unknown peak is a slow core, never 0";
}

TEST(TaskCosts, AColdFirstTimingIsForgottenThenTimingsAverage) {
  TaskCosts c = two_archs();
  double us = 0;
  EXPECT_FALSE(c.size_us(1, 7, &us));
  c.record(1, 7, 1000, 100);  // a GPU's first launch, loading its kernel: 100x slow
  ASSERT_TRUE(c.size_us(1, 7, &us));
  EXPECT_EQ(us, 100);
  c.record(1, 7, 1000, 1);  // warm
  for (long runs = 3; runs <= TaskCosts::kWarmRuns; ++runs) c.record(1, 7, 1000, 1.1);
  c.size_us(1, 7, &us);
  EXPECT_EQ(us, 1) << "the fastest of the first kWarmRuns";
  c.record(1, 7, 1000, 2);  // then a slowdown: followed, smoothed
  c.size_us(1, 7, &us);
  EXPECT_DOUBLE_EQ(us, (1 - TaskCosts::kEwma) * 1 + TaskCosts::kEwma * 2);
  EXPECT_FALSE(c.size_us(0, 7, &us)) << "one arch's timings are not another's";
}

TEST(TaskCosts, TheSizesMeasuredPredictTheOthersWithAFixedCostPerTask) {
  // A core at 5 us a task + 100 work/us, measured at the coarse levels only (the inverse's
  // first tasks): the finest level must come out at its own cost, not the coarse ones' rate.
  TaskCosts c = two_archs();
  for (double work : {1000.0, 4000.0, 16000.0}) c.record(0, std::uint32_t(work), work, 5 + work / 100);
  const auto e = c.fitted_us(0, 256000);
  EXPECT_EQ(e.source, sched::CostSource::Fit);
  EXPECT_NEAR(e.us, 5 + 2560, 0.02 * 2565);
  EXPECT_NEAR(c.fixed_us(0), 5, 0.5);
  EXPECT_NEAR(c.throughput(0), 100, 2);
  EXPECT_EQ(c.fitted_us(1, 256000).source, sched::CostSource::Prior) << "the GPU measured nothing";
}

TEST(TaskCosts, ARateIsAllTheWorkOverAllTheTime) {
  TaskCosts c = two_archs();
  EXPECT_DOUBLE_EQ(c.rate(0), c.throughput(0)) << "the prior's before any measurement";
  c.record(0, 1, 1000, 15);
  c.record(0, 2, 4000, 45);
  EXPECT_DOUBLE_EQ(c.rate(0), 5000.0 / 60);
}

TEST(TaskCosts, OneSizeMovesOnlyWhatItMeasures) {
  // An H200's prior: 10 us a task, 1.34e6 bytes/us. A coarse level's task, 64 KiB in 30 us, is
  // all fixed cost: the fixed cost moves to it, the throughput stays the prior's, and the
  // finest level (16 MiB) is predicted tens of us, not the 7.7 ms a line through 0 would give.
  TaskCosts c = two_archs();
  const double prior = c.throughput(1), coarse = 65536, fine = 16.0 * (1 << 20);
  c.record(1, 1, coarse, 30);
  EXPECT_NEAR(c.fixed_us(1), 30, 0.5);
  EXPECT_NEAR(c.throughput(1) / prior, 1, 0.01);
  EXPECT_LT(c.fitted_us(1, fine).us, 50);
  EXPECT_NEAR(c.fitted_us(1, coarse).us, 30, 0.3) << "the size measured is predicted as measured";
  // A task that is mostly work (256 MiB): the throughput moves, the fixed cost stays near the
  // prior's.
  TaskCosts d = two_archs();
  const double image = 256.0 * (1 << 20), us = 10 + 4 * image / prior;  // 4x below the prior's bandwidth
  d.record(1, 2, image, us);
  EXPECT_NEAR(d.fitted_us(1, image).us, us, 0.01 * us);
  EXPECT_NEAR(d.throughput(1) / prior, 0.25, 0.02);
  EXPECT_LT(d.fixed_us(1), 20);
}

TEST(TaskCosts, SeveralSizesOutweighThePrior) {
  // A core at 5 us a task + 100 work/us, where the prior says 2 us + 1600: three well-spread
  // sizes give the measured line within 2%.
  TaskCosts c = two_archs();
  for (double work : {1e4, 1e5, 1e6}) c.record(0, std::uint32_t(work), work, 5 + work / 100);
  EXPECT_NEAR(c.throughput(0), 100, 2);
  EXPECT_NEAR(c.fitted_us(0, 4e6).us, 5 + 4e4, 0.02 * 4e4);
}

TEST(TaskCosts, TimesThatDoNotGrowWithWorkStillGiveAPositiveThroughput) {
  const ArchPrior prior{10, 1e3};
  const ArchPrior f = sched::fit_affine({{1000, 50, 1}, {2000, 40, 1}, {4000, 45, 1}}, prior);
  EXPECT_GE(f.fixed_us, 0);
  EXPECT_LE(f.fixed_us, 40) << "never more than the fastest time";
  EXPECT_GT(f.throughput, 0);
  EXPECT_TRUE(std::isfinite(f.fixed_us + 4000 / f.throughput));
  EXPECT_EQ(sched::fit_affine({}, prior).throughput, prior.throughput) << "no points: the prior";
}

TEST(TaskCosts, OneHeldTimingDoesNotMakeAnArchSlow) {
  TaskCosts c = two_archs();
  for (int i = 0; i < int(TaskCosts::kWarmRuns); ++i) c.record(0, 9, 1e4, 100);
  c.record(0, 9, 1e4, 100 * 100);  // the thread was held by another's allocation
  double us = 0;
  ASSERT_TRUE(c.size_us(0, 9, &us));
  EXPECT_DOUBLE_EQ(us, 100 * (1 + TaskCosts::kEwma * (TaskCosts::kMaxStep - 1)));
  for (int i = 0; i < 40; ++i) c.record(0, 9, 1e4, 300);  // a lasting 3x slowdown is followed
  c.size_us(0, 9, &us);
  EXPECT_NEAR(us, 300, 10);
}

// Fourteen cores of one arch time one footprint with +-50% noise (a stencil's update, cores
// sharing host memory) over 20000 tasks: the arch's time, which the next process reads with the
// described rels, stays the cores' mean time, and each core's learned rel near 1.
TEST(TaskCosts, TheArchsTimeKeepsItsScaleOverManyNoisyTimings) {
  TaskCosts c = two_archs();
  constexpr int kCores = 14;
  constexpr double kMeanUs = 2000;
  std::vector<double> rel(kCores, 1.0);
  std::uint64_t x = 12345;
  auto noise = [&] {  // uniform in [0.5, 1.5), a fixed sequence
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return 0.5 + double(x >> 11) / double(1ULL << 53);
  };
  for (int i = 0; i < 20000; ++i) {
    const int w = i % kCores;
    double arch = 0;  // 0 until the first timing
    c.size_us(0, 7, &arch);
    const sched::Observed o = sched::observe(kMeanUs * noise(), 1.0, rel[std::size_t(w)], arch, true, 0.1);
    rel[std::size_t(w)] = o.rel;
    c.record(0, 7, 2.197e6, o.record_us);
  }
  double us = 0;
  ASSERT_TRUE(c.size_us(0, 7, &us));
  EXPECT_NEAR(us, kMeanUs, 0.25 * kMeanUs) << "the arch's time drifted from its cores' mean";
  for (double r : rel) EXPECT_NEAR(r, 1.0, 0.35);
}

TEST(TaskCosts, ATimingIsRecordedOverTheDescribedRelAndTeachesTheLearnedOne) {
  // A core described 2x slower than its arch (a lower clock) takes 300 us where the arch's is 100.
  const sched::Observed o = sched::observe(300, 2.0, 2.0, 100, true, 0.1);
  EXPECT_DOUBLE_EQ(o.record_us, 150);
  EXPECT_DOUBLE_EQ(o.rel, 0.9 * 2.0 + 0.1 * 3.0);
  EXPECT_DOUBLE_EQ(sched::observe(300, 2.0, 2.0, 100, false, 0.1).rel, 2.0) << "alone in its arch: rel stays";
  EXPECT_DOUBLE_EQ(sched::observe(300, 2.0, 2.0, 0, true, 0.1).rel, 2.0) << "nothing measured yet to compare with";
}

TEST(TaskCosts, AGpusFirstLaunchIsNotRecorded) {
  TaskCosts c({"cpu", "cuda0"});
  c.set_prior(0, ArchPrior::from_peak(80, false, false));
  c.set_prior(1, ArchPrior::from_peak(67000, true, false), true);
  c.record(1, 3, 1e6, 20000);  // CUDA loads the kernel
  double us = 0;
  EXPECT_FALSE(c.size_us(1, 3, &us));
  EXPECT_EQ(c.fitted_us(1, 1e6).source, sched::CostSource::Prior);
  c.record(1, 3, 1e6, 50);
  ASSERT_TRUE(c.size_us(1, 3, &us));
  EXPECT_EQ(us, 50);
  c.record(0, 3, 1e6, 20000);  // a core's first timing counts
  EXPECT_TRUE(c.size_us(0, 3, &us));
}

TEST(TaskCosts, SavedAndLoadedByTheNextProcess) {
  TaskCosts a = two_archs();
  a.record(0, 0xdeadbeef, 4096, 12.5);
  a.record(1, 42, 4096, 0.75);
  a.record(1, 42, 4096, 0.5);
  const std::string text = a.to_text("lwt_h_fwd");
  // The next process has the same CPU arch and another GPU: the GPU's sizes are not its own.
  TaskCosts b({"cpu", "cuda1"});
  b.set_prior(1, ArchPrior::from_peak(67000, true, false));
  b.from_text(text, "lwt_h_fwd");
  double us = 0;
  ASSERT_TRUE(b.size_us(0, 0xdeadbeef, &us));
  EXPECT_EQ(us, 12.5);
  EXPECT_FALSE(b.size_us(1, 42, &us));
  EXPECT_EQ(b.to_text("lwt_h_fwd").find("cuda0"), std::string::npos);
  TaskCosts c = two_archs();
  c.from_text(text, "lwt_h_fwd");
  ASSERT_TRUE(c.size_us(1, 42, &us));
  EXPECT_EQ(us, 0.5);
  EXPECT_EQ(c.to_text("lwt_h_fwd"), text) << "a round trip keeps every size, mean and count";
}

TEST(TaskCosts, ACorruptOrForeignFileIsRefusedInOneLine) {
  TaskCosts a = two_archs();
  a.record(0, 1, 4096, 12.5);
  const std::string text = a.to_text("lwt_h_fwd");
  std::string edited = text;
  edited.replace(edited.find("12.5"), 4, "99.5");
  const auto refused = [](const std::string& t, const char* codelet) {
    TaskCosts c = two_archs();
    try {
      c.from_text(t, codelet);
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      double us = 0;
      EXPECT_FALSE(c.size_us(0, 1, &us)) << "nothing of a refused file is kept";
      return true;
    }
    return false;
  };
  EXPECT_TRUE(refused(edited, "lwt_h_fwd")) << "checksum";
  EXPECT_TRUE(refused(text, "lwt_v_fwd")) << "another codelet's file";
  EXPECT_TRUE(refused(text.substr(0, text.size() / 2), "lwt_h_fwd")) << "truncated";
  EXPECT_TRUE(refused("not a costs file\n", "lwt_h_fwd"));
  EXPECT_FALSE(refused(text, "lwt_h_fwd"));
}
