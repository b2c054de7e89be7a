// The worker probe of probe.hpp: /proc and /sys parsing, NVML through dlopen, the cached live
// sampling and the node normalisation of DESIGN section 5. The CUDA-runtime calls live in
// probe_cuda.cpp; without FNNDTPS_HAVE_CUDA the stubs at the end of this file stand in.
//
// Locking: Impl::mutex_ guards every mutable member of Impl (caches, history, overrides,
// sources). The worker specs, options and the NVML library table are written only in the
// constructor and read without the lock afterwards. NVML is thread-safe by its own contract;
// it is still called under the mutex, which also rate-limits it.
#include "scheduler/probe.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_set>
#include <utility>

namespace sched {

// ---- normalisation --------------------------------------------------------------------------

namespace {

double clamp01(double x) noexcept {
  if (!(x > 0.0)) return 0.0;  // NaN and negatives
  return x < 1.0 ? x : 1.0;
}

double finite_or_zero(double x) noexcept { return std::isfinite(x) && x > 0.0 ? x : 0.0; }

double over_max(double x, double max) noexcept {
  if (!(max > 0.0) || !std::isfinite(max)) return 0.0;
  return clamp01(finite_or_zero(x) / max);
}

}  // namespace

RawFeatures node_maximum(const std::vector<RawFeatures>& raw) noexcept {
  RawFeatures m;
  for (const RawFeatures& r : raw) {
    m.F = std::max(m.F, finite_or_zero(r.F));
    m.M = std::max(m.M, finite_or_zero(r.M));
    m.P = std::max(m.P, finite_or_zero(r.P));
    m.UF = std::max(m.UF, clamp01(r.UF));
    m.UM = std::max(m.UM, clamp01(r.UM));
  }
  return m;
}

fnn::Features normalise_one(const RawFeatures& raw, const RawFeatures& node_max) noexcept {
  fnn::Features f;
  f.F = over_max(raw.F, node_max.F);
  f.M = over_max(raw.M, node_max.M);
  f.P = over_max(raw.P, node_max.P);
  f.UF = clamp01(raw.UF);
  f.UM = clamp01(raw.UM);
  return f;
}

std::vector<fnn::Features> normalise(const std::vector<RawFeatures>& raw) {
  const RawFeatures max = node_maximum(raw);
  std::vector<fnn::Features> out;
  out.reserve(raw.size());
  for (const RawFeatures& r : raw) out.push_back(normalise_one(r, max));
  return out;
}

// ---- parsing --------------------------------------------------------------------------------

namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();  // /proc files report size 0: read to the end rather than by size
  if (in.bad()) return std::nullopt;
  return std::move(s).str();
}

std::string trim(const std::string& s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool parse_u64(const std::string& s, std::uint64_t& v) {
  if (s.empty()) return false;
  std::uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (x > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
    x = x * 10 + d;
  }
  v = x;
  return true;
}

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) noexcept {
  return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max()
                                                           : a + b;
}

// user nice system idle [iowait irq softirq steal [guest [guest_nice]]]: at least 4 fields.
std::optional<CpuTimes> parse_cpu_fields(std::istringstream& line) {
  std::array<std::uint64_t, 8> f{};
  std::size_t n = 0;
  std::string tok;
  while (n < f.size() && line >> tok) {
    if (!parse_u64(tok, f[n])) return std::nullopt;
    ++n;
  }
  if (n < 4) return std::nullopt;
  CpuTimes t;
  // guest and guest_nice (fields 9, 10) are already counted in user and nice.
  for (std::size_t i : {0u, 1u, 2u, 5u, 6u, 7u}) t.busy = sat_add(t.busy, f[i]);
  t.idle = sat_add(f[3], f[4]);
  return t;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(const std::string& text) {
  ProcStat st;
  bool any = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, 3, "cpu") != 0) continue;
    std::istringstream ls(line);
    std::string name;
    ls >> name;
    if (name == "cpu") {
      if (auto t = parse_cpu_fields(ls)) {
        st.all = t;
        any = true;
      }
      continue;
    }
    std::uint64_t index = 0;
    if (!parse_u64(name.substr(3), index) || index > 1u << 20) continue;
    auto t = parse_cpu_fields(ls);
    if (!t) continue;
    const auto i = static_cast<std::size_t>(index);
    if (st.cpu.size() <= i) st.cpu.resize(i + 1);
    st.cpu[i] = t;
    any = true;
  }
  if (!any) return std::nullopt;
  return st;
}

std::optional<double> busy_fraction(const CpuTimes& before, const CpuTimes& after) noexcept {
  const std::uint64_t db = after.busy > before.busy ? after.busy - before.busy : 0;
  const std::uint64_t di = after.idle > before.idle ? after.idle - before.idle : 0;
  if (db + di == 0) return std::nullopt;
  return clamp01(static_cast<double>(db) / static_cast<double>(db + di));
}

std::optional<double> busy_fraction_since_boot(const CpuTimes& t) noexcept {
  if (t.total() == 0) return std::nullopt;
  return clamp01(static_cast<double>(t.busy) / static_cast<double>(t.total()));
}

std::optional<MemInfo> parse_meminfo(const std::string& text) {
  std::optional<std::uint64_t> total;
  std::optional<std::uint64_t> available;
  std::uint64_t free_b = 0;
  std::uint64_t buffers = 0;
  std::uint64_t cached = 0;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    std::istringstream vs(line.substr(colon + 1));
    std::string num;
    std::string unit;
    vs >> num >> unit;
    std::uint64_t v = 0;
    if (!parse_u64(num, v)) continue;
    if (unit == "kB") {
      if (v > std::numeric_limits<std::uint64_t>::max() / 1024) continue;
      v *= 1024;
    }
    if (key == "MemTotal") total = v;
    else if (key == "MemAvailable") available = v;
    else if (key == "MemFree") free_b = v;
    else if (key == "Buffers") buffers = v;
    else if (key == "Cached") cached = v;
  }
  if (!total) return std::nullopt;
  MemInfo m;
  m.total_bytes = *total;
  // MemAvailable since Linux 3.14; before it, free + buffers + page cache approximates it.
  m.available_bytes = available ? *available : sat_add(sat_add(free_b, buffers), cached);
  return m;
}

double memory_occupancy(const MemInfo& m) noexcept {
  if (m.total_bytes == 0) return 0.0;
  return clamp01(1.0 - static_cast<double>(m.available_bytes) / static_cast<double>(m.total_bytes));
}

std::vector<CpuInfoEntry> parse_cpuinfo(const std::string& text) {
  std::vector<CpuInfoEntry> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "processor") {
      std::uint64_t p = 0;
      if (!parse_u64(value, p) || p > std::numeric_limits<unsigned>::max()) continue;
      CpuInfoEntry e;
      e.processor = static_cast<unsigned>(p);
      out.push_back(std::move(e));
      continue;
    }
    if (out.empty()) continue;  // keys before the first processor line
    if (key == "cpu MHz") {
      char* end = nullptr;
      const double mhz = std::strtod(value.c_str(), &end);
      if (end != value.c_str() && std::isfinite(mhz) && mhz > 0.0) out.back().mhz = mhz;
    } else if (key == "flags" || key == "Features") {
      out.back().flags = value;
    }
  }
  return out;
}

SimdInfo simd_from_flags(const std::string& flags) noexcept {
  SimdInfo s;
  try {
    std::unordered_set<std::string> set;
    std::istringstream in(flags);
    std::string f;
    while (in >> f) set.insert(f);
    const auto has = [&](const char* name) { return set.count(name) != 0; };
    if (has("avx512f")) {
      s.lanes = 16;
    } else if (has("avx2") || has("avx")) {
      s.lanes = 8;
    } else if (has("sse")) {
      s.lanes = 4;
    } else if (has("asimd")) {  // Armv8 NEON: 4 floats, FMLA
      s.lanes = 4;
      s.fma = true;
    }
    if (has("fma") || has("fma4")) s.fma = true;
  } catch (...) {  // allocation failure: scalar
  }
  return s;
}

double cpu_peak_gflops(double cores, double mhz, const SimdInfo& simd) noexcept {
  return finite_or_zero(cores) * finite_or_zero(mhz) / 1000.0 * simd.flops_per_cycle();
}

unsigned gpu_fp32_lanes_per_sm(int cc_major, int cc_minor) noexcept {
  switch (cc_major) {
    case 3: return 192;
    case 5: return 128;
    case 6: return cc_minor == 0 ? 64 : 128;
    case 7: return 64;
    case 8: return cc_minor == 0 ? 64 : 128;
    default: return cc_major < 3 ? 32 : 128;
  }
}

double gpu_peak_gflops(int sms, unsigned lanes_per_sm, double clock_khz) noexcept {
  if (sms <= 0) return 0.0;
  return static_cast<double>(sms) * lanes_per_sm * 2.0 * finite_or_zero(clock_khz) / 1.0e6;
}

double fallback_gpu_mhz(int cc_major, int cc_minor) noexcept {
  if (cc_major == 7 && cc_minor == 0) return 1530.0;
  if (cc_major == 8 && cc_minor == 0) return 1410.0;
  if (cc_major == 9 && cc_minor == 0) return 1980.0;
  return 1500.0;
}

const char* source_name(Source s) noexcept {
  switch (s) {
    case Source::None: return "none";
    case Source::ProcStat: return "/proc/stat";
    case Source::ProcMeminfo: return "/proc/meminfo";
    case Source::Nvml: return "nvml";
    case Source::CudaRuntime: return "cudaMemGetInfo";
    case Source::LastValue: return "last-value";
  }
  return "?";
}

// ---- NVML through dlopen --------------------------------------------------------------------

namespace {

// The few NVML declarations used (nvml.h, stable C ABI); NVML_SUCCESS is 0.
struct NvmlDeviceSt;
using NvmlDevice = NvmlDeviceSt*;
struct NvmlUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct NvmlMemory {  // nvmlMemory_t (v1)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr int kNvmlClockSm = 1;  // NVML_CLOCK_SM

class Nvml {
 public:
  explicit Nvml(const std::string& library) {
    if (library.empty()) return;
    handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return;
    const bool all = load("nvmlInit_v2", init_) && load("nvmlShutdown", shutdown_) &&
                     load("nvmlDeviceGetHandleByIndex_v2", by_index_) &&
                     load("nvmlDeviceGetUtilizationRates", utilization_) &&
                     load("nvmlDeviceGetMemoryInfo", memory_) &&
                     load("nvmlDeviceGetMaxClockInfo", max_clock_);
    load("nvmlDeviceGetHandleByPciBusId_v2", by_pci_);  // optional: index mapping otherwise
    if (!all || init_() != 0) {
      dlclose(handle_);
      handle_ = nullptr;
      return;
    }
    ok_ = true;
  }
  ~Nvml() {
    if (ok_) shutdown_();
    if (handle_ != nullptr) dlclose(handle_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool ok() const noexcept { return ok_; }

  // By PCI bus id where known: NVML numbers devices in PCI order while the CUDA runtime's
  // ordinals follow CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER. The index is the fallback.
  NvmlDevice device(int cuda_ordinal, const std::string& pci_bus_id) const noexcept {
    if (!ok_) return nullptr;
    NvmlDevice d = nullptr;
    if (by_pci_ != nullptr && !pci_bus_id.empty() && by_pci_(pci_bus_id.c_str(), &d) == 0 &&
        d != nullptr) {
      return d;
    }
    d = nullptr;
    if (cuda_ordinal >= 0 && by_index_(static_cast<unsigned>(cuda_ordinal), &d) == 0) return d;
    return nullptr;
  }
  std::optional<double> utilisation(NvmlDevice d) const noexcept {
    NvmlUtilization u{};
    if (!ok_ || d == nullptr || utilization_(d, &u) != 0) return std::nullopt;
    return clamp01(u.gpu / 100.0);
  }
  // (occupancy, total bytes)
  std::optional<std::pair<double, std::uint64_t>> memory(NvmlDevice d) const noexcept {
    NvmlMemory m{};
    if (!ok_ || d == nullptr || memory_(d, &m) != 0 || m.total == 0) return std::nullopt;
    return std::make_pair(clamp01(static_cast<double>(m.used) / static_cast<double>(m.total)),
                          static_cast<std::uint64_t>(m.total));
  }
  std::optional<double> max_sm_clock_mhz(NvmlDevice d) const noexcept {
    unsigned int mhz = 0;
    if (!ok_ || d == nullptr || max_clock_(d, kNvmlClockSm, &mhz) != 0 || mhz == 0) {
      return std::nullopt;
    }
    return static_cast<double>(mhz);
  }

 private:
  template <class Fn>
  bool load(const char* name, Fn& fn) noexcept {
    static_assert(sizeof(Fn) == sizeof(void*), "function and object pointers differ in size");
    void* p = dlsym(handle_, name);
    if (p == nullptr) return false;
    std::memcpy(&fn, &p, sizeof fn);  // POSIX guarantees the conversion; memcpy keeps -Wpedantic quiet
    return true;
  }

  void* handle_ = nullptr;
  bool ok_ = false;
  int (*init_)() = nullptr;
  int (*shutdown_)() = nullptr;
  int (*by_index_)(unsigned int, NvmlDevice*) = nullptr;
  int (*by_pci_)(const char*, NvmlDevice*) = nullptr;
  int (*utilization_)(NvmlDevice, NvmlUtilization*) = nullptr;
  int (*memory_)(NvmlDevice, NvmlMemory*) = nullptr;
  int (*max_clock_)(NvmlDevice, int, unsigned int*) = nullptr;
};

}  // namespace

// ---- the probe ------------------------------------------------------------------------------

using Clock = std::chrono::steady_clock;

struct Probe::Impl {
  struct Snapshot {
    Clock::time_point t;
    ProcStat stat;
  };
  struct Worker {
    WorkerSpec spec;
    RawFeatures computed;            // static F, M, P
    double measured_peak = 0.0;      // > 0: replaces computed.F
    Source uf_source = Source::None;
    Source um_source = Source::None;
    // Cuda only
    NvmlDevice nvml = nullptr;
    bool nvml_cached = false;
    Clock::time_point nvml_t{};
    std::optional<double> nvml_uf;
    std::optional<double> nvml_um;
    Clock::time_point cuda_um_t{};
    bool cuda_um_tried = false;
    std::optional<double> last_um;   // the latest UM obtained by any source
  };

  static constexpr std::size_t kMaxHistory = 64;

  Impl(std::vector<WorkerSpec> specs, ProbeOptions opts)
      : options(std::move(opts)), nvml(has_cuda(specs) ? options.nvml_library : std::string()) {
    for (WorkerSpec& s : specs) {
      if (s.kind == WorkerKind::Cuda && s.cuda_device < 0) {
        throw std::invalid_argument("sched::Probe: a CUDA worker needs a device ordinal >= 0");
      }
      Worker w;
      w.spec = std::move(s);
      workers.push_back(std::move(w));
    }
    compute_static();
    std::lock_guard<std::mutex> lock(mutex_);
    refresh_stat(Clock::now());
  }

  static bool has_cuda(const std::vector<WorkerSpec>& specs) {
    return std::any_of(specs.begin(), specs.end(),
                       [](const WorkerSpec& s) { return s.kind == WorkerKind::Cuda; });
  }

  bool has_cuda_workers() const {
    return std::any_of(workers.begin(), workers.end(),
                       [](const Worker& w) { return w.spec.kind == WorkerKind::Cuda; });
  }

  std::string path(const char* p) const { return options.root + p; }

  void compute_static() {
    const std::vector<CpuInfoEntry> cpuinfo =
        parse_cpuinfo(read_file(path("/proc/cpuinfo")).value_or(std::string()));
    const std::optional<MemInfo> mem =
        parse_meminfo(read_file(path("/proc/meminfo")).value_or(std::string()));
    double max_cpuinfo_mhz = 0.0;
    for (const CpuInfoEntry& e : cpuinfo) max_cpuinfo_mhz = std::max(max_cpuinfo_mhz, e.mhz);

    const auto entry_for = [&](unsigned cpu) -> const CpuInfoEntry* {
      for (const CpuInfoEntry& e : cpuinfo) {
        if (e.processor == cpu) return &e;
      }
      return cpuinfo.empty() ? nullptr : &cpuinfo.front();
    };
    // cpufreq's cpuinfo_max_freq (kHz), else this processor's "cpu MHz", else the highest
    // "cpu MHz" listed, else kFallbackCpuMhz.
    const auto mhz_of = [&](unsigned cpu) {
      const std::string f = options.root + "/sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                            "/cpufreq/cpuinfo_max_freq";
      std::uint64_t khz = 0;
      if (auto text = read_file(f); text && parse_u64(trim(*text), khz) && khz > 0) {
        return static_cast<double>(khz) / 1000.0;
      }
      for (const CpuInfoEntry& e : cpuinfo) {
        if (e.processor == cpu && e.mhz > 0.0) return e.mhz;
      }
      return max_cpuinfo_mhz > 0.0 ? max_cpuinfo_mhz : kFallbackCpuMhz;
    };

    double cpu_cores_total = 0.0;
    for (const Worker& w : workers) {
      if (w.spec.kind == WorkerKind::Cpu) {
        cpu_cores_total += static_cast<double>(std::max<std::size_t>(1, w.spec.cpus.size()));
      }
    }

    // The runtime is asked only for CUDA workers: cuda_devices() initialises the driver.
    std::vector<GpuInfo> gpus;
    if (options.gpus) {
      gpus = *options.gpus;
    } else if (has_cuda_workers()) {
      gpus = cuda_devices();
    }

    for (Worker& w : workers) {
      if (w.spec.kind == WorkerKind::Cpu) {
        // An unknown core stands for the first processor listed.
        const std::vector<unsigned> cpus =
            w.spec.cpus.empty()
                ? std::vector<unsigned>{cpuinfo.empty() ? 0u : cpuinfo.front().processor}
                : w.spec.cpus;
        double f = 0.0;
        for (unsigned c : cpus) {
          const CpuInfoEntry* e = entry_for(c);
          f += cpu_peak_gflops(1.0, mhz_of(c), simd_from_flags(e ? e->flags : std::string()));
        }
        const auto cores = static_cast<double>(cpus.size());
        w.computed.F = f;
        w.computed.P = cores;
        w.computed.M = mem ? static_cast<double>(mem->total_bytes) * cores / cpu_cores_total : 0.0;
        continue;
      }
      const GpuInfo* g = nullptr;
      for (const GpuInfo& x : gpus) {
        if (x.device == w.spec.cuda_device) g = &x;
      }
      w.nvml = nvml.device(w.spec.cuda_device, g ? g->pci_bus_id : std::string());
      const auto nvml_mem = nvml.memory(w.nvml);
      if (g == nullptr) {  // no such device: only NVML's total, if any
        w.computed.M = nvml_mem ? static_cast<double>(nvml_mem->second) : 0.0;
        continue;
      }
      double khz = g->clock_khz;
      if (!(khz > 0.0)) {
        const auto mhz = nvml.max_sm_clock_mhz(w.nvml);
        khz = 1000.0 * (mhz ? *mhz : fallback_gpu_mhz(g->cc_major, g->cc_minor));
      }
      w.computed.F = gpu_peak_gflops(g->sms, gpu_fp32_lanes_per_sm(g->cc_major, g->cc_minor), khz);
      w.computed.M = g->total_mem > 0    ? static_cast<double>(g->total_mem)
                     : nvml_mem ? static_cast<double>(nvml_mem->second)
                                : 0.0;
      w.computed.P = static_cast<double>(std::max(0, g->sms)) *
                     static_cast<double>(std::max(0, g->max_threads_per_sm));
    }
  }

  RawFeatures static_of(const Worker& w) const noexcept {
    RawFeatures r = w.computed;
    if (w.measured_peak > 0.0) r.F = w.measured_peak;
    return r;
  }

  // ---- CPU live state (under mutex_) ----

  // `now == stat_t_`: the same sampling round (sample_all), even with min_interval 0.
  void refresh_stat(Clock::time_point now) {
    if (stat_read_ && (now == stat_t_ || now - stat_t_ < options.min_interval)) return;
    stat_read_ = true;
    stat_t_ = now;
    std::optional<ProcStat> st;
    if (auto text = read_file(path("/proc/stat"))) st = parse_proc_stat(*text);
    stat_ok_ = st.has_value();
    if (!st) return;
    history_.push_back({now, std::move(*st)});
    // Keep one snapshot at least uf_window older than the newest, and the newer ones.
    while (history_.size() > 2 &&
           (history_.back().t - history_[1].t >= options.uf_window ||
            history_.size() > kMaxHistory)) {
      history_.pop_front();
    }
  }

  static std::optional<CpuTimes> times_of(const ProcStat& st, const std::vector<unsigned>& cpus) {
    if (cpus.empty()) return st.all;
    CpuTimes sum;
    for (unsigned c : cpus) {
      if (c >= st.cpu.size() || !st.cpu[c]) return std::nullopt;
      sum.busy = sat_add(sum.busy, st.cpu[c]->busy);
      sum.idle = sat_add(sum.idle, st.cpu[c]->idle);
    }
    return sum;
  }

  std::optional<double> cpu_uf(const WorkerSpec& spec) const {
    if (!stat_ok_ || history_.empty()) return std::nullopt;
    const std::optional<CpuTimes> now = times_of(history_.back().stat, spec.cpus);
    if (!now) return std::nullopt;
    if (history_.size() >= 2) {
      // Trimmed so that the front is the newest snapshot at least uf_window old (or the oldest).
      const std::optional<CpuTimes> before = times_of(history_.front().stat, spec.cpus);
      if (before) {
        if (auto f = busy_fraction(*before, *now)) return f;
      }
    }
    return busy_fraction_since_boot(*now);  // a single snapshot, or no tick in between
  }

  std::optional<double> cpu_um(Clock::time_point now) {
    if (!mem_read_ || (now != mem_t_ && now - mem_t_ >= options.min_interval)) {
      mem_read_ = true;
      mem_t_ = now;
      std::optional<MemInfo> m;
      if (auto text = read_file(path("/proc/meminfo"))) m = parse_meminfo(*text);
      mem_um_ = m ? std::optional<double>(memory_occupancy(*m)) : std::nullopt;
    }
    return mem_um_;
  }

  // ---- sampling (under mutex_) ----

  RawFeatures sample_locked(Worker& w, Clock::time_point now) {
    RawFeatures r = static_of(w);
    if (w.spec.kind == WorkerKind::Cpu) {
      refresh_stat(now);
      if (auto uf = cpu_uf(w.spec)) {
        r.UF = *uf;
        w.uf_source = Source::ProcStat;
      } else {
        r.UF = 0.0;
        w.uf_source = Source::None;
      }
      if (auto um = cpu_um(now)) {
        r.UM = *um;
        w.um_source = Source::ProcMeminfo;
      } else {
        r.UM = 0.0;
        w.um_source = Source::None;
      }
      return r;
    }

    if (!w.nvml_cached || now - w.nvml_t >= options.min_interval) {
      w.nvml_cached = true;
      w.nvml_t = now;
      w.nvml_uf = nvml.utilisation(w.nvml);
      const auto m = nvml.memory(w.nvml);
      w.nvml_um = m ? std::optional<double>(m->first) : std::nullopt;
    }
    if (w.nvml_uf) {
      r.UF = *w.nvml_uf;
      w.uf_source = Source::Nvml;
    } else {
      r.UF = 0.0;
      w.uf_source = Source::None;
    }
    if (w.nvml_um) {
      r.UM = *w.nvml_um;
      w.last_um = r.UM;
      w.um_source = Source::Nvml;
      return r;
    }
    // Asked only on a thread with a context current on this device; rate-limited on success.
    if (!w.cuda_um_tried || now - w.cuda_um_t >= options.min_interval) {
      if (auto um = cuda_memory_occupancy_if_current(w.spec.cuda_device)) {
        w.cuda_um_tried = true;
        w.cuda_um_t = now;
        w.last_um = *um;
        r.UM = *um;
        w.um_source = Source::CudaRuntime;
        return r;
      }
    }
    r.UM = w.last_um.value_or(0.0);
    w.um_source = w.last_um ? Source::LastValue : Source::None;
    return r;
  }

  Worker& at(std::size_t i) {
    if (i >= workers.size()) throw std::out_of_range("sched::Probe: no such worker");
    return workers[i];
  }
  const Worker& at(std::size_t i) const {
    if (i >= workers.size()) throw std::out_of_range("sched::Probe: no such worker");
    return workers[i];
  }

  const ProbeOptions options;
  const Nvml nvml;
  std::vector<Worker> workers;

  mutable std::mutex mutex_;
  std::deque<Snapshot> history_;
  bool stat_read_ = false;
  bool stat_ok_ = false;
  Clock::time_point stat_t_{};
  bool mem_read_ = false;
  Clock::time_point mem_t_{};
  std::optional<double> mem_um_;
};

Probe::Probe(std::vector<WorkerSpec> workers, ProbeOptions options)
    : impl_(std::make_unique<Impl>(std::move(workers), std::move(options))) {}

Probe::~Probe() = default;

std::size_t Probe::size() const noexcept { return impl_->workers.size(); }

const WorkerSpec& Probe::spec(std::size_t worker) const { return impl_->at(worker).spec; }

bool Probe::nvml_available() const noexcept { return impl_->nvml.ok(); }

RawFeatures Probe::static_features(std::size_t worker) const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  return impl_->static_of(impl_->at(worker));
}

void Probe::set_measured_peak(std::size_t worker, double gflops) {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  impl_->at(worker).measured_peak = std::isfinite(gflops) && gflops > 0.0 ? gflops : 0.0;
}

RawFeatures Probe::sample(std::size_t worker) noexcept {
  if (worker >= impl_->workers.size()) return {};
  try {
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    return impl_->sample_locked(impl_->workers[worker], Clock::now());
  } catch (...) {  // allocation failure while reading /proc: the computed static features
    return impl_->workers[worker].computed;  // written only by the constructor
  }
}

std::vector<RawFeatures> Probe::sample_all() noexcept {
  try {
    std::vector<RawFeatures> out;
    out.reserve(impl_->workers.size());
    std::lock_guard<std::mutex> lock(impl_->mutex_);
    const Clock::time_point now = Clock::now();
    for (Impl::Worker& w : impl_->workers) out.push_back(impl_->sample_locked(w, now));
    return out;
  } catch (...) {  // allocation failure (as sample): none, and the round keeps its last features
    return {};
  }
}

Source Probe::uf_source(std::size_t worker) const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  return impl_->at(worker).uf_source;
}

Source Probe::um_source(std::size_t worker) const {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  return impl_->at(worker).um_source;
}

#ifndef FNNDTPS_HAVE_CUDA
// Built without CUDA: no device, no runtime to ask.
std::vector<GpuInfo> cuda_devices() noexcept { return {}; }
std::optional<double> cuda_memory_occupancy_if_current(int) noexcept { return std::nullopt; }
#endif

}  // namespace sched
