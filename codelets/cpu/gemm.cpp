// CPU backend of codelets/gemm.hpp: one tile product through OpenBLAS's CBLAS interface.
// OpenBLAS runs it on the calling thread when set to one thread (the apps call
// openblas_set_num_threads(1) before starpu_init: one BLAS thread per StarPU worker).
#include <cblas.h>

#include <type_traits>

#include "codelets/gemm.hpp"

namespace gemm::cpu {

template <typename T>
void tile(int m, int n, int k, const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc) {
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  else
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

template void tile<float>(int, int, int, const float*, int, const float*, int, float, float*, int);
template void tile<double>(int, int, int, const double*, int, const double*, int, double, double*, int);

}  // namespace gemm::cpu
