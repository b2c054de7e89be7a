// Tiled matrix multiplication, seed 001's workload (DESIGN §4.4): C = A B in float and double,
// cut into b x b tiles by StarPU filters, one task per tile product C_ij (+)= A_ip B_pj.
// Declarations shared by the reference (codelets/reference/gemm.cpp, the test oracle), the CPU
// backend (codelets/cpu/gemm.cpp, OpenBLAS), the CUDA backend (codelets/cuda/gemm_cuda.hpp,
// cuBLAS) and the StarPU tasks (codelets/gemm_tasks.cpp).
//
// Conventions, for every backend:
// - Matrices are COLUMN-MAJOR (BLAS's order): element (i, j) of a rows x cols matrix is at
//   p[i + j * ld], ld >= rows. In StarPU's matrix interface that is nx = rows (the contiguous
//   dimension), ny = cols, ld = ld.
// - A is m x k, B is k x n, C is m x n; no transposes.
// - Tiles are b x b from the top-left corner; the last tile row / column holds the remainder
//   (m - (mt - 1) b rows, etc.), so only edge tiles are ragged and every other tile is exactly
//   b x b. StarPU's own block filters split evenly instead (130 rows in 5 parts: 26 each), so
//   the tasks use their own filter, tile_filter_rows/cols below.
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

// One tile task C_ij (+)= A_ip B_pj of m x n x k elements of `elem_size` bytes:
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

inline int tile_count(int extent, int tile) { return (extent + tile - 1) / tile; }
// Extent of tile `id` (0-based) of a dimension of `extent` elements cut every `tile`.
inline int tile_extent(int extent, int tile, int id) {
  const int rest = extent - id * tile;
  return rest < tile ? rest : tile;
}

// ---------------------------------------------------------------------------------------
// The whole tiled product as StarPU tasks.

enum class Precision { Single, Double };

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
  unsigned tasks = 0;    // tile products C_ij (+)= A_ip B_pj it ran
  unsigned c_tiles = 0;  // distinct C tiles it wrote
  double gflop = 0;      // sum of its tasks' IA, in 10^9 floating-point operations
  double busy_ms = -1;   // time inside its tasks; only with StarPU profiling on
                         // (STARPU_PROFILING=1), else -1
};

// C = A B (accumulate == false) or C += A B (accumulate == true), in b x b tiles (tile >= 1).
// One task per (i, j, p), submitted row of C tiles by row, p innermost; the first task of each
// C tile overwrites it (beta = 0, STARPU_W: C is never sent to a device) unless accumulating.
// Each task carries IA as task->flops and IA, DA and w in its argument (tile_weight). The
// matrices are registered for this call only and unregistered before it returns, so data
// starts and ends in host memory. StarPU must be initialised; with CUDA workers the caller
// must have called starpu_cublas_init() (and calls starpu_cublas_shutdown() before
// starpu_shutdown). Blocks until C is back in host memory. Sizes must agree (throws
// std::invalid_argument otherwise).
template <typename T>
void multiply(const Matrix<const T>& a, const Matrix<const T>& b, const Matrix<T>& c, int tile,
              bool accumulate = false, std::vector<WorkerStats>* stats = nullptr);

// Tile tasks one product submits.
long long task_count(int m, int n, int k, int tile);

// The codelet's name and its history-based performance model's symbol:
// "fnndtps_sgemm_tile" / "fnndtps_dgemm_tile".
const char* codelet_name(Precision p);

}  // namespace gemm
