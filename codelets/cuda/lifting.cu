// CUDA backend of codelets/lifting.hpp (declared in codelets/cuda/lifting_cuda.hpp).
//
// Fused passes (DESIGN.md 4.3): one kernel per pass, tiled so that the whole GPU works on a
// unit of, say, 16384 x 1000 samples, and every global access is coalesced.
//
// Exactness of the tiles. A tile computes the outputs of x-indices [a, b) of a line (a even)
// from a window of the line's samples at [a - 4, b + 4), fetched with the line's own whole-
// sample symmetric extension (x[-k] = x[k], x[n-1+k] = x[n-1-k], repeated for short lines) or
// with the unit's halo rows. Each lifting step preserves that symmetry, so lifting the
// extended signal needs no boundary rule; the window's artificial ends are the only source of
// wrong values, and each of the 4 lifting steps (seed 000 eqs. 18-19) spreads them by one
// sample inwards: a window [A, B) with A even is exact on [A + 4, B - 4) after the 4 steps of
// either direction. With A = a - 4 and B = b + 4 that is [a, b). Scaling (eq. 20) is
// pointwise. (A window of odd length gets one more sample, zero, in its last pair; it only
// reaches positions past b.)
//
// Shared memory holds a window de-interleaved as pairs (s_j, d_j) = (x[A + 2j], x[A + 2j + 1]):
// a step reads s_j, s_{j+1} or d_{j-1}, d_j, so consecutive threads touch consecutive words.
//
// Each fused kernel is a sequence of phases separated by __syncthreads(): within a phase no
// thread reads what another writes. The phases are plain __host__ __device__ members of a
// tile struct, so a host loop over (block, phase, thread) replays a kernel exactly.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "codelets/cuda/check.hpp"
#include "codelets/cuda/lifting_cuda.hpp"

namespace lwt::cuda {
namespace {

// ------------------------------------------------------------------------------ helpers
// Unrolled load loops keep several loads in flight per thread. The phases also compile for the
// host (kernel replay), whose compiler does not know the pragma.
#ifdef __CUDA_ARCH__
#define FNNDTPS_UNROLL4 _Pragma("unroll 4")
#else
#define FNNDTPS_UNROLL4
#endif

template <typename T>
struct Vec2;
template <>
struct Vec2<float> {
  using type = float2;
};
template <>
struct Vec2<double> {
  using type = double2;
};

template <typename T>
__host__ __device__ inline bool aligned2(const T* p) {
  return reinterpret_cast<std::uintptr_t>(p) % (2 * sizeof(T)) == 0;
}

// Whole-sample symmetric extension of x-index y onto [0, n), n >= 2 (period 2n - 2).
__host__ __device__ inline int reflect(int y, int n) {
  while (y < 0 || y >= n) y = y < 0 ? -y : 2 * n - 2 - y;
  return y;
}

// lifting.hpp's constexpr helpers are host functions; device code uses these twins.
__host__ __device__ inline int n_low(int n) { return (n + 1) / 2; }
__host__ __device__ inline int n_high(int n) { return n / 2; }

// Coefficients as T (ITU-T T.800 Table F.4), the same roundings as the reference's.
template <typename T>
struct Coef {
  static constexpr T alpha = static_cast<T>(kAlpha);
  static constexpr T beta = static_cast<T>(kBeta);
  static constexpr T gamma = static_cast<T>(kGamma);
  static constexpr T delta = static_cast<T>(kDelta);
  static constexpr T k = static_cast<T>(kK);
  static constexpr T inv_k = static_cast<T>(1.0 / kK);
};

// Lifting steps on a de-interleaved window of np pairs: s_j at s[j * st], d_j at d[j * st].
// Thread t of nt handles pairs t, t + nt, ...; the first/last pair keeps its stale value.
template <typename T>
__host__ __device__ inline void predict(T* s, T* d, int st, int np, T c, int t, int nt) {
  for (int j = t; j < np - 1; j += nt) d[j * st] += c * (s[j * st] + s[(j + 1) * st]);
}
template <typename T>
__host__ __device__ inline void update(T* s, const T* d, int st, int np, T c, int t, int nt) {
  for (int j = t + 1; j < np; j += nt) s[j * st] += c * (d[(j - 1) * st] + d[j * st]);
}

// ------------------------------------------------------------------- fused row kernel
// Block (Tx, Ty): Ty row slots, each a row's window of up to `npair` pairs, Tx threads per slot.
// Grid: x = row groups of Ty rows, y = segments of `seg` outputs along the row.
struct RowGeom {
  int seg;    // outputs per segment (even); one segment per row when in-place
  int npair;  // pairs per window = seg / 2 + 4
  int tx, ty;
  int nseg, ngroups;
  std::size_t smem_bytes;
};

// Out-of-place segments of at most 2040 outputs: 1024 pairs per window, 4 per thread of 256.
constexpr int kRowSegMax = 2040;
constexpr int kRowThreads = 256;

inline int round_up_even(int v) { return v + (v & 1); }

template <typename T>
RowGeom row_geometry(int rows, int n, bool whole_row) {
  RowGeom g{};
  g.nseg = whole_row ? 1 : (n + kRowSegMax - 1) / kRowSegMax;
  g.seg = round_up_even((n + g.nseg - 1) / g.nseg);
  g.npair = g.seg / 2 + 4;
  if (g.npair > 4 * kRowThreads) {  // long rows held whole (in-place)
    g.tx = 512;
  } else {
    g.tx = 32;
    while (g.tx < kRowThreads && g.tx < g.npair) g.tx *= 2;
  }
  g.ty = g.tx >= kRowThreads ? 1 : kRowThreads / g.tx;
  g.ngroups = (rows + g.ty - 1) / g.ty;
  g.smem_bytes = std::size_t(g.ty) * 2 * std::size_t(g.npair) * sizeof(T);
  return g;
}

template <typename T, bool kForward>
struct RowTile {
  const T* in;
  int ld_in;
  T* out;
  int ld_out;
  int rows, n;
  RowGeom g;

  static constexpr int kPhases = 5;

  // Phase p of thread (tx, ty) of block (bx, by); sm is the block's shared memory.
  __host__ __device__ __forceinline__ void phase(int p, int bx, int by, int tx, int ty,
                                                T* sm) const {
    using C = Coef<T>;
    const int row = bx * g.ty + ty;
    const int a = by * g.seg;  // even
    const int b = a + g.seg < n ? a + g.seg : n;
    const int A = a - kHalo;
    const int np = (b - a + 2 * kHalo + 1) / 2;  // pairs covering [A, b + 4)
    const int ns = n_low(n);
    T* s = sm + std::size_t(ty) * 2 * g.npair;
    T* d = s + g.npair;
    if (row >= rows) return;
    const int Tx = g.tx;
    if (kForward) {
      switch (p) {
        case 0: {  // split: x -> (s_j, d_j), symmetric extension at the row's ends
          const T* x = in + std::ptrdiff_t(row) * ld_in;
          if (A >= 0 && A + 2 * np <= n && aligned2(x)) {  // inner segment: one 2-vector a pair
            const auto* xv = reinterpret_cast<const typename Vec2<T>::type*>(x + A);
FNNDTPS_UNROLL4
            for (int j = tx; j < np; j += Tx) {
              const typename Vec2<T>::type v = xv[j];
              s[j] = v.x;
              d[j] = v.y;
            }
            break;
          }
          for (int j = tx; j < np; j += Tx) {
            const int y = A + 2 * j;
            const bool inside = y >= 0 && y + 1 < n;
            s[j] = x[inside ? y : reflect(y, n)];
            d[j] = inside ? x[y + 1] : y + 1 < b + kHalo ? x[reflect(y + 1, n)] : T(0);
          }
          break;
        }
        case 1: predict(s, d, 1, np, C::alpha, tx, Tx); break;
        case 2: update(s, d, 1, np, C::beta, tx, Tx); break;
        case 3: predict(s, d, 1, np, C::gamma, tx, Tx); break;
        case 4: {  // last update and scaling, fused into the stores to [L | H]
          T* o = out + std::ptrdiff_t(row) * ld_out;
          const int nl = (b - a + 1) / 2, nh = (b - a) / 2, i0 = a / 2;
          for (int j = tx; j < nl; j += Tx)
            o[i0 + j] = (s[j + 2] + C::delta * (d[j + 1] + d[j + 2])) * C::inv_k;
          for (int j = tx; j < nh; j += Tx) o[ns + i0 + j] = d[j + 2] * C::k;
          break;
        }
        default: break;
      }
    } else {
      switch (p) {
        case 0: {  // [L | H] -> (s_j, d_j) of x-indices A + 2j, A + 2j + 1; inverse scaling
          const T* c = in + std::ptrdiff_t(row) * ld_in;
          if (A >= 0 && A + 2 * np <= n) {  // inner segment: L and H runs, no reflection
            const T* cl = c + A / 2;
            const T* ch = c + ns + A / 2;
FNNDTPS_UNROLL4
            for (int j = tx; j < np; j += Tx) {
              s[j] = cl[j] * C::k;
              d[j] = ch[j] * C::inv_k;
            }
            break;
          }
          for (int j = tx; j < np; j += Tx) {
            const int y = A + 2 * j;
            T vs, vd;
            if (y >= 0 && y + 1 < n) {
              vs = c[y / 2];
              vd = c[ns + y / 2];
            } else {  // reflection keeps parity: even -> L, odd -> H
              vs = c[reflect(y, n) / 2];
              vd = y + 1 < b + kHalo ? c[ns + reflect(y + 1, n) / 2] : T(0);
            }
            s[j] = vs * C::k;
            d[j] = vd * C::inv_k;
          }
          break;
        }
        case 1: update(s, d, 1, np, -C::delta, tx, Tx); break;
        case 2: predict(s, d, 1, np, -C::gamma, tx, Tx); break;
        case 3: update(s, d, 1, np, -C::beta, tx, Tx); break;
        case 4: {  // first predict, fused into the interleaving stores
          T* x = out + std::ptrdiff_t(row) * ld_out;
          const bool vec = aligned2(x);
          const int npo = (b - a + 1) / 2;
          for (int j = tx; j < npo; j += Tx) {
            const int y = a + 2 * j;
            const T ve = s[j + 2];
            if (y + 1 < b) {
              const T vo = d[j + 2] - C::alpha * (s[j + 2] + s[j + 3]);
              if (vec) {
                typename Vec2<T>::type v;
                v.x = ve;
                v.y = vo;
                *reinterpret_cast<typename Vec2<T>::type*>(x + y) = v;
              } else {
                x[y] = ve;
                x[y + 1] = vo;
              }
            } else {
              x[y] = ve;
            }
          }
          break;
        }
        default: break;
      }
    }
  }
};

template <typename T, bool kForward>
__global__ void __launch_bounds__(512) rows_fused_kernel(RowTile<T, kForward> tile) {
  extern __shared__ unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
#pragma unroll
  for (int p = 0; p < RowTile<T, kForward>::kPhases; ++p) {
    if (p > 0) __syncthreads();
    tile.phase(p, int(blockIdx.x), int(blockIdx.y), int(threadIdx.x), int(threadIdx.y), sm);
  }
}

// ---------------------------------------------------------------- fused column kernel
// Block (32, 8): 32 columns x a segment of `seg` output rows; thread (tx, ty) owns column
// c0 + tx and window pairs ty, ty + 8, ... Shared memory: s[j][tx], d[j][tx].
// Grid: x = column blocks, y = row segments.
constexpr int kColTx = 32;
constexpr int kColTy = 8;
constexpr int kColSegMax = 128;
constexpr int kColPairsMax = kColSegMax / 2 + kHalo;

struct ColGeom {
  int seg;  // output rows per segment (even)
  int nseg, ncolblocks;
};

inline ColGeom col_geometry(int h, int w) {
  ColGeom g{};
  g.ncolblocks = (w + kColTx - 1) / kColTx;
  g.seg = kColSegMax;
  // Short units: shorter segments until the grid fills an H200 (132 SMs) twice over.
  while (g.seg > 16 && std::size_t(g.ncolblocks) * std::size_t((h + g.seg - 1) / g.seg) < 264)
    g.seg /= 2;
  g.nseg = (h + g.seg - 1) / g.seg;
  return g;
}

template <typename T, bool kForward>
struct ColTile {
  const T* src;  // forward: x-order unit rows; inverse: split-layout coefficients
  int ld_src;
  int h, w;
  const T* above;
  const T* below;
  int ld_halo;
  T* out;
  int ld_out;
  ColGeom g;

  static constexpr int kPhases = 5;
  static constexpr std::size_t kSmemElems = std::size_t(2) * kColPairsMax * kColTx;

  // Row of the unit's (x-order) column signal at local x-index y in [-4, h + 4): own row,
  // halo row, or the symmetric extension at an image edge.
  __host__ __device__ const T* row_at(int y) const {
    for (;;) {
      if (y < 0) {
        if (above) return above + std::ptrdiff_t(y + kHalo) * ld_halo;
        y = -y;
      } else if (y >= h) {
        if (below) return below + std::ptrdiff_t(y - h) * ld_halo;
        y = 2 * h - 2 - y;
      } else if (kForward) {
        return src + std::ptrdiff_t(y) * ld_src;
      } else {  // split layout: even x-index -> L row y / 2, odd -> H row
        return src + std::ptrdiff_t(y % 2 == 0 ? y / 2 : n_low(h) + y / 2) * ld_src;
      }
    }
  }

  __host__ __device__ __forceinline__ void phase(int p, int bx, int by, int tx, int ty,
                                                T* sm) const {
    using C = Coef<T>;
    const int col = bx * kColTx + tx;
    const int a = by * g.seg;
    const int b = a + g.seg < h ? a + g.seg : h;
    const int A = a - kHalo;
    const int np = (b - a + 2 * kHalo + 1) / 2;
    T* s = sm + tx;
    T* d = sm + kColPairsMax * kColTx + tx;
    if (col >= w) return;
    const int st = kColTx;
    if (p == 0) {  // window rows [A, b + 4) -> (s_j, d_j); inverse scaling on the way in
      const T ks = kForward ? T(1) : C::k, kd = kForward ? T(1) : C::inv_k;
      if (A >= 0 && A + 2 * np <= h) {  // inner segment: the unit's own rows only
        const T* ps;  // row of s_0, then s_j j * step rows further; likewise pd for d_j
        const T* pd;
        std::ptrdiff_t step;
        if (kForward) {
          ps = src + std::ptrdiff_t(A) * ld_src + col;
          pd = ps + ld_src;
          step = 2 * std::ptrdiff_t(ld_src);
        } else {
          ps = src + std::ptrdiff_t(A / 2) * ld_src + col;
          pd = src + std::ptrdiff_t(n_low(h) + A / 2) * ld_src + col;
          step = ld_src;
        }
FNNDTPS_UNROLL4
        for (int j = ty; j < np; j += kColTy) {
          s[j * st] = ps[j * step] * ks;
          d[j * st] = pd[j * step] * kd;
        }
        return;
      }
      for (int j = ty; j < np; j += kColTy) {
        const int y = A + 2 * j;
        s[j * st] = row_at(y)[col] * ks;
        d[j * st] = (y + 1 < b + kHalo ? row_at(y + 1)[col] : T(0)) * kd;
      }
      return;
    }
    if (kForward) {
      switch (p) {
        case 1: predict(s, d, st, np, C::alpha, ty, kColTy); break;
        case 2: update(s, d, st, np, C::beta, ty, kColTy); break;
        case 3: predict(s, d, st, np, C::gamma, ty, kColTy); break;
        case 4: {  // last update + scaling; L rows to out[0, ceil(h/2)), H rows after them
          const int nl = (b - a + 1) / 2, nh = (b - a) / 2, i0 = a / 2, hl = n_low(h);
          for (int j = ty; j < nl; j += kColTy)
            out[std::ptrdiff_t(i0 + j) * ld_out + col] =
                (s[(j + 2) * st] + C::delta * (d[(j + 1) * st] + d[(j + 2) * st])) * C::inv_k;
          for (int j = ty; j < nh; j += kColTy)
            out[std::ptrdiff_t(hl + i0 + j) * ld_out + col] = d[(j + 2) * st] * C::k;
          break;
        }
        default: break;
      }
    } else {
      switch (p) {
        case 1: update(s, d, st, np, -C::delta, ty, kColTy); break;
        case 2: predict(s, d, st, np, -C::gamma, ty, kColTy); break;
        case 3: update(s, d, st, np, -C::beta, ty, kColTy); break;
        case 4: {  // first predict fused into the x-order stores
          const int npo = (b - a + 1) / 2;
          for (int j = ty; j < npo; j += kColTy) {
            const int y = a + 2 * j;
            out[std::ptrdiff_t(y) * ld_out + col] = s[(j + 2) * st];
            if (y + 1 < b)
              out[std::ptrdiff_t(y + 1) * ld_out + col] =
                  d[(j + 2) * st] - C::alpha * (s[(j + 2) * st] + s[(j + 3) * st]);
          }
          break;
        }
        default: break;
      }
    }
  }
};

template <typename T, bool kForward>
__global__ void __launch_bounds__(kColTx* kColTy) cols_fused_kernel(ColTile<T, kForward> tile) {
  __shared__ T sm[ColTile<T, kForward>::kSmemElems];
#pragma unroll
  for (int p = 0; p < ColTile<T, kForward>::kPhases; ++p) {
    if (p > 0) __syncthreads();
    tile.phase(p, int(blockIdx.x), int(blockIdx.y), int(threadIdx.x), int(threadIdx.y), sm);
  }
}

// ------------------------------------------------------------- element-wise kernels
// f(r, c) for r < rows, c < cols: threads along c (coalesced), grid-stride along r.
template <typename F>
__global__ void __launch_bounds__(256) for_each_2d(int rows, int cols, F f) {
  const int c = int(blockIdx.x) * int(blockDim.x) + int(threadIdx.x);
  if (c >= cols) return;
  for (int r = int(blockIdx.y); r < rows; r += int(gridDim.y)) f(r, c);
}

template <typename F>
void launch_2d(int rows, int cols, const F& f, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const dim3 block(256);
  const dim3 grid(unsigned((cols + 255) / 256), unsigned(rows < 65535 ? rows : 65535));
  for_each_2d<<<grid, block, 0, stream>>>(rows, cols, f);
  FNNDTPS_CUDA_CHECK_LAUNCH();
}

__host__ __device__ inline int split_row(int y, int n) {
  return y % 2 == 0 ? y / 2 : n_low(n) + y / 2;
}

template <typename T>
struct SplitOp {  // x-order row -> [even | odd]; `merge` runs it backwards
  const T* in;
  int ld_in;
  T* out;
  int ld_out;
  int n;
  bool merge;
  __host__ __device__ void operator()(int r, int i) const {
    const std::ptrdiff_t ri = std::ptrdiff_t(r) * ld_in, ro = std::ptrdiff_t(r) * ld_out;
    if (merge)
      out[ro + i] = in[ri + split_row(i, n)];
    else
      out[ro + split_row(i, n)] = in[ri + i];
  }
};

// One lifting step (seed 000 eqs. 18-20) on lines in split layout, in place, one thread per
// element. Line r's element i sits at base + r * line_stride + i * elem_stride (rows: 1 apart;
// window columns: ld_win apart). A predict writes only d and reads only s (an update the
// reverse), so in-place threads never race.
template <typename T>
struct LiftOp {
  T* base;
  std::ptrdiff_t line_stride, elem_stride;
  int n;
  Step step;
  T c, ks, kd;      // step coefficient (sign included), scale factors for s and d
  bool transposed;  // f(i, r) instead of f(r, i): threads along lines (window columns)
  __host__ __device__ void operator()(int p, int q) const {
    const int r = transposed ? q : p, i = transposed ? p : q;
    T* line = base + std::ptrdiff_t(r) * line_stride;
    const int ns = n_low(n), nd = n_high(n);
    auto at = [&](int k) -> T& { return line[std::ptrdiff_t(k) * elem_stride]; };
    if (step == Step::Scale) {
      at(i) *= i < ns ? ks : kd;
    } else if (step == Step::Predict1 || step == Step::Predict2) {
      if (i < ns || nd == 0) return;
      const int j = i - ns;
      at(i) += c * (at(j) + at(j + 1 < ns ? j + 1 : ns - 1));
    } else {
      if (i >= ns || nd == 0) return;
      at(i) += c * (at(ns + (i > 0 ? i - 1 : 0)) + at(ns + (i < nd ? i : nd - 1)));
    }
  }
};

// Window gather (forward and inverse) and scatter: window row k (x-index k - a of the unit,
// split row split_row(k, n_win) of the window) <-> unit row / halo row.
template <typename T>
struct GatherOp {
  const T* src;  // forward: x-order rows; inverse: split-layout rows
  int ld_src;
  int h;
  const T* above;
  const T* below;
  int ld_halo;
  T* win;
  int ld_win;
  int a, n_win;
  bool inverse;
  __host__ __device__ void operator()(int k, int c) const {
    const int y = k - a;
    const T* row;
    if (y < 0)
      row = above + std::ptrdiff_t(y + kHalo) * ld_halo;
    else if (y >= h)
      row = below + std::ptrdiff_t(y - h) * ld_halo;
    else
      row = src + std::ptrdiff_t(inverse ? split_row(y, h) : y) * ld_src;
    win[std::ptrdiff_t(split_row(k, n_win)) * ld_win + c] = row[c];
  }
};

template <typename T>
struct ScatterOp {
  const T* win;
  int ld_win;
  int h;
  T* out;
  int ld_out;
  int a, n_win;
  bool inverse;  // inverse: x-order out rows; forward: split-layout out rows
  __host__ __device__ void operator()(int y, int c) const {
    out[std::ptrdiff_t(inverse ? y : split_row(y, h)) * ld_out + c] =
        win[std::ptrdiff_t(split_row(y + a, n_win)) * ld_win + c];
  }
};

template <typename T>
struct HaloOp {  // halo row k < 4: top, from x-order row k; k >= 4: bottom, row h - 8 + k
  const T* unit;
  int ld, h;
  bool split;
  T* top;
  T* bottom;
  int ld_halo;
  __host__ __device__ void operator()(int k, int c) const {
    T* dst = k < kHalo ? top : bottom;
    if (!dst) return;
    const int y = k < kHalo ? k : h - 2 * kHalo + k;
    dst[std::ptrdiff_t(k % kHalo) * ld_halo + c] =
        unit[std::ptrdiff_t(split ? split_row(y, h) : y) * ld + c];
  }
};

template <typename T>
void copy_rows(const T* in, int ld_in, T* out, int ld_out, int rows, int n, cudaStream_t stream) {
  if (in == out && ld_in == ld_out) return;
  FNNDTPS_CUDA_CHECK(cudaMemcpy2DAsync(out, std::size_t(ld_out) * sizeof(T), in,
                                       std::size_t(ld_in) * sizeof(T), std::size_t(n) * sizeof(T),
                                       std::size_t(rows), cudaMemcpyDeviceToDevice, stream));
}

bool overlap(const void* p, std::size_t np, const void* q, std::size_t nq) {
  const auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(q);
  return a < b + nq && b < a + np;
}

template <typename T>
std::size_t span_bytes(int rows, int ld, int n) {
  return (std::size_t(rows - 1) * std::size_t(ld) + std::size_t(n)) * sizeof(T);
}

template <typename T, bool kForward>
void rows_fused(const T* in, int ld_in, T* out, int ld_out, int rows, int n, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return;
  if (n == 1) {  // one sample: the identity (ITU-T T.800 F.3.7); the contract asks n >= 2
    copy_rows(in, ld_in, out, ld_out, rows, n, stream);
    return;
  }
  const bool same = in == out && ld_in == ld_out;
  const bool aliased = !same && overlap(in, span_bytes<T>(rows, ld_in, n), out,
                                        span_bytes<T>(rows, ld_out, n));
  // In place, a block holds whole rows: it reads all of them before writing any of them.
  RowGeom g = row_geometry<T>(rows, n, same);
  int dev = 0, smem_max = 0;
  if (g.smem_bytes > 48 * 1024) {
    FNNDTPS_CUDA_CHECK(cudaGetDevice(&dev));
    FNNDTPS_CUDA_CHECK(cudaDeviceGetAttribute(&smem_max, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  }
  if (aliased || (same && g.smem_bytes > std::size_t(smem_max) && g.smem_bytes > 48 * 1024)) {
    // Rows too long for shared memory (or partial aliasing): work from a copy of the input.
    T* tmp = nullptr;
    FNNDTPS_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&tmp),
                                       std::size_t(rows) * std::size_t(n) * sizeof(T), stream));
    copy_rows(in, ld_in, tmp, n, rows, n, stream);
    rows_fused<T, kForward>(tmp, n, out, ld_out, rows, n, stream);
    FNNDTPS_CUDA_CHECK(cudaFreeAsync(tmp, stream));
    return;
  }
  if (g.smem_bytes > 48 * 1024)
    FNNDTPS_CUDA_CHECK(cudaFuncSetAttribute(rows_fused_kernel<T, kForward>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            int(g.smem_bytes)));
  if (g.nseg > 65535) {
    std::fprintf(stderr, "%s:%d: rows of %d samples are too long\n", __FILE__, __LINE__, n);
    std::abort();
  }
  const RowTile<T, kForward> tile{in, ld_in, out, ld_out, rows, n, g};
  rows_fused_kernel<T, kForward><<<dim3(unsigned(g.ngroups), unsigned(g.nseg)),
                                   dim3(unsigned(g.tx), unsigned(g.ty)), g.smem_bytes, stream>>>(tile);
  FNNDTPS_CUDA_CHECK_LAUNCH();
}

template <typename T, bool kForward>
void cols_fused(const T* src, int ld_src, int h, int w, const T* above, const T* below,
                int ld_halo, T* out, int ld_out, cudaStream_t stream) {
  if (h <= 0 || w <= 0) return;
  if (h == 1 && !above && !below) {  // a one-row image: the identity (T.800 F.3.7)
    copy_rows(src, ld_src, out, ld_out, 1, w, stream);
    return;
  }
  const ColGeom g = col_geometry(h, w);
  if (g.nseg > 65535) {
    std::fprintf(stderr, "%s:%d: units of %d rows are too tall\n", __FILE__, __LINE__, h);
    std::abort();
  }
  const ColTile<T, kForward> tile{src, ld_src, h, w, above, below, ld_halo, out, ld_out, g};
  cols_fused_kernel<T, kForward><<<dim3(unsigned(g.ncolblocks), unsigned(g.nseg)),
                                   dim3(kColTx, kColTy), 0, stream>>>(tile);
  FNNDTPS_CUDA_CHECK_LAUNCH();
}

template <typename T>
LiftOp<T> lift_op(T* base, std::ptrdiff_t line_stride, std::ptrdiff_t elem_stride, int n, Step step,
                  Direction dir, bool transposed) {
  const double sign = dir == Direction::Forward ? 1.0 : -1.0;
  const T ks = static_cast<T>(dir == Direction::Forward ? 1.0 / kK : kK);
  const T kd = static_cast<T>(dir == Direction::Forward ? kK : 1.0 / kK);
  return LiftOp<T>{base,  line_stride, elem_stride, n, step,
                   static_cast<T>(sign * step_coefficient(step)), ks, kd, transposed};
}

}  // namespace

// ---------------------------------------------------------------------- fused pipeline
template <typename T>
void rows_forward(const T* in, int ld_in, T* out, int ld_out, int rows, int n, cudaStream_t stream) {
  rows_fused<T, true>(in, ld_in, out, ld_out, rows, n, stream);
}

template <typename T>
void rows_inverse(const T* in, int ld_in, T* out, int ld_out, int rows, int n, cudaStream_t stream) {
  rows_fused<T, false>(in, ld_in, out, ld_out, rows, n, stream);
}

// x is only read here (out != x): the tiles need no scratch.
template <typename T>
void cols_forward(T* x, int ld_x, int h, int w, const T* above, const T* below, int ld_halo,
                  T* out, int ld_out, cudaStream_t stream) {
  cols_fused<T, true>(x, ld_x, h, w, above, below, ld_halo, out, ld_out, stream);
}

template <typename T>
void cols_inverse(const T* c, int ld_c, int h, int w, const T* above, const T* below,
                  int ld_halo, T* out, int ld_out, cudaStream_t stream) {
  cols_fused<T, false>(c, ld_c, h, w, above, below, ld_halo, out, ld_out, stream);
}

// ---------------------------------------------------------------------- steps pipeline
template <typename T>
void rows_split(const T* in, int ld_in, T* out, int ld_out, int rows, int n, cudaStream_t stream) {
  launch_2d(rows, n, SplitOp<T>{in, ld_in, out, ld_out, n, false}, stream);
}

template <typename T>
void rows_merge(const T* in, int ld_in, T* out, int ld_out, int rows, int n, cudaStream_t stream) {
  launch_2d(rows, n, SplitOp<T>{in, ld_in, out, ld_out, n, true}, stream);
}

template <typename T>
void rows_lift(T* data, int ld, int rows, int n, Step step, Direction dir, cudaStream_t stream) {
  if (n < 2) return;  // one sample: the identity
  launch_2d(rows, n, lift_op(data, ld, 1, n, step, dir, false), stream);
}

template <typename T>
void cols_gather(const T* x, int ld_x, int h, int w, const T* above, const T* below, int ld_halo,
                 T* win, int ld_win, cudaStream_t stream) {
  const int n_win = cpu::window_rows(h, above, below);
  launch_2d(n_win, w,
            GatherOp<T>{x, ld_x, h, above, below, ld_halo, win, ld_win, above ? kHalo : 0, n_win,
                        false},
            stream);
}

template <typename T>
void cols_lift(T* win, int ld_win, int n_win, int w, Step step, Direction dir, cudaStream_t stream) {
  if (n_win < 2) return;
  // Lines are columns: line c starts at win + c, its samples ld_win apart; threads along c.
  launch_2d(n_win, w, lift_op(win, 1, ld_win, n_win, step, dir, true), stream);
}

template <typename T>
void cols_scatter(const T* win, int ld_win, int h, int w, bool above, bool below, T* out,
                  int ld_out, cudaStream_t stream) {
  launch_2d(h, w,
            ScatterOp<T>{win, ld_win, h, out, ld_out, above ? kHalo : 0,
                         cpu::window_rows(h, above, below), false},
            stream);
}

template <typename T>
void cols_gather_inverse(const T* c, int ld_c, int h, int w, const T* above, const T* below,
                         int ld_halo, T* win, int ld_win, cudaStream_t stream) {
  const int n_win = cpu::window_rows(h, above, below);
  launch_2d(n_win, w,
            GatherOp<T>{c, ld_c, h, above, below, ld_halo, win, ld_win, above ? kHalo : 0, n_win,
                        true},
            stream);
}

template <typename T>
void cols_scatter_inverse(const T* win, int ld_win, int h, int w, bool above, bool below, T* out,
                          int ld_out, cudaStream_t stream) {
  launch_2d(h, w,
            ScatterOp<T>{win, ld_win, h, out, ld_out, above ? kHalo : 0,
                         cpu::window_rows(h, above, below), true},
            stream);
}

template <typename T>
void write_halos(const T* unit, int ld, int h, int w, Direction layout, T* top, T* bottom,
                 int ld_halo, cudaStream_t stream) {
  if (!top && !bottom) return;
  if (h < kHalo) {
    std::fprintf(stderr, "%s:%d: write_halos needs a unit of at least %d rows, got %d\n", __FILE__,
                 __LINE__, kHalo, h);
    std::abort();
  }
  launch_2d(2 * kHalo, w,
            HaloOp<T>{unit, ld, h, layout == Direction::Inverse, top, bottom, ld_halo}, stream);
}

// One kernel for the whole unit (a copy per block would be ~L^2 / 2 launches): each element
// finds its level as lwt::for_each_level_block lays them out. rows[l] and cols[l] are the
// unit's size at level l.
template <typename T>
struct LevelsOp {
  const T* in;
  int ld_in;
  T* out;
  int ld_out;
  int levels;
  std::uint32_t keep;
  int rows[32], cols[32];
  __host__ __device__ void operator()(int r, int c) const {
    int m = 1;  // r is an H row of level m, or (m = levels + 1) an L row at every level
    while (m <= levels && r < rows[m]) ++m;
    int j = 1;  // the columns [cols[j], cols[j-1]) of such a row are level j's HL, for j < m
    while (j < m && c < cols[j]) ++j;
    const int level = j < m ? j : (m <= levels ? m : 0);
    out[std::ptrdiff_t(r) * ld_out + c] = (keep >> level & 1u) ? in[std::ptrdiff_t(r) * ld_in + c] : T(0);
  }
};

template <typename T>
void copy_levels(const T* in, int ld_in, T* out, int ld_out, int h, int w, int levels,
                 std::uint32_t keep, cudaStream_t stream) {
  if (levels < 1 || levels > 30) {
    std::fprintf(stderr, "%s:%d: copy_levels takes 1 to 30 levels, got %d\n", __FILE__, __LINE__, levels);
    std::abort();
  }
  LevelsOp<T> op{in, ld_in, out, ld_out, levels, keep, {}, {}};
  op.rows[0] = h;
  op.cols[0] = w;
  for (int l = 1; l <= levels; ++l) {
    op.rows[l] = n_low(op.rows[l - 1]);
    op.cols[l] = n_low(op.cols[l - 1]);
  }
  launch_2d(h, w, op, stream);
}

#define LWT_CUDA_INSTANTIATE(T)                                                                    \
  template void rows_forward<T>(const T*, int, T*, int, int, int, cudaStream_t);                   \
  template void rows_inverse<T>(const T*, int, T*, int, int, int, cudaStream_t);                   \
  template void cols_forward<T>(T*, int, int, int, const T*, const T*, int, T*, int, cudaStream_t); \
  template void cols_inverse<T>(const T*, int, int, int, const T*, const T*, int, T*, int,         \
                                cudaStream_t);                                                     \
  template void rows_split<T>(const T*, int, T*, int, int, int, cudaStream_t);                     \
  template void rows_merge<T>(const T*, int, T*, int, int, int, cudaStream_t);                     \
  template void rows_lift<T>(T*, int, int, int, Step, Direction, cudaStream_t);                    \
  template void cols_gather<T>(const T*, int, int, int, const T*, const T*, int, T*, int,          \
                               cudaStream_t);                                                      \
  template void cols_lift<T>(T*, int, int, int, Step, Direction, cudaStream_t);                    \
  template void cols_scatter<T>(const T*, int, int, int, bool, bool, T*, int, cudaStream_t);       \
  template void cols_gather_inverse<T>(const T*, int, int, int, const T*, const T*, int, T*, int,  \
                                       cudaStream_t);                                              \
  template void cols_scatter_inverse<T>(const T*, int, int, int, bool, bool, T*, int,              \
                                        cudaStream_t);                                             \
  template void write_halos<T>(const T*, int, int, int, Direction, T*, T*, int, cudaStream_t);    \
  template void copy_levels<T>(const T*, int, T*, int, int, int, int, std::uint32_t, cudaStream_t);
LWT_CUDA_INSTANTIATE(float)
LWT_CUDA_INSTANTIATE(double)

}  // namespace lwt::cuda
