// lwt2d-floor: what an lwt2d command's whole time cannot go below, with the command's own
// calls and nothing else: the input read as `lwt2d forward` reads it (into a FileBuffer, before
// StarPU starts), StarPU started with the environment's workers and policy, the buffer pinned
// and unpinned as forward does, StarPU stopped, and the array written to each --out as the
// command writes its outputs (io::write_npy_f32, atomic). bench/cold.py runs it beside each
// command ("floor": one --out for forward and inverse, one per band for filter).
#include <cstdio>
#include <string>
#include <vector>

#include "apps/cli.hpp"
#include "apps/io/npy.hpp"
#include "apps/io/output.hpp"
#include "apps/starpu_session.hpp"

namespace {

const char* const kUsage =
    "usage: lwt2d-floor --in X.npy --out Y.npy [--out Z.npy ...]\n"
    "Reads X (2-D float32 .npy), starts and stops StarPU (STARPU_SCHED and the workers from the\n"
    "environment), then writes X's array to every --out; prints 'RESULT floor read_ms=..\n"
    "starpu_ms=.. write_ms=..'. The calls are lwt2d forward's, so its time is a floor under a\n"
    "command's whole time.\n";

double now_ms() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

int run(int argc, char** argv) {
  std::string in;
  std::vector<std::string> outs;
  apps::parse_flags(argc, argv, 1,
                    {apps::value_flag("--in", [&](const std::string& v) { in = v; }),
                     apps::value_flag("--out", [&](const std::string& v) { outs.push_back(v); })});
  if (in.empty() || outs.empty()) throw apps::UsageError("give --in X.npy and at least one --out Y.npy (see --help)");
  for (const std::string& o : outs) io::check_output_file(o);
  const double t0 = now_ms();
  const io::NpyLayout shape = io::read_npy_layout(in, io::F64Policy::Refuse);
  const std::size_t n = std::size_t(shape.rows) * std::size_t(shape.cols);
  apps::FileBuffer buf(n);
  io::read_npy_rows_f32(in, shape, 0, shape.rows, buf.p);
  const double t1 = now_ms();
  {
    apps::StarpuSession session;
    buf.pin(session);
    buf.unpin();
  }
  const double t2 = now_ms();
  for (const std::string& o : outs) io::write_npy_f32(o, shape.rows, shape.cols, buf.p, in);
  const double t3 = now_ms();
  std::printf("RESULT floor read_ms=%.2f starpu_ms=%.2f write_ms=%.2f outputs=%zu\n", t1 - t0, t2 - t1, t3 - t2,
              outs.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return apps::run_main({"lwt2d-floor", kUsage}, argc, argv, [&] {
    try {
      return run(argc, argv);
    } catch (const io::InputError& e) {
      throw apps::UsageError(e.what());
    } catch (const io::OutputPathError& e) {
      throw apps::UsageError(e.what());
    }
  });
}
