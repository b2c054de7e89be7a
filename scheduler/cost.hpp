// The cost model of the five policies (DESIGN §6): what a task is expected to cost on each
// worker, and the speed sources that make the five policies differ. No StarPU.
//
// A task's work is its unit's bytes, or task->flops where the program sets it; a worker's
// speed for a codelet is work per microsecond. Its expected finish on a worker is
//   max(queue end, now + transfer) + work / speed
// (its inputs are prefetched at push and arrive while the queued work runs). Placing each task
// on the worker of earliest expected finish divides N equal independent units in proportion to
// speed: D_i = CP_i / sum_j CP_j x D, seed 000 eq. (7).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace sched {

enum class SpeedSource { Even, Boyer, Fnn, Dtps, FnnDtps };
const char* to_string(SpeedSource s);

inline double expected_finish(double now, double queue_end, double transfer, double run) {
  return (queue_end > now + transfer ? queue_end : now + transfer) + run;
}

// What the speed sources read, per worker of one codelet.
struct SpeedInputs {
  std::vector<double> measured;  // work/us measured on each worker (0: not timed yet)
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

// What one worker's timings of one codelet say (seed 000 eq. 5, D / T, with a fixed cost): its
// time for work x is latency + x / rate, fitted by least squares over its timings, each
// weighed (1 - kEwma)^age so that the fit follows a change. A fixed cost matters where a
// codelet's tasks differ in size: a GPU kernel takes ~20 us however small its region, so one
// work / time ratio would make a GPU that ran small tasks look slow, and a core that ran small
// tasks look as fast as it is for large ones. Tasks all of one size give latency 0 and rate
// the weighted work / time.
constexpr double kEwma = 0.1;
class TimeFit {
  // Sizes must vary by about a fifth of their mean (variance >= kMinSpread mean^2) to tell a
  // fixed cost from the rate: closer sizes leave the slope to the timings' noise.
  static constexpr double kMinSpread = 0.05;

 public:
  void add(double x, double t) {
    for (double* v : {&s1_, &sx_, &st_, &sxx_, &sxt_}) *v *= 1 - kEwma;
    s1_ += 1, sx_ += x, st_ += t, sxx_ += x * x, sxt_ += x * t;
  }
  bool empty() const { return s1_ == 0; }
  // Work per us of the proportional part, and the fixed cost in us.
  double rate() const { return fit().first; }
  double latency() const { return fit().second; }
  // Whether the timings' sizes differ enough to tell the two apart; the weighted means.
  bool separated() const { return s1_ > 0 && s1_ * sxx_ - sx_ * sx_ >= kMinSpread * sx_ * sx_; }
  double mean_work() const { return s1_ > 0 ? sx_ / s1_ : 0; }
  double mean_time() const { return s1_ > 0 ? st_ / s1_ : 0; }

 private:
  std::pair<double, double> fit() const {
    if (s1_ == 0 || st_ <= 0) return {0, 0};
    const double var = s1_ * sxx_ - sx_ * sx_, cov = s1_ * sxt_ - sx_ * st_;
    // Sizes too alike to tell a fixed cost, or timings that fall with size (noise): work / time.
    if (!separated() || cov <= 0) return {sx_ / st_, 0};
    const double slope = cov / var, intercept = (st_ - slope * sx_) / s1_;
    if (intercept < 0) return {sx_ / st_, 0};  // growing faster than the work: no fixed cost
    return {1 / slope, intercept};
  }
  double s1_ = 0, sx_ = 0, st_ = 0, sxx_ = 0, sxt_ = 0;
};

// One worker's fit as the policy sees it.
struct FitSummary {
  double rate = 0, latency = 0, mean_work = 0, mean_time = 0;
  bool separated = false;  // its tasks' sizes told the fixed cost from the rate
  int kind = 0;            // workers of one kind (CPU, CUDA) share a fixed cost
};
// A worker that ran tasks of one size only cannot tell its fixed cost from its rate, and
// work / time then makes a GPU that ran only small tasks look many times slower than it is
// for large ones (it would get none to learn from). It takes the median fixed cost of the
// workers of its kind that could tell (at most 90% of its mean time), and the rate its mean
// time leaves.
void share_fixed_costs(std::vector<FitSummary>& fits);

}  // namespace sched
