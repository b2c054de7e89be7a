// lwt2d: multi-level 2D CDF 9/7 lifting wavelet transform of surface data under StarPU.
//   lwt2d forward --in X.npy --out C.npy [--levels N] [--units U] [--pipeline steps|fused] [--check]
//   lwt2d inverse --in C.npy --out Y.npy [--levels N] [--units U] [--pipeline steps|fused] [--check]
//   lwt2d demo [--size S | --size RxC] [--levels N] [--units U] [--pipeline P] [--seed N] [--check]
//              [--repeat R] [--warmup W]
// Coefficients are in the standard Mallat layout (DESIGN §4.1). The scheduler and workers
// come from StarPU's environment (STARPU_SCHED, STARPU_NCPU, STARPU_NCUDA, ...).
#include <malloc.h>
#include <starpu.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "apps/io/npy.hpp"
#include "apps/io/surface.hpp"
#include "apps/starpu_session.hpp"
#include "codelets/lifting.hpp"
#include "codelets/lwt_tasks.hpp"
#include "scheduler/plugin.hpp"

namespace {

using apps::UsageError;

const char* const kUsage =
    "usage: lwt2d forward --in X.npy --out C.npy [--levels N] [--units U] [--pipeline steps|fused] [--check]\n"
    "       lwt2d inverse --in C.npy --out Y.npy [--levels N] [--units U] [--pipeline steps|fused] [--check]\n"
    "       lwt2d demo [--size S|RxC] [--levels N] [--units U] [--pipeline steps|fused] [--seed N] [--check]\n"
    "                  [--repeat R] [--warmup W]   (time R forward runs after W untimed ones)\n"
    "Arrays are 2-D float32 (<f4) .npy files; coefficients use the standard Mallat layout.\n"
    "Workers and policy come from StarPU's environment (STARPU_SCHED, STARPU_NCPU, STARPU_NCUDA).\n";

struct Options {
  std::string command, in, out;
  int levels = 4, units = 0, rows = 4096, cols = 4096, repeat = 1, warmup = 0;
  unsigned long long seed = 1;
  lwt::Pipeline pipeline = lwt::Pipeline::Fused;
  bool check = false;
};

int parse_int(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE || x < INT32_MIN || x > INT32_MAX)
    throw UsageError(flag + " needs an integer, got '" + v + "'");
  return int(x);
}

Options parse(int argc, char** argv) {
  if (argc < 2) throw UsageError("missing command: forward, inverse or demo (see --help)");
  Options o;
  o.command = argv[1];
  if (o.command != "forward" && o.command != "inverse" && o.command != "demo")
    throw UsageError("unknown command '" + o.command + "': use forward, inverse or demo");
  const bool file_mode = o.command != "demo";
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--levels") o.levels = parse_int(flag, value());
    else if (flag == "--units") o.units = parse_int(flag, value());
    else if (flag == "--pipeline") o.pipeline = lwt::parse_pipeline(value());
    else if (flag == "--check") o.check = true;
    else if (file_mode && flag == "--in") o.in = value();
    else if (file_mode && flag == "--out") o.out = value();
    else if (!file_mode && flag == "--seed") o.seed = unsigned(parse_int(flag, value()));
    else if (!file_mode && flag == "--repeat") o.repeat = parse_int(flag, value());
    else if (!file_mode && flag == "--warmup") o.warmup = parse_int(flag, value());
    else if (!file_mode && flag == "--size") {
      const std::string v = value();
      const auto x = v.find('x');
      o.rows = parse_int(flag, v.substr(0, x));
      o.cols = x == std::string::npos ? o.rows : parse_int(flag, v.substr(x + 1));
    } else throw UsageError("unknown option '" + flag + "' for " + o.command + " (see --help)");
  }
  if (o.levels < 1) throw UsageError("--levels must be at least 1, got " + std::to_string(o.levels));
  if (o.units < 0) throw UsageError("--units must be positive, got " + std::to_string(o.units));
  if (o.repeat < 1 || o.warmup < 0)
    throw UsageError("--repeat must be at least 1 and --warmup at least 0");
  if (!file_mode && (o.rows < 1 || o.cols < 1))
    throw UsageError("--size must be positive, got " + std::to_string(o.rows) + "x" + std::to_string(o.cols));
  if (file_mode && apps::kSimulated)  // no file would hold a transform
    throw UsageError(o.command + " is not simulated (StarPU's SimGrid build computes no data); use lwt2d demo");
  if (file_mode && (o.in.empty() || o.out.empty()))
    throw UsageError(o.command + " needs --in FILE and --out FILE");
  if (file_mode && io::same_file(o.in, o.out))
    throw UsageError("--out names the input file '" + o.in + "'; choose another output");
  return o;
}

// Host buffers that StarPU pins for fast transfers when CUDA workers exist.
struct HostBuffer {
  float* p = nullptr;
  explicit HostBuffer(std::size_t n) {
    if (starpu_malloc(reinterpret_cast<void**>(&p), n * sizeof(float)) != 0)
      throw std::runtime_error("out of host memory for " + std::to_string(n) + " samples");
  }
  ~HostBuffer() { starpu_free_noflag(p, 0); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
};

// StarPU's clock: simulated time under simulation.
double seconds_since(double t0_us) { return (starpu_timing_now() - t0_us) * 1e-6; }

// max |a - b| / max |b|: relative to the data's scale, so that coefficients near zero do not
// dominate.
double relative_error(const float* a, const float* b, std::size_t n) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

void report(const char* what, double secs, std::size_t samples,
            const std::vector<lwt::WorkerStats>& stats) {
  // Bytes from host memory and back: each sample read once and written once.
  const double gbps = 2.0 * double(samples) * sizeof(float) / secs / 1e9;
  std::printf("%-8s %10.2f ms %8.2f GB/s\n", what, secs * 1e3, gbps);
  for (const auto& w : stats)
    if (w.tasks > 0)
      std::printf("    %-28s %6u tasks %4u units %10.2f ms busy\n", w.name.c_str(), w.tasks, w.units,
                  w.busy_ms);
}

void print_setup(const apps::StarpuSession& s, const lwt::Plan& plan, lwt::Pipeline pipeline) {
  std::printf("lwt2d: %d x %d, %d levels, %d units, pipeline %s, policy %s, %u CPU + %u CUDA workers%s\n",
              plan.height(), plan.width(), plan.levels(), plan.units(), lwt::pipeline_name(pipeline),
              s.policy().c_str(), s.cpu_workers(), s.cuda_workers(),
              apps::kSimulated ? " (simulated: no data computed, checks skipped)" : "");
}

// 4 units per worker, and units of at most 16 MiB: on the GPU machine the GPU alone did a
// 16384^2 forward transform (1 GiB) in 30.4 ms as 16 units, 28.0 as 32 and 26.7 as 64, one run
// (more units overlap its transfers with its kernels; bench/RESULTS.md, 2026-12-02 B).
int preferred_units(const apps::StarpuSession& s, int rows, int cols) {
  const double mib = double(rows) * double(cols) * sizeof(float) / double(1 << 20);
  const int by_size = int(std::ceil(mib / 16.0));
  return std::max({8, 4 * int(s.cpu_workers() + s.cuda_workers()), by_size});
}

int run_file(const Options& o) {
  io::Array2D a = io::read_npy_f32(o.in, io::F64Policy::Refuse);
  apps::StarpuSession session;
  const lwt::Plan plan(a.rows, a.cols, o.levels, o.units, preferred_units(session, a.rows, a.cols));
  print_setup(session, plan, o.pipeline);
  const std::size_t n = a.data.size();
  HostBuffer in(n), out(n), image(n);
  std::vector<lwt::WorkerStats> stats;
  const bool fwd = o.command == "forward";
  if (fwd) {
    std::memcpy(in.p, a.data.data(), n * sizeof(float));
  } else {
    plan.from_mallat(a.data.data(), in.p);
  }
  const double t0 = starpu_timing_now();
  if (fwd) lwt::forward(plan, o.pipeline, in.p, out.p, &stats);
  else lwt::inverse(plan, o.pipeline, in.p, out.p, &stats);
  report(fwd ? "forward" : "inverse", seconds_since(t0), n, stats);
  if (fwd) plan.to_mallat(out.p, image.p);
  else std::memcpy(image.p, out.p, n * sizeof(float));
  if (o.check) {
    std::vector<float> ref(n);
    if (fwd) lwt::ref::forward_2d(a.data.data(), a.rows, a.cols, o.levels, ref.data());
    else lwt::ref::inverse_2d(a.data.data(), a.rows, a.cols, o.levels, ref.data());
    std::printf("check: max relative error against the reference %.3g\n", relative_error(image.p, ref.data(), n));
  }
  io::write_npy_f32(o.out, a.rows, a.cols, image.p, o.in);
  std::printf("wrote %s\n", o.out.c_str());
  return 0;
}

// What the policy decided (DESIGN §6), beside the result: per worker the planned share of the
// busiest codelet, the FNN's predicted CP, its tasks and busy time; DTPS's CPU-class share.
void print_decision() {
  const std::optional<sched::Decision> d = sched::decision();
  if (!d || d->codelet.empty()) return;
  std::printf("policy %s decided, for %s", d->policy.c_str(), d->codelet.c_str());
  if (d->alpha >= 0) std::printf(": CPU-class share %.4f (DTPS %s)", d->alpha, d->dtps.empty() ? "-" : d->dtps.c_str());
  std::printf("\n    %-28s %8s %8s %8s %12s\n", "worker", "CP", "share", "tasks", "busy ms");
  for (const auto& w : d->workers) {
    char cp[16] = "-";
    if (std::isfinite(w.cp)) std::snprintf(cp, sizeof cp, "%.3f", w.cp);
    std::printf("    %-28s %8s %8.3f %8ld %12.2f\n", w.name.c_str(), cp, w.share, w.tasks, w.busy_ms);
  }
}

int run_demo(const Options& o) {
  apps::StarpuSession session("fnn-dtps");  // the product, unless STARPU_SCHED names another
  const lwt::Plan plan(o.rows, o.cols, o.levels, o.units, preferred_units(session, o.rows, o.cols));
  print_setup(session, plan, o.pipeline);
  const std::size_t n = std::size_t(o.rows) * std::size_t(o.cols);
  HostBuffer x(n), c(n), y(n);
  if (!apps::kSimulated) {
    std::fprintf(stderr, "generating a %d x %d synthetic surface...\n", o.rows, o.cols);
    io::make_surface(o.rows, o.cols, o.seed, x.p);
  }
  std::vector<lwt::WorkerStats> stats;
  for (int r = 0; r < o.warmup; ++r) {
    std::fprintf(stderr, "warm-up %d/%d (calibrates StarPU's performance models)...\n", r + 1, o.warmup);
    lwt::forward(plan, o.pipeline, x.p, c.p);
    session.end_job();
  }
  std::vector<double> times;
  for (int r = 0; r < o.repeat; ++r) {
    std::fprintf(stderr, "forward transform %d/%d...\n", r + 1, o.repeat);
    const double t = starpu_timing_now();
    lwt::forward(plan, o.pipeline, x.p, c.p, &stats);
    times.push_back(seconds_since(t));
    session.end_job();
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  report("forward", sorted[sorted.size() / 2], n, stats);
  print_decision();
  if (o.repeat > 1)
    std::printf("RESULT forward policy=%s size=%dx%d levels=%d units=%d cpu=%u cuda=%u median_ms=%.3f "
                "min_ms=%.3f max_ms=%.3f reps=%d\n",
                session.policy().c_str(), o.rows, o.cols, o.levels, plan.units(), session.cpu_workers(),
                session.cuda_workers(), sorted[sorted.size() / 2] * 1e3, sorted.front() * 1e3,
                sorted.back() * 1e3, o.repeat);
  std::fprintf(stderr, "inverse transform...\n");
  const double t0 = starpu_timing_now();
  lwt::inverse(plan, o.pipeline, c.p, y.p, &stats);
  session.end_job();
  report("inverse", seconds_since(t0), n, stats);
  if (apps::kSimulated) return 0;
  std::printf("round trip: max relative error %.3g\n", relative_error(y.p, x.p, n));
  if (o.check) {
    std::fprintf(stderr, "reference transform...\n");
    std::vector<float> ref(n), mallat(n);
    lwt::ref::forward_2d(x.p, o.rows, o.cols, o.levels, ref.data());
    plan.to_mallat(c.p, mallat.data());
    std::printf("check: max relative error against the reference %.3g\n",
                relative_error(mallat.data(), ref.data(), n));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Each transform's work strips are StarPU temporaries, allocated and freed per call. With
  // glibc's defaults, blocks of a few MiB are fresh mappings every time, and the page faults
  // of zeroing them doubled a one-worker transform (2048^2: 23 ms, 14 ms with this). Keep
  // blocks up to 32 MiB on the heap and the heap's top mapped.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  try {
    const Options o = parse(argc, argv);
    return o.command == "demo" ? run_demo(o) : run_file(o);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "lwt2d: %s\n", e.what());
    return 2;
  } catch (const lwt::PlanError& e) {
    std::fprintf(stderr, "lwt2d: %s\n", e.what());
    return 2;
  } catch (const io::InputError& e) {
    std::fprintf(stderr, "lwt2d: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lwt2d: %s\n", e.what());
    return 1;
  }
}
