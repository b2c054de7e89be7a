// The five policies of the plugin (DESIGN §6): one mechanism, five speed sources (cost.hpp).
// This file holds the StarPU callbacks and the policy tables; beside it, what they share:
// state.hpp (codelets, workers, the batch), queue.hpp (a worker's queue), fnn_speeds (a
// codelet's entry and saved state, live features, speeds, FNN training), placement (what a
// push compares), dtps_feedback (seed 001's cuts, unit plans and feedback), batches (open and
// end), units.hpp (unit ownership), task_info (a task's buffers), report (summary, decision).
//   push  the worker of earliest expected finish (its queued tasks of an equal or higher
//         priority, transfer from StarPU's bus model, work / speed) among those that can run
//         this task; its inputs prefetched there
//   pop   the first task of the head's priority whose data is on the worker's node (dmdar)
//   idle  fnn, fnn-dtps: take a queued task from a worker that slipped behind its schedule,
//         the one with the largest remaining time, when it would end sooner here (seed 000 eq. 8)
//   batch the work between two idle moments: DTPS feedback at its end, then FNN training on
//         an idle worker
//
// Locking (StarPU's conventions, as deque_modeling_policy_data_aware.c and lws):
// - A worker's queue and its exp_len, nqueued are written under the queue's own mutex (as
//   eager keeps its fifo under a policy mutex, one per worker here), taken relaxed from a
//   worker's thread. Not StarPU's worker lock: that one waits until the worker leaves its
//   scheduling operation, and an idle worker is in one almost all the time it polls.
//   Re-balancing trylocks the victim's queue and gives up when busy. No global lock on push.
// - Others read exp_len, pipe_end, slip, back_end, nqueued and the queue's priority range unlocked:
//   a stale read misplaces one task, as in dmda, and never loses one. A push of a priority
//   inside a queue's range scans that queue under its mutex (dmdas takes the worker's lock).
// - pre_exec and post_exec run on the worker's thread and write only its own slot.
// - A codelet's model, samples and speeds are under its own mutex; push only trylocks it (to
//   refresh speeds) and otherwise reads the speeds' atomics.
// - Batches end under the batch mutex, which push takes only when a batch starts or ends, and
//   then take no codelet's mutex; training takes a codelet's mutex, then the batch mutex.
// - Wakes: under blocking drivers the chosen worker, after the queue's unlock, by
//   starpu_wake_worker_relax_light as eager does (a worker in its scheduling operation is told
//   to stay awake instead of being waited for). Under non-blocking drivers idle workers poll
//   pop, and a CPU worker long idle naps between polls on its slot's condition (nap), which
//   the push signals.
// - No C++ exception leaves a callback: each entry point catches, reports one line, aborts.
#include <starpu.h>
#include <starpu_scheduler.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <ctime>
#include <string>
#include <vector>

#include "fnn/fnn.hpp"
#include "fnn/io.hpp"
#include "fnn/text.hpp"
#include "scheduler/batches.hpp"
#include "scheduler/config.hpp"
#include "scheduler/cost.hpp"
#include "scheduler/dtps.hpp"
#include "scheduler/dtps_dispatch.hpp"
#include "scheduler/dtps_feedback.hpp"
#include "scheduler/emulation.hpp"
#include "scheduler/fnn_speeds.hpp"
#include "scheduler/locks.hpp"
#include "scheduler/placement.hpp"
#include "scheduler/plugin.hpp"
#include "scheduler/probe.hpp"
#include "scheduler/queue.hpp"
#include "scheduler/report.hpp"
#include "scheduler/state.hpp"
#include "scheduler/task_costs.hpp"
#include "scheduler/task_info.hpp"
#include "scheduler/units.hpp"

namespace sched {
namespace {

using namespace state;

// Every live instance (one per scheduling context), for fnndtps_end_batch. File-local, not an
// `inline` variable of state.hpp: under SMPI (simulated ranks in one process, each with its own
// copy of the globals) the ranks then read each other's policies (smpi_lwt's model shares).
Mutex registry_mutex;
std::vector<Policy*> registry;

// ------------------------------------------------------------------ StarPU callbacks
void init(unsigned ctx, SpeedSource source) {
  try {
    const std::size_t n = starpu_worker_get_count();
    auto* p = new Policy(ctx, source, n);
    p->cfg = Config::from_env();
    // Every policy but `even` (the pure division, seed 000 Fig. 1) moves work to a worker that
    // runs dry (seed 000 eq. 8): a program that pushes all its tasks at once is otherwise held
    // to its first placement, however its model misjudged the workers.
    p->rebalance = p->cfg.rebalance >= 0 ? p->cfg.rebalance == 1 : source != SpeedSource::Even;
    p->one_node = starpu_memory_nodes_get_count() == 1;
    const char* locality = starpu_getenv("STARPU_DATA_LOCALITY_ENFORCE");
    p->cache_eligibility = !locality || std::atoi(locality) == 0;
    std::vector<WorkerSpec> specs;
    for (std::size_t w = 0; w < n; ++w) {
      WorkerSlot& s = p->workers[w];
      s.id = int(w);
      const bool cuda = starpu_worker_get_type(int(w)) == STARPU_CUDA_WORKER;
      s.gpu = cuda || emu::gpu_class(int(w));
      s.cuda = cuda;
      s.node = starpu_worker_get_memory_node(unsigned(w));
      s.running.reserve(8);
      s.fnn.pending.reserve(kMergeEvery);
      WorkerSpec spec;
      spec.kind = cuda ? WorkerKind::Cuda : WorkerKind::Cpu;
      if (cuda) {
        spec.cuda_device = starpu_worker_get_devid(int(w));
      } else if (const int bind = starpu_worker_get_bindid(int(w)); bind >= 0) {
        if (const int os = starpu_get_pu_os_index(unsigned(bind)); os >= 0) spec.cpus.push_back(unsigned(os));
      }
      specs.push_back(spec);
    }
    if (emu::last_gpu_class_worker() >= int(n))
      throw std::invalid_argument("FNNDTPS_EMULATED_GPUS names worker " + std::to_string(emu::last_gpu_class_worker()) +
                                  " but StarPU has " + std::to_string(n) + " workers");
    if (emu::last_slowdown_worker() >= int(n))
      throw std::invalid_argument("FNNDTPS_SLOWDOWN names worker " + std::to_string(emu::last_slowdown_worker()) +
                                  " but StarPU has " + std::to_string(n) + " workers");
    p->probe = std::make_unique<Probe>(specs, probe_options());
    p->live.features.resize(n);
    for (std::size_t w = 0; w < n; ++w) p->workers[w].fnn.peak_F = p->probe->static_features(w).F;
    // The cost model's archs: the CPU cores alike, each GPU its own (task_costs.hpp).
    p->archs.worker_peak.resize(n);
    p->archs.of.resize(n);
    for (std::size_t w = 0; w < n; ++w) {
      const WorkerSlot& s = p->workers[w];
      const std::string arch = s.cuda ? "cuda" + std::to_string(starpu_worker_get_devid(int(w))) : "cpu";
      const auto it = std::find(p->archs.names.begin(), p->archs.names.end(), arch);
      p->archs.of[w] = std::size_t(it - p->archs.names.begin());
      if (it == p->archs.names.end()) p->archs.names.push_back(arch), p->archs.peak.push_back(0), p->archs.gpu.push_back(s.cuda);
      p->archs.worker_peak[w] = s.fnn.peak_F > 0 ? s.fnn.peak_F : 1.0;
      p->archs.peak[p->archs.of[w]] = std::max(p->archs.peak[p->archs.of[w]], p->archs.worker_peak[w]);
    }
    if (p->archs.names.size() > kMaxArchs) throw std::runtime_error("more than 31 GPUs");
    if (uses_dtps(*p)) {
      try {
        if (p->dtps.load(p->cfg.model_dir))
          p->log.push_back("dtps: ratios loaded from " + DtpsStore::file_in(p->cfg.model_dir).string());
      } catch (const std::exception& e) {
        warn(*p, std::string("saved DTPS ratios ignored, starting afresh (") + e.what() +
                     "); delete the file or set FNNDTPS_MODEL_DIR");
      }
    }
    starpu_sched_ctx_set_policy_data(ctx, p);
    // The queues sort by priority: the application may use any integer (as dmdas).
    if (!starpu_sched_ctx_min_priority_is_set(ctx)) starpu_sched_ctx_set_min_priority(ctx, INT_MIN);
    if (!starpu_sched_ctx_max_priority_is_set(ctx)) starpu_sched_ctx_set_max_priority(ctx, INT_MAX);
    std::lock_guard<Mutex> g(registry_mutex);
    registry.push_back(p);
  } catch (const std::invalid_argument& e) {  // a bad FNNDTPS_ setting
    std::fprintf(stderr, "fnndtps: %s\n", e.what());
    std::exit(2);
  } catch (const std::exception& e) {
    fail("init", e);
  }
}

void set_classes(Policy& p) {
  bool has[2] = {false, false}, cpu = false;  // classes (emulated GPUs included); real CPU workers
  std::vector<unsigned> nodes;
  int members = 0;
  for (const WorkerSlot& s : p.workers)
    if (s.member) {
      ++members;
      has[s.gpu] = true, cpu = cpu || !s.cuda;
      if (s.cuda && std::find(nodes.begin(), nodes.end(), s.node) == nodes.end()) nodes.push_back(s.node);
    }
  p.has_cpu = cpu;
  p.lone = members == 1;
  p.gpu_nodes = int(nodes.size());
  std::lock_guard<Mutex> g(p.batch_mutex);
  p.dtps.set_classes(has[0], has[1]);
}

void add_workers(unsigned ctx, int* ids, unsigned n) {
  Policy* p = policy_of(ctx);
  for (unsigned i = 0; i < n; ++i) p->workers[std::size_t(ids[i])].member = p->workers[std::size_t(ids[i])].ever_member = true;
  set_classes(*p);
  if (uses_fnn(*p)) {
    p->live.sampled_us = -1e300;
    sample_features(*p, now_us());
  }
}

int push(starpu_task* task);

// A removed worker's queued tasks go to the context's other workers.
void remove_workers(unsigned ctx, int* ids, unsigned n) {
  Policy* p = policy_of(ctx);
  std::vector<starpu_task*> orphans;
  for (unsigned i = 0; i < n; ++i) {
    WorkerSlot& s = p->workers[std::size_t(ids[i])];
    QueueLock g(s.queue_mutex);
    s.member = false;
    QueuedTask q;
    while (s.queue.pop_back_if(SIZE_MAX, &q, [](const QueuedTask&) { return true; })) {
      orphans.push_back(static_cast<starpu_task*>(q.task));
      p->batch.pending.fetch_sub(1);
      starpu_sched_ctx_list_task_counters_decrement(ctx, s.id);
    }
    publish(s);
  }
  set_classes(*p);
  for (auto it = orphans.rbegin(); it != orphans.rend(); ++it) push(*it);
}

void deinit(unsigned ctx) {
  Policy* p = policy_of(ctx);
  try {
    {
      std::lock_guard<Mutex> g(registry_mutex);
      registry.erase(std::remove(registry.begin(), registry.end(), p), registry.end());
    }
    for (std::size_t w = 0; w < p->workers.size(); ++w) merge_samples(p->workers[w], w, true);  // workers are stopped
    end_batch(*p, true);
    train_models(*p);  // what the last batch taught, before it is saved
    if (p->cfg.save) {
      std::error_code ec;
      std::filesystem::create_directories(p->cfg.model_dir, ec);
      p->codelets.each([&](CodeletState& c) {
        try {
          fnn::text::replace_file(model_path(*p, c.name, kCostsExt), c.costs.to_text(c.name));
          p->log.push_back("costs " + c.name + ": saved to " + model_path(*p, c.name, kCostsExt));
        } catch (const std::exception& e) {
          warn(*p, "task costs of " + c.name + " not saved (" + e.what() + "); check FNNDTPS_MODEL_DIR");
        }
        if (!c.model || !c.trained) return;
        try {
          fnn::save_model(*c.model, model_path(*p, c.name));
          p->log.push_back("model " + c.name + ": saved to " + model_path(*p, c.name));
        } catch (const std::exception& e) {
          warn(*p, "model " + c.name + " not saved (" + e.what() + "); check FNNDTPS_MODEL_DIR");
        }
      });
      if (uses_dtps(*p) && p->dtps.size() > 0) {
        try {
          p->dtps.save(p->cfg.model_dir);
          p->log.push_back("dtps: ratios saved to " + DtpsStore::file_in(p->cfg.model_dir).string());
        } catch (const std::exception& e) {
          warn(*p, std::string("DTPS ratios not saved (") + e.what() + "); check FNNDTPS_MODEL_DIR");
        }
      }
    }
    if (p->cfg.summary) report::summary(*p);
  } catch (const std::exception& e) {
    fail("deinit", e);
  }
  delete p;
}

// Prefetches the task's inputs to worker `w`'s node, then queues it there. Once queued the task
// may run and be freed at once: nothing here touches it after the unlock.
void enqueue(Policy& p, starpu_task* task, CodeletState& c, unsigned ctx, int w, double predicted, double work,
             double planned_end) {
  WorkerSlot& s = p.workers[std::size_t(w)];
  task->sched_data = &c;  // ours: pre_exec and post_exec count it
  if (!p.one_node && STARPU_TASK_GET_NBUFFERS(task) > 0 && starpu_get_prefetch_flag())
    starpu_prefetch_task_input_for(task, w);
  {
    QueueLock g(s.queue_mutex);
    s.queue.push(QueuedTask{task, task->priority, predicted, work, &c, planned_end});
    add(s.exp_len, predicted);
    publish(s);
    starpu_push_task_end(task);
  }
  starpu_sched_ctx_list_task_counters_increment(ctx, w);
#if !defined(STARPU_NON_BLOCKING_DRIVERS) || defined(STARPU_SIMGRID)
  starpu_wake_worker_relax_light(w);
#else
  // The queue's store, then the nap flag's load (nap: the flag's store, then the queue's load).
  if (p.cfg.nap_us <= 0) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (s.napping.load(std::memory_order_relaxed)) {
    std::lock_guard<Mutex> g(s.nap_mutex);
    STARPU_PTHREAD_COND_SIGNAL(&s.nap_cond);
  }
#endif
}

// Under non-blocking drivers (StarPU's default build) an idle worker polls pop every few us and
// never sleeps (driver_common.c), and a node's idle cores polling beside the thread that drives
// the GPU slow it. A CPU worker idle for kNapAfterUs waits up to nap_us on its slot's condition
// between polls, relaxed so that StarPU can hand it work; a push to it signals it (enqueue).
// A wake lost to the race of the flag and the queue costs at most nap_us.
void nap(const Policy& p, WorkerSlot& s, double now) {
#if defined(STARPU_NON_BLOCKING_DRIVERS) && !defined(STARPU_SIMGRID)
  if (s.cuda || p.cfg.nap_us <= 0) return;
  if (s.idle_since_us < 0) s.idle_since_us = now;
  if (now - s.idle_since_us < kNapAfterUs) return;
  timespec until{};
  clock_gettime(CLOCK_REALTIME, &until);  // pthread_cond_timedwait's default clock
  const long ns = until.tv_nsec + long(p.cfg.nap_us * 1e3);
  until.tv_sec += ns / 1000000000L;
  until.tv_nsec = ns % 1000000000L;
  starpu_worker_relax_on();
  {
    std::lock_guard<Mutex> g(s.nap_mutex);
    s.napping.store(true, std::memory_order_seq_cst);
    if (s.nqueued.load(std::memory_order_seq_cst) == 0) starpu_pthread_cond_timedwait(&s.nap_cond, &s.nap_mutex.m, &until);
    s.napping.store(false, std::memory_order_relaxed);
  }
  starpu_worker_relax_off();
#else
  (void)p, (void)s, (void)now;
#endif
}

int push(starpu_task* task) {
  const unsigned ctx = task->sched_ctx;
  Policy* p = policy_of(ctx);
  const int self = starpu_worker_get_id();  // -1: the application's thread
  std::optional<Timed> timed;
  if (self >= 0) timed.emplace(p->workers[std::size_t(self)].spent[kPush]);
  else timed.emplace(p->app_spent);
  try {
    const double now = now_us();
    p->batch.pending.fetch_add(1);
    note_push(*p, task, now);
    CodeletState& c = codelet_state(*p, task);
    const double work = task_info::work(task);
    const TaskKey key = task_key(task);
    refresh_speeds(*p, c, now);
    const bool data = !p->one_node && STARPU_TASK_GET_NBUFFERS(task) > 0;
    // The transfer time depends on the memory node only: compute it once per node.
    std::array<double, STARPU_MAXNODES> transfer, alloc;
    transfer.fill(-1);
    alloc.fill(-1);
    // The arch's expected time, once per arch (arch_us), for unit_split, alone_class and the placement.
    ArchCosts arch_cost;
    int best = -1;
    double best_end = 0, best_predicted = 0, best_finish = 0;
    starpu_worker_collection* workers = starpu_sched_ctx_get_worker_collection(ctx);
    starpu_sched_ctx_iterator it;
    // Between GPUs a transfer hidden behind a queue still costs: it takes link bandwidth and,
    // for a chain of tasks on one handle, moves the handle at every step. A GPU pays what it
    // must fetch beyond the GPU that has most of the data (dmda weighs the same transfer in
    // its fitness). One GPU: nothing to compare, nothing charged.
    double least_gpu_transfer = 0;
    const bool gpus_compete = data && p->gpu_nodes.load(std::memory_order_relaxed) > 1;
    if (gpus_compete) {
      least_gpu_transfer = HUGE_VAL;
      workers->init_iterator_for_parallel_tasks(workers, &it, task);
      while (workers->has_next(workers, &it)) {
        const int w = int(workers->get_next(workers, &it));
        WorkerSlot& s = p->workers[std::size_t(w)];
        if (!s.cuda || !s.member || !can_run(*p, c, task, w)) continue;
        double& tr = transfer[s.node];
        if (tr < 0) tr = std::max(0.0, starpu_task_expected_data_transfer_time_for(task, unsigned(w)));
        least_gpu_transfer = std::min(least_gpu_transfer, tr);
      }
    }
    // DTPS's class for a task of a batch of different weights; the other class only where
    // none of that one can run it.
    int only = uses_dtps(*p) && task->flops > 0 ? dispatch_class(c, task, work) : -1;
    int keeper = -1;  // the worker that keeps the task's unit (unit_split)
    // Units are split between classes (DTPS's plan, or where the GPU class started them) only
    // where both have workers: a run on one class pays nothing. `even` divides task by task.
    if (p->source != SpeedSource::Even && only < 0 && data && p->has_cpu.load(std::memory_order_relaxed) &&
        p->gpu_nodes.load(std::memory_order_relaxed) > 0) {
      task_info::Unit unit;
      const UnitTable::Place place = unit_split(*p, c, task, ctx, work, key, arch_cost, unit);
      only = place.cls, keeper = place.owner;
    }
    // No split to follow (DTPS's plan): the faster class alone where the other adds too little.
    // Tasks without data have no transfers nor buffers to contend for: they co-run.
    if (p->source != SpeedSource::Even && only < 0 && data && !open_plan(*p).splits() &&
        p->has_cpu.load(std::memory_order_relaxed)) {
      only = alone_class(*p, c, task, ctx, key, arch_cost);
      if (only == 0 && held_by_gpu(*p, c, task, ctx, key, arch_cost)) only = 1;
      // Nor, without a plan, does a core start data that has no main-memory buffer yet (a
      // transform's work strips, born on the GPU that started them), whatever the classes'
      // rates say: StarPU would pin it there (alloc_us: serialised on the CUDA driver's lock,
      // stalling the GPU's own thread), and then bring it back to the GPU for the unit's later
      // tasks. The program's own buffers (registered in main memory) are not concerned.
      if (only != 1 && p->gpu_nodes.load(std::memory_order_relaxed) > 0) {
        alloc[STARPU_MAIN_RAM] = alloc_us(task, STARPU_MAIN_RAM);  // the loop below reuses it
        if (alloc[STARPU_MAIN_RAM] > 0) only = 1;
      }
    }
    for (int pass = only < 0; pass < 2 && best < 0; ++pass) {
      workers->init_iterator_for_parallel_tasks(workers, &it, task);
      while (workers->has_next(workers, &it)) {
        const int w = int(workers->get_next(workers, &it));
        WorkerSlot& s = p->workers[std::size_t(w)];
        // Its context, task->where, task->workerids and the codelet's can_execute.
        if (!s.member || !can_run(*p, c, task, w) || (pass == 0 && (int(s.gpu) != only || (keeper >= 0 && w != keeper))))
          continue;
        double& tr = transfer[s.node];
        if (tr < 0) tr = data ? std::max(0.0, starpu_task_expected_data_transfer_time_for(task, unsigned(w))) : 0.0;
        // `even` divides the work alone (seed 000 Fig. 1): every worker at the same speed, no
        // fixed cost of its own, which would send data-less tasks to the cheapest arch.
        double run = 0;
        if (p->source == SpeedSource::Even) {
          run = key.work / get(c.speed[std::size_t(w)]);
        } else {
          run = arch_cost.of(*p, c, task, ctx, w, key) * get(c.rel[std::size_t(w)]) * get(c.scale[std::size_t(w)]);
        }
        const double queue_end = std::max(now, get(s.pipe_end)) + queue_wait(s, task->priority);
        // GPUs that compete for a task: its transfer is charged once, as a cost beyond the GPU
        // that holds most of its data (dmda's fitness), not also as a wait before it runs:
        // counted twice, a unit's tasks would never leave the GPUs that ran its first ones.
        const bool compete = gpus_compete && s.cuda;
        const double finish = compete ? std::max(queue_end, now) + run : expected_finish(now, queue_end, tr, run);
        // Without a plan, a unit goes task by task where its task ends first, as in dmda: no
        // class keeps it. A unit held to the class of its first task, or a core charged the
        // unit's way back to the GPU, sends a stencil's blocks to the GPU one by one (its queue
        // runs short between waves of ready tasks) until it runs them all while the cores idle
        // (tests/sim_stencil.c: 1.5-1.9x dmdas's time). The transform's units stay on the GPU
        // by the rules above: their work strips are born there (alloc), their inputs valid
        // there only (held_by_gpu).
        // A transfer the queue hides still moves the data away from where the next tasks on it
        // will look for it: as dmda's fitness (beta = 1), the transfer is charged once more as
        // a penalty, so that a stencil's block stays on the worker class that holds it unless
        // its task ends sooner elsewhere by more than the move.
        double& al = alloc[s.node];
        if (al < 0) al = data && p->gpu_nodes.load(std::memory_order_relaxed) > 0 ? alloc_us(task, s.node) : 0.0;
        const double end = finish + (compete ? tr - least_gpu_transfer : tr) + al;
        // Ties (within kTieUs) go to the worker pushing the task (it ended the task before:
        // no wake, its caches hold the data; as ws pushes to its caller), else to the shorter
        // queue: tasks cheaper than kTieUs (no data, `even`'s tiny work) would all tie.
        const bool tie = best >= 0 && std::fabs(end - best_end) <= kTieUs;
        const bool shorter = best >= 0 && best != self &&
                             s.nqueued.load(std::memory_order_relaxed) <
                                 p->workers[std::size_t(best)].nqueued.load(std::memory_order_relaxed);
        if (best < 0 || (tie ? w == self || shorter : end < best_end))
          best = w, best_end = end, best_predicted = finish - queue_end, best_finish = finish;
      }
    }
    if (best < 0) {
      p->batch.pending.fetch_sub(1);
      return -ENODEV;  // nobody in this context can run it: StarPU reports the task
    }
    enqueue(*p, task, c, ctx, best, best_predicted, work, best_finish);
  } catch (const std::exception& e) {
    fail("push", e);
  }
  return 0;
}

// A task leaving a queue for worker s's thread, with the time its queue planned (slip, in
// post_exec). Tasks StarPU never starts through pre_exec do not pile up: the oldest go.
void note_popped(WorkerSlot& s, const void* task, double planned_us) {
  if (s.popped.size() >= kPoppedKept) s.popped.erase(s.popped.begin());
  s.popped.emplace_back(static_cast<const starpu_task*>(task), planned_us);
}

// seed 000 eq. 8 and steps 1-7 of §3.2: idle worker `w` takes a queued task from the late
// worker with the largest remaining time T_i^r when it would end it sooner here, transfer
// included (threshold x its time here below the time the task waits there).
starpu_task* take_from_busiest(Policy& p, unsigned ctx, int w, double now) {
  WorkerSlot& me = p.workers[std::size_t(w)];
  if (now - me.steal_us < kStealEveryUs) return nullptr;
  me.steal_us = now;
  int victim = -1;
  double most = 0;
  // Only a worker behind the schedule its tasks were pushed with (its queue's last task now
  // ending later than its push planned: cost.hpp): the placement already balanced the
  // expected finishes, and a move on time costs a transfer and draws the unit's later tasks
  // after it.
  // While DTPS splits the batch by units, each class keeps its own (seed 001 sets the split),
  // and a core its units (unit_split): a moved task would run after the thief's own unit.
  const bool split = open_plan(p).splits();
  if (split && !me.gpu) return nullptr;
  // Nor across classes a task of a codelet that runs on one class alone (push, kMinCoRunGain).
  for (WorkerSlot& s : p.workers)
    if (s.member && s.id != w && (!split || s.gpu == me.gpu) && s.nqueued.load(std::memory_order_relaxed) > 0 &&
        s.back_end.load(std::memory_order_relaxed) > 0) {
      const double left = remaining_us(now, get(s.pipe_end), get(s.exp_len), get(s.slip));
      if (behind_plan_us(now, left, get(s.back_end)) > 0 && left > most) most = left, victim = s.id;
    }
  // A queue its owner drains within an idle poll or two is not worth the victim's lock (the
  // submitter may be waiting for it) nor a cold start elsewhere.
  if (victim < 0 || most < kMinStealUs) return nullptr;
  WorkerSlot& v = p.workers[std::size_t(victim)];
  std::unique_lock<Mutex> g(v.queue_mutex, std::try_to_lock);
  if (!g.owns_lock()) return nullptr;  // busy: later
  const double there_end = now + remaining_us(now, get(v.pipe_end), get(v.exp_len), get(v.slip));
  double here = 0;
  QueuedTask q;
  // A codelet held to the victim's class by rates that may predate its timings (push alone
  // refreshes them, and a program may push all its tasks first): its class alone refreshed
  // once unlocked, not its speeds (those move push's placement, by the moment they are taken).
  CodeletState* held = nullptr;
  // Under the victim's lock: the cheap tests first, a few tasks from the back only.
  const bool took = v.member && v.queue.pop_back_if(kStealScan, &q, [&](const QueuedTask& t) {
    // How much later than its push planned it ends there (one of the last: about the queue's end).
    const double late = behind_plan_us(now, there_end - now, t.planned_end);
    if (late <= 0) return false;
    auto* task = static_cast<starpu_task*>(t.task);
    auto& c = *static_cast<CodeletState*>(t.codelet);
    if (me.gpu != v.gpu && c.alone.load(std::memory_order_relaxed) == int(v.gpu)) return held = &c, false;
    // Nor data a core would have to pin first (push).
    const bool data = !p.one_node && STARPU_TASK_GET_NBUFFERS(task);
    const double pin = data && !me.cuda ? alloc_us(task, me.node) : 0.0;
    if (pin > 0 && !split) return false;
    // Nor, without a plan, inputs that are on a GPU only (push's held_by_gpu keeps such tasks
    // there): the unit would cross the bus out and back, and StarPU's CUDA worker
    // runs its node's copies on its own thread, so the GPU's own tasks wait behind them. Unless
    // the task takes the GPU longer than that copy (below): the GPU then gains more time than
    // its thread spends on the copy (inputs prefetched at push make every queued task's data
    // the GPU's alone: a program's independent tasks, all pushed at once).
    const bool gpu_held = !split && !me.cuda && v.cuda && data && task_info::missing_on(task, me.node) > 0;
    // The thief's own expected time, not the policy's plan: a move is taken back only by the
    // next idle moment, and a core's GEMM tile can outlast the GPU's whole queue.
    const TaskKey key = task_key(task);
    const double run = base_us(p, c, task, ctx, w, key) *
                       std::max(1.0, get(c.scale[std::size_t(w)]));
    // Only a slip longer than half the task here: placement by expected finish already
    // balanced the plan, and a move costs a transfer and draws the unit's later tasks after it.
    if (2 * late <= run || p.cfg.threshold * run >= there_end - now) return false;
    if (!starpu_worker_can_execute_task_first_impl(unsigned(w), task, nullptr)) return false;
    const double tr = data ? starpu_task_expected_data_transfer_time_for(task, unsigned(w)) : 0;
    here = std::max(0.0, tr) + run + pin;
    if ((gpu_held && t.predicted_us <= tr) || 2 * late <= here || p.cfg.threshold * here >= there_end - now) return false;
    // Nor where another worker would end it sooner, after its own queue: a core that takes
    // a slowed GPU's unit would end it long after the other GPU, running dry, would have.
    // Its time there counted as here's: transfer, run, and a core's new pinned memory.
    std::array<double, STARPU_MAXNODES> to_node;
    to_node.fill(-1);
    to_node[me.node] = std::max(0.0, tr) + pin;
    for (const WorkerSlot& o : p.workers) {
      if (!o.member || o.id == w || o.id == victim || !can_run(p, c, task, o.id)) continue;
      double& move = to_node[o.node];
      if (move < 0) move = (data ? std::max(0.0, starpu_task_expected_data_transfer_time_for(task, unsigned(o.id))) : 0.0) +
                           (data && !o.cuda ? alloc_us(task, o.node) : 0.0);
      const double o_end = remaining_us(now, get(o.pipe_end), get(o.exp_len), get(o.slip)) + move +
                           base_us(p, c, task, ctx, o.id, key) * std::max(1.0, get(c.scale[std::size_t(o.id)]));
      if (o_end + kTieUs < here) return false;
    }
    return true;
  });
  if (took) {
    add(v.exp_len, -q.predicted_us);
    publish(v);
    starpu_sched_ctx_list_task_counters_decrement(ctx, victim);
  }
  g.unlock();
  if (held && !took) refresh_alone(p, *held);
  if (!took) return nullptr;
  p.moved.fetch_add(1, std::memory_order_relaxed);
  me.pipe_end = std::max(now, get(me.pipe_end)) + here;
  note_popped(me, q.task, here);
  return static_cast<starpu_task*>(q.task);
}

// pop with nothing queued for `w`: a task taken from a late worker, or nullptr after the idle
// worker's duties (sampling, a batch's end, training), each at most so often.
starpu_task* idle_pop(Policy& p, unsigned ctx, int w, double now) {
  WorkerSlot& s = p.workers[std::size_t(w)];
  Timed timed(s.spent[kIdlePop]);
  starpu_task* task = nullptr;
  if (s.member && p.rebalance) task = take_from_busiest(p, ctx, w, now);
  if (task) return task;
  // A CPU worker pops only when it runs nothing: what it started and never saw end were
  // StarPU's internal tasks (no post_exec). With nothing submitted, no worker runs anything.
  if (!s.running.empty() && (!s.cuda || starpu_task_nsubmitted() == 0)) {
    p.batch.pending.fetch_sub(long(s.running.size()));
    if (emu::configured()) p.running_in_class[s.gpu].fetch_sub(int(s.running.size()), std::memory_order_relaxed);
    s.running.clear();
  }
  // Sampling (/proc, NVML) and training take up to milliseconds: an idle CPU worker does
  // them; a GPU's thread samples and ends batches only where no CPU worker is there to,
  // and with nothing in flight (its pipeline may still run a task when it finds its queue
  // empty).
  if (!s.member || (s.cuda && (p.has_cpu.load(std::memory_order_relaxed) ||
                               p.batch.pending.load(std::memory_order_relaxed) != 0)))
    return nullptr;
  // Idle workers poll: the batch counters push and post_exec write are read at most every
  // kIdleCheckUs per worker, not at every poll (the batch gap is milliseconds).
  if (now - s.idle_check_us < kIdleCheckUs) return nullptr;
  s.idle_check_us = now;
  // Sampling and training take a while: relaxed, so that pushes to this worker (which
  // wait while it is in a scheduling operation) go through meanwhile. Its queue is empty
  // and not read again before it returns. Only the FNN reads the live features.
  // A lone worker (the GPU alone) has no placement to predict: its thread would only
  // delay its next pop by the sampling.
  const bool sample = uses_fnn(p) && !p.lone.load(std::memory_order_relaxed) &&
                      now - get(p.live.sampled_us) >= kFeaturesTtlUs;
  // Nor does a GPU's thread train: a first training takes milliseconds a codelet, and the
  // program's next tasks would wait for it. deinit trains what is left.
  const bool due = batch_end_due(p, now), to_train = !s.cuda && p.batch.train_due.load(std::memory_order_relaxed);
  if (sample || due || to_train) {
    starpu_worker_relax_on();
    if (sample) sample_features(p, now);
    if (due) end_batch(p, false);
    if (to_train) train_models(p);
    starpu_worker_relax_off();
  }
  return nullptr;
}

starpu_task* pop(unsigned ctx) {
  Policy* p = policy_of(ctx);
  const int w = starpu_worker_get_id_check();
  WorkerSlot& s = p->workers[std::size_t(w)];
#ifndef STARPU_SIMGRID
  if (s.fnn.clock_state.load(std::memory_order_relaxed) == 0)  // pop runs on the worker's thread
    s.fnn.clock_state.store(pthread_getcpuclockid(pthread_self(), &s.fnn.thread_clock) == 0 ? 1 : 2, std::memory_order_release);
#endif
  try {
    const double now = now_us();
    if (s.nqueued.load(std::memory_order_relaxed) == 0) {
      starpu_task* task = idle_pop(*p, ctx, w, now);
      if (task) s.idle_since_us = -1;
      else nap(*p, s, now);
      return task;
    }
    s.idle_since_us = -1;
    Timed timed(s.spent[kPop]);
    QueuedTask q;
    {
      QueueLock g(s.queue_mutex);
      if (!s.queue.pop_ready(&q, [&](void* t) { return pop_cost(*p, s, static_cast<starpu_task*>(t)); }))
        return nullptr;
      add(s.exp_len, -q.predicted_us);
      publish(s);
    }
    s.pipe_end = std::max(now, get(s.pipe_end)) + q.predicted_us;
    note_popped(s, q.task, q.predicted_us);
    starpu_sched_ctx_list_task_counters_decrement(ctx, w);
    return static_cast<starpu_task*>(q.task);
  } catch (const std::exception& e) {
    fail("pop", e);
  }
}

void pre_exec(starpu_task* task, unsigned ctx) {
  if (!task->sched_data) return;  // not pushed through us (a task given to a worker directly)
  Policy* p = policy_of(ctx);
  const int w = starpu_worker_get_id_check();
  WorkerSlot& s = p->workers[std::size_t(w)];
  Timed timed(s.spent[kPreExec]);
  const double now = now_us();
  auto* c = static_cast<CodeletState*>(task->sched_data);
  // The features at its start, as last sampled (sample_features): no probing on this thread.
  if (c->model) {
    std::unique_lock<Mutex> g(s.fnn.latest_mutex, std::try_to_lock);
    if (g.owns_lock()) s.fnn.features = s.fnn.latest;
  }
  const TaskKey key = task_key(task);
  double planned = 0;
  auto it = std::find_if(s.popped.begin(), s.popped.end(), [&](const auto& e) { return e.first == task; });
  if (it != s.popped.end()) planned = it->second, s.popped.erase(it);
  s.running.push_back(Running{task, c, now, task_info::work(task), s.fnn.features, key.footprint, key.work, planned});
  if (emu::configured()) p->running_in_class[s.gpu].fetch_add(1, std::memory_order_relaxed);
}

// A task's time on worker w into its arch's costs, over w's described rel; rel[w] follows its
// time over the arch's where the arch has other members (observe, task_costs.hpp).
void record_cost(Policy& p, CodeletState& c, int w, const Running& r, double dt) {
  const std::size_t a = p.archs.of[std::size_t(w)];
  bool shared = false;
  for (const WorkerSlot& o : p.workers) shared = shared || (o.member && o.id != w && p.archs.of[std::size_t(o.id)] == a);
  WriteLock g(c.costs_lock);
  double arch = 0;  // stays 0 where the arch has not measured this footprint
  c.costs.size_us(a, r.footprint, &arch);
  const Observed o = observe(dt, c.described[std::size_t(w)], get(c.rel[std::size_t(w)]), arch, shared, kRelEwma);
  c.rel[std::size_t(w)].store(o.rel, std::memory_order_relaxed);
  c.costs.record(a, r.footprint, r.cost_work, o.record_us);
}

// The task's time runs from its start, or from the end of the one before it on this worker
// when StarPU pipelined them (pre_exec of the next before post_exec of this one).
void post_exec(starpu_task* task, unsigned ctx) {
  if (!task->sched_data) return;
  Policy* p = policy_of(ctx);
  const int w = starpu_worker_get_id_check();
  WorkerSlot& s = p->workers[std::size_t(w)];
  Timed timed(s.spent[kPostExec]);
  try {
    auto it = std::find_if(s.running.begin(), s.running.end(), [&](const Running& r) { return r.task == task; });
    if (it == s.running.end()) return;
    task->sched_data = nullptr;
    const Running r = *it;
    double end = now_us();
    double dt = std::max(end - std::max(r.start_us, s.last_end_us), 1e-3);
    // An emulated slowdown (DESIGN §6): (factor - 1) x its time more, before its successors
    // are released (they wait for post_exec).
    if (emu::configured()) {
      const bool corun = p->running_in_class[!s.gpu].load(std::memory_order_relaxed) > 0;
      const double f = emu::stretch(s.id, dt * 1e-6, corun ? emu::corun_factor() : 1);
      if (f > 1) dt *= f, end = now_us();
    }
    s.last_end_us = end;
    s.slip = slip_after(get(s.slip), dt, r.planned_us);
    CodeletState& c = *r.codelet;
    const double rate = r.work / dt;  // seed 000 eq. 5: D / T
    const long runs = c.done[w].runs.fetch_add(1, std::memory_order_relaxed) + 1;  // this one included
    record_cost(*p, c, w, r, dt);
    if (runs <= TaskCosts::kWarmRuns) c.stale = true;  // a first timing changes the speeds most
    if (c.model) s.fnn.pending.push_back(PendingSample{&c, r.features, rate});
    ++s.tasks;
    s.busy_us += dt;
    if (end - s.fnn.window_us >= kFeaturesTtlUs) {  // our own share of its time: the load that is ours
      if (s.fnn.window_us > -1e299) s.fnn.own_busy = std::clamp((s.busy_us - s.fnn.busy_at_window) / (end - s.fnn.window_us), 0.0, 1.0);
      s.fnn.window_us = end;
      s.fnn.busy_at_window = s.busy_us;
    }
    s.work += r.work;
    add(s.batch.busy_us, dt);
    s.batch.end_us = end;
    add(s.batch.work, r.work);
    add(c.done[w].batch_work, r.work);
    add(c.done[w].work, r.work);
    add(c.done[w].busy_us, dt);
    // This task and any started before it on this worker have ended (a worker ends its tasks
    // in order); those never seen ending were StarPU's internal tasks.
    const long ended = long(it - s.running.begin()) + 1;
    s.running.erase(s.running.begin(), it + 1);
    if (emu::configured()) p->running_in_class[s.gpu].fetch_sub(int(ended), std::memory_order_relaxed);
    if (s.running.empty() && s.nqueued.load(std::memory_order_relaxed) == 0) s.pipe_end = end;
    if (s.fnn.pending.size() >= kMergeEvery) merge_samples(s, std::size_t(w), false);
    if (p->batch.pending.fetch_sub(ended) == ended) {
      merge_samples(s, std::size_t(w), false);
      double idle = -1;
      p->batch.idle_since.compare_exchange_strong(idle, end);
    }
  } catch (const std::exception& e) {
    fail("post_exec", e);
  }
}

template <SpeedSource S>
void init_as(unsigned ctx) {
  init(ctx, S);
}

starpu_sched_policy make_policy(const char* name, const char* description, void (*init_fn)(unsigned)) {
  starpu_sched_policy pol{};
  pol.init_sched = init_fn;
  pol.deinit_sched = deinit;
  pol.add_workers = add_workers;
  pol.remove_workers = remove_workers;
  pol.push_task = push;
  pol.pop_task = pop;
  pol.pre_exec_hook = pre_exec;
  pol.post_exec_hook = post_exec;
  pol.policy_name = name;
  pol.policy_description = description;
  pol.worker_type = STARPU_WORKER_LIST;
  pol.prefetches = 1;  // push prefetches each task's inputs itself
  return pol;
}

starpu_sched_policy policies[] = {
    make_policy("fnn-dtps", "FNN-predicted speeds per worker with DTPS feedback on the CPU/GPU split",
                init_as<SpeedSource::FnnDtps>),
    make_policy("fnn", "work in proportion to FNN-predicted computational ability", init_as<SpeedSource::Fnn>),
    make_policy("dtps", "CPU/GPU class split corrected from measured delays (DTPS)", init_as<SpeedSource::Dtps>),
    make_policy("boyer", "work in proportion to measured speeds (D / T), the workers' descriptions before any measurement", init_as<SpeedSource::Boyer>),
    make_policy("even", "equal speeds for every worker (pure division)", init_as<SpeedSource::Even>),
};
starpu_sched_policy* policy_list[] = {&policies[0], &policies[1], &policies[2], &policies[3], &policies[4], nullptr};

}  // namespace

starpu_sched_policy* find_policy(const char* name) {
  if (!name) return nullptr;
  for (starpu_sched_policy* p : policy_list)
    if (p && std::string(p->policy_name) == name) return p;
  return nullptr;
}

starpu_sched_policy** all_policies() { return policy_list; }

bool end_batch_now() { return end_batch_at(now_us()); }

bool end_batch_at(double end_us) {
  std::lock_guard<Mutex> g(registry_mutex);
  bool ended = false;
  for (Policy* p : registry) {
    ended = ended || p->batch.open;
    p->batch.program_ends = true;
    end_batch(*p, true, end_us);
  }
  return ended;
}

std::optional<Decision> decision() {
  std::lock_guard<Mutex> g(registry_mutex);
  Policy* p = nullptr;
  for (Policy* q : registry)
    if (q->ctx == 0) p = q;  // StarPU's initial context
  if (!p) return std::nullopt;
  Decision d;
  d.policy = to_string(p->source);
  CodeletState* top = nullptr;
  double most = -1;
  p->codelets.each([&](CodeletState& c) {
    double work = 0;
    for (std::size_t w = 0; w < p->workers.size(); ++w) work += get(c.done[w].work);
    if (work > most) most = work, top = &c;
  });
  if (!top) return d;
  // Speeds are re-computed lazily at push: after a job's last push they may predate its
  // timings. A program reading them between jobs (an MPI rank's share) gets them as of now.
  refresh_speeds(*p, *top, now_us());
  d.codelet = top->name;
  d.alpha = get(top->alpha);
  {
    std::lock_guard<Mutex> bg(p->batch_mutex);
    d.dtps = p->last_dtps;
    d.warm_ups = p->warm_ups;
  }
  double total = 0;
  for (const WorkerSlot& s : p->workers)
    if (s.member) total += get(top->speed[std::size_t(s.id)]);
  for (const WorkerSlot& s : p->workers) {
    if (!s.member) continue;
    const auto w = std::size_t(s.id);
    Decision::Worker r;
    char name[64];
    starpu_worker_get_name(s.id, name, sizeof name);
    r.name = name;
    r.share = total > 0 ? get(top->speed[w]) / total : 0;
    r.speed = get(top->speed[w]);
    r.cp = get(top->cp_now[w]);
    r.tasks = top->done[w].runs.load(std::memory_order_relaxed);
    r.busy_ms = get(top->done[w].busy_us) / 1e3;
    r.uf = get(s.fnn.uf);
    r.own_busy = get(s.fnn.own_busy);
    d.workers.push_back(r);
  }
  return d;
}

}  // namespace sched
