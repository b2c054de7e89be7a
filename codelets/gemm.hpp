// Tiled matrix multiplication, seed 001's workload (DESIGN §4.4): C = A B in float and double,
// cut into blocks by StarPU filters. Two decompositions (Split):
// - 2d: one task per C block, C_ij = sum_p A_ip B_pj over the whole inner dimension, with A cut
//   in block rows and B in block columns (StarPU's examples/mult/xgemm.c without -3d);
// - 3d: one task per block product C_ij (+)= A_ip B_pj, k cut too (xgemm.c's -3d).
// Blocks may differ in size (seed 001 §2.2.3: sub-matrices of different sizes, so the
// sub-tasks' IA and DA differ): a pattern of block widths is used in turn along each dimension.
// Declarations shared by the reference (codelets/reference/gemm.cpp, the test oracle), the CPU
// backend (codelets/cpu/gemm.cpp, OpenBLAS), the CUDA backend (codelets/cuda/gemm_cuda.hpp,
// cuBLAS) and the StarPU tasks (codelets/gemm_tasks.cpp).
//
// Conventions, for every backend:
// - Matrices are COLUMN-MAJOR (BLAS's order): element (i, j) of a rows x cols matrix is at
//   p[i + j * ld], ld >= rows. In StarPU's matrix interface that is nx = rows (the contiguous
//   dimension), ny = cols, ld = ld.
// - A is m x k, B is k x n, C is m x n; no transposes.
// - Blocks start at the top-left corner; a dimension is cut by its pattern of widths used in
//   turn, the last block holding the remainder (blocks() below). StarPU's own block filters
//   split evenly instead (130 rows in 5 parts: 26 each), so the tasks use their own filters.
//
// What a scheduling policy can read from each task, without knowing these codelets (the
// scheduler includes nothing from codelets/, DESIGN §2):
// - task->flops = the sub-task's IA (seed 001 eq. (3), 2 m n k);
// - its DA (eq. (4)) from its buffers: the sum of each handle's size (starpu_data_get_size),
//   counted once per direction, R in, W out, RW both (A and B in; C out, and in when
//   accumulating), exactly as tile_weight() below counts it;
// - so its eq. (5) weight w = IA / DA = task->flops / DA.
// task->priority is left to the application's user (0): heteroprio reads it as a bucket index.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "codelets/subtask_weights.hpp"

struct starpu_data_filter;

namespace gemm {

// ---------------------------------------------------------------------------------------
// Tile kernels: C = beta C + A B on one tile (m x n x k). beta == 0 does not read C (BLAS
// semantics: NaN in C is overwritten). Every size >= 1.

namespace ref {
// The plain reference: C (double) = beta C + A B, products and sums in double, plain loops.
// Columns of B and C are independent, so callers may split n across threads.
template <typename T>
void tile(int m, int n, int k, const T* a, int lda, const T* b, int ldb, double beta, double* c,
          int ldc);
}  // namespace ref

namespace cpu {
// OpenBLAS cblas_?gemm on host pointers; runs on the calling thread only when OpenBLAS is set
// to one thread (openblas_set_num_threads(1), as the apps do before starpu_init).
template <typename T>
void tile(int m, int n, int k, const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc);
}  // namespace cpu

// gemm::cuda::tile (device pointers, a cuBLAS handle) is in codelets/cuda/gemm_cuda.hpp.

// ---------------------------------------------------------------------------------------
// Sub-task weights (seed 001 §1.1; the project's definitions are in codelets/subtask_weights.hpp).

// One sub-task C_ij (+)= A_ip B_pj of m x n x k elements of `elem_size` bytes (in 2d, k is the
// whole inner dimension):
//   eq. (3) IA = sum_i m_i n_i with one kind of operation, m_1 = m n k multiply-adds worth
//           n_1 = 2 standard (floating-point) operations each: IA = 2 m n k, = task->flops;
//   eq. (4) DA = DA_in + DA_out in bytes: in, the A and B tiles and, when accumulating
//           (beta = 1), the C tile; out, the C tile;
//   eq. (5) w = IA / DA, flops per byte moved.
// Larger tiles are more compute-heavy (w grows like b / 4 bytes for square float tiles), so
// eq. (6) sends full tiles towards GPUs and thin ragged edge tiles towards CPUs.
struct TileWeight {
  weights::SubTaskWeight sub;  // ia (flops), da (bytes)
  double weight = 0;           // eq. (5)
};
TileWeight tile_weight(int m, int n, int k, std::size_t elem_size, bool reads_c);

// ---------------------------------------------------------------------------------------
// StarPU filters that cut a matrix handle into fixed-size blocks of `filter_arg` elements
// (the last block holds the remainder) along rows (nx, the contiguous dimension) or columns
// (ny). nchildren must be tile_count(extent, filter_arg). Same contract as StarPU's
// starpu_matrix_filter_block / starpu_matrix_filter_vertical_block.
void tile_filter_rows(void* father, void* child, starpu_data_filter* f, unsigned id, unsigned nparts);
void tile_filter_cols(void* father, void* child, starpu_data_filter* f, unsigned id, unsigned nparts);
// The same with blocks of any widths: f->filter_arg_ptr points to nchildren + 1 unsigned
// offsets (0, then the end of each block, the last one the extent), which must outlive the
// partition.
void block_filter_rows(void* father, void* child, starpu_data_filter* f, unsigned id, unsigned nparts);
void block_filter_cols(void* father, void* child, starpu_data_filter* f, unsigned id, unsigned nparts);

inline int tile_count(int extent, int tile) { return (extent + tile - 1) / tile; }
// Extent of tile `id` (0-based) of a dimension of `extent` elements cut every `tile`.
inline int tile_extent(int extent, int tile, int id) {
  const int rest = extent - id * tile;
  return rest < tile ? rest : tile;
}

// The widths of the blocks that cut `extent` elements: the widths of `pattern` in turn,
// repeated, the last block cut to what remains. blocks(10, {4}) = {4, 4, 2};
// blocks(10, {4, 2, 1}) = {4, 2, 1, 3}. Throws std::invalid_argument on extent < 1, an empty
// pattern or a width < 1.
std::vector<int> blocks(int extent, const std::vector<int>& pattern);

// ---------------------------------------------------------------------------------------
// The whole tiled product as StarPU tasks.

enum class Precision { Single, Double };
enum class Split { TwoD, ThreeD };
const char* to_string(Split s);  // "2d", "3d"

// Column-major host matrix (see the conventions above).
template <typename T>
struct Matrix {
  T* data = nullptr;
  int rows = 0, cols = 0, ld = 0;
};

// What one StarPU worker did during one product.
struct WorkerStats {
  std::string name;
  bool cuda = false;
  unsigned tasks = 0;    // sub-tasks it ran
  unsigned c_tiles = 0;  // distinct C blocks it wrote
  double gflop = 0;      // sum of its tasks' IA, in 10^9 floating-point operations
  double busy_ms = -1;   // time inside its tasks; only with StarPU profiling on
                         // (STARPU_PROFILING=1), else -1
};

// How a product is cut into sub-tasks.
struct Decomposition {
  Split split = Split::TwoD;
  std::vector<int> tiles{256};  // block widths used in turn along m, n (and k in 3d)
  bool tf32 = false;            // CUDA float products on TF32 tensor cores (cuBLAS's
                                // CUBLAS_TF32_TENSOR_OP_MATH); else true FP32. Not on CPUs.
};

// Sub-tasks one product submits (2d: C blocks; 3d: C blocks x k blocks).
long long task_count(int m, int n, int k, const Decomposition& d);
long long task_count(int m, int n, int k, int tile);  // 3d, uniform tiles

// One sub-task's shape and seed 001 weights, for reports and tests.
struct SubTask {
  int m = 0, n = 0, k = 0;  // C block m x n, inner k
  bool reads_c = false;
  TileWeight w;
};
// Every sub-task of a product, in submission order (row of C blocks by row; in 3d the inner
// blocks innermost); `accumulate` as Product::run.
std::vector<SubTask> subtasks(int m, int n, int k, const Decomposition& d, std::size_t elem_size,
                              bool accumulate = false);

// A, B and C registered with StarPU and partitioned once, for any number of products
// (StarPU's examples/mult/xgemm.c does the same): after the first product A's and B's blocks
// stay valid where they were used (a GPU keeps its copies), so later products send only what
// a worker lacks. Each run() ends with C complete in host memory. The destructor waits for
// the tasks, unpartitions and unregisters (A and B must not change while it lives).
// StarPU must be initialised; with CUDA workers the caller must have called
// starpu_cublas_init() (and calls starpu_cublas_shutdown() after the destructor, before
// starpu_shutdown). Sizes must agree (throws std::invalid_argument otherwise).
template <typename T>
class Product {
 public:
  Product(const Matrix<const T>& a, const Matrix<const T>& b, const Matrix<T>& c, const Decomposition& d);
  ~Product();
  Product(const Product&) = delete;
  Product& operator=(const Product&) = delete;

  // C = A B (accumulate == false) or C += A B. Blocks until C is in host memory. In 3d the
  // first task of each C block overwrites it (beta = 0, STARPU_W: C is never sent to a
  // device) unless accumulating, later ones accumulate (beta = 1, STARPU_RW); in 2d each C
  // block is one task (W, or RW when accumulating). Each task carries IA as task->flops.
  void run(bool accumulate = false, std::vector<WorkerStats>* stats = nullptr);
  long long tasks() const;

 private:
  struct Impl;
  Impl* impl_;
};

// One product, 3d, uniform tiles (tile >= 1), the matrices registered for this call only:
// data starts and ends in host memory.
template <typename T>
void multiply(const Matrix<const T>& a, const Matrix<const T>& b, const Matrix<T>& c, int tile,
              bool accumulate = false, std::vector<WorkerStats>* stats = nullptr);

// The codelet's name and its history-based performance model's symbol:
// "fnndtps_sgemm_tile" / "fnndtps_dgemm_tile" (and "fnndtps_sgemm_tile_tf32": another model).
const char* codelet_name(Precision p, bool tf32 = false);

}  // namespace gemm
