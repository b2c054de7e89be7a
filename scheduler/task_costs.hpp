// What one codelet's tasks cost on each kind of worker (DESIGN §6, the cost): right from the
// first task, and carried from one process to the next. No StarPU.
//
// An arch is a kind of worker whose tasks cost alike: the CPU cores share one, each GPU has its
// own (as StarPU's per-arch models). A task's expected time on an arch comes from the first of
// these sources that knows it:
//   size   the mean time of the tasks of the same footprint measured on that arch (this
//          process or an earlier one: saved beside the FNN models): exact for the shapes a
//          program repeats, whatever a size means to it;
//   (the policy then asks StarPU's per-footprint history, where the codelet has a model)
//   fit    fixed + work / throughput, the two fitted to the sizes measured on that arch, with
//          the prior as a weak observation (fit_affine): a fixed cost per task (a GPU's launch,
//          a core's call) and a throughput, so that one level of a transform predicts the
//          others (seed 000 eq. 5, D / T, with T's fixed part apart), and sizes that measure
//          only one of the two leave the other at the prior's;
//   prior  the same form from the worker's description before any measurement (seed 000
//          §3.3: the FNN's features F, the peak rate, say what a worker can do before it ran
//          anything): fixed kPriorFixedUs, throughput from F (ArchPrior::from_peak).
// Work is the task's flops where the program sets them, else the bytes it touches at its
// level (StarPU's size_base where the codelet's model has one), else its unit's bytes.
//
// Not thread-safe: the policy keeps each codelet's TaskCosts under a read-write lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace sched {

struct ArchPrior {
  double fixed_us = 0;     // per task
  double throughput = 1;   // work per microsecond
  // Before any measurement, from the arch's peak rate F (GFLOP/s, the FNN's feature): flops
  // at kPriorFlopEfficiency of the peak; bytes at kPriorBytesPerGflop per us per GFLOP/s
  // (a memory-bound pass: a 2.5 GHz AVX-512 core, ~80 GFLOP/s, streams ~1.6 GB/s through a
  // lifting pass; an H200, 67 TFLOP/s, ~1.3 TB/s). Only the ratio between workers and the
  // order of magnitude against the bus model's transfer times matter: the first measurement
  // on an arch replaces the prior there.
  static ArchPrior from_peak(double gflops, bool gpu, bool flops_work);
};
constexpr double kPriorFixedCpuUs = 2, kPriorFixedGpuUs = 10;
constexpr double kPriorFlopEfficiency = 0.5;
constexpr double kPriorBytesPerGflop = 20;  // bytes per us per GFLOP/s

enum class CostSource { Size, Fit, Prior };
const char* to_string(CostSource s);

struct CostEstimate {
  double us = 0;
  CostSource source = CostSource::Prior;
};

class TaskCosts {
 public:
  // A size's time: the fastest of its first kWarmRuns timings (a codelet's first run on a
  // GPU loads its module, caches are cold: only ever slower), then an EWMA of weight kEwma of
  // timings capped at kMaxStep x the mean. A task whose worker's thread was held elsewhere
  // (StarPU's CUDA worker runs its node's copies; another thread's cudaHostAlloc takes the
  // driver's lock) times 100x its cost once, and uncapped would make its arch look slow for
  // every later placement; a lasting slowdown is still followed, by up to 1.3x a task.
  static constexpr long kWarmRuns = 3;
  static constexpr double kEwma = 0.1, kMaxStep = 4;

  struct Size {
    double work = 0, us = 0;
    long runs = 0;
  };

  // `archs`: the arch names, in the policy's arch numbering.
  explicit TaskCosts(std::vector<std::string> archs);
  std::size_t archs() const { return archs_.size(); }
  const std::string& arch_name(std::size_t a) const { return archs_.at(a).name; }
  // `gpu`: the arch's first timing in this process is not recorded: CUDA loads a kernel at
  // its first launch (tens of ms), and that one timing would make the GPU look slower than a
  // core for every size the fit predicts.
  void set_prior(std::size_t arch, const ArchPrior& p, bool gpu = false);

  // The measured mean of this footprint on `arch`; false when never measured.
  bool size_us(std::size_t arch, std::uint32_t footprint, double* us) const;
  // fixed + work / throughput, fitted where `arch` has measurements, else the prior.
  CostEstimate fitted_us(std::size_t arch, double work) const;
  // The arch's throughput (work/us) and fixed cost as fitted or prior: what fitted_us uses.
  double throughput(std::size_t arch) const;
  double fixed_us(std::size_t arch) const;
  // Its speed, D / T over the sizes it ran (seed 000 eq. 5: all their work over all their
  // time, fixed costs included), else the prior's: a worker's speed for the speed sources.
  // Steadier than the fit's slope, which a few noisy sizes can swing.
  double rate(std::size_t arch) const;
  std::size_t sizes(std::size_t arch) const { return archs_.at(arch).sizes.size(); }

  void record(std::size_t arch, std::uint32_t footprint, double work, double us);

  // The file beside a codelet's FNN model: its measured sizes per arch, with a checksum.
  // from_text throws std::invalid_argument with a one-line reason on anything malformed;
  // sizes of archs this process does not have are ignored (another machine's workers).
  std::string to_text(const std::string& codelet) const;
  void from_text(const std::string& text, const std::string& codelet);

 private:
  struct Arch {
    std::string name;
    ArchPrior prior;
    std::map<std::uint32_t, Size> sizes;
    double fixed_us = 0, throughput = 1;  // the fit, valid when !sizes.empty()
    bool skip_next = false;               // the next timing is a first launch
  };
  void refit(Arch& a);
  std::vector<Arch> archs_;
};

// One timing `dt` of a task on a worker, whose arch measured this size at `arch_us` (0: not yet):
// the time the arch records and the worker's new `rel` (its time over the arch's, which push
// multiplies the arch's time by). The arch records dt over the worker's *described* rel (its
// peak rate against the arch's: fixed for the run), never over the learned one: recorded over
// the learned rel, the arch's time and the members' rels are fitted as a product only, their
// common scale is free to drift over thousands of noisy timings, and the arch's time saved for
// the next process, which starts from the described rels, drifts with it. `shared`: the arch has
// other members to learn rel against (alone, rel and the arch's time would only trade places).
struct Observed {
  double record_us = 0, rel = 1;
};
Observed observe(double dt, double described_rel, double rel, double arch_us, bool shared, double weight);

// fixed + work / throughput fitted to the (work, us) points, pulled towards `prior`: least
// squares in relative error with the prior's two parameters as two more observations, each
// timing kFitNoise relative, the prior kPriorSpread (a peak rate says little). A few sizes of
// one kind then move only the parameter they measure: the inverse's first tasks, a coarse
// level's, are nearly all fixed cost and leave the throughput at the prior's, where a plain fit
// through them would give the fine levels a time hundreds of times too long. The fixed cost stays in [0, the smallest
// time], the throughput positive.
constexpr double kFitNoise = 0.1, kPriorSpread = 10;
ArchPrior fit_affine(const std::vector<TaskCosts::Size>& points, const ArchPrior& prior);

}  // namespace sched
