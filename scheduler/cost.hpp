// The cost model of the five policies (DESIGN §6): what a task is expected to cost on each
// worker, and the speed sources that make the five policies differ. No StarPU.
//
// A task's expected time on worker w is
//   run_w = T_arch(w)(task) x rel_w x scale_w
// T_arch the task's time on w's kind of worker (task_costs.hpp: its footprint's measured mean,
// StarPU's per-footprint history, a fit of fixed + work / throughput, or the prior from the
// hardware, in that order; timings enter it over the workers' described rel, so that it keeps
// one scale across processes), rel_w how much slower w is than its arch (its description
// first, then measured), and scale_w = b_w / s_w the speed source's correction: b_w = the arch's
// throughput / rel_w is what w does, s_w = speeds(source, b) what the policy plans it to do.
// Its expected finish on a worker is
//   max(queue end, now + transfer) + run_w
// (its inputs are prefetched at push and arrive while the queued work runs). Placing each task
// on the worker of earliest expected finish divides N equal independent units in proportion to
// speed: D_i = CP_i / sum_j CP_j x D, seed 000 eq. (7). Push ranks the workers by that finish
// plus the transfer once more (dmda's data penalty): data stays where it is unless its task
// ends sooner elsewhere by more than the move.
#pragma once

#include <cstddef>
#include <vector>

namespace sched {

enum class SpeedSource { Even, Boyer, Fnn, Dtps, FnnDtps };
const char* to_string(SpeedSource s);

inline double expected_finish(double now, double queue_end, double transfer, double run) {
  return (queue_end > now + transfer ? queue_end : now + transfer) + run;
}

// How a worker keeps to the plan its queue was pushed with. A program that pushes all its
// tasks before any ends (StarPU's parallel_independent_heterogeneous_tasks_data) is placed by
// its own model alone; a GPU whose tasks run 1.17x that model ends its queue 17% late, while
// each of its pops, planning the next task from the moment it takes it, looks on time. Its
// slip is its tasks' time over the time push planned for each, a weighted mean of the ratios
// (kSlipWeight each, bounded to [1/kSlipClamp, kSlipClamp]): what its queued tasks will take
// beyond their plan. Weighted and bounded so that a batch's first tasks (a cold launch, first
// touches: 4x their plan and more) do not make a worker on its plan look late.
constexpr double kSlipWeight = 0.1;
constexpr double kSlipClamp = 2;
inline double slip_after(double slip, double dt, double planned) {
  if (!(planned > 0) || !(dt > 0)) return slip;
  double r = dt / planned;
  r = r < 1 / kSlipClamp ? 1 / kSlipClamp : r > kSlipClamp ? kSlipClamp : r;
  return slip + kSlipWeight * (r - slip);
}
// What a worker has left to run from `now` (seed 000 §3.2's T_i^r): the rest of what it popped
// (until pipe_end), then its queue (exp_len us as planned) at its slip. A queue that runs
// early is not counted shorter.
inline double remaining_us(double now, double pipe_end, double exp_len, double slip) {
  return (pipe_end > now ? pipe_end - now : 0) + exp_len * (slip > 1 ? slip : 1);
}
// How much later than its push planned the task at a queue's back now ends, in us.
inline double behind_plan_us(double now, double remaining, double planned_end) {
  return now + remaining - planned_end;
}

// What the speed sources read, per worker of one codelet.
struct SpeedInputs {
  std::vector<double> measured;  // work/us each worker does, b_w (0: not a member)
  std::vector<double> ability;   // the FNN's predicted relative ability CP now (empty: no model)
  std::vector<double> ability_measured;  // ... averaged over the states the measurements saw
  std::vector<char> gpu;         // in the GPU class
  double alpha = -1;             // DTPS's CPU-class share (seed 001 §1.3); < 0: none learned yet
};

// Speeds (work/us) per worker, all > 0 once any worker has been timed:
//   even      every worker at the mean measured speed (seed 000 Fig. 1: pure division)
//   boyer     the measured speeds (seed 000 eqs. 1-4); untimed workers at the mean
//   fnn       a timed worker's measured speed x CP_i now / CP_i while measured: the FNN
//             (seed 000 eqs. 9-16) predicts how a change of live state changes the speed
//             before the measurements show it, by at most kMaxFnnChange either way (a
//             co-running kernel halves a GPU; one noisy prediction must not make a CPU core
//             look like a GPU); an untimed worker at CP_i scaled to the timed
//             workers' measured total; boyer while no model exists
//   dtps      class totals alpha R and (1 - alpha) R, R the measured total, equal within a
//             class (seed 001 §1.3); boyer until DTPS has learned alpha
//   fnn-dtps  the same class totals, split within each class by the FNN's CP_i
// Nothing timed at all: 1 for every worker.
constexpr double kMaxFnnChange = 2;
std::vector<double> speeds(SpeedSource source, const SpeedInputs& in);

// The weight of a new timing in the averages over a worker's tasks (CP while measured).
constexpr double kEwma = 0.1;

}  // namespace sched
