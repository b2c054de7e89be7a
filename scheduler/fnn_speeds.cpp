#include "scheduler/fnn_speeds.hpp"

#include <starpu.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fnn/fnn.hpp"
#include "fnn/io.hpp"
#include "fnn/train.hpp"
#include "scheduler/cost.hpp"
#include "scheduler/emulation.hpp"
#include "scheduler/locks.hpp"
#include "scheduler/simulated.hpp"
#include "scheduler/task_costs.hpp"

namespace sched {

using namespace state;

std::string model_path(const Policy& p, const std::string& codelet, const char* ext) {
  std::string safe;
  for (char c : codelet) safe += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return p.cfg.model_dir + "/" + safe + ext;
}

namespace {

// The codelet's task costs as an earlier process saved them (task_costs.hpp), over the priors
// from each arch's peak rate. A corrupt or foreign file: one line, and the priors.
void load_costs(Policy& p, CodeletState& c, bool flops_work) {
  for (std::size_t a = 0; a < p.archs.names.size(); ++a)
    c.costs.set_prior(a, ArchPrior::from_peak(p.archs.peak[a], p.archs.gpu[a], flops_work), p.archs.gpu[a]);
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
  if (!s.cuda && s.fnn.clock_state.load(std::memory_order_acquire) == 1 && clock_gettime(s.fnn.thread_clock, &cpu) == 0 &&
      clock_gettime(CLOCK_MONOTONIC, &wall) == 0) {
    const ThreadTime now{double(cpu.tv_sec) + 1e-9 * double(cpu.tv_nsec), double(wall.tv_sec) + 1e-9 * double(wall.tv_nsec)};
    if (s.fnn.thread_newer.wall_s == 0) s.fnn.thread_older = s.fnn.thread_newer = now;
    if (now.wall_s - s.fnn.thread_newer.wall_s >= window_s) s.fnn.thread_older = s.fnn.thread_newer, s.fnn.thread_newer = now;
    const ThreadTime& from = s.fnn.thread_older;  // at least window_s before the newer one
    if (now.wall_s > from.wall_s) return std::clamp((now.cpu_s - from.cpu_s) / (now.wall_s - from.wall_s), 0.0, 1.0);
  }
#else
  (void)window_s;
#endif
  return get(s.fnn.own_busy);
}

// A worker's live features (DESIGN §5) from its raw sample, UF as the load that is not ours
// (DESIGN §6): StarPU's idle workers spin and our own kernels keep a GPU busy, so /proc/stat and
// NVML read our own work too. F is lowered by an emulated slowdown, which stands for a slower
// worker. `peak`: the workers' largest F, M and P, which normalise them.
fnn::Features live_features(WorkerSlot& s, RawFeatures raw, RawFeatures peak) {
  static const double window_s = std::chrono::duration<double>(ProbeOptions{}.uf_window).count();  // probe_options()'s
  raw.UF = std::max(0.0, raw.UF - own_share(s, window_s));
  s.fnn.uf = raw.UF;
  peak.F = std::max(peak.F, raw.F), peak.M = std::max(peak.M, raw.M), peak.P = std::max(peak.P, raw.P);
  return normalise_one(raw, peak);
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

}  // namespace

CodeletState& codelet_state(Policy& p, starpu_task* task) {
  if (CodeletState* c = p.codelets.find(task->cl)) return *c;
  std::lock_guard<Mutex> g(p.codelets.mutex);
  if (CodeletState* c = p.codelets.find(task->cl)) return *c;
  auto owned = std::make_unique<CodeletState>(p.workers.size(), p.archs.names);
  CodeletState& c = *owned;
  const char* name = starpu_task_get_name(task);
  c.name = name ? name : (task->cl->name ? task->cl->name : "unnamed");
  c.recent.resize(p.workers.size());
  load_costs(p, c, task->flops > 0);
  // A slower worker of an arch: its F (and an emulated slowdown in force) says how much. Kept as
  // the unit its timings are recorded in (CodeletState::described, observe in task_costs.hpp).
  for (std::size_t w = 0; w < p.workers.size(); ++w)
    c.described[w] = c.rel[w] = p.archs.peak[p.archs.of[w]] / std::max(p.archs.worker_peak[w], 1e-9) * emu::factor(int(w));
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

// Samples every worker's live features into Policy::features. Runs on an idle worker (pop),
// never on the push path nor before a task: /proc and NVML reads take up to milliseconds.
void sample_features(Policy& p, double now) {
  if (now - get(p.live.sampled_us) < kFeaturesTtlUs) return;
  std::unique_lock<Mutex> g(p.live.sampling_mutex, std::try_to_lock);
  if (!g.owns_lock()) return;
  p.live.sampled_us = now;
  RawFeatures peak;
  for (std::size_t w = 0; w < p.workers.size(); ++w) {
    WorkerSlot& s = p.workers[w];
    if (const double e = emu::factor(s.id); s.member && e != s.emulated) {  // a slower worker: lower F
      s.emulated = e;
      p.probe->set_measured_peak(w, s.fnn.peak_F / e);
    }
    const RawFeatures r = p.probe->static_features(w);
    peak.F = std::max(peak.F, r.F), peak.M = std::max(peak.M, r.M), peak.P = std::max(peak.P, r.P);
  }
  const std::vector<RawFeatures> raw = p.probe->sample_all();  // every worker at one instant
  if (raw.size() < p.workers.size()) return;                    // none this round: keep the last
  std::vector<fnn::Features> f(p.workers.size());
  for (std::size_t w = 0; w < f.size(); ++w) {
    WorkerSlot& s = p.workers[w];
    if (!s.member) continue;
    f[w] = live_features(s, raw[w], peak);
    std::lock_guard<Mutex> lg(s.fnn.latest_mutex);
    s.fnn.latest = f[w];
  }
  std::lock_guard<Mutex> fg(p.live.mutex);
  p.live.features = std::move(f);
}

// Each worker's own speed: its arch's (TaskCosts::rate) over its `rel`; 0 for non-members.
std::vector<double> measured_speeds(Policy& p, CodeletState& c) {
  std::vector<double> measured(p.workers.size());
  ReadLock cg(c.costs_lock);
  for (std::size_t w = 0; w < measured.size(); ++w)
    if (p.workers[w].member) measured[w] = c.costs.rate(p.archs.of[w]) / get(c.rel[w]);
  return measured;
}

// The class a codelet runs on alone (CodeletState::alone) by each class's throughput, by rates
// (D / T, fixed costs in): a program of one task size (most are) has no other measure of it. A
// class timed on small tasks only (an inverse's coarse levels) looks slower than it is; push
// keeps such codelets' GPU-born data off the cores.
int alone_by_rates(const Policy& p, const std::vector<double>& measured) {
  double cls[2] = {0, 0};
  for (std::size_t w = 0; w < measured.size(); ++w) cls[p.workers[w].gpu ? 1 : 0] += measured[w];
  const bool gpus = p.gpu_nodes.load(std::memory_order_relaxed) > 0;
  return gpus && std::min(cls[0], cls[1]) < kMinCoRunGain * std::max(cls[0], cls[1]) ? (cls[1] > cls[0] ? 1 : 0) : -1;
}

void refresh_alone(Policy& p, CodeletState& c) {
  c.alone.store(alone_by_rates(p, measured_speeds(p, c)), std::memory_order_relaxed);
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
  in.measured = measured_speeds(p, c);
  in.gpu.resize(n);
  for (std::size_t w = 0; w < n; ++w) in.gpu[w] = p.workers[w].gpu;
  if (c.model && c.trained) {  // seed 000 eq. 7: CP_i predicted from the live features
    in.ability.resize(n);
    std::vector<fnn::Features> f;
    {
      std::lock_guard<Mutex> fg(p.live.mutex);
      f = p.live.features;
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
  c.alone.store(alone_by_rates(p, in.measured), std::memory_order_relaxed);
  const std::vector<double> s = speeds(p.source, in);
  for (std::size_t w = 0; w < n; ++w) {
    const double speed = s[w] > 0 ? s[w] : 1e-12;
    c.speed[w].store(speed, std::memory_order_relaxed);
    c.scale[w].store(in.measured[w] > 0 ? in.measured[w] / speed : 1.0, std::memory_order_relaxed);
  }
}

// Moves worker w's pending FNN samples into their codelets' sets. Unless `wait`, it only
// trylocks each codelet: training holds its mutex for milliseconds, and a worker ending a task
// must not stall behind it. What it could not merge waits for the next merge; past
// kMaxPending the oldest are dropped.
void merge_samples(WorkerSlot& s, std::size_t w, bool wait) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < s.fnn.pending.size(); ++i) {
    const PendingSample x = s.fnn.pending[i];
    CodeletState& c = *x.codelet;
    std::unique_lock<Mutex> g(c.mutex, std::defer_lock);
    if (wait) {
      g.lock();
    } else if (!g.try_lock()) {
      s.fnn.pending[kept++] = x;
      continue;
    }
    c.max_rate = std::max(c.max_rate, x.rate);
    auto& mine = c.recent[w];
    mine.emplace_back(x.x, x.rate);
    if (mine.size() > kSamplesPerWorker) mine.pop_front();
    ++c.new_samples;
  }
  s.fnn.pending.resize(kept);
  if (kept > kMaxPending) s.fnn.pending.erase(s.fnn.pending.begin(), s.fnn.pending.begin() + std::ptrdiff_t(kept - kMaxPending));
}

// The FNN training a batch end left due, each codelet under its own mutex (push does not wait
// for it: it only trylocks). Pre-training takes milliseconds per codelet: on an idle worker's
// thread, out of batch_mutex, so that neither the program's thread nor its next push waits.
// Takes c.mutex, then (after it) batch_mutex: end_batch, which holds batch_mutex, takes no
// codelet's mutex.
void train_models(Policy& p) {
  if (!p.batch.train_due.exchange(false)) return;
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

// What the probe reads. Simulated (DESIGN §8), this machine's /proc and NVML say nothing of the
// simulated node: its GPUs are the platform's CUDA<i> hosts (this rank's under SMPI), described by the properties
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
    const sg_host_t h = simulated::host("CUDA" + std::to_string(d));
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

}  // namespace sched
