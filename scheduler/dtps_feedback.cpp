#include "scheduler/dtps_feedback.hpp"

#include <starpu.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdio>
#include <string>

#include "scheduler/dtps.hpp"
#include "scheduler/dtps_dispatch.hpp"

namespace sched {

using namespace state;

namespace {

// Seed 001 eqs. (4)-(5): w = IA / DA, IA the task's flops, DA its buffers' bytes, read ones in
// and written ones out (codelets/subtask_weights.hpp says what our codelets expose).
double task_weight(starpu_task* task) { return dd::weight({task->flops, task_info::data_bytes(task)}); }

}  // namespace

// Seed 001 §1.3 case (1) for a batch of tasks of different weights: the class DTPS's cut gives
// the task (1 GPU, 0 CPU, -1 either: no cut, as for a batch of one weight). Tasks of the cut's
// own bin go to the GPU class while its part of that bin's work is below the cut's fraction.
int dispatch_class(CodeletState& c, starpu_task* task, double work) {
  const int bin = dd::weight_bin(task_weight(task));
  add_shared(c.weight_work[std::size_t(bin)], work);
  const int cut = c.cut_bin.load(std::memory_order_relaxed);
  if (cut < 0) return -1;
  if (bin != cut) return bin > cut ? 1 : 0;
  const double all = add_shared(c.tie_all, work);
  if (get(c.tie_gpu) < get(c.cut_gpu_fraction) * all) {
    add_shared(c.tie_gpu, work);
    return 1;
  }
  return 0;
}

// At a batch end: the next batch's cut from this batch's bins and the codelet's alpha. None
// where DTPS does not split the codelet or sends it to one class alone (its speeds do that).
void set_cut(const Policy& p, CodeletState& c) {
  std::array<double, dd::kBins> bins;
  for (std::size_t b = 0; b < bins.size(); ++b) bins[b] = c.weight_work[b].exchange(0, std::memory_order_relaxed);
  const double alpha = get(c.alpha), lo = p.dtps.config().min_share;
  const dd::Cut cut = alpha > lo && alpha < 1 - lo ? dd::weight_cut(bins.data(), dd::kBins, alpha) : dd::Cut{};
  c.cut_gpu_fraction = cut.gpu_fraction;
  c.tie_all = 0, c.tie_gpu = 0;
  c.cut_bin = cut.bin;
}

// DTPS by units at a push: notes what the task tells the next batch's plan, and returns the
// place the open batch's plan gives its unit. A CPU-class unit is kept by one core, the one
// with the fewest units: the cores share the unit's memory, so no transfer would keep its
// tasks together, and timings of a strip's coarse levels make some cores look faster than
// others (seed 000's division: D_i whole units per worker).
UnitTable::Place unit_split(Policy& p, CodeletState& c, starpu_task* task, unsigned ctx, double work,
                            const TaskKey& key, ArchCosts& costs, task_info::Unit& u) {
  u = task_info::unit(task);
  if (u.n == 0) return {};
  double cpu = NAN;  // on a CPU worker: they share one arch, the first says it
  for (const WorkerSlot& s : p.workers)
    if (s.member && !s.gpu && can_run(p, c, task, s.id)) {
      cpu = costs.of(p, c, task, ctx, s.id, key);
      break;
    }
  add_shared(p.split.cpu_unit_us, cpu);
  const dd::UnitPlan plan = open_plan(p);
  bool crossing = false;
  const int batch = p.batch.id.load(std::memory_order_relaxed);
  const auto units_of = [&](const WorkerSlot& s) {
    return s.batch.id.load(std::memory_order_relaxed) == batch ? s.batch.units.load(std::memory_order_relaxed) : 0;
  };
  const bool urgent = dd::urgent_unit(task->priority);
  const auto assign = [&](std::size_t k) {
    const auto before = std::size_t(std::max(0L, urgent ? p.split.batch_urgent.fetch_add(1) : p.split.batch_urgent.load()));
    UnitTable::Place pl{dd::unit_class(plan, k, urgent, before), -1};
    if (pl.cls < 0) return pl;
    if (pl.cls == 1) {
      // Several GPUs: seed 000 eq. (7) within the class, whole units in proportion to each
      // GPU's speed on the unit (its first task's time there): the GPU whose units would end
      // first with this one keeps it. Placed task by task instead, a unit stays where its
      // first task went (its data is there), and on GPUs of different speeds the slower one
      // ends the batch alone.
      if (p.gpu_nodes.load(std::memory_order_relaxed) < 2) return pl;
      double soonest = HUGE_VAL;
      for (WorkerSlot& s : p.workers) {
        if (!s.member || !s.gpu || !can_run(p, c, task, s.id)) continue;
        const double end = double(units_of(s) + 1) * costs.of(p, c, task, ctx, s.id, key) * get(c.rel[std::size_t(s.id)]);
        if (end < soonest) soonest = end, pl.owner = s.id;
      }
    } else {
      int fewest = INT_MAX;
      for (WorkerSlot& s : p.workers) {
        if (!s.member || s.gpu || !can_run(p, c, task, s.id)) continue;
        const int n = units_of(s);
        if (n < fewest) fewest = n, pl.owner = s.id;
      }
    }
    if (pl.owner >= 0) {
      WorkerSlot& o = p.workers[std::size_t(pl.owner)];
      if (o.batch.id.exchange(batch, std::memory_order_relaxed) != batch) o.batch.units = 0;
      o.batch.units.fetch_add(1, std::memory_order_relaxed);
    }
    return pl;
  };
  const UnitTable::Place place = p.split.units.place_of(u.h.data(), u.n, batch, p.split.batch_units, assign, crossing);
  add_shared(p.split.unit_work, work);
  if (!crossing) add_shared(p.split.local_work, work);
  return place;
}

// At a batch end: the next batch's split by units, for the next batch this batch's first
// codelet opens. Only for a batch of local units (dd::kLocalShare) on both classes. Until
// seed 001 has measured a split, the model's (seed 000 eq. (7), whole units); then seed 001's
// alpha as a count of units, in whole rounds of the CPU workers (dd::whole_rounds). Never more
// than the CPU class can end within the GPU class's time for the whole batch. A unit's time on
// the GPU class is the batch's makespan over its units when that class last ran it alone: the
// unit's transfers in and out are most of it (a strip's kernels take a fraction of its PCIe
// time), and StarPU's models time kernels only.
// On a core: the cost model's times (arch_us) summed over the unit's tasks. Under batch_mutex.
void plan_units(Policy& p, const BatchEnd& b, Opened& opened, bool cold) {
  CodeletState* dominant = b.dominant;
  const auto n = std::size_t(std::max(0L, p.split.batch_units.exchange(0)));
  p.split.batch_urgent = 0;
  const double local = p.split.local_work.exchange(0), all = p.split.unit_work.exchange(0);
  const double cpu = p.split.cpu_unit_us.exchange(0);
  int k[2] = {0, 0};
  for (const WorkerSlot& s : p.workers) k[s.gpu] += s.member ? 1 : 0;
  dd::UnitPlan plan;
  p.split.last_plan.clear();
  if (!cold && n >= 2 && b.cpu_share < kAloneShare && b.makespan_us > 0) opened.gpu_unit_us = b.makespan_us / double(n);
  if (dominant && n >= 2 && all > 0 && local >= dd::kLocalShare * all && k[0] > 0 && k[1] > 0 &&
      std::isfinite(cpu) && cpu > 0 && std::isfinite(opened.gpu_unit_us)) {
    const double cu = cpu / double(n), gu = opened.gpu_unit_us;
    const std::size_t model = dd::model_cpu_units(n, cu, k[0], gu, 1);
    const std::size_t most = dd::max_cpu_units(n, cu, k[0], gu, 1);
    DtpsController& ctl = p.dtps.controller(dominant->name);
    ctl.start_at(double(model) / double(n));
    const std::size_t asked = std::size_t(std::llround(ctl.alpha() * double(n)));
    const std::size_t ran = opened.plan.splits() && opened.plan.units == n ? opened.plan.cpu : 0;
    plan = {n, dd::whole_rounds(n, asked, k[0], most, ran, b.t_cpu_us, b.t_gpu_us)};
    char buf[200];
    std::snprintf(buf, sizeof buf, "%zu of %zu units to the CPU class (model %zu, seed 001 %zu, at most %zu: a unit %.3f ms on a core, %.3f ms on the GPU class)",
                  plan.splits() ? plan.cpu : 0, n, model, asked, most, cu / 1e3, gu / 1e3);
    p.split.last_plan = buf;
  }
  opened.plan = plan;
}

// seed 001 §1.3 at a batch end: the delay coefficient from the classes' times corrects the
// CPU/GPU split of the batch's dominant codelet. A class's time is its busiest worker's time
// running tasks, not its finish time: in a task graph each class waits on the other's results,
// and finish times come out equal whatever the split. Under batch_mutex.
// `job_end`: when the program ended the batch itself (its results home: the copies after the
// last task count), else NaN and the batch ends with its last task. `cold`: the first batch
// its opening codelet opened.
BatchEnd dtps_feedback(Policy& p, double job_end, bool cold) {
  CodeletState* dominant = nullptr;
  double most = 0;
  p.codelets.each([&](CodeletState& c) {
    double work = 0;
    for (std::size_t w = 0; w < p.workers.size(); ++w) work += get(c.done[w].batch_work);
    if (work > most) most = work, dominant = &c;
  });
  if (!dominant) return {};
  double busy[2] = {0, 0}, work[2] = {0, 0}, last[2] = {0, 0};
  for (const WorkerSlot& s : p.workers)
    if (s.member) {
      busy[s.gpu] = std::max(busy[s.gpu], get(s.batch.busy_us));
      work[s.gpu] += get(s.batch.work);
      last[s.gpu] = std::max(last[s.gpu], get(s.batch.end_us));
    }
  DtpsController& ctl = p.dtps.controller(dominant->name);
  const double total = work[0] + work[1];
  const double idle = get(p.batch.idle_since);
  const double start = get(p.batch.start_us), end = std::isfinite(job_end) ? job_end : idle >= 0 ? idle : now_us();
  // The batch's own time: not the gaps it waited with nothing in flight (another rank's halos).
  const double waited = get(p.batch.waited_us), makespan = std::max(0.0, end - start - waited);
  // Split by units, the classes barely wait on each other (one boundary of halos), so each
  // class's time is when it finished: busy time would miss the GPU's transfers, most of a
  // strip's time there. The class that ends the batch is charged its end, copies home
  // included; the other its last task's end; each less the batch's waits (all of them for the
  // earlier class too: a wait with nothing in flight comes before some of its tasks).
  if (open_plan(p).splits() && last[0] > 0 && last[1] > 0) {
    const int late = last[1] >= last[0] ? 1 : 0;
    busy[late] = makespan;
    busy[1 - late] = std::max(0.0, last[1 - late] - start - waited);
  }
  // A cold batch's makespan says little of the next ones': the makespan guard does not see it.
  const DtpsUpdate u = ctl.end_batch(busy[0], busy[1], total > 0 ? work[0] / total : ctl.alpha(),
                                     makespan > 0 && !cold ? total / makespan : NAN);
  // Seed 001's split is the dominant codelet's: the others keep their own speeds (a tiled
  // factorization's panel codelet belongs on the CPUs whatever the GEMM's split). When the
  // makespan guard sends the job to one class alone, every codelet the batch ran goes there
  // (else the other class would still run some), and back to its own speeds after.
  const bool guard = u.kind == DtpsCase::Probe || u.kind == DtpsCase::Guarded;
  const double lo = p.dtps.config().min_share;
  const bool alone = guard && (ctl.alpha() <= lo || ctl.alpha() >= 1 - lo);
  if (ctl.turn() > 0 || guard) dominant->alpha = ctl.alpha(), dominant->stale = true;
  if (guard)
    p.codelets.each([&](CodeletState& c) {
      double w = 0;
      for (std::size_t i = 0; i < p.workers.size(); ++i) w += get(c.done[i].batch_work);
      if (&c != dominant && w > 0) c.alpha = alone ? ctl.alpha() : -1.0, c.stale = true;
    });
  p.last_dtps = std::string(to_string(u.kind)) + (u.reason.empty() ? "" : ": " + u.reason);
  p.warm_ups += u.warm_up ? 1 : 0;
  if (p.cfg.verbose)
    std::fprintf(stderr,
                 "fnndtps: batch %d %s: makespan %.3f ms (%.3f waited), T_cpu %.3f ms T_gpu %.3f ms, m %.3f (%s%s%s) "
                 "alpha %.4f -> %.4f\n",
                 p.batch.ended, dominant->name.c_str(), makespan / 1e3, waited / 1e3, busy[0] / 1e3, busy[1] / 1e3, u.m_before,
                 to_string(u.kind), u.reason.empty() ? "" : ": ", u.reason.c_str(), u.alpha_before, ctl.alpha());
  return {dominant, makespan, total > 0 ? work[0] / total : NAN, busy[0], busy[1]};
}

}  // namespace sched
