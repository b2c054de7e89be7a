// lwt2d-mpi: the multi-level 2D CDF 9/7 transform of a file across the ranks of an MPI job,
// with StarPU-MPI (DESIGN §11; seed 002's parallel FWT on distributed memory).
//   mpirun -np R lwt2d-mpi forward --in X.npy --out C.npy [--levels N] [--units U]
//   mpirun -np R lwt2d-mpi inverse --in C.npy --out Y.npy [--levels N] [--units U]
// Rank 0 checks the input and makes the output file (the formats of `lwt2d forward`/`inverse`:
// the coefficients in the standard Mallat layout); rank 0 gathers the results and writes them
// where every rank is on one host (--gather), and each rank writes its own units' rows into the
// one file where the ranks are on several hosts (--scatter). The image's data units, horizontal strips, are
// spread over the ranks in contiguous groups (unit k on rank k R / U); the input is read by
// each rank for its own units where it can read the file (else rank 0 sends the strips):
// the 4-row halos between neighbouring units of different ranks cross (and, gathered, the
// coefficients on their way to rank 0), through StarPU-MPI, and each rank's
// workers run its units under the policy STARPU_SCHED names (ours by default). On CPU workers
// the output equals one process's (`lwt2d forward --units U`) bit for bit: each unit's tasks
// do the same arithmetic wherever they run.
#include <mpi.h>
#include <starpu.h>
#include <starpu_mpi.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "apps/io/npy.hpp"
#include "apps/io/output.hpp"
#include "apps/mpi_session.hpp"
#include "apps/rank_dtps.hpp"
#include "apps/starpu_session.hpp"
#include "apps/unit_files.hpp"
#include "codelets/lwt_tasks.hpp"
#include "codelets/plan.hpp"
#include "scheduler/trace.hpp"

namespace {

using apps::UsageError;
using apps::parse_positive;

const char* const kUsage =
    "usage: mpirun -np R lwt2d-mpi forward --in X.npy --out C.npy [--levels N] [--units U] [--repeat N]\n"
    "                                      [--shares dtps|model|even] [--gather|--scatter]\n"
    "       mpirun -np R lwt2d-mpi inverse --in C.npy --out Y.npy [the same options]\n"
    "  The transform of `lwt2d forward` / `inverse` over R ranks: rank 0 checks the input and makes the\n"
    "  output file, the data units (default: 4 a rank, at least 8) are spread over the ranks in contiguous\n"
    "  groups, each rank reads its own units' rows of the input and writes its units' rows of the output\n"
    "  into the one file (where a rank cannot, rank 0 sends it its strips, or gathers its results), and\n"
    "  halos cross between neighbouring ranks. --gather: rank 0 gathers every result and writes the file\n"
    "  alone, the default where every rank is on one host (--scatter: write the ranks' rows there too).\n"
    "  The file appears under its name only once complete. Every rank needs a unit: R ranks need R units, which\n"
    "  the height and levels must allow (seed 002 eq. 6.8). --repeat runs the transform N times (the\n"
    "  median of all but the first is the RESULT). The first run gives each rank as many contiguous units;\n"
    "  --shares model: each later run gives them by the ranks' speeds under our policy in the one before,\n"
    "  each unit to the rank that would finish first (a rank too slow for one unit gets none); dtps (the\n"
    "  default with 2 ranks or more): two runs by the model (ranks on hosts of their own with the same\n"
    "  workers: as many units each), then seed 001's DTPS corrects the ranks'\n"
    "  shares from when each rank's results were complete (gathered: reached rank 0), halos included: with 2 ranks\n"
    "  between rank 0 and rank 1, one line a run\n"
    "    dtps: rank 0 T0 ms for N0 units, rank 1 T1 ms for N1, m M (CASE), rank 0's share A -> B\n"
    "  and with R > 2 by halves, one line each: first all ranks (3: rank 0 against ranks 1-2), then\n"
    "  each half of 2 ranks or more, its line naming it and A its first part's share of the half's units:\n"
    "    dtps: ranks 1-2: rank 1 T1 ms for N1 units, rank 2 T2 ms for N2, m M (CASE), rank 1's share A -> B\n"
    "  (\"dtps: ranks 1-2: no units, ...\" where the half had none). CASE: the later part (\"rank 1 late\")\n"
    "  or the controller's case (balanced, probe, guarded, ...). A part with a rank whose policy warmed up a\n"
    "  co-run of its CPUs and GPUs in the run keeps its share (\"dtps: ...a rank's policy warmed up a co-run,\n"
    "  rank 0's share A kept\").\n"
    "  even: as many units each, every run. Defaults: 4 levels, 1 run.\n"
    "  Built for simulation (SimGrid's SMPI, run by StarPU's starpu_smpirun): --size S or RxC instead of\n"
    "  --in and --out (no data is computed, so none is read or written).\n";

struct Options {
  std::string command, in, out;
  int levels = 4, units = 0, repeat = 1;
  int rows = 0, cols = 0;  // --size, in simulation
  bool gather = false, scatter = false;
  enum class Shares { Default, Model, Dtps, Even } shares = Shares::Default;
};

Options parse(int argc, char** argv) {
  if (argc < 2) throw UsageError("missing command: forward or inverse (see --help)");
  Options o;
  o.command = argv[1];
  if (o.command != "forward" && o.command != "inverse")
    throw UsageError("unknown command '" + o.command + "': use forward or inverse (see --help)");
  using V = const std::string&;
  std::vector<apps::Flag> flags = {
    apps::value_flag("--in", [&](V v) { o.in = v; }),
    apps::value_flag("--out", [&](V v) { o.out = v; }),
    apps::value_flag("--levels", [&](V v) { o.levels = parse_positive("--levels", v); }),
    apps::value_flag("--units", [&](V v) { o.units = parse_positive("--units", v); }),
    apps::value_flag("--repeat", [&](V v) { o.repeat = parse_positive("--repeat", v); }),
    apps::switch_flag("--gather", o.gather),
    apps::switch_flag("--scatter", o.scatter),
    apps::value_flag("--shares", [&](V v) {
      if (v != "model" && v != "even" && v != "dtps")
        throw UsageError("--shares must be dtps, model or even, got '" + v + "'");
      o.shares = v == "model" ? Options::Shares::Model : v == "dtps" ? Options::Shares::Dtps : Options::Shares::Even;
    }),
  };
  if (apps::kSimulated)
    flags.push_back(apps::value_flag("--size", [&](V v) { std::tie(o.rows, o.cols) = apps::parse_size("--size", v); }));
  apps::parse_flags(argc, argv, 2, flags, o.command);
  if (o.gather && o.scatter) throw UsageError("--gather and --scatter exclude each other");
  if (apps::kSimulated) {
    if (o.rows == 0 || !o.in.empty() || !o.out.empty())
      throw UsageError("in simulation no data is computed: give --size S or RxC, not --in and --out");
    return o;
  }
  if (o.in.empty() || o.out.empty()) throw UsageError(o.command + " needs --in and --out");
  if (o.in == o.out) throw UsageError("--out must not be the input file");
  return o;
}


// Contiguous groups of units, rank after rank, as many as apps::mpi::items_by_finish gives each.
std::vector<int> units_by_finish(int units, const std::vector<apps::mpi::RankSpeed>& speeds) {
  const std::vector<int> count = apps::mpi::items_by_finish(units, speeds);
  std::vector<int> owner;
  for (std::size_t r = 0; r < count.size(); ++r) owner.insert(owner.end(), std::size_t(count[r]), int(r));
  return owner;
}

// One DTPS round on rank 0 after a transform that started at t0_us and took `ms`: each rank's
// time is when the last of its units' results was complete (home_us: on its rank, or under
// --gather on rank 0, lwt::unit_home_us), so that halos (and the transfers to rank 0) count,
// not only its workers' busy time; its work
// is its units, and the throughput the makespan guard compares is the transform's units over
// its time. A node with a rank in `warming` keeps its share (RankDtps::end_round). Prints each
// node's round (seed 001 §1.3 between its two halves) and returns the ranks' shares for the
// next transform.
std::vector<double> dtps_step(apps::mpi::RankDtps& dtps, const std::vector<int>& owner,
                              const std::vector<double>& home_us, double t0_us, double ms,
                              const std::vector<bool>& warming) {
  std::vector<double> t(std::size_t(dtps.ranks()), 0.0), count(std::size_t(dtps.ranks()), 0.0);
  for (std::size_t k = 0; k < owner.size() && k < home_us.size(); ++k) {
    const std::size_t q = std::size_t(owner[k]);
    t[q] = std::max(t[q], (home_us[k] - t0_us) / 1e3);
    ++count[q];
  }
  using Dtps = apps::mpi::RankDtps;
  for (const Dtps::NodeRound& u : dtps.end_round(t, count, ms, warming)) {
    const std::string a = Dtps::group(u.lo, u.mid), b = Dtps::group(u.mid, u.hi);
    if (u.warming) {
      std::printf("dtps: %sa rank's policy warmed up a co-run, %s's share %.3f kept\n", dtps.prefix(u).c_str(), a.c_str(),
                  u.share_after);
      continue;
    }
    if (u.skipped) {
      std::printf("dtps: %sno units, %s's share %.3f kept\n", dtps.prefix(u).c_str(), a.c_str(), u.share_after);
      continue;
    }
    std::printf("dtps: %s%s %.2f ms for %d units, %s %.2f ms for %d, m %.3f (%s), %s's share %.3f -> %.3f\n",
                dtps.prefix(u).c_str(), a.c_str(), u.t_first, int(u.work_first), b.c_str(), u.t_second,
                int(u.work_second), u.update.m_before, Dtps::case_name(u).c_str(), a.c_str(), u.share_before,
                u.share_after);
  }
  return dtps.shares();
}

// Contiguous groups by shares: rank r takes units round(S_r U) to round(S_(r+1) U), S_r the
// shares of the ranks before it.
std::vector<int> units_by_shares(int units, const std::vector<double>& shares) {
  std::vector<int> owner(static_cast<std::size_t>(units));
  double before = 0;
  for (std::size_t r = 0; r < shares.size(); ++r) {
    const int lo = std::clamp(int(std::lround(before * units)), 0, units);
    before += shares[r];
    const int hi = r + 1 == shares.size() ? units : std::clamp(int(std::lround(before * units)), lo, units);
    std::fill(owner.begin() + lo, owner.begin() + hi, int(r));
  }
  return owner;
}

int transform(const Options& o, const apps::StarpuSession& session, int rank, int ranks);

// Whether every rank reads the input file as rank 0 does (the same shape; collective), and
// this rank's view of it in `layout`. A rank that cannot says why, once, and rank 0 then sends
// the strips.
bool local_input(const Options& o, int rank, const int shape[2], io::NpyLayout& layout) {
  if (apps::kSimulated) return true;
  std::string why;
  if (rank != 0) try {
      layout = io::read_npy_layout(o.in, io::F64Policy::Refuse);
      if (layout.rows != shape[0] || layout.cols != shape[1])
        why = "it is " + std::to_string(layout.rows) + " x " + std::to_string(layout.cols) + " here";
    } catch (const std::exception& e) {
      why = e.what();
    }
  if (!why.empty())
    std::fprintf(stderr, "lwt2d-mpi: note: rank %d cannot read the input as rank 0 does (%s): rank 0 sends the strips\n",
                 rank, why.c_str());
  const std::vector<double> ok = apps::mpi::all_gather({why.empty() ? 1.0 : 0.0});
  return std::all_of(ok.begin(), ok.end(), [](double v) { return v > 0; });
}

// Rank 0 makes the output file under a temporary name (io::NpyParts) and every rank opens it
// (collective). Returns whether every rank could; a rank that cannot says why, once, and the
// job gathers instead. Where rank 0 cannot make it, the job ends (UsageError, on every rank).
bool open_output(const Options& o, int rank, const int shape[2], std::unique_ptr<io::NpyParts>& parts,
                 std::unique_ptr<io::NpyRows>& rows) {
  std::string temp, why;
  if (rank == 0) try {
      parts = std::make_unique<io::NpyParts>(o.out, shape[0], shape[1], o.in);
      temp = parts->temp();
    } catch (const std::exception& e) {
      why = e.what();
    }
  std::vector<double> made{why.empty() ? 1.0 : 0.0};
  apps::mpi::broadcast(made);
  if (made[0] == 0) throw UsageError(why.empty() ? "rank 0 could not make " + o.out : why);
  apps::mpi::broadcast(temp);
  try {
    rows = std::make_unique<io::NpyRows>(o.out, temp, shape[0], shape[1]);
  } catch (const std::exception& e) {
    why = e.what();
    std::fprintf(stderr, "lwt2d-mpi: note: rank %d cannot write into the output as rank 0 makes it (%s): rank 0 "
                 "gathers the results\n", rank, why.c_str());
  }
  const std::vector<double> ok = apps::mpi::all_gather({why.empty() ? 1.0 : 0.0});
  if (std::all_of(ok.begin(), ok.end(), [](double v) { return v > 0; })) return true;
  rows.reset();
  parts.reset();  // removes the temporary: rank 0 writes the file whole
  return false;
}

// This rank's units' results (`out`: their rows, in the units' layout) into the output file,
// in its layout (a forward's in the Mallat layout: each unit's coefficients are blocks at every
// level, lwt::Plan::unit_mallat_blocks); then, once every rank has written, rank 0 puts the
// file in place. A rank whose writes fail says why (the lowest such rank, once) and every rank ends with status 2, the file never
// in place. Returns 0 or that status (collective).
int write_own_rows(const Options& o, const lwt::Plan& plan, const std::vector<int>& owner, int rank, const float* out,
                   io::NpyRows& rows, io::NpyParts* parts) {
  std::string why;
  try {
    for (int k = 0; k < plan.units(); ++k)
      if (owner[std::size_t(k)] == rank) apps::write_unit(plan, k, o.command == "forward", out, rows);
    rows.close();
  } catch (const std::exception& e) {
    why = e.what();
  }
  std::vector<double> failed = apps::mpi::all_gather({why.empty() ? 0.0 : 1.0});
  int first = -1;
  for (std::size_t r = 0; r < failed.size() && first < 0; ++r)
    if (failed[r] > 0) first = int(r);
  if (first < 0 && rank == 0) try {
      parts->commit();
    } catch (const std::exception& e) {
      why = e.what();
      first = 0;
    }
  std::vector<double> status{double(first)};
  apps::mpi::broadcast(status);
  if (status[0] < 0) return 0;
  if (int(status[0]) == rank) std::fprintf(stderr, "lwt2d-mpi: %s\n", why.c_str());
  std::fflush(stderr);
  starpu_mpi_barrier(MPI_COMM_WORLD);
  return apps::mpi::exit_status(2);
}

// A bad input found once MPI runs is found by every rank alike (rank 0 shares what it read):
// rank 0 says so before StarPU-MPI and MPI stop, and every rank ends with status 2 (the
// launcher may end the job at the first rank's exit).
int run(const Options& o) {
  apps::StarpuSession session("fnn-dtps", apps::mpi::init, apps::mpi::shutdown);
  int rank = 0, ranks = 1;
  starpu_mpi_comm_rank(MPI_COMM_WORLD, &rank);
  starpu_mpi_comm_size(MPI_COMM_WORLD, &ranks);
  auto refuse = [&](const char* what) {
    if (rank == 0) std::fprintf(stderr, "lwt2d-mpi: %s\n", what);
    std::fflush(stderr);
    starpu_mpi_barrier(MPI_COMM_WORLD);
    return apps::mpi::exit_status(2);
  };
  try {
    return transform(o, session, rank, ranks);
  } catch (const UsageError& e) {
    return refuse(e.what());
  } catch (const lwt::PlanError& e) {
    return refuse(e.what());
  }
}

int transform(const Options& o, const apps::StarpuSession& session, int rank, int ranks) {
  // Rank 0 reads; the shape (or, where it could not read, a failure) goes to every rank, so
  // that all of them make the same plan or all of them stop.
  // In simulation the shape is --size's, and nothing is read or written.
  io::Array2D a;
  std::string error;
  if (apps::kSimulated) a.rows = o.rows, a.cols = o.cols;
  else if (rank == 0) try {
      io::check_output_file(o.out);  // before any work, as the input
      a = io::read_npy_f32(o.in, io::F64Policy::Refuse);
    } catch (const std::exception& e) {
      error = e.what();
    }
  std::vector<double> sent{double(a.rows), double(a.cols)};
  if (!error.empty()) sent = {-1, -1};
  apps::mpi::broadcast(sent);
  const int shape[2] = {int(sent[0]), int(sent[1])};
  if (shape[0] < 0) throw UsageError(error.empty() ? "rank 0 could not read " + o.in : error);
  const int preferred = std::max(8, 4 * ranks);
  const lwt::Plan plan(shape[0], shape[1], o.levels, o.units, preferred);
  if (plan.units() < ranks)
    throw UsageError(std::to_string(ranks) + " ranks need " + std::to_string(ranks) + " units, but " +
                     std::to_string(plan.units()) + " units of " + std::to_string(shape[0]) + " rows at " +
                     std::to_string(o.levels) + " levels is what this run allows (at most " +
                     std::to_string(lwt::Plan::max_units(shape[0], o.levels)) + ", seed 002 eq. 6.8)");
  const std::size_t n = std::size_t(shape[0]) * std::size_t(shape[1]);
  // The output: each rank's units' results stay on it and it writes their rows into the one file
  // rank 0 makes (io::NpyParts), unless --gather, or a rank cannot open that file (then rank 0
  // gathers them all, as with --gather). In simulation nothing is written, and nothing gathered
  // unless --gather.
  // Ranks all on one host gather by default: there the copy home crosses no network, and
  // DTPS's times are when results reached rank 0 (each rank's own completion misjudges a rank
  // whose neighbours' halos held it: tests/mpi_lwt.sh's slowed third rank on 2 cores).
  std::unique_ptr<io::NpyParts> parts;  // rank 0's
  std::unique_ptr<io::NpyRows> writer;  // this rank's writer into it
  const std::vector<double> hosts = apps::mpi::all_hosts();  // nodes apart need not be probed alone
  const bool one_host = std::all_of(hosts.begin(), hosts.end(), [&](double h) { return h == hosts[0]; });
  // Nodes alike (the same workers, each rank on a host of its own): their shares start equal,
  // not from the live speeds of a first transform (35% apart between simulated h200 nodes).
  const std::vector<double> workers = apps::mpi::all_workers();
  std::vector<double> distinct = hosts;
  std::sort(distinct.begin(), distinct.end());
  const bool alike = ranks > 1 && std::adjacent_find(distinct.begin(), distinct.end()) == distinct.end() &&
                     std::all_of(workers.begin(), workers.end(), [&](double w) { return w == workers[0]; });
  bool scatter = ranks > 1 && !o.gather && (o.scatter || !one_host);
  if (scatter && !apps::kSimulated) scatter = open_output(o, rank, shape, parts, writer);
  lwt::set_gather_output(!scatter);
  // Seed 002's layout: the input stays where its units run when every rank can read the file
  // (each reads its own units' rows, an inverse's from the Mallat layout's bands: only halos
  // and outputs cross), else rank 0 sends each unit its strip. In simulation no data is read,
  // and every rank's is local.
  io::NpyLayout layout;  // the input as this rank reads it, under `local`
  const bool local = ranks > 1 && local_input(o, rank, shape, layout);
  lwt::set_local_input(local);
  // Rank 0's image and coefficients (pinned where it has a GPU); under `local` every rank has
  // an image-sized input, of which it reads (and so touches) only its units' rows.
  std::unique_ptr<apps::HostArray<float>> in, out;
  if (rank == 0 || local) in = std::make_unique<apps::HostArray<float>>(n);
  std::vector<char> loaded(std::size_t(plan.units()), rank == 0);  // under `local`: the units read
  std::unique_ptr<float[]> mallat;  // an inverse's input rows read, in their places (touched only there)
  if (local && rank != 0 && o.command == "inverse" && !apps::kSimulated) mallat.reset(new float[n]);
  if (rank == 0 || scatter) out = std::make_unique<apps::HostArray<float>>(n);  // a rank's: its units' rows
  if (rank == 0) {
    if (!apps::kSimulated) {  // simulation computes no data
      if (o.command == "forward") std::copy(a.data.begin(), a.data.end(), in->p);
      else plan.from_mallat(a.data.data(), in->p);
    }
    std::printf("lwt2d-mpi %s: %d x %d, %d levels, %d units over %d ranks, policy %s, %u CPU + %u CUDA workers on "
                "rank 0\n",
                o.command.c_str(), shape[0], shape[1], o.levels, plan.units(), ranks, session.policy().c_str(),
                session.cpu_workers(), session.cuda_workers());
  }
  // Units in contiguous groups, evenly for the first transform; after it, by the ranks' speeds
  // (apps::mpi::items_by_finish) under model, and under dtps by the model once, then by DTPS.
  Options::Shares shares = o.shares;
  if (shares == Options::Shares::Default) shares = ranks >= 2 ? Options::Shares::Dtps : Options::Shares::Model;
  std::vector<int> owner(std::size_t(plan.units()));
  for (int k = 0; k < plan.units(); ++k) owner[std::size_t(k)] = int(static_cast<long long>(k) * ranks / plan.units());
  std::vector<apps::mpi::RankSpeed> speeds(static_cast<std::size_t>(ranks));
  std::vector<double> times;
  std::vector<double> planned(std::size_t(ranks), 1.0 / ranks);  // the shares `owner` follows
  std::vector<lwt::WorkerStats> stats;
  // Seed 001's DTPS between the ranks, by halves as between its CPU and GPU classes
  // (apps::mpi::RankDtps; with 2 ranks rank 0 is the first class, alpha its share, as in
  // gemm-mpi), on rank 0, started at the model's split once a transform ran by the model (the
  // first one's speeds may be the policy's start values).
  std::unique_ptr<apps::mpi::RankDtps> dtps;
  long warm_ups = 0;  // this rank's policy's co-run warm-ups, as of the last transform (all_warming)
  for (int r = 0; r < o.repeat; ++r) {
    lwt::set_unit_ranks(owner);
    for (int k = 0; k < plan.units() && local && !apps::kSimulated; ++k)
      if (owner[std::size_t(k)] == rank && !loaded[std::size_t(k)]) {  // rank 0 checked the values
        const std::size_t W = std::size_t(shape[1]);
        if (mallat) {
          for (const auto& [row0, rows] : plan.unit_mallat_rows(k))
            io::read_npy_rows_f32(o.in, layout, row0, rows, mallat.get() + std::size_t(row0) * W);
          plan.from_mallat_unit(k, mallat.get(), in->p);
        } else {
          const int row0 = plan.unit_row0(0, k);
          io::read_npy_rows_f32(o.in, layout, row0, plan.unit_rows(0, k), in->p + std::size_t(row0) * W);
        }
        loaded[std::size_t(k)] = 1;
      }
    starpu_mpi_barrier(MPI_COMM_WORLD);
    const double t0 = starpu_timing_now();
    const float* x = in ? in->p : nullptr;
    float* y = out ? out->p : nullptr;
    if (o.command == "forward") lwt::forward(plan, lwt::Pipeline::Fused, x, y, &stats);
    else lwt::inverse(plan, lwt::Pipeline::Fused, x, y, &stats);
    starpu_mpi_barrier(MPI_COMM_WORLD);
    times.push_back((starpu_timing_now() - t0) / 1e3);
    {  // this rank's batch: until its own units' results were complete (or its last task), not
       // the other ranks' nor the barrier
      const std::vector<double>& home = lwt::unit_home_us();
      double own = NAN;
      for (std::size_t k = 0; k < home.size() && k < owner.size(); ++k)
        if (owner[k] == rank && home[k] > 0) own = std::isnan(own) ? home[k] : std::max(own, home[k]);
      if (ranks > 1) session.end_job(own);
      else session.end_job();
    }
    if (rank == 0)
      std::printf("%s %d: %.2f ms, %.2f GB/s host to host\n", o.command.c_str(), r, times.back(),
                  2.0 * double(n) * 4 / (times.back() * 1e6));
    speeds = apps::mpi::all_rank_speeds(speeds);
    const std::vector<bool> warming = apps::mpi::all_warming(warm_ups);  // in this transform
    if (r + 1 == o.repeat || shares == Options::Shares::Even) continue;
    if (dtps) {
      std::vector<double> home = lwt::unit_home_us();
      double since = t0;
      if (scatter) {  // each rank's own units, on its own clock from its t0: every rank's, max by unit
        for (double& us : home) us = us > 0 ? us - t0 : 0;
        const std::vector<double> all = apps::mpi::all_gather(home);
        for (std::size_t i = 0; i < all.size(); ++i) home[i % home.size()] = std::max(home[i % home.size()], all[i]);
        since = 0;
      }
      if (rank == 0) planned = dtps_step(*dtps, owner, home, since, times.back(), warming);
      apps::mpi::broadcast(planned);
      owner = units_by_shares(plan.units(), planned);
    } else if (shares == Options::Shares::Dtps && alike) {  // DTPS from the even split, from the next transform
      std::vector<double> count(std::size_t(ranks), 0.0);
      for (const int q : owner) ++count[std::size_t(q)];
      dtps = std::make_unique<apps::mpi::RankDtps>(ranks, count, sched::DtpsConfig{}, hosts);
    } else if (apps::mpi::all_known(speeds)) {
      owner = units_by_finish(plan.units(), speeds);
      double total = 0;
      for (const auto& v : speeds) total += v.total;
      for (int q = 0; q < ranks; ++q) planned[std::size_t(q)] = speeds[std::size_t(q)].total / total;
      if (shares == Options::Shares::Dtps && r >= 1) {  // after a transform measured the speeds
        std::vector<double> count(std::size_t(ranks), 0.0);
        for (const int q : owner) ++count[std::size_t(q)];
        dtps = std::make_unique<apps::mpi::RankDtps>(ranks, count, sched::DtpsConfig{}, hosts);
      }
    }
  }
  // Each rank's units and tasks in the last transform and its speed, in rank order.
  const long mine = std::count(owner.begin(), owner.end(), rank);
  unsigned tasks = 0;
  for (const auto& w : stats) tasks += w.tasks;
  for (int r = 0; r < ranks; ++r) {
    if (r == rank)
      std::printf("rank %d: %ld of %d units, planned share %.3f, %u tasks, speed %.4g, %u CPU + %u CUDA workers\n",
                  rank, mine, plan.units(), planned[std::size_t(rank)], tasks, speeds[std::size_t(rank)].total,
                  session.cpu_workers(), session.cuda_workers());
    std::fflush(stdout);
    starpu_mpi_barrier(MPI_COMM_WORLD);
  }
  if (scatter && !apps::kSimulated) {
    if (const int status = write_own_rows(o, plan, owner, rank, out->p, *writer, parts.get())) return status;
  } else if (rank == 0 && !apps::kSimulated) {
    std::vector<float> image(n);
    if (o.command == "forward") plan.to_mallat(out->p, image.data());
    else std::copy(out->p, out->p + n, image.begin());
    io::write_npy_f32(o.out, shape[0], shape[1], image.data(), o.in);
  }
  if (rank == 0 && !apps::kSimulated) std::printf("wrote %s\n", o.out.c_str());
  if (rank == 0) {
    std::vector<double> later(times.begin() + (times.size() > 1 ? 1 : 0), times.end());
    std::sort(later.begin(), later.end());
    std::printf("RESULT lwt2d-mpi %s size=%dx%d levels=%d units=%d ranks=%d policy=%s median_ms=%.3f reps=%zu\n",
                o.command.c_str(), shape[0], shape[1], o.levels, plan.units(), ranks, session.policy().c_str(),
                later[later.size() / 2], later.size());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  apps::mpi::keep_args(&argc, &argv);
  sched::trace::set_describer(lwt::describe_task);  // each rank's trace names a task's unit and level
  // Usage and usage errors from rank 0 alone: every rank parses the same command line.
  return apps::run_main({"lwt2d-mpi", kUsage, apps::mpi::is_rank_zero(), apps::mpi::exit_status}, argc, argv, [&] {
    try {
      return run(parse(argc, argv));
    } catch (const lwt::PlanError& e) {
      throw UsageError(e.what());
    }
  });
}
