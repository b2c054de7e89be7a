// Worker state probe: the five FNN input features of DESIGN section 5 (seed 000 Table 1) for
// each StarPU worker, raw and normalised across the node.
//
//   F   peak floating-point rate, GFLOP/s (single precision)
//         CPU:  sum over the worker's cores of  GHz x SIMD float lanes x (2 if FMA else 1)
//         CUDA: SMs x FP32 lanes per SM (by compute capability) x 2 (FMA) x SM clock GHz
//         either overridable with a measured value (Probe::set_measured_peak)
//   M   memory size, bytes
//         CPU:  MemTotal shared among the CPU workers in proportion to their cores
//         CUDA: the device's global memory
//   P   parallel ability: CPU the worker's cores; CUDA SMs x max resident threads per SM
//   UF  compute occupancy in [0, 1]
//         CPU:  busy share of the worker's cores from /proc/stat deltas
//         CUDA: NVML utilisation.gpu / 100 (NVML opened with dlopen)
//   UM  memory occupancy in [0, 1]
//         CPU:  1 - MemAvailable / MemTotal from /proc/meminfo
//         CUDA: NVML used / total, else cudaMemGetInfo on the device's own thread
//
// Fallbacks (never a crash, never an exception out of sample()):
//   - a CPU without cpufreq:  clock from /proc/cpuinfo "cpu MHz", else kFallbackCpuMhz;
//   - no /proc/stat or core absent from it: UF = 0 (nothing is known of other programs' load;
//     the policy takes its own share out of UF anyway);
//   - no /proc/meminfo: M = 0 and UM = 0;
//   - NVML library, a symbol, nvmlInit or a per-device call missing/failing: UF = 0; UM from
//     cudaMemGetInfo when the calling thread has a CUDA context
//     current on that very device, else the last value obtained for that device (0 at first);
//     the SM clock from NVML only backs up cudaDevAttrClockRate, then fallback_gpu_mhz().
//   - no CUDA device, no driver, or a build without CUDA: cuda_devices() is empty and a
//     CUDA worker's static features are 0 (unless ProbeOptions::gpus describes it).
// The sources used are reported (Probe::uf_source / um_source) in the policy's summary.
//
// No StarPU here: the policy maps its workers to WorkerSpec (CPU: OS cpu numbers, as in
// /proc/stat's "cpuN"; CUDA: the runtime device ordinal) and calls the probe.
// Thread safety: every Probe member may be called from any thread; one mutex guards the
// caches. /proc files and NVML are read at most once per ProbeOptions::min_interval.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fnn/fnn.hpp"

namespace sched {

enum class WorkerKind { Cpu, Cuda };

// One feature vector before normalisation, in physical units.
struct RawFeatures {
  double F = 0.0;   // GFLOP/s
  double M = 0.0;   // bytes
  double P = 0.0;   // cores (CPU) or resident threads (CUDA)
  double UF = 0.0;  // [0, 1]
  double UM = 0.0;  // [0, 1]
};

// DESIGN section 5: F, M and P divided by the node maximum of each (a maximum <= 0 or not
// finite gives 0 for that feature); UF and UM clamped to [0, 1]. Every result lies in [0, 1];
// a NaN or negative input becomes 0.
fnn::Features normalise_one(const RawFeatures& raw, const RawFeatures& node_max) noexcept;
RawFeatures node_maximum(const std::vector<RawFeatures>& raw) noexcept;
std::vector<fnn::Features> normalise(const std::vector<RawFeatures>& raw);

// ---- /proc and /sys parsing (pure functions, tested on fabricated text) ----------------------

// Jiffies of one /proc/stat "cpu" line. busy = user + nice + system + irq + softirq + steal,
// idle = idle + iowait (guest and guest_nice are already inside user and nice).
struct CpuTimes {
  std::uint64_t busy = 0;
  std::uint64_t idle = 0;
  std::uint64_t total() const noexcept { return busy + idle; }
};

struct ProcStat {
  std::optional<CpuTimes> all;              // the aggregate "cpu" line
  std::vector<std::optional<CpuTimes>> cpu;  // "cpuN" at index N (empty where offline)
};

// Returns nullopt when no "cpu" line parses.
std::optional<ProcStat> parse_proc_stat(const std::string& text);

// Busy share of the interval between two snapshots: d(busy) / (d(busy) + d(idle)), with each
// delta floored at 0 (counters that went backwards, e.g. iowait) and the result clamped to
// [0, 1]. nullopt when no time elapsed. since_boot: busy / total of one snapshot.
std::optional<double> busy_fraction(const CpuTimes& before, const CpuTimes& after) noexcept;
std::optional<double> busy_fraction_since_boot(const CpuTimes& t) noexcept;

struct MemInfo {
  std::uint64_t total_bytes = 0;
  std::uint64_t available_bytes = 0;  // MemAvailable, else MemFree + Buffers + Cached
};
// nullopt without MemTotal.
std::optional<MemInfo> parse_meminfo(const std::string& text);
// 1 - available / total, clamped to [0, 1]; 0 when total is 0.
double memory_occupancy(const MemInfo& m) noexcept;

// One /proc/cpuinfo processor block.
struct CpuInfoEntry {
  unsigned processor = 0;
  double mhz = 0.0;   // "cpu MHz" (x86); 0 where absent
  std::string flags;  // "flags" (x86) or "Features" (Arm)
};
std::vector<CpuInfoEntry> parse_cpuinfo(const std::string& text);

// Single-precision SIMD width and FMA from a flags line:
//   avx512f 16 lanes; avx2 or avx 8; sse 4; Arm asimd 4 (with FMA); otherwise 1 lane.
//   fma (FMA3) or fma4 doubles the flops per lane per cycle.
// One vector FMA unit per core is assumed: cores with two (many Xeons) are under-rated by 2,
// which a measured peak corrects.
struct SimdInfo {
  unsigned lanes = 1;
  bool fma = false;
  unsigned flops_per_cycle() const noexcept { return lanes * (fma ? 2u : 1u); }
};
SimdInfo simd_from_flags(const std::string& flags) noexcept;

// GFLOP/s of `cores` cores at `mhz`: cores x mhz / 1000 x flops_per_cycle.
double cpu_peak_gflops(double cores, double mhz, const SimdInfo& simd) noexcept;

// Clock used where neither cpufreq nor /proc/cpuinfo gives one (e.g. Arm without cpufreq).
constexpr double kFallbackCpuMhz = 2000.0;

// ---- CUDA devices ---------------------------------------------------------------------------

// FP32 lanes (CUDA cores) per SM: 3.x 192; 5.x 128; 6.0 64, 6.x 128; 7.x 64; 8.0 64, 8.x 128;
// 9.0 and later 128 (CUDA C Programming Guide, "Arithmetic Instructions" throughput table).
unsigned gpu_fp32_lanes_per_sm(int cc_major, int cc_minor) noexcept;
// GFLOP/s: sms x lanes x 2 (FMA) x clock_khz / 1e6.
double gpu_peak_gflops(int sms, unsigned lanes_per_sm, double clock_khz) noexcept;
// SM boost clock in MHz when neither cudaDevAttrClockRate nor NVML gives one: 7.0 (V100 SXM2)
// 1530, 8.0 (A100) 1410, 9.0 (H100/H200 SXM) 1980, otherwise 1500.
double fallback_gpu_mhz(int cc_major, int cc_minor) noexcept;

struct GpuInfo {
  int device = -1;           // CUDA runtime ordinal
  int cc_major = 0;
  int cc_minor = 0;
  int sms = 0;
  int max_threads_per_sm = 0;
  double clock_khz = 0.0;    // cudaDevAttrClockRate; 0 when the runtime has none
  std::uint64_t total_mem = 0;
  std::string pci_bus_id;    // "0000:3b:00.0", for NVML's handle; empty when unknown
};

// Every CUDA device the runtime sees; empty without CUDA, driver or device (the runtime's
// error is cleared, never raised).
std::vector<GpuInfo> cuda_devices() noexcept;
// Memory occupancy of `device` by cudaMemGetInfo, only when the calling thread already has a
// CUDA context current on that device (no context is ever created here); nullopt otherwise.
std::optional<double> cuda_memory_occupancy_if_current(int device) noexcept;

// ---- the probe ------------------------------------------------------------------------------

struct WorkerSpec {
  WorkerKind kind = WorkerKind::Cpu;
  // Cpu: OS cpu numbers the worker runs on; empty means one core, unknown, whose UF is the
  // node's (the aggregate "cpu" line).
  std::vector<unsigned> cpus;
  // Cuda: the CUDA runtime device ordinal.
  int cuda_device = -1;
};

struct ProbeOptions {
  // Prefix of /proc and /sys ("" for the real ones; tests point it at fabricated trees).
  std::string root;
  // /proc files and NVML are read at most this often; between reads sample() serves a cache.
  std::chrono::nanoseconds min_interval = std::chrono::milliseconds(10);
  // CPU UF spans at least this long: /proc/stat counts in jiffies (10 ms), so a 10 ms delta
  // would be 0 or 1. UF compares the newest snapshot with the newest one at least this much
  // older (the oldest kept if none is). 0 = the previous snapshot.
  std::chrono::nanoseconds uf_window = std::chrono::milliseconds(100);
  // dlopen()ed for GPU UF, UM and clock; "" disables NVML.
  std::string nvml_library = "libnvidia-ml.so.1";
  // When set, these describe the CUDA devices instead of the CUDA runtime (tests, or a node
  // whose runtime cannot be asked at init).
  std::optional<std::vector<GpuInfo>> gpus;
};

// Where a live feature came from in the latest sample.
enum class Source { None, ProcStat, ProcMeminfo, Nvml, CudaRuntime, LastValue };
const char* source_name(Source s) noexcept;

class Probe {
 public:
  // Reads the static hardware of every worker and takes a first /proc/stat snapshot.
  // Throws std::invalid_argument for a Cuda spec with a negative device.
  explicit Probe(std::vector<WorkerSpec> workers, ProbeOptions options = {});
  ~Probe();
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;

  std::size_t size() const noexcept;
  const WorkerSpec& spec(std::size_t worker) const;  // throws std::out_of_range
  bool nvml_available() const noexcept;

  // F, M, P (with any measured override); UF = UM = 0.
  RawFeatures static_features(std::size_t worker) const;

  // A measured peak in GFLOP/s replaces the computed F (<= 0 or non-finite restores it).
  void set_measured_peak(std::size_t worker, double gflops);

  // Static plus live features. noexcept: a failing source degrades as listed above.
  RawFeatures sample(std::size_t worker) noexcept;  // worker out of range: all zero
  // Every worker's sample at one instant, under one lock (the policy's sampling round,
  // sample_features).
  std::vector<RawFeatures> sample_all() noexcept;  // empty on allocation failure

  Source uf_source(std::size_t worker) const;
  Source um_source(std::size_t worker) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sched
