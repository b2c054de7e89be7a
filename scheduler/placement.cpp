#include "scheduler/placement.hpp"

#include <starpu.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "scheduler/locks.hpp"
#include "scheduler/task_costs.hpp"
#include "scheduler/task_info.hpp"

namespace sched {

using namespace state;

// What placing the task on `node` costs in allocations, in us: the bytes of the buffers it owns
// that have no allocation there yet. Only main memory on a node with GPUs counts: StarPU pins
// what it allocates there (cudaHostAlloc, its default flags; ~650 us per MiB, StarPU's own
// figure for SimGrid), while a GPU's buffers come from StarPU's allocation cache. No transfer
// time shows this cost: a core starting a unit whose work strips exist only on a GPU pays it.
double alloc_us(starpu_task* task, unsigned node) {
  if (starpu_node_get_kind(node) != STARPU_CPU_RAM) return 0;
  static const bool pinning = [] {
    const char* off = std::getenv("STARPU_DISABLE_PINNING");
    return !(off && std::atoi(off) > 0);
  }();
  if (!pinning) return 0;
  const double bytes = task_info::unallocated_bytes(task, node);
  return bytes * (kPinUsPerMiB / double(1 << 20));
}

// What pop weighs among the ready tasks of the head's priority (0: take it): the buffers not
// yet on the worker's node (dmdar), and on a core, under one more, the share of the task's
// bytes that need new main memory. A unit's later passes mostly touch what its earlier ones
// wrote and go first; another unit's first pass, which allocates all it writes, waits until
// nothing else is ready. Without it a core ran every unit's first pass before any second (the
// first passes are pushed first, at the same priority), and main memory would hold all the
// units' work strips at once.
double pop_cost(const Policy& p, const WorkerSlot& s, starpu_task* task) {
  const double missing = p.one_node ? 0.0 : task_info::missing_on(task, s.node);
  if (starpu_node_get_kind(s.node) != STARPU_CPU_RAM) return missing;
  return missing + 0.5 * task_info::unallocated_share(task, s.node);
}

// Whether worker w can run the task (its context aside): StarPU's answer, cached per codelet
// for tasks that carry no restriction of their own (no workerids, no can_execute, the
// codelet's `where`): the answer then depends on the worker's implementations only. Workers
// blocked in a parallel context are left out by the collection's parallel-task iterator
// already; under STARPU_DATA_LOCALITY_ENFORCE the answer depends on the data: not cached.
bool can_run(const Policy& p, CodeletState& c, starpu_task* task, int w) {
  if (!p.cache_eligibility || task->workerids_len || task->cl->can_execute || uint32_t(task->where) != task->cl->where)
    return starpu_worker_can_execute_task_first_impl(unsigned(w), task, nullptr);
  signed char e = c.eligible[w].load(std::memory_order_relaxed);
  if (e < 0) {
    e = starpu_worker_can_execute_task_first_impl(unsigned(w), task, nullptr) ? 1 : 0;
    c.eligible[w].store(e, std::memory_order_relaxed);
  }
  return e == 1;
}

TaskKey task_key(starpu_task* task) {
  starpu_perfmodel* m = task->cl->model;
  TaskKey k;
  k.footprint = starpu_task_footprint(m, task, nullptr, 0);
  if (task->flops > 0) k.footprint = starpu_hash_crc32c_be_n(&task->flops, sizeof task->flops, k.footprint);
  k.work = task->flops > 0 ? task->flops : m && m->size_base ? double(m->size_base(task, 0)) : task_info::work(task);
  if (!(k.work > 0)) k.work = 1;
  return k;
}

// The task's expected time on worker w's arch (task_costs.hpp): its footprint's measured mean
// there; else StarPU's per-footprint history where the codelet has a model (an earlier run
// under any policy calibrated it, or the program's own cost function); else the arch's fit of
// fixed + work / throughput, else its prior. `known`: from one of the first two, the task's
// own time rather than a line through other sizes or a peak rate.
double arch_us(Policy& p, CodeletState& c, starpu_task* task, unsigned ctx, int w, const TaskKey& k,
               bool* known) {
  const std::size_t a = p.archs.of[std::size_t(w)];
  if (known) *known = true;
  {
    ReadLock g(c.costs_lock);
    double us = 0;
    if (c.costs.size_us(a, k.footprint, &us)) return us;
  }
  if (task->cl->model) {
    const double len = starpu_task_worker_expected_length(task, unsigned(w), ctx, 0);
    if (std::isfinite(len) && len > 0) return len;
  }
  if (known) *known = false;
  ReadLock g(c.costs_lock);
  return c.costs.fitted_us(a, k.work).us;
}

// The class the task runs on alone (1 GPU, 0 CPU, -1 both: kMinCoRunGain), from each class's
// throughput for this very task (the sum of its workers' 1 / expected time) where every arch
// that can run it knows its time (arch_us: a measured size, or the program's model); else the
// codelet's rates (CodeletState::alone), since a prior or a line through other sizes compares
// the classes worse than D / T does. A program's own model thus decides from its first task:
// a class the rates send nothing to is never timed, so its prior would never be corrected.
int alone_class(Policy& p, CodeletState& c, starpu_task* task, unsigned ctx, const TaskKey& k, ArchCosts& costs) {
  if (p.gpu_nodes.load(std::memory_order_relaxed) == 0) return -1;
  double cls[2] = {0, 0};
  starpu_worker_collection* workers = starpu_sched_ctx_get_worker_collection(ctx);
  starpu_sched_ctx_iterator it;
  workers->init_iterator_for_parallel_tasks(workers, &it, task);
  while (workers->has_next(workers, &it)) {
    const int w = int(workers->get_next(workers, &it));
    const WorkerSlot& s = p.workers[std::size_t(w)];
    if (!s.member || !can_run(p, c, task, w)) continue;
    bool known = false;
    const double us = costs.of(p, c, task, ctx, w, k, &known);
    if (!known) return c.alone.load(std::memory_order_relaxed);
    cls[s.gpu ? 1 : 0] += 1 / std::max(us * get(c.rel[std::size_t(w)]), 1e-9);
  }
  if (cls[0] <= 0 || cls[1] <= 0) return -1;  // one class cannot run it: nothing to choose
  return std::min(cls[0], cls[1]) < kMinCoRunGain * std::max(cls[0], cls[1]) ? (cls[1] > cls[0] ? 1 : 0) : -1;
}

// Whether a task the CPU class would run alone stays on the GPU class, its inputs being valid
// on a GPU only: a core would read them over the bus, by a copy StarPU's CUDA worker makes on
// its own thread between the GPU's tasks, and the GPU's next task writing them would wait for
// it (a block a GPU updates, whose face a short task saves for a neighbour). It stays where
// the best GPU's own time, its transfers included, beats the best core's time plus the copy.
bool held_by_gpu(Policy& p, CodeletState& c, starpu_task* task, unsigned ctx, const TaskKey& k, ArchCosts& costs) {
  if (task_info::missing_on(task, STARPU_MAIN_RAM) == 0) return false;
  double best[2] = {HUGE_VAL, HUGE_VAL};
  std::array<double, STARPU_MAXNODES> transfer;
  transfer.fill(-1);
  starpu_worker_collection* workers = starpu_sched_ctx_get_worker_collection(ctx);
  starpu_sched_ctx_iterator it;
  workers->init_iterator_for_parallel_tasks(workers, &it, task);
  while (workers->has_next(workers, &it)) {
    const int w = int(workers->get_next(workers, &it));
    const WorkerSlot& s = p.workers[std::size_t(w)];
    if (!s.member || !can_run(p, c, task, w)) continue;
    double& tr = transfer[s.node];
    if (tr < 0) tr = std::max(0.0, starpu_task_expected_data_transfer_time_for(task, unsigned(w)));
    double& b = best[s.gpu ? 1 : 0];
    b = std::min(b, costs.of(p, c, task, ctx, w, k) * get(c.rel[std::size_t(w)]) + tr);
  }
  return best[1] < best[0];
}

// Worker w's own expected time: its arch's x rel[w], a slower (or busier) worker of the arch
// taking longer. What the policy plans with multiplies it by scale[w] (the speed source).
double base_us(Policy& p, CodeletState& c, starpu_task* task, unsigned ctx, int w, const TaskKey& k) {
  return arch_us(p, c, task, ctx, w, k) * get(c.rel[std::size_t(w)]);
}

}  // namespace sched
