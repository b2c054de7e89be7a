#include "scheduler/batches.hpp"

#include <cstdio>
#include <mutex>

#include "scheduler/dtps_feedback.hpp"
#include "scheduler/report.hpp"

namespace sched {

using namespace state;

// Ends the batch: DTPS feedback and the next batch's cuts; training is left to an idle worker
// (train_models). `force`: also with tasks in flight (an idle gap passed, or the program said
// so). `job_end`: see dtps_feedback.
void end_batch(Policy& p, bool force, double job_end) {
  std::lock_guard<Mutex> g(p.batch_mutex);
  if (!p.batch.open || (!force && p.batch.pending.load() != 0)) return;
  ++p.batch.ended;
  if (uses_dtps(p)) {
    Opened& opened = p.split.plans[p.split.opener];
    const bool cold = opened.batches++ == 0;
    plan_units(p, dtps_feedback(p, job_end, cold), opened, cold);
  }
  if (p.cfg.verbose) report::batch(p);
  if (p.cfg.verbose && !p.split.last_plan.empty()) std::fprintf(stderr, "fnndtps:   next batch: %s\n", p.split.last_plan.c_str());
  p.codelets.each([&](CodeletState& c) {  // atomics only: no codelet's mutex (train_models)
    if (uses_dtps(p)) set_cut(p, c);
    for (std::size_t w = 0; w < p.workers.size(); ++w) c.done[w].batch_work = 0;
  });
  for (WorkerSlot& s : p.workers) s.batch.busy_us = 0, s.batch.work = 0, s.batch.end_us = 0;
  p.batch.open = false;
  p.batch.train_due = uses_fnn(p);  // only the FNN policies have models to train
}

// At a push: a batch starts when none is open; an idle gap longer than the debounce since the
// last task ended closes the old one first (blocking drivers do not poll to notice it), and a
// shorter one (or any, once the program ends its batches) is time the batch waited.
void note_push(Policy& p, starpu_task* task, double now) {
  const double idle = p.batch.idle_since.load(std::memory_order_relaxed);
  if (idle >= 0) {
    if (now - idle >= p.cfg.batch_gap_us && p.batch.open && !p.batch.program_ends.load(std::memory_order_relaxed))
      end_batch(p, true);
    else if (p.batch.open.load(std::memory_order_relaxed))
      add_shared(p.batch.waited_us, now - idle);
    p.batch.idle_since.store(-1, std::memory_order_relaxed);
  }
  if (!p.batch.open.load(std::memory_order_relaxed)) {
    std::lock_guard<Mutex> g(p.batch_mutex);
    if (!p.batch.open) {
      p.batch.open = true;
      p.batch.start_us = now;
      p.batch.waited_us = 0;
      p.batch.id.fetch_add(1, std::memory_order_relaxed);
      p.split.opener = task->cl;  // its plan, if the last batch it opened left one
      const auto plan = p.split.plans.find(task->cl);
      p.split.plan_units = plan != p.split.plans.end() ? plan->second.plan.units : 0;
      p.split.plan_cpu = plan != p.split.plans.end() ? plan->second.plan.cpu : 0;
      p.codelets.each([](CodeletState& c) { c.stale = true; });  // re-predict for the new batch
    }
  }
}

// A worker found nothing to do: whether the batch should end, nothing having been in flight for
// the debounce gap.
bool batch_end_due(Policy& p, double now) {
  if (p.batch.pending.load(std::memory_order_relaxed) != 0 || p.batch.program_ends.load(std::memory_order_relaxed)) return false;
  double idle = p.batch.idle_since.load(std::memory_order_relaxed);
  if (idle < 0) {
    p.batch.idle_since.compare_exchange_strong(idle, now);
    return false;
  }
  return now - idle >= p.cfg.batch_gap_us && p.batch.open.load(std::memory_order_relaxed);
}

}  // namespace sched
