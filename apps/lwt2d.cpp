// lwt2d: multi-level 2D CDF 9/7 lifting wavelet transform of surface data under StarPU.
//   lwt2d forward --in X.npy --out C.npy [--levels N] [--units U] [--pipeline steps|fused] [--check]
//   lwt2d inverse --in C.npy --out Y.npy [--levels N] [--units U] [--pipeline steps|fused] [--check]
//   lwt2d demo [--size S | --size RxC] [--levels N] [--units U] [--pipeline P] [--seed N] [--check]
//              [--repeat R] [--warmup W]
//   lwt2d generate --out S.npy|S.x3p [--size S|RxC] [--seed N] [--model demo|layered]
//                  [--wavelength W] [--part all|form|waviness|roughness]
//   lwt2d filter --in S --levels N --bands SPEC --out-dir D [--shape RxC] [--png] [--out-x3p]
// Coefficients are in the standard Mallat layout (DESIGN §4.1). The scheduler and workers
// come from StarPU's environment (STARPU_SCHED, STARPU_NCPU, STARPU_NCUDA, ...).
#include <malloc.h>
#include <unistd.h>
#include <starpu.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "apps/cli.hpp"
#include "apps/filter/bands.hpp"
#include "apps/filter/surface_params.hpp"
#include "apps/io/npy.hpp"
#include "apps/io/output.hpp"
#include "apps/io/png.hpp"
#include "apps/io/surface.hpp"
#include "apps/io/x3p.hpp"
#include "apps/phases.hpp"
#include "apps/starpu_session.hpp"
#include "apps/unit_files.hpp"
#include "base/host_threads.hpp"
#include "codelets/height_tasks.hpp"
#include "codelets/lifting.hpp"
#include "codelets/lwt_tasks.hpp"
#include "scheduler/plugin.hpp"
#include "scheduler/trace.hpp"

namespace {

using apps::UsageError;
using apps::parse_size;

const char* const kUsage =
    "usage: lwt2d forward --in X.npy --out C.npy [--levels N] [--units U] [--pipeline steps|fused] [--check]\n"
    "       lwt2d inverse --in C.npy --out Y.npy [--levels N] [--units U] [--pipeline steps|fused] [--check]\n"
    "       lwt2d demo [--size S|RxC] [--levels N] [--units U] [--pipeline steps|fused] [--seed N] [--check]\n"
    "                  [--repeat R] [--warmup W]   (time R forward runs after W untimed ones) [--bound]\n"
    "       lwt2d generate --out S.npy|S.x3p [--size S|RxC] [--seed N] [--model demo|layered]\n"
    "                  [--wavelength W] [--part all|form|waviness|roughness]\n"
    "       lwt2d filter --in S.npy|S.x3p|S.raw [--shape RxC] --levels N --bands SPEC --out-dir D\n"
    "                  [--png] [--out-x3p] [--units U] [--pipeline steps|fused]\n"
    "Arrays are 2-D float32 (<f4) .npy files; coefficients use the standard Mallat layout.\n"
    "generate: a synthetic surface in micrometres on a 1 um grid; --model layered (default demo) has\n"
    "  a tilted sphere cap, one wave of W samples (default 50) and white roughness, one --part each.\n"
    "filter: level 1 is the finest (wavelengths of about 2-4 samples), level N the coarsest; SPEC gives\n"
    "  each band (form, waviness, roughness) a range of detail levels, and one band is 'rest': the\n"
    "  approximation and every level no other band names, e.g. roughness=1-2,waviness=3-4,form=rest.\n"
    "  Writes D/<band>.npy; with --out-x3p (X3P input) D/<band>.x3p; with --png D/<band>.png and\n"
    "  D/mosaic.png. Prints ISO 25178-2 Sa..Sku per band. Runs under fnn-dtps unless STARPU_SCHED\n"
    "  names another policy.\n"
    "  Input is .npy, X3P (ISO 25178-72) or raw little-endian float32 with --shape. X3P invalid\n"
    "  points are filled with the mean of the valid heights for the transform, skipped by the\n"
    "  parameters and written back as NaN.\n"
    "Workers and policy come from StarPU's environment (STARPU_SCHED, STARPU_NCPU, STARPU_NCUDA).\n"
    "--trace FILE.json (forward, inverse, demo, filter; or FNNDTPS_TRACE=FILE.json): one event per task\n"
    "  (worker, start, duration, unit, level) in the Trace Event format, under any policy.\n"
    "--bound (demo): StarPU's LP bound over one more forward run: a BOUND line.\n";

struct Options {
  std::string command, in, out, out_dir, bands, model = "demo", part = "all";
  int levels = 4, units = 0, rows = 4096, cols = 4096, repeat = 1, warmup = 0;
  int shape_rows = 0, shape_cols = 0;  // raw input (filter --shape)
  double wavelength = 50;
  unsigned long long seed = 1;
  lwt::Pipeline pipeline = lwt::Pipeline::Fused;
  bool check = false, png = false, out_x3p = false, bound = false;
};

// An int flag whose range the checks after parsing give, with their own messages.
int parse_int(const std::string& flag, const std::string& v) { return int(apps::parse_int(flag, v, INT_MIN, INT_MAX)); }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

Options parse(int argc, char** argv) {
  if (argc < 2) throw UsageError("missing command: forward, inverse, demo, generate or filter (see --help)");
  Options o;
  o.command = argv[1];
  const std::string& c = o.command;
  if (c != "forward" && c != "inverse" && c != "demo" && c != "generate" && c != "filter")
    throw UsageError("unknown command '" + c + "': use forward, inverse, demo, generate or filter (see --help)");
  const bool file_mode = c == "forward" || c == "inverse";
  const bool demo = c == "demo", gen = c == "generate", filt = c == "filter";
  const bool transform = !gen;
  // Each command's flags; "--x" for another command is unknown to this one.
  std::vector<apps::Flag> flags;
  auto add = [&](bool applies, apps::Flag f) {
    if (applies) flags.push_back(std::move(f));
  };
  add(transform, apps::value_flag("--levels", [&](const std::string& v) { o.levels = parse_int("--levels", v); }));
  add(transform, apps::value_flag("--units", [&](const std::string& v) { o.units = parse_int("--units", v); }));
  add(transform, apps::value_flag("--pipeline", [&](const std::string& v) { o.pipeline = lwt::parse_pipeline(v); }));
  add(transform, apps::value_flag("--trace", [](const std::string& v) { apps::trace_to(v); }));
  add(demo, apps::switch_flag("--bound", o.bound));
  add(file_mode || demo, apps::switch_flag("--check", o.check));
  add(file_mode || filt, apps::value_flag("--in", [&](const std::string& v) { o.in = v; }));
  add(file_mode || gen, apps::value_flag("--out", [&](const std::string& v) { o.out = v; }));
  add(demo || gen, apps::value_flag("--seed", [&](const std::string& v) { o.seed = unsigned(parse_int("--seed", v)); }));
  add(demo, apps::value_flag("--repeat", [&](const std::string& v) { o.repeat = parse_int("--repeat", v); }));
  add(demo, apps::value_flag("--warmup", [&](const std::string& v) { o.warmup = parse_int("--warmup", v); }));
  add(demo || gen, apps::value_flag("--size", [&](const std::string& v) { std::tie(o.rows, o.cols) = parse_size("--size", v); }));
  add(gen, apps::value_flag("--model", [&](const std::string& v) { o.model = v; }));
  add(gen, apps::value_flag("--part", [&](const std::string& v) { o.part = v; }));
  add(gen, apps::value_flag("--wavelength", [&](const std::string& v) { o.wavelength = parse_int("--wavelength", v); }));
  add(filt, apps::value_flag("--shape", [&](const std::string& v) { std::tie(o.shape_rows, o.shape_cols) = parse_size("--shape", v); }));
  add(filt, apps::value_flag("--bands", [&](const std::string& v) { o.bands = v; }));
  add(filt, apps::value_flag("--out-dir", [&](const std::string& v) { o.out_dir = v; }));
  add(filt, apps::switch_flag("--png", o.png));
  add(filt, apps::switch_flag("--out-x3p", o.out_x3p));
  apps::parse_flags(argc, argv, 2, flags, o.command);
  if (o.levels < 1) throw UsageError("--levels must be at least 1, got " + std::to_string(o.levels));
  if (o.units < 0) throw UsageError("--units must be positive, got " + std::to_string(o.units));
  if (o.repeat < 1 || o.warmup < 0)
    throw UsageError("--repeat must be at least 1 and --warmup at least 0");
  if ((file_mode || filt) && apps::kSimulated)  // no file would hold a transform
    throw UsageError(o.command + " is not simulated (StarPU's SimGrid build computes no data); use lwt2d demo");
  if (file_mode && (o.in.empty() || o.out.empty()))
    throw UsageError(o.command + " needs --in FILE and --out FILE");
  if (file_mode && io::same_file(o.in, o.out))
    throw UsageError("--out names the input file '" + o.in + "'; choose another output");
  if (file_mode) io::check_output_file(o.out);
  if (gen) {
    if (o.out.empty()) throw UsageError("generate needs --out FILE.npy or FILE.x3p");
    if (!ends_with(o.out, ".npy") && !ends_with(o.out, ".x3p"))
      throw UsageError("--out " + o.out + ": generate writes .npy or .x3p files");
    if (o.model != "demo" && o.model != "layered")
      throw UsageError("unknown --model '" + o.model + "': use demo or layered");
    if (o.part != "all" && o.part != "form" && o.part != "waviness" && o.part != "roughness")
      throw UsageError("unknown --part '" + o.part + "': use all, form, waviness or roughness");
    if (o.wavelength < 2) throw UsageError("--wavelength must be at least 2 samples");
    io::check_output_file(o.out);
  }
  if (filt) {
    if (o.in.empty() || o.out_dir.empty() || o.bands.empty())
      throw UsageError("filter needs --in FILE, --bands SPEC and --out-dir DIR (see --help)");
    filter::parse_bands(o.bands, o.levels);  // reports a bad spec before any work
  }
  return o;
}

using HostBuffer = apps::HostArray<float>;  // pinned where CUDA workers exist
using apps::FileBuffer;

// "R x C", and the samples as bytes of float32.
std::string dims(long long rows, long long cols) { return std::to_string(rows) + " x " + std::to_string(cols); }
double f32_bytes(long long rows, long long cols) { return 4.0 * double(rows) * double(cols); }

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

// Units of about 16 MiB, at least 8: more units overlap a GPU's transfers with its kernels,
// and a unit's output goes home while later units compute (bench/RESULTS.md, 2026-12-02 B).
// Without a GPU, also 4 per worker, so that cores balance. With one, not: a GPU pays a fixed
// cost per task (its launches, its transfers' latency) and would run 4 units per core of the
// node, most of them, when the cores take a small share or none.
int preferred_units(const apps::StarpuSession& s, int rows, int cols) {
  const double mib = double(rows) * double(cols) * sizeof(float) / double(1 << 20);
  const int by_size = int(std::ceil(mib / 16.0));
  if (s.cuda_workers() > 0) return std::max(8, by_size);
  return std::max({8, 4 * int(s.cpu_workers()), by_size});
}

// Between the unit layout and the Mallat layout, the units on the cores the process started
// with (each unit's rows of either layout are its own): a large surface's copy is bound by the
// host's memory, not by one core.
void relayout(const lwt::Plan& plan, bool to_mallat, const float* in, float* out) {
  const unsigned threads = std::min(base::host_threads(), unsigned(plan.units()));
  base::run_on_host_threads(threads, [&](unsigned t) {
    for (int k = int(t); k < plan.units(); k += int(threads)) {
      if (to_mallat) plan.to_mallat_unit(k, in, out);
      else plan.from_mallat_unit(k, in, out);
    }
  });
}

// LWT2D_PREALLOCATE=0: the GPUs allocate during the first transform, as StarPU does by itself
// (lwt::preallocate).
bool preallocating() { return apps::env_switch("LWT2D_PREALLOCATE", true); }

// LWT2D_STREAM=1: the files go beside the transform's tasks (apps::UnitStream). Its printed
// time then includes the waits for the input's rows.
bool streaming() { return apps::env_switch("LWT2D_STREAM", false); }

int run_file(const Options& o) {
  // Two images: the file is read into the buffer the transform does not read (forward: its
  // input; inverse: its output, the Mallat layout then moved into the input), and the result
  // goes back into a buffer the transform is done with (forward: the input, for the Mallat
  // layout). --check's reference is a third. StarPU starts while the file is read, paused
  // until the read ends, and runs for the transform only (FileBuffer). Streamed, the output is
  // written unit by unit from the transform's own layout as each unit ends, and a forward's
  // input is read beside StarPU's start and the transform, its units starting as their rows
  // come in.
  apps::Phases phases;
  const io::NpyLayout shape = io::read_npy_layout(o.in, io::F64Policy::Refuse);
  apps::check_host_memory(o.command + " of a " + dims(shape.rows, shape.cols) + " array",
                          (o.check ? 3 : 2) * f32_bytes(shape.rows, shape.cols), "give a smaller array");
  const std::size_t n = std::size_t(shape.rows) * std::size_t(shape.cols);
  FileBuffer in(n), out(n);
  const bool fwd = o.command == "forward";
  FileBuffer& file = fwd ? in : out;  // what the file is read into; the other is pinned beside the read
  const bool preallocate = preallocating();
  std::vector<float> ref;
  std::optional<lwt::Plan> plan;
  std::unique_ptr<io::NpyParts> parts;  // streamed: the output under its temporary name
  std::unique_ptr<io::NpyRows> rows;
  std::unique_ptr<apps::UnitStream> stream;
  if (streaming()) {
    parts = std::make_unique<io::NpyParts>(o.out, shape.rows, shape.cols, o.in);
    rows = std::make_unique<io::NpyRows>(o.out, parts->temp(), shape.rows, shape.cols);
    const unsigned threads = std::min(8u, base::host_threads());  // forward and inverse are not simulated
    apps::UnitStream::ReadRows read;
    if (fwd)
      read = [&](int row0, int count) {
        io::read_npy_rows_f32(o.in, shape, row0, count, in.p + std::size_t(row0) * std::size_t(shape.cols));
      };
    const int chunk = int(std::max<std::size_t>(1, (std::size_t(16) << 20) / (sizeof(float) * std::size_t(shape.cols))));  // rows of ~16 MiB
    stream = std::make_unique<apps::UnitStream>(
        shape.rows, chunk, read, [&](int k) { apps::write_unit(*plan, k, fwd, out.p, *rows); }, threads,
        std::min(4u, threads));
  }
  const bool read_first = !(stream && fwd);  // the file whole before the transform
  {
    // The plan's units depend on the workers: an inverse's input goes into the unit layout
    // once StarPU has started, on the host's cores while it is still paused.
    const std::unique_ptr<apps::StarpuSession> started = apps::start_beside(
        [&] {
          if (!read_first) return;
          io::read_npy_rows_f32(o.in, shape, 0, shape.rows, file.p);
          phases.mark("read");
          if (o.check) {
            ref.resize(n);
            if (fwd) lwt::ref::forward_2d(in.p, shape.rows, shape.cols, o.levels, ref.data());
            else lwt::ref::inverse_2d(out.p, shape.rows, shape.cols, o.levels, ref.data());
            phases.mark("reference");
          }
        },
        {fwd ? &out : &in}, nullptr,
        [&](apps::StarpuSession&) {
          phases.mark("StarPU start");
          if (!fwd) relayout(*plan, false, out.p, in.p);
          phases.mark("layout");
        },
        [&](apps::StarpuSession& s) {  // beside the read
          plan.emplace(shape.rows, shape.cols, o.levels, o.units, preferred_units(s, shape.rows, shape.cols));
          if (preallocate) lwt::preallocate(*plan, o.pipeline, fwd);
        });
    apps::StarpuSession& session = *started;
    print_setup(session, *plan, o.pipeline);
    {
      const apps::Pinned pinned(session, {&in, &out});
      phases.mark("pin");
      std::vector<lwt::WorkerStats> stats;
      const lwt::UnitFiles* files = stream ? &stream->hooks(*plan) : nullptr;
      const double t0 = starpu_timing_now();
      if (fwd) lwt::forward(*plan, o.pipeline, in.p, out.p, &stats, files);
      else lwt::inverse(*plan, o.pipeline, in.p, out.p, &stats, lwt::kAllLevels, nullptr, files);
      apps::trace_span(o.command, t0);
      report(fwd ? "forward" : "inverse", seconds_since(t0), n, stats);
      phases.mark(stream ? (fwd ? "read, transform and write" : "transform and write") : "transform");
      if (stream) stream->finish();  // the first read or write that failed
    }
    phases.mark("unpin");
  }
  phases.mark("StarPU stop");
  if (stream) {
    if (o.check && fwd) {  // the input whole only now: its reference, into the unit layout over it
      ref.resize(n);
      lwt::ref::forward_2d(in.p, shape.rows, shape.cols, o.levels, ref.data());
      relayout(*plan, false, ref.data(), in.p);
      phases.mark("reference");
    }
    if (o.check)  // an inverse's reference came with its read
      std::printf("check: max relative error against the reference %.3g\n",
                  relative_error(out.p, fwd ? in.p : ref.data(), n));
    rows->close();
    parts->commit();
  } else {
    if (fwd) relayout(*plan, true, out.p, in.p);
    phases.mark("layout");
    const float* result = fwd ? in.p : out.p;
    if (o.check)
      std::printf("check: max relative error against the reference %.3g\n", relative_error(result, ref.data(), n));
    io::write_npy_f32(o.out, shape.rows, shape.cols, result, o.in);
  }
  std::printf("wrote %s\n", o.out.c_str());
  phases.mark("write");
  phases.print(o.command.c_str());
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
  // The surface, its coefficients and the inverse's output (and --check's two arrays).
  apps::check_host_memory("demo on a " + dims(o.rows, o.cols) + " surface", (o.check ? 5 : 3) * f32_bytes(o.rows, o.cols),
                          "use a smaller --size");
  apps::StarpuSession session("fnn-dtps");  // the product, unless STARPU_SCHED names another
  const lwt::Plan plan(o.rows, o.cols, o.levels, o.units, preferred_units(session, o.rows, o.cols));
  print_setup(session, plan, o.pipeline);
  if (preallocating()) lwt::preallocate(plan, o.pipeline, false);  // the inverse's shapes hold the forward's
  const std::size_t n = std::size_t(o.rows) * std::size_t(o.cols);
  HostBuffer x(n), c(n), y(n);
  if (!apps::kSimulated) {
    std::fprintf(stderr, "generating a %d x %d synthetic surface...\n", o.rows, o.cols);
    io::make_surface(o.rows, o.cols, o.seed, x.p);
  }
  std::vector<lwt::WorkerStats> stats;
  for (int r = 0; r < o.warmup; ++r) {
    std::fprintf(stderr, "warm-up %d/%d (calibrates StarPU's performance models)...\n", r + 1, o.warmup);
    const double t = starpu_timing_now();
    lwt::forward(plan, o.pipeline, x.p, c.p);
    apps::trace_span("warm-up " + std::to_string(r + 1), t, false);
    session.end_job();
  }
  std::vector<double> times;
  for (int r = 0; r < o.repeat; ++r) {
    std::fprintf(stderr, "forward transform %d/%d...\n", r + 1, o.repeat);
    const double t = starpu_timing_now();
    lwt::forward(plan, o.pipeline, x.p, c.p, &stats);
    times.push_back(seconds_since(t));
    apps::trace_span("forward " + std::to_string(r + 1), t);
    session.end_job();
  }
  if (o.bound) {  // an extra, untimed run: recording for the bound costs a lock per task
    apps::bound_start();
    lwt::forward(plan, o.pipeline, x.p, c.p);
    apps::print_bound("forward");
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
  apps::trace_span("inverse", t0, false);
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

// X3P files hold metres; the generated surfaces are micrometres on a 1 um grid.
constexpr double kMetresPerMicrometre = 1e-6;

int run_generate(const Options& o) {
  const unsigned part = o.part == "form"       ? io::kSurfaceForm
                        : o.part == "waviness" ? io::kSurfaceWaviness
                        : o.part == "roughness" ? io::kSurfaceRoughness
                                                : io::kSurfaceAll;
  // The heights (and X3P's copy in float64).
  apps::check_host_memory("a " + dims(o.rows, o.cols) + " surface",
                          (ends_with(o.out, ".x3p") ? 3 : 1) * f32_bytes(o.rows, o.cols), "use a smaller --size");
  const std::size_t n = std::size_t(o.rows) * std::size_t(o.cols);
  std::vector<float> z(n);
  if (o.model == "layered") io::make_layered_surface(o.rows, o.cols, o.seed, o.wavelength, z.data(), part);
  else io::make_surface(o.rows, o.cols, o.seed, z.data(), 0, part);
  if (ends_with(o.out, ".x3p")) {
    for (float& v : z) v = float(double(v) * kMetresPerMicrometre);
    io::write_x3p(o.out, o.rows, o.cols, z.data(), kMetresPerMicrometre, kMetresPerMicrometre);
  } else {
    io::write_npy_f32(o.out, o.rows, o.cols, z.data());
  }
  std::printf("wrote %s: %d x %d, %s surface, part %s, seed %llu\n", o.out.c_str(), o.rows, o.cols,
              o.model.c_str(), o.part.c_str(), o.seed);
  return 0;
}

// A surface to filter: heights, their unit (X3P: metres, shown in micrometres; .npy and raw: none)
// and the grid's increments where the file gives them.
struct Input {
  io::Array2D z;
  bool metres = false;
  double dx = 0, dy = 0;
  std::size_t invalid = 0;
};

Input read_input(const Options& o) {
  Input in;
  if (o.shape_rows > 0) {
    in.z = io::read_raw_f32(o.in, o.shape_rows, o.shape_cols);
  } else if (ends_with(o.in, ".x3p")) {
    io::X3pSurface s = io::read_x3p(o.in);
    in.z = std::move(s.z);
    in.metres = true;
    in.dx = s.dx;
    in.dy = s.dy;
    in.invalid = s.invalid;
    if (in.invalid == in.z.data.size()) throw io::InputError(o.in + ": every point is invalid");
  } else if (ends_with(o.in, ".npy")) {
    in.z = io::read_npy_f32(o.in, io::F64Policy::Convert);
  } else {
    throw UsageError("--in " + o.in + ": give a .npy or .x3p file, or raw float32 with --shape RxC");
  }
  return in;
}

// Invalid points (NaN) take the mean of the valid heights for the transform: a constant adds
// no detail of its own, and the holes stay marked by `invalid` in the outputs.
// Sums in index order, so the filled value is the same on every machine.
std::vector<bool> fill_invalid(float* z, std::size_t n) {
  std::vector<bool> invalid(n);
  double sum = 0;
  std::size_t valid = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(z[i])) {
      sum += z[i];
      ++valid;
    } else {
      invalid[i] = true;
    }
  const float mean = valid ? float(sum / double(valid)) : 0.0f;
  for (std::size_t i = 0; i < n; ++i)
    if (invalid[i]) z[i] = mean;
  return invalid;
}

void print_params(const char* name, const filter::HeightParams& p, double scale, const std::string& levels) {
  std::printf("%-10s %12.6g %12.6g %12.6g %12.6g %12.6g %12.6g %12.6g   %s\n", name, p.sa * scale,
              p.sq * scale, p.sp * scale, p.sv * scale, p.sz * scale, p.ssk, p.sku, levels.c_str());
}

// starpu_pause() for a scope: StarPU's workers wait on a condition instead of polling the cores
// that the host's own work needs, and resume however the scope ends (starpu_shutdown wants
// every pause undone).
struct PausedStarpu {
  PausedStarpu() { starpu_pause(); }
  ~PausedStarpu() { starpu_resume(); }
  PausedStarpu(const PausedStarpu&) = delete;
  PausedStarpu& operator=(const PausedStarpu&) = delete;
};

// The filter's ISO 25178-2 parameters, and its check that the bands sum to the input, as height
// tasks (codelets/height_tasks.hpp) over the plan's level-0 strips, run where the data is: the
// input's once the forward is done, each band's on its inverse's output strips before they come
// home. The residual, the input minus the bands so far, stays with StarPU from band to band, in
// float32: each subtraction rounds by half an ulp of what is left, about 6e-8 of the input's
// scale, far below a transform's own error.
class FilterSums {
 public:
  // `surface` (the forward's input, its invalid points filled) becomes the residual; `mask`, one
  // byte a point, names the invalid points (null: none), which the parameters skip and the bands
  // carry as NaN.
  FilterSums(const lwt::Plan& plan, float* surface, const unsigned char* mask) {
    std::vector<int> row0, rows;
    for (int k = 0; k < plan.units(); ++k) {
      row0.push_back(plan.unit_row0(0, k));
      rows.push_back(plan.unit_rows(0, k));
    }
    strips_ = heights::register_strips(surface, mask, plan.width(), row0, rows);
  }
  ~FilterSums() { heights::unregister_no_copy(strips_); }
  FilterSums(const FilterSums&) = delete;
  FilterSums& operator=(const FilterSums&) = delete;

  // The input's parameters; its largest magnitude is the check's scale.
  filter::HeightParams input() {
    heights::Pass first = heights::Pass::first(strips_.size(), false);
    first.submit_all(strips_);
    const heights::Partial f = first.total();
    scale_ = f.largest;
    largest_ = scale_;
    return about_mean(strips_, f);
  }

  // What an inverse runs on its output strips for one band: the first pass as each strip is
  // written (the band minus from the residual, its invalid points marked), then the moments.
  lwt::OutputTasks band_tasks() {
    lwt::OutputTasks t;
    t.strip = [this](int k, starpu_data_handle_t out, int priority) {
      if (!first_) first_.emplace(heights::Pass::first(strips_.size(), true));
      const heights::StripData& s = strips_[std::size_t(k)];
      first_->submit(std::size_t(k), heights::StripData{out, s.z, s.mask}, priority);
      // Home as soon as the first pass has read it, beside the transform's other units; the
      // device's copy stays valid for the moments unless StarPU needs the room.
      starpu_data_wont_use(out);
    };
    t.finish = [this](const std::vector<starpu_data_handle_t>& out) {
      const heights::Partial f = first_->total();
      first_.reset();
      largest_ = f.largest;
      std::vector<heights::StripData> band(out.size());
      for (std::size_t k = 0; k < out.size(); ++k) band[k] = heights::StripData{out[k], nullptr, strips_[k].mask};
      band_ = about_mean(band, f);
    };
    return t;
  }
  const filter::HeightParams& band() const { return band_; }
  // The largest |residual| over the largest |input| (the absolute error where the input is 0),
  // as the last band left it.
  double relative_error() const { return scale_ > 0 ? largest_ / scale_ : largest_; }

 private:
  // The second pass over `s` about the mean the first gave (f).
  static filter::HeightParams about_mean(const std::vector<heights::StripData>& s, const heights::Partial& f) {
    if (f.points == 0) throw std::invalid_argument("no valid height to compute parameters from");
    heights::Pass moments = heights::Pass::moments(s.size(), f.sum / double(f.points));
    moments.submit_all(s);
    const heights::Partial m = moments.total();
    filter::CentralSums c;
    c.points = std::size_t(m.points);
    c.s1 = m.s1;
    c.s2 = m.s2;
    c.s3 = m.s3;
    c.s4 = m.s4;
    c.hi = m.hi;
    c.lo = m.lo;
    return filter::from_central_sums(c);
  }

  std::vector<heights::StripData> strips_;
  std::optional<heights::Pass> first_;  // the band's first pass, between its strips and finish
  filter::HeightParams band_;
  double scale_ = 0, largest_ = 0;
};

// The forward transform once, then per band an inverse of its levels alone, all as StarPU
// tasks (each unit's first inverse task zeroes the other levels where it runs), into `band`,
// one band after the other, each band's sums (FilterSums) as tasks on its strips: `done(b)`
// takes band b with StarPU paused, and the next inverse overwrites it, so that no band is held
// longer than it takes to write it. `coeffs` keeps the transform in the unit layout; `surface`
// becomes the residual. filter_ms is the transforms' and the bands' sums' time, without
// done()'s. params: the input's, then each band's.
void separate(const apps::StarpuSession& session, const lwt::Plan& plan, const Options& o,
              const std::vector<filter::Band>& bands, float* surface, const unsigned char* mask, float* coeffs,
              float* band, apps::Phases& phases, std::vector<filter::HeightParams>& params, double* relative_error,
              const std::function<void(std::size_t)>& done) {
  const std::size_t n = std::size_t(plan.height()) * std::size_t(plan.width());
  std::vector<lwt::WorkerStats> stats;
  double t0 = starpu_timing_now();
  lwt::forward(plan, o.pipeline, surface, coeffs, &stats);
  session.end_job();
  const double forward_s = seconds_since(t0);
  report("forward", forward_s, n, stats);
  phases.mark("transforms");
  FilterSums sums(plan, surface, mask);
  params.push_back(sums.input());
  phases.mark("input's parameters");
  double inverse_s = 0;
  for (std::size_t b = 0; b < bands.size(); ++b) {
    t0 = starpu_timing_now();
    const lwt::OutputTasks then = sums.band_tasks();
    lwt::inverse(plan, o.pipeline, coeffs, band, &stats, bands[b].levels(), &then);
    session.end_job();
    const double secs = seconds_since(t0);
    inverse_s += secs;
    report(bands[b].name.c_str(), secs, n, stats);
    params.push_back(sums.band());
    phases.mark("transforms");
    PausedStarpu paused;
    done(b);
  }
  *relative_error = sums.relative_error();
  const double secs = forward_s + inverse_s;
  std::printf("filter   %10.2f ms %8.2f Msamples/s (forward, %zu band inverses with their sums)\n",
              secs * 1e3, double(n) / secs / 1e6, bands.size());
  std::printf("RESULT filter policy=%s size=%dx%d levels=%d bands=%zu units=%d cpu=%u cuda=%u filter_ms=%.3f "
              "forward_ms=%.3f inverses_ms=%.3f\n",
              session.policy().c_str(), plan.height(), plan.width(), plan.levels(), bands.size(), plan.units(),
              session.cpu_workers(), session.cuda_workers(), secs * 1e3, forward_s * 1e3, inverse_s * 1e3);
}

// One band's files into the staging folder: .npy, and with --out-x3p and --png theirs.
void write_band(const Options& o, io::Staging& stage, const std::string& name, const Input& in, const float* z) {
  const int rows = in.z.rows, cols = in.z.cols;
  io::write_npy_f32(stage.path(name + ".npy"), rows, cols, z, o.in);
  if (o.out_x3p) io::write_x3p(stage.path(name + ".x3p"), rows, cols, z, in.dx, in.dy, o.in);
  if (o.png) {
    std::vector<float> shown(z, z + std::size_t(rows) * std::size_t(cols));  // in micrometres where the unit is known
    for (float& v : shown) v = float(v * (in.metres ? 1e6 : 1.0));
    io::write_height_png(stage.path(name + ".png"), shown.data(), rows, cols, in.metres ? "um" : "", 1024, o.in);
  }
}

// Host memory a filter run holds at once, at least: the buffer StarPU transforms (the input,
// then the residual), the coefficients, one band; the views' copies; a band's heights in
// float64 for X3P. An input through a reader (X3P, raw; `npy` false) is also held whole while
// it is copied into that buffer, and may carry invalid points: their mask, a bit and a byte a
// point.
void check_filter_memory(const Options& o, long long rows, long long cols, bool npy) {
  const double arrays = 3.0 + (npy ? 0 : 1 + 1.125 / 4) + (o.png ? 2 : 0) + (o.out_x3p ? 2 : 0);
  apps::check_host_memory("filtering a " + dims(rows, cols) + " surface", arrays * f32_bytes(rows, cols),
                          "give a smaller surface");
}

// Everything the user can get wrong is checked before the first transform: the spec, the
// destinations, the input file, the memory it needs, the levels the surface allows.
int run_filter(const Options& o) {
  apps::Phases phases;
  const std::vector<filter::Band> bands = filter::parse_bands(o.bands, o.levels);
  std::error_code ec;
  if (std::filesystem::exists(o.out_dir, ec) && !std::filesystem::is_directory(o.out_dir, ec))
    throw UsageError("--out-dir " + o.out_dir + " exists and is not a directory");
  io::check_output_dir(o.out_dir);
  std::vector<std::string> files;  // what the run writes into --out-dir
  for (const filter::Band& b : bands) {
    for (const char* ext : {".npy", ".x3p", ".png"})
      if (io::same_file(o.out_dir + "/" + b.name + ext, o.in))
        throw UsageError("--out-dir " + o.out_dir + " would overwrite the input " + o.in);
    files.push_back(b.name + ".npy");
    if (o.out_x3p) files.push_back(b.name + ".x3p");
    if (o.png) files.push_back(b.name + ".png");
  }
  if (o.png) files.push_back("mosaic.png");
  if (std::filesystem::is_directory(o.out_dir, ec))
    for (const std::string& f : files)
      if (std::filesystem::exists(o.out_dir + "/" + f, ec)) io::check_output_file(o.out_dir + "/" + f);
  // A .npy file is read straight into the transform's buffer (its reader refuses non-finite
  // values); X3P and raw surfaces through their readers, copied with their non-finite heights
  // marked invalid.
  const bool npy = o.shape_rows == 0 && ends_with(o.in, ".npy");
  std::optional<io::NpyLayout> layout;
  if (o.shape_rows > 0) {
    check_filter_memory(o, o.shape_rows, o.shape_cols, false);
  } else if (npy) {
    layout = io::read_npy_layout(o.in, io::F64Policy::Convert);
    check_filter_memory(o, layout->rows, layout->cols, true);
  }
  Input in;
  if (npy) {
    in.z.rows = layout->rows;
    in.z.cols = layout->cols;
  } else {
    in = read_input(o);
  }
  if (o.out_x3p && !in.metres)
    throw UsageError("--out-x3p needs an X3P input (its axes give the heights' unit and spacing)");
  const int rows = in.z.rows, cols = in.z.cols;
  check_filter_memory(o, rows, cols, npy);
  lwt::Plan(rows, cols, o.levels, o.units, 1);  // throws PlanError: too many levels
  const std::size_t n = std::size_t(rows) * std::size_t(cols);
  // The input's parameters skip its invalid points, as the bands' do (NaN there in every output).
  FileBuffer surface(n), coeffs(n), band(n);
  std::vector<unsigned char> mask;  // the height tasks' invalid points (a byte a point), if any
  io::Staging stage(o.out_dir);
  std::vector<filter::HeightParams> params;  // the input's, then each band's
  double relative_error = 0;
  std::optional<lwt::Plan> plan_;
  const bool preallocate = preallocating();
  {  // StarPU starts beside the read, then runs for the transforms and the sums; paused while each band is written
    const std::unique_ptr<apps::StarpuSession> started = apps::start_beside(
        [&] {
          std::size_t non_finite = 0;
          if (npy) {
            io::read_npy_rows_f32(o.in, *layout, 0, rows, surface.p);
          } else {
            non_finite = filter::copy_marking_invalid(in.z.data.data(), surface.p, n);
            std::vector<float>().swap(in.z.data);  // the surface is in `surface` from here
          }
          phases.mark("read");
          if (non_finite || in.invalid) {
            const std::vector<bool> invalid = fill_invalid(surface.p, n);
            mask.assign(invalid.begin(), invalid.end());
          }
          if (in.invalid)
            std::printf("%s: %zu invalid points (%.2f%%) filled with the mean of the valid heights\n", o.in.c_str(),
                        in.invalid, 100.0 * double(in.invalid) / double(n));
          phases.mark("invalid points");
        },
        {&coeffs, &band}, "fnn-dtps",  // the product, unless STARPU_SCHED names another
        {}, [&](apps::StarpuSession& s) {  // beside the read
          plan_.emplace(rows, cols, o.levels, o.units, preferred_units(s, rows, cols));
          if (preallocate) lwt::preallocate(*plan_, o.pipeline, false);
        });
    apps::StarpuSession& session = *started;
    phases.mark("StarPU start");
    print_setup(session, *plan_, o.pipeline);
    {
      const apps::Pinned pinned(session, {&surface, &coeffs, &band});
      phases.mark("pin");
      separate(session, *plan_, o, bands, surface.p, mask.empty() ? nullptr : mask.data(), coeffs.p, band.p, phases,
               params, &relative_error, [&](std::size_t b) {
                 write_band(o, stage, bands[b].name, in, band.p);
                 phases.mark("bands' files");
               });
    }
    phases.mark("unpin");
  }
  phases.mark("StarPU stop");
  std::printf("bands sum to the input: max relative error %.3g\n", relative_error);
  const double to_unit = in.metres ? 1e6 : 1.0;
  std::printf("ISO 25178-2 height parameters, mean removed%s:\n%-10s %12s %12s %12s %12s %12s %12s %12s   %s\n",
              in.metres ? " (Sa..Sz in um; the band files in metres, as the input)"
                        : " (Sa..Sz and the band files in the input's unit)",
              "band", "Sa", "Sq", "Sp",
              "Sv", "Sz", "Ssk", "Sku", "levels");
  print_params("input", params[0], to_unit, "all");
  for (std::size_t b = 0; b < bands.size(); ++b)
    print_params(bands[b].name.c_str(), params[b + 1], to_unit, bands[b].levels_text());
  if (o.png) {
    std::vector<float> mallat(n);
    plan_->to_mallat(coeffs.p, mallat.data());
    io::write_mosaic_png(stage.path("mosaic.png"), mallat.data(), rows, cols, o.levels, 1024, o.in);
  }
  phases.mark("parameters' table, mosaic");
  for (const std::string& p : stage.commit()) std::printf("wrote %s\n", p.c_str());
  phases.mark("commit");
  phases.print("filter");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Each transform's work strips are StarPU temporaries, allocated and freed per call. With
  // glibc's defaults, blocks of a few MiB are fresh mappings every time, each page faulted in
  // and zeroed again. Keep blocks up to 32 MiB on the heap and the heap's top mapped.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  sched::trace::set_describer(lwt::describe_task);
  return apps::run_main({"lwt2d", kUsage}, argc, argv, [&] {
    try {
      const Options o = parse(argc, argv);
      if (o.command == "demo") return run_demo(o);
      if (o.command == "generate") return run_generate(o);
      if (o.command == "filter") return run_filter(o);
      return run_file(o);
    } catch (const lwt::PlanError& e) {  // bad input as much as a bad flag: status 2
      throw UsageError(e.what());
    } catch (const io::InputError& e) {
      throw UsageError(e.what());
    } catch (const io::OutputPathError& e) {
      throw UsageError(e.what());
    } catch (const filter::BandError& e) {
      throw UsageError(std::string("--bands: ") + e.what());
    }
  });
}
