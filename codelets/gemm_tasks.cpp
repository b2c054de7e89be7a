// The tiled product as StarPU tasks (codelets/gemm.hpp). One codelet per precision
// ("fnndtps_sgemm_tile", "fnndtps_dgemm_tile", and "fnndtps_sgemm_tile_tf32" for TF32 products),
// each with a history-based performance model of the same name: CPU through OpenBLAS, CUDA
// through cuBLAS on StarPU's per-worker handle and stream (STARPU_CUDA_ASYNC). The codelets
// take their access modes per task (STARPU_VARIABLE_NBUFFERS): a task that overwrites its C
// block has it STARPU_W (beta = 0), one that accumulates STARPU_RW (beta = 1), as StarPU's
// examples/mult/xgemm.c does with two codelets; one codelet keeps one performance model and one
// job kind for our policies, for both splits.
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

// StarPU's _starpu_matrix_filter_block (src/datawizard/interfaces/matrix_filters.c) with
// blocks [start, start + len) of our choosing instead of an even split. dim 1 cuts nx (rows,
// contiguous), dim 2 cuts ny (columns, ld elements apart).
void cut(int dim, void* father_interface, void* child_interface, std::uint32_t start, std::uint32_t len) {
  auto* father = static_cast<starpu_matrix_interface*>(father_interface);
  auto* child = static_cast<starpu_matrix_interface*>(child_interface);
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

std::uint32_t extent_of(int dim, void* father_interface) {
  auto* father = static_cast<starpu_matrix_interface*>(father_interface);
  STARPU_ASSERT_MSG(father->id == STARPU_MATRIX_INTERFACE_ID, "gemm block filters apply to matrices only");
  return dim == 1 ? father->nx : father->ny;
}

// Fixed blocks of f->filter_arg elements: block `id` starts at id * b and holds
// min(b, extent - id * b) elements.
void fixed_block(int dim, void* father_interface, void* child_interface, starpu_data_filter* f, unsigned id,
                 unsigned nparts) {
  const std::uint32_t b = f->filter_arg;
  const std::uint32_t extent = extent_of(dim, father_interface);
  STARPU_ASSERT_MSG(b > 0 && nparts == (extent + b - 1) / b,
                    "gemm tile filter: %u elements in blocks of %u need %u parts, not %u", extent, b,
                    b ? (extent + b - 1) / b : 0u, nparts);
  const std::uint32_t start = id * b;
  cut(dim, father_interface, child_interface, start, std::min(b, extent - start));
}

// Blocks between the offsets of f->filter_arg_ptr (nparts + 1 of them, from 0 to the extent).
void offset_block(int dim, void* father_interface, void* child_interface, starpu_data_filter* f, unsigned id,
                  unsigned nparts) {
  const auto* at = static_cast<const unsigned*>(f->filter_arg_ptr);
  const std::uint32_t extent = extent_of(dim, father_interface);
  STARPU_ASSERT_MSG(at && at[0] == 0 && at[nparts] == extent && id < nparts && at[id] < at[id + 1],
                    "gemm block filter: offsets do not cut %u elements into %u blocks", extent, nparts);
  cut(dim, father_interface, child_interface, at[id], at[id + 1] - at[id]);
}

}  // namespace

void tile_filter_rows(void* father, void* child, starpu_data_filter* f, unsigned id, unsigned nparts) {
  fixed_block(1, father, child, f, id, nparts);
}
void tile_filter_cols(void* father, void* child, starpu_data_filter* f, unsigned id, unsigned nparts) {
  fixed_block(2, father, child, f, id, nparts);
}
void block_filter_rows(void* father, void* child, starpu_data_filter* f, unsigned id, unsigned nparts) {
  offset_block(1, father, child, f, id, nparts);
}
void block_filter_cols(void* father, void* child, starpu_data_filter* f, unsigned id, unsigned nparts) {
  offset_block(2, father, child, f, id, nparts);
}

std::vector<int> blocks(int extent, const std::vector<int>& pattern) {
  if (extent < 1) throw std::invalid_argument("gemm::blocks: extent must be at least 1");
  if (pattern.empty()) throw std::invalid_argument("gemm::blocks: no block widths");
  for (int w : pattern)
    if (w < 1) throw std::invalid_argument("gemm::blocks: block widths must be at least 1");
  std::vector<int> out;
  for (int at = 0, i = 0; at < extent; i = (i + 1) % int(pattern.size())) {
    out.push_back(std::min(pattern[std::size_t(i)], extent - at));
    at += out.back();
  }
  return out;
}

const char* to_string(Split s) { return s == Split::TwoD ? "2d" : "3d"; }

long long task_count(int m, int n, int k, const Decomposition& d) {
  const long long c = (long long)blocks(m, d.tiles).size() * (long long)blocks(n, d.tiles).size();
  return d.split == Split::TwoD ? c : c * (long long)blocks(k, d.tiles).size();
}

std::vector<SubTask> subtasks(int m, int n, int k, const Decomposition& d, std::size_t elem_size,
                              bool accumulate) {
  const std::vector<int> rows = blocks(m, d.tiles), cols = blocks(n, d.tiles);
  const std::vector<int> inner = d.split == Split::TwoD ? std::vector<int>{k} : blocks(k, d.tiles);
  std::vector<SubTask> out;
  for (int wi : rows)
    for (int wj : cols)
      for (std::size_t p = 0; p < inner.size(); ++p) {
        const bool reads_c = accumulate || p > 0;
        out.push_back({wi, wj, inner[p], reads_c, tile_weight(wi, wj, inner[p], elem_size, reads_c)});
      }
  return out;
}

long long task_count(int m, int n, int k, int tile) {
  return (long long)tile_count(m, tile) * tile_count(n, tile) * tile_count(k, tile);
}

const char* codelet_name(Precision p, bool tf32) {
  if (p == Precision::Double) return "fnndtps_dgemm_tile";
  return tf32 ? "fnndtps_sgemm_tile_tf32" : "fnndtps_sgemm_tile";
}

// ----------------------------------------------------------------------------- codelets

namespace {

// The task's argument (STARPU_CL_ARGS: the task frees it). Sizes come from the buffers.
struct Args {
  double beta;    // 0: C = A B (C not read); 1: C += A B
  bool tf32;      // CUDA float products on TF32 tensor cores
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
  cublasHandle_t handle = starpu_cublas_get_local_handle();
  // The worker's handle is shared by every product and codelet on it: set the math mode for
  // each task (a host-side field, no synchronisation). CUBLAS_DEFAULT_MATH is true FP32 for
  // sgemm (TF32 only when asked, or with NVIDIA_TF32_OVERRIDE=1 in the environment).
  FNNDTPS_CUBLAS_CHECK(cublasSetMathMode(handle, args.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  cuda::tile<T>(handle, c.rows, c.cols, a.cols, static_cast<const T*>(a.p), a.ld,
                static_cast<const T*>(b.p), b.ld, T(args.beta), static_cast<T*>(c.p), c.ld);
  note(args);
}
#endif

template <typename T, bool TF32>
struct Codelet {
  starpu_perfmodel model{};
  starpu_codelet cl{};
  Codelet() {
    const char* name = codelet_name(std::is_same_v<T, float> ? Precision::Single : Precision::Double, TF32);
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
starpu_codelet* codelet(bool tf32) {
  static Codelet<T, false> fp;
  if constexpr (std::is_same_v<T, float>) {
    static Codelet<T, true> tf;
    if (tf32) return &tf.cl;
  }
  return &fp.cl;
}

starpu_data_filter block_filter(void (*func)(void*, void*, starpu_data_filter*, unsigned, unsigned),
                                const std::vector<unsigned>& offsets) {
  starpu_data_filter f{};
  f.filter_func = func;
  f.nchildren = unsigned(offsets.size() - 1);
  f.filter_arg_ptr = const_cast<unsigned*>(offsets.data());
  return f;
}

std::vector<unsigned> offsets_of(const std::vector<int>& widths) {
  std::vector<unsigned> at{0};
  for (int w : widths) at.push_back(at.back() + unsigned(w));
  return at;
}

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
struct Product<T>::Impl {
  int m, n, k;
  Decomposition d;
  std::vector<int> rows, cols, inner;           // block widths along m, n, k (2d: {k})
  std::vector<unsigned> at_m, at_n, at_k;        // their offsets, read by the filters
  starpu_data_handle_t a = nullptr, b = nullptr, c = nullptr;

  starpu_data_handle_t a_block(int i, int p) const {
    return d.split == Split::TwoD ? starpu_data_get_sub_data(a, 1, i) : starpu_data_get_sub_data(a, 2, i, p);
  }
  starpu_data_handle_t b_block(int p, int j) const {
    return d.split == Split::TwoD ? starpu_data_get_sub_data(b, 1, j) : starpu_data_get_sub_data(b, 2, p, j);
  }
};

template <typename T>
Product<T>::Product(const Matrix<const T>& a, const Matrix<const T>& b, const Matrix<T>& c, const Decomposition& d)
    : impl_(nullptr) {
  const int m = c.rows, n = c.cols, k = a.cols;
  if (m < 1 || n < 1 || k < 1 || a.rows != m || b.rows != k || b.cols != n)
    throw std::invalid_argument("gemm::multiply: sizes do not agree: A " + std::to_string(a.rows) + "x" +
                                std::to_string(a.cols) + ", B " + std::to_string(b.rows) + "x" +
                                std::to_string(b.cols) + ", C " + std::to_string(m) + "x" + std::to_string(n));
  if (!a.data || !b.data || !c.data || a.ld < m || b.ld < k || c.ld < m)
    throw std::invalid_argument("gemm::multiply: null matrix or leading dimension below the rows");
  if (d.tiles.empty()) throw std::invalid_argument("gemm::multiply: no block widths");
  for (int w : d.tiles)
    if (w < 1) throw std::invalid_argument("gemm::multiply: block widths must be at least 1");

  auto* p = new Impl{m, n, k, d, blocks(m, d.tiles), blocks(n, d.tiles),
                     d.split == Split::TwoD ? std::vector<int>{k} : blocks(k, d.tiles), {}, {}, {}};
  p->at_m = offsets_of(p->rows);
  p->at_n = offsets_of(p->cols);
  p->at_k = offsets_of(p->inner);
  const std::size_t e = sizeof(T);
  starpu_matrix_data_register(&p->a, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(a.data), uint32_t(a.ld),
                              uint32_t(m), uint32_t(k), e);
  starpu_matrix_data_register(&p->b, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(b.data), uint32_t(b.ld),
                              uint32_t(k), uint32_t(n), e);
  starpu_matrix_data_register(&p->c, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(c.data), uint32_t(c.ld),
                              uint32_t(m), uint32_t(n), e);
  starpu_data_filter rows_m = block_filter(block_filter_rows, p->at_m);
  starpu_data_filter cols_n = block_filter(block_filter_cols, p->at_n);
  if (d.split == Split::TwoD) {
    starpu_data_partition(p->a, &rows_m);  // A_i: block row i, all of k
    starpu_data_partition(p->b, &cols_n);  // B_j: block column j, all of k
  } else {
    starpu_data_filter cols_k = block_filter(block_filter_cols, p->at_k);
    starpu_data_filter rows_k = block_filter(block_filter_rows, p->at_k);
    starpu_data_map_filters(p->a, 2, &rows_m, &cols_k);  // A_ip
    starpu_data_map_filters(p->b, 2, &rows_k, &cols_n);  // B_pj
  }
  starpu_data_map_filters(p->c, 2, &rows_m, &cols_n);  // C_ij
  impl_ = p;
}

template <typename T>
Product<T>::~Product() {
  starpu_task_wait_for_all();
  for (starpu_data_handle_t h : {impl_->a, impl_->b, impl_->c}) {
    starpu_data_unpartition(h, STARPU_MAIN_RAM);
    starpu_data_unregister(h);
  }
  delete impl_;
}

template <typename T>
long long Product<T>::tasks() const {
  return (long long)impl_->rows.size() * (long long)impl_->cols.size() * (long long)impl_->inner.size();
}

template <typename T>
void Product<T>::run(bool accumulate, std::vector<WorkerStats>* stats) {
  const Impl& p = *impl_;
  const int mt = int(p.rows.size()), nt = int(p.cols.size()), kt = int(p.inner.size());
  starpu_codelet* cl = codelet<T>(p.d.tf32);
  if (stats) begin_stats();
  for (int i = 0; i < mt; ++i)
    for (int j = 0; j < nt; ++j) {
      starpu_data_handle_t c_ij = starpu_data_get_sub_data(p.c, 2, i, j);
      for (int q = 0; q < kt; ++q) {
        const bool reads_c = accumulate || q > 0;
        const TileWeight w = tile_weight(p.rows[std::size_t(i)], p.cols[std::size_t(j)], p.inner[std::size_t(q)],
                                         sizeof(T), reads_c);
        auto* args = static_cast<Args*>(std::malloc(sizeof(Args)));
        if (!args) throw std::bad_alloc();
        *args = Args{reads_c ? 1.0 : 0.0, p.d.tf32, i * nt + j, w.sub.ia, w.sub.da, w.weight};
        const int rc = starpu_task_insert(cl, STARPU_R, p.a_block(i, q), STARPU_R, p.b_block(q, j),
                                          reads_c ? STARPU_RW : STARPU_W, c_ij, STARPU_CL_ARGS, args, sizeof(Args),
                                          STARPU_FLOPS, w.sub.ia, STARPU_NAME, cl->name, 0);
        if (rc != 0) {
          std::free(args);
          starpu_task_wait_for_all();  // what was submitted finishes before the handles go
          throw std::runtime_error(std::string("gemm: starpu_task_insert failed: ") + std::strerror(-rc) +
                                   (rc == -ENODEV ? " (no worker can run the tile codelet)" : ""));
        }
      }
      // C_ij is final: let it go home while other blocks compute (xgemm.c does the same).
      starpu_data_wont_use(c_ij);
    }
  starpu_task_wait_for_all();
  // The product ends with C in host memory: wont_use only started the copies home.
  for (int i = 0; i < mt; ++i)
    for (int j = 0; j < nt; ++j) {
      starpu_data_handle_t c_ij = starpu_data_get_sub_data(p.c, 2, i, j);
      if (starpu_data_acquire(c_ij, STARPU_R) == 0) starpu_data_release(c_ij);
    }
  if (stats) end_stats(stats);
}

template <typename T>
void multiply(const Matrix<const T>& a, const Matrix<const T>& b, const Matrix<T>& c, int tile, bool accumulate,
              std::vector<WorkerStats>* stats) {
  if (tile < 1) throw std::invalid_argument("gemm::multiply: tile must be at least 1");
  Product<T> product(a, b, c, Decomposition{Split::ThreeD, {tile}, false});
  product.run(accumulate, stats);
}

template class Product<float>;
template class Product<double>;
template void multiply<float>(const Matrix<const float>&, const Matrix<const float>&, const Matrix<float>&, int,
                              bool, std::vector<WorkerStats>*);
template void multiply<double>(const Matrix<const double>&, const Matrix<const double>&, const Matrix<double>&,
                               int, bool, std::vector<WorkerStats>*);

}  // namespace gemm
