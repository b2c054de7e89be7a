// The libraries alone, without StarPU: seed 001 §2.2.1 (the CPU functions: one OpenBLAS
// sgemm on every core) and §2.2.2 (one cuBLAS call on the GPU), the first two of its three
// experiments (bench/seed001.sh runs the third, DTPS, with the gemm app).
//   bench_blas cpu  --size N [--reps R] [--precision s|d] [--threads T]
//   bench_blas cuda --size N [--reps R] [--precision s|d] [--tf32]
// cpu: OpenBLAS on T threads (default: every hardware thread), one warm-up call, then R timed
//   calls (steady clock). cuda: A and B copied once to device memory (timed with events: the
//   H2D figure), one warm-up call, R timed calls on resident data (events), C copied back once
//   (the D2H figure); FP32 by default (CUBLAS_DEFAULT_MATH), TF32 tensor cores with --tf32.
// Each run spot-checks 64 elements of C against a double dot product (relative to the largest
// |C| element checked; tolerance 1e-4 FP32, 1e-12 FP64, 1e-2 TF32) and prints one RESULT line:
//   RESULT blas backend=.. precision=.. size=N threads=T math=.. reps=R median_ms=.. min_ms=..
//          max_ms=.. gflops=.. h2d_ms=.. d2h_ms=.. gflops_with_copies=.. error=.. check=ok|FAILED
// (h2d_ms, d2h_ms and gflops_with_copies only for cuda: 2 n^3 / (h2d + median + d2h)).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#ifdef FNNDTPS_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "codelets/cuda/check.hpp"
#include "codelets/cuda/gemm_cuda.hpp"
#endif

namespace {

struct Usage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* const kUsage =
    "usage: bench_blas cpu|cuda --size N [--reps R] [--precision s|d] [--threads T] [--tf32]\n"
    "  One BLAS gemm C = A B of N x N matrices, without StarPU: cpu = OpenBLAS on T threads\n"
    "  (default every hardware thread); cuda = cuBLAS on resident data (H2D and D2H timed apart).\n"
    "  R timed calls (default 5) after one warm-up; prints a RESULT line.\n";

struct Options {
  bool cuda = false, single = true, tf32 = false;
  int size = 0, reps = 5, threads = 0;
};

int positive(const std::string& flag, const char* v) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (!*v || *end || errno == ERANGE || x < 1 || x > INT_MAX)
    throw Usage(flag + " needs a positive integer, got '" + v + "'");
  return int(x);
}

Options parse(int argc, char** argv) {
  if (argc < 2) throw Usage("give the backend, cpu or cuda (see --help)");
  Options o;
  const std::string backend = argv[1];
  if (backend != "cpu" && backend != "cuda") throw Usage("unknown backend '" + backend + "': use cpu or cuda");
  o.cuda = backend == "cuda";
  for (int i = 2; i < argc; ++i) {
    const std::string f = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw Usage(f + " needs a value");
      return argv[++i];
    };
    if (f == "--size") o.size = positive(f, value());
    else if (f == "--reps") o.reps = positive(f, value());
    else if (f == "--threads") o.threads = positive(f, value());
    else if (f == "--tf32") o.tf32 = true;
    else if (f == "--precision") {
      const std::string p = value();
      if (p != "s" && p != "d") throw Usage("unknown precision '" + p + "': use s or d");
      o.single = p == "s";
    } else throw Usage("unknown option '" + f + "' (see --help)");
  }
  if (o.size == 0) throw Usage("--size N is required");
  if (o.tf32 && (!o.cuda || !o.single)) throw Usage("--tf32 applies to cuda float products only");
  if (o.threads && o.cuda) throw Usage("--threads applies to the cpu backend only");
#ifndef FNNDTPS_HAVE_CUDA
  if (o.cuda) throw Usage("built without CUDA: the cuda backend is not available here");
#endif
  return o;
}

// Deterministic values uniform in [-1, 1) (splitmix64 of the index), on every hardware thread.
template <typename T>
void fill(std::vector<T>& v, std::uint64_t stream) {
  const std::size_t n = v.size(), threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::size_t i = t * n / threads; i < (t + 1) * n / threads; ++i) {
        std::uint64_t z = (stream << 48) + i + 0x9e3779b97f4a7c15ULL;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        v[i] = T(double(z >> 11) * 0x1.0p-52 - 1.0);
      }
    });
  for (auto& t : pool) t.join();
}

// 64 elements of C (column-major, n x n) against double dot products: max error over max |C|.
template <typename T>
double spot_error(const std::vector<T>& a, const std::vector<T>& b, const std::vector<T>& c, int n) {
  double diff = 0, scale = 0;
  for (int s = 0; s < 64; ++s) {
    const std::size_t i = std::size_t(s * 7919) % std::size_t(n), j = std::size_t(s * 104729 + 3) % std::size_t(n);
    double want = 0;
    for (std::size_t p = 0; p < std::size_t(n); ++p) want += double(a[i + p * n]) * double(b[p + j * n]);
    const double d = std::fabs(double(c[i + j * n]) - want);
    diff = std::isnan(d) || d > diff ? d : diff;
    scale = std::max(scale, std::fabs(want));
  }
  return scale > 0 ? diff / scale : diff;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

template <typename T>
void cpu_gemm(int n, const T* a, const T* b, T* c) {
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
  else
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
}

template <typename T>
int run(const Options& o) {
  const int n = o.size;
  const std::size_t count = std::size_t(n) * std::size_t(n);
  std::vector<T> a(count), b(count), c(count);
  fill(a, 1);
  fill(b, 2);
  std::vector<double> ms;
  double h2d = -1, d2h = -1;
  int threads = 0;
  if (!o.cuda) {
    threads = o.threads ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    openblas_set_num_threads(threads);
    threads = openblas_get_num_threads();  // what OpenBLAS took (at most its build's maximum)
    cpu_gemm<T>(n, a.data(), b.data(), c.data());  // warm-up: OpenBLAS starts its threads
    for (int r = 0; r < o.reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      cpu_gemm<T>(n, a.data(), b.data(), c.data());
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  } else {
#ifdef FNNDTPS_HAVE_CUDA
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
      throw Usage("no CUDA device here (cudaGetDeviceCount found none): run the cuda backend on a GPU machine");
    const std::size_t bytes = count * sizeof(T);
    T *ha = nullptr, *hb = nullptr, *hc = nullptr, *da = nullptr, *db = nullptr, *dc = nullptr;
    // Pinned copies of the host data, so that the copies run at the link's speed.
    FNNDTPS_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&ha), bytes));
    FNNDTPS_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&hb), bytes));
    FNNDTPS_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&hc), bytes));
    std::memcpy(ha, a.data(), bytes);
    std::memcpy(hb, b.data(), bytes);
    FNNDTPS_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&da), bytes));
    FNNDTPS_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&db), bytes));
    FNNDTPS_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dc), bytes));
    cudaStream_t stream;
    cublasHandle_t handle;
    cudaEvent_t e0, e1;
    FNNDTPS_CUDA_CHECK(cudaStreamCreate(&stream));
    FNNDTPS_CUDA_CHECK(cudaEventCreate(&e0));
    FNNDTPS_CUDA_CHECK(cudaEventCreate(&e1));
    FNNDTPS_CUBLAS_CHECK(cublasCreate(&handle));
    FNNDTPS_CUBLAS_CHECK(cublasSetStream(handle, stream));
    FNNDTPS_CUBLAS_CHECK(cublasSetMathMode(handle, o.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    const auto elapsed = [&] {
      float t = 0;
      FNNDTPS_CUDA_CHECK(cudaEventSynchronize(e1));
      FNNDTPS_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
      return double(t);
    };
    FNNDTPS_CUDA_CHECK(cudaEventRecord(e0, stream));
    FNNDTPS_CUDA_CHECK(cudaMemcpyAsync(da, ha, bytes, cudaMemcpyHostToDevice, stream));
    FNNDTPS_CUDA_CHECK(cudaMemcpyAsync(db, hb, bytes, cudaMemcpyHostToDevice, stream));
    FNNDTPS_CUDA_CHECK(cudaEventRecord(e1, stream));
    h2d = elapsed();
    gemm::cuda::tile<T>(handle, n, n, n, da, n, db, n, T(0), dc, n);  // warm-up
    for (int r = 0; r < o.reps; ++r) {
      FNNDTPS_CUDA_CHECK(cudaEventRecord(e0, stream));
      gemm::cuda::tile<T>(handle, n, n, n, da, n, db, n, T(0), dc, n);
      FNNDTPS_CUDA_CHECK(cudaEventRecord(e1, stream));
      ms.push_back(elapsed());
    }
    FNNDTPS_CUDA_CHECK(cudaGetLastError());
    FNNDTPS_CUDA_CHECK(cudaEventRecord(e0, stream));
    FNNDTPS_CUDA_CHECK(cudaMemcpyAsync(hc, dc, bytes, cudaMemcpyDeviceToHost, stream));
    FNNDTPS_CUDA_CHECK(cudaEventRecord(e1, stream));
    d2h = elapsed();
    std::memcpy(c.data(), hc, bytes);
    FNNDTPS_CUBLAS_CHECK(cublasDestroy(handle));
    FNNDTPS_CUDA_CHECK(cudaEventDestroy(e0));
    FNNDTPS_CUDA_CHECK(cudaEventDestroy(e1));
    FNNDTPS_CUDA_CHECK(cudaStreamDestroy(stream));
    for (T* p : {da, db, dc}) FNNDTPS_CUDA_CHECK(cudaFree(p));
    for (T* p : {ha, hb, hc}) FNNDTPS_CUDA_CHECK(cudaFreeHost(p));
#endif
  }
  const double err = spot_error(a, b, c, n);
  const double tol = !std::is_same_v<T, float> ? 1e-12 : o.tf32 ? 1e-2 : 1e-4;
  const double med = median(ms), flop = 2.0 * double(n) * double(n) * double(n);
  std::printf("RESULT blas backend=%s precision=%s size=%d threads=%d math=%s reps=%d median_ms=%.3f min_ms=%.3f "
              "max_ms=%.3f gflops=%.2f",
              o.cuda ? "cuda" : "cpu", o.single ? "s" : "d", n, threads, o.tf32 ? "tf32" : o.single ? "fp32" : "fp64", o.reps, med,
              *std::min_element(ms.begin(), ms.end()), *std::max_element(ms.begin(), ms.end()), flop / med * 1e-6);
  if (o.cuda)
    std::printf(" h2d_ms=%.3f d2h_ms=%.3f gflops_with_copies=%.2f", h2d, d2h, flop / (h2d + med + d2h) * 1e-6);
  std::printf(" error=%.3g check=%s\n", err, err <= tol ? "ok" : "FAILED");
  return err <= tol ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  try {
    const Options o = parse(argc, argv);
    return o.single ? run<float>(o) : run<double>(o);
  } catch (const Usage& e) {
    std::fprintf(stderr, "bench_blas: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // std::bad_alloc for sizes past the memory
    std::fprintf(stderr, "bench_blas: %s\n", e.what());
    return 1;
  }
}
