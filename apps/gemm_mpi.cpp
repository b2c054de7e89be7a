// gemm-mpi: the tiled product C = A B across the ranks of an MPI job, with StarPU-MPI
// (DESIGN §11; seed 001 is a strategy for heterogeneous clusters).
//   mpirun -np R gemm-mpi [--precision s|d] [--size N | --m M --n N --k K] [--tile B] [--iter I] [--check]
// One task per C block over the whole k (gemm's --split 2d). StarPU-MPI runs each task on the
// rank owning its C block and sends it the A and B blocks it lacks; each rank's workers are
// scheduled by the policy STARPU_SCHED names (ours by default). Block row A_i lives on rank
// i mod R, block column B_j on rank j mod R; every rank generates the blocks it owns from their
// global indices, so no rank holds the whole input.
// Which rank computes which C block (--shares):
// - cyclic: 2D block-cyclically over a pr x pc grid of the ranks (pr the largest divisor of R up
//   to its square root), every product;
// - model (default): the first product cyclic; after each product the ranks exchange their
//   speeds for the block codelet as our policy has them (the sum of a rank's workers' and its
//   fastest worker's; DESIGN §11), and each block of the next product goes to the rank that
//   would finish first (apps::mpi::items_by_finish). Under a policy not ours, cyclic;
// - dtps: seed 001's DTPS between the ranks as between its CPU and GPU classes (§1.3; seed 001
//   is a strategy for heterogeneous clusters), by halves with more than 2 (apps::mpi::RankDtps):
//   the first product cyclic, then each rank's share of the blocks corrected after each product
//   from the delay coefficients of the halves' times (each rank's time: its busiest worker's
//   time in the block codelet), starting from even shares.
// --check gathers C on rank 0 and compares it with a plain reference product of the same A and
// B there.
#include <cblas.h>
#include <mpi.h>
#include <starpu.h>
#include <starpu_mpi.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "apps/mpi_session.hpp"
#include "apps/rank_dtps.hpp"
#include "apps/starpu_session.hpp"
#include "codelets/gemm.hpp"
#include "codelets/simulated.hpp"
#ifdef FNNDTPS_HAVE_CUDA
#include <starpu_cublas_v2.h>

#include "codelets/cuda/gemm_cuda.hpp"
#endif

namespace {

using apps::UsageError;
using apps::parse_positive;

const char* const kUsage =
    "usage: mpirun -np R gemm-mpi [--precision s|d] [--size N | --m M --n N --k K] [--tile B] [--iter I]\n"
    "                             [--shares model|cyclic|dtps] [--check]\n"
    "  C (m x n) = A (m x k) B (k x n) over R ranks, one task per B x B block of C over the whole k.\n"
    "  Defaults: s, 2048, tile 256, 3 iterations, model. cyclic: C's blocks 2D block-cyclic over the\n"
    "  ranks; model: the first product cyclic, then each block to the rank that would finish first by its\n"
    "  workers' speeds under our policies; dtps: the first product cyclic, then the ranks' shares\n"
    "  corrected after each product from their times (seed 001): with 2 ranks rank 0 against rank 1,\n"
    "    dtps: rank 0 T0 ms, rank 1 T1 ms, m M (CASE), rank 0's share A -> B\n"
    "  with R > 2 by halves, one line each: all ranks (3: rank 0 against ranks 1-2), then each half of\n"
    "  2 ranks or more, its line naming it and A its first part's share of the half's blocks:\n"
    "    dtps: ranks 1-2: rank 1 T1 ms, rank 2 T2 ms, m M (CASE), rank 1's share A -> B\n"
    "  CASE: the later part (\"rank 1 late\") or the controller's; a part with a rank whose policy warmed up\n"
    "  a co-run of its CPUs and GPUs in the product keeps its share. --check gathers C on rank 0 and compares\n"
    "  it with a plain reference product there: max|C - C_ref| / max|C_ref|, tolerance 1e-5 (s) or\n"
    "  1e-12 (d); exit status 1 beyond it. Each rank's workers and policy come from StarPU's environment.\n";

struct Options {
  bool single = true;
  int m = 2048, n = 2048, k = 2048, tile = 256, iter = 3;
  bool check = false;
  enum class Shares { Cyclic, Model, Dtps } shares = Shares::Model;
};

Options parse(int argc, char** argv) {
  Options o;
  using V = const std::string&;
  apps::parse_flags(argc, argv, 1, {
    apps::value_flag("--precision", [&](V p) {
      if (p != "s" && p != "d") throw UsageError("--precision must be s or d, got '" + p + "'");
      o.single = p == "s";
    }),
    apps::value_flag("--size", [&](V v) { o.m = o.n = o.k = parse_positive("--size", v); }),
    apps::value_flag("--m", [&](V v) { o.m = parse_positive("--m", v); }),
    apps::value_flag("--n", [&](V v) { o.n = parse_positive("--n", v); }),
    apps::value_flag("--k", [&](V v) { o.k = parse_positive("--k", v); }),
    apps::value_flag("--tile", [&](V v) { o.tile = parse_positive("--tile", v); }),
    apps::value_flag("--iter", [&](V v) { o.iter = parse_positive("--iter", v); }),
    apps::switch_flag("--check", o.check),
    apps::value_flag("--shares", [&](V v) {
      if (v != "model" && v != "cyclic" && v != "dtps")
        throw UsageError("--shares must be model, cyclic or dtps, got '" + v + "'");
      o.shares = v == "model" ? Options::Shares::Model : v == "cyclic" ? Options::Shares::Cyclic : Options::Shares::Dtps;
    }),
  });
  if (apps::kSimulated && (o.check || !o.single))
    throw UsageError("simulated gemm-mpi computes no data and models float blocks only: drop --check and --precision d");
  // StarPU keeps every submitted task and registered handle in memory (gemm's bound too).
  constexpr long long kMaxBlocks = 1LL << 22;
  if (static_cast<long long>(gemm::tile_count(o.m, o.tile)) * gemm::tile_count(o.n, o.tile) > kMaxBlocks)
    throw UsageError("--tile " + std::to_string(o.tile) + " makes more than " + std::to_string(kMaxBlocks) +
                     " C blocks; use a larger tile");
  return o;
}

// A's, B's and C's elements as functions of their global indices, in [-1, 1): any rank can
// generate any block, and rank 0 the whole input for the reference.
double element(std::uint64_t matrix, std::uint64_t row, std::uint64_t col) {
  std::uint64_t x = matrix * 0x9E3779B97F4A7C15ull + row * 0xBF58476D1CE4E5B9ull + col * 0x94D049BB133111EBull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return double(x >> 11) * 0x1.0p-52 - 1.0;
}

// The ranks as a pr x pc grid, pr <= pc.
struct Grid {
  int pr = 1, pc = 1;
  explicit Grid(int ranks) {
    for (int d = 1; d * d <= ranks; ++d)
      if (ranks % d == 0) pr = d;
    pc = ranks / pr;
  }
  int c_owner(int i, int j) const { return (i % pr) * pc + j % pc; }
};

// The next product's owner of each of `blocks` C blocks (row-major) for ranks of these speeds:
// each block to the rank furthest below its share so far, so that every rank's blocks are
// spread over C (A's and B's blocks are spread too) and its count is within one of its share.
std::vector<int> owners_by_speed(int blocks, const std::vector<double>& speed) {
  double total = 0;
  for (double v : speed) total += v;
  std::vector<int> owner(std::size_t(blocks), 0), have(speed.size(), 0);
  for (int b = 0; b < blocks; ++b) {
    std::size_t best = 0;
    double most = -1e300;
    for (std::size_t r = 0; r < speed.size(); ++r) {
      const double deficit = speed[r] / total * (b + 1) - have[r];
      if (deficit > most) most = deficit, best = r;
    }
    owner[std::size_t(b)] = int(best);
    ++have[best];
  }
  return owner;
}


template <typename T>
struct Block {
  starpu_data_handle_t h = nullptr;
  // The owner's copy (pinned where the rank has a GPU); none elsewhere (StarPU allocates on demand).
  std::unique_ptr<apps::HostArray<T>> data;
};

// A column-major block of rows x cols starting at (row0, col0) of `matrix`, registered with
// StarPU and StarPU-MPI (tag, owner); filled only on its owner.
template <typename T>
void make_block(Block<T>& b, int matrix, int row0, int col0, int rows, int cols, bool fill, int tag, int owner,
                int rank) {
  if (owner == rank) {
    b.data = std::make_unique<apps::HostArray<T>>(std::size_t(rows) * std::size_t(cols), apps::kFoldedInSimulation);
    if (fill && !apps::kSimulated)  // simulation computes no data: the memory stays untouched
      for (int j = 0; j < cols; ++j)
        for (int i = 0; i < rows; ++i)
          b.data->p[std::size_t(i) + std::size_t(j) * std::size_t(rows)] =
              T(element(std::uint64_t(matrix), std::uint64_t(row0 + i), std::uint64_t(col0 + j)));
    starpu_matrix_data_register(&b.h, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(b.data->p), unsigned(rows),
                                unsigned(rows), unsigned(cols), sizeof(T));
  } else {
    starpu_matrix_data_register(&b.h, -1, 0, unsigned(rows), unsigned(rows), unsigned(cols), sizeof(T));
  }
  starpu_mpi_data_register(b.h, tag, owner);
}

// Its own codelet, not gemm's tile codelet: that one reads per-task arguments (beta, TF32, the
// report's counts) kept in the submitting process; each task here writes its whole C block
// (beta = 0) and carries no argument, so any rank can run it.
// A matrix buffer's rows, columns and leading dimension.
std::array<int, 3> dims(void* m) {
  return {int(STARPU_MATRIX_GET_NX(m)), int(STARPU_MATRIX_GET_NY(m)), int(STARPU_MATRIX_GET_LD(m))};
}

template <typename T>
void block_cpu(void* buffers[], void* /*arg*/) {
  const auto a = dims(buffers[0]), b = dims(buffers[1]), c = dims(buffers[2]);
  gemm::cpu::tile<T>(c[0], c[1], a[1], reinterpret_cast<const T*>(STARPU_MATRIX_GET_PTR(buffers[0])), a[2],
                     reinterpret_cast<const T*>(STARPU_MATRIX_GET_PTR(buffers[1])), b[2], T(0),
                     reinterpret_cast<T*>(STARPU_MATRIX_GET_PTR(buffers[2])), c[2]);
}

#ifdef FNNDTPS_HAVE_CUDA
// The same on a rank's GPU, through cuBLAS on the worker's stream, true FP32/FP64 (no TF32).
template <typename T>
void block_cuda(void* buffers[], void* /*arg*/) {
  const auto a = dims(buffers[0]), b = dims(buffers[1]), c = dims(buffers[2]);
  cublasHandle_t handle = starpu_cublas_get_local_handle();
  FNNDTPS_CUBLAS_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
  gemm::cuda::tile<T>(handle, c[0], c[1], a[1], reinterpret_cast<const T*>(STARPU_MATRIX_GET_PTR(buffers[0])), a[2],
                      reinterpret_cast<const T*>(STARPU_MATRIX_GET_PTR(buffers[1])), b[2], T(0),
                      reinterpret_cast<T*>(STARPU_MATRIX_GET_PTR(buffers[2])), c[2]);
}
#endif

// Simulation (DESIGN §8): the block codelet has no model calibrated on the GPU machine, so a
// block lasts its flops at the rate the platform's calibrated tile codelet (fnndtps_sgemm_tile,
// 1024-tiles) has on the same worker: the assumption, named wherever simulated gemm-mpi figures
// are quoted, that a product over the whole k runs at its 1024^3 tiles' rate. Rates in flops
// per us, by (worker type, device id), set before the first task; NaN where none (StarPU then
// names the codelet as uncalibrated).
std::vector<std::array<double, 3>>& simulated_rates() {  // type, devid, rate
  static std::vector<std::array<double, 3>> rates;
  return rates;
}

double simulated_block_us(starpu_task* task, starpu_perfmodel_arch* arch, unsigned /*nimpl*/) {
  for (const auto& r : simulated_rates())
    if (int(r[0]) == arch->devices[0].type && int(r[1]) == arch->devices[0].devid)
      return task->flops / r[2];
  return NAN;
}

// The tile codelet's rate on each of this rank's workers' kinds, from its best-sampled entry,
// and the block codelet's cost function for them (its model must be STARPU_PER_ARCH).
void simulate_blocks([[maybe_unused]] starpu_perfmodel& block) {
#ifdef STARPU_SIMGRID
  starpu_perfmodel tile{};
  if (starpu_perfmodel_load_symbol("fnndtps_sgemm_tile", &tile) != 0)
    throw UsageError("simulated gemm-mpi takes its blocks' durations from the platform's fnndtps_sgemm_tile model, "
                     "which StarPU cannot find (STARPU_PERF_MODEL_DIR, STARPU_HOSTNAME)");
  starpu_perfmodel_init(&block);
  for (unsigned w = 0; w < starpu_worker_get_count(); ++w) {
    starpu_perfmodel_arch* arch = starpu_worker_get_perf_archtype(int(w), STARPU_NMAX_SCHED_CTXS);
    const starpu_perfmodel_device& d = arch->devices[0];
    double rate = NAN;
    long most = 0;
    if (starpu_perfmodel_per_arch* pa = starpu_perfmodel_get_model_per_arch(&tile, arch, 0))
      for (starpu_perfmodel_history_list* l = pa->list; l; l = l->next)
        if (l->entry->nsample > most && l->entry->flops > 0 && l->entry->mean > 0)
          most = l->entry->nsample, rate = l->entry->flops / l->entry->mean;
    simulated_rates().push_back({double(d.type), double(d.devid), rate});
    starpu_perfmodel_set_per_devices_cost_function(&block, 0, simulated_block_us, d.type, d.devid, d.ncores, -1);
  }
  starpu_perfmodel_unload_model(&tile);
#endif
}

template <typename T>
starpu_perfmodel& block_model() {
  static starpu_perfmodel model = [] {
    starpu_perfmodel m{};
    m.type = apps::kSimulated ? STARPU_PER_ARCH : STARPU_HISTORY_BASED;
    m.symbol = sizeof(T) == 4 ? "fnndtps_sgemm_mpi_block" : "fnndtps_dgemm_mpi_block";
    return m;
  }();
  return model;
}

template <typename T>
starpu_codelet* block_codelet() {
  static starpu_codelet cl = [] {
    starpu_codelet c;
    starpu_codelet_init(&c);
    c.name = sizeof(T) == 4 ? "fnndtps_sgemm_mpi_block" : "fnndtps_dgemm_mpi_block";
    c.cpu_funcs[0] = block_cpu<T>;
#ifdef FNNDTPS_HAVE_CUDA
    c.cuda_funcs[0] = block_cuda<T>;
    c.cuda_flags[0] = STARPU_CUDA_ASYNC;
#elif defined(STARPU_SIMGRID)
    c.cuda_funcs[0] = codelets::simulated_only;
#endif
    c.nbuffers = 3;
    c.modes[0] = STARPU_R;
    c.modes[1] = STARPU_R;
    c.modes[2] = STARPU_W;
    c.model = &block_model<T>();
    return c;
  }();
  return &cl;
}


template <typename T>
int run(const Options& o) {
  apps::StarpuSession session("fnn-dtps", apps::mpi::init, apps::mpi::shutdown);
  int rank = 0, ranks = 1;
  starpu_mpi_comm_rank(MPI_COMM_WORLD, &rank);
  starpu_mpi_comm_size(MPI_COMM_WORLD, &ranks);
  // Rank 0 as seed 001's first class against rank 1, or by halves (every rank the same tree).
  apps::mpi::RankDtps dtps(ranks);
  std::vector<double> busy_before;
  long warm_ups = 0;  // this rank's policy's co-run warm-ups, as of the last product (all_warming)
  const Grid grid(ranks);
  const std::vector<int> rows = gemm::blocks(o.m, {o.tile}), cols = gemm::blocks(o.n, {o.tile});
  const int mt = int(rows.size()), nt = int(cols.size());
  std::vector<Block<T>> a(static_cast<std::size_t>(mt)), b(static_cast<std::size_t>(nt)),
      c(static_cast<std::size_t>(mt) * static_cast<std::size_t>(nt));
  for (int i = 0, r0 = 0; i < mt; r0 += rows[std::size_t(i)], ++i)
    make_block(a[std::size_t(i)], 0, r0, 0, rows[std::size_t(i)], o.k, true, i, i % ranks, rank);
  for (int j = 0, c0 = 0; j < nt; c0 += cols[std::size_t(j)], ++j)
    make_block(b[std::size_t(j)], 1, 0, c0, o.k, cols[std::size_t(j)], true, mt + j, j % ranks, rank);
  for (int i = 0; i < mt; ++i)
    for (int j = 0; j < nt; ++j)
      make_block(c[std::size_t(i * nt + j)], 2, 0, 0, rows[std::size_t(i)], cols[std::size_t(j)], false,
                 mt + nt + i * nt + j, grid.c_owner(i, j), rank);
  if (rank == 0)
    std::printf("gemm-mpi: %s %d x %d x %d, tile %d (%d x %d blocks), %d ranks as %d x %d, policy %s, %u CPU + %u CUDA "
                "workers on rank 0\n",
                o.single ? "float" : "double", o.m, o.n, o.k, o.tile, mt, nt, ranks, grid.pr, grid.pc,
                session.policy().c_str(), session.cpu_workers(), session.cuda_workers());
  if (apps::kSimulated) {
    simulate_blocks(block_model<T>());
    starpu_malloc_on_node_set_default_flags(STARPU_MAIN_RAM,
                                            STARPU_MALLOC_PINNED | STARPU_MALLOC_COUNT | apps::kFoldedInSimulation);
  }
  starpu_codelet* cl = block_codelet<T>();
  if (session.cuda_workers() > 0) starpu_cublas_init();
  std::vector<double> times;
  std::vector<apps::mpi::RankSpeed> speeds(static_cast<std::size_t>(ranks));
  std::vector<int> owner(std::size_t(mt) * std::size_t(nt));
  for (int i = 0; i < mt; ++i)
    for (int j = 0; j < nt; ++j) owner[std::size_t(i * nt + j)] = grid.c_owner(i, j);
  long mine = 0;
  for (int it = 0; it < o.iter; ++it) {
    mine = 0;
    starpu_mpi_barrier(MPI_COMM_WORLD);
    const double t0 = starpu_timing_now();
    for (int i = 0; i < mt; ++i)
      for (int j = 0; j < nt; ++j) {
        const double flops = 2.0 * rows[std::size_t(i)] * cols[std::size_t(j)] * o.k;
        const int rc = starpu_mpi_task_insert(MPI_COMM_WORLD, cl, STARPU_R, a[std::size_t(i)].h, STARPU_R,
                                              b[std::size_t(j)].h, STARPU_W, c[std::size_t(i * nt + j)].h,
                                              STARPU_FLOPS, flops, 0);
        if (rc != 0) throw std::runtime_error("starpu_mpi_task_insert failed: " + std::string(std::strerror(-rc)));
        mine += owner[std::size_t(i * nt + j)] == rank;
      }
    starpu_mpi_wait_for_all(MPI_COMM_WORLD);
    starpu_mpi_barrier(MPI_COMM_WORLD);
    times.push_back((starpu_timing_now() - t0) / 1e3);
    if (ranks > 1) session.end_job(NAN);  // this rank's batch: to its last task, not the others' or the barrier
    else session.end_job();
    if (rank == 0)
      std::printf("iteration %d: %.3f ms, %.2f GFLOP/s\n", it, times.back(),
                  2.0 * o.m * double(o.n) * o.k / (times.back() * 1e6));
    // The next product's shares (every rank computes the same owners from the same numbers).
    speeds = apps::mpi::all_rank_speeds(speeds);
    const bool known = apps::mpi::all_known(speeds);
    if (o.shares == Options::Shares::Model && known && it + 1 < o.iter) {
      const std::vector<int> count = apps::mpi::items_by_finish(mt * nt, speeds);
      owner = owners_by_speed(mt * nt, std::vector<double>(count.begin(), count.end()));
    }
    if (o.shares == Options::Shares::Dtps) {
      // Each rank's time: its busiest worker's time in the block codelet during this product.
      const std::vector<double> busy = apps::mpi::worker_busy_ms();
      double mine_ms = 0;
      for (std::size_t w = 0; w < busy.size(); ++w)
        mine_ms = std::max(mine_ms, busy[w] - (w < busy_before.size() ? busy_before[w] : 0.0));
      busy_before = busy;
      const std::vector<double> t = apps::mpi::all_gather({mine_ms});
      const std::vector<bool> warming = apps::mpi::all_warming(warm_ups);
      std::vector<double> work(t.size(), 0.0);  // each rank's flops / 2k
      for (int i = 0; i < mt; ++i)
        for (int j = 0; j < nt; ++j)
          work[std::size_t(owner[std::size_t(i * nt + j)])] += double(rows[std::size_t(i)]) * cols[std::size_t(j)];
      using Dtps = apps::mpi::RankDtps;
      for (const Dtps::NodeRound& u : dtps.end_round(t, work, NAN, warming)) {  // seed 001 §1.3 at each node
        if (rank != 0) continue;
        const std::string node = dtps.prefix(u), first = Dtps::group(u.lo, u.mid), second = Dtps::group(u.mid, u.hi);
        if (u.warming)
          std::printf("dtps: %sa rank's policy warmed up a co-run, %s's share %.3f kept\n", node.c_str(), first.c_str(),
                      u.share_after);
        else if (u.skipped)
          std::printf("dtps: %sno blocks, %s's share %.3f kept\n", node.c_str(), first.c_str(), u.share_after);
        else
          std::printf("dtps: %s%s %.3f ms, %s %.3f ms, m %.3f (%s), %s's share %.3f -> %.3f\n", node.c_str(),
                      first.c_str(), u.t_first, second.c_str(), u.t_second, u.update.m_before,
                      Dtps::case_name(u).c_str(), first.c_str(), u.share_before, u.share_after);
      }
      if (it + 1 < o.iter) owner = owners_by_speed(mt * nt, dtps.shares());
    }
    for (std::size_t x = 0; x < owner.size(); ++x)
      if (starpu_mpi_data_get_rank(c[x].h) != owner[x]) starpu_mpi_data_set_rank(c[x].h, owner[x]);
  }
  // Each rank's blocks in the last product and its speed, in rank order.
  double total_speed = 0;
  for (const auto& v : speeds) total_speed += std::isfinite(v.total) ? v.total : 0;
  for (int r = 0; r < ranks; ++r) {
    if (r == rank)
      std::printf("rank %d: %ld of %ld blocks, speed %.4g GFLOP/s (share %.3f), %u CPU + %u CUDA workers\n", rank,
                  mine, long(mt) * nt, speeds[std::size_t(rank)].total * 1e-3,
                  total_speed > 0 ? speeds[std::size_t(rank)].total / total_speed : NAN, session.cpu_workers(),
                  session.cuda_workers());
    std::fflush(stdout);
    starpu_mpi_barrier(MPI_COMM_WORLD);
  }
  int status = 0;
  if (o.check) {
    for (auto& blk : c) starpu_mpi_get_data_on_node(MPI_COMM_WORLD, blk.h, 0);
    if (rank == 0) {
      std::vector<T> fa(std::size_t(o.m) * o.k), fb(std::size_t(o.k) * o.n);
      for (int j = 0; j < o.k; ++j)
        for (int i = 0; i < o.m; ++i) fa[std::size_t(i) + std::size_t(j) * o.m] = T(element(0, std::uint64_t(i), std::uint64_t(j)));
      for (int j = 0; j < o.n; ++j)
        for (int i = 0; i < o.k; ++i) fb[std::size_t(i) + std::size_t(j) * o.k] = T(element(1, std::uint64_t(i), std::uint64_t(j)));
      std::vector<double> ref(std::size_t(o.m) * o.n);
      gemm::ref::tile<T>(o.m, o.n, o.k, fa.data(), o.m, fb.data(), o.k, 0.0, ref.data(), o.m);
      double worst = 0, scale = 0;
      for (int i = 0, r0 = 0; i < mt; r0 += rows[std::size_t(i)], ++i)
        for (int j = 0, c0 = 0; j < nt; c0 += cols[std::size_t(j)], ++j) {
          starpu_data_handle_t h = c[std::size_t(i * nt + j)].h;
          starpu_data_acquire(h, STARPU_R);
          const T* p = reinterpret_cast<const T*>(starpu_matrix_get_local_ptr(h));
          const unsigned ld = starpu_matrix_get_local_ld(h);
          for (int y = 0; y < cols[std::size_t(j)]; ++y)
            for (int x = 0; x < rows[std::size_t(i)]; ++x) {
              const double want = ref[std::size_t(r0 + x) + std::size_t(c0 + y) * o.m];
              worst = std::max(worst, std::fabs(double(p[std::size_t(x) + std::size_t(y) * ld]) - want));
              scale = std::max(scale, std::fabs(want));
            }
          starpu_data_release(h);
        }
      const double err = scale > 0 ? worst / scale : worst, tol = o.single ? 1e-5 : 1e-12;
      std::printf("check: max relative error %.3g (tolerance %.0e): %s\n", err, tol, err <= tol ? "ok" : "FAILED");
      status = err <= tol ? 0 : 1;
    }
    std::vector<double> s{double(status)};
    apps::mpi::broadcast(s);
    status = int(s[0]);
  }
  if (rank == 0) {
    std::vector<double> sorted(times.begin() + (times.size() > 1 ? 1 : 0), times.end());
    std::sort(sorted.begin(), sorted.end());
    const double med = sorted[sorted.size() / 2];
    std::printf("RESULT gemm-mpi precision=%s m=%d n=%d k=%d tile=%d ranks=%d policy=%s median_ms=%.3f gflops=%.2f\n",
                o.single ? "s" : "d", o.m, o.n, o.k, o.tile, ranks, session.policy().c_str(), med,
                2.0 * o.m * double(o.n) * o.k / (med * 1e6));
  }
  for (auto* set : {&a, &b, &c})
    for (auto& blk : *set) starpu_data_unregister(blk.h);
  if (session.cuda_workers() > 0) starpu_cublas_shutdown();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  apps::mpi::keep_args(&argc, &argv);
  // Usage and usage errors from rank 0 alone: every rank parses the same command line.
  return apps::run_main({"gemm-mpi", kUsage, apps::mpi::is_rank_zero(), apps::mpi::exit_status}, argc, argv, [&] {
    const Options o = parse(argc, argv);
    openblas_set_num_threads(1);
    return o.single ? run<float>(o) : run<double>(o);
  });
}
