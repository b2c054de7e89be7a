// The plain reference of codelets/gemm.hpp: the test oracle, and the --check of apps/gemm.
// Column-major, products and sums in double. Blocked over rows and the inner dimension so
// that a block of A stays in cache while every column of C passes over it (a 2048^3 product
// takes seconds, not minutes); the order of the additions into each C element is still p =
// 0, 1, ..., k-1, as in the textbook loop.
#include <algorithm>
#include <cstddef>

#include "codelets/gemm.hpp"

namespace gemm::ref {

template <typename T>
void tile(int m, int n, int k, const T* a, int lda, const T* b, int ldb, double beta, double* c,
          int ldc) {
  const auto at = [](auto* p, int ld, int i, int j) -> auto& {
    return p[std::size_t(i) + std::size_t(j) * std::size_t(ld)];
  };
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) at(c, ldc, i, j) = beta == 0 ? 0.0 : beta * at(c, ldc, i, j);
  constexpr int kRows = 256, kInner = 64;  // a 256 x 64 block of A: 64-128 KiB, in L2
  for (int p0 = 0; p0 < k; p0 += kInner) {
    const int p1 = std::min(k, p0 + kInner);
    for (int i0 = 0; i0 < m; i0 += kRows) {
      const int i1 = std::min(m, i0 + kRows);
      for (int j = 0; j < n; ++j) {
        double* cj = &at(c, ldc, 0, j);
        for (int p = p0; p < p1; ++p) {
          const double bpj = double(at(b, ldb, p, j));
          const T* ap = &at(a, lda, 0, p);
          for (int i = i0; i < i1; ++i) cj[i] += double(ap[i]) * bpj;
        }
      }
    }
  }
}

template void tile<float>(int, int, int, const float*, int, const float*, int, double, double*, int);
template void tile<double>(int, int, int, const double*, int, const double*, int, double, double*, int);

}  // namespace gemm::ref
