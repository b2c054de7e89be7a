// The tiled product as StarPU tasks (codelets/gemm.hpp). One codelet per precision
// ("fnndtps_sgemm_tile", "fnndtps_dgemm_tile"), each with a history-based performance model of
// the same name: CPU through OpenBLAS, CUDA through cuBLAS on StarPU's per-worker handle and
// stream (STARPU_CUDA_ASYNC). The codelets take their access modes per task
// (STARPU_VARIABLE_NBUFFERS): the first product into a C tile writes it (STARPU_W, beta = 0),
// later ones accumulate (STARPU_RW, beta = 1), as StarPU's examples/mult/xgemm.c does with two
// codelets; one codelet keeps one performance model and one job kind for our policies.
#include <starpu.h>
#include <starpu_profiling.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "codelets/gemm.hpp"
#include "codelets/simulated.hpp"
#ifdef FNNDTPS_HAVE_CUDA
#include <starpu_cublas_v2.h>

#include "codelets/cuda/gemm_cuda.hpp"
#endif

namespace gemm {

// ----------------------------------------------------------------------------- weights

TileWeight tile_weight(int m, int n, int k, std::size_t elem_size, bool reads_c) {
  TileWeight w;
  // Seed 001 eq. (3): one kind of operation, m n k multiply-adds of 2 flops each.
  w.sub.ia = weights::compute_size({{double(m) * double(n) * double(k), 2.0}});
  // Seed 001 eq. (4): DA_in = A and B tiles (+ C when accumulating), DA_out = the C tile.
  const double e = double(elem_size);
  const double c_bytes = double(m) * double(n) * e;
  const double in = (double(m) * double(k) + double(k) * double(n)) * e + (reads_c ? c_bytes : 0.0);
  w.sub.da = weights::communication(in, c_bytes);
  // Seed 001 eq. (5): w = IA / DA.
  w.weight = weights::ordering_weight(w.sub);
  return w;
}

// ----------------------------------------------------------------------------- filters

namespace {

// StarPU's _starpu_matrix_filter_block (src/datawizard/interfaces/matrix_filters.c) with fixed
// blocks of f->filter_arg elements instead of an even split: block `id` starts at id * b and
// holds min(b, extent - id * b) elements. dim 1 cuts nx (rows, contiguous), dim 2 cuts ny
// (columns, ld elements apart).
void fixed_block(int dim, void* father_interface, void* child_interface, starpu_data_filter* f,
                 unsigned id, unsigned nparts) {
  auto* father = static_cast<starpu_matrix_interface*>(father_interface);
  auto* child = static_cast<starpu_matrix_interface*>(child_interface);
  STARPU_ASSERT_MSG(father->id == STARPU_MATRIX_INTERFACE_ID, "gemm tile filters apply to matrices only");
  const std::uint32_t b = f->filter_arg;
  const std::uint32_t extent = dim == 1 ? father->nx : father->ny;
  STARPU_ASSERT_MSG(b > 0 && nparts == (extent + b - 1) / b,
                    "gemm tile filter: %u elements in blocks of %u need %u parts, not %u", extent, b,
                    b ? (extent + b - 1) / b : 0u, nparts);
  const std::uint32_t start = id * b;
  const std::uint32_t len = std::min(b, extent - start);
  const std::size_t elem = father->elemsize;
  const std::size_t offset = (dim == 1 ? std::size_t(start) : std::size_t(start) * father->ld) * elem;

  child->id = father->id;
  child->nx = dim == 1 ? len : father->nx;
  child->ny = dim == 1 ? father->ny : len;
  child->elemsize = elem;
  if (father->dev_handle) {  // the data is valid on this node
    if (father->ptr) child->ptr = father->ptr + offset;
    child->ld = father->ld;
    child->dev_handle = father->dev_handle;
    child->offset = father->offset + offset;
    child->allocsize = std::size_t(child->ld) * child->ny * elem;
  } else {
    child->allocsize = std::size_t(child->nx) * child->ny * elem;
  }
}

}  // namespace

void tile_filter_rows(void* father, void* child, starpu_data_filter* f, unsigned id, unsigned nparts) {
  fixed_block(1, father, child, f, id, nparts);
}
void tile_filter_cols(void* father, void* child, starpu_data_filter* f, unsigned id, unsigned nparts) {
  fixed_block(2, father, child, f, id, nparts);
}

long long task_count(int m, int n, int k, int tile) {
  return (long long)tile_count(m, tile) * tile_count(n, tile) * tile_count(k, tile);
}

const char* codelet_name(Precision p) {
  return p == Precision::Single ? "fnndtps_sgemm_tile" : "fnndtps_dgemm_tile";
}

// ----------------------------------------------------------------------------- codelets

namespace {

// The task's argument (STARPU_CL_ARGS: the task frees it). Sizes come from the buffers.
struct Args {
  double beta;    // 0: C = A B (C not read); 1: C += A B
  int c_tile;     // i * (tiles across n) + j, for the per-worker report
  double ia;      // seed 001 eq. (3), flops; also task->flops
  double da;      // seed 001 eq. (4), bytes
  double weight;  // seed 001 eq. (5), IA / DA
};

struct Tile {
  void* p;
  int ld, rows, cols;
};
Tile tile_of(void* buffer) {
  return {reinterpret_cast<void*>(STARPU_MATRIX_GET_PTR(buffer)), int(STARPU_MATRIX_GET_LD(buffer)),
          int(STARPU_MATRIX_GET_NX(buffer)), int(STARPU_MATRIX_GET_NY(buffer))};
}

// Per-worker counts for the report. Written from codelets (one lock per tile product, which
// takes microseconds at the least), read after the wait.
struct Count {
  unsigned tasks = 0;
  double flops = 0;
  std::set<int> c_tiles;
};
std::mutex count_mutex;
std::array<Count, STARPU_NMAXWORKERS> counts;
void note(const Args& a) {
  const int id = starpu_worker_get_id();
  if (id < 0) return;
  std::lock_guard<std::mutex> lock(count_mutex);
  Count& c = counts[std::size_t(id)];
  ++c.tasks;
  c.flops += a.ia;
  c.c_tiles.insert(a.c_tile);
}

template <typename T>
void cpu_func(void* buffers[], void* cl_arg) {
  const Args& args = *static_cast<const Args*>(cl_arg);
  const Tile a = tile_of(buffers[0]), b = tile_of(buffers[1]), c = tile_of(buffers[2]);
  cpu::tile<T>(c.rows, c.cols, a.cols, static_cast<const T*>(a.p), a.ld, static_cast<const T*>(b.p), b.ld,
               T(args.beta), static_cast<T*>(c.p), c.ld);
  note(args);
}

#ifdef FNNDTPS_HAVE_CUDA
template <typename T>
void cuda_func(void* buffers[], void* cl_arg) {
  const Args& args = *static_cast<const Args*>(cl_arg);
  const Tile a = tile_of(buffers[0]), b = tile_of(buffers[1]), c = tile_of(buffers[2]);
  cuda::tile<T>(starpu_cublas_get_local_handle(), c.rows, c.cols, a.cols, static_cast<const T*>(a.p), a.ld,
                static_cast<const T*>(b.p), b.ld, T(args.beta), static_cast<T*>(c.p), c.ld);
  note(args);
}
#endif

template <typename T>
struct Codelet {
  starpu_perfmodel model{};
  starpu_codelet cl{};
  Codelet() {
    const char* name = codelet_name(std::is_same_v<T, float> ? Precision::Single : Precision::Double);
    model.type = STARPU_HISTORY_BASED;  // keyed by the tiles' sizes: ragged edges get their own
    model.symbol = name;
    starpu_codelet_init(&cl);
    cl.name = name;
    cl.cpu_funcs[0] = cpu_func<T>;
    cl.cpu_funcs_name[0] = std::is_same_v<T, float> ? "fnndtps_sgemm_tile_cpu" : "fnndtps_dgemm_tile_cpu";
#if defined(FNNDTPS_HAVE_CUDA)
    cl.cuda_funcs[0] = cuda_func<T>;
    cl.cuda_flags[0] = STARPU_CUDA_ASYNC;
#elif defined(STARPU_SIMGRID)
    cl.cuda_funcs[0] = codelets::simulated_only;
#endif
    cl.nbuffers = STARPU_VARIABLE_NBUFFERS;  // A (R), B (R), C (W or RW), modes per task
    cl.model = &model;
    codelets::perturb_in_simulation(cl);
  }
};
template <typename T>
starpu_codelet* codelet() {
  static Codelet<T> instance;
  return &instance.cl;
}

// The three matrices registered and cut into tiles for one product; the destructor waits for
// every submitted task, gathers C back into host memory and unregisters.
struct Registered {
  starpu_data_handle_t a = nullptr, b = nullptr, c = nullptr;
  Registered(const void* pa, int lda, int m, int k, const void* pb, int ldb, int n, void* pc, int ldc,
             std::size_t elem, int tile) {
    starpu_matrix_data_register(&a, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(pa), uint32_t(lda),
                                uint32_t(m), uint32_t(k), elem);
    starpu_matrix_data_register(&b, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(pb), uint32_t(ldb),
                                uint32_t(k), uint32_t(n), elem);
    starpu_matrix_data_register(&c, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(pc), uint32_t(ldc),
                                uint32_t(m), uint32_t(n), elem);
    starpu_data_filter rows_m = filter(tile_filter_rows, m, tile), cols_k = filter(tile_filter_cols, k, tile);
    starpu_data_filter rows_k = filter(tile_filter_rows, k, tile), cols_n = filter(tile_filter_cols, n, tile);
    starpu_data_map_filters(a, 2, &rows_m, &cols_k);  // A_ip = sub(a, i, p)
    starpu_data_map_filters(b, 2, &rows_k, &cols_n);  // B_pj = sub(b, p, j)
    starpu_data_map_filters(c, 2, &rows_m, &cols_n);  // C_ij = sub(c, i, j)
  }
  ~Registered() {
    starpu_task_wait_for_all();
    for (starpu_data_handle_t h : {a, b, c}) {
      starpu_data_unpartition(h, STARPU_MAIN_RAM);
      starpu_data_unregister(h);
    }
  }
  Registered(const Registered&) = delete;
  Registered& operator=(const Registered&) = delete;

  static starpu_data_filter filter(void (*func)(void*, void*, starpu_data_filter*, unsigned, unsigned),
                                   int extent, int tile) {
    starpu_data_filter f{};
    f.filter_func = func;
    f.nchildren = unsigned(tile_count(extent, tile));
    f.filter_arg = unsigned(tile);
    return f;
  }
  static starpu_data_handle_t sub(starpu_data_handle_t h, int i, int j) {
    return starpu_data_get_sub_data(h, 2, i, j);
  }
};

bool profiling_on() { return starpu_profiling_status_get() == STARPU_PROFILING_ENABLE; }

void begin_stats() {
  {
    std::lock_guard<std::mutex> lock(count_mutex);
    for (Count& c : counts) c = Count{};
  }
  if (profiling_on())
    for (unsigned w = 0; w < starpu_worker_get_count(); ++w) {
      starpu_profiling_worker_info info;
      starpu_profiling_worker_get_info(int(w), &info);  // resets the counters
    }
}

void end_stats(std::vector<WorkerStats>* stats) {
  stats->clear();
  const bool busy = profiling_on();
  std::lock_guard<std::mutex> lock(count_mutex);
  for (unsigned w = 0; w < starpu_worker_get_count(); ++w) {
    WorkerStats ws;
    char name[64];
    starpu_worker_get_name(int(w), name, sizeof name);
    ws.name = name;
    ws.cuda = starpu_worker_get_type(int(w)) == STARPU_CUDA_WORKER;
    const Count& c = counts[w];
    ws.tasks = c.tasks;
    ws.c_tiles = unsigned(c.c_tiles.size());
    ws.gflop = c.flops * 1e-9;
    if (busy) {
      starpu_profiling_worker_info info;
      starpu_profiling_worker_get_info(int(w), &info);
      ws.busy_ms = double(info.executing_time.tv_sec) * 1e3 + double(info.executing_time.tv_nsec) * 1e-6;
    }
    stats->push_back(ws);
  }
}

}  // namespace

// ----------------------------------------------------------------------------- the product

template <typename T>
void multiply(const Matrix<const T>& a, const Matrix<const T>& b, const Matrix<T>& c, int tile,
              bool accumulate, std::vector<WorkerStats>* stats) {
  const int m = c.rows, n = c.cols, k = a.cols;
  if (m < 1 || n < 1 || k < 1 || a.rows != m || b.rows != k || b.cols != n)
    throw std::invalid_argument("gemm::multiply: sizes do not agree: A " + std::to_string(a.rows) + "x" +
                                std::to_string(a.cols) + ", B " + std::to_string(b.rows) + "x" +
                                std::to_string(b.cols) + ", C " + std::to_string(m) + "x" + std::to_string(n));
  if (!a.data || !b.data || !c.data || a.ld < m || b.ld < k || c.ld < m)
    throw std::invalid_argument("gemm::multiply: null matrix or leading dimension below the rows");
  if (tile < 1) throw std::invalid_argument("gemm::multiply: tile must be at least 1");

  const int mt = tile_count(m, tile), nt = tile_count(n, tile), kt = tile_count(k, tile);
  starpu_codelet* cl = codelet<T>();
  if (stats) begin_stats();
  {
    Registered r(a.data, a.ld, m, k, b.data, b.ld, n, c.data, c.ld, sizeof(T), tile);
    for (int i = 0; i < mt; ++i)
      for (int j = 0; j < nt; ++j) {
        starpu_data_handle_t c_ij = Registered::sub(r.c, i, j);
        for (int p = 0; p < kt; ++p) {
          const bool reads_c = accumulate || p > 0;
          starpu_data_handle_t a_ip = Registered::sub(r.a, i, p), b_pj = Registered::sub(r.b, p, j);
          const TileWeight w = tile_weight(int(starpu_matrix_get_nx(a_ip)), int(starpu_matrix_get_ny(b_pj)),
                                           int(starpu_matrix_get_ny(a_ip)), sizeof(T), reads_c);
          auto* args = static_cast<Args*>(std::malloc(sizeof(Args)));
          if (!args) throw std::bad_alloc();
          *args = Args{reads_c ? 1.0 : 0.0, i * nt + j, w.sub.ia, w.sub.da, w.weight};
          const int rc = starpu_task_insert(cl, STARPU_R, a_ip, STARPU_R, b_pj, reads_c ? STARPU_RW : STARPU_W, c_ij,
                                            STARPU_CL_ARGS, args, sizeof(Args), STARPU_FLOPS, w.sub.ia,
                                            STARPU_NAME, cl->name, 0);
          if (rc != 0) {
            std::free(args);
            throw std::runtime_error(std::string("gemm: starpu_task_insert failed: ") + std::strerror(-rc) +
                                     (rc == -ENODEV ? " (no worker can run the tile codelet)" : ""));
          }
        }
        // C_ij is final: let it go home while other tiles compute.
        starpu_data_wont_use(c_ij);
      }
  }  // waits, gathers C, unregisters
  if (stats) end_stats(stats);
}

template void multiply<float>(const Matrix<const float>&, const Matrix<const float>&, const Matrix<float>&, int,
                              bool, std::vector<WorkerStats>*);
template void multiply<double>(const Matrix<const double>&, const Matrix<const double>&, const Matrix<double>&,
                               int, bool, std::vector<WorkerStats>*);

}  // namespace gemm
