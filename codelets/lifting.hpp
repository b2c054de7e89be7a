// CDF 9/7 lifting (JPEG 2000 normalisation, ITU-T T.800 Table F.4): declarations shared by
// the reference (codelets/reference), CPU (codelets/cpu) and CUDA (codelets/cuda) backends.
//
// Conventions, for every backend:
// - Matrices are row-major with a leading dimension `ld` (elements), ld >= cols.
// - A line of n >= 2 samples x[0..n) splits into s_i = x[2i] (ceil(n/2) low-pass) and
//   d_i = x[2i+1] (floor(n/2) high-pass). "Split layout" stores s first, then d:
//   along a row that is [L | H]; along columns it is L rows on top of H rows.
// - Whole-sample symmetric extension: x[-1] = x[1], x[n] = x[n-2]. In lifting form:
//   d_{-1} = d_0 and, when s_{i+1} or d_i is past the end, the mirrored neighbour is used.
// - Forward (seed 000 eqs. 17-20, Algorithm 1):
//     d_i += alpha (s_i + s_{i+1});  s_i += beta (d_{i-1} + d_i);
//     d_i += gamma (s_i + s_{i+1});  s_i += delta (d_{i-1} + d_i);
//     s_i *= 1/K;  d_i *= K.
//   The inverse runs the same steps backwards with the signs switched.
//
// Vertical passes work on a data unit: h consecutive image rows starting at an even global
// row (seed 002's local-transform layout). Each lifting output depends on inputs within +-4
// samples, so a unit needs kHalo rows from each neighbour; `above`/`below` point to those
// rows (kHalo x w, leading dimension ld_halo) or are null at the image's top/bottom edge,
// where symmetric extension applies instead. A unit with a neighbour below has even h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lwt {

constexpr double kAlpha = -1.586134342059924;
constexpr double kBeta = -0.052980118572961;
constexpr double kGamma = 0.882911075530934;
constexpr double kDelta = 0.443506852043971;
constexpr double kK = 1.230174104914001;

// Rows each neighbour contributes to a unit's vertical pass.
constexpr int kHalo = 4;

// The lifting steps in forward order; the inverse applies them in reverse order.
enum class Step : int { Predict1 = 0, Update1, Predict2, Update2, Scale };
constexpr int kNumSteps = 5;

inline constexpr double step_coefficient(Step s) {
  return s == Step::Predict1   ? kAlpha
         : s == Step::Update1  ? kBeta
         : s == Step::Predict2 ? kGamma
         : s == Step::Update2  ? kDelta
                               : kK;
}
inline constexpr bool step_is_predict(Step s) { return s == Step::Predict1 || s == Step::Predict2; }

inline constexpr int low_count(int n) { return (n + 1) / 2; }
inline constexpr int high_count(int n) { return n / 2; }

enum class Direction : int { Forward = 0, Inverse = 1 };

// ---------------------------------------------------------------------------------------
// The plain reference: the test oracle. One line at a time, plain loops, no unit machinery.
namespace ref {

// x (n samples, stride `stride`) -> split layout in out (stride `stride_out`).
template <typename T>
void forward_1d(const T* x, std::ptrdiff_t stride, int n, T* out, std::ptrdiff_t stride_out);
template <typename T>
void inverse_1d(const T* c, std::ptrdiff_t stride, int n, T* out, std::ptrdiff_t stride_out);

// One lifting step on a line in split layout (in place).
template <typename T>
void lift_1d(T* line, std::ptrdiff_t stride, int n, Step step, Direction dir);

// Global multi-level 2D transform of an H x W image into the standard Mallat layout
// (rows, then columns; further levels on LL), and its inverse.
template <typename T>
void forward_2d(const T* image, int H, int W, int levels, T* coeffs);
template <typename T>
void inverse_2d(const T* coeffs, int H, int W, int levels, T* image);

}  // namespace ref

// ---------------------------------------------------------------------------------------
// Per-unit passes. The same declarations exist in namespaces lwt::cpu (host pointers) and
// lwt::cuda (device pointers, one extra trailing cudaStream_t argument, declared in
// codelets/cuda/lifting_cuda.hpp).
namespace cpu {

// --- fused pipeline: every step of a pass in one sweep ---
// Horizontal: each of `rows` rows of n samples x -> [L | H]. `in` may equal `out`.
template <typename T>
void rows_forward(const T* in, int ld_in, T* out, int ld_out, int rows, int n);
// Horizontal inverse: [L | H] -> x. `in` may equal `out`.
template <typename T>
void rows_inverse(const T* in, int ld_in, T* out, int ld_out, int rows, int n);

// Vertical forward on a unit: x (h rows x w, x-order) plus halos -> out in split layout
// (ceil(h/2) L rows, then floor(h/2) H rows). `x` is scratch: it may be overwritten.
template <typename T>
void cols_forward(T* x, int ld_x, int h, int w, const T* above, const T* below, int ld_halo,
                  T* out, int ld_out);
// Vertical inverse on a unit: c (split layout) plus halos in x-order -> x-order rows in out.
// `c` is not modified.
template <typename T>
void cols_inverse(const T* c, int ld_c, int h, int w, const T* above, const T* below,
                  int ld_halo, T* out, int ld_out);

// --- steps pipeline: one lifting step per call (seed 000, Algorithm 1) ---
// Horizontal split x -> [even | odd] and merge (its inverse). `in` must differ from `out`.
template <typename T>
void rows_split(const T* in, int ld_in, T* out, int ld_out, int rows, int n);
template <typename T>
void rows_merge(const T* in, int ld_in, T* out, int ld_out, int rows, int n);
// One step on rows in split layout, in place.
template <typename T>
void rows_lift(T* data, int ld, int rows, int n, Step step, Direction dir);

// Vertical window: rows [-a, h + b) around the unit, a = above ? kHalo : 0 and
// b = below ? kHalo : 0, n_win = a + h + b rows, held in split layout in `win`
// (ceil(n_win/2) even rows, then floor(n_win/2) odd rows; ld_win >= w).
inline int window_rows(int h, bool above, bool below) {
  return h + (above ? kHalo : 0) + (below ? kHalo : 0);
}
// Forward gather: x-order unit rows + halos -> window in split layout.
template <typename T>
void cols_gather(const T* x, int ld_x, int h, int w, const T* above, const T* below, int ld_halo,
                 T* win, int ld_win);
// One step on the window's columns (split layout), in place.
template <typename T>
void cols_lift(T* win, int ld_win, int n_win, int w, Step step, Direction dir);
// Forward scatter: the unit's own rows of the window -> out in split layout (L rows, H rows).
template <typename T>
void cols_scatter(const T* win, int ld_win, int h, int w, bool above, bool below, T* out,
                  int ld_out);
// Inverse gather: unit coefficients (split layout) + x-order halos -> window in split layout.
template <typename T>
void cols_gather_inverse(const T* c, int ld_c, int h, int w, const T* above, const T* below,
                         int ld_halo, T* win, int ld_win);
// Inverse scatter: the unit's own rows of the window -> x-order rows in out.
template <typename T>
void cols_scatter_inverse(const T* win, int ld_win, int h, int w, bool above, bool below, T* out,
                          int ld_out);

// Copies the rows that neighbours need into halo buffers (kHalo x w each, may be null).
// Forward (x-order unit rows): top = rows 0..3, bottom = rows h-4..h-1.
// Inverse (split-layout unit): top = L0,H0,L1,H1, bottom = L_{m-2},H_{m-2},L_{m-1},H_{m-1}
// (m = h/2), i.e. the same x-order rows the forward halos would hold.
template <typename T>
void write_halos(const T* unit, int ld, int h, int w, Direction layout, T* top, T* bottom,
                 int ld_halo);

// One unit's coefficients (h x w, the per-unit Mallat layout of `levels` levels: lwt::
// for_each_level_block) with the levels outside `keep` (bit l: detail level l, bit 0: the
// approximation) zeroed: out = in where the element's level is kept, else 0.
template <typename T>
void copy_levels(const T* in, int ld_in, T* out, int ld_out, int h, int w, int levels,
                 std::uint32_t keep);

}  // namespace cpu
}  // namespace lwt
