// CUDA backend of codelets/lifting.hpp: the same per-unit passes on device pointers, each
// enqueued on `stream` (StarPU's per-worker stream inside codelets). Semantics, argument
// order and layouts are exactly those of lwt::cpu; see codelets/lifting.hpp.
#pragma once

#include <cuda_runtime.h>

#include "codelets/lifting.hpp"

namespace lwt::cuda {

template <typename T>
void rows_forward(const T* in, int ld_in, T* out, int ld_out, int rows, int n, cudaStream_t stream);
template <typename T>
void rows_inverse(const T* in, int ld_in, T* out, int ld_out, int rows, int n, cudaStream_t stream);
template <typename T>
void cols_forward(T* x, int ld_x, int h, int w, const T* above, const T* below, int ld_halo,
                  T* out, int ld_out, cudaStream_t stream);
template <typename T>
void cols_inverse(const T* c, int ld_c, int h, int w, const T* above, const T* below,
                  int ld_halo, T* out, int ld_out, cudaStream_t stream);

template <typename T>
void rows_split(const T* in, int ld_in, T* out, int ld_out, int rows, int n, cudaStream_t stream);
template <typename T>
void rows_merge(const T* in, int ld_in, T* out, int ld_out, int rows, int n, cudaStream_t stream);
template <typename T>
void rows_lift(T* data, int ld, int rows, int n, Step step, Direction dir, cudaStream_t stream);

template <typename T>
void cols_gather(const T* x, int ld_x, int h, int w, const T* above, const T* below, int ld_halo,
                 T* win, int ld_win, cudaStream_t stream);
template <typename T>
void cols_lift(T* win, int ld_win, int n_win, int w, Step step, Direction dir, cudaStream_t stream);
template <typename T>
void cols_scatter(const T* win, int ld_win, int h, int w, bool above, bool below, T* out,
                  int ld_out, cudaStream_t stream);
template <typename T>
void cols_gather_inverse(const T* c, int ld_c, int h, int w, const T* above, const T* below,
                         int ld_halo, T* win, int ld_win, cudaStream_t stream);
template <typename T>
void cols_scatter_inverse(const T* win, int ld_win, int h, int w, bool above, bool below, T* out,
                          int ld_out, cudaStream_t stream);

template <typename T>
void write_halos(const T* unit, int ld, int h, int w, Direction layout, T* top, T* bottom,
                 int ld_halo, cudaStream_t stream);
template <typename T>
void copy_levels(const T* in, int ld_in, T* out, int ld_out, int h, int w, int levels,
                 std::uint32_t keep, cudaStream_t stream);

}  // namespace lwt::cuda
