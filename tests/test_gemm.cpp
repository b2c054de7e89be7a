// GEMM tiles (codelets/gemm.hpp): one test source for every backend (Thrust's testing/ style).
// - Tile kernels: Cpu (OpenBLAS) and, when built with CUDA, Cuda (cuBLAS; skipped where no
//   device is present), in float and double, against the plain reference gemm::ref (the
//   oracle, Ginkgo's <Op>IsEquivalentToRef) on awkward sizes: 1x1x1, odd, one row / column,
//   larger than a warp, leading dimensions above the rows with poisoned padding that must stay
//   bit for bit, C poisoned when beta = 0 (never read), inputs that must stay untouched.
// - The whole StarPU tiled product on ragged sizes, both splits (2d: C blocks over the whole k;
//   3d: block products), uniform and mixed block widths, several products on one registration:
//   on the workers StarPU finds (2 CPU workers here; CPUs + GPU on the GPU machine), on CPU
//   workers alone and on the GPU alone (FP32 by default, TF32 when asked).
// - The weights of seed 001 eqs. (3)-(5), the block widths and the block filters.
//
// Tolerance, per element: |C - C_ref| <= (k + 2) u (|A| |B| + |beta| |C0|), u the unit
// roundoff of T (2^-24, 2^-53). That is the classical bound for a dot product of length k
// summed in any order (Higham, Accuracy and Stability of Numerical Algorithms, eq. 3.5: gamma_k
// = k u / (1 - k u)), plus one rounding for beta C0 and one for the final add; it holds for
// OpenBLAS's and cuBLAS's blocked, FMA-based orders alike (FMA only removes roundings). A wrong
// index or a missed tile errs by O(|A| |B|), which is k / (k + 2) u ~ 1e7 times larger in
// float. The data has exact zeros, so the bound is tight where products vanish.
#include <gtest/gtest.h>
#include <starpu.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "codelets/gemm.hpp"
#include "tests/backend_cases.hpp"
#ifdef FNNDTPS_TEST_CUDA
#include <cuda_runtime.h>

#include "codelets/cuda/check.hpp"
#include "codelets/cuda/gemm_cuda.hpp"
#endif

extern "C" void openblas_set_num_threads(int);

namespace {

using test_support::Case;
using test_support::CaseNames;
using test_support::is_poison;
using test_support::poison;
#ifdef FNNDTPS_TEST_CUDA
using test_support::cuda_device_present;
#endif

// The GPU-alone tests' first line: skipped where the build or the machine has no CUDA worker.
#ifdef FNNDTPS_TEST_CUDA
#define SKIP_WITHOUT_CUDA_WORKER()                                                         \
  do {                                                                                     \
    std::string why_;                                                                      \
    if (!cuda_device_present(&why_)) GTEST_SKIP() << "no CUDA worker: " << why_;           \
  } while (0)
#else
#define SKIP_WITHOUT_CUDA_WORKER() GTEST_SKIP() << "built without CUDA"
#endif

// ------------------------------------------------------------------------- matrices

// Column-major rows x cols with ld = rows + pad; padding poisoned.
template <typename T>
struct Mat {
  int rows = 0, cols = 0, ld = 0;
  std::vector<T> v;
  Mat(int r, int c, int pad) : rows(r), cols(c), ld(r + pad), v(std::size_t(r + pad) * std::size_t(c), poison<T>()) {}
  T& at(int i, int j) { return v[std::size_t(i) + std::size_t(j) * std::size_t(ld)]; }
  const T& at(int i, int j) const { return v[std::size_t(i) + std::size_t(j) * std::size_t(ld)]; }
};

// N(0,1) samples, about one in eight exactly zero.
template <typename T>
Mat<T> random_mat(int rows, int cols, int pad, unsigned seed) {
  Mat<T> m(rows, cols, pad);
  test_support::RandomValues values(seed);
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i) m.at(i, j) = values.next<T>();
  return m;
}

template <typename T>
bool same_bits(const Mat<T>& a, const Mat<T>& b) {
  return a.v.size() == b.v.size() && std::memcmp(a.v.data(), b.v.data(), a.v.size() * sizeof(T)) == 0;
}

template <typename T>
double unit_roundoff() {
  return std::numeric_limits<T>::epsilon() / 2;
}

// got = beta c0 + a b within the bound above; got's padding untouched. `input_rounding`: a
// relative rounding of A's and B's elements before the products (TF32 below), 0 for none.
template <typename T>
::testing::AssertionResult equals_reference(const Mat<T>& got, const Mat<T>& a, const Mat<T>& b, double beta,
                                            const Mat<T>& c0, double input_rounding = 0) {
  const int m = got.rows, n = got.cols, k = a.cols;
  std::vector<double> want(std::size_t(m) * std::size_t(n));
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) want[std::size_t(i) + std::size_t(j) * std::size_t(m)] = double(c0.at(i, j));
  gemm::ref::tile<T>(m, n, k, a.v.data(), a.ld, b.v.data(), b.ld, beta, want.data(), m);
  // |A| |B| + |beta| |C0|, exactly enough in double.
  Mat<double> abs_a(m, k, 0), abs_b(k, n, 0);
  for (int p = 0; p < k; ++p)
    for (int i = 0; i < m; ++i) abs_a.at(i, p) = std::fabs(double(a.at(i, p)));
  for (int j = 0; j < n; ++j)
    for (int p = 0; p < k; ++p) abs_b.at(p, j) = std::fabs(double(b.at(p, j)));
  std::vector<double> bound(want.size());
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i)
      bound[std::size_t(i) + std::size_t(j) * std::size_t(m)] = beta == 0 ? 0 : std::fabs(beta * double(c0.at(i, j)));
  gemm::ref::tile<double>(m, n, k, abs_a.v.data(), m, abs_b.v.data(), k, 1.0, bound.data(), m);
  const double g = double(k + 2) * unit_roundoff<T>() + 2 * input_rounding;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      const std::size_t x = std::size_t(i) + std::size_t(j) * std::size_t(m);
      const double v = double(got.at(i, j));
      if (!(std::fabs(v - want[x]) <= g * bound[x]))
        return ::testing::AssertionFailure()
               << "C(" << i << ", " << j << ") = " << v << (is_poison(got.at(i, j)) ? " (never written)" : "")
               << ", want " << want[x] << ": error " << std::fabs(v - want[x]) << " > bound " << g * bound[x];
    }
    for (int i = m; i < got.ld; ++i)
      if (!is_poison(got.at(i, j)))
        return ::testing::AssertionFailure() << "padding (" << i << ", " << j << ") overwritten";
  }
  return ::testing::AssertionSuccess();
}

// TF32 products (--tf32): A's and B's elements rounded to 10 mantissa bits before an FP32
// accumulation; by truncation at worst, a relative 2^-10 each, so each product a b errs by up to
// 2 * 2^-10 (plus the FP32 bound). A wrong index still errs by O(|A| |B|), ~250 times more.
template <typename T>
::testing::AssertionResult equals_reference_tf32(const Mat<T>& got, const Mat<T>& a, const Mat<T>& b, double beta,
                                                 const Mat<T>& c0) {
  return equals_reference(got, a, b, beta, c0, 0x1p-10);
}

struct Size {
  int m, n, k;
};
std::string describe(const Size& s, int pad, double beta) {
  std::ostringstream o;
  o << s.m << " x " << s.n << " x " << s.k << ", pad " << pad << ", beta " << beta;
  return o.str();
}
// 1x1x1, odd, a single row / column / inner index, past a warp (32) and a CUDA tile (64-128).
const Size kTileSizes[] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {100, 1, 100}, {1, 100, 1},
                           {1, 1, 257}, {3, 130, 2}, {129, 67, 33}, {200, 150, 190}};

// ------------------------------------------------------------------------- backends
struct Cpu {
  static constexpr const char* kName = "Cpu";
  static bool available(std::string*) { return true; }
  template <typename T>
  static void tile(const Size& s, const Mat<T>& a, const Mat<T>& b, T beta, Mat<T>& c) {
    gemm::cpu::tile<T>(s.m, s.n, s.k, a.v.data(), a.ld, b.v.data(), b.ld, beta, c.v.data(), c.ld);
  }
};

#ifdef FNNDTPS_TEST_CUDA

// Host buffers to the device, gemm::cuda::tile on a stream of our own, everything back
// (inputs included, to check that the device left them untouched).
struct Cuda {
  static constexpr const char* kName = "Cuda";
  static bool available(std::string* why) { return cuda_device_present(why); }
  template <typename T>
  static void tile(const Size& s, Mat<T>& a, Mat<T>& b, T beta, Mat<T>& c) {
    cudaStream_t stream;
    cublasHandle_t handle;
    FNNDTPS_CUDA_CHECK(cudaStreamCreate(&stream));
    FNNDTPS_CUBLAS_CHECK(cublasCreate(&handle));
    FNNDTPS_CUBLAS_CHECK(cublasSetStream(handle, stream));
    T* d[3];
    Mat<T>* h[3] = {&a, &b, &c};
    for (int i = 0; i < 3; ++i) {
      FNNDTPS_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d[i]), h[i]->v.size() * sizeof(T)));
      FNNDTPS_CUDA_CHECK(cudaMemcpy(d[i], h[i]->v.data(), h[i]->v.size() * sizeof(T), cudaMemcpyHostToDevice));
    }
    gemm::cuda::tile<T>(handle, s.m, s.n, s.k, d[0], a.ld, d[1], b.ld, beta, d[2], c.ld);
    FNNDTPS_CUDA_CHECK(cudaStreamSynchronize(stream));
    FNNDTPS_CUDA_CHECK(cudaGetLastError());
    for (int i = 0; i < 3; ++i) {
      FNNDTPS_CUDA_CHECK(cudaMemcpy(h[i]->v.data(), d[i], h[i]->v.size() * sizeof(T), cudaMemcpyDeviceToHost));
      FNNDTPS_CUDA_CHECK(cudaFree(d[i]));
    }
    FNNDTPS_CUBLAS_CHECK(cublasDestroy(handle));
    FNNDTPS_CUDA_CHECK(cudaStreamDestroy(stream));
  }
};
#endif

using Cases = ::testing::Types<Case<Cpu, float>, Case<Cpu, double>
#ifdef FNNDTPS_TEST_CUDA
                               ,
                               Case<Cuda, float>, Case<Cuda, double>
#endif
                               >;

template <typename C>
class GemmTile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!C::Backend::available(&why)) GTEST_SKIP() << "backend unavailable: " << why;
  }
};
TYPED_TEST_SUITE(GemmTile, Cases, CaseNames);

TYPED_TEST(GemmTile, EqualsReference) {
  using T = typename TypeParam::Scalar;
  using Backend = typename TypeParam::Backend;
  unsigned seed = 1;
  for (const Size& s : kTileSizes)
    for (int pad : {0, 3})
      for (double beta : {0.0, 1.0, -0.5}) {
        SCOPED_TRACE(describe(s, pad, beta));
        Mat<T> a = random_mat<T>(s.m, s.k, pad, seed++), b = random_mat<T>(s.k, s.n, pad + 1, seed++);
        // beta = 0 must not read C: poison every element, so a read shows as NaN.
        Mat<T> c0 = beta == 0 ? Mat<T>(s.m, s.n, 2 * pad) : random_mat<T>(s.m, s.n, 2 * pad, seed++);
        const Mat<T> a0 = a, b0 = b;
        Mat<T> c = c0;
        Backend::tile(s, a, b, T(beta), c);
        EXPECT_TRUE(equals_reference(c, a0, b0, beta, c0));
        EXPECT_TRUE(same_bits(a, a0)) << "A changed";
        EXPECT_TRUE(same_bits(b, b0)) << "B changed";
      }
}

// A small case checked by hand: [1 2; 3 4] [5 6; 7 8] = [19 22; 43 50] (row-major notation);
// column-major storage {1, 3, 2, 4}.
TYPED_TEST(GemmTile, KnownAnswer) {
  using T = typename TypeParam::Scalar;
  using Backend = typename TypeParam::Backend;
  Mat<T> a(2, 2, 0), b(2, 2, 0), c(2, 2, 1);
  a.v = {1, 3, 2, 4};
  b.v = {5, 7, 6, 8};
  for (int j = 0; j < 2; ++j) c.at(0, j) = c.at(1, j) = T(100);
  Backend::tile(Size{2, 2, 2}, a, b, T(1), c);
  EXPECT_EQ(c.at(0, 0), T(119));
  EXPECT_EQ(c.at(1, 0), T(143));
  EXPECT_EQ(c.at(0, 1), T(122));
  EXPECT_EQ(c.at(1, 1), T(150));
  EXPECT_TRUE(is_poison(c.at(2, 0)) && is_poison(c.at(2, 1))) << "padding overwritten";
}

// ------------------------------------------------------------------------- weights, filters
TEST(GemmWeights, SeedEquations3To5) {
  // 32 x 16 x 8 float tile: IA = 2 * 32 * 16 * 8 = 8192 flops; DA_in = (32*8 + 8*16) * 4 =
  // 1536 bytes (+ 32*16*4 = 2048 with C read), DA_out = 2048.
  const gemm::TileWeight w0 = gemm::tile_weight(32, 16, 8, 4, false);
  EXPECT_DOUBLE_EQ(w0.sub.ia, 8192);
  EXPECT_DOUBLE_EQ(w0.sub.da, 1536 + 2048);
  EXPECT_DOUBLE_EQ(w0.weight, 8192.0 / 3584.0);
  const gemm::TileWeight w1 = gemm::tile_weight(32, 16, 8, 4, true);
  EXPECT_DOUBLE_EQ(w1.sub.da, 1536 + 2048 + 2048);
  EXPECT_DOUBLE_EQ(w1.weight, 8192.0 / 5632.0);
  // Full square tiles are more compute-heavy than ragged edge tiles (eq. (6) sends those to
  // CPUs): w = 2 b^3 / (4 b^2 e) = b / (2 e) for accumulating b x b x b tiles.
  EXPECT_DOUBLE_EQ(gemm::tile_weight(512, 512, 512, 4, true).weight, 64.0);
  EXPECT_LT(gemm::tile_weight(512, 3, 512, 4, true).weight, gemm::tile_weight(512, 512, 512, 4, true).weight);
  EXPECT_DOUBLE_EQ(gemm::tile_weight(512, 512, 512, 8, true).weight, 32.0);
}

TEST(GemmTiles, CountAndExtents) {
  EXPECT_EQ(gemm::tile_count(130, 32), 5);
  EXPECT_EQ(gemm::tile_count(128, 32), 4);
  EXPECT_EQ(gemm::tile_count(5, 100), 1);
  EXPECT_EQ(gemm::tile_extent(130, 32, 0), 32);
  EXPECT_EQ(gemm::tile_extent(130, 32, 4), 2);
  EXPECT_EQ(gemm::tile_extent(5, 100, 0), 5);
  EXPECT_EQ(gemm::task_count(130, 97, 61, 32), 5LL * 4 * 2);
  EXPECT_EQ(gemm::task_count(16384, 16384, 16384, 1024), 4096LL);
}

// StarPU for one test: the workers it finds, or a fixed number of CPU and CUDA workers.
class Starpu {
 public:
  explicit Starpu(int ncpus = -1, int ncuda = -1) {
    setenv("STARPU_SILENT", "1", 0);
    openblas_set_num_threads(1);
    starpu_conf conf;
    starpu_conf_init(&conf);
    if (ncpus >= 0 || ncuda >= 0) {
      conf.ncpus = ncpus;
      conf.ncuda = ncuda;
      conf.precedence_over_environment_variables = 1;
    }
    ok_ = starpu_init(&conf) == 0;
    if (ok_) starpu_cublas_init();
  }
  ~Starpu() {
    if (!ok_) return;
    starpu_cublas_shutdown();
    starpu_shutdown();
  }
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
};

TEST(GemmTiles, FilterCutsFixedBlocksWithARaggedEdge) {
  Starpu starpu;
  ASSERT_TRUE(starpu.ok());
  const int m = 130, n = 97, ld = 133, b = 32;
  std::vector<float> x(std::size_t(ld) * n);
  starpu_data_handle_t h;
  starpu_matrix_data_register(&h, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(x.data()), ld, m, n, sizeof(float));
  starpu_data_filter rows{}, cols{};
  rows.filter_func = gemm::tile_filter_rows;
  rows.nchildren = unsigned(gemm::tile_count(m, b));
  rows.filter_arg = b;
  cols.filter_func = gemm::tile_filter_cols;
  cols.nchildren = unsigned(gemm::tile_count(n, b));
  cols.filter_arg = b;
  starpu_data_map_filters(h, 2, &rows, &cols);
  for (int i = 0; i < gemm::tile_count(m, b); ++i)
    for (int j = 0; j < gemm::tile_count(n, b); ++j) {
      starpu_data_handle_t t = starpu_data_get_sub_data(h, 2, i, j);
      EXPECT_EQ(int(starpu_matrix_get_nx(t)), i < 4 ? 32 : 2) << i << "," << j;
      EXPECT_EQ(int(starpu_matrix_get_ny(t)), j < 3 ? 32 : 1) << i << "," << j;
      EXPECT_EQ(int(starpu_matrix_get_local_ld(t)), ld);
      EXPECT_EQ(reinterpret_cast<float*>(starpu_matrix_get_local_ptr(t)),
                x.data() + i * b + std::size_t(j) * b * ld)
          << i << "," << j;
    }
  starpu_data_unpartition(h, STARPU_MAIN_RAM);
  starpu_data_unregister(h);
}

// ------------------------------------------------------------------------- the tiled product
struct Tiled {
  Size s;
  int tile;
};
const Tiled kTiled[] = {
    {{130, 97, 61}, 32},   // ragged in every dimension (edges 2, 1, 29)
    {{1, 1, 1}, 4},        // one element
    {{64, 64, 64}, 64},    // one full tile
    {{5, 5, 5}, 100},      // tile larger than the matrix
    {{100, 1, 100}, 7},    // a column vector result
    {{33, 17, 65}, 16},    // edges of 1
    {{257, 130, 96}, 64},  // larger, edges 1 and 2, k a multiple
};

template <typename T>
void check_tiled(bool accumulate) {
  unsigned seed = 500;
  for (const Tiled& t : kTiled) {
    const Size& s = t.s;
    SCOPED_TRACE(describe(s, 3, accumulate ? 1 : 0) + ", tile " + std::to_string(t.tile));
    const Mat<T> a = random_mat<T>(s.m, s.k, 3, seed++), b = random_mat<T>(s.k, s.n, 1, seed++);
    const Mat<T> c0 = accumulate ? random_mat<T>(s.m, s.n, 2, seed++) : Mat<T>(s.m, s.n, 2);
    Mat<T> c = c0;
    std::vector<gemm::WorkerStats> stats;
    gemm::multiply<T>({a.v.data(), s.m, s.k, a.ld}, {b.v.data(), s.k, s.n, b.ld}, {c.v.data(), s.m, s.n, c.ld},
                      t.tile, accumulate, &stats);
    EXPECT_TRUE(equals_reference(c, a, b, accumulate ? 1.0 : 0.0, c0));
    // Every tile product ran once, and the ragged tiles' flops add up to 2 m n k.
    long long tasks = 0;
    double gflop = 0;
    for (const auto& w : stats) {
      tasks += w.tasks;
      gflop += w.gflop;
    }
    EXPECT_EQ(tasks, gemm::task_count(s.m, s.n, s.k, t.tile));
    EXPECT_NEAR(gflop, 2e-9 * s.m * s.n * s.k, 1e-12 * gflop);
  }
}

TEST(GemmTiled, FloatOnEveryWorker) {
  Starpu starpu;
  ASSERT_TRUE(starpu.ok());
  check_tiled<float>(false);
  check_tiled<float>(true);
}
TEST(GemmTiled, DoubleOnEveryWorker) {
  Starpu starpu;
  ASSERT_TRUE(starpu.ok());
  check_tiled<double>(false);
  check_tiled<double>(true);
}
TEST(GemmTiled, CpuWorkersOnly) {
  Starpu starpu(2, 0);
  ASSERT_TRUE(starpu.ok());
  check_tiled<float>(false);
  check_tiled<double>(true);
}
TEST(GemmTiled, CudaWorkerOnly) {
  SKIP_WITHOUT_CUDA_WORKER();
  Starpu starpu(0, 1);
  ASSERT_TRUE(starpu.ok());
  ASSERT_EQ(starpu_cuda_worker_get_count(), 1u);
  check_tiled<float>(false);
  check_tiled<double>(true);
}

// ------------------------------------------------------------------------- splits and mixed blocks
TEST(GemmBlocks, WidthsInTurnTheLastCut) {
  EXPECT_EQ(gemm::blocks(10, {4}), (std::vector<int>{4, 4, 2}));
  EXPECT_EQ(gemm::blocks(10, {4, 2, 1}), (std::vector<int>{4, 2, 1, 3}));
  EXPECT_EQ(gemm::blocks(7, {4, 2, 1}), (std::vector<int>{4, 2, 1}));
  EXPECT_EQ(gemm::blocks(3, {100, 1}), (std::vector<int>{3}));
  EXPECT_EQ(gemm::blocks(1, {1}), (std::vector<int>{1}));
  EXPECT_THROW(gemm::blocks(0, {4}), std::invalid_argument);
  EXPECT_THROW(gemm::blocks(10, {}), std::invalid_argument);
  EXPECT_THROW(gemm::blocks(10, {4, 0}), std::invalid_argument);
  EXPECT_THROW(gemm::blocks(10, {-1}), std::invalid_argument);
}

TEST(GemmBlocks, TaskCountsAndSubTasks) {
  const gemm::Decomposition two{gemm::Split::TwoD, {4, 2, 1}, false};
  const gemm::Decomposition three{gemm::Split::ThreeD, {4, 2, 1}, false};
  // m = 10: {4, 2, 1, 3}; n = 7: {4, 2, 1}; k = 5: {4, 1}.
  EXPECT_EQ(gemm::task_count(10, 7, 5, two), 12);
  EXPECT_EQ(gemm::task_count(10, 7, 5, three), 24);
  EXPECT_EQ(gemm::task_count(16384, 16384, 16384, gemm::Decomposition{gemm::Split::TwoD, {1024}, false}), 256);
  EXPECT_EQ(gemm::task_count(16384, 16384, 16384, gemm::Decomposition{gemm::Split::ThreeD, {1024}, false}), 4096);
  for (const gemm::Decomposition& d : {two, three}) {
    const std::vector<gemm::SubTask> st = gemm::subtasks(10, 7, 5, d, sizeof(float));
    ASSERT_EQ((long long)st.size(), gemm::task_count(10, 7, 5, d));
    double ia = 0;
    for (const gemm::SubTask& t : st) {
      ia += t.w.sub.ia;
      EXPECT_DOUBLE_EQ(t.w.sub.ia, 2.0 * t.m * t.n * t.k);
      EXPECT_DOUBLE_EQ(t.w.weight, t.w.sub.ia / t.w.sub.da);
    }
    EXPECT_DOUBLE_EQ(ia, 2.0 * 10 * 7 * 5);  // the sub-tasks cover the product once
  }
  // 2d: one task per C block over the whole k, never reading C unless accumulating.
  const std::vector<gemm::SubTask> st = gemm::subtasks(10, 7, 5, two, sizeof(float));
  EXPECT_EQ(st[0].k, 5);
  EXPECT_FALSE(st[0].reads_c);
  EXPECT_TRUE(gemm::subtasks(10, 7, 5, two, sizeof(float), true)[0].reads_c);
  // Mixed widths give sub-tasks of different IA and different eq. (5) weights (seed 001
  // §2.2.3): the 4 x 4 block outweighs the 1 x 1 one.
  const auto big = st[0], small = st[std::size_t(2 * 3 + 2)];  // C block (0, 0) and (2, 2)
  EXPECT_EQ(big.m * big.n, 16);
  EXPECT_EQ(small.m * small.n, 1);
  EXPECT_GT(big.w.sub.ia, small.w.sub.ia);
  EXPECT_GT(big.w.weight, small.w.weight);
}

TEST(GemmTiles, BlockFilterCutsGivenWidths) {
  Starpu starpu;
  ASSERT_TRUE(starpu.ok());
  const int m = 10, n = 7, ld = 13;
  std::vector<double> x(std::size_t(ld) * n);
  starpu_data_handle_t h;
  starpu_matrix_data_register(&h, STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(x.data()), ld, m, n, sizeof(double));
  std::vector<unsigned> at_m{0, 4, 6, 7, 10}, at_n{0, 4, 6, 7};
  starpu_data_filter rows{}, cols{};
  rows.filter_func = gemm::block_filter_rows;
  rows.nchildren = 4;
  rows.filter_arg_ptr = at_m.data();
  cols.filter_func = gemm::block_filter_cols;
  cols.nchildren = 3;
  cols.filter_arg_ptr = at_n.data();
  starpu_data_map_filters(h, 2, &rows, &cols);
  for (unsigned i = 0; i < 4; ++i)
    for (unsigned j = 0; j < 3; ++j) {
      starpu_data_handle_t t = starpu_data_get_sub_data(h, 2, i, j);
      EXPECT_EQ(starpu_matrix_get_nx(t), at_m[i + 1] - at_m[i]) << i << "," << j;
      EXPECT_EQ(starpu_matrix_get_ny(t), at_n[j + 1] - at_n[j]) << i << "," << j;
      EXPECT_EQ(int(starpu_matrix_get_local_ld(t)), ld);
      EXPECT_EQ(reinterpret_cast<double*>(starpu_matrix_get_local_ptr(t)),
                x.data() + at_m[i] + std::size_t(at_n[j]) * ld)
          << i << "," << j;
    }
  starpu_data_unpartition(h, STARPU_MAIN_RAM);
  starpu_data_unregister(h);
}

struct Cut {
  Size s;
  gemm::Split split;
  std::vector<int> tiles;
};
const Cut kCuts[] = {
    {{130, 97, 61}, gemm::Split::TwoD, {32}},               // ragged 2d (edges 2, 1)
    {{130, 97, 61}, gemm::Split::ThreeD, {32}},             // ragged 3d
    {{130, 97, 61}, gemm::Split::TwoD, {40, 16, 7}},        // mixed widths, ragged remainders
    {{130, 97, 61}, gemm::Split::ThreeD, {40, 16, 7}},      // mixed in k too
    {{1, 1, 1}, gemm::Split::TwoD, {4, 1}},                 // one element
    {{100, 1, 100}, gemm::Split::TwoD, {33, 5}},            // a column vector result
    {{257, 130, 96}, gemm::Split::ThreeD, {64, 32, 32, 1}}, // width-1 blocks among large ones
    {{5, 5, 5}, gemm::Split::TwoD, {100}},                  // one block larger than the matrix
};

std::string describe(const Cut& c) {
  std::string t;
  for (int w : c.tiles) t += (t.empty() ? "" : ",") + std::to_string(w);
  return describe(c.s, 3, 0) + ", split " + gemm::to_string(c.split) + ", tiles " + t;
}

// Three products on one registration: C = A B, then C += A B twice (so every block of A and B
// is reused where it was left), each checked against the reference; every sub-task ran once a
// product and the sub-tasks' IA add up to 2 m n k.
template <typename T>
void check_products(bool tf32 = false) {
  unsigned seed = 900;
  for (const Cut& cut : kCuts) {
    const Size& s = cut.s;
    SCOPED_TRACE(describe(cut));
    const Mat<T> a = random_mat<T>(s.m, s.k, 3, seed++), b = random_mat<T>(s.k, s.n, 1, seed++);
    Mat<T> c(s.m, s.n, 2);  // poisoned: the first product must not read it
    const gemm::Decomposition d{cut.split, cut.tiles, tf32};
    gemm::Product<T> product({a.v.data(), s.m, s.k, a.ld}, {b.v.data(), s.k, s.n, b.ld},
                             {c.v.data(), s.m, s.n, c.ld}, d);
    EXPECT_EQ(product.tasks(), gemm::task_count(s.m, s.n, s.k, d));
    for (int it = 0; it < 3; ++it) {
      SCOPED_TRACE("product " + std::to_string(it));
      const Mat<T> c0 = c;
      std::vector<gemm::WorkerStats> stats;
      product.run(it > 0, &stats);
      // Product::run returns with C in host memory: read it while A, B, C stay registered.
      if (tf32)
        EXPECT_TRUE(equals_reference_tf32(c, a, b, it > 0 ? 1.0 : 0.0, c0));
      else
        EXPECT_TRUE(equals_reference(c, a, b, it > 0 ? 1.0 : 0.0, c0));
      long long tasks = 0;
      double gflop = 0;
      for (const auto& w : stats) {
        tasks += w.tasks;
        gflop += w.gflop;
      }
      EXPECT_EQ(tasks, product.tasks());
      EXPECT_NEAR(gflop, 2e-9 * s.m * s.n * s.k, 1e-12 * gflop);
    }
  }
}

TEST(GemmProduct, FloatOnEveryWorker) {
  Starpu starpu;
  ASSERT_TRUE(starpu.ok());
  check_products<float>();
}
TEST(GemmProduct, DoubleOnEveryWorker) {
  Starpu starpu;
  ASSERT_TRUE(starpu.ok());
  check_products<double>();
}
TEST(GemmProduct, CpuWorkersOnly) {
  Starpu starpu(2, 0);
  ASSERT_TRUE(starpu.ok());
  check_products<float>();
  check_products<double>();
}
// On the GPU alone the FP32 bound of equals_reference holds only without TF32 (TF32 rounds
// the inputs to 10 mantissa bits, ~2^13 times the FP32 bound): this is the test that the
// default is true FP32.
TEST(GemmProduct, CudaWorkerOnly) {
  SKIP_WITHOUT_CUDA_WORKER();
  Starpu starpu(0, 1);
  ASSERT_TRUE(starpu.ok());
  ASSERT_EQ(starpu_cuda_worker_get_count(), 1u);
  check_products<float>();
  check_products<double>();
}
TEST(GemmProduct, CudaWorkerTf32) {
  SKIP_WITHOUT_CUDA_WORKER();
  Starpu starpu(0, 1);
  ASSERT_TRUE(starpu.ok());
  check_products<float>(true);
}

TEST(GemmTiled, RefusesSizesThatDoNotAgree) {
  std::vector<float> x(100);
  EXPECT_THROW(gemm::multiply<float>({x.data(), 3, 4, 3}, {x.data(), 5, 2, 5}, {x.data(), 3, 2, 3}, 2),
               std::invalid_argument);
  EXPECT_THROW(gemm::multiply<float>({x.data(), 3, 4, 3}, {x.data(), 4, 2, 4}, {x.data(), 3, 2, 3}, 0),
               std::invalid_argument);
  EXPECT_THROW(gemm::multiply<float>({x.data(), 3, 4, 2}, {x.data(), 4, 2, 4}, {x.data(), 3, 2, 3}, 2),
               std::invalid_argument);
}

}  // namespace
