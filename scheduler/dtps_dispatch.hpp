// DTPS dispatch of one batch of sub-tasks between the CPU class and the GPU class (seed 001
// §1.2 eq. (6) and §1.3 case (1)), as a scheduler sees the tasks: pure logic, header only, no
// StarPU and nothing from codelets/ (DESIGN §2), so any policy can include it.
//
// A task describes itself through StarPU's own fields (codelets/gemm.hpp says how ours do):
//   IA (eq. (3)) = task->flops;
//   DA (eq. (4)) = the bytes of its buffers, each handle's size once per direction (R in, W out,
//                  RW both), from starpu_data_get_size and the task's access modes;
//   w  (eq. (5)) = IA / DA.
// The same rule, written for the codelets' own descriptions, is weights::partition in
// codelets/subtask_weights.hpp; tests/test_dtps_dispatch.cpp checks that both agree.
//
// Which end goes where: seed 001 §1.3 case (1) sorts by weight, larger first, and sends the
// front (alpha) to the CPU; §1.2 and eq. (6) send compute-heavy sub-tasks (large w) to the GPU.
// We keep §1.2: in the sorted order the GPU class takes the front (about beta = 1 - alpha of the
// work), the CPU class the back (the communication-heavy end). The shares are seed 001's.
//
// Seed 001 §1.3 case (1) as written, over a whole batch (eq. (6)'s verdicts, the sorted cut),
// is tests/dtps_decide.hpp: the oracle that weight_cut, the scheduler's form, is checked against.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <vector>

namespace sched::dtps_dispatch {

struct Item {
  double work = 0;   // IA: task->flops
  double bytes = 0;  // DA: bytes in + out
};

inline double clean(double v) { return v > 0 ? v : 0; }  // negative and NaN count as 0

// Seed 001 eq. (5): w = IA / DA; DA = 0 gives +inf (pure compute) unless IA = 0 too (0).
inline double weight(const Item& t) {
  const double ia = clean(t.work), da = clean(t.bytes);
  if (da == 0) return ia > 0 ? std::numeric_limits<double>::infinity() : 0;
  return ia / da;
}

// The scheduler's form of seed 001 §1.3 case (1) ordered by weight (tests/dtps_decide.hpp's
// decide(Order::Weight)): it sees a batch's tasks one at a time, so it
// keeps the batch's work per weight bin (kBinsPerOctave a factor of 2 in w) and cuts the next
// batch where the previous one's bins put the CPU-class share alpha (the light end to the
// CPU). Order::Weight rather than Eq6: on a node whose GPU is tens of times its CPUs, eq. (6)'s
// conflict rule would give the CPUs the largest blocks, each of which outlasts the GPU's share.
constexpr int kBinsPerOctave = 4, kLowestOctave = -8, kBins = 128;  // w in [2^-8, 2^24)
inline int weight_bin(double w) {
  if (!(w > 0)) return 0;
  const double b = std::floor(kBinsPerOctave * (std::log2(w) - kLowestOctave));
  return int(std::clamp(b, 0.0, double(kBins - 1)));
}

// Bins above `bin` go to the GPU class, below it to the CPU class; `gpu_fraction` of the work
// of `bin` itself to the GPU class. bin < 0: no cut (one weight bin only, an empty batch, or a
// share that gives one class everything, which the class speeds already do).
struct Cut {
  int bin = -1;
  double gpu_fraction = 0;
};
inline Cut weight_cut(const double* work_by_bin, int bins, double alpha) {
  double total = 0;
  int used = 0;
  for (int b = 0; b < bins; ++b) total += clean(work_by_bin[b]), used += work_by_bin[b] > 0;
  if (used < 2 || std::isnan(alpha) || alpha <= 0 || alpha >= 1) return {};
  const double target = (1 - alpha) * total;  // the GPU class's work, from the heavy end
  double acc = 0;
  for (int b = bins - 1; b >= 0; --b) {
    const double w = clean(work_by_bin[b]);
    if (w > 0 && acc + w >= target) return {b, (target - acc) / w};
    acc += w;
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// DTPS over a batch of independent units (seed 002's strips with their small halos, a program's
// tiles each updated by its own chain of tasks): whole units to each class, every task of a unit
// to the class that took it. Placing task by task cannot do this: a task graph releases a few
// tasks at a time, a GPU's queue then never outlasts a core's share, and the CPU class never
// runs a unit (its realised share is 0, so seed 001 never learns a split).

// Seed 000 eq. (7) at unit granularity: of n equal units, how many the CPU class takes when each
// unit goes to the class that would finish it first, a class of k workers running m units in
// ceil(m / k) times its time for one (a unit is a chain: one worker runs it). Ties to the GPU.
inline std::size_t model_cpu_units(std::size_t n, double cpu_unit_us, int cpu_workers, double gpu_unit_us,
                                   int gpu_workers) {
  if (n == 0 || cpu_workers <= 0 || !(cpu_unit_us > 0) || !std::isfinite(cpu_unit_us)) return 0;
  if (gpu_workers <= 0 || !(gpu_unit_us > 0)) return n;
  const auto end = [](std::size_t m, int k, double t) { return double((m + std::size_t(k) - 1) / std::size_t(k)) * t; };
  std::size_t cpu = 0, gpu = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (end(cpu + 1, cpu_workers, cpu_unit_us) < end(gpu + 1, gpu_workers, gpu_unit_us)) ++cpu;
    else ++gpu;
  }
  return cpu;
}

// The most units the CPU class can usefully take: as many rounds of its workers as fit in the
// GPU class's time for the whole batch. More only lengthens the batch, whatever seed 001's
// delay coefficient asks for.
inline std::size_t max_cpu_units(std::size_t n, double cpu_unit_us, int cpu_workers, double gpu_unit_us,
                                 int gpu_workers) {
  if (cpu_workers <= 0 || !(cpu_unit_us > 0) || !std::isfinite(cpu_unit_us)) return 0;
  if (gpu_workers <= 0 || !(gpu_unit_us > 0)) return n;
  const double gpu_all = double((n + std::size_t(gpu_workers) - 1) / std::size_t(gpu_workers)) * gpu_unit_us;
  const double rounds = std::floor(gpu_all / cpu_unit_us);
  return std::size_t(std::min(double(n), rounds * double(cpu_workers)));
}

// Seed 001's count of units for the CPU class, `asked`, in whole rounds of its k workers once
// it spans more than one: m units take ceil(m / k) rounds, so a count between rounds (m = 9 of
// k = 2) costs the CPU class the higher round and leaves the GPU class more than that round
// would. Of the two whole rounds around it, the one whose predicted makespan is shorter, the
// classes' times scaled from the batch that ran m0 units (t_cpu, t_gpu): the CPU's by its
// rounds, the GPU's by its units. Never above `most`; `asked` itself when there is nothing to
// scale from.
inline std::size_t whole_rounds(std::size_t n, std::size_t asked, int k, std::size_t most, std::size_t m0,
                                double t_cpu, double t_gpu) {
  const auto ks = std::size_t(std::max(k, 1));
  if (k < 2 || asked <= ks || asked % ks == 0 || m0 == 0 || m0 >= n || !(t_cpu > 0) || !(t_gpu > 0) ||
      !std::isfinite(t_cpu) || !std::isfinite(t_gpu))
    return std::min(asked, most);
  const auto rounds = [&](std::size_t m) { return double((m + ks - 1) / ks); };
  const auto makespan = [&](std::size_t m) {
    return std::max(t_cpu * rounds(m) / rounds(m0), t_gpu * double(n - m) / double(n - m0));
  };
  const std::size_t lo = asked / ks * ks, hi = std::min(lo + ks, std::min(most, n));
  return hi > lo && makespan(hi) < makespan(lo) ? hi : std::min(lo, most);
}

// A batch's split into classes, by the order in which its units first appear: the first `cpu`
// to the CPU class, the next `units - cpu` to the GPU class, any beyond `units` unconstrained.
// One boundary between the classes' neighbours (seed 002's halos cross it only), and the GPU's
// side of it comes first in the GPU's queue: a core waiting on a GPU unit's halo would wait
// for the units ahead of it there, where a GPU unit waiting on a core's has others to run.
struct UnitPlan {
  std::size_t units = 0;
  std::size_t cpu = 0;
  bool splits() const { return cpu > 0 && cpu < units; }
};
// 1 GPU class, 0 CPU class, -1 either (no split, or a unit beyond the plan).
inline int unit_class(const UnitPlan& plan, std::size_t k) {
  if (!plan.splits() || k >= plan.units) return -1;
  return k < plan.cpu ? 0 : 1;
}
// A unit whose first task comes above StarPU's default priority is urgent: the application
// says that other work waits on it (an MPI rank's edge units, on which the neighbouring rank
// waits level after level). Where the batch splits, it goes to the GPU class, which ends a
// unit in a fraction of a core's time, and the CPU class takes the first units seen of the
// others.
inline bool urgent_unit(int priority) { return priority > 0; }  // 0: STARPU_DEFAULT_PRIO
// The class of the batch's k-th new unit, `urgent` of the k before it urgent.
inline int unit_class(const UnitPlan& plan, std::size_t k, bool is_urgent, std::size_t urgent) {
  if (!plan.splits() || k >= plan.units) return -1;
  return is_urgent ? 1 : unit_class(plan, k - std::min(k, urgent));
}

// A unit is the set of large handles that tasks touch together; a handle under a quarter of
// the task's largest (a strip's halo rows) joins no unit. A batch is split by units only when
// nearly all its work stays inside one class's units: tiles that GEMM updates read across
// (LU, a product's panels) make one unit, which no split divides.
constexpr double kSmallHandle = 0.25, kLocalShare = 0.9;
inline bool small_handle(double bytes, double largest) { return bytes < kSmallHandle * largest; }

}  // namespace sched::dtps_dispatch
