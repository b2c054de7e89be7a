// Tests of the worker probe (scheduler/probe.hpp): /proc and cpuinfo parsing on fabricated
// files, exact busy fractions from two /proc/stat snapshots, the caches, normalisation across
// the node, NVML through dlopen (absent, and a fake libnvidia-ml built from this very file),
// and sanity of the real machine's probe.
//
// Built twice: as test_probe, and with FNNDTPS_FAKE_NVML as the fake NVML shared library
// (FNNDTPS_FAKE_NVML_PARTIAL: the same without nvmlDeviceGetUtilizationRates).

// ---- state shared by the fake NVML and the tests ------------------------------------------
struct FakeNvmlState {
  int init_result;                  // what nvmlInit_v2 returns (0 = NVML_SUCCESS)
  int call_result;                  // what the per-device queries return
  unsigned util[2];                 // utilization.gpu, percent, per fake device
  unsigned long long total[2];      // memory, bytes
  unsigned long long used[2];
  unsigned clock_mhz[2];            // max SM clock
  unsigned long util_calls;
  int inits;
  int shutdowns;
};

#ifdef FNNDTPS_FAKE_NVML
// ---- the fake libnvidia-ml: two devices, 0000:01:00.0 (index 0) and 0000:02:00.0 (index 1) ----
#include <cstring>

namespace {
FakeNvmlState g_state{0, 0, {0, 0}, {0, 0}, {0, 0}, {0, 0}, 0, 0, 0};
int g_devices[2];
int index_of(void* d) { return d == &g_devices[1] ? 1 : 0; }
}  // namespace

struct FakeUtil {
  unsigned gpu, memory;
};
struct FakeMem {
  unsigned long long total, free, used;
};

extern "C" {
FakeNvmlState* fake_nvml_state() { return &g_state; }
int nvmlInit_v2() {
  ++g_state.inits;
  return g_state.init_result;
}
int nvmlShutdown() {
  ++g_state.shutdowns;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** d) {
  if (i > 1) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *d = &g_devices[i];
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, void** d) {
  if (std::strcmp(bus, "0000:01:00.0") == 0) return nvmlDeviceGetHandleByIndex_v2(0, d);
  if (std::strcmp(bus, "0000:02:00.0") == 0) return nvmlDeviceGetHandleByIndex_v2(1, d);
  return 6;  // NVML_ERROR_NOT_FOUND
}
#ifndef FNNDTPS_FAKE_NVML_PARTIAL
int nvmlDeviceGetUtilizationRates(void* d, FakeUtil* u) {
  ++g_state.util_calls;
  if (g_state.call_result != 0) return g_state.call_result;
  u->gpu = g_state.util[index_of(d)];
  u->memory = 0;
  return 0;
}
#endif
int nvmlDeviceGetMemoryInfo(void* d, FakeMem* m) {
  if (g_state.call_result != 0) return g_state.call_result;
  const int i = index_of(d);
  m->total = g_state.total[i];
  m->used = g_state.used[i];
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetMaxClockInfo(void* d, int type, unsigned* mhz) {
  if (g_state.call_result != 0 || type != 1) return 2;  // only NVML_CLOCK_SM
  *mhz = g_state.clock_mhz[index_of(d)];
  return 0;
}
}  // extern "C"

#else  // the tests

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "scheduler/probe.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// A fabricated root holding proc/ and sys/ files, removed at the end.
class FakeRoot {
 public:
  FakeRoot() {
    std::string tmpl = (fs::temp_directory_path() / "fnndtps-probe-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
  }
  ~FakeRoot() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  FakeRoot(const FakeRoot&) = delete;
  FakeRoot& operator=(const FakeRoot&) = delete;

  std::string root() const { return dir_.string(); }
  void write(const std::string& rel, const std::string& text) const {
    const fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
  }
  void remove(const std::string& rel) const { fs::remove(dir_ / rel); }

 private:
  fs::path dir_;
};

// user nice system idle iowait irq softirq steal guest guest_nice
std::string stat_line(const std::string& name, unsigned long long user, unsigned long long system,
                      unsigned long long idle, unsigned long long iowait = 0) {
  return name + " " + std::to_string(user) + " 0 " + std::to_string(system) + " " +
         std::to_string(idle) + " " + std::to_string(iowait) + " 0 0 0 0 0\n";
}

const char* kMeminfo =
    "MemTotal:        8000000 kB\n"
    "MemFree:         1000000 kB\n"
    "MemAvailable:    6000000 kB\n"
    "Buffers:          100000 kB\n"
    "Cached:          2000000 kB\n";

// Two Skylake-like processors: avx512f + fma, "cpu MHz" 2500 and 3000.
const char* kCpuinfoX86 =
    "processor\t: 0\n"
    "vendor_id\t: GenuineIntel\n"
    "cpu MHz\t\t: 2500.000\n"
    "flags\t\t: fpu sse sse2 avx avx2 fma avx512f\n"
    "\n"
    "processor\t: 1\n"
    "vendor_id\t: GenuineIntel\n"
    "cpu MHz\t\t: 3000.000\n"
    "flags\t\t: fpu sse sse2 avx avx2 fma avx512f\n"
    "\n";

sched::ProbeOptions fast_options(const FakeRoot& r) {
  sched::ProbeOptions o;
  o.root = r.root();
  o.min_interval = 0ns;  // every call reads the files
  o.uf_window = 0ns;     // UF between the two latest snapshots
  o.nvml_library = "";
  o.gpus = std::vector<sched::GpuInfo>{};
  return o;
}

sched::WorkerSpec cpu_worker(std::vector<unsigned> cpus) {
  sched::WorkerSpec s;
  s.kind = sched::WorkerKind::Cpu;
  s.cpus = std::move(cpus);
  return s;
}

sched::WorkerSpec cuda_worker(int device) {
  sched::WorkerSpec s;
  s.kind = sched::WorkerKind::Cuda;
  s.cuda_device = device;
  return s;
}

// An H100-like device: 132 SMs of compute capability 9.0, 2048 threads per SM, 80 GiB.
sched::GpuInfo h100(int device, double clock_khz, std::string bus = {}) {
  sched::GpuInfo g;
  g.device = device;
  g.cc_major = 9;
  g.cc_minor = 0;
  g.sms = 132;
  g.max_threads_per_sm = 2048;
  g.clock_khz = clock_khz;
  g.total_mem = 80ull << 30;
  g.pci_bus_id = std::move(bus);
  return g;
}

bool in_unit(double x) { return x >= 0.0 && x <= 1.0; }

// ---- /proc/stat ------------------------------------------------------------------------------

TEST(ProcStat, ParsesAggregateAndPerCoreLines) {
  const std::string text =
      "cpu  100 5 50 1000 20 3 2 1 7 0\n"
      "cpu0 60 5 20 400 10 3 2 1 7 0\n"
      "cpu1 40 0 30 600 10 0 0 0 0 0\n"
      "cpu3 1 2 3 4\n"  // cpu2 offline; an old kernel's four fields
      "intr 12345 0 0\n"
      "ctxt 999\n";
  const auto st = sched::parse_proc_stat(text);
  ASSERT_TRUE(st);
  ASSERT_TRUE(st->all);
  EXPECT_EQ(st->all->busy, 100u + 5 + 50 + 3 + 2 + 1);  // guest (7) is inside user already
  EXPECT_EQ(st->all->idle, 1000u + 20);
  ASSERT_EQ(st->cpu.size(), 4u);
  ASSERT_TRUE(st->cpu[0]);
  EXPECT_EQ(st->cpu[0]->busy, 60u + 5 + 20 + 3 + 2 + 1);
  EXPECT_EQ(st->cpu[0]->idle, 410u);
  EXPECT_EQ(st->cpu[1]->busy, 70u);
  EXPECT_EQ(st->cpu[1]->idle, 610u);
  EXPECT_FALSE(st->cpu[2]);
  ASSERT_TRUE(st->cpu[3]);
  EXPECT_EQ(st->cpu[3]->busy, 6u);
  EXPECT_EQ(st->cpu[3]->idle, 4u);
}

TEST(ProcStat, RejectsGarbage) {
  EXPECT_FALSE(sched::parse_proc_stat(""));
  EXPECT_FALSE(sched::parse_proc_stat("intr 1 2 3\nctxt 4\n"));
  EXPECT_FALSE(sched::parse_proc_stat("cpu 1 2 x 4\ncpu0 1 2\n"));
  EXPECT_FALSE(sched::parse_proc_stat("cpu -1 2 3 4\n"));
}

TEST(ProcStat, BusyFractionOfTwoSnapshotsIsExact) {
  const sched::CpuTimes a{100, 900};
  const sched::CpuTimes b{130, 970};  // +30 busy, +70 idle
  EXPECT_DOUBLE_EQ(*sched::busy_fraction(a, b), 0.3);
  EXPECT_DOUBLE_EQ(*sched::busy_fraction_since_boot(b), 130.0 / 1100.0);
  EXPECT_FALSE(sched::busy_fraction(a, a));  // no tick elapsed
  EXPECT_FALSE(sched::busy_fraction_since_boot(sched::CpuTimes{}));
  // iowait may go backwards: the idle delta is floored at 0, the busy share stays in [0, 1].
  EXPECT_DOUBLE_EQ(*sched::busy_fraction(sched::CpuTimes{100, 900}, sched::CpuTimes{110, 890}), 1.0);
}

// ---- /proc/meminfo and cpuinfo ---------------------------------------------------------------

TEST(Meminfo, ParsesBytesAndOccupancy) {
  const auto m = sched::parse_meminfo(kMeminfo);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->total_bytes, 8000000ull * 1024);
  EXPECT_EQ(m->available_bytes, 6000000ull * 1024);
  EXPECT_DOUBLE_EQ(sched::memory_occupancy(*m), 0.25);
}

TEST(Meminfo, WithoutMemAvailableUsesFreeBuffersCached) {
  const auto m = sched::parse_meminfo(
      "MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 50 kB\nCached: 250 kB\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->available_bytes, 400u * 1024);
  EXPECT_DOUBLE_EQ(sched::memory_occupancy(*m), 0.6);
}

TEST(Meminfo, MissingTotalAndDegenerateValues) {
  EXPECT_FALSE(sched::parse_meminfo("MemFree: 100 kB\n"));
  EXPECT_FALSE(sched::parse_meminfo(""));
  EXPECT_DOUBLE_EQ(sched::memory_occupancy(sched::MemInfo{0, 0}), 0.0);
  EXPECT_DOUBLE_EQ(sched::memory_occupancy(sched::MemInfo{100, 200}), 0.0);  // clamped
}

TEST(Cpuinfo, ParsesProcessorsClockAndFlags) {
  const auto e = sched::parse_cpuinfo(kCpuinfoX86);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].processor, 0u);
  EXPECT_DOUBLE_EQ(e[0].mhz, 2500.0);
  EXPECT_EQ(e[1].processor, 1u);
  EXPECT_DOUBLE_EQ(e[1].mhz, 3000.0);
  EXPECT_NE(e[1].flags.find("avx512f"), std::string::npos);

  const auto arm = sched::parse_cpuinfo(
      "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes\n\n");
  ASSERT_EQ(arm.size(), 1u);
  EXPECT_DOUBLE_EQ(arm[0].mhz, 0.0);
  EXPECT_EQ(sched::simd_from_flags(arm[0].flags).lanes, 4u);
  EXPECT_TRUE(sched::simd_from_flags(arm[0].flags).fma);
}

TEST(Cpuinfo, SimdLanesFromFlags) {
  struct Case {
    const char* flags;
    unsigned lanes;
    bool fma;
  };
  for (const Case& c : {Case{"fpu sse sse2 avx avx2 fma avx512f avx512bw", 16, true},
                        Case{"sse sse2 avx avx2 fma", 8, true}, Case{"sse sse2 avx", 8, false},
                        Case{"sse sse2", 4, false}, Case{"fpu", 1, false}, Case{"", 1, false},
                        Case{"sse fma4", 4, true}}) {
    const sched::SimdInfo s = sched::simd_from_flags(c.flags);
    EXPECT_EQ(s.lanes, c.lanes) << c.flags;
    EXPECT_EQ(s.fma, c.fma) << c.flags;
  }
  // "avx512" alone is not avx512f, and a substring is not a flag.
  EXPECT_EQ(sched::simd_from_flags("sse avx512vl").lanes, 4u);
  EXPECT_EQ(sched::simd_from_flags("xavx2y").lanes, 1u);
}

TEST(Cpuinfo, PeakGflops) {
  // 1 core x 2.5 GHz x 16 lanes x 2 (FMA) = 80 GFLOP/s.
  EXPECT_DOUBLE_EQ(sched::cpu_peak_gflops(1, 2500, sched::SimdInfo{16, true}), 80.0);
  EXPECT_DOUBLE_EQ(sched::cpu_peak_gflops(4, 3000, sched::SimdInfo{8, true}), 192.0);
  EXPECT_DOUBLE_EQ(sched::cpu_peak_gflops(2, 2000, sched::SimdInfo{4, false}), 16.0);
  EXPECT_DOUBLE_EQ(sched::cpu_peak_gflops(-1, 2000, sched::SimdInfo{4, false}), 0.0);
  EXPECT_DOUBLE_EQ(sched::cpu_peak_gflops(1, std::nan(""), sched::SimdInfo{4, false}), 0.0);
}

TEST(Gpu, LanesAndPeak) {
  EXPECT_EQ(sched::gpu_fp32_lanes_per_sm(7, 0), 64u);   // V100
  EXPECT_EQ(sched::gpu_fp32_lanes_per_sm(8, 0), 64u);   // A100
  EXPECT_EQ(sched::gpu_fp32_lanes_per_sm(8, 6), 128u);  // GA10x
  EXPECT_EQ(sched::gpu_fp32_lanes_per_sm(9, 0), 128u);  // H100/H200
  EXPECT_EQ(sched::gpu_fp32_lanes_per_sm(12, 0), 128u);
  EXPECT_EQ(sched::gpu_fp32_lanes_per_sm(6, 0), 64u);
  EXPECT_EQ(sched::gpu_fp32_lanes_per_sm(6, 1), 128u);
  // H100 SXM: 132 SMs x 128 x 2 x 1.98 GHz = 66908.16 GFLOP/s (NVIDIA's 67 TFLOPS FP32).
  EXPECT_NEAR(sched::gpu_peak_gflops(132, 128, 1980000.0), 66908.16, 1e-6);
  EXPECT_DOUBLE_EQ(sched::gpu_peak_gflops(0, 128, 1980000.0), 0.0);
  EXPECT_DOUBLE_EQ(sched::fallback_gpu_mhz(9, 0), 1980.0);
  EXPECT_DOUBLE_EQ(sched::fallback_gpu_mhz(42, 0), 1500.0);
}

// ---- normalisation ---------------------------------------------------------------------------

TEST(Normalise, MaximumBecomesOneAndAllInUnitInterval) {
  const std::vector<sched::RawFeatures> raw{
      {80.0, 4e9, 1.0, 0.5, 0.25},
      {160.0, 4e9, 2.0, 0.0, 0.25},
      {66908.16, 80e9, 270336.0, 0.9, 0.1},
  };
  const auto f = sched::normalise(raw);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_DOUBLE_EQ(f[2].F, 1.0);
  EXPECT_DOUBLE_EQ(f[2].M, 1.0);
  EXPECT_DOUBLE_EQ(f[2].P, 1.0);
  EXPECT_DOUBLE_EQ(f[0].F, 80.0 / 66908.16);
  EXPECT_DOUBLE_EQ(f[1].M, 0.05);
  EXPECT_DOUBLE_EQ(f[1].P, 2.0 / 270336.0);
  EXPECT_DOUBLE_EQ(f[0].UF, 0.5);  // UF, UM unchanged
  EXPECT_DOUBLE_EQ(f[2].UM, 0.1);
  for (const fnn::Features& x : f) {
    for (double v : x.to_array()) EXPECT_TRUE(in_unit(v)) << v;
  }
}

TEST(Normalise, ZeroSafeAndClamped) {
  EXPECT_TRUE(sched::normalise({}).empty());
  const auto zeros = sched::normalise({sched::RawFeatures{}, sched::RawFeatures{}});
  for (const fnn::Features& x : zeros) {
    for (double v : x.to_array()) EXPECT_EQ(v, 0.0);
  }
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  const auto f = sched::normalise({{nan, -5.0, inf, 1.5, -0.1}, {10.0, 0.0, 4.0, nan, 0.7}});
  for (const fnn::Features& x : f) {
    for (double v : x.to_array()) EXPECT_TRUE(in_unit(v)) << v;
  }
  EXPECT_EQ(f[0].F, 0.0);
  EXPECT_EQ(f[0].M, 0.0);  // negative; the node's M maximum is 0 anyway
  EXPECT_EQ(f[0].P, 0.0);  // infinite P is no measurement
  EXPECT_EQ(f[1].P, 1.0);
  EXPECT_EQ(f[0].UF, 1.0);
  EXPECT_EQ(f[0].UM, 0.0);
  EXPECT_EQ(f[1].UF, 0.0);
  EXPECT_DOUBLE_EQ(f[1].F, 1.0);
}

// ---- the probe on a fabricated root ----------------------------------------------------------

TEST(ProbeFake, CpuStaticFeatures) {
  FakeRoot r;
  r.write("proc/cpuinfo", kCpuinfoX86);
  r.write("proc/meminfo", kMeminfo);
  r.write("proc/stat", stat_line("cpu", 0, 0, 0) + stat_line("cpu0", 0, 0, 0) +
                           stat_line("cpu1", 0, 0, 0));
  // cpufreq for cpu1 only: 3.5 GHz beats its "cpu MHz".
  r.write("sys/devices/system/cpu/cpu1/cpufreq/cpuinfo_max_freq", "3500000\n");
  sched::Probe p({cpu_worker({0}), cpu_worker({1}), cpu_worker({0, 1})}, fast_options(r));
  ASSERT_EQ(p.size(), 3u);
  const sched::RawFeatures a = p.static_features(0);
  const sched::RawFeatures b = p.static_features(1);
  const sched::RawFeatures c = p.static_features(2);
  EXPECT_DOUBLE_EQ(a.F, 2.5 * 16 * 2);  // 80
  EXPECT_DOUBLE_EQ(b.F, 3.5 * 16 * 2);  // 112
  EXPECT_DOUBLE_EQ(c.F, 80.0 + 112.0);
  EXPECT_DOUBLE_EQ(a.P, 1.0);
  EXPECT_DOUBLE_EQ(c.P, 2.0);
  // MemTotal shared in proportion to cores: 1 + 1 + 2 = 4 cores in all.
  const double total = 8000000.0 * 1024;
  EXPECT_DOUBLE_EQ(a.M, total / 4);
  EXPECT_DOUBLE_EQ(c.M, total / 2);
  EXPECT_EQ(a.UF, 0.0);
  EXPECT_EQ(a.UM, 0.0);

  p.set_measured_peak(0, 123.0);
  EXPECT_DOUBLE_EQ(p.static_features(0).F, 123.0);
  EXPECT_DOUBLE_EQ(p.sample(0).F, 123.0);
  p.set_measured_peak(0, 0.0);  // back to the computed value
  EXPECT_DOUBLE_EQ(p.static_features(0).F, 80.0);
  EXPECT_THROW(p.static_features(3), std::out_of_range);
  EXPECT_THROW(p.spec(3), std::out_of_range);
}

TEST(ProbeFake, ClockFallbacks) {
  FakeRoot r;
  // No cpufreq, no "cpu MHz" for processor 1: the highest listed (2400); none at all: 2000.
  r.write("proc/cpuinfo",
          "processor : 0\ncpu MHz : 2400\nflags : sse\n\nprocessor : 1\nflags : sse\n\n");
  sched::Probe p({cpu_worker({1}), cpu_worker({7})}, fast_options(r));
  EXPECT_DOUBLE_EQ(p.static_features(0).F, 2.4 * 4);
  EXPECT_DOUBLE_EQ(p.static_features(1).F, 2.4 * 4);  // unknown cpu: the first entry's flags

  FakeRoot bare;  // no files at all
  sched::Probe q({cpu_worker({}), cpu_worker({0})}, fast_options(bare));
  EXPECT_DOUBLE_EQ(q.static_features(0).F, sched::kFallbackCpuMhz / 1000.0);  // 1 scalar lane
  EXPECT_DOUBLE_EQ(q.static_features(0).P, 1.0);
  EXPECT_DOUBLE_EQ(q.static_features(0).M, 0.0);
  const sched::RawFeatures s = q.sample(1);  // no /proc/stat: nothing known of others' load
  EXPECT_EQ(s.UF, 0.0);
  EXPECT_EQ(s.UM, 0.0);
  EXPECT_EQ(q.uf_source(1), sched::Source::None);
  EXPECT_EQ(q.um_source(1), sched::Source::None);
}

TEST(ProbeFake, UfIsTheExactBusyShareBetweenTwoSnapshots) {
  FakeRoot r;
  r.write("proc/meminfo", kMeminfo);
  r.write("proc/stat", stat_line("cpu", 200, 100, 1000) + stat_line("cpu0", 100, 50, 500) +
                           stat_line("cpu1", 100, 50, 500));
  sched::Probe p({cpu_worker({0}), cpu_worker({1}), cpu_worker({0, 1}), cpu_worker({}),
                  cpu_worker({5})},
                 fast_options(r));  // the constructor takes the first snapshot
  // cpu0: +30 user +10 system +60 idle -> 0.4; cpu1: +90 user +10 iowait -> 0.9.
  r.write("proc/stat", stat_line("cpu", 320, 110, 1060, 10) + stat_line("cpu0", 130, 60, 560) +
                           stat_line("cpu1", 190, 50, 500, 10));
  const std::vector<sched::RawFeatures> s = p.sample_all();
  EXPECT_DOUBLE_EQ(s[0].UF, 0.4);
  EXPECT_DOUBLE_EQ(s[1].UF, 0.9);
  EXPECT_DOUBLE_EQ(s[2].UF, (40.0 + 90.0) / 200.0);  // both cores together
  EXPECT_DOUBLE_EQ(s[3].UF, 130.0 / 200.0);          // the aggregate line
  EXPECT_EQ(p.uf_source(0), sched::Source::ProcStat);
  // cpu5 is not in /proc/stat: no reading.
  EXPECT_EQ(s[4].UF, 0.0);
  EXPECT_EQ(p.uf_source(4), sched::Source::None);
  for (const sched::RawFeatures& x : s) EXPECT_DOUBLE_EQ(x.UM, 0.25);
  EXPECT_EQ(p.um_source(0), sched::Source::ProcMeminfo);

  // A third snapshot: with uf_window 0 the delta is from the second one.
  r.write("proc/stat", stat_line("cpu", 320, 110, 1160, 10) + stat_line("cpu0", 130, 60, 660) +
                           stat_line("cpu1", 190, 50, 600, 10));
  EXPECT_DOUBLE_EQ(p.sample(0).UF, 0.0);
  // No tick since: the since-boot share of the latest snapshot.
  EXPECT_DOUBLE_EQ(p.sample(0).UF, 190.0 / 850.0);
}

TEST(ProbeFake, UfWindowKeepsTheOlderBase) {
  FakeRoot r;
  r.write("proc/stat", stat_line("cpu0", 0, 0, 100));
  sched::ProbeOptions o = fast_options(r);
  o.uf_window = std::chrono::hours(1);  // no snapshot is ever old enough: the oldest is the base
  sched::Probe p({cpu_worker({0})}, o);
  r.write("proc/stat", stat_line("cpu0", 50, 0, 150));
  EXPECT_DOUBLE_EQ(p.sample(0).UF, 0.5);
  r.write("proc/stat", stat_line("cpu0", 50, 0, 250));
  EXPECT_DOUBLE_EQ(p.sample(0).UF, 50.0 / 200.0);  // from the first snapshot, not the second (0)
}

TEST(ProbeFake, ReadsAreCachedForMinInterval) {
  FakeRoot r;
  r.write("proc/meminfo", kMeminfo);
  r.write("proc/stat", stat_line("cpu0", 0, 0, 100));
  sched::ProbeOptions o = fast_options(r);
  o.min_interval = std::chrono::hours(1);
  sched::Probe p({cpu_worker({0})}, o);
  const sched::RawFeatures first = p.sample(0);
  EXPECT_DOUBLE_EQ(first.UF, 0.0);  // the constructor's snapshot alone: since boot
  EXPECT_DOUBLE_EQ(first.UM, 0.25);
  r.write("proc/stat", stat_line("cpu0", 100, 0, 100));
  r.write("proc/meminfo", "MemTotal: 100 kB\nMemAvailable: 10 kB\n");
  for (int i = 0; i < 1000; ++i) {
    const sched::RawFeatures s = p.sample(0);
    ASSERT_DOUBLE_EQ(s.UF, first.UF);
    ASSERT_DOUBLE_EQ(s.UM, first.UM);
  }
}

TEST(ProbeFake, ConcurrentSamplingStaysInRange) {
  FakeRoot r;
  r.write("proc/meminfo", kMeminfo);
  r.write("proc/cpuinfo", kCpuinfoX86);
  r.write("proc/stat", stat_line("cpu0", 10, 10, 100) + stat_line("cpu1", 10, 10, 100));
  sched::ProbeOptions o = fast_options(r);
  o.min_interval = 1ms;
  o.uf_window = 5ms;
  sched::Probe p({cpu_worker({0}), cpu_worker({1})}, o);
  std::atomic<bool> bad{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const auto w = static_cast<std::size_t>((t + i) % 2);
        const sched::RawFeatures s = p.sample(w);
        if (!in_unit(s.UF) || !in_unit(s.UM) || !(s.F > 0.0)) bad = true;
        if (i % 500 == 0) {
          for (const fnn::Features& f : sched::normalise(p.sample_all())) {
            for (double v : f.to_array()) {
              if (!in_unit(v)) bad = true;
            }
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(bad);
}

TEST(ProbeFake, NegativeCudaDeviceIsRefused) {
  FakeRoot r;
  EXPECT_THROW(sched::Probe({cuda_worker(-1)}, fast_options(r)), std::invalid_argument);
}

// ---- CUDA workers and NVML -------------------------------------------------------------------

TEST(ProbeNvml, AbsentLibraryFallsBack) {
  FakeRoot r;
  sched::ProbeOptions o = fast_options(r);
  o.nvml_library = "libfnndtps-no-such-nvml.so.1";
  o.gpus = std::vector<sched::GpuInfo>{h100(0, 1980000.0)};
  sched::Probe p({cuda_worker(0), cuda_worker(3)}, o);
  EXPECT_FALSE(p.nvml_available());
  const sched::RawFeatures s0 = p.static_features(0);
  EXPECT_NEAR(s0.F, 66908.16, 1e-6);
  EXPECT_DOUBLE_EQ(s0.M, static_cast<double>(80ull << 30));
  EXPECT_DOUBLE_EQ(s0.P, 132.0 * 2048);
  // Device 3 is unknown to the runtime: zeros, not a crash.
  const sched::RawFeatures s3 = p.static_features(1);
  EXPECT_EQ(s3.F, 0.0);
  EXPECT_EQ(s3.M, 0.0);
  EXPECT_EQ(s3.P, 0.0);

  const sched::RawFeatures live = p.sample(0);
  EXPECT_EQ(live.UF, 0.0);  // no NVML: no reading
  EXPECT_EQ(p.uf_source(0), sched::Source::None);
  EXPECT_EQ(live.UM, 0.0);  // no NVML, no CUDA context on this thread
  EXPECT_EQ(p.um_source(0), sched::Source::None);

  // No clock from the runtime and no NVML: the table's boost clock for 9.0.
  o.gpus = std::vector<sched::GpuInfo>{h100(0, 0.0)};
  sched::Probe q({cuda_worker(0)}, o);
  EXPECT_NEAR(q.static_features(0).F, 66908.16, 1e-6);
}

TEST(ProbeNvml, DefaultLibraryOnThisMachineNeverCrashes) {
  FakeRoot r;
  sched::ProbeOptions o = fast_options(r);
  o.nvml_library = sched::ProbeOptions{}.nvml_library;
  o.gpus.reset();  // ask the CUDA runtime, if built with it
  sched::Probe p({cuda_worker(0), cpu_worker({0})}, o);
  for (int i = 0; i < 3; ++i) {
    const sched::RawFeatures s = p.sample(0);
    EXPECT_TRUE(in_unit(s.UF));
    EXPECT_TRUE(in_unit(s.UM));
  }
  if (!p.nvml_available()) {
    EXPECT_EQ(p.uf_source(0), sched::Source::None);
  }
}

#ifdef FAKE_NVML_PATH
// The fake library's state, through the same handle the probe's dlopen will get.
class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    handle_ = dlopen(FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    void* sym = dlsym(handle_, "fake_nvml_state");
    ASSERT_NE(sym, nullptr);
    FakeNvmlState* (*get)() = nullptr;
    std::memcpy(&get, &sym, sizeof get);
    state_ = get();
    *state_ = FakeNvmlState{0, 0, {37, 80}, {1000, 4000}, {250, 1000}, {1500, 1700}, 0, 0, 0};
  }
  void TearDown() override {
    if (handle_ != nullptr) dlclose(handle_);
  }
  sched::ProbeOptions options(const FakeRoot& r, std::vector<sched::GpuInfo> gpus) const {
    sched::ProbeOptions o = fast_options(r);
    o.nvml_library = FAKE_NVML_PATH;
    o.gpus = std::move(gpus);
    return o;
  }

  void* handle_ = nullptr;
  FakeNvmlState* state_ = nullptr;
};

TEST_F(FakeNvml, UtilisationMemoryAndClock) {
  FakeRoot r;
  {
    sched::Probe p({cuda_worker(0)}, options(r, {h100(0, 0.0)}));
    ASSERT_TRUE(p.nvml_available());
    EXPECT_EQ(state_->inits, 1);
    // The SM clock from NVML (1500 MHz) where the runtime gave none.
    EXPECT_NEAR(p.static_features(0).F, 132.0 * 128 * 2 * 1.5, 1e-9);
    const sched::RawFeatures s = p.sample(0);
    EXPECT_DOUBLE_EQ(s.UF, 0.37);
    EXPECT_DOUBLE_EQ(s.UM, 0.25);
    EXPECT_EQ(p.uf_source(0), sched::Source::Nvml);
    EXPECT_EQ(p.um_source(0), sched::Source::Nvml);
    state_->util[0] = 90;
    EXPECT_DOUBLE_EQ(p.sample(0).UF, 0.9);  // min_interval 0: asked again
  }
  EXPECT_EQ(state_->shutdowns, 1);
}

TEST_F(FakeNvml, PciBusIdBeatsTheOrdinal) {
  FakeRoot r;
  // CUDA ordinal 0 is the NVML device at 0000:02:00.0 (index 1), as CUDA_VISIBLE_DEVICES=1 gives.
  sched::Probe p({cuda_worker(0)}, options(r, {h100(0, 1980000.0, "0000:02:00.0")}));
  const sched::RawFeatures s = p.sample(0);
  EXPECT_DOUBLE_EQ(s.UF, 0.8);
  EXPECT_DOUBLE_EQ(s.UM, 0.25);
  EXPECT_NEAR(p.static_features(0).F, 66908.16, 1e-6);  // the runtime's clock wins over NVML's
}

TEST_F(FakeNvml, CachedForMinInterval) {
  FakeRoot r;
  sched::ProbeOptions o = options(r, {h100(0, 1980000.0)});
  o.min_interval = std::chrono::hours(1);
  sched::Probe p({cuda_worker(0)}, o);
  for (int i = 0; i < 1000; ++i) ASSERT_DOUBLE_EQ(p.sample(0).UF, 0.37);
  EXPECT_EQ(state_->util_calls, 1u);
}

TEST_F(FakeNvml, FailingCallsFallBack) {
  FakeRoot r;
  sched::Probe p({cuda_worker(0)}, options(r, {h100(0, 1980000.0)}));
  EXPECT_DOUBLE_EQ(p.sample(0).UM, 0.25);
  state_->call_result = 999;  // NVML_ERROR_UNKNOWN
  const sched::RawFeatures s = p.sample(0);
  EXPECT_EQ(s.UF, 0.0);
  EXPECT_EQ(p.uf_source(0), sched::Source::None);
  EXPECT_DOUBLE_EQ(s.UM, 0.25);  // the last value NVML gave
  EXPECT_EQ(p.um_source(0), sched::Source::LastValue);
}

TEST_F(FakeNvml, FailingInitFallsBack) {
  FakeRoot r;
  state_->init_result = 9;  // NVML_ERROR_DRIVER_NOT_LOADED
  sched::Probe p({cuda_worker(0)}, options(r, {h100(0, 0.0)}));
  EXPECT_FALSE(p.nvml_available());
  EXPECT_EQ(state_->shutdowns, 0);
  EXPECT_NEAR(p.static_features(0).F, 66908.16, 1e-6);  // table clock, not NVML's
  EXPECT_EQ(p.sample(0).UF, 0.0);
  EXPECT_EQ(p.uf_source(0), sched::Source::None);
}

TEST_F(FakeNvml, NoNvmlOpenedWithoutCudaWorkers) {
  FakeRoot r;
  sched::Probe p({cpu_worker({0})}, options(r, {}));
  EXPECT_FALSE(p.nvml_available());
  EXPECT_EQ(state_->inits, 0);
}

TEST(ProbeNvmlPartial, MissingSymbolFallsBack) {
  FakeRoot r;
  sched::ProbeOptions o = fast_options(r);
  o.nvml_library = FAKE_NVML_PARTIAL_PATH;  // no nvmlDeviceGetUtilizationRates
  o.gpus = std::vector<sched::GpuInfo>{h100(0, 1980000.0)};
  sched::Probe p({cuda_worker(0)}, o);
  EXPECT_FALSE(p.nvml_available());
  EXPECT_EQ(p.sample(0).UF, 0.0);
  EXPECT_EQ(p.uf_source(0), sched::Source::None);
}
#endif  // FAKE_NVML_PATH

// ---- the real machine ------------------------------------------------------------------------

TEST(ProbeReal, CudaRuntimeWithoutGpuReportsNoDeviceOrSaneOnes) {
  for (const sched::GpuInfo& g : sched::cuda_devices()) {  // empty on a machine without GPU
    EXPECT_GT(g.sms, 0);
    EXPECT_GT(g.total_mem, 0u);
  }
  EXPECT_FALSE(sched::cuda_memory_occupancy_if_current(0).has_value() &&
               !in_unit(*sched::cuda_memory_occupancy_if_current(0)));
}

// What this node offers, as the policy would describe StarPU's workers on it: one Cpu worker
// per cpu that /proc/stat lists (or per cpuinfo processor, or one), one Cuda per device.
std::vector<sched::WorkerSpec> this_machines_workers() {
  const auto read = [](const char* path) {
    std::ifstream f(path);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  std::vector<sched::WorkerSpec> out;
  if (auto st = sched::parse_proc_stat(read("/proc/stat"))) {
    for (std::size_t c = 0; c < st->cpu.size(); ++c) {
      if (st->cpu[c]) out.push_back({sched::WorkerKind::Cpu, {static_cast<unsigned>(c)}, -1});
    }
  }
  if (out.empty()) {
    for (const sched::CpuInfoEntry& e : sched::parse_cpuinfo(read("/proc/cpuinfo"))) {
      out.push_back({sched::WorkerKind::Cpu, {e.processor}, -1});
    }
  }
  if (out.empty()) out.push_back({sched::WorkerKind::Cpu, {}, -1});
  for (const sched::GpuInfo& g : sched::cuda_devices()) out.push_back({sched::WorkerKind::Cuda, {}, g.device});
  return out;
}

TEST(ProbeReal, ThisMachineGivesSaneFeatures) {
  sched::ProbeOptions o;  // the real /proc, /sys, NVML and CUDA runtime
  const std::vector<sched::WorkerSpec> specs = this_machines_workers();
  ASSERT_FALSE(specs.empty());
  ASSERT_EQ(specs.front().kind, sched::WorkerKind::Cpu);
  sched::Probe p(specs, o);
  const auto start = std::chrono::steady_clock::now();
  std::vector<sched::RawFeatures> raw;
  for (int i = 0; i < 2000; ++i) raw = p.sample_all();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (std::size_t w = 0; w < raw.size(); ++w) {
    const sched::RawFeatures& s = raw[w];
    if (p.spec(w).kind == sched::WorkerKind::Cpu) {
      EXPECT_GT(s.F, 0.0) << w;
      EXPECT_GT(s.M, 0.0) << w;
      EXPECT_GE(s.P, 1.0) << w;
      EXPECT_EQ(p.uf_source(w), sched::Source::ProcStat);
      EXPECT_EQ(p.um_source(w), sched::Source::ProcMeminfo);
    }
    EXPECT_TRUE(in_unit(s.UF)) << w << " " << s.UF;
    EXPECT_TRUE(in_unit(s.UM)) << w << " " << s.UM;
  }
  for (const fnn::Features& f : sched::normalise(raw)) {
    for (double v : f.to_array()) EXPECT_TRUE(in_unit(v)) << v;
  }
  // Recorded, not asserted (timings belong to bench/): /proc is read at most every 10 ms, so
  // this is nearly all cache hits.
  RecordProperty("sample_all_us", std::to_string(seconds / 2000 * 1e6));
}

}  // namespace

#endif  // FNNDTPS_FAKE_NVML
