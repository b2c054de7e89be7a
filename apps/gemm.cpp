// gemm: tiled matrix multiplication C = A B under StarPU (DESIGN §7; seed 001's workload).
//   gemm [--precision s|d] [--size N | --m M --n N --k K] [--split 2d|3d] [--tile B | --tiles B1,B2,...]
//        [--tf32] [--iter I] [--check]
// A and B are registered once and kept across the iterations (StarPU's examples/mult does the
// same), so after the first product a GPU finds its blocks of A and B already there.
// Prints a header line (decomposition, math, workers), one line per iteration (milliseconds,
// GFLOP/s), the work each worker did, and a RESULT line for scripts. The scheduler and workers come from StarPU's environment
// (STARPU_SCHED, STARPU_NCPU, STARPU_NCUDA, ...); our policies work without STARPU_SCHED_LIB.
#include <cblas.h>
#include <starpu.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "apps/starpu_session.hpp"
#include "base/host_threads.hpp"
#include "codelets/gemm.hpp"

namespace {

using apps::UsageError;
using apps::parse_positive;

const char* const kUsage =
    "usage: gemm [--precision s|d] [--size N | --m M --n N --k K] [--split 2d|3d] [--tile B | --tiles B1,B2,...]\n"
    "            [--tf32] [--iter I] [--check] [--trace FILE.json] [--bound]\n"
    "  C (m x n) = A (m x k) B (k x n), column-major, cut into blocks by StarPU filters.\n"
    "  --split 2d (default): one task per C block over the whole k (A in block rows, B in block\n"
    "    columns), as StarPU's examples/mult sgemm; 3d: one task per block product C_ij += A_ip B_pj.\n"
    "  --tile B: blocks of B x B (the last block row and column hold the remainder); default 256.\n"
    "  --tiles B1,B2,...: blocks of these widths in turn along m, n (and k in 3d), repeated, the last\n"
    "    block cut to what remains: sub-tasks of different sizes, whose compute (IA) and data (DA)\n"
    "    differ (seed 001 §2.2.3). --tiles 1024 is --tile 1024; at most 64 widths.\n"
    "  --tf32: float products on the GPU's TF32 tensor cores (less precise); default true FP32.\n"
    "  Defaults: s, 2048, 5 iterations. A and B are registered once: after the first iteration a GPU\n"
    "  keeps its blocks of A and B, so later iterations send only C home (and what a worker lacks).\n"
    "  Each iteration ends with C in host memory. The first iteration calibrates StarPU's\n"
    "  performance models and is left out of the median and the worker counts (unless it is the\n"
    "  only one). --check compares C with a plain reference product in double: max|C - C_ref| /\n"
    "  max|C_ref|, tolerance 1e-5 (s; 5e-3 with --tf32) or 1e-12 (d); exit status 1 beyond it. The\n"
    "  reference is a plain loop on every core after StarPU stops: seconds at 2048, hours at 16384.\n"
    "Workers and policy come from StarPU's environment (STARPU_SCHED, STARPU_NCPU, STARPU_NCUDA);\n"
    "STARPU_PROFILING=1 adds each worker's busy time. OpenBLAS runs one thread per CPU worker.\n"
    "--trace FILE.json (or FNNDTPS_TRACE=FILE.json): one event per task (worker, start, duration) in\n"
    "the Trace Event format, under any policy. --bound: StarPU's LP bound over one more iteration.\n";

struct Options {
  bool single = true;
  int m = 2048, n = 2048, k = 2048, iter = 5;
  gemm::Decomposition d;  // 2d, tiles of 256, FP32
  bool check = false, bound = false;
};

// The most tile tasks one product may submit: StarPU keeps every submitted task in memory.
constexpr long long kMaxTasks = 1LL << 22;

constexpr std::size_t kMaxWidths = 64;

// --tiles B1,B2,...: positive integers separated by commas.
std::vector<int> parse_tiles(const std::string& v) {
  if (v.empty()) throw UsageError("--tiles needs block widths, e.g. 1024 or 2048,1024,512");
  std::vector<int> out;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = v.find(',', at);
    const std::string w = v.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (w.empty() || w.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("--tiles needs positive integers separated by commas, got '" + v + "'");
    out.push_back(parse_positive("--tiles", w));
    if (out.size() > kMaxWidths)
      throw UsageError("--tiles takes at most " + std::to_string(kMaxWidths) + " widths, got more in '" + v + "'");
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

double physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? double(pages) * double(page) : 0.0;
}

Options parse(int argc, char** argv) {
  Options o;
  bool size = false, mnk[3] = {false, false, false}, tile = false, tiles = false;
  using V = const std::string&;
  apps::parse_flags(argc, argv, 1, {
    apps::value_flag("--precision", [&](V p) {
      if (p != "s" && p != "d") throw UsageError("unknown precision '" + p + "': use s (float) or d (double)");
      o.single = p == "s";
    }),
    apps::value_flag("--size", [&](V v) { o.m = o.n = o.k = parse_positive("--size", v), size = true; }),
    apps::value_flag("--m", [&](V v) { o.m = parse_positive("--m", v), mnk[0] = true; }),
    apps::value_flag("--n", [&](V v) { o.n = parse_positive("--n", v), mnk[1] = true; }),
    apps::value_flag("--k", [&](V v) { o.k = parse_positive("--k", v), mnk[2] = true; }),
    apps::value_flag("--split", [&](V v) {
      if (v != "2d" && v != "3d") throw UsageError("unknown --split '" + v + "': use 2d or 3d");
      o.d.split = v == "2d" ? gemm::Split::TwoD : gemm::Split::ThreeD;
    }),
    apps::value_flag("--tile", [&](V v) { o.d.tiles = {parse_positive("--tile", v)}, tile = true; }),
    apps::value_flag("--tiles", [&](V v) { o.d.tiles = parse_tiles(v), tiles = true; }),
    apps::switch_flag("--tf32", o.d.tf32),
    apps::value_flag("--iter", [&](V v) { o.iter = parse_positive("--iter", v); }),
    apps::switch_flag("--check", o.check),
    apps::value_flag("--trace", [](V v) { apps::trace_to(v); }),
    apps::switch_flag("--bound", o.bound),
  });
  const bool any = mnk[0] || mnk[1] || mnk[2];
  if (size && any) throw UsageError("--size and --m/--n/--k exclude each other; give one or the other");
  if (any && !(mnk[0] && mnk[1] && mnk[2])) throw UsageError("--m, --n and --k go together; give all three");
  if (tile && tiles) throw UsageError("--tile and --tiles exclude each other; give one or the other");
  if (o.d.tf32 && !o.single) throw UsageError("--tf32 applies to float products (--precision s) only");
  // Host memory: A, B and C, plus C_ref in double for --check. In double arithmetic: m n e
  // can exceed 64 bits.
  const double e = o.single ? 4 : 8;
  const double m = o.m, n = o.n, k = o.k;
  const double need = (m * k + k * n + m * n) * e + (o.check ? m * n * 8 : 0);
  if (o.check && apps::kSimulated)
    throw UsageError("--check needs real products; StarPU's SimGrid build computes none");
  const double have = physical_memory_bytes();
  if (!apps::kSimulated && have > 0 && need > 0.9 * have) {  // simulated matrices stay untouched
    char msg[200];
    std::snprintf(msg, sizeof msg, "%d x %d x %d needs %.1f GiB of host memory but this machine has %.1f GiB; "
                  "use smaller sizes", o.m, o.n, o.k, need / 1073741824.0, have / 1073741824.0);
    throw UsageError(msg);
  }
  // Counted without building the block lists: widths of 1 over 2^31 elements would not fit.
  long long per_dim[3];
  const int ext[3] = {o.m, o.n, o.k};
  long long cycle = 0;
  for (int w : o.d.tiles) cycle += w;
  for (int i = 0; i < 3; ++i) {
    const long long reps = ext[i] / cycle, rest = ext[i] % cycle;
    long long c = reps * (long long)o.d.tiles.size(), covered = 0;
    for (std::size_t j = 0; covered < rest; ++j, ++c) covered += o.d.tiles[j];
    per_dim[i] = c;
  }
  const double tasks = double(per_dim[0]) * double(per_dim[1]) * (o.d.split == gemm::Split::TwoD ? 1.0 : double(per_dim[2]));
  if (tasks > double(kMaxTasks))
    throw UsageError("--tile(s) " + join(o.d.tiles) + " give " + std::to_string((long long)tasks) +
                     " tasks (at most " + std::to_string(kMaxTasks) + "); use larger blocks");
  return o;
}

// Page-aligned host memory (pinned for fast, asynchronous transfers while CUDA workers exist).
template <typename T>
struct HostMatrix {
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> p;
  std::size_t count = 0, bytes = 0;
  bool pinned = false;
  HostMatrix(int rows, int cols) : count(std::size_t(rows) * std::size_t(cols)) {
    bytes = (count * sizeof(T) + 4095) / 4096 * 4096;
    p.reset(static_cast<T*>(std::aligned_alloc(4096, bytes)));
    if (!p) throw std::runtime_error("out of host memory for a " + std::to_string(rows) + " x " + std::to_string(cols) +
                                     " matrix");
  }
  T* get() const { return p.get(); }
};

// Runs f(begin, end) on [0, n) split over the cores the process started with: the main thread
// stays bound to StarPU's reserved core after StarPU stops (base/host_threads.hpp).
template <typename F>
void parallel_for(std::size_t n, F f) {
  const std::size_t threads = base::host_threads();
  const std::size_t chunk = (n + threads - 1) / threads;
  base::run_on_host_threads(unsigned((n + chunk - 1) / chunk),
                            [&](unsigned t) { f(t * chunk, std::min(n, (t + 1) * chunk)); });
}

// Deterministic values uniform in [-1, 1): splitmix64 of (stream, index), so every element is
// the same whatever the threads.
template <typename T>
void fill(T* p, std::size_t n, std::uint64_t stream) {
  parallel_for(n, [=](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      std::uint64_t z = (stream << 48) + i + 0x9e3779b97f4a7c15ULL;
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      z ^= z >> 31;
      p[i] = T(double(z >> 11) * 0x1.0p-52 - 1.0);
    }
  });
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

struct Totals {
  std::string name;
  unsigned long tasks = 0, c_tiles = 0;
  double gflop = 0, busy_ms = 0;
  bool busy = false;
};

template <typename T>
int run(const Options& o) {
  const int m = o.m, n = o.n, k = o.k;
  // One BLAS thread per StarPU CPU worker (DESIGN §3): else every worker's OpenBLAS spawns a
  // thread per core and they fight over the cores.
  openblas_set_num_threads(1);
  HostMatrix<T> a(m, k), b(k, n), c(m, n);
  const double flops = 2.0 * double(m) * double(n) * double(k);
  std::vector<double> times;
  std::vector<Totals> totals;
  {
    apps::StarpuSession session;
    if (!apps::kSimulated) {
      fill(a.get(), a.count, 1);
      fill(b.get(), b.count, 2);
      std::memset(c.get(), 0, c.bytes);  // touch C's pages before the timing
    }
    if (session.cuda_workers() > 0 && !apps::kSimulated) {
      bool ok = true;
      for (auto* hm : {&a, &b, &c}) {
        hm->pinned = starpu_memory_pin(hm->get(), hm->bytes) == 0;
        ok = ok && hm->pinned;
      }
      if (!ok) std::fprintf(stderr, "gemm: could not pin host memory; transfers will be slower\n");
    }
    starpu_cublas_init();

    const std::vector<int> rows = gemm::blocks(m, o.d.tiles), cols = gemm::blocks(n, o.d.tiles),
                           inner = gemm::blocks(k, o.d.tiles);
    const bool two_d = o.d.split == gemm::Split::TwoD;
    std::string grid = std::to_string(rows.size()) + " x " + std::to_string(cols.size()) +
                       (two_d ? " C blocks over the whole k" : " x " + std::to_string(inner.size()) + " blocks");
    std::printf("gemm: %s C(%d x %d) = A(%d x %d) B(%d x %d), column-major, split %s, tiles %s: %s, %lld tasks; "
                "%s; A and B registered once (kept on the devices across iterations); policy %s, %u CPU + %u CUDA "
                "workers%s\n",
                o.single ? "sgemm" : "dgemm", m, n, m, k, k, n, gemm::to_string(o.d.split), join(o.d.tiles).c_str(),
                grid.c_str(), gemm::task_count(m, n, k, o.d), o.d.tf32 ? "TF32 tensor cores on GPUs" : o.single ? "FP32 (no TF32)" : "FP64",
                session.policy().c_str(), session.cpu_workers(), session.cuda_workers(),
                apps::kSimulated ? " (simulated: no data computed)" : "");
    {
      // The sub-tasks' seed 001 weights (eqs. (3)-(5)), over the distinct block shapes.
      double ia[2] = {INFINITY, 0}, w[2] = {INFINITY, 0};
      const auto distinct = [](std::vector<int> v) {
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
        return v;
      };
      const std::vector<int> ks = two_d ? std::vector<int>{k} : distinct(inner);
      int shapes = 0;
      for (int wi : distinct(rows))
        for (int wj : distinct(cols))
          for (int wk : ks)
            for (bool reads_c : {false, true}) {
              if (reads_c && (two_d || inner.size() == 1)) continue;  // each C block in one task
              const gemm::TileWeight t = gemm::tile_weight(wi, wj, wk, sizeof(T), reads_c);
              ia[0] = std::min(ia[0], t.sub.ia), ia[1] = std::max(ia[1], t.sub.ia);
              w[0] = std::min(w[0], t.weight), w[1] = std::max(w[1], t.weight);
              shapes += reads_c ? 0 : 1;
            }
      std::printf("sub-tasks: %d shape(s); IA %.3g to %.3g GFLOP (task->flops), eq. (5) weight IA/DA %.1f to %.1f "
                  "flop/byte\n",
                  shapes, ia[0] * 1e-9, ia[1] * 1e-9, w[0], w[1]);
    }
    const gemm::Matrix<const T> ma{a.get(), m, k, m}, mb{b.get(), k, n, k};
    const gemm::Matrix<T> mc{c.get(), m, n, m};
    std::vector<gemm::WorkerStats> stats;
    std::optional<gemm::Product<T>> product;  // ends before cuBLAS and the pinning
    product.emplace(ma, mb, mc, o.d);
    for (int it = 0; it < o.iter; ++it) {
      const double t0 = starpu_timing_now();  // simulated time under simulation
      product->run(false, &stats);
      const double s = (starpu_timing_now() - t0) * 1e-6;
      const bool timed = it > 0 || o.iter == 1;
      apps::trace_span("iter " + std::to_string(it), t0, timed);
      session.end_job();
      std::printf("iter %d: %.3f ms, %.2f GFLOP/s%s\n", it, s * 1e3, flops / s * 1e-9,
                  timed ? "" : " (calibration)");
      std::fflush(stdout);
      if (!timed) continue;
      times.push_back(s);
      totals.resize(stats.size());
      for (std::size_t w = 0; w < stats.size(); ++w) {
        Totals& t = totals[w];
        t.name = stats[w].name;
        t.tasks += stats[w].tasks;
        t.c_tiles += stats[w].c_tiles;
        t.gflop += stats[w].gflop;
        t.busy = stats[w].busy_ms >= 0;
        t.busy_ms += std::max(0.0, stats[w].busy_ms);
      }
    }
    const int timed = int(times.size());
    const std::string which = o.iter == 1   ? "iteration 0"
                              : timed == 1 ? "iteration 1"
                                           : "iterations 1-" + std::to_string(o.iter - 1);
    std::printf("per worker, %s: tile products, C tiles written, share of the flops%s\n", which.c_str(),
                totals.empty() || !totals[0].busy ? "" : ", busy time");
    double all = 0;
    for (const Totals& t : totals) all += t.gflop;
    for (const Totals& t : totals) {
      std::printf("    %-28s %8lu tiles %7lu C tiles %6.1f%%", t.name.c_str(), t.tasks, t.c_tiles,
                  all > 0 ? 100.0 * t.gflop / all : 0.0);
      if (t.busy) std::printf(" %10.1f ms busy", t.busy_ms);
      std::printf("\n");
    }
    const double med = median(times);
    std::string list;  // the timed iterations, in order
    for (double t : times) list += (list.empty() ? "" : ",") + std::to_string(t * 1e3);
    std::printf("RESULT gemm precision=%s m=%d n=%d k=%d tile=%d split=%s tiles=%s math=%s policy=%s cpu=%u cuda=%u "
                "median_ms=%.3f gflops=%.2f iters=%d min_ms=%.3f max_ms=%.3f times_ms=%s\n",
                o.single ? "s" : "d", m, n, k, o.d.tiles[0], gemm::to_string(o.d.split), join(o.d.tiles).c_str(),
                o.d.tf32 ? "tf32" : o.single ? "fp32" : "fp64", session.policy().c_str(), session.cpu_workers(),
                session.cuda_workers(), med * 1e3, flops / med * 1e-9, timed,
                *std::min_element(times.begin(), times.end()) * 1e3,
                *std::max_element(times.begin(), times.end()) * 1e3, list.c_str());
    std::fflush(stdout);
    if (o.bound) {  // an extra, untimed iteration: recording for the bound costs a lock per task
      apps::bound_start();
      product->run(false);
      apps::print_bound("gemm");
      session.end_job();
      std::fflush(stdout);
    }

    product.reset();
    starpu_cublas_shutdown();
    for (auto* hm : {&a, &b, &c})
      if (hm->pinned) starpu_memory_unpin(hm->get(), hm->bytes);
  }  // StarPU shuts down: the reference gets every core

  if (!o.check) return 0;
  std::fprintf(stderr, "gemm: reference product in double...\n");
  std::vector<double> ref(std::size_t(m) * std::size_t(n));
  parallel_for(std::size_t(n), [&](std::size_t j0, std::size_t j1) {
    gemm::ref::tile(m, int(j1 - j0), k, a.get(), m, b.get() + j0 * std::size_t(k), k, 0.0,
                    ref.data() + j0 * std::size_t(m), m);
  });
  double diff = 0, scale = 0;
  const T* cp = c.get();
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double d = std::fabs(double(cp[i]) - ref[i]);
    diff = std::isnan(d) || d > diff ? d : diff;  // a NaN is an error, not skipped
    scale = std::max(scale, std::fabs(ref[i]));
  }
  const double err = scale > 0 ? diff / scale : diff;
  // FP32 and FP64 products of data in [-1, 1) keep max|C - C_ref| / max|C_ref| near their unit
  // roundoff; TF32 rounds the inputs to 10 mantissa bits (unit roundoff 2^-11 ~ 4.9e-4) first.
  const double tol = !std::is_same_v<T, float> ? 1e-12 : o.d.tf32 ? 5e-3 : 1e-5;
  const bool ok = err <= tol;
  std::printf("check: max relative error %.3g (max|C - C_ref| / max|C_ref|, reference in double; tolerance %g) %s\n",
              err, tol, ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main({"gemm", kUsage}, argc, argv, [&] {
    const Options o = parse(argc, argv);
    return o.single ? run<float>(o) : run<double>(o);
  });
}
