// CUDA backend of codelets/gemm.hpp: one tile product through cuBLAS on device pointers,
// enqueued on the handle's stream (inside a codelet: starpu_cublas_get_local_handle(), to
// which StarPU's starpu_cublas_init() bound the worker's stream). Same semantics and layout as
// gemm::cpu::tile: column-major, C = beta C + A B, beta == 0 does not read C. cuBLAS's default
// math mode: true FP32/FP64, no TF32.
#pragma once

#include <cublas_v2.h>

#include <cstdio>
#include <cstdlib>

namespace gemm::cuda {

template <typename T>
void tile(cublasHandle_t handle, int m, int n, int k, const T* a, int lda, const T* b, int ldb,
          T beta, T* c, int ldc);

namespace detail {
// Inside StarPU callbacks no exception may cross into C: report file, line, the call and the
// status's name, then abort (as FNNDTPS_CUDA_CHECK does for the runtime API).
inline void check(cublasStatus_t status, const char* what, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "%s:%d: cuBLAS error %s (%s) in %s\n", file, line, cublasGetStatusName(status),
               cublasGetStatusString(status), what);
  std::fflush(stderr);
  std::abort();
}
}  // namespace detail

}  // namespace gemm::cuda

// FNNDTPS_CUBLAS_CHECK(cublasSgemm(...)): checks a cuBLAS call's status.
#define FNNDTPS_CUBLAS_CHECK(call) ::gemm::cuda::detail::check((call), #call, __FILE__, __LINE__)
