#include "codelets/lwt_tasks.hpp"

#include <algorithm>
#include <starpu.h>
#include <starpu_profiling.h>
#ifdef FNNDTPS_HAVE_MPI
#include <mpi.h>
#include <starpu_mpi.h>
#endif

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>

#include "codelets/lifting.hpp"
#include "codelets/simulated.hpp"
#ifdef FNNDTPS_HAVE_CUDA
#include "codelets/cuda/lifting_cuda.hpp"
#endif

#define LWT_STARPU_CHECK(call)                                                                \
  do {                                                                                        \
    const int rc_ = (call);                                                                   \
    if (rc_ != 0) {                                                                           \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,               \
                   std::strerror(-rc_));                                                      \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)

namespace lwt {
namespace {

// One codelet per operation, so each has its own performance model.
enum Op : int {
  kHFwd,        // fused horizontal forward: src -> B, writes forward halos
  kVFwd,        // fused vertical forward: B + halos -> C
  kInvCopy,     // C -> B, writes inverse halos of the coarsest level
  kVInv,        // fused vertical inverse: B + halos -> S
  kHInv,        // fused horizontal inverse: S -> B (or the image), writes next halos
  kHSplit,      // steps: split rows src -> B
  kHLift,       // steps: one step on rows in place
  kHaloCopy,    // steps: write halos from a unit
  kVGather,     // steps: B + halos -> window
  kVLift,       // steps: one step on the window's columns
  kVScatter,    // steps: window -> C
  kVGatherInv,  // steps: B + halos -> window
  kVScatterInv, // steps: window -> S
  kHMerge,      // steps: merge rows S -> B (or the image)
  kNumOps
};
const char* const kOpNames[kNumOps] = {
    "lwt_h_fwd",  "lwt_v_fwd",    "lwt_inv_copy",    "lwt_v_inv",      "lwt_h_inv",
    "lwt_h_split", "lwt_h_lift",  "lwt_halo",        "lwt_v_gather",   "lwt_v_lift",
    "lwt_v_scatter", "lwt_v_gather_inv", "lwt_v_scatter_inv", "lwt_h_merge"};

// Task arguments: the level region (h rows x w columns of the unit), the halos present,
// the step, and for halo writers the region the halos come from.
struct Args {
  int op, unit, h, w, above, below, step, dir, halo_h, halo_w;
  int image_w;  // the image's width: the row stride of the strips (footprint)
  int level;    // the decomposition level the task works at, 1 the finest (traces only)
  int levels;   // kInvCopy: the transform's levels
  LevelSet drop;  // kInvCopy: the levels it zeroes (a band's inverse), 0 for none
};

struct Matrix {
  float* p;
  int ld, nx, ny;
};
Matrix matrix(void* buffer) {
  return {reinterpret_cast<float*>(STARPU_MATRIX_GET_PTR(buffer)), int(STARPU_MATRIX_GET_LD(buffer)),
          int(STARPU_MATRIX_GET_NX(buffer)), int(STARPU_MATRIX_GET_NY(buffer))};
}

// Distinct units per worker for the report. Written from codelets, read after the wait.
std::mutex stats_mutex;
std::array<std::set<int>, STARPU_NMAXWORKERS> units_seen;
void note_unit(int unit) {
  const int id = starpu_worker_get_id();
  if (id < 0) return;
  std::lock_guard<std::mutex> lock(stats_mutex);
  units_seen[id].insert(unit);
}

// Each backend is an object whose members forward to lwt::cpu or lwt::cuda (adding the
// worker's stream), so one dispatch serves both.
#define LWT_CPU_FORWARD(fn) \
  template <typename... A>  \
  void fn(A... a) const {   \
    cpu::fn<float>(a...);   \
  }
struct CpuBackend {
  LWT_CPU_FORWARD(rows_forward) LWT_CPU_FORWARD(rows_inverse) LWT_CPU_FORWARD(cols_forward)
  LWT_CPU_FORWARD(cols_inverse) LWT_CPU_FORWARD(rows_split) LWT_CPU_FORWARD(rows_merge)
  LWT_CPU_FORWARD(rows_lift) LWT_CPU_FORWARD(cols_gather) LWT_CPU_FORWARD(cols_lift)
  LWT_CPU_FORWARD(cols_scatter) LWT_CPU_FORWARD(cols_gather_inverse)
  LWT_CPU_FORWARD(cols_scatter_inverse) LWT_CPU_FORWARD(write_halos) LWT_CPU_FORWARD(copy_levels)
  void copy(const float* in, int ld_in, float* out, int ld_out, int rows, int n) const {
    for (int r = 0; r < rows; ++r)
      std::memcpy(out + std::ptrdiff_t(r) * ld_out, in + std::ptrdiff_t(r) * ld_in, sizeof(float) * std::size_t(n));
  }
};
#undef LWT_CPU_FORWARD

#ifdef FNNDTPS_HAVE_CUDA
#define LWT_CUDA_FORWARD(fn)        \
  template <typename... A>          \
  void fn(A... a) const {           \
    cuda::fn<float>(a..., stream);  \
  }
struct CudaBackend {
  cudaStream_t stream;
  LWT_CUDA_FORWARD(rows_forward) LWT_CUDA_FORWARD(rows_inverse) LWT_CUDA_FORWARD(cols_forward)
  LWT_CUDA_FORWARD(cols_inverse) LWT_CUDA_FORWARD(rows_split) LWT_CUDA_FORWARD(rows_merge)
  LWT_CUDA_FORWARD(rows_lift) LWT_CUDA_FORWARD(cols_gather) LWT_CUDA_FORWARD(cols_lift)
  LWT_CUDA_FORWARD(cols_scatter) LWT_CUDA_FORWARD(cols_gather_inverse)
  LWT_CUDA_FORWARD(cols_scatter_inverse) LWT_CUDA_FORWARD(write_halos) LWT_CUDA_FORWARD(copy_levels)
  void copy(const float* in, int ld_in, float* out, int ld_out, int rows, int n) const {
    const cudaError_t e = cudaMemcpy2DAsync(out, sizeof(float) * std::size_t(ld_out), in,
                                            sizeof(float) * std::size_t(ld_in), sizeof(float) * std::size_t(n),
                                            std::size_t(rows), cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess) {
      std::fprintf(stderr, "%s:%d: cudaMemcpy2DAsync: %s\n", __FILE__, __LINE__, cudaGetErrorName(e));
      std::abort();
    }
  }
};
#undef LWT_CUDA_FORWARD
#endif

template <typename Backend>
void run(void* buffers[], const Args& a, const Backend& be) {
  const Step step = Step(a.step);
  const Direction dir = Direction(a.dir);
  switch (a.op) {
    case kHFwd: {
      const Matrix src = matrix(buffers[0]), b = matrix(buffers[1]);
      be.rows_forward(src.p, src.ld, b.p, b.ld, a.h, a.w);
      int i = 2;
      float* top = a.above ? matrix(buffers[i++]).p : nullptr;
      float* bot = a.below ? matrix(buffers[i++]).p : nullptr;
      if (top || bot) be.write_halos(b.p, b.ld, a.h, a.w, Direction::Forward, top, bot, a.w);
      break;
    }
    case kVFwd:
    case kVInv:
    case kVGather:
    case kVGatherInv: {
      const Matrix in = matrix(buffers[0]), out = matrix(buffers[1]);
      int i = 2;
      const float* above = a.above ? matrix(buffers[i++]).p : nullptr;
      const float* below = a.below ? matrix(buffers[i++]).p : nullptr;
      if (a.op == kVFwd)
        be.cols_forward(in.p, in.ld, a.h, a.w, above, below, a.w, out.p, out.ld);
      else if (a.op == kVInv)
        be.cols_inverse(in.p, in.ld, a.h, a.w, above, below, a.w, out.p, out.ld);
      else if (a.op == kVGather)
        be.cols_gather(in.p, in.ld, a.h, a.w, above, below, a.w, out.p, out.ld);
      else
        be.cols_gather_inverse(in.p, in.ld, a.h, a.w, above, below, a.w, out.p, out.ld);
      break;
    }
    case kInvCopy:
    case kHInv:
    case kHMerge:
    case kHaloCopy: {
      const Matrix in = matrix(buffers[0]);
      int i = 1;
      Matrix dst = in;
      if (a.op != kHaloCopy) dst = matrix(buffers[i++]);
      if (a.op == kInvCopy && a.drop) be.copy_levels(in.p, in.ld, dst.p, dst.ld, a.h, a.w, a.levels, ~a.drop);
      else if (a.op == kInvCopy) be.copy(in.p, in.ld, dst.p, dst.ld, a.h, a.w);
      if (a.op == kHInv) be.rows_inverse(in.p, in.ld, dst.p, dst.ld, a.h, a.w);
      if (a.op == kHMerge) be.rows_merge(in.p, in.ld, dst.p, dst.ld, a.h, a.w);
      float* top = a.above ? matrix(buffers[i++]).p : nullptr;
      float* bot = a.below ? matrix(buffers[i++]).p : nullptr;
      const Direction layout = a.op == kHaloCopy ? dir : Direction::Inverse;
      if (top || bot)
        be.write_halos(dst.p, dst.ld, a.halo_h, a.halo_w, layout, top, bot, a.halo_w);
      break;
    }
    case kHSplit: {
      const Matrix src = matrix(buffers[0]), b = matrix(buffers[1]);
      be.rows_split(src.p, src.ld, b.p, b.ld, a.h, a.w);
      break;
    }
    case kHLift: {
      const Matrix m = matrix(buffers[0]);
      be.rows_lift(m.p, m.ld, a.h, a.w, step, dir);
      break;
    }
    case kVLift: {
      const Matrix m = matrix(buffers[0]);
      be.cols_lift(m.p, m.ld, cpu::window_rows(a.h, a.above, a.below), a.w, step, dir);
      break;
    }
    case kVScatter:
    case kVScatterInv: {
      const Matrix win = matrix(buffers[0]), out = matrix(buffers[1]);
      if (a.op == kVScatter)
        be.cols_scatter(win.p, win.ld, a.h, a.w, a.above, a.below, out.p, out.ld);
      else
        be.cols_scatter_inverse(win.p, win.ld, a.h, a.w, a.above, a.below, out.p, out.ld);
      break;
    }
    default:
      std::fprintf(stderr, "lwt: unknown task operation %d\n", a.op);
      std::abort();
  }
}


void cpu_func(void* buffers[], void* cl_arg) {
  const Args& a = *static_cast<const Args*>(cl_arg);
  note_unit(a.unit);
  run(buffers, a, CpuBackend{});
}

#ifdef FNNDTPS_HAVE_CUDA
void cuda_func(void* buffers[], void* cl_arg) {
  const Args& a = *static_cast<const Args*>(cl_arg);
  note_unit(a.unit);
  run(buffers, a, CudaBackend{starpu_cuda_get_local_stream()});
}
#endif

// History-based models keyed by the work, not the handles: one unit handle serves every
// level, so the footprint hashes the operation, region and step, and the image's width (a
// region of one shape costs a GPU differently when its rows lie further apart).
uint32_t footprint(struct starpu_task* task) {
  const Args& a = *static_cast<const Args*>(task->cl_arg);
  const int key[7] = {a.op, a.h, a.w, a.step, a.dir, a.above * 2 + a.below, a.image_w};
  return starpu_hash_crc32c_be_n(key, sizeof key, 0);
}

// What a task touches at its level (the cost model's work, StarPU's size): its region of the
// unit, whose every level shares one handle.
size_t region_bytes(struct starpu_task* task, unsigned /*nimpl*/) {
  const Args& a = *static_cast<const Args*>(task->cl_arg);
  return size_t(a.h) * size_t(a.w) * sizeof(float);
}

struct Codelets {
  std::array<starpu_perfmodel, kNumOps> models{};
  std::array<starpu_codelet, kNumOps> cl{};
  Codelets() {
    for (int op = 0; op < kNumOps; ++op) {
      starpu_perfmodel& m = models[op];
      m.type = STARPU_HISTORY_BASED;
      m.symbol = kOpNames[op];
      m.footprint = footprint;
      m.size_base = region_bytes;
      starpu_codelet& c = cl[op];
      starpu_codelet_init(&c);
      c.name = kOpNames[op];
      c.cpu_funcs[0] = cpu_func;
      c.cpu_funcs_name[0] = "lwt_cpu_func";
#if defined(FNNDTPS_HAVE_CUDA)
      c.cuda_funcs[0] = cuda_func;
      c.cuda_flags[0] = STARPU_CUDA_ASYNC;
#elif defined(STARPU_SIMGRID)
      c.cuda_funcs[0] = codelets::simulated_only;
#endif
      c.nbuffers = STARPU_VARIABLE_NBUFFERS;
      c.model = &m;
      codelets::perturb_in_simulation(c);
    }
  }
};
Codelets& codelets() {
  static Codelets instance;
  return instance;
}

// Where a transform's data lives across the ranks of an MPI job (StarPU-MPI, DESIGN §11; seed
// 002's layout): unit k and everything it writes on rank k R / U, so that only halos between
// neighbouring units of different ranks cross; the caller's input and output on rank 0. One
// process (no MPI, or a build without it): rank 0 of 1, and nothing below changes a thing.
struct Ranks {
  int rank = 0, size = 1;
  long next_tag = 0;  // StarPU-MPI's tag of the next handle registered in this transform
  int of_unit(int k, int units) const {
    if (std::size_t(units) == chosen.size()) return chosen[std::size_t(k)];
    return int(static_cast<long long>(k) * size / units);
  }
  static std::vector<int> chosen;  // set_unit_ranks()
  static bool local_input;          // set_local_input()
  static bool gather_output;        // set_gather_output()
};
std::vector<int> Ranks::chosen;
bool Ranks::local_input = false;
bool Ranks::gather_output = true;
Ranks ranks;
// When each unit's output reached rank 0, or was complete on its rank, in the last transform
// across ranks (unit_home_us()).
std::vector<double> home_us;

// Called at the start of each transform.
void find_ranks() {
  ranks = Ranks{};
  home_us.clear();
#ifdef FNNDTPS_HAVE_MPI
  int mpi = 1;  // under SMPI only MPI programs are built, and their thread is not an MPI process
#ifndef STARPU_SIMGRID
  MPI_Initialized(&mpi);
#endif
  if (mpi) {
    starpu_mpi_comm_rank(MPI_COMM_WORLD, &ranks.rank);
    starpu_mpi_comm_size(MPI_COMM_WORLD, &ranks.size);
  }
#endif
}

// Registers `h` with StarPU-MPI as owned by `owner`.
starpu_data_handle_t on_rank([[maybe_unused]] starpu_data_handle_t h, [[maybe_unused]] int owner) {
#ifdef FNNDTPS_HAVE_MPI
  if (ranks.size > 1) starpu_mpi_data_register(h, ranks.next_tag++, owner);
#endif
  return h;
}

starpu_data_handle_t register_rows(const float* base, int ld, int cols, int rows) {
  starpu_data_handle_t h;
  starpu_matrix_data_register(&h, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(base), uint32_t(ld),
                              uint32_t(cols), uint32_t(rows), sizeof(float));
  return h;
}
starpu_data_handle_t register_temp(int cols, int rows) {
  starpu_data_handle_t h;
  starpu_matrix_data_register(&h, -1, 0, uint32_t(cols), uint32_t(cols), uint32_t(rows), sizeof(float));
  return h;
}

// Builds and submits one task: handles with their access modes, in codelet order, at a
// priority (unit_priority).
class Submit {
 public:
  Submit(int op, Args a, int priority) : op_(op), args_(a), priority_(priority) { args_.op = op; }
  Submit& data(starpu_data_handle_t h, starpu_data_access_mode mode) {
    descr_[n_].handle = h;
    descr_[n_].mode = mode;
    ++n_;
    return *this;
  }
  Submit& data_if(bool present, starpu_data_handle_t h, starpu_data_access_mode mode) {
    return present ? data(h, mode) : *this;
  }
  void go() {
#ifdef FNNDTPS_HAVE_MPI
    if (ranks.size > 1) {
      // StarPU-MPI runs the task on the rank owning the data it writes; the other ranks only
      // send or receive: the arguments stay in the transform's pool, freed after its wait.
      mpi_args.push_back(args_);
      LWT_STARPU_CHECK(starpu_mpi_task_insert(MPI_COMM_WORLD, &codelets().cl[op_], STARPU_DATA_MODE_ARRAY, descr_,
                                              n_, STARPU_CL_ARGS_NFREE, &mpi_args.back(), sizeof(Args),
                                              STARPU_NAME, kOpNames[op_], STARPU_PRIORITY, priority_, 0));
      return;
    }
#endif
    // STARPU_CL_ARGS hands the block to the task, which frees it when it ends.
    Args* arg = static_cast<Args*>(std::malloc(sizeof(Args)));
    *arg = args_;
    LWT_STARPU_CHECK(starpu_task_insert(&codelets().cl[op_], STARPU_DATA_MODE_ARRAY, descr_, n_,
                                        STARPU_CL_ARGS, arg, sizeof(Args), STARPU_NAME,
                                        kOpNames[op_], STARPU_PRIORITY, priority_, 0));
  }
  static std::deque<Args> mpi_args;  // a deque keeps its elements in place as it grows

 private:
  int op_;
  Args args_;
  starpu_data_descr descr_[8];
  int n_ = 0;
  int priority_;
};
std::deque<Args> Submit::mpi_args;

}  // namespace

void set_unit_ranks(const std::vector<int>& owner) { Ranks::chosen = owner; }
void set_local_input(bool local) { Ranks::local_input = local; }
void set_gather_output(bool gather) { Ranks::gather_output = gather; }
const std::vector<double>& unit_home_us() { return home_us; }

void describe_task(const starpu_task* task, int* unit, int* level) {
  const auto& cl = codelets().cl;
  if (task->cl < cl.data() || task->cl >= cl.data() + cl.size() || !task->cl_arg) return;
  const Args& a = *static_cast<const Args*>(task->cl_arg);
  *unit = a.unit;
  *level = a.level;
}

Pipeline parse_pipeline(const std::string& name) {
  if (name == "fused") return Pipeline::Fused;
  if (name == "steps") return Pipeline::Steps;
  throw PlanError("unknown pipeline '" + name + "': use 'fused' or 'steps'");
}
const char* pipeline_name(Pipeline p) { return p == Pipeline::Fused ? "fused" : "steps"; }

namespace {

#ifdef FNNDTPS_HAVE_MPI
// A rank's record of units' outputs arriving (rank 0's, gathered: every unit's) or complete
// (each rank's own): a read of each, acquired once its receive or its last writer is done,
// notes the time and releases. Units not watched stay at 0.
struct Arrivals {
  struct Unit {
    Arrivals* all;
    double us;
    starpu_data_handle_t h;
  };
  explicit Arrivals(std::size_t n) : unit(n, Unit{this, 0.0, nullptr}) {
    STARPU_PTHREAD_MUTEX_INIT(&m, NULL);
    STARPU_PTHREAD_COND_INIT(&cv, NULL);
  }
  ~Arrivals() {
    STARPU_PTHREAD_COND_DESTROY(&cv);
    STARPU_PTHREAD_MUTEX_DESTROY(&m);
  }
  void watch(std::size_t k, starpu_data_handle_t h) {
    unit[k].h = h;
    ++watched;  // before the acquire: its callback may run at once
    starpu_data_acquire_cb(h, STARPU_R, arrived, &unit[k]);
  }
  static void arrived(void* arg) {  // a StarPU callback: StarPU's locks
    auto* u = static_cast<Unit*>(arg);
    u->us = starpu_timing_now();
    starpu_data_release(u->h);
    STARPU_PTHREAD_MUTEX_LOCK(&u->all->m);
    ++u->all->done;
    STARPU_PTHREAD_COND_SIGNAL(&u->all->cv);
    STARPU_PTHREAD_MUTEX_UNLOCK(&u->all->m);
  }
  std::vector<double> wait() {
    STARPU_PTHREAD_MUTEX_LOCK(&m);
    while (done < watched) STARPU_PTHREAD_COND_WAIT(&cv, &m);
    STARPU_PTHREAD_MUTEX_UNLOCK(&m);
    std::vector<double> us;
    for (const Unit& u : unit) us.push_back(u.us);
    return us;
  }
  std::vector<Unit> unit;
  starpu_pthread_mutex_t m;
  starpu_pthread_cond_t cv;
  std::size_t done = 0, watched = 0;  // done under m; watched by the submitting thread only
};
#endif

// The handles of one transform: per unit, the caller's input and output strips, the work
// strips B and S, the steps pipeline's window, and per level the halos each unit writes.
struct Handles {
  const Plan& plan;
  std::vector<starpu_data_handle_t> in, out, b, s, win;
  std::vector<std::vector<starpu_data_handle_t>> top, bot;  // [level][unit]

  // Across ranks (Ranks), src and dst are rank 0's (src each unit's rank's under
  // set_local_input, dst each unit's rank's unless gathered): the others register those strips
  // without memory; each unit's output is computed on its rank, and gathered on rank 0 by wait()
  // under set_gather_output.
  Handles(const Plan& p, const float* src, float* dst, bool need_s, bool need_win) : plan(p) {
    const int U = p.units(), W = p.width();
    for (int k = 0; k < U; ++k) {
      const std::size_t row0 = std::size_t(p.unit_row0(0, k)) * std::size_t(W);
      const int h = p.unit_rows(0, k), owner = ranks.of_unit(k, U);
      const int source = Ranks::local_input ? owner : 0, home = Ranks::gather_output ? 0 : owner;
      in.push_back(on_rank(ranks.rank == source ? register_rows(src + row0, W, W, h) : register_temp(W, h), source));
      out.push_back(on_rank(ranks.rank == home ? register_rows(dst + row0, W, W, h) : register_temp(W, h), owner));
      b.push_back(on_rank(register_temp(W, h), owner));
      if (need_s) s.push_back(on_rank(register_temp(W, h), owner));
      if (need_win) win.push_back(on_rank(register_temp(W, cpu::window_rows(h, true, true)), owner));
    }
    top.resize(p.levels());
    bot.resize(p.levels());
    for (int l = 0; l < p.levels(); ++l)
      for (int k = 0; k < U; ++k) {
        const int owner = ranks.of_unit(k, U);
        top[l].push_back(p.has_above(k) ? on_rank(register_temp(p.cols(l), kHalo), owner) : nullptr);
        bot[l].push_back(p.has_below(k) ? on_rank(register_temp(p.cols(l), kHalo), owner) : nullptr);
      }
  }
  // Waits for the transform's tasks; across ranks, gathered, also brings every unit's output to
  // rank 0, each as soon as its last writer ends (the sends wait on the data, not on this call),
  // and notes on rank 0 when each one arrived; not gathered, notes on each rank when its own
  // units' outputs were complete (unit_home_us()).
  void wait() {
#ifdef FNNDTPS_HAVE_MPI
    if (ranks.size > 1) {
      const bool gather = Ranks::gather_output;
      if (gather)
        for (starpu_data_handle_t h : out) starpu_mpi_get_data_on_node_detached(MPI_COMM_WORLD, h, 0, nullptr, nullptr);
      Arrivals arrivals(out.size());
      for (std::size_t k = 0; k < out.size(); ++k)  // sequential consistency: after the receive or last writer
        if (gather ? ranks.rank == 0 : ranks.of_unit(int(k), int(out.size())) == ranks.rank) arrivals.watch(k, out[k]);
      starpu_mpi_wait_for_all(MPI_COMM_WORLD);
      if (ranks.rank == 0 || !gather) home_us = arrivals.wait();
      Submit::mpi_args.clear();
      return;
    }
#endif
    starpu_task_wait_for_all();
  }
  ~Handles() {
    for (auto* v : {&in, &out, &b, &s, &win})
      for (starpu_data_handle_t h : *v) starpu_data_unregister(h);
    for (auto* v : {&top, &bot})
      for (auto& level : *v)
        for (starpu_data_handle_t h : level)
          if (h) starpu_data_unregister(h);
  }
  // Unit k's work strips hold nothing its later tasks read: once the tasks submitted so far
  // end, their buffers go back to StarPU's allocation cache, where the next unit's strips of
  // the same shape find them, so that only the units in flight hold work memory. Not across
  // ranks: there the simulated (SMPI) job stopped repeating itself to the microsecond.
  void done_with(int k) {
    const auto i = std::size_t(k);
    if (ranks.size > 1) return;
    for (auto* v : {&b, &s, &win})
      if (i < v->size()) starpu_data_invalidate_submit((*v)[i]);
  }
  // Halos a unit reads: its upper neighbour's bottom rows and its lower neighbour's top.
  starpu_data_handle_t above(int l, int k) const { return k > 0 ? bot[l][k - 1] : nullptr; }
  starpu_data_handle_t below(int l, int k) const { return k + 1 < plan.units() ? top[l][k + 1] : nullptr; }
};

Args region(const Plan& p, int l, int k) {
  Args a{};
  a.unit = k;
  a.level = l + 1;
  a.h = p.unit_rows(l, k);
  a.w = p.cols(l);
  a.image_w = p.width();
  a.above = p.has_above(k);
  a.below = p.has_below(k);
  return a;
}

void begin_stats() {
  for (auto& s : units_seen) s.clear();
  starpu_profiling_status_set(STARPU_PROFILING_ENABLE);
  for (unsigned w = 0; w < starpu_worker_get_count(); ++w) {
    starpu_profiling_worker_info info;
    starpu_profiling_worker_get_info(int(w), &info);  // resets the counters
  }
}

void end_stats(std::vector<WorkerStats>* stats) {
  if (!stats) return;
  stats->clear();
  for (unsigned w = 0; w < starpu_worker_get_count(); ++w) {
    starpu_profiling_worker_info info;
    starpu_profiling_worker_get_info(int(w), &info);
    WorkerStats ws;
    char name[64];
    starpu_worker_get_name(int(w), name, sizeof name);
    ws.name = name;
    ws.tasks = unsigned(info.executed_tasks);
    ws.busy_ms = double(info.executing_time.tv_sec) * 1e3 + double(info.executing_time.tv_nsec) * 1e-6;
    ws.units = unsigned(units_seen[w].size());
    stats->push_back(ws);
  }
}

}  // namespace

// A task's priority in a transform: later wavefront stages first. Among ready tasks a worker
// then carries its units to their last level before it starts another unit's first, so units
// end, and their outputs go home, all through the transform instead of together at its end.
// (Ranking a stage's readers above its writers too was slower on the simulated h200x4.)
int stage_priority(int stage) { return stage; }

// Across ranks, the tasks of a unit within `levels` units of another rank's come before every
// other: each level's vertical pass reads the neighbours' horizontal pass of that level, so the
// neighbouring rank's edge units wait on these level after level. By the wavefront alone a
// rank would reach its last units last, and hold the rank after it until then.
int unit_priority(int stage, int k, int units, int levels) {
  if (ranks.size == 1) return stage_priority(stage);
  const int r = ranks.of_unit(k, units);
  const bool edge = ranks.of_unit(std::max(0, k - levels), units) != r ||
                    ranks.of_unit(std::min(units - 1, k + levels), units) != r;  // a rank's units are contiguous
  return stage_priority(stage) + (edge ? levels + 1 : 0);
}

// Submission follows a wavefront: step t submits the horizontal passes (l, k) with
// k + 2l = t, then the vertical passes with k + 1 + 2l = t. Every halo is written (by the
// horizontal pass of unit k+1 at the same step, or of k-1 earlier) before the vertical pass
// that reads it is submitted, as StarPU's sequential consistency needs; with stage_priority
// the first units finish all levels early, and their results travel home while later units
// still compute.
template <typename Writer, typename Reader>
void wavefront(int units, int levels, Writer&& writer, Reader&& reader) {
  for (int t = 0; t < units + 2 * levels + 1; ++t) {
    for (int l = 0; l <= levels; ++l)
      if (const int k = t - 2 * l; k >= 0 && k < units) writer(l, k);
    for (int l = 0; l < levels; ++l)
      if (const int k = t - 1 - 2 * l; k >= 0 && k < units) reader(l, k);
  }
}

void preallocate(const Plan& p, Pipeline pipeline, bool forward) {
  find_ranks();
  if (ranks.size > 1) return;
  std::vector<unsigned> nodes;  // the CUDA workers' memory nodes, each once
  for (unsigned w = 0; w < starpu_worker_get_count(); ++w) {
    const unsigned node = starpu_worker_get_memory_node(w);
    if (starpu_worker_get_type(int(w)) == STARPU_CUDA_WORKER && std::find(nodes.begin(), nodes.end(), node) == nodes.end())
      nodes.push_back(node);
  }
  if (nodes.empty()) return;
  // Handles's shapes: per unit the strips in, out, b (s: the inverse's; win: Steps'), and per
  // level the halos to its neighbours, each on the GPU that takes the unit's share.
  const int U = p.units(), W = p.width(), share = (U + int(nodes.size()) - 1) / int(nodes.size());
  const auto each_buffer = [&](auto&& buffer) {
    for (int k = 0; k < U; ++k) {
      const std::size_t g = std::size_t(k / share);
      const int h = p.unit_rows(0, k);
      for (int i = 0; i < (forward ? 3 : 4); ++i) buffer(g, W, h);
      if (pipeline == Pipeline::Steps) buffer(g, W, cpu::window_rows(h, true, true));
      for (int l = 0; l < p.levels(); ++l) {
        if (p.has_above(k)) buffer(g, p.cols(l), kHalo);
        if (p.has_below(k)) buffer(g, p.cols(l), kHalo);
      }
    }
  };
  // Not where it would take more than half of what a GPU has free: the transform then
  // allocates as it goes, and StarPU evicts what it no longer needs.
  std::vector<std::size_t> bytes(nodes.size(), 0);
  each_buffer([&](std::size_t g, int cols, int rows) { bytes[g] += std::size_t(cols) * std::size_t(rows) * sizeof(float); });
  for (std::size_t g = 0; g < nodes.size(); ++g) {
    const starpu_ssize_t free = starpu_memory_get_available(nodes[g]);
    if (free >= 0 && bytes[g] > std::size_t(free) / 2) return;
  }
  // All held until the last is allocated: one freed earlier would serve the next of its size.
  std::vector<starpu_data_handle_t> held;
  each_buffer([&](std::size_t g, int cols, int rows) {
    held.push_back(register_temp(cols, rows));
    if (starpu_data_acquire_on_node(held.back(), int(nodes[g]), STARPU_W) == 0) starpu_data_release_on_node(held.back(), int(nodes[g]));
  });
  for (starpu_data_handle_t h : held) starpu_data_unregister(h);  // no home: nothing comes back
}

namespace {
// One process only: a unit's rows cross ranks through StarPU-MPI, not through the caller.
void one_process_only(const char* what) {
  if (ranks.size == 1) return;
  std::fprintf(stderr, "lwt: %s run in one process only\n", what);
  std::abort();
}
}  // namespace

void forward(const Plan& p, Pipeline pipeline, const float* image, float* units_layout,
             std::vector<WorkerStats>* stats, const UnitFiles* files) {
  find_ranks();
  if (files) one_process_only("a transform's unit files");
  begin_stats();
  {
    Handles hd(p, image, units_layout, false, pipeline == Pipeline::Steps);
    const int L = p.levels();
    const auto prio = [&](int stage, int k) { return unit_priority(stage, k, p.units(), L); };
    auto horizontal = [&](int l, int k) {  // the horizontal pass, then the halos it owes
      if (l == L) return;
      const Args a = region(p, l, k);
      if (l == 0 && files && files->fill) files->fill(k, hd.in[k]);
      starpu_data_handle_t src = l == 0 ? hd.in[k] : hd.out[k];
      if (pipeline == Pipeline::Fused) {
        Submit(kHFwd, a, prio(l, k)).data(src, STARPU_R).data(hd.b[k], STARPU_W)
            .data_if(a.above, hd.top[l][k], STARPU_W).data_if(a.below, hd.bot[l][k], STARPU_W).go();
        return;
      }
      Submit(kHSplit, a, prio(l, k)).data(src, STARPU_R).data(hd.b[k], STARPU_W).go();
      for (int st = 0; st < kNumSteps; ++st) {
        Args sa = a;
        sa.step = st;
        Submit(kHLift, sa, prio(l, k)).data(hd.b[k], STARPU_RW).go();
      }
      if (a.above || a.below) {
        Args ha = a;
        ha.dir = int(Direction::Forward);
        ha.halo_h = a.h;
        ha.halo_w = a.w;
        Submit(kHaloCopy, ha, prio(l, k)).data(hd.b[k], STARPU_R)
            .data_if(a.above, hd.top[l][k], STARPU_W).data_if(a.below, hd.bot[l][k], STARPU_W).go();
      }
    };
    auto vertical = [&](int l, int k) {  // the vertical pass with the neighbours' halos
      const Args a = region(p, l, k);
      const starpu_data_access_mode out_mode = l == 0 ? STARPU_W : STARPU_RW;
      if (pipeline == Pipeline::Fused) {
        Submit(kVFwd, a, prio(l, k)).data(hd.b[k], STARPU_R).data(hd.out[k], out_mode)
            .data_if(a.above, hd.above(l, k), STARPU_R).data_if(a.below, hd.below(l, k), STARPU_R).go();
      } else {
        Submit(kVGather, a, prio(l, k)).data(hd.b[k], STARPU_R).data(hd.win[k], STARPU_W)
            .data_if(a.above, hd.above(l, k), STARPU_R).data_if(a.below, hd.below(l, k), STARPU_R).go();
        for (int st = 0; st < kNumSteps; ++st) {
          Args sa = a;
          sa.step = st;
          Submit(kVLift, sa, prio(l, k)).data(hd.win[k], STARPU_RW).go();
        }
        Submit(kVScatter, a, prio(l, k)).data(hd.win[k], STARPU_R).data(hd.out[k], out_mode).go();
      }
      // The unit's coefficients may go home as soon as its last task ends, and its work
      // strips' memory serves the units after it.
      if (l == L - 1) {
        if (files && files->drain) files->drain(k, hd.out[k]);
        else starpu_data_wont_use(hd.out[k]);
        hd.done_with(k);
      }
    };
    wavefront(p.units(), L, horizontal, vertical);
    hd.wait();
  }  // unregistering brings the output strips home
  end_stats(stats);
}

// The inverse runs the levels backwards with the same wavefront: the "writers" of level
// j's halos (j = 0 the coarsest) are the initial copy (j = 0) and the horizontal inverse of
// the level below; the readers are the vertical inverses.
void inverse(const Plan& p, Pipeline pipeline, const float* units_layout, float* image,
             std::vector<WorkerStats>* stats, LevelSet keep, const OutputTasks* then, const UnitFiles* files) {
  find_ranks();
  if (then) one_process_only("an inverse's output tasks");
  if (files) one_process_only("a transform's unit files");
  begin_stats();
  {
    Handles hd(p, units_layout, image, true, pipeline == Pipeline::Steps);
    const int L = p.levels();
    const auto prio = [&](int stage, int k) { return unit_priority(stage, k, p.units(), L); };
    auto writer = [&](int j, int k) {
      if (j == 0) {  // B starts as a copy of the kept coefficients; the coarsest halos come with it
        Args a = region(p, L - 1, k);
        a.levels = L;
        a.drop = ~keep & ((LevelSet(2) << L) - 1);
        a.h = p.unit_rows(0, k);
        a.w = p.width();
        a.halo_h = p.unit_rows(L - 1, k);
        a.halo_w = p.cols(L - 1);
        if (files && files->fill) files->fill(k, hd.in[k]);
        Submit(kInvCopy, a, prio(j, k)).data(hd.in[k], STARPU_R).data(hd.b[k], STARPU_W)
            .data_if(a.above, hd.top[L - 1][k], STARPU_W).data_if(a.below, hd.bot[L - 1][k], STARPU_W).go();
        return;
      }
      // Horizontal inverse of level l: S -> B's level region, or the image at level 0; it
      // writes the halos of level l - 1 from dst's region there.
      const int l = L - j;
      Args a = region(p, l, k);
      a.dir = int(Direction::Inverse);
      starpu_data_handle_t dst = l > 0 ? hd.b[k] : hd.out[k];
      const starpu_data_access_mode mode = l > 0 ? STARPU_RW : STARPU_W;
      Args ha = a;
      ha.above = l > 0 && a.above;
      ha.below = l > 0 && a.below;
      if (l > 0) {
        ha.halo_h = p.unit_rows(l - 1, k);
        ha.halo_w = p.cols(l - 1);
      }
      const int hl = l > 0 ? l - 1 : 0;
      if (pipeline == Pipeline::Fused) {
        Submit(kHInv, ha, prio(j, k)).data(hd.s[k], STARPU_R).data(dst, mode)
            .data_if(ha.above, hd.top[hl][k], STARPU_W).data_if(ha.below, hd.bot[hl][k], STARPU_W).go();
      } else {
        for (int st = kNumSteps - 1; st >= 0; --st) {
          Args sa = a;
          sa.step = st;
          Submit(kHLift, sa, prio(j, k)).data(hd.s[k], STARPU_RW).go();
        }
        Args ma = ha;
        ma.above = ma.below = 0;
        Submit(kHMerge, ma, prio(j, k)).data(hd.s[k], STARPU_R).data(dst, mode).go();
        if (ha.above || ha.below) {
          ha.dir = int(Direction::Inverse);
          Submit(kHaloCopy, ha, prio(j, k)).data(dst, STARPU_R)
              .data_if(ha.above, hd.top[hl][k], STARPU_W).data_if(ha.below, hd.bot[hl][k], STARPU_W).go();
        }
      }
      if (l == 0) {
        if (then) then->strip(k, hd.out[k], prio(j, k));
        if (files && files->drain) files->drain(k, hd.out[k]);
        if (!then && !(files && files->drain)) starpu_data_wont_use(hd.out[k]);
        hd.done_with(k);
      }
    };
    auto reader = [&](int j, int k) {  // vertical inverse of level L-1-j: B + halos -> S
      const int l = L - 1 - j;
      Args a = region(p, l, k);
      a.dir = int(Direction::Inverse);
      if (pipeline == Pipeline::Fused) {
        Submit(kVInv, a, prio(j, k)).data(hd.b[k], STARPU_R).data(hd.s[k], STARPU_W)
            .data_if(a.above, hd.above(l, k), STARPU_R).data_if(a.below, hd.below(l, k), STARPU_R).go();
        return;
      }
      Submit(kVGatherInv, a, prio(j, k)).data(hd.b[k], STARPU_R).data(hd.win[k], STARPU_W)
          .data_if(a.above, hd.above(l, k), STARPU_R).data_if(a.below, hd.below(l, k), STARPU_R).go();
      for (int st = kNumSteps - 1; st >= 0; --st) {
        Args sa = a;
        sa.step = st;
        Submit(kVLift, sa, prio(j, k)).data(hd.win[k], STARPU_RW).go();
      }
      Submit(kVScatterInv, a, prio(j, k)).data(hd.win[k], STARPU_R).data(hd.s[k], STARPU_W).go();
    };
    wavefront(p.units(), L, writer, reader);
    hd.wait();
    if (then) then->finish(hd.out);
  }
  end_stats(stats);
}

long task_count(const Plan& p, Pipeline pipeline, bool fwd) {
  long n = 0;
  const int U = p.units();
  const long halo_units = U > 1 ? U : 0;
  if (pipeline == Pipeline::Fused) return fwd ? 2L * U * p.levels() : U + 2L * U * p.levels();
  for (int l = 0; l < p.levels(); ++l)
    n += fwd ? U * (1 + kNumSteps + 7L) + halo_units : U * (2L + 2 * kNumSteps + 1) + (l > 0 ? halo_units : 0);
  return fwd ? n : n + U;
}

}  // namespace lwt
