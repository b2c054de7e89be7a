// The five policies of the plugin (DESIGN §6): one mechanism, five sources of target shares.
//   even      equal shares: the pure division method (seed 000 Fig. 1)
//   boyer     first units timed, then shares proportional to measured D/T (seed 000 eqs. 1-4)
//   fnn       shares from FNN-predicted CP (seed 000 eq. 7), re-predicted on imbalance (eq. 8)
//   dtps      CPU-class share alpha, GPU-class share beta, corrected per batch (seed 001 §1.3)
//   fnn-dtps  FNN shares inside each class, DTPS feedback on the CPU/GPU split
//
// Locking rules (StarPU's conventions, as in eager_central_policy.c):
// - One mutex per policy instance guards the balancer, the codelet table and the batch state.
// - push and pop: starpu_worker_relax_on(), lock, starpu_worker_relax_off(); decide whom to
//   wake under the lock, wake after unlocking.
// - pop first reads atomic queue lengths without the lock (as eager reads its fifo): an idle
//   worker with nothing to take returns at once; a push wakes it. Counters are written under
//   the lock.
// - pre_exec and post_exec run on the worker's thread and write only that worker's slot and
//   its own entry of T^unit (an atomic other workers read). post_exec takes the lock only to
//   merge its FNN samples (every kMergeEvery) and at the end of a batch, when every worker is
//   idle and nothing else writes the slots.
// - No C++ exception leaves a callback: each entry point catches, reports one line, aborts.
#include <starpu.h>
#include <starpu_scheduler.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "fnn/fnn.hpp"
#include "fnn/io.hpp"
#include "fnn/train.hpp"
#include "scheduler/balancer.hpp"
#include "scheduler/config.hpp"
#include "scheduler/dtps.hpp"
#include "scheduler/emulation.hpp"
#include "scheduler/plugin.hpp"
#include "scheduler/probe.hpp"

namespace sched {
namespace {

enum class Source { Even, Boyer, Fnn, Dtps, FnnDtps };

// What the policy knows about one codelet (one job kind): per-worker speed and its model.
struct CodeletState {
  std::string name;
  // EWMA of T/D per worker (0 = not measured yet): written by that worker alone after its
  // tasks, read by others under the lock.
  std::unique_ptr<std::atomic<double>[]> sec_per_byte;
  std::atomic<bool> shares_stale{true};
  std::atomic<unsigned long long> batch_bytes{0};
  // FNN samples per worker, newest last: features at task start and the raw D/T (CP targets
  // are D/T normalised by max_rate at training).
  std::vector<std::deque<std::pair<fnn::Features, double>>> recent;
  std::size_t new_samples = 0;  // merged since the last training
  double max_rate = 0;
  std::unique_ptr<fnn::Model> model;
  bool model_loaded = false, trained = false;
  std::vector<double> shares;    // the last computed target shares, and when
  double shares_us = -1;
  int index = 0;                 // in Policy::codelets
  std::vector<char> eligible;    // workers with an implementation, when fixed per codelet
  bool timed_everywhere = false;  // every worker that can run it has timed it (stays true)
  long placed_units = 0;         // new units placed in this batch
  double last_units = 0;         // ... and in the last batch that placed any
};

// An FNN sample a worker recorded, merged into its codelet's samples under the lock.
struct PendingSample {
  std::size_t worker;  // index in Policy::workers
  CodeletState* codelet;
  fnn::Features x;
  double rate;
};
constexpr std::size_t kMergeEvery = 64;

// Shares are re-predicted at most this often (and at every batch start and re-balancing):
// live features change slowly next to per-task costs of a few microseconds.
constexpr double kSharesTtlUs = 20000;
// Features are sampled at task start at most this often per worker.
constexpr double kFeaturesTtlUs = 5000;

struct WorkerSlot {
  int id = 0;  // StarPU worker id
  bool gpu = false;  // in the GPU class: a CUDA worker, or one FNNDTPS_EMULATED_GPUS names
  double peak_F = 0;        // the probe's F before any emulated slowdown
  double emulated = 1.0;    // the emulated slowdown factor the probe last saw
  std::string name;
  double start_us = 0;
  fnn::Features features{};  // at the start of the running task
  double features_us = -1;   // when they were sampled
  unsigned tasks = 0, units = 0;
  double busy_us = 0, bytes = 0;
  // This batch, written by the worker's own thread: its time running tasks and bytes done.
  // Atomic because an explicit end of batch (fnndtps_end_batch) may read them mid-batch.
  std::atomic<double> batch_busy_us{0}, batch_bytes{0};
  std::vector<PendingSample> pending;
};

// Samples kept per worker and codelet. Kept per worker so that a fast worker's thousands of
// tasks do not crowd out a slow one's few (test_policies' Fnn.AVerySlowWorkerGetsNoUnits: with
// a pooled newest-600 the 200x-slowed worker kept getting units).
constexpr std::size_t kSamplesPerWorker = 64;
constexpr std::size_t kTrainEvery = 32;
constexpr std::size_t kTunePerWorker = 4;  // online steps per worker at each later training
constexpr double kEwma = 0.1;  // weight of a new timing in T^unit (smooths timer and wake-up noise)

struct Policy {
  Source source;
  Config cfg;
  bool rebalance = false;
  starpu_pthread_mutex_t mutex;
  std::deque<WorkerSlot> workers;  // stable, never copied (atomics inside)
  Balancer balancer;
  std::unordered_map<const starpu_codelet*, CodeletState*> slot_of;
  std::vector<std::unique_ptr<CodeletState>> codelets;  // stable addresses
  std::unique_ptr<Probe> probe;
  DtpsStore dtps;
  // Queue lengths and "found nothing at its last pop", readable without the lock so that
  // idle workers do not contend for it (eager's fast path); written under the lock.
  std::unique_ptr<std::atomic<int>[]> queued;
  std::atomic<long> queued_total{0}, queued_shared{0};
  std::unique_ptr<std::atomic<bool>[]> waiting;
  // Pushes so far, and the count at each worker's last re-balancing that found nothing to
  // take: an idle worker does not retry (and take the lock) until something was pushed.
  std::atomic<long> pushes{0};
  std::unique_ptr<std::atomic<long>[]> futile_at;

  // Batch state: from the first push after all workers went idle to the next such moment.
  std::atomic<long> in_flight{0};
  bool in_batch = false;
  double batch_start_us = 0;
  int batches = 0;
  long moved_tasks = 0;
  double shares_reset_us = -1e300;
  std::vector<std::string> log;  // summary lines about models and DTPS

  explicit Policy(Source s, std::size_t n) : source(s), balancer(n) {}
};

// A problem the program survives (a corrupt or unwritable model file): one line on stderr
// now, and in the summary.
void warn(Policy& p, const std::string& what) {
  std::fprintf(stderr, "fnndtps: %s\n", what.c_str());
  p.log.push_back(what);
}

[[noreturn]] void fail(const char* where, const std::exception& e) {
  std::fprintf(stderr, "fnndtps: %s: %s\n", where, e.what());
  std::abort();
}

Policy* policy_of(unsigned ctx) { return static_cast<Policy*>(starpu_sched_ctx_get_policy_data(ctx)); }

std::string model_path(const Policy& p, const std::string& codelet) {
  std::string safe;
  for (char c : codelet) safe += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return p.cfg.model_dir + "/" + safe + ".fnn";
}

// The codelet's state, created (and its saved model loaded) on first sight. Under the lock.
CodeletState& codelet_state(Policy& p, starpu_task* task) {
  const auto it = p.slot_of.find(task->cl);
  if (it != p.slot_of.end()) return *it->second;
  p.codelets.push_back(std::make_unique<CodeletState>());
  CodeletState& c = *p.codelets.back();
  c.index = int(p.codelets.size()) - 1;
  const char* name = starpu_task_get_name(task);
  c.name = name ? name : (task->cl && task->cl->name ? task->cl->name : "unnamed");
  c.sec_per_byte = std::make_unique<std::atomic<double>[]>(p.workers.size());
  c.recent.resize(p.workers.size());
  for (std::size_t w = 0; w < p.workers.size(); ++w) c.sec_per_byte[w] = 0.0;
  if (p.source == Source::Fnn || p.source == Source::FnnDtps) {
    try {
      c.model = std::make_unique<fnn::Model>(fnn::load_model(model_path(p, c.name)));
      c.model_loaded = c.trained = true;
      p.log.push_back("model " + c.name + ": loaded from " + model_path(p, c.name));
    } catch (const std::exception& e) {
      // No model yet (cold start) or a corrupt one: start fresh, say so once.
      if (std::FILE* f = std::fopen(model_path(p, c.name).c_str(), "r")) {
        std::fclose(f);
        warn(p, "model " + c.name + " ignored, starting afresh (" + e.what() +
                    "); delete the file or set FNNDTPS_MODEL_DIR");
      }
      c.model = std::make_unique<fnn::Model>(fnn::Model::random(std::size_t(p.cfg.hidden), 1));
      // seed 000 eq. (12) gives UF's memberships (a = -15/+15, c = 0.5) and no others; for
      // F, M, P and UM a gentler a = -5/+5 trains to a third of the error (notes/fnn.md).
      for (std::size_t input : {0u, 1u, 2u, 4u}) c.model->set_membership(input, fnn::Membership{-5, 0.5, 5, 0.5});
    }
  }
  p.slot_of[task->cl] = &c;
  return c;
}

// A task's data unit: the largest handle it writes (or reads, when it writes none), and the
// largest handle it touches that a worker already owns (data stays put).
struct UnitChoice {
  const void* unit = nullptr;
  double bytes = 0;
  int owner = -1;
};
UnitChoice unit_of(const Policy& p, starpu_task* task) {
  UnitChoice u;
  double best_written = -1, best_any = -1, best_owned = -1;
  const void* any = nullptr;
  const unsigned n = STARPU_TASK_GET_NBUFFERS(task);
  for (unsigned i = 0; i < n; ++i) {
    starpu_data_handle_t h = STARPU_TASK_GET_HANDLE(task, i);
    const double size = double(starpu_data_get_size(h));
    if ((STARPU_TASK_GET_MODE(task, i) & STARPU_W) && size > best_written) {
      best_written = size;
      u.unit = h;
      u.bytes = size;
    }
    if (size > best_any) {
      best_any = size;
      any = h;
    }
    const int o = p.balancer.owner(h);
    if (o >= 0 && size > best_owned) {
      best_owned = size;
      u.owner = o;
    }
  }
  if (!u.unit && any) {
    u.unit = any;
    u.bytes = best_any;
  }
  // The unit's own owner comes first; a handle it only reads decides only for a new unit.
  if (const int own = p.balancer.owner(u.unit); own >= 0) u.owner = own;
  if (u.bytes <= 0) u.bytes = 1;  // tasks without data count one unit each
  return u;
}

bool can_run(const Policy& p, int w, starpu_task* task) {
  return starpu_worker_can_execute_task_first_impl(unsigned(p.workers[std::size_t(w)].id), task, nullptr);
}

double now_us() { return starpu_timing_now(); }

// --------------------------------------------------------------- share sources
std::vector<double> boyer_shares(const Policy& p, const CodeletState& c) {
  // seed 000 eqs. 1-4: shares proportional to the measured speeds D/T. Every worker that can
  // run the codelet has timed a unit by now (the cold start in push); one that cannot has
  // none and gets no share. Nothing timed at all: equal shares.
  std::vector<double> s(p.workers.size(), 0.0);
  bool any = false;
  for (std::size_t w = 0; w < s.size(); ++w) {
    const double spb = c.sec_per_byte[w].load(std::memory_order_relaxed);
    if (spb > 0) s[w] = 1.0 / spb, any = true;
  }
  return any ? s : std::vector<double>(s.size(), 1.0);
}

// The FNN's target CP = f(D/T) (seed 000 eqs. 5, 21) with f(r) = (r / r_max)^(1/4): the
// fourth root spreads the small abilities (a CPU core beside a GPU is ~1/500 of it) over the
// sigmoid output's range, where an absolute error of a few hundredths would otherwise be a
// several-fold error in a CPU core's share. Shares use the inverse.
constexpr double kCpuRoot = 4;
double cp_from_rate(double rate, double max_rate) { return std::pow(rate / max_rate, 1.0 / kCpuRoot); }
double ability_from_cp(double cp) { return std::pow(std::clamp(cp, 1e-3, 1.0), kCpuRoot); }

std::vector<double> fnn_shares(Policy& p, const CodeletState& c) {
  if (!c.trained) return boyer_shares(p, c);  // cold start: Boyer's measurement trains the model
  // seed 000 eq. 7: D_i = CP_i / sum_j CP_j x D, CP_i predicted from the live features.
  const std::vector<fnn::Features> f = p.probe->features();
  std::vector<double> s(p.workers.size());
  for (std::size_t w = 0; w < s.size(); ++w) s[w] = ability_from_cp(c.model->predict(f[w]));
  return s;
}

// Splits class totals alpha (CPU) and 1 - alpha (GPU) over the workers of each class in
// proportion to `within`.
std::vector<double> class_split(const Policy& p, double alpha, const std::vector<double>& within) {
  double sum[2] = {0, 0};
  for (std::size_t w = 0; w < p.workers.size(); ++w) sum[p.workers[w].gpu] += within[w];
  std::vector<double> s(p.workers.size());
  for (std::size_t w = 0; w < s.size(); ++w) {
    const int k = p.workers[w].gpu;
    const double cls = k ? 1.0 - alpha : alpha;
    s[w] = sum[k] > 0 ? cls * within[w] / sum[k] : 0.0;
  }
  return s;
}

std::vector<double> source_shares(Policy& p, CodeletState& c) {
  const std::size_t n = p.workers.size();
  switch (p.source) {
    case Source::Even:
      return std::vector<double>(n, 1.0);
    case Source::Boyer:
      return boyer_shares(p, c);
    case Source::Fnn:
      return fnn_shares(p, c);
    case Source::Dtps:
    case Source::FnnDtps: {
      const std::vector<double> within =
          p.source == Source::Dtps ? std::vector<double>(n, 1.0) : fnn_shares(p, c);
      const DtpsController* ctl = p.dtps.find(c.name);
      if (!ctl || ctl->turn() == 0) {
        // No DTPS history: the initial split is the FNN's for fnn-dtps and the measured
        // speeds for dtps (equal shares per worker would give 15 CPU cores 15/16 of a GEMM
        // that the GPU does 100x faster: 27 s for the first product on the GPU machine).
        return p.source == Source::Dtps ? boyer_shares(p, c) : within;
      }
      return class_split(p, ctl->alpha(), within);
    }
  }
  return std::vector<double>(n, 1.0);
}

std::vector<double> compute_shares(Policy& p, CodeletState& c) {
  std::vector<double> s = source_shares(p, c);
  // Units are indivisible (seed 000's data units): a worker whose share of a batch is under
  // one whole unit would finish that unit after the others finish everything, so it gets
  // none. The batch size is the last batch's count of new units. `even` keeps pure division.
  if (p.source == Source::Even || c.last_units < 1) return s;
  drop_fractional_workers(s, c.eligible, c.last_units);  // balancer.hpp
  if (p.source == Source::Boyer) return s;
  // The same test on the measured speeds: predicted and corrected shares can be off by the
  // one unit that matters. On the GPU machine the FNN gave CPU cores whole GEMM C tiles (2 s
  // each, against 0.3 s for the GPU to do everything) and lost 4x under a perturbed GPU.
  std::vector<double> measured = boyer_shares(p, c);
  drop_fractional_workers(measured, c.eligible, c.last_units);
  std::vector<double> kept = s;
  for (std::size_t w = 0; w < s.size(); ++w)
    if (measured[w] <= 0 && c.sec_per_byte[w].load(std::memory_order_relaxed) > 0) kept[w] = 0;
  for (double x : kept)
    if (x > 0) return kept;
  return measured;  // the shares kept nobody the speeds allow: follow the speeds
}

const std::vector<double>& shares_for(Policy& p, CodeletState& c, double now) {
  if (c.shares_stale.exchange(false) || now - c.shares_us > kSharesTtlUs) {
    c.shares = compute_shares(p, c);
    c.shares_us = now;
  }
  return c.shares;
}

void invalidate_shares(Policy& p) {
  for (auto& c : p.codelets) c->shares_stale = true;
}

// --------------------------------------------------------------- batches
// Moves the samples workers recorded into their codelets. Under the lock.
void merge_samples(WorkerSlot& s) {
  for (const PendingSample& x : s.pending) {
    CodeletState& c = *x.codelet;
    c.max_rate = std::max(c.max_rate, x.rate);
    auto& mine = c.recent[x.worker];
    mine.emplace_back(x.x, x.rate);
    if (mine.size() > kSamplesPerWorker) mine.pop_front();
    ++c.new_samples;
  }
  s.pending.clear();
}

void train_models(Policy& p) {
  for (auto& cp : p.codelets) {
    CodeletState& c = *cp;
    // Training waits for a few dozen new samples: batches can be short (StarPU idles
    // between an application's submissions), and each costs at most microseconds.
    if (!c.model || c.new_samples < kTrainEvery || c.max_rate <= 0) continue;
    c.new_samples = 0;
    // Every worker's newest samples, interleaved newest first so that each worker weighs
    // alike (first training: up to kSamplesPerWorker each; later: kTunePerWorker each).
    const std::size_t each = c.trained ? kTunePerWorker : kSamplesPerWorker;
    std::vector<fnn::Sample> set;
    for (std::size_t i = 0; i < each; ++i)
      for (const auto& mine : c.recent)
        if (i < mine.size()) {
          const auto& [x, rate] = mine[mine.size() - 1 - i];
          set.push_back(fnn::Sample{x, cp_from_rate(rate, c.max_rate)});
        }
    if (!c.trained) {
      fnn::TrainOptions opt;  // seed 000 §5.2: pre-training, then fine-tuning
      // The tool's epochs, bounded to ~10^5 SGD steps: it runs under the lock, at a batch end
      // (1024 samples from 16 workers would otherwise take ~4x10^5 steps).
      const double scale = std::min(1.0, 100.0 / double(set.size()));
      opt.pretrain.epochs = std::max<std::size_t>(50, std::size_t(double(opt.pretrain.epochs) * scale));
      opt.finetune.epochs = std::max<std::size_t>(15, std::size_t(double(opt.finetune.epochs) * scale));
      fnn::train_two_step(*c.model, set, opt);
      c.trained = true;
      p.log.push_back("model " + c.name + ": trained on " + std::to_string(set.size()) + " samples");
    } else {
      for (const fnn::Sample& x : set) fnn::fine_tune(*c.model, x);
    }
  }
}

// seed 001 §1.3 at a batch end: the delay coefficient from the classes' execution times
// corrects the CPU/GPU split of the batch's dominant codelet for the next batch of the same
// kind. A class's time is its busiest worker's time running tasks, not its finish time: in a
// task graph each class waits on the other's results (the LWT's halos and levels), and the
// finish times then come out equal whatever the split (measured on the GPU machine: within 1%
// in every batch, so the split never moved).
void dtps_feedback(Policy& p) {
  if (p.source != Source::Dtps && p.source != Source::FnnDtps) return;
  const CodeletState* dominant = nullptr;
  unsigned long long most = 0;
  for (const auto& c : p.codelets)
    if (c->batch_bytes > most) {
      most = c->batch_bytes;
      dominant = c.get();
    }
  if (!dominant) return;
  const std::string& kind = dominant->name;
  DtpsController& ctl = p.dtps.controller(kind);
  double busy[2] = {0, 0}, bytes[2] = {0, 0};
  for (const WorkerSlot& s : p.workers) {
    busy[s.gpu] = std::max(busy[s.gpu], s.batch_busy_us.load(std::memory_order_relaxed));
    bytes[s.gpu] += s.batch_bytes.load(std::memory_order_relaxed);
  }
  const double t_cpu = busy[0], t_gpu = busy[1];
  const double total = bytes[0] + bytes[1];
  const double realised = total > 0 ? bytes[0] / total : ctl.alpha();
  const DtpsUpdate u = ctl.end_batch(t_cpu, t_gpu, realised);
  if (p.cfg.verbose)
    std::fprintf(stderr, "fnndtps: batch %d %s: T_cpu %.3f ms T_gpu %.3f ms m %.3f (%s) alpha %.4f -> %.4f\n",
                 p.batches, kind.c_str(), t_cpu / 1e3, t_gpu / 1e3, u.m_before, to_string(u.kind),
                 u.alpha_before, ctl.alpha());
}

// Under the lock. When every worker is idle nothing writes their slots, so their samples
// merge here; an explicit end with tasks still running leaves those to their own merges.
void end_batch(Policy& p) {
  p.in_batch = false;
  ++p.batches;
  if (p.in_flight == 0)
    for (WorkerSlot& s : p.workers) merge_samples(s);
  dtps_feedback(p);
  train_models(p);
}

void start_batch(Policy& p) {
  p.in_batch = true;
  p.batch_start_us = now_us();
  for (WorkerSlot& s : p.workers) {
    s.batch_busy_us = 0;
    s.batch_bytes = 0;
  }
  for (auto& c : p.codelets) {
    c->batch_bytes = 0;
    if (c->placed_units > 0) c->last_units = double(c->placed_units);
    c->placed_units = 0;
  }
  p.balancer.start_batch();
  if (p.batch_start_us - p.shares_reset_us > kSharesTtlUs) {  // re-predict for the new batch
    invalidate_shares(p);
    p.shares_reset_us = p.batch_start_us;
  }
}

// The running policy instance, for fnndtps_end_batch (one StarPU instance per process).
std::atomic<Policy*> active{nullptr};

// --------------------------------------------------------------- StarPU callbacks
void init(unsigned ctx, Source source) {
  try {
    const unsigned n = starpu_worker_get_count();
    auto* p = new Policy(source, n);
    p->cfg = Config::from_env();
    p->rebalance = p->cfg.rebalance >= 0 ? p->cfg.rebalance == 1
                                         : source == Source::Fnn || source == Source::FnnDtps;
    if (starpu_pthread_mutex_init(&p->mutex, nullptr) != 0) throw std::runtime_error("cannot create the policy mutex");
    p->queued = std::make_unique<std::atomic<int>[]>(n);
    p->waiting = std::make_unique<std::atomic<bool>[]>(n);
    p->futile_at = std::make_unique<std::atomic<long>[]>(n);
    for (unsigned w = 0; w < n; ++w) {
      p->queued[w] = 0;
      p->waiting[w] = false;
      p->futile_at[w] = -1;
    }
    std::vector<WorkerSpec> specs;
    for (unsigned w = 0; w < n; ++w) {
      WorkerSlot& s = p->workers.emplace_back();
      s.id = int(w);
      const bool cuda = starpu_worker_get_type(int(w)) == STARPU_CUDA_WORKER;
      s.gpu = cuda || emu::gpu_class(int(w));
      char name[64];
      starpu_worker_get_name(int(w), name, sizeof name);
      s.name = name;
      WorkerSpec spec;
      spec.kind = cuda ? WorkerKind::Cuda : WorkerKind::Cpu;
      if (cuda) {
        spec.cuda_device = starpu_worker_get_devid(int(w));
      } else if (const int bind = starpu_worker_get_bindid(int(w)); bind >= 0) {
        const int os = starpu_get_pu_os_index(unsigned(bind));
        if (os >= 0) spec.cpus.push_back(unsigned(os));
      }
      specs.push_back(spec);
    }
    p->probe = std::make_unique<Probe>(specs);
    for (std::size_t w = 0; w < p->workers.size(); ++w) p->workers[w].peak_F = p->probe->static_features(w).F;
    bool has[2] = {false, false};
    for (const WorkerSlot& s : p->workers) has[s.gpu] = true;
    p->dtps.set_classes(has[0], has[1]);
    if (source == Source::Dtps || source == Source::FnnDtps) {
      try {
        if (p->dtps.load(p->cfg.model_dir)) {
          p->log.push_back("dtps: ratios loaded from " + DtpsStore::file_in(p->cfg.model_dir).string());
        }
      } catch (const std::exception& e) {
        warn(*p, std::string("saved DTPS ratios ignored, starting afresh (") + e.what() +
                     "); delete the file or set FNNDTPS_MODEL_DIR");
      }
      p->dtps.set_classes(has[0], has[1]);
    }
    // The emulation settings were read (and checked) above; a GPU class of workers that do
    // not exist is wrong too.
    if (emu::last_gpu_class_worker() >= int(n))
      throw std::invalid_argument("FNNDTPS_EMULATED_GPUS names worker " + std::to_string(emu::last_gpu_class_worker()) +
                                  " but StarPU has " + std::to_string(n) + " workers");
    starpu_sched_ctx_set_policy_data(ctx, p);
    active = p;
  } catch (const std::invalid_argument& e) {  // a bad FNNDTPS_ setting
    std::fprintf(stderr, "fnndtps: %s\n", e.what());
    std::exit(2);
  } catch (const std::exception& e) {
    fail("init", e);
  }
}

void print_summary(Policy& p) {
  static const char* names[] = {"even", "boyer", "fnn", "dtps", "fnn-dtps"};
  std::fprintf(stderr, "fnndtps summary: policy %s, %d batches, %ld tasks moved by re-balancing%s%s\n",
               names[int(p.source)], p.batches, p.moved_tasks, emu::configured() ? ", " : "",
               emu::describe().c_str());
  std::fprintf(stderr, "  %-24s %8s %8s %12s %12s %8s\n", "worker", "tasks", "units", "busy ms", "MB", "share");
  for (std::size_t w = 0; w < p.workers.size(); ++w) {
    WorkerSlot& s = p.workers[w];
    char name[64];
    starpu_worker_get_name(s.id, name, sizeof name);  // names exist once workers started
    s.name = name;
    std::fprintf(stderr, "  %-24s %8u %8u %12.2f %12.2f %8.4f\n", s.name.c_str(), s.tasks, s.units, s.busy_us / 1e3,
                 s.bytes / 1e6, p.balancer.shares()[w]);
  }
  for (const std::string& line : p.log) std::fprintf(stderr, "  %s\n", line.c_str());
  if (p.source == Source::Dtps || p.source == Source::FnnDtps)
    for (const std::string& k : p.dtps.kinds())
      std::fprintf(stderr, "  dtps %s: alpha %.4f (CPU class), turn %d\n", k.c_str(), p.dtps.find(k)->alpha(),
                   p.dtps.find(k)->turn());
}

void deinit(unsigned ctx) {
  Policy* p = policy_of(ctx);
  try {
    if (p->in_batch) end_batch(*p);
    if (p->cfg.save) {
      std::error_code ec;
      std::filesystem::create_directories(p->cfg.model_dir, ec);
      for (const auto& cp : p->codelets)
        if (const CodeletState& c = *cp; c.model && c.trained) {
          try {
            fnn::save_model(*c.model, model_path(*p, c.name));
            p->log.push_back("model " + c.name + ": saved to " + model_path(*p, c.name));
          } catch (const std::exception& e) {
            warn(*p, "model " + c.name + " not saved (" + e.what() + "); check FNNDTPS_MODEL_DIR");
          }
        }
      if ((p->source == Source::Dtps || p->source == Source::FnnDtps) && p->dtps.size() > 0) {
        try {
          p->dtps.save(p->cfg.model_dir);
          p->log.push_back("dtps: ratios saved to " + DtpsStore::file_in(p->cfg.model_dir).string());
        } catch (const std::exception& e) {
          warn(*p, std::string("DTPS ratios not saved (") + e.what() + "); check FNNDTPS_MODEL_DIR");
        }
      }
    }
    if (p->cfg.summary) print_summary(*p);
  } catch (const std::exception& e) {
    fail("deinit", e);
  }
  active = nullptr;
  starpu_pthread_mutex_destroy(&p->mutex);
  delete p;
}

// Whether some worker that can run the codelet has not timed one of its units yet. Timings
// never go back to 0, so once every worker has one (for a codelet whose eligible workers are
// fixed) the answer is remembered and the push path stops scanning the workers.
bool untimed(CodeletState& c, const std::vector<char>& eligible, bool fixed_eligibility) {
  if (c.timed_everywhere) return false;
  for (std::size_t w = 0; w < eligible.size(); ++w)
    if (eligible[w] && c.sec_per_byte[w].load(std::memory_order_relaxed) <= 0) return true;
  c.timed_everywhere = fixed_eligibility;
  return false;
}

int push(starpu_task* task) {
  Policy* p = policy_of(task->sched_ctx);
  int chosen = -1, thief = -1;
  try {
    starpu_worker_relax_on();
    STARPU_PTHREAD_MUTEX_LOCK(&p->mutex);
    starpu_worker_relax_off();
    if (!p->in_batch) start_batch(*p);
    CodeletState& c = codelet_state(*p, task);
    task->sched_data = &c;  // for post_exec, which runs without the lock
    const UnitChoice u = unit_of(*p, task);
    const std::size_t n = p->workers.size();
    // Who can run it depends on the codelet alone unless it has a can_execute callback.
    std::vector<char> own_eligible;
    if (task->cl->can_execute || c.eligible.empty()) {
      own_eligible.resize(n);
      for (std::size_t w = 0; w < n; ++w) own_eligible[w] = char(can_run(*p, int(w), task));
      if (!task->cl->can_execute) c.eligible = own_eligible;
    }
    const std::vector<char>& eligible = task->cl->can_execute ? own_eligible : c.eligible;
    if (u.owner >= 0 && eligible[std::size_t(u.owner)]) {
      chosen = u.owner;  // the unit's data is there
      if (p->balancer.owner(u.unit) != chosen) p->balancer.assign(u.unit, chosen, u.bytes);
    } else if (p->source != Source::Even && untimed(c, eligible, !task->cl->can_execute)) {
      // Cold start (seed 000 §3.2: every worker times a first unit): the first idle worker
      // takes it. Shares from untimed speeds would give a CPU core as much as a GPU.
      p->balancer.push_shared(Queued{task, u.unit, u.bytes, c.index});
      p->queued_shared.fetch_add(1, std::memory_order_relaxed);
      p->queued_total.fetch_add(1, std::memory_order_relaxed);
      p->pushes.fetch_add(1, std::memory_order_relaxed);
      ++p->in_flight;
      starpu_push_task_end(task);
      std::vector<int> wake;
      for (std::size_t w = 0; w < n; ++w)
        if (p->waiting[w] && eligible[w]) {
          p->waiting[w] = false;
          wake.push_back(p->workers[w].id);
        }
      STARPU_PTHREAD_MUTEX_UNLOCK(&p->mutex);
      for (int id : wake) starpu_wake_worker_relax_light(id);
      return 0;
    } else {
      p->balancer.set_shares(shares_for(*p, c, now_us()));
      chosen = p->balancer.place(u.unit, u.bytes, eligible);
      if (chosen >= 0) ++p->workers[std::size_t(chosen)].units;
      ++c.placed_units;
    }
    if (chosen < 0) {
      STARPU_PTHREAD_MUTEX_UNLOCK(&p->mutex);
      return -ENODEV;  // no worker can run it: StarPU reports the task
    }
    // Start moving the task's data now, as StarPU's dm* policies do, so transfers overlap
    // the work queued before it.
    const int id = p->workers[std::size_t(chosen)].id;
    if (starpu_get_prefetch_flag() && starpu_worker_get_memory_node(unsigned(id)) != STARPU_MAIN_RAM)
      starpu_prefetch_task_input_for(task, id);
    p->balancer.push(chosen, Queued{task, u.unit, u.bytes, c.index});
    p->queued[chosen].fetch_add(1, std::memory_order_relaxed);
    p->queued_total.fetch_add(1, std::memory_order_relaxed);
    p->pushes.fetch_add(1, std::memory_order_relaxed);
    ++p->in_flight;
    starpu_push_task_end(task);
    p->waiting[chosen] = false;
    // Another idle worker may take over queued units (eq. 8): wake one.
    if (p->rebalance && p->balancer.queued(chosen) > 1)
      for (std::size_t w = 0; w < n; ++w)
        if (p->waiting[w] && int(w) != chosen && eligible[w]) {
          thief = int(w);
          p->waiting[w] = false;
          break;
        }
    STARPU_PTHREAD_MUTEX_UNLOCK(&p->mutex);
  } catch (const std::exception& e) {
    fail("push", e);
  }
  starpu_wake_worker_relax_light(p->workers[std::size_t(chosen)].id);
  if (thief >= 0) starpu_wake_worker_relax_light(p->workers[std::size_t(thief)].id);
  return 0;
}

starpu_task* pop(unsigned ctx) {
  Policy* p = policy_of(ctx);
  const int w = starpu_worker_get_id_check();
  starpu_task* task = nullptr;
  // Nothing queued here and nothing to take: return without the lock (a push wakes us).
  // Reading the counters unlocked races only with a push that will wake this worker.
  if (p->queued[w].load(std::memory_order_relaxed) == 0 && p->queued_shared.load(std::memory_order_relaxed) == 0) {
    // Only a queue of two or more holds a unit worth taking: its owner is busy with the first.
    bool worth = false;
    if (p->rebalance && p->futile_at[w].load(std::memory_order_relaxed) != p->pushes.load(std::memory_order_relaxed))
      for (std::size_t i = 0; i < p->workers.size() && !worth; ++i)
        worth = p->queued[i].load(std::memory_order_relaxed) >= 2;
    if (!worth) {
      // StarPU's drivers poll while idle (non-blocking drivers, its default): write the flag
      // once, not on every poll, so idle workers do not keep taking its cache line.
      if (!p->waiting[w].load(std::memory_order_relaxed)) p->waiting[w].store(true, std::memory_order_relaxed);
      return nullptr;
    }
  }
  try {
    starpu_worker_relax_on();
    STARPU_PTHREAD_MUTEX_LOCK(&p->mutex);
    starpu_worker_relax_off();
    Queued q;
    const auto runs_here = [&](void* t) { return can_run(*p, w, static_cast<starpu_task*>(t)); };
    bool got = p->balancer.pop(w, &q);
    if (!got && p->balancer.shared() > 0 && p->balancer.pop_shared(w, &q, runs_here)) {
      got = true;
      p->queued_shared.fetch_sub(1, std::memory_order_relaxed);
      ++p->workers[std::size_t(w)].units;
      ++p->codelets[std::size_t(q.codelet)]->placed_units;
    }
    if (!got && p->rebalance && p->balancer.queued_total() > p->balancer.shared()) {
      // seed 000 eq. 8 and steps 1-7 of §3.2: the idle worker takes whole queued units
      // from the worker with the largest remaining time T^r = T^unit x units left.
      auto cost = [&](int worker, const Queued& x) {
        const CodeletState& c = *p->codelets[std::size_t(x.codelet)];
        double spb = c.sec_per_byte[std::size_t(worker)].load(std::memory_order_relaxed);
        if (spb <= 0) {  // not measured on this worker yet: assume the slowest known
          for (std::size_t i = 0; i < p->workers.size(); ++i)
            spb = std::max(spb, c.sec_per_byte[i].load(std::memory_order_relaxed));
        }
        return spb > 0 ? spb * x.bytes : x.bytes;
      };
      const std::size_t moved = p->balancer.rebalance(w, cost, p->cfg.threshold, runs_here);
      p->moved_tasks += long(moved);
      if (moved == 0) p->futile_at[w] = p->pushes.load(std::memory_order_relaxed);
      if (moved > 0) {
        for (std::size_t i = 0; i < p->workers.size(); ++i)
          p->queued[i].store(int(p->balancer.queued(int(i))), std::memory_order_relaxed);
        p->balancer.pop(w, &q);
      }
    }
    task = static_cast<starpu_task*>(q.task);
    if (task) {
      p->queued[w].store(int(p->balancer.queued(w)), std::memory_order_relaxed);
      p->queued_total.fetch_sub(1, std::memory_order_relaxed);
    }
    p->waiting[w] = task == nullptr;
    STARPU_PTHREAD_MUTEX_UNLOCK(&p->mutex);
  } catch (const std::exception& e) {
    fail("pop", e);
  }
  return task;
}

void pre_exec(starpu_task* /*task*/, unsigned ctx) {
  Policy* p = policy_of(ctx);
  const int w = starpu_worker_get_id_check();
  WorkerSlot& s = p->workers[std::size_t(w)];
  s.start_us = now_us();
  if (p->source != Source::Fnn && p->source != Source::FnnDtps) return;
  // An emulated slowdown stands for a slower core: the FNN sees it as a lower peak F.
  const double f = emu::factor(s.id);
  if (f != s.emulated) {
    s.emulated = f;
    p->probe->set_measured_peak(std::size_t(w), s.peak_F / f);
    s.features_us = -1;
  }
  // Features at task start (DESIGN §5), refreshed every few milliseconds: the probe is
  // thread-safe and caches its /proc and NVML reads.
  if (s.features_us >= 0 && s.start_us - s.features_us < kFeaturesTtlUs) return;
  const RawFeatures raw = p->probe->sample(std::size_t(w));
  RawFeatures peak = raw;
  for (std::size_t i = 0; i < p->workers.size(); ++i) {
    const RawFeatures r = p->probe->static_features(i);
    peak.F = std::max(peak.F, r.F);
    peak.M = std::max(peak.M, r.M);
    peak.P = std::max(peak.P, r.P);
  }
  s.features = normalise_one(raw, peak);
  s.features_us = s.start_us;
}

// Bytes of a task's data unit: its largest written handle, or largest handle (as unit_of).
double unit_bytes(starpu_task* task) {
  double written = 0, any = 0;
  const unsigned n = STARPU_TASK_GET_NBUFFERS(task);
  for (unsigned i = 0; i < n; ++i) {
    const double size = double(starpu_data_get_size(STARPU_TASK_GET_HANDLE(task, i)));
    if (STARPU_TASK_GET_MODE(task, i) & STARPU_W) written = std::max(written, size);
    any = std::max(any, size);
  }
  const double b = written > 0 ? written : any;
  return b > 0 ? b : 1;
}

// Runs on the worker's thread. Everything here is the worker's own (its slot, its entry of
// T^unit) except the end of a batch, which takes the lock.
void post_exec(starpu_task* task, unsigned ctx) {
  Policy* p = policy_of(ctx);
  const int w = starpu_worker_get_id_check();
  const double end = now_us();
  try {
    // Tasks StarPU gave a worker directly (execute_on_a_specific_worker) never came through
    // push: they are not ours to count.
    if (!task->sched_data) return;
    WorkerSlot& s = p->workers[std::size_t(w)];
    CodeletState& c = *static_cast<CodeletState*>(task->sched_data);
    task->sched_data = nullptr;  // counted once, even if the task is submitted again
    const double dt = std::max(end - s.start_us, 1e-3), bytes = unit_bytes(task);
    // T^unit per worker and codelet, as seconds per byte of the unit.
    const double spb = dt * 1e-6 / bytes;
    std::atomic<double>& m = c.sec_per_byte[std::size_t(w)];
    const double old = m.load(std::memory_order_relaxed);
    if (old <= 0) c.shares_stale = true;  // a first measurement: Boyer's shares can change
    m.store(old > 0 ? (1 - kEwma) * old + kEwma * spb : spb, std::memory_order_relaxed);
    if (c.model)  // an FNN sample: features at start, target f(D/T) (seed 000 eqs. 5, 21)
      s.pending.push_back(PendingSample{std::size_t(w), &c, s.features, bytes / dt});
    ++s.tasks;
    s.busy_us += dt;
    s.bytes += bytes;
    s.batch_busy_us.store(s.batch_busy_us.load(std::memory_order_relaxed) + dt, std::memory_order_relaxed);
    s.batch_bytes.store(s.batch_bytes.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
    c.batch_bytes.fetch_add((unsigned long long)bytes, std::memory_order_relaxed);
    const bool last = p->in_flight.fetch_sub(1) == 1;
    if (last || s.pending.size() >= kMergeEvery) {
      starpu_worker_relax_on();
      STARPU_PTHREAD_MUTEX_LOCK(&p->mutex);
      starpu_worker_relax_off();
      merge_samples(s);
      // A push may have started more work since: then the batch goes on.
      if (p->in_batch && p->in_flight == 0 && p->balancer.queued_total() == 0) end_batch(*p);
      STARPU_PTHREAD_MUTEX_UNLOCK(&p->mutex);
    }
  } catch (const std::exception& e) {
    fail("post_exec", e);
  }
}

template <Source S>
void init_as(unsigned ctx) {
  init(ctx, S);
}

starpu_sched_policy make_policy(const char* name, const char* description, void (*init_fn)(unsigned)) {
  starpu_sched_policy pol{};
  pol.init_sched = init_fn;
  pol.deinit_sched = deinit;
  pol.push_task = push;
  pol.pop_task = pop;
  pol.pre_exec_hook = pre_exec;
  pol.post_exec_hook = post_exec;
  pol.policy_name = name;
  pol.policy_description = description;
  pol.worker_type = STARPU_WORKER_LIST;
  pol.prefetches = 1;  // push prefetches each task's data itself
  return pol;
}

starpu_sched_policy policies[] = {
    make_policy("fnn-dtps", "FNN-predicted shares per worker with DTPS feedback on the CPU/GPU split",
                init_as<Source::FnnDtps>),
    make_policy("fnn", "data units in proportion to FNN-predicted computational ability", init_as<Source::Fnn>),
    make_policy("dtps", "CPU/GPU class split corrected from measured delays (DTPS)", init_as<Source::Dtps>),
    make_policy("boyer", "data units in proportion to measured speed after a timed first unit",
                init_as<Source::Boyer>),
    make_policy("even", "equal data units per worker (pure division)", init_as<Source::Even>),
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
  Policy* p = active.load();
  if (!p) return false;
  STARPU_PTHREAD_MUTEX_LOCK(&p->mutex);
  // Tasks still running finish into the next batch; their samples merge at its end.
  const bool ended = p->in_batch;
  if (ended) end_batch(*p);
  STARPU_PTHREAD_MUTEX_UNLOCK(&p->mutex);
  return ended;
}

}  // namespace sched
