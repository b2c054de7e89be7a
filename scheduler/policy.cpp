// The five policies of the plugin (DESIGN §6): one mechanism, five speed sources (cost.hpp).
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
// - Others read exp_len, pipe_end, nqueued and the queue's priority range unlocked (atomics):
//   a stale read misplaces one task, as in dmda, and never loses one. A push of a priority
//   inside a queue's range scans that queue under its mutex (dmdas takes the worker's lock).
// - pre_exec and post_exec run on the worker's thread and write only its own slot.
// - A codelet's model, samples and speeds are under its own mutex; push only trylocks it (to
//   refresh speeds) and otherwise reads the speeds' atomics.
// - Batches end under the batch mutex, which push takes only when a batch starts or ends, and
//   then take no codelet's mutex; training takes a codelet's mutex, then the batch mutex.
// - Wakes: none under non-blocking drivers (idle workers poll pop); otherwise the chosen
//   worker, after the queue's unlock, by starpu_wake_worker_relax_light as eager does: a worker
//   in its scheduling operation is told to stay awake instead of being waited for.
// - No C++ exception leaves a callback: each entry point catches, reports one line, aborts.
#include <starpu.h>
#include <starpu_scheduler.h>
#ifdef STARPU_SIMGRID
#include <simgrid/host.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <climits>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <ctime>
#include <string>
#include <unordered_map>
#include <vector>

#include "fnn/fnn.hpp"
#include "fnn/io.hpp"
#include "fnn/text.hpp"
#include "fnn/train.hpp"
#include "scheduler/config.hpp"
#include "scheduler/cost.hpp"
#include "scheduler/dtps.hpp"
#include "scheduler/dtps_dispatch.hpp"
#include "scheduler/emulation.hpp"
#include "scheduler/plugin.hpp"
#include "scheduler/probe.hpp"
#include "scheduler/queue.hpp"
#include "scheduler/task_costs.hpp"
#include "scheduler/report.hpp"
#include "scheduler/state.hpp"
#include "scheduler/task_info.hpp"
#include "scheduler/units.hpp"
#include "scheduler/locks.hpp"

namespace sched {
namespace {

using namespace state;

// Every live instance (one per scheduling context), for fnndtps_end_batch. File-local, not an
// `inline` variable of state.hpp: under SMPI (simulated ranks in one process, each with its own
// copy of the globals) the ranks then read each other's policies (smpi_lwt's model shares).
Mutex registry_mutex;
std::vector<Policy*> registry;

std::string model_path(const Policy& p, const std::string& codelet, const char* ext = ".fnn") {
  std::string safe;
  for (char c : codelet) safe += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return p.cfg.model_dir + "/" + safe + ext;
}
const char* const kCostsExt = ".costs";

// The codelet's task costs as an earlier process saved them (task_costs.hpp), over the priors
// from each arch's peak rate. A corrupt or foreign file: one line, and the priors.
void load_costs(Policy& p, CodeletState& c, bool flops_work) {
  for (std::size_t a = 0; a < p.arch_names.size(); ++a)
    c.costs.set_prior(a, ArchPrior::from_peak(p.arch_peak[a], p.arch_gpu[a], flops_work), p.arch_gpu[a]);
  const std::string path = model_path(p, c.name, kCostsExt);
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    c.costs.from_text(text, c.name);
    std::lock_guard<Mutex> g(p.batch_mutex);
    p.log.push_back("costs " + c.name + ": loaded from " + path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fnndtps: task costs %s ignored, starting afresh (%s); delete the file or set FNNDTPS_MODEL_DIR\n",
                 c.name.c_str(), e.what());
  }
}

// ------------------------------------------------------------------ codelets and speeds
CodeletState& codelet_state(Policy& p, starpu_task* task) {
  if (CodeletState* c = p.codelets.find(task->cl)) return *c;
  std::lock_guard<Mutex> g(p.codelets.mutex);
  if (CodeletState* c = p.codelets.find(task->cl)) return *c;
  auto owned = std::make_unique<CodeletState>(p.workers.size(), p.arch_names);
  CodeletState& c = *owned;
  const char* name = starpu_task_get_name(task);
  c.name = name ? name : (task->cl->name ? task->cl->name : "unnamed");
  c.recent.resize(p.workers.size());
  load_costs(p, c, task->flops > 0);
  for (std::size_t w = 0; w < p.workers.size(); ++w)  // a slower worker of an arch: its F says how much
    c.rel[w] = p.arch_peak[p.arch_of[w]] / std::max(p.peak[w], 1e-9) * emu::factor(int(w));
  {
    std::lock_guard<Mutex> bg(p.batch_mutex);  // the DTPS store
    if (const DtpsController* ctl = p.dtps.find(c.name); ctl && ctl->turn() > 0) c.alpha = ctl->alpha();
  }
  if (uses_fnn(p)) {
    try {
      c.model = std::make_unique<fnn::Model>(fnn::load_model(model_path(p, c.name)));
      c.trained = true;
      std::lock_guard<Mutex> lg(p.batch_mutex);
      p.log.push_back("model " + c.name + ": loaded from " + model_path(p, c.name));
    } catch (const std::exception& e) {
      if (std::FILE* f = std::fopen(model_path(p, c.name).c_str(), "r")) {  // corrupt, not absent
        std::fclose(f);
        std::fprintf(stderr, "fnndtps: model %s ignored, starting afresh (%s); delete the file or set FNNDTPS_MODEL_DIR\n",
                     c.name.c_str(), e.what());
      }
      c.model = std::make_unique<fnn::Model>(fnn::Model::random(std::size_t(p.cfg.hidden), 1));
      // seed 000 eq. (12) gives UF's memberships (a = -15/+15, c = 0.5) and no others; for
      // F, M, P and UM a gentler a = -5/+5 trains to a third of the error (notes/fnn.md).
      for (std::size_t input : {0u, 1u, 2u, 4u}) c.model->set_membership(input, fnn::Membership{-5, 0.5, 5, 0.5});
    }
  }
  p.codelets.insert(task->cl, &c);
  p.codelets.add(std::move(owned));
  return c;
}

// The FNN's target CP = f(D/T) (seed 000 eqs. 5, 21) with f(r) = (r / r_max)^(1/4): the
// fourth root spreads the small abilities (a CPU core beside a GPU is ~1/500 of it) over the
// sigmoid output's range. Speeds use the inverse.
constexpr double kCpRoot = 4;
double cp_from_rate(double rate, double max_rate) { return std::pow(rate / max_rate, 1.0 / kCpRoot); }
double ability_from_cp(double cp) { return std::pow(std::clamp(cp, 1e-3, 1.0), kCpRoot); }

// The share of a worker's recent time that is ours, to take from its UF. A CPU worker's is its
// thread's CPU time over the same span as the probe's UF (ProbeOptions::uf_window: from the
// newest reading at least that old): an idle StarPU worker polls, and /proc/stat counts that
// as load. Without its clock (simulation, or before its first pop), and for a GPU (NVML counts
// our kernels), the share of its time in our tasks.
double own_share(WorkerSlot& s, double window_s) {
#ifndef STARPU_SIMGRID
  timespec cpu{}, wall{};
  if (!s.cuda && s.clock_state.load(std::memory_order_acquire) == 1 && clock_gettime(s.thread_clock, &cpu) == 0 &&
      clock_gettime(CLOCK_MONOTONIC, &wall) == 0) {
    const ThreadTime now{double(cpu.tv_sec) + 1e-9 * double(cpu.tv_nsec), double(wall.tv_sec) + 1e-9 * double(wall.tv_nsec)};
    if (s.thread_newer.wall_s == 0) s.thread_older = s.thread_newer = now;
    if (now.wall_s - s.thread_newer.wall_s >= window_s) s.thread_older = s.thread_newer, s.thread_newer = now;
    const ThreadTime& from = s.thread_older;  // at least window_s before the newer one
    if (now.wall_s > from.wall_s) return std::clamp((now.cpu_s - from.cpu_s) / (now.wall_s - from.wall_s), 0.0, 1.0);
  }
#else
  (void)window_s;
#endif
  return get(s.own_busy);
}

// A worker's live features (DESIGN §5), UF as the load that is not ours (DESIGN §6): StarPU's
// idle workers spin and our own kernels keep a GPU busy, so /proc/stat and NVML read our own
// work too. F is lowered by an emulated slowdown, which stands for a slower worker.
fnn::Features live_features(Policy& p, std::size_t w) {
  WorkerSlot& s = p.workers[w];
  RawFeatures raw = p.probe->sample(w);
  static const double window_s = std::chrono::duration<double>(ProbeOptions{}.uf_window).count();  // probe_options()'s
  raw.UF = std::max(0.0, raw.UF - own_share(s, window_s));
  s.uf = raw.UF;
  RawFeatures peak = raw;
  for (std::size_t i = 0; i < p.workers.size(); ++i) {
    const RawFeatures r = p.probe->static_features(i);
    peak.F = std::max(peak.F, r.F), peak.M = std::max(peak.M, r.M), peak.P = std::max(peak.P, r.P);
  }
  return normalise_one(raw, peak);
}

// Samples every worker's live features into Policy::features. Runs on an idle worker (pop),
// never on the push path nor before a task: /proc and NVML reads take up to milliseconds.
void sample_features(Policy& p, double now) {
  if (now - get(p.features_us) < kFeaturesTtlUs) return;
  std::unique_lock<Mutex> g(p.sampling_mutex, std::try_to_lock);
  if (!g.owns_lock()) return;
  p.features_us = now;
  std::vector<fnn::Features> f(p.workers.size());
  for (std::size_t w = 0; w < f.size(); ++w) {
    WorkerSlot& s = p.workers[w];
    if (!s.member) continue;
    if (const double e = emu::factor(s.id); e != s.emulated) {  // a slower worker: lower F
      s.emulated = e;
      p.probe->set_measured_peak(w, s.peak_F / e);
    }
    f[w] = live_features(p, w);
    std::lock_guard<Mutex> lg(s.latest_mutex);
    s.latest = f[w];
  }
  std::lock_guard<Mutex> fg(p.features_mutex);
  p.features = std::move(f);
}

// Re-computes the codelet's speeds from its source (cost.hpp) when stale. Skips when another
// thread is at it: push never waits here.
void refresh_speeds(Policy& p, CodeletState& c, double now) {
  if (!c.stale.load(std::memory_order_relaxed) && now - get(c.speeds_us) < kSpeedsTtlUs) return;
  std::unique_lock<Mutex> g(c.mutex, std::try_to_lock);
  if (!g.owns_lock()) return;
  c.stale = false;
  c.speeds_us = now;
  const std::size_t n = p.workers.size();
  SpeedInputs in;
  in.measured.resize(n);
  in.gpu.resize(n);
  {  // each worker's own speed: its arch's (TaskCosts::rate) over its `rel`
    ReadLock cg(c.costs_lock);
    for (std::size_t w = 0; w < n; ++w) {
      in.gpu[w] = p.workers[w].gpu;
      if (p.workers[w].member) in.measured[w] = c.costs.rate(p.arch_of[w]) / get(c.rel[w]);
    }
  }
  if (c.model && c.trained) {  // seed 000 eq. 7: CP_i predicted from the live features
    in.ability.resize(n);
    std::vector<fnn::Features> f;
    {
      std::lock_guard<Mutex> fg(p.features_mutex);
      f = p.features;
    }
    for (std::size_t w = 0; w < n; ++w) {
      if (!p.workers[w].member) continue;
      const double predicted = c.model->predict(f[w]);
      c.cp_now[w].store(predicted, std::memory_order_relaxed);
      const double cp = ability_from_cp(predicted);
      in.ability[w] = cp;
      // CP averaged over the tasks since, with the weights `measured` gave their timings.
      const long runs = c.done[w].runs.load(std::memory_order_relaxed), fresh = runs - c.runs_seen[w];
      c.runs_seen[w] = runs;
      const double keep = c.cp_measured[w] > 0 ? std::pow(1 - kEwma, double(fresh)) : 0;
      if (fresh > 0 || c.cp_measured[w] <= 0) c.cp_measured[w] = keep * c.cp_measured[w] + (1 - keep) * cp;
    }
    in.ability_measured = c.cp_measured;
  }
  in.alpha = get(c.alpha);
  // Each class's throughput, by rates (D / T, fixed costs in): a program of one task size (most
  // are) has no other measure of it. A class timed on small tasks only (an inverse's coarse
  // levels) looks slower than it is; push keeps such codelets' GPU-born data off the cores.
  double cls[2] = {0, 0};
  for (std::size_t w = 0; w < n; ++w) cls[p.workers[w].gpu ? 1 : 0] += in.measured[w];
  const bool gpus = p.gpu_nodes.load(std::memory_order_relaxed) > 0;
  c.alone.store(gpus && std::min(cls[0], cls[1]) < kMinCoRunGain * std::max(cls[0], cls[1]) ? (cls[1] > cls[0] ? 1 : 0) : -1,
                std::memory_order_relaxed);
  const std::vector<double> s = speeds(p.source, in);
  for (std::size_t w = 0; w < n; ++w) {
    const double speed = s[w] > 0 ? s[w] : 1e-12;
    c.speed[w].store(speed, std::memory_order_relaxed);
    c.scale[w].store(in.measured[w] > 0 ? in.measured[w] / speed : 1.0, std::memory_order_relaxed);
  }
}

// Seed 001 eqs. (4)-(5): w = IA / DA, IA the task's flops, DA its buffers' bytes, read ones in
// and written ones out (codelets/subtask_weights.hpp says what our codelets expose).
double task_weight(starpu_task* task) { return dd::weight({task->flops, task_info::data_bytes(task)}); }

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
// first passes are pushed first, at the same priority), and main memory held all the units'
// work strips at once: a 16384^2 forward on 2 cores peaked at 3.2 GiB for its 2 GiB of images.
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

// What the cost model reads of a task: its footprint (StarPU's: the codelet model's footprint
// function where it has one, else its data's; computed once per task; with its flops where the
// program sets them, which StarPU's footprints leave out) and its work: those flops, else what
// it touches at its level (its model's size_base), else its unit's bytes (task_info::work).
struct TaskKey {
  std::uint32_t footprint = 0;
  double work = 1;
};
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
               bool* known = nullptr) {
  const std::size_t a = p.arch_of[std::size_t(w)];
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

// A push's arch_us per arch, each asked once (StarPU's model and our costs' lock are not free).
struct ArchCosts {
  std::array<double, kMaxArchs> us;
  std::array<signed char, kMaxArchs> known;  // -1: not asked yet
  ArchCosts() { known.fill(-1); }
  double of(Policy& p, CodeletState& c, starpu_task* task, unsigned ctx, int w, const TaskKey& k, bool* kn = nullptr) {
    const std::size_t a = p.arch_of[std::size_t(w)];
    if (known[a] < 0) {
      bool is = false;
      us[a] = arch_us(p, c, task, ctx, w, k, &is);
      known[a] = is ? 1 : 0;
    }
    if (kn) *kn = known[a] == 1;
    return us[a];
  }
};

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

// Worker w's own expected time: its arch's x rel[w], a slower (or busier) worker of the arch
// taking longer. What the policy plans with multiplies it by scale[w] (the speed source).
double base_us(Policy& p, CodeletState& c, starpu_task* task, unsigned ctx, int w, const TaskKey& k) {
  return arch_us(p, c, task, ctx, w, k) * get(c.rel[std::size_t(w)]);
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
  add_shared(p.cpu_unit_us, cpu);
  const dd::UnitPlan plan = open_plan(p);
  bool crossing = false;
  const int batch = p.batch_id.load(std::memory_order_relaxed);
  const auto assign = [&](std::size_t k) {
    UnitTable::Place pl{dd::unit_class(plan, k), -1};
    if (pl.cls != 0) return pl;
    int fewest = INT_MAX;
    for (WorkerSlot& s : p.workers) {
      if (!s.member || s.gpu || !can_run(p, c, task, s.id)) continue;
      const int n = s.units_batch.load(std::memory_order_relaxed) == batch ? s.units.load(std::memory_order_relaxed) : 0;
      if (n < fewest) fewest = n, pl.owner = s.id;
    }
    if (pl.owner >= 0) {
      WorkerSlot& o = p.workers[std::size_t(pl.owner)];
      if (o.units_batch.exchange(batch, std::memory_order_relaxed) != batch) o.units = 0;
      o.units.fetch_add(1, std::memory_order_relaxed);
    }
    return pl;
  };
  const UnitTable::Place place = p.units.place_of(u.h.data(), u.n, batch, p.batch_units, assign, crossing);
  add_shared(p.unit_work, work);
  if (!crossing) add_shared(p.local_work, work);
  return place;
}

// What dtps_feedback saw of a batch.
struct BatchEnd {
  CodeletState* dominant = nullptr;
  double makespan_us = NAN, cpu_share = NAN;  // the CPU class's share of the work it ran
  double t_cpu_us = NAN, t_gpu_us = NAN;      // the classes' times seed 001 was given
};

// At a batch end: the next batch's split by units, for the next batch this batch's first
// codelet opens. Only for a batch of local units (dd::kLocalShare) on both classes. Until
// seed 001 has measured a split, the model's (seed 000 eq. (7), whole units); then seed 001's
// alpha as a count of units, in whole rounds of the CPU workers (dd::whole_rounds). Never more
// than the CPU class can end within the GPU class's time for the whole batch. A unit's time on
// the GPU class is the batch's makespan over its units when that class last ran it alone: the
// unit's transfers in and out are most of it (a strip's kernels take a fraction of its PCIe
// time), and StarPU's models time kernels only.
// On a core: the cost model's times (arch_us) summed over the unit's tasks. Under batch_mutex.
void plan_units(Policy& p, const BatchEnd& b, Policy::Opened& opened, bool cold) {
  CodeletState* dominant = b.dominant;
  const auto n = std::size_t(std::max(0L, p.batch_units.exchange(0)));
  const double local = p.local_work.exchange(0), all = p.unit_work.exchange(0);
  const double cpu = p.cpu_unit_us.exchange(0);
  int k[2] = {0, 0};
  for (const WorkerSlot& s : p.workers) k[s.gpu] += s.member ? 1 : 0;
  dd::UnitPlan plan;
  p.last_plan.clear();
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
    p.last_plan = buf;
  }
  opened.plan = plan;
}

// ------------------------------------------------------------------ batches
// Moves worker w's pending FNN samples into their codelets' sets. Unless `wait`, it only
// trylocks each codelet: training holds its mutex for milliseconds, and a worker ending a task
// must not stall behind it. What it could not merge waits for the next merge; past
// kMaxPending the oldest are dropped.
void merge_samples(WorkerSlot& s, std::size_t w, bool wait) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < s.pending.size(); ++i) {
    const PendingSample x = s.pending[i];
    CodeletState& c = *x.codelet;
    std::unique_lock<Mutex> g(c.mutex, std::defer_lock);
    if (wait) {
      g.lock();
    } else if (!g.try_lock()) {
      s.pending[kept++] = x;
      continue;
    }
    c.max_rate = std::max(c.max_rate, x.rate);
    auto& mine = c.recent[w];
    mine.emplace_back(x.x, x.rate);
    if (mine.size() > kSamplesPerWorker) mine.pop_front();
    ++c.new_samples;
  }
  s.pending.resize(kept);
  if (kept > kMaxPending) s.pending.erase(s.pending.begin(), s.pending.begin() + std::ptrdiff_t(kept - kMaxPending));
}

// Under c.mutex. Returns the summary's line for a first training, else "".
std::string train(CodeletState& c) {
  if (!c.model || c.new_samples < kTrainEvery || c.max_rate <= 0) return "";
  c.new_samples = 0;
  // Every worker's newest samples, interleaved newest first so that each worker weighs alike.
  const std::size_t each = c.trained ? kTunePerWorker : kSamplesPerWorker;
  std::vector<fnn::Sample> set;
  for (std::size_t i = 0; i < each; ++i)
    for (const auto& mine : c.recent)
      if (i < mine.size()) {
        const auto& [x, rate] = mine[mine.size() - 1 - i];
        set.push_back(fnn::Sample{x, cp_from_rate(rate, c.max_rate)});
      }
  if (!c.trained) {
    fnn::TrainOptions opt;  // seed 000 §5.2: pre-training, then fine-tuning, bounded to ~10^5 steps
    const double scale = std::min(1.0, 100.0 / double(set.size()));
    opt.pretrain.epochs = std::max<std::size_t>(50, std::size_t(double(opt.pretrain.epochs) * scale));
    opt.finetune.epochs = std::max<std::size_t>(15, std::size_t(double(opt.finetune.epochs) * scale));
    fnn::train_two_step(*c.model, set, opt);
    c.trained = true;
    c.stale = true;
    return "model " + c.name + ": trained on " + std::to_string(set.size()) + " samples";
  }
  for (const fnn::Sample& x : set) fnn::fine_tune(*c.model, x);
  c.stale = true;
  return "";
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
      busy[s.gpu] = std::max(busy[s.gpu], get(s.batch_busy_us));
      work[s.gpu] += get(s.batch_work);
      last[s.gpu] = std::max(last[s.gpu], get(s.batch_end_us));
    }
  DtpsController& ctl = p.dtps.controller(dominant->name);
  const double total = work[0] + work[1];
  const double idle = get(p.idle_since);
  const double start = get(p.batch_start_us), end = std::isfinite(job_end) ? job_end : idle >= 0 ? idle : now_us();
  const double makespan = end - start;
  // Split by units, the classes barely wait on each other (one boundary of halos), so each
  // class's time is when it finished: busy time would miss the GPU's transfers, most of a
  // strip's time there. The class that ends the batch is charged its end, copies home
  // included; the other its last task's end.
  if (open_plan(p).splits() && last[0] > 0 && last[1] > 0) {
    const int late = last[1] >= last[0] ? 1 : 0;
    busy[late] = makespan;
    busy[1 - late] = last[1 - late] - start;
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
  if (p.cfg.verbose)
    std::fprintf(stderr,
                 "fnndtps: batch %d %s: makespan %.3f ms, T_cpu %.3f ms T_gpu %.3f ms, m %.3f (%s%s%s) alpha %.4f -> "
                 "%.4f\n",
                 p.batches, dominant->name.c_str(), makespan / 1e3, busy[0] / 1e3, busy[1] / 1e3, u.m_before,
                 to_string(u.kind), u.reason.empty() ? "" : ": ", u.reason.c_str(), u.alpha_before, ctl.alpha());
  return {dominant, makespan, total > 0 ? work[0] / total : NAN, busy[0], busy[1]};
}

// The FNN training a batch end left due, each codelet under its own mutex (push does not wait
// for it: it only trylocks). Pre-training takes milliseconds per codelet: on an idle worker's
// thread, out of batch_mutex, so that neither the program's thread nor its next push waits.
// Takes c.mutex, then (after it) batch_mutex: end_batch, which holds batch_mutex, takes no
// codelet's mutex.
void train_models(Policy& p) {
  if (!p.train_due.exchange(false)) return;
  p.codelets.each([&](CodeletState& c) {
    std::string line;
    {
      std::lock_guard<Mutex> cg(c.mutex);
      line = train(c);
    }
    if (line.empty()) return;
    std::lock_guard<Mutex> g(p.batch_mutex);
    p.log.push_back(line);
  });
}

// Ends the batch: DTPS feedback and the next batch's cuts; training is left to an idle worker
// (train_models). `force`: also with tasks in flight (an idle gap passed, or the program said
// so). `job_end`: see dtps_feedback.
void end_batch(Policy& p, bool force, double job_end = NAN) {
  std::lock_guard<Mutex> g(p.batch_mutex);
  if (!p.in_batch || (!force && p.pending.load() != 0)) return;
  ++p.batches;
  if (uses_dtps(p)) {
    Policy::Opened& opened = p.plans[p.batch_opener];
    const bool cold = opened.batches++ == 0;
    plan_units(p, dtps_feedback(p, job_end, cold), opened, cold);
  }
  if (p.cfg.verbose) report::batch(p);
  if (p.cfg.verbose && !p.last_plan.empty()) std::fprintf(stderr, "fnndtps:   next batch: %s\n", p.last_plan.c_str());
  p.codelets.each([&](CodeletState& c) {  // atomics only: no codelet's mutex (train_models)
    if (uses_dtps(p)) set_cut(p, c);
    for (std::size_t w = 0; w < p.workers.size(); ++w) c.done[w].batch_work = 0;
  });
  for (WorkerSlot& s : p.workers) s.batch_busy_us = 0, s.batch_work = 0, s.batch_end_us = 0;
  p.in_batch = false;
  p.train_due = uses_fnn(p);  // only the FNN policies have models to train
}

// At a push: a batch starts when none is open; an idle gap longer than the debounce since the
// last task ended closes the old one first (blocking drivers do not poll to notice it).
void note_push(Policy& p, starpu_task* task, double now) {
  const double idle = p.idle_since.load(std::memory_order_relaxed);
  if (idle >= 0) {
    if (now - idle >= p.cfg.batch_gap_us && p.in_batch && !p.program_ends.load(std::memory_order_relaxed))
      end_batch(p, true);
    p.idle_since.store(-1, std::memory_order_relaxed);
  }
  if (!p.in_batch.load(std::memory_order_relaxed)) {
    std::lock_guard<Mutex> g(p.batch_mutex);
    if (!p.in_batch) {
      p.in_batch = true;
      p.batch_start_us = now;
      p.batch_id.fetch_add(1, std::memory_order_relaxed);
      p.batch_opener = task->cl;  // its plan, if the last batch it opened left one
      const auto plan = p.plans.find(task->cl);
      p.plan_units = plan != p.plans.end() ? plan->second.plan.units : 0;
      p.plan_cpu = plan != p.plans.end() ? plan->second.plan.cpu : 0;
      p.codelets.each([](CodeletState& c) { c.stale = true; });  // re-predict for the new batch
    }
  }
}

// A worker found nothing to do: whether the batch should end, nothing having been in flight for
// the debounce gap.
bool batch_end_due(Policy& p, double now) {
  if (p.pending.load(std::memory_order_relaxed) != 0 || p.program_ends.load(std::memory_order_relaxed)) return false;
  double idle = p.idle_since.load(std::memory_order_relaxed);
  if (idle < 0) {
    p.idle_since.compare_exchange_strong(idle, now);
    return false;
  }
  return now - idle >= p.cfg.batch_gap_us && p.in_batch.load(std::memory_order_relaxed);
}

// What the probe reads. Simulated (DESIGN §8), this machine's /proc and NVML say nothing of the
// simulated node: its GPUs are the platform's CUDA<i> hosts, described by the properties
// bench/platforms/make_platform.py gives them (0 where absent), and /proc is not read, so a
// worker's UF and UM come from our own accounting (none of its load is another program's) and
// a CPU worker's F from the probe's defaults.
ProbeOptions probe_options() {
  ProbeOptions o;
#ifdef STARPU_SIMGRID
  o.root = "/nonexistent/simulated";
  o.nvml_library = "";
  std::vector<GpuInfo> gpus;
  for (int d = 0; d < STARPU_MAXCUDADEVS; ++d) {
    const sg_host_t h = sg_host_by_name(("CUDA" + std::to_string(d)).c_str());
    if (!h) break;
    const auto number = [h](const char* key) {
      const char* v = sg_host_get_property_value(h, key);
      return v ? std::atof(v) : 0.0;
    };
    GpuInfo g;
    g.device = d;
    const double cc = number("fnndtps_cc");
    g.cc_major = int(cc);
    g.cc_minor = int(std::lround((cc - g.cc_major) * 10));
    g.sms = int(number("fnndtps_sms"));
    g.max_threads_per_sm = int(number("fnndtps_threads_per_sm"));
    g.clock_khz = number("fnndtps_clock_mhz") * 1e3;
    g.total_mem = std::uint64_t(number("memsize"));
    gpus.push_back(g);
  }
  o.gpus = std::move(gpus);
#endif
  return o;
}

// ------------------------------------------------------------------ StarPU callbacks
void init(unsigned ctx, SpeedSource source) {
  try {
    const std::size_t n = starpu_worker_get_count();
    auto* p = new Policy(ctx, source, n);
    p->cfg = Config::from_env();
    p->rebalance = p->cfg.rebalance >= 0 ? p->cfg.rebalance == 1 : uses_fnn(*p);
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
      s.pending.reserve(kMergeEvery);
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
    p->features.resize(n);
    for (std::size_t w = 0; w < n; ++w) p->workers[w].peak_F = p->probe->static_features(w).F;
    // The cost model's archs: the CPU cores alike, each GPU its own (task_costs.hpp).
    p->peak.resize(n);
    p->arch_of.resize(n);
    for (std::size_t w = 0; w < n; ++w) {
      const WorkerSlot& s = p->workers[w];
      const std::string arch = s.cuda ? "cuda" + std::to_string(starpu_worker_get_devid(int(w))) : "cpu";
      const auto it = std::find(p->arch_names.begin(), p->arch_names.end(), arch);
      p->arch_of[w] = std::size_t(it - p->arch_names.begin());
      if (it == p->arch_names.end()) p->arch_names.push_back(arch), p->arch_peak.push_back(0), p->arch_gpu.push_back(s.cuda);
      p->peak[w] = s.peak_F > 0 ? s.peak_F : 1.0;
      p->arch_peak[p->arch_of[w]] = std::max(p->arch_peak[p->arch_of[w]], p->peak[w]);
    }
    if (p->arch_names.size() > kMaxArchs) throw std::runtime_error("more than 31 GPUs");
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
    p->features_us = -1e300;
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
      p->pending.fetch_sub(1);
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
void enqueue(Policy& p, starpu_task* task, CodeletState& c, unsigned ctx, int w, double predicted, double work) {
  WorkerSlot& s = p.workers[std::size_t(w)];
  task->sched_data = &c;  // ours: pre_exec and post_exec count it
  if (!p.one_node && STARPU_TASK_GET_NBUFFERS(task) > 0 && starpu_get_prefetch_flag())
    starpu_prefetch_task_input_for(task, w);
  {
    QueueLock g(s.queue_mutex);
    s.queue.push(QueuedTask{task, task->priority, predicted, work, &c});
    add(s.exp_len, predicted);
    publish(s);
    starpu_push_task_end(task);
  }
  starpu_sched_ctx_list_task_counters_increment(ctx, w);
#if !defined(STARPU_NON_BLOCKING_DRIVERS) || defined(STARPU_SIMGRID)
  starpu_wake_worker_relax_light(w);
#endif
}

int push(starpu_task* task) {
  const unsigned ctx = task->sched_ctx;
  Policy* p = policy_of(ctx);
  try {
    const double now = now_us();
    p->pending.fetch_add(1);
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
    double best_end = 0, best_predicted = 0;
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
    const int self = starpu_worker_get_id();  // -1: the application's thread
    // DTPS's class for a task of a batch of different weights; the other class only where
    // none of that one can run it.
    int only = uses_dtps(*p) && task->flops > 0 ? dispatch_class(c, task, work) : -1;
    int keeper = -1;  // the worker that keeps the task's unit (unit_split)
    task_info::Unit unit;      // its unit's handles, when unit_split placed it
    bool unplaced = false;  // a unit no plan placed: it follows this task (UnitTable::settle)
    // Units are split between classes (DTPS's plan, or where the GPU class started them) only
    // where both have workers: a run on one class pays nothing. `even` divides task by task.
    if (p->source != SpeedSource::Even && only < 0 && data && p->has_cpu.load(std::memory_order_relaxed) &&
        p->gpu_nodes.load(std::memory_order_relaxed) > 0) {
      const UnitTable::Place place = unit_split(*p, c, task, ctx, work, key, arch_cost, unit);
      only = place.cls, keeper = place.owner;
      unplaced = unit.n > 0 && place.cls < 0;
    }
    // No split to follow (DTPS's plan): the faster class alone where the other adds too little.
    // Tasks without data have no transfers nor buffers to contend for: they co-run.
    if (p->source != SpeedSource::Even && only < 0 && data && !open_plan(*p).splits() &&
        p->has_cpu.load(std::memory_order_relaxed)) {
      only = alone_class(*p, c, task, ctx, key, arch_cost);
      if (only >= 0) unplaced = false;
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
        // counted twice, a unit's tasks never left the GPUs that ran its first ones (simulated
        // h200x4, LWT 16384^2: 2 of 4 GPUs did 90% of the work, 28.2 ms; charged once, 14.4).
        const bool compete = gpus_compete && s.cuda;
        const double finish = compete ? std::max(queue_end, now) + run : expected_finish(now, queue_end, tr, run);
        // A core that must fetch the task's data from a GPU takes a unit off the node where
        // its other tasks run: the unit goes back over the same link for them, a transfer the
        // GPU's queue cannot hide (its link is busy with its own units). Counted as a cost.
        const double away = !s.cuda && !s.gpu ? tr : 0;
        double& al = alloc[s.node];
        if (al < 0) al = data && p->gpu_nodes.load(std::memory_order_relaxed) > 0 ? alloc_us(task, s.node) : 0.0;
        const double end = finish + (compete ? tr - least_gpu_transfer : 0) + away + al;
        // Ties (within kTieUs) go to the worker pushing the task (it ended the task before:
        // no wake, its caches hold the data; as ws pushes to its caller), else to the shorter
        // queue: tasks cheaper than kTieUs (no data, `even`'s tiny work) would all tie.
        const bool tie = best >= 0 && std::fabs(end - best_end) <= kTieUs;
        const bool shorter = best >= 0 && best != self &&
                             s.nqueued.load(std::memory_order_relaxed) <
                                 p->workers[std::size_t(best)].nqueued.load(std::memory_order_relaxed);
        if (best < 0 || (tie ? w == self || shorter : end < best_end))
          best = w, best_end = end, best_predicted = finish - queue_end;
      }
    }
    if (best < 0) {
      p->pending.fetch_sub(1);
      return -ENODEV;  // nobody in this context can run it: StarPU reports the task
    }
    // Without a plan, a unit the GPU class started stays there: task by task, a core would
    // take its cheap coarse levels (or a tile's cheap update) off the GPU, the unit would
    // cross the bus at each move, and its neighbours would wait on its halos. A unit a core
    // started stays free: pinned to that core, every later task touching it (a factorization's
    // tiles all are) would queue behind one core.
    if (unplaced && p->workers[std::size_t(best)].gpu)
      p->units.settle(unit.h.data(), unit.n, p->batch_id.load(std::memory_order_relaxed), UnitTable::Place{1, -1});
    enqueue(*p, task, c, ctx, best, best_predicted, work);
  } catch (const std::exception& e) {
    fail("push", e);
  }
  return 0;
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
  // Only a worker behind its own schedule (the tasks it took were expected to end by now): the
  // placement already balanced the expected finishes, and a move on time costs a transfer and
  // draws the unit's later tasks after it.
  // While DTPS splits the batch by units, each class keeps its own (seed 001 sets the split),
  // and a core its units (unit_split): a moved task would run after the thief's own unit.
  const bool split = open_plan(p).splits();
  if (split && !me.gpu) return nullptr;
  // Nor across classes a task of a codelet that runs on one class alone (push, kMinCoRunGain).
  for (WorkerSlot& s : p.workers)
    if (s.member && s.id != w && (!split || s.gpu == me.gpu) && s.nqueued.load(std::memory_order_relaxed) > 0 &&
        get(s.pipe_end) < now) {
      const double left = std::max(now, get(s.pipe_end)) + get(s.exp_len) - now;
      if (left > most) most = left, victim = s.id;
    }
  // A queue its owner drains within an idle poll or two is not worth the victim's lock (the
  // submitter may be waiting for it) nor a cold start elsewhere.
  if (victim < 0 || most < kMinStealUs) return nullptr;
  WorkerSlot& v = p.workers[std::size_t(victim)];
  std::unique_lock<Mutex> g(v.queue_mutex, std::try_to_lock);
  if (!g.owns_lock()) return nullptr;  // busy: later
  const double there_end = std::max(now, get(v.pipe_end)) + get(v.exp_len);
  double here = 0;
  QueuedTask q;
  const double late = now - get(v.pipe_end);  // how far the victim slipped behind its schedule
  // Under the victim's lock: the cheap tests first, a few tasks from the back only.
  const bool took = v.member && late > 0 && v.queue.pop_back_if(kStealScan, &q, [&](const QueuedTask& t) {
    auto* task = static_cast<starpu_task*>(t.task);
    auto& c = *static_cast<CodeletState*>(t.codelet);
    if (me.gpu != v.gpu && c.alone.load(std::memory_order_relaxed) == int(v.gpu)) return false;
    // Nor data a core would have to pin first (push).
    const bool data = !p.one_node && STARPU_TASK_GET_NBUFFERS(task);
    const double pin = data && !me.cuda ? alloc_us(task, me.node) : 0.0;
    if (pin > 0 && !split) return false;
    // Nor, without a plan, inputs that are on a GPU only (a unit the GPU class started, which
    // push keeps there): the unit would cross the bus out and back, and StarPU's CUDA worker
    // runs its node's copies on its own thread, so the GPU's own tasks wait behind them.
    if (!split && !me.cuda && v.cuda && data && task_info::missing_on(task, me.node) > 0) return false;
    // The thief's own expected time, not the policy's plan: a move is taken back only by the
    // next idle moment, and a core's GEMM tile can outlast the GPU's whole queue.
    const double run = base_us(p, c, task, ctx, w, task_key(task)) *
                       std::max(1.0, get(c.scale[std::size_t(w)]));
    // Only a slip longer than half the task here: placement by expected finish already
    // balanced the plan, and a move costs a transfer and draws the unit's later tasks after it.
    if (2 * late <= run || p.cfg.threshold * run >= there_end - now) return false;
    if (!starpu_worker_can_execute_task_first_impl(unsigned(w), task, nullptr)) return false;
    const double tr = data ? starpu_task_expected_data_transfer_time_for(task, unsigned(w)) : 0;
    here = std::max(0.0, tr) + run + pin;
    return 2 * late > here && p.cfg.threshold * here < there_end - now;
  });
  if (took) {
    add(v.exp_len, -q.predicted_us);
    publish(v);
    starpu_sched_ctx_list_task_counters_decrement(ctx, victim);
  }
  g.unlock();
  if (!took) return nullptr;
  p.moved.fetch_add(1, std::memory_order_relaxed);
  me.pipe_end = std::max(now, get(me.pipe_end)) + here;
  return static_cast<starpu_task*>(q.task);
}

starpu_task* pop(unsigned ctx) {
  Policy* p = policy_of(ctx);
  const int w = starpu_worker_get_id_check();
  WorkerSlot& s = p->workers[std::size_t(w)];
#ifndef STARPU_SIMGRID
  if (s.clock_state.load(std::memory_order_relaxed) == 0)  // pop runs on the worker's thread
    s.clock_state.store(pthread_getcpuclockid(pthread_self(), &s.thread_clock) == 0 ? 1 : 2, std::memory_order_release);
#endif
  try {
    const double now = now_us();
    if (s.nqueued.load(std::memory_order_relaxed) == 0) {
      starpu_task* task = nullptr;
      if (s.member && p->rebalance) task = take_from_busiest(*p, ctx, w, now);
      if (task) return task;
      // A CPU worker pops only when it runs nothing: what it started and never saw end were
      // StarPU's internal tasks (no post_exec). With nothing submitted, no worker runs anything.
      if (!s.running.empty() && (!s.cuda || starpu_task_nsubmitted() == 0)) {
        p->pending.fetch_sub(long(s.running.size()));
        if (emu::configured()) p->running_in_class[s.gpu].fetch_sub(int(s.running.size()), std::memory_order_relaxed);
        s.running.clear();
      }
      // Sampling (/proc, NVML) and training take up to milliseconds: an idle CPU worker does
      // them; a GPU's thread samples and ends batches only where no CPU worker is there to,
      // and with nothing in flight (its pipeline may still run a task when it finds its queue
      // empty).
      if (!s.member || (s.cuda && (p->has_cpu.load(std::memory_order_relaxed) ||
                                   p->pending.load(std::memory_order_relaxed) != 0)))
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
      const bool sample = uses_fnn(*p) && !p->lone.load(std::memory_order_relaxed) &&
                          now - get(p->features_us) >= kFeaturesTtlUs;
      // Nor does a GPU's thread train: a first training takes milliseconds a codelet, and the
      // program's next tasks would wait for it. deinit trains what is left.
      const bool due = batch_end_due(*p, now), to_train = !s.cuda && p->train_due.load(std::memory_order_relaxed);
      if (sample || due || to_train) {
        starpu_worker_relax_on();
        if (sample) sample_features(*p, now);
        if (due) end_batch(*p, false);
        if (to_train) train_models(*p);
        starpu_worker_relax_off();
      }
      return nullptr;
    }
    QueuedTask q;
    {
      QueueLock g(s.queue_mutex);
      if (!s.queue.pop_ready(&q, [&](void* t) { return pop_cost(*p, s, static_cast<starpu_task*>(t)); }))
        return nullptr;
      add(s.exp_len, -q.predicted_us);
      publish(s);
    }
    s.pipe_end = std::max(now, get(s.pipe_end)) + q.predicted_us;
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
  const double now = now_us();
  auto* c = static_cast<CodeletState*>(task->sched_data);
  // The features at its start, as last sampled (sample_features): no probing on this thread.
  if (c->model) {
    std::unique_lock<Mutex> g(s.latest_mutex, std::try_to_lock);
    if (g.owns_lock()) s.features = s.latest;
  }
  const TaskKey key = task_key(task);
  s.running.push_back(Running{task, c, now, task_info::work(task), s.features, key.footprint, key.work});
  if (emu::configured()) p->running_in_class[s.gpu].fetch_add(1, std::memory_order_relaxed);
}

// A task's time on worker w into its arch's costs, as the arch's (over rel[w]); rel[w] follows
// its time over the arch's for a footprint the arch has measured, where the arch has other
// members to compare with (alone, rel and the arch's time would only trade places).
void record_cost(Policy& p, CodeletState& c, int w, const Running& r, double dt) {
  const std::size_t a = p.arch_of[std::size_t(w)];
  bool shared = false;
  for (const WorkerSlot& o : p.workers) shared = shared || (o.member && o.id != w && p.arch_of[std::size_t(o.id)] == a);
  WriteLock g(c.costs_lock);
  double rel = get(c.rel[std::size_t(w)]), arch = 0;
  if (shared && c.costs.size_us(a, r.footprint, &arch)) {
    rel = (1 - kRelEwma) * rel + kRelEwma * dt / arch;
    c.rel[std::size_t(w)].store(rel, std::memory_order_relaxed);
  }
  c.costs.record(a, r.footprint, r.cost_work, dt / rel);
}

// The task's time runs from its start, or from the end of the one before it on this worker
// when StarPU pipelined them (pre_exec of the next before post_exec of this one).
void post_exec(starpu_task* task, unsigned ctx) {
  if (!task->sched_data) return;
  Policy* p = policy_of(ctx);
  const int w = starpu_worker_get_id_check();
  WorkerSlot& s = p->workers[std::size_t(w)];
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
    CodeletState& c = *r.codelet;
    const double rate = r.work / dt;  // seed 000 eq. 5: D / T
    const long runs = c.done[w].runs.fetch_add(1, std::memory_order_relaxed) + 1;  // this one included
    record_cost(*p, c, w, r, dt);
    if (runs <= TaskCosts::kWarmRuns) c.stale = true;  // a first timing changes the speeds most
    if (c.model) s.pending.push_back(PendingSample{&c, r.features, rate});
    ++s.tasks;
    s.busy_us += dt;
    if (end - s.window_us >= kFeaturesTtlUs) {  // our own share of its time: the load that is ours
      if (s.window_us > -1e299) s.own_busy = std::clamp((s.busy_us - s.busy_at_window) / (end - s.window_us), 0.0, 1.0);
      s.window_us = end;
      s.busy_at_window = s.busy_us;
    }
    s.work += r.work;
    add(s.batch_busy_us, dt);
    s.batch_end_us = end;
    add(s.batch_work, r.work);
    add(c.done[w].batch_work, r.work);
    add(c.done[w].work, r.work);
    add(c.done[w].busy_us, dt);
    // This task and any started before it on this worker have ended (a worker ends its tasks
    // in order); those never seen ending were StarPU's internal tasks.
    const long ended = long(it - s.running.begin()) + 1;
    s.running.erase(s.running.begin(), it + 1);
    if (emu::configured()) p->running_in_class[s.gpu].fetch_sub(int(ended), std::memory_order_relaxed);
    if (s.running.empty() && s.nqueued.load(std::memory_order_relaxed) == 0) s.pipe_end = end;
    if (s.pending.size() >= kMergeEvery) merge_samples(s, std::size_t(w), false);
    if (p->pending.fetch_sub(ended) == ended) {
      merge_samples(s, std::size_t(w), false);
      double idle = -1;
      p->idle_since.compare_exchange_strong(idle, end);
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

bool end_batch_now() {
  std::lock_guard<Mutex> g(registry_mutex);
  bool ended = false;
  const double now = now_us();
  for (Policy* p : registry) {
    ended = ended || p->in_batch;
    p->program_ends = true;
    end_batch(*p, true, now);
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
    r.uf = get(s.uf);
    r.own_busy = get(s.own_busy);
    d.workers.push_back(r);
  }
  return d;
}

}  // namespace sched
