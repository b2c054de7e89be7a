// The plain reference: one line at a time, plain loops. The test oracle for every backend.
#include "codelets/lifting.hpp"

#include <vector>

namespace lwt::ref {

// One lifting step on a split line: s = line[0..ns), d = line[ns..n) (seed 000 eqs. 18-20).
// Symmetric extension: d_{-1} = d_0; past the end, s_{ns} = s_{ns-1} (n even) and
// d_{nd} = d_{nd-1} (n odd).
template <typename T>
void lift_1d(T* line, std::ptrdiff_t stride, int n, Step step, Direction dir) {
  const int ns = low_count(n), nd = high_count(n);
  auto s = [&](int i) -> T& { return line[i * stride]; };
  auto d = [&](int i) -> T& { return line[(ns + i) * stride]; };
  const double sign = dir == Direction::Forward ? 1.0 : -1.0;
  if (step == Step::Scale) {
    const double ks = dir == Direction::Forward ? 1.0 / kK : kK;
    const double kd = dir == Direction::Forward ? kK : 1.0 / kK;
    for (int i = 0; i < ns; ++i) s(i) = static_cast<T>(s(i) * ks);
    for (int i = 0; i < nd; ++i) d(i) = static_cast<T>(d(i) * kd);
    return;
  }
  const T c = static_cast<T>(sign * step_coefficient(step));
  if (step_is_predict(step)) {
    for (int i = 0; i < nd; ++i) {
      const T right = i + 1 < ns ? s(i + 1) : s(i);
      d(i) = d(i) + c * (s(i) + right);
    }
  } else {
    for (int i = 0; i < ns; ++i) {
      const T left = i > 0 ? d(i - 1) : d(0);
      const T right = i < nd ? d(i) : d(i - 1);
      s(i) = s(i) + c * (left + right);
    }
  }
}

template <typename T>
void forward_1d(const T* x, std::ptrdiff_t stride, int n, T* out, std::ptrdiff_t stride_out) {
  const int ns = low_count(n);
  std::vector<T> line(n);
  for (int i = 0; i < n; ++i) line[(i % 2 == 0 ? i / 2 : ns + i / 2)] = x[i * stride];
  for (int k = 0; k < kNumSteps; ++k) lift_1d(line.data(), 1, n, Step(k), Direction::Forward);
  for (int i = 0; i < n; ++i) out[i * stride_out] = line[i];
}

template <typename T>
void inverse_1d(const T* c, std::ptrdiff_t stride, int n, T* out, std::ptrdiff_t stride_out) {
  const int ns = low_count(n);
  std::vector<T> line(n);
  for (int i = 0; i < n; ++i) line[i] = c[i * stride];
  for (int k = kNumSteps - 1; k >= 0; --k) lift_1d(line.data(), 1, n, Step(k), Direction::Inverse);
  for (int i = 0; i < n; ++i) out[i * stride_out] = line[(i % 2 == 0 ? i / 2 : ns + i / 2)];
}

// Mallat layout: level l works on the top-left h x w block (h = ceil(H / 2^l), likewise w):
// rows first, then columns; the next level takes the LL quarter.
template <typename T>
void forward_2d(const T* image, int H, int W, int levels, T* coeffs) {
  for (std::size_t i = 0; i < std::size_t(H) * W; ++i) coeffs[i] = image[i];
  int h = H, w = W;
  for (int l = 0; l < levels; ++l) {
    for (int r = 0; r < h; ++r) forward_1d(coeffs + std::size_t(r) * W, 1, w, coeffs + std::size_t(r) * W, 1);
    for (int c = 0; c < w; ++c) forward_1d(coeffs + c, W, h, coeffs + c, W);
    h = low_count(h);
    w = low_count(w);
  }
}

template <typename T>
void inverse_2d(const T* coeffs, int H, int W, int levels, T* image) {
  for (std::size_t i = 0; i < std::size_t(H) * W; ++i) image[i] = coeffs[i];
  std::vector<int> hs{H}, ws{W};
  for (int l = 1; l < levels; ++l) {
    hs.push_back(low_count(hs.back()));
    ws.push_back(low_count(ws.back()));
  }
  for (int l = levels - 1; l >= 0; --l) {
    const int h = hs[l], w = ws[l];
    for (int c = 0; c < w; ++c) inverse_1d(image + c, W, h, image + c, W);
    for (int r = 0; r < h; ++r) inverse_1d(image + std::size_t(r) * W, 1, w, image + std::size_t(r) * W, 1);
  }
}

#define LWT_REF_INSTANTIATE(T)                                                             \
  template void lift_1d<T>(T*, std::ptrdiff_t, int, Step, Direction);                      \
  template void forward_1d<T>(const T*, std::ptrdiff_t, int, T*, std::ptrdiff_t);          \
  template void inverse_1d<T>(const T*, std::ptrdiff_t, int, T*, std::ptrdiff_t);          \
  template void forward_2d<T>(const T*, int, int, int, T*);                                \
  template void inverse_2d<T>(const T*, int, int, int, T*);
LWT_REF_INSTANTIATE(float)
LWT_REF_INSTANTIATE(double)

}  // namespace lwt::ref
