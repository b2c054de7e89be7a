// The policy's state (DESIGN §6): what it knows of each codelet (CodeletState), of each worker
// (WorkerSlot) and of the batch (Policy), shared by the callbacks (policy.cpp) and the modules
// beside them. The locking rules are policy.cpp's header comment.
#pragma once

#include <starpu.h>
#include <starpu_scheduler.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fnn/fnn.hpp"
#include "scheduler/config.hpp"
#include "scheduler/cost.hpp"
#include "scheduler/dtps.hpp"
#include "scheduler/dtps_dispatch.hpp"
#include "scheduler/locks.hpp"
#include "scheduler/plugin.hpp"
#include "scheduler/probe.hpp"
#include "scheduler/queue.hpp"
#include "scheduler/task_costs.hpp"
#include "scheduler/task_info.hpp"
#include "scheduler/units.hpp"

namespace sched::state {

namespace dd = dtps_dispatch;

inline void add(std::atomic<double>& a, double x) { a.store(a.load(std::memory_order_relaxed) + x, std::memory_order_relaxed); }
inline double get(const std::atomic<double>& a) { return a.load(std::memory_order_relaxed); }
// add() for counters several threads write: returns the new value.
inline double add_shared(std::atomic<double>& a, double x) {
  double v = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(v, v + x, std::memory_order_relaxed)) {
  }
  return v + x;
}

constexpr double kSpeedsTtlUs = 20000;     // speeds re-predicted at most this often (and on news)
constexpr double kFeaturesTtlUs = 5000;    // live features sampled at most this often
constexpr std::size_t kMergeEvery = 64;    // FNN samples a worker keeps before merging them
constexpr std::size_t kMaxPending = 4 * kMergeEvery;  // ... at most, while its codelets train
constexpr std::size_t kSamplesPerWorker = 64;
constexpr std::size_t kTrainEvery = 32;
constexpr std::size_t kTunePerWorker = 4;  // online steps per worker at each later training
constexpr double kStealEveryUs = 1000;     // an idle worker looks for work to take this often
constexpr std::size_t kPoppedKept = 64;    // tasks popped and not yet started a worker remembers
constexpr std::size_t kStealScan = 4;      // ... among the victim's last queued tasks
constexpr double kMinStealUs = 50;         // ... from a queue holding at least this much work
constexpr double kIdleCheckUs = 100;       // an idle worker looks at the batch this often
constexpr double kNapAfterUs = 2000;       // a CPU worker idle this long naps between polls (policy.cpp)
constexpr double kTieUs = 1;               // expected finishes closer than this are equal
constexpr double kRelEwma = 0.1;           // weight of a task's timing in its worker's `rel`
// Without a split DTPS has measured (its plan), a node with GPUs co-runs a codelet only where the
// slower class adds at least this share of the faster one's throughput. CPU passes and the
// GPU's transfers share host DRAM, and a co-run allocates the units' buffers on both sides: a
// smaller promise is not kept (every LWT co-run measured on the GPU machine was slower than the
// GPU alone). DTPS's later batches split by its plan, judged by the makespan guard.
constexpr double kMinCoRunGain = 0.5;
constexpr double kPinUsPerMiB = 650;  // alloc_us
constexpr std::size_t kMaxArchs = 32;      // the CPU cores and each GPU (Policy::arch_of)

// What the policy knows of one codelet: per-worker speeds and the FNN that predicts them.
struct CodeletState {
  CodeletState(std::size_t n, std::vector<std::string> archs)
      : speed(new std::atomic<double>[n]),
        scale(new std::atomic<double>[n]),
        rel(new std::atomic<double>[n]),
        described(n, 1.0),
        eligible(new std::atomic<signed char>[n]),
        cp_now(new std::atomic<double>[n]),
        done(new Done[n]),
        cp_measured(n, 0.0),
        runs_seen(n, 0),
        costs(std::move(archs)) {
    for (std::size_t w = 0; w < n; ++w) speed[w] = 1.0, scale[w] = 1.0, rel[w] = 1.0, eligible[w] = -1, cp_now[w] = NAN;
  }
  // What one worker writes at each of its task ends, on a cache line of its own: sixteen
  // workers ending tasks together would otherwise contend for one line.
  struct alignas(64) Done {
    std::atomic<long> runs{0};          // tasks timed
    std::atomic<double> batch_work{0};  // done in this batch
    std::atomic<double> work{0}, busy_us{0};  // done in the whole run
  };
  std::string name;
  // Read by push for every worker: written rarely.
  std::unique_ptr<std::atomic<double>[]> speed;     // the speed source's speeds (cost.hpp)
  // A task's expected time on worker w is its arch's (TaskCosts) x rel[w] x scale[w]:
  std::unique_ptr<std::atomic<double>[]> scale;     // the speed source's correction, base / speed
  std::unique_ptr<std::atomic<double>[]> rel;       // w's time over its arch's: its description's
                                                    // ratio first, then measured (EWMA)
  std::vector<double> described;                    // rel's first value, the unit its timings are
                                                    // recorded in (observe): set once, then read only
  std::unique_ptr<std::atomic<signed char>[]> eligible;  // can_run's cache: -1 unknown, 0, 1
  std::unique_ptr<std::atomic<double>[]> cp_now;         // the FNN's latest CP (NaN: none)
  std::unique_ptr<Done[]> done;
  std::atomic<bool> stale{true};
  std::atomic<double> speeds_us{-1e300};
  std::atomic<double> alpha{-1};         // DTPS's CPU-class share, < 0 until learned
  std::atomic<int> alone{-1};            // by its rates, the class it runs on alone (kMinCoRunGain), -1 both;
                                         // push's alone_class prefers a task's own times
  // DTPS's dispatch of tasks of different eq. (5) weights (dtps_dispatch.hpp): this batch's
  // pushed work per weight bin; the cut the previous batch's bins and alpha set (-1: none);
  // the work of the cut's own bin pushed in this batch, and the part sent to the GPU class.
  std::array<std::atomic<double>, dd::kBins> weight_work{};
  std::atomic<int> cut_bin{-1};
  std::atomic<double> cut_gpu_fraction{0};
  std::atomic<double> tie_all{0}, tie_gpu{0};
  Mutex mutex;                           // the rest
  std::vector<double> cp_measured;       // per worker: CP averaged as `measured` is (cost.hpp)
  std::vector<long> runs_seen;           // `runs` at the last refresh
  std::vector<std::deque<std::pair<fnn::Features, double>>> recent;  // per worker: features, D/T
  std::size_t new_samples = 0;
  double max_rate = 0;
  std::unique_ptr<fnn::Model> model;
  bool trained = false;
  RwLock costs_lock;  // push reads `costs`, post_exec writes it
  TaskCosts costs;
};

// A codelet -> state table that push reads without a lock; inserts under `mutex`.
class CodeletTable {
 public:
  static constexpr std::size_t kSize = 1024;
  CodeletState* find(const starpu_codelet* cl) const {
    for (std::size_t i = slot(cl), k = 0; k < kSize; ++k, i = (i + 1) % kSize) {
      const starpu_codelet* key = keys_[i].load(std::memory_order_acquire);
      if (key == cl) return vals_[i].load(std::memory_order_acquire);
      if (!key) return nullptr;
    }
    return nullptr;
  }
  // Under `mutex`.
  void insert(const starpu_codelet* cl, CodeletState* c) {
    for (std::size_t i = slot(cl), k = 0; k < kSize; ++k, i = (i + 1) % kSize)
      if (!keys_[i].load(std::memory_order_relaxed)) {
        vals_[i].store(c, std::memory_order_release);
        keys_[i].store(cl, std::memory_order_release);  // after the value: a reader seeing the key sees it
        return;
      }
    throw std::runtime_error("more than 1024 codelets");
  }
  // Every state, in creation order; `each` may run in any thread while `add` runs (under `mutex`).
  void add(std::unique_ptr<CodeletState> c) {
    const std::size_t n = n_.load(std::memory_order_relaxed);
    owned_[n] = std::move(c);
    n_.store(n + 1, std::memory_order_release);
  }
  template <class F>
  void each(F&& f) const {
    for (std::size_t i = 0, n = n_.load(std::memory_order_acquire); i < n; ++i) f(*owned_[i]);
  }
  Mutex mutex;

 private:
  static std::size_t slot(const starpu_codelet* cl) { return (reinterpret_cast<std::uintptr_t>(cl) >> 4) % kSize; }
  std::array<std::atomic<const starpu_codelet*>, kSize> keys_{};
  std::array<std::atomic<CodeletState*>, kSize> vals_{};
  std::array<std::unique_ptr<CodeletState>, kSize> owned_;
  std::atomic<std::size_t> n_{0};
};

// A task a worker has started (pre_exec) and not ended (post_exec).
struct Running {
  starpu_task* task;
  CodeletState* codelet;
  double start_us, work;
  fnn::Features features;
  std::uint32_t footprint;
  double cost_work;  // the cost model's work (TaskKey)
  double planned_us;  // what its queue planned it to take (0: not popped through a queue)
};

struct PendingSample {
  CodeletState* codelet;
  fnn::Features x;
  double rate;
};

struct ThreadTime {
  double cpu_s = 0, wall_s = 0;  // a thread's CPU time, and CLOCK_MONOTONIC's, in seconds
};

// What the FNN knows of one worker (fnn_speeds.cpp): the features its tasks start with, and
// its tasks' samples waiting to be merged. The worker's thread writes all but `latest`
// (sample_features, under latest_mutex) and the thread clock's readings (the sampler's, one
// thread at a time: LiveFeatures::sampling_mutex).
struct WorkerSampling {
  fnn::Features features{};  // at its running task's start
  Mutex latest_mutex;        // sample_features writes, pre_exec trylocks
  fnn::Features latest{};
  double window_us = -1e300, busy_at_window = 0;
  double peak_F = 0;
  std::vector<PendingSample> pending;
  std::atomic<double> own_busy{0};  // the share of its recent time it spent on our tasks
  // A CPU worker's thread's CPU-time clock, taken on that thread at its first pop: what the
  // thread used, task or idle poll, is the core's load that is ours.
  std::atomic<int> clock_state{0};  // 0 not taken yet, 1 thread_clock set, 2 none
  clockid_t thread_clock{};          // Linux's are negative numbers
  ThreadTime thread_older, thread_newer;
  std::atomic<double> uf{NAN};  // the latest UF sampled: the load that is not ours
};

// One worker's share of the open batch: batches.cpp zeroes it when a batch opens,
// post_exec adds to it, dtps_feedback.cpp reads it when the batch ends.
struct WorkerBatch {
  std::atomic<double> busy_us{0}, work{0}, end_us{0};  // end_us: its last task's
  std::atomic<int> id{-1}, units{0};                   // units it keeps in batch `id` (UnitTable)
};

// Host time spent in our callbacks (the summary's overhead line): a push runs on the thread
// that released the task, often a GPU's own, so its cost delays that GPU's next launch.
enum Callback { kPush, kIdlePop, kPop, kPreExec, kPostExec, kCallbacks };
constexpr const char* kCallbackNames[kCallbacks] = {"push", "idle pop", "pop", "pre_exec", "post_exec"};
struct Spent {
  long calls = 0, ns = 0;
};
struct SharedSpent {
  std::atomic<long> calls{0}, ns{0};
};

struct WorkerSlot {
  // What every push reads, on cache lines of its own: the worker writes the rest at each of
  // its tasks, and a push's reads of a line the worker keeps writing would each miss.
  alignas(64) int id = 0;
  bool gpu = false;  // in the GPU class: a CUDA worker, or one FNNDTPS_EMULATED_GPUS names
  bool cuda = false;
  unsigned node = 0;
  std::atomic<bool> member{false};  // in this context
  std::atomic<int> nqueued{0};      // written under queue_mutex (publish)
  // The queue's highest and lowest priorities (publish); empty: INT_MIN, INT_MAX.
  std::atomic<int> prio_hi{INT_MIN}, prio_lo{INT_MAX};
  std::atomic<double> exp_len{0};   // predicted us of the queued tasks, under queue_mutex
  std::atomic<double> pipe_end{0};  // when the tasks it popped are expected to end (its thread)
  std::atomic<double> slip{1};      // its tasks' time over their plan (cost.hpp; its thread)
  std::atomic<double> back_end{0};  // when its push planned the queue's last task to end
  // Under queue_mutex.
  alignas(64) Mutex queue_mutex;
  TaskQueue queue;
  bool ever_member = false;  // for the summary
  // The worker's own thread writes these.
  std::vector<Running> running;
  // Tasks it popped and has not started, with their planned time (pop, then pre_exec).
  std::vector<std::pair<const starpu_task*, double>> popped;
  double last_end_us = 0;
  double steal_us = -1e300, idle_check_us = -1e300;
  double emulated = 1;
  unsigned long tasks = 0;
  double busy_us = 0, work = 0;
  WorkerSampling fnn;  // fnn_speeds.cpp
  WorkerBatch batch;   // batches.cpp, dtps_feedback.cpp
  std::array<Spent, kCallbacks> spent;  // by its own thread; read at deinit
  // A CPU worker's nap (policy.cpp nap): since when its polls found nothing (its thread; < 0:
  // it ran or took a task since), and whether it waits on nap_cond, which a push to it signals.
  double idle_since_us = -1;
  alignas(64) std::atomic<bool> napping{false};
  Mutex nap_mutex;
  starpu_pthread_cond_t nap_cond;
  WorkerSlot() { starpu_pthread_cond_init(&nap_cond, nullptr); }
  ~WorkerSlot() { starpu_pthread_cond_destroy(&nap_cond); }
  WorkerSlot(const WorkerSlot&) = delete;
  WorkerSlot& operator=(const WorkerSlot&) = delete;
};

// After each change of s.queue, under s.queue_mutex: what pushes read without the lock.
inline void publish(WorkerSlot& s) {
  s.nqueued.store(int(s.queue.size()), std::memory_order_relaxed);
  s.prio_hi.store(s.queue.empty() ? INT_MIN : s.queue.front_priority(), std::memory_order_relaxed);
  s.prio_lo.store(s.queue.empty() ? INT_MAX : s.queue.back_priority(), std::memory_order_relaxed);
  s.back_end.store(s.queue.empty() ? 0 : s.queue.back_planned_end(), std::memory_order_relaxed);
  if (s.queue.empty()) s.exp_len = 0;
}

// How long a task of `priority` pushed to `s` would wait behind its queue: the queued tasks of
// an equal or higher priority (dmdas). Without the lock when the queue holds one priority level
// or the task goes first or last; else, with programs that mix priorities, a scan under it.
inline double queue_wait(WorkerSlot& s, int priority) {
  if (priority <= s.prio_lo.load(std::memory_order_relaxed)) return get(s.exp_len);
  if (priority > s.prio_hi.load(std::memory_order_relaxed)) return 0;
  QueueLock g(s.queue_mutex);
  return s.queue.ahead_of(priority);
}

// The cost model's archs (task_costs.hpp; placement, fnn_speeds): "cpu" for every CPU worker,
// "cudaN" for each GPU; per worker its arch and its peak rate F (emulation included). Written
// by init only.
struct Archs {
  std::vector<std::string> names;
  std::vector<double> peak;  // GFLOP/s, the arch's fastest worker's F
  std::vector<char> gpu;
  std::vector<std::size_t> of;      // per worker
  std::vector<double> worker_peak;  // per worker, GFLOP/s
};

// Live features per worker (fnn_speeds), sampled by an idle worker at most every
// kFeaturesTtlUs, one sampler at a time (sampling_mutex).
struct LiveFeatures {
  Mutex mutex;  // `features`
  std::vector<fnn::Features> features;
  std::atomic<double> sampled_us{-1e300};
  Mutex sampling_mutex;
};

// Batches (DESIGN §6; batches.cpp): tasks pushed and not ended, and when that count last fell
// to 0.
struct BatchState {
  std::atomic<long> pending{0};
  std::atomic<double> idle_since{-1};
  // The program ends its batches itself (fnndtps_end_batch): idle gaps no longer do, so that a
  // batch lasts until the program has its results (copies home included).
  std::atomic<bool> program_ends{false};
  std::atomic<bool> open{false};
  // A batch ended with samples to train on: an idle worker trains (train_models), never the
  // thread that ended it, which may be the program's (fnndtps_end_batch, or its next push).
  std::atomic<bool> train_due{false};
  std::atomic<double> start_us{0};  // the first push of the open batch
  // Inside the open batch, the time with nothing in flight before a push went on with it: the
  // batch waited on something not ours (another rank's halos, the program itself), and its
  // makespan is its own tasks' time without it (batches.cpp note_push, dtps_feedback).
  std::atomic<double> waited_us{0};
  std::atomic<int> id{0};           // counts batches opened
  int ended = 0;                    // under batch_mutex
};

// The plan for the next batch that opens with a codelet (under batch_mutex).
struct Opened {
  dd::UnitPlan plan;
  double gpu_unit_us = NAN;  // the GPU class's makespan per unit, the last time it ran alone
  int batches = 0;           // ended; the first is cold (CUDA modules load, buffers allocate)
};

// DTPS by units (dtps_dispatch.hpp; dtps_feedback): the open batch's plan, and what its tasks
// tell the next: units first seen, the work of tasks local to their unit and of all with a
// unit, their expected time on one CPU worker (us); of those units, the urgent ones
// (dd::urgent_unit). `plans`, `opener`, `last_plan` under batch_mutex.
struct UnitSplit {
  UnitTable units;
  std::atomic<std::size_t> plan_units{0}, plan_cpu{0};
  std::atomic<long> batch_units{0}, batch_urgent{0};
  std::atomic<double> local_work{0}, unit_work{0}, cpu_unit_us{0};
  std::map<const starpu_codelet*, Opened> plans;
  const starpu_codelet* opener = nullptr;  // the codelet that opened the current batch
  std::string last_plan;                   // for FNNDTPS_VERBOSE
};

struct Policy {
  Policy(unsigned c, SpeedSource s, std::size_t n) : ctx(c), source(s), workers(n) {}
  unsigned ctx;
  SpeedSource source;
  Config cfg;
  bool rebalance = false;
  bool one_node = false;  // main memory only (no GPU): no transfers to estimate, nothing to prefetch
  bool cache_eligibility = true;  // can_run may cache
  std::atomic<bool> has_cpu{false};  // a CPU worker among the members
  std::atomic<bool> lone{false};     // one member: no placement to predict for
  std::atomic<int> gpu_nodes{0};      // distinct memory nodes of the CUDA members
  std::vector<WorkerSlot> workers;  // by StarPU worker id; `member` says which are ours
  CodeletTable codelets;
  Archs archs;
  std::unique_ptr<Probe> probe;
  LiveFeatures live;
  BatchState batch;
  UnitSplit split;
  Mutex batch_mutex;  // the batch state that is not atomic, `split`'s plans, and `dtps`
  DtpsStore dtps;
  std::atomic<long> moved{0};
  long moved_reported = 0;  // under batch_mutex
  std::atomic<int> running_in_class[2] = {0, 0};  // emulation only: `running` entries, CPU / GPU class
  std::vector<std::string> log;  // summary lines, under batch_mutex
  std::string last_dtps;         // the controller's last decision, under batch_mutex
  long warm_ups = 0;             // batches that were a co-run's warm-up (DtpsUpdate::warm_up), under batch_mutex
  // Pushes from threads that are no worker's (the program's, possibly several at once).
  SharedSpent app_spent;
};

// Adds the real (not simulated) time from its construction to its destruction to one callback's
// account: a worker's own (only its thread writes it) or a shared one.
class Timed {
 public:
  explicit Timed(Spent& own) : own_(&own), t0_(std::chrono::steady_clock::now()) {}
  explicit Timed(SharedSpent& shared) : shared_(&shared), t0_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    const long ns = long(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count());
    if (own_) {
      own_->calls += 1, own_->ns += ns;
    } else {
      shared_->calls.fetch_add(1, std::memory_order_relaxed);
      shared_->ns.fetch_add(ns, std::memory_order_relaxed);
    }
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  Spent* own_ = nullptr;
  SharedSpent* shared_ = nullptr;
  std::chrono::steady_clock::time_point t0_;
};

// The open batch's split by units (dtps_dispatch.hpp).
inline dd::UnitPlan open_plan(const Policy& p) {
  return {p.split.plan_units.load(std::memory_order_relaxed), p.split.plan_cpu.load(std::memory_order_relaxed)};
}


inline void warn(Policy& p, const std::string& what) {
  std::fprintf(stderr, "fnndtps: %s\n", what.c_str());
  p.log.push_back(what);
}

[[noreturn]] inline void fail(const char* where, const std::exception& e) {
  std::fprintf(stderr, "fnndtps: %s: %s\n", where, e.what());
  std::abort();
}

inline Policy* policy_of(unsigned ctx) { return static_cast<Policy*>(starpu_sched_ctx_get_policy_data(ctx)); }
inline double now_us() { return starpu_timing_now(); }
inline bool uses_fnn(const Policy& p) { return p.source == SpeedSource::Fnn || p.source == SpeedSource::FnnDtps; }
inline bool uses_dtps(const Policy& p) { return p.source == SpeedSource::Dtps || p.source == SpeedSource::FnnDtps; }

}  // namespace sched::state
