// The bench's perturbation injector (DESIGN §8): load that comes and goes on a schedule, beside
// the program being measured.
//   perturb --gpu DEV [--duty D] [--period-ms P] [--kernel-ms K] [--seconds T]
//   perturb --cpu-cores LIST [--duty D] [--period-ms P] [--seconds T]
// Both may be given together. In every period of P ms the load is on for the first D x P ms
// and off for the rest:
// - on a GPU, a busy kernel that fills every SM (as many resident blocks as the occupancy
//   calculator allows) and spins on the GPU's clock for K ms per launch (default 2 ms), launched
//   back to back while on. Short launches let the driver time-slice the GPU with the measured
//   program's context; the kernel allocates 8 bytes. The launching thread waits by blocking
//   synchronisation, not by spinning a CPU core;
// - on CPUs, one busy thread pinned to each listed core (LIST: 0,1,4-7), spinning while on and
//   sleeping while off.
// Prints one line saying what it does, then runs until SIGTERM or SIGINT (exit 0) or for T
// seconds. A bad option: one line on stderr, exit 2.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "apps/cli.hpp"

namespace perturb {

// Defined in perturb_gpu.cu (built with CUDA only). Starts using device `dev` and returns a
// description ("NVIDIA H200, 132 SMs x 8 blocks of 256 threads"); throws std::invalid_argument
// when the device does not exist (a bad option).
std::string gpu_open(int dev);
// Launches one busy kernel spinning for `ms` on the device opened last and waits for it.
void gpu_busy(double ms);

// A bad option or a device that does not exist: one line, exit 2.
using BadOption = apps::UsageError;

}  // namespace perturb

namespace {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::duration<double, std::milli>;

constexpr const char* kUsage =
    "usage: perturb [--gpu DEV] [--cpu-cores LIST] [--duty D] [--period-ms P] [--kernel-ms K] [--seconds T]\n"
    "  --gpu DEV         busy kernel on every SM of CUDA device DEV while on\n"
    "  --cpu-cores LIST  one busy thread pinned to each core of LIST (e.g. 0,1,4-7) while on\n"
    "  --duty D          fraction of each period the load is on, 0 < D <= 1 (default 0.5)\n"
    "  --period-ms P     period of the on/off schedule in ms (default 200)\n"
    "  --kernel-ms K     length of one busy-kernel launch in ms (default 2)\n"
    "  --seconds T       stop after T seconds (default: run until SIGTERM or SIGINT)\n";

std::atomic<bool> g_stop{false};

extern "C" void on_signal(int) { g_stop.store(true); }  // lock-free: async-signal-safe

struct Options {
  int gpu = -1;
  std::vector<int> cores;
  double duty = 0.5, period_ms = 200, kernel_ms = 2, seconds = 0;
};

double parse_number(const std::string& flag, const std::string& v) { return apps::parse_real(flag, v); }

int parse_index(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || x < 0 || x > 1 << 20)
    throw perturb::BadOption(flag + " '" + v + "' is not a non-negative integer");
  return int(x);
}

std::vector<int> parse_cores(const std::string& list) {
  std::vector<int> cores;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    const std::size_t dash = item.find('-');
    if (dash == std::string::npos) {
      cores.push_back(parse_index("--cpu-cores", item));
    } else {
      const int a = parse_index("--cpu-cores", item.substr(0, dash));
      const int b = parse_index("--cpu-cores", item.substr(dash + 1));
      if (b < a) throw perturb::BadOption("--cpu-cores range '" + item + "' is empty");
      for (int c = a; c <= b; ++c) cores.push_back(c);
    }
    start = comma + 1;
  }
  std::sort(cores.begin(), cores.end());
  cores.erase(std::unique(cores.begin(), cores.end()), cores.end());
  return cores;
}

Options parse(int argc, char** argv) {
  Options o;
  using V = const std::string&;
  apps::parse_flags(argc, argv, 1, {
    apps::value_flag("--gpu", [&](V v) { o.gpu = parse_index("--gpu", v); }),
    apps::value_flag("--cpu-cores", [&](V v) { o.cores = parse_cores(v); }),
    apps::value_flag("--duty", [&](V v) { o.duty = parse_number("--duty", v); }),
    apps::value_flag("--period-ms", [&](V v) { o.period_ms = parse_number("--period-ms", v); }),
    apps::value_flag("--kernel-ms", [&](V v) { o.kernel_ms = parse_number("--kernel-ms", v); }),
    apps::value_flag("--seconds", [&](V v) { o.seconds = parse_number("--seconds", v); }),
  });
  if (o.gpu < 0 && o.cores.empty()) throw perturb::BadOption("nothing to do: give --gpu DEV and/or --cpu-cores LIST");
  if (!(o.duty > 0 && o.duty <= 1)) throw perturb::BadOption("--duty must be in (0, 1]");
  if (!(o.period_ms > 0)) throw perturb::BadOption("--period-ms must be positive");
  if (!(o.kernel_ms > 0 && o.kernel_ms <= 1000)) throw perturb::BadOption("--kernel-ms must be in (0, 1000]");
  if (!(o.seconds >= 0)) throw perturb::BadOption("--seconds must be at least 0");
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (!o.cores.empty() && sched_getaffinity(0, sizeof allowed, &allowed) == 0)
    for (int c : o.cores)
      if (c >= CPU_SETSIZE || !CPU_ISSET(c, &allowed))
        throw perturb::BadOption("core " + std::to_string(c) + " is not available to this process (" +
                                 std::to_string(CPU_COUNT(&allowed)) + " cores are)");
#ifndef FNNDTPS_PERTURB_CUDA
  if (o.gpu >= 0) throw perturb::BadOption("--gpu: this perturb was built without CUDA");
#endif
  return o;
}

// The schedule, shared by every load: on during [k P, k P + D P) since t0.
struct Schedule {
  Clock::time_point t0;
  double period_ms, on_ms;
  double phase_ms(Clock::time_point t) const {
    const double since = Ms(t - t0).count();
    return since - period_ms * double(static_cast<long long>(since / period_ms));
  }
  // Milliseconds of load left now (0 when off).
  double on_left_ms(Clock::time_point t) const { return std::max(0.0, on_ms - phase_ms(t)); }
  // Milliseconds until the next period starts.
  double off_left_ms(Clock::time_point t) const { return period_ms - phase_ms(t); }
};

void sleep_ms(double ms) { std::this_thread::sleep_for(Ms(std::max(0.0, ms))); }

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

void cpu_busy(int core, const Schedule& s) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);  // checked by parse(): the core is allowed
  volatile double sink = 1.0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    const auto now = Clock::now();
    const double left = s.on_left_ms(now);
    if (left <= 0) {
      sleep_ms(std::min(s.off_left_ms(now), 20.0));  // wake often enough to see a signal
      continue;
    }
    const auto until = now + Ms(std::min(left, 20.0));
    while (Clock::now() < until)
      for (int i = 0; i < 1000; ++i) sink = sink * 1.0000001 + 1e-9;
  }
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::string gpu_text;
#ifdef FNNDTPS_PERTURB_CUDA
  try {
    if (o.gpu >= 0) gpu_text = perturb::gpu_open(o.gpu);
  } catch (const std::invalid_argument& e) {
    throw perturb::BadOption(e.what());
  }
#endif
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  std::string what;
  if (o.gpu >= 0)
    what = "busy kernel on GPU " + std::to_string(o.gpu) + " (" + gpu_text + ", " + number(o.kernel_ms) +
           " ms per launch)";
  if (!o.cores.empty()) {
    if (!what.empty()) what += " and ";
    what += o.cores.size() == 1 ? "a busy thread on core " : "busy threads on cores ";
    for (std::size_t i = 0; i < o.cores.size(); ++i) what += (i ? "," : "") + std::to_string(o.cores[i]);
  }
  const std::string until = o.seconds > 0 ? "for " + number(o.seconds) + " s" : "until SIGTERM or SIGINT";
  std::printf("perturb: %s, on %s%% of every %s ms, %s\n", what.c_str(), number(o.duty * 100).c_str(),
              number(o.period_ms).c_str(), until.c_str());
  std::fflush(stdout);

  const Schedule s{Clock::now(), o.period_ms, o.duty * o.period_ms};
  std::vector<std::thread> threads;
  for (int c : o.cores) threads.emplace_back(cpu_busy, c, std::cref(s));
  std::string gpu_error;
#ifdef FNNDTPS_PERTURB_CUDA
  if (o.gpu >= 0)
    threads.emplace_back([&] {
      try {
        while (!g_stop.load(std::memory_order_relaxed)) {
          const auto now = Clock::now();
          const double left = s.on_left_ms(now);
          if (left <= 0) sleep_ms(std::min(s.off_left_ms(now), 20.0));
          else perturb::gpu_busy(std::min(left, o.kernel_ms));
        }
      } catch (const std::exception& e) {
        gpu_error = e.what();
        g_stop.store(true);
      }
    });
#endif
  const auto end = s.t0 + Ms(o.seconds * 1e3);
  while (!g_stop.load()) {
    if (o.seconds > 0 && Clock::now() >= end) g_stop.store(true);
    else sleep_ms(10);
  }
  for (auto& t : threads) t.join();
  if (!gpu_error.empty()) {
    std::fprintf(stderr, "perturb: %s\n", gpu_error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::run_main({"perturb", kUsage}, argc, argv, [&] { return run(argc, argv); }); }
