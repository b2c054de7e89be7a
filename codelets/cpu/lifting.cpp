// CPU backend of codelets/lifting.hpp. Horizontal lifting runs on de-interleaved rows;
// vertical lifting is row-vector arithmetic on cache-sized column blocks of a unit's window,
// so both inner loops are contiguous and vectorise.
#include <algorithm>
#include <cstring>
#include <vector>

#include "codelets/lifting.hpp"
#include "codelets/plan.hpp"

namespace lwt::cpu {
namespace {

// One lifting step on planes of row vectors: s row i at s + i*ld, d row i at d + i*ld,
// columns [0, w). With ld = 1 and w = 1 this is the 1-D line; a line of samples uses the
// contiguous specialisation below. Symmetric extension as in codelets/lifting.hpp.
template <typename T>
void lift_planes(T* s, T* d, std::ptrdiff_t ld, int ns, int nd, int w, Step step, Direction dir) {
  const T sign = dir == Direction::Forward ? T(1) : T(-1);
  if (step == Step::Scale) {  // seed 000 eq. (20)
    const T ks = static_cast<T>(dir == Direction::Forward ? 1.0 / kK : kK);
    const T kd = static_cast<T>(dir == Direction::Forward ? kK : 1.0 / kK);
    for (int i = 0; i < ns; ++i)
      for (int c = 0; c < w; ++c) s[i * ld + c] *= ks;
    for (int i = 0; i < nd; ++i)
      for (int c = 0; c < w; ++c) d[i * ld + c] *= kd;
    return;
  }
  const T k = sign * static_cast<T>(step_coefficient(step));
  if (step_is_predict(step)) {  // seed 000 eq. (18): d_i += k (s_i + s_{i+1})
    for (int i = 0; i < nd; ++i) {
      T* di = d + i * ld;
      const T* a = s + i * ld;
      const T* b = s + std::min(i + 1, ns - 1) * ld;
      for (int c = 0; c < w; ++c) di[c] += k * (a[c] + b[c]);
    }
  } else {  // seed 000 eq. (19): s_i += k (d_{i-1} + d_i)
    for (int i = 0; i < ns; ++i) {
      T* si = s + i * ld;
      const T* a = d + std::max(i - 1, 0) * ld;
      const T* b = d + std::min(i, nd - 1) * ld;
      for (int c = 0; c < w; ++c) si[c] += k * (a[c] + b[c]);
    }
  }
}

// The same step on one line held contiguously as s[0..ns), d[0..nd).
template <typename T>
void lift_line(T* s, T* d, int ns, int nd, Step step, Direction dir) {
  const T sign = dir == Direction::Forward ? T(1) : T(-1);
  if (step == Step::Scale) {
    const T ks = static_cast<T>(dir == Direction::Forward ? 1.0 / kK : kK);
    const T kd = static_cast<T>(dir == Direction::Forward ? kK : 1.0 / kK);
    for (int i = 0; i < ns; ++i) s[i] *= ks;
    for (int i = 0; i < nd; ++i) d[i] *= kd;
    return;
  }
  const T k = sign * static_cast<T>(step_coefficient(step));
  if (step_is_predict(step)) {
    const int body = std::min(nd, ns - 1);
    for (int i = 0; i < body; ++i) d[i] += k * (s[i] + s[i + 1]);
    for (int i = body; i < nd; ++i) d[i] += k * (s[i] + s[ns - 1]);
  } else {
    s[0] += k * (d[0] + d[0]);
    const int body = std::min(ns, nd);
    for (int i = 1; i < body; ++i) s[i] += k * (d[i - 1] + d[i]);
    for (int i = std::max(body, 1); i < ns; ++i) s[i] += k * (d[i - 1] + d[nd - 1]);
  }
}

template <typename T>
std::vector<T>& scratch(std::size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf;
}

// Window row j (x-index, window starting at -a) of a forward unit: halo or own row.
template <typename T>
const T* forward_source(int j, int a, int h, const T* x, int ld_x, const T* above,
                        const T* below, int ld_halo) {
  if (j < a) return above + std::ptrdiff_t(j) * ld_halo;
  if (j < a + h) return x + std::ptrdiff_t(j - a) * ld_x;
  return below + std::ptrdiff_t(j - a - h) * ld_halo;
}

// Window row j of an inverse unit: halos are x-order; own rows are in split layout.
template <typename T>
const T* inverse_source(int j, int a, int h, const T* c, int ld_c, const T* above,
                        const T* below, int ld_halo) {
  if (j < a) return above + std::ptrdiff_t(j) * ld_halo;
  if (j < a + h) {
    const int t = j - a;
    const int row = t % 2 == 0 ? t / 2 : low_count(h) + t / 2;
    return c + std::ptrdiff_t(row) * ld_c;
  }
  return below + std::ptrdiff_t(j - a - h) * ld_halo;
}

// Split-layout row of window x-index j.
inline int split_row(int j, int n) { return j % 2 == 0 ? j / 2 : low_count(n) + j / 2; }

// Columns per block so that a block's window stays near 1 MiB of cache.
template <typename T>
int column_block(int n_win, int w) {
  const int bw = int((1 << 20) / (std::size_t(n_win) * sizeof(T))) / 16 * 16;
  return std::max(16, std::min(w, bw));
}

}  // namespace

// ---------------------------------------------------------------- fused pipeline
template <typename T>
void rows_forward(const T* in, int ld_in, T* out, int ld_out, int rows, int n) {
  const int ns = low_count(n), nd = high_count(n);
  std::vector<T>& buf = scratch<T>(std::size_t(n));
  T* s = buf.data();
  T* d = s + ns;
  for (int r = 0; r < rows; ++r) {
    const T* x = in + std::ptrdiff_t(r) * ld_in;
    for (int i = 0; i < nd; ++i) {  // split, seed 000 eq. (17)
      s[i] = x[2 * i];
      d[i] = x[2 * i + 1];
    }
    if (ns > nd) s[ns - 1] = x[n - 1];
    for (int k = 0; k < kNumSteps; ++k) lift_line(s, d, ns, nd, Step(k), Direction::Forward);
    std::memcpy(out + std::ptrdiff_t(r) * ld_out, buf.data(), sizeof(T) * std::size_t(n));
  }
}

template <typename T>
void rows_inverse(const T* in, int ld_in, T* out, int ld_out, int rows, int n) {
  const int ns = low_count(n), nd = high_count(n);
  std::vector<T>& buf = scratch<T>(std::size_t(n));
  T* s = buf.data();
  T* d = s + ns;
  for (int r = 0; r < rows; ++r) {
    std::memcpy(buf.data(), in + std::ptrdiff_t(r) * ld_in, sizeof(T) * std::size_t(n));
    for (int k = kNumSteps - 1; k >= 0; --k) lift_line(s, d, ns, nd, Step(k), Direction::Inverse);
    T* x = out + std::ptrdiff_t(r) * ld_out;
    for (int i = 0; i < nd; ++i) {
      x[2 * i] = s[i];
      x[2 * i + 1] = d[i];
    }
    if (ns > nd) x[n - 1] = s[ns - 1];
  }
}

// The vertical pass on cache-sized column blocks: each block's window (the unit's rows and
// its halos) is gathered in split layout, lifted in every step, and the unit's own rows
// scattered: L rows then H rows forward, x-order rows inverse.
namespace {
template <typename T>
void cols_pass(Direction dir, const T* in, int ld_in, int h, int w, const T* above, const T* below,
               int ld_halo, T* out, int ld_out) {
  const bool fwd = dir == Direction::Forward;
  const int a = above ? kHalo : 0, n_win = window_rows(h, above, below);
  const int bw = column_block<T>(n_win, w);
  std::vector<T>& win = scratch<T>(std::size_t(n_win) * bw);
  for (int c0 = 0; c0 < w; c0 += bw) {
    const int cw = std::min(bw, w - c0);
    for (int j = 0; j < n_win; ++j) {
      const T* src = fwd ? forward_source(j, a, h, in, ld_in, above, below, ld_halo)
                         : inverse_source(j, a, h, in, ld_in, above, below, ld_halo);
      std::memcpy(win.data() + std::ptrdiff_t(split_row(j, n_win)) * bw, src + c0, sizeof(T) * std::size_t(cw));
    }
    for (int k = 0; k < kNumSteps; ++k)
      lift_planes(win.data(), win.data() + std::ptrdiff_t(low_count(n_win)) * bw, bw, low_count(n_win),
                  high_count(n_win), cw, Step(fwd ? k : kNumSteps - 1 - k), dir);
    for (int t = 0; t < h; ++t)
      std::memcpy(out + std::ptrdiff_t(fwd ? split_row(t, h) : t) * ld_out + c0,
                  win.data() + std::ptrdiff_t(split_row(a + t, n_win)) * bw, sizeof(T) * std::size_t(cw));
  }
}
}  // namespace

template <typename T>
void cols_forward(T* x, int ld_x, int h, int w, const T* above, const T* below, int ld_halo,
                  T* out, int ld_out) {
  cols_pass<T>(Direction::Forward, x, ld_x, h, w, above, below, ld_halo, out, ld_out);
}

template <typename T>
void cols_inverse(const T* c, int ld_c, int h, int w, const T* above, const T* below,
                  int ld_halo, T* out, int ld_out) {
  cols_pass<T>(Direction::Inverse, c, ld_c, h, w, above, below, ld_halo, out, ld_out);
}

// ---------------------------------------------------------------- steps pipeline
template <typename T>
void rows_split(const T* in, int ld_in, T* out, int ld_out, int rows, int n) {
  for (int r = 0; r < rows; ++r) {
    const T* x = in + std::ptrdiff_t(r) * ld_in;
    T* y = out + std::ptrdiff_t(r) * ld_out;
    for (int i = 0; i < n; ++i) y[split_row(i, n)] = x[i];
  }
}

template <typename T>
void rows_merge(const T* in, int ld_in, T* out, int ld_out, int rows, int n) {
  for (int r = 0; r < rows; ++r) {
    const T* y = in + std::ptrdiff_t(r) * ld_in;
    T* x = out + std::ptrdiff_t(r) * ld_out;
    for (int i = 0; i < n; ++i) x[i] = y[split_row(i, n)];
  }
}

template <typename T>
void rows_lift(T* data, int ld, int rows, int n, Step step, Direction dir) {
  const int ns = low_count(n), nd = high_count(n);
  for (int r = 0; r < rows; ++r) {
    T* row = data + std::ptrdiff_t(r) * ld;
    lift_line(row, row + ns, ns, nd, step, dir);
  }
}

template <typename T>
void cols_gather(const T* x, int ld_x, int h, int w, const T* above, const T* below, int ld_halo,
                 T* win, int ld_win) {
  const int a = above ? kHalo : 0, n_win = window_rows(h, above, below);
  for (int j = 0; j < n_win; ++j)
    std::memcpy(win + std::ptrdiff_t(split_row(j, n_win)) * ld_win,
                forward_source(j, a, h, x, ld_x, above, below, ld_halo), sizeof(T) * std::size_t(w));
}

template <typename T>
void cols_lift(T* win, int ld_win, int n_win, int w, Step step, Direction dir) {
  lift_planes(win, win + std::ptrdiff_t(low_count(n_win)) * ld_win, ld_win, low_count(n_win),
              high_count(n_win), w, step, dir);
}

template <typename T>
void cols_scatter(const T* win, int ld_win, int h, int w, bool above, bool below, T* out,
                  int ld_out) {
  const int a = above ? kHalo : 0, n_win = window_rows(h, above, below);
  for (int t = 0; t < h; ++t)
    std::memcpy(out + std::ptrdiff_t(split_row(t, h)) * ld_out,
                win + std::ptrdiff_t(split_row(a + t, n_win)) * ld_win, sizeof(T) * std::size_t(w));
}

template <typename T>
void cols_gather_inverse(const T* c, int ld_c, int h, int w, const T* above, const T* below,
                         int ld_halo, T* win, int ld_win) {
  const int a = above ? kHalo : 0, n_win = window_rows(h, above, below);
  for (int j = 0; j < n_win; ++j)
    std::memcpy(win + std::ptrdiff_t(split_row(j, n_win)) * ld_win,
                inverse_source(j, a, h, c, ld_c, above, below, ld_halo), sizeof(T) * std::size_t(w));
}

template <typename T>
void cols_scatter_inverse(const T* win, int ld_win, int h, int w, bool above, bool below, T* out,
                          int ld_out) {
  const int a = above ? kHalo : 0, n_win = window_rows(h, above, below);
  for (int t = 0; t < h; ++t)
    std::memcpy(out + std::ptrdiff_t(t) * ld_out,
                win + std::ptrdiff_t(split_row(a + t, n_win)) * ld_win, sizeof(T) * std::size_t(w));
}

template <typename T>
void write_halos(const T* unit, int ld, int h, int w, Direction layout, T* top, T* bottom,
                 int ld_halo) {
  for (int j = 0; j < kHalo; ++j) {
    // x-order row j from the top and row h - kHalo + j from the bottom.
    const int t_top = j, t_bot = h - kHalo + j;
    const int r_top = layout == Direction::Forward ? t_top : split_row(t_top, h);
    const int r_bot = layout == Direction::Forward ? t_bot : split_row(t_bot, h);
    if (top)
      std::memcpy(top + std::ptrdiff_t(j) * ld_halo, unit + std::ptrdiff_t(r_top) * ld,
                  sizeof(T) * std::size_t(w));
    if (bottom)
      std::memcpy(bottom + std::ptrdiff_t(j) * ld_halo, unit + std::ptrdiff_t(r_bot) * ld,
                  sizeof(T) * std::size_t(w));
  }
}

template <typename T>
void copy_levels(const T* in, int ld_in, T* out, int ld_out, int h, int w, int levels,
                 std::uint32_t keep) {
  for_each_level_block(h, w, levels, [&](int r0, int r1, int c0, int c1, int l) {
    const std::size_t bytes = sizeof(T) * std::size_t(c1 - c0);
    for (int r = r0; r < r1; ++r) {
      T* o = out + std::ptrdiff_t(r) * ld_out + c0;
      if (keep >> l & 1u) std::memcpy(o, in + std::ptrdiff_t(r) * ld_in + c0, bytes);
      else std::memset(o, 0, bytes);
    }
  });
}

#define LWT_CPU_INSTANTIATE(T)                                                                     \
  template void rows_forward<T>(const T*, int, T*, int, int, int);                                 \
  template void rows_inverse<T>(const T*, int, T*, int, int, int);                                 \
  template void cols_forward<T>(T*, int, int, int, const T*, const T*, int, T*, int);              \
  template void cols_inverse<T>(const T*, int, int, int, const T*, const T*, int, T*, int);        \
  template void rows_split<T>(const T*, int, T*, int, int, int);                                   \
  template void rows_merge<T>(const T*, int, T*, int, int, int);                                   \
  template void rows_lift<T>(T*, int, int, int, Step, Direction);                                  \
  template void cols_gather<T>(const T*, int, int, int, const T*, const T*, int, T*, int);         \
  template void cols_lift<T>(T*, int, int, int, Step, Direction);                                  \
  template void cols_scatter<T>(const T*, int, int, int, bool, bool, T*, int);                     \
  template void cols_gather_inverse<T>(const T*, int, int, int, const T*, const T*, int, T*, int); \
  template void cols_scatter_inverse<T>(const T*, int, int, int, bool, bool, T*, int);             \
  template void write_halos<T>(const T*, int, int, int, Direction, T*, T*, int);              \
  template void copy_levels<T>(const T*, int, T*, int, int, int, int, std::uint32_t);
LWT_CPU_INSTANTIATE(float)
LWT_CPU_INSTANTIATE(double)

}  // namespace lwt::cpu
