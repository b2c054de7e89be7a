// CUDA backend of codelets/gemm.hpp through cuBLAS (see codelets/cuda/gemm_cuda.hpp). Host
// code only: cuBLAS launches the kernels on the handle's stream and returns at once.
#include "codelets/cuda/gemm_cuda.hpp"

#include <type_traits>

namespace gemm::cuda {

template <typename T>
void tile(cublasHandle_t handle, int m, int n, int k, const T* a, int lda, const T* b, int ldb,
          T beta, T* c, int ldc) {
  const T one = 1;
  if constexpr (std::is_same_v<T, float>)
    FNNDTPS_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, lda, b, ldb,
                                     &beta, c, ldc));
  else
    FNNDTPS_CUBLAS_CHECK(cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, lda, b, ldb,
                                     &beta, c, ldc));
}

template void tile<float>(cublasHandle_t, int, int, int, const float*, int, const float*, int, float,
                          float*, int);
template void tile<double>(cublasHandle_t, int, int, int, const double*, int, const double*, int,
                           double, double*, int);

}  // namespace gemm::cuda
