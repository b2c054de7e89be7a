// CDF 9/7 lifting (codelets/lifting.hpp): one test source for every backend (Thrust's
// testing/ style). Each test runs on Cpu and, when built with CUDA, on Cuda, in float and
// double, and compares with the plain reference lwt::ref (the oracle, Ginkgo's
// <Op>IsEquivalentToRef). Data: N(0,1) with zeros sprinkled in, awkward sizes (odd, 1 and 2
// rows, larger than a warp and than the CUDA tiles), leading dimensions larger than the width
// with padding poisoned by a NaN that must stay bit-for-bit untouched, outputs poisoned before
// each call so that every element must be written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "codelets/lifting.hpp"
#include "tests/backend_cases.hpp"
#include "tests/test_lifting_backends.hpp"

namespace lwt_test {
namespace {

using test_support::Case;
using test_support::CaseNames;
using test_support::is_poison;
using test_support::poison;
using test_support::cuda_device_present;

using lwt::Direction;
using lwt::high_count;
using lwt::kHalo;
using lwt::low_count;
using lwt::Step;

// ------------------------------------------------------------------------- backends
template <typename T>
struct CpuOps {
  static void rows_forward(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int rows, int n) {
    lwt::cpu::rows_forward(in.data(), ld_in, out.data(), ld_out, rows, n);
  }
  static void rows_inverse(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int rows, int n) {
    lwt::cpu::rows_inverse(in.data(), ld_in, out.data(), ld_out, rows, n);
  }
  static void cols_forward(Buf<T>& x, int ld_x, int h, int w, const Buf<T>* above,
                           const Buf<T>* below, int ld_halo, Buf<T>& out, int ld_out) {
    lwt::cpu::cols_forward(x.data(), ld_x, h, w, ptr(above), ptr(below), ld_halo, out.data(),
                           ld_out);
  }
  static void cols_inverse(const Buf<T>& c, int ld_c, int h, int w, const Buf<T>* above,
                           const Buf<T>* below, int ld_halo, Buf<T>& out, int ld_out) {
    lwt::cpu::cols_inverse(c.data(), ld_c, h, w, ptr(above), ptr(below), ld_halo, out.data(),
                           ld_out);
  }
  static void rows_split(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int rows, int n) {
    lwt::cpu::rows_split(in.data(), ld_in, out.data(), ld_out, rows, n);
  }
  static void rows_merge(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int rows, int n) {
    lwt::cpu::rows_merge(in.data(), ld_in, out.data(), ld_out, rows, n);
  }
  static void rows_lift(Buf<T>& data, int ld, int rows, int n, Step step, Direction dir) {
    lwt::cpu::rows_lift(data.data(), ld, rows, n, step, dir);
  }
  static void cols_gather(const Buf<T>& x, int ld_x, int h, int w, const Buf<T>* above,
                          const Buf<T>* below, int ld_halo, Buf<T>& win, int ld_win) {
    lwt::cpu::cols_gather(x.data(), ld_x, h, w, ptr(above), ptr(below), ld_halo, win.data(),
                          ld_win);
  }
  static void cols_lift(Buf<T>& win, int ld_win, int n_win, int w, Step step, Direction dir) {
    lwt::cpu::cols_lift(win.data(), ld_win, n_win, w, step, dir);
  }
  static void cols_scatter(const Buf<T>& win, int ld_win, int h, int w, bool above, bool below,
                           Buf<T>& out, int ld_out) {
    lwt::cpu::cols_scatter(win.data(), ld_win, h, w, above, below, out.data(), ld_out);
  }
  static void cols_gather_inverse(const Buf<T>& c, int ld_c, int h, int w, const Buf<T>* above,
                                  const Buf<T>* below, int ld_halo, Buf<T>& win, int ld_win) {
    lwt::cpu::cols_gather_inverse(c.data(), ld_c, h, w, ptr(above), ptr(below), ld_halo,
                                  win.data(), ld_win);
  }
  static void cols_scatter_inverse(const Buf<T>& win, int ld_win, int h, int w, bool above,
                                   bool below, Buf<T>& out, int ld_out) {
    lwt::cpu::cols_scatter_inverse(win.data(), ld_win, h, w, above, below, out.data(), ld_out);
  }
  static void write_halos(const Buf<T>& unit, int ld, int h, int w, Direction layout, Buf<T>* top,
                          Buf<T>* bottom, int ld_halo) {
    lwt::cpu::write_halos(unit.data(), ld, h, w, layout, top ? top->data() : nullptr,
                          bottom ? bottom->data() : nullptr, ld_halo);
  }
  static void copy_levels(const Buf<T>& in, int ld_in, Buf<T>& out, int ld_out, int h, int w,
                          int levels, std::uint32_t keep) {
    lwt::cpu::copy_levels(in.data(), ld_in, out.data(), ld_out, h, w, levels, keep);
  }

 private:
  static const T* ptr(const Buf<T>* b) { return b ? b->data() : nullptr; }
};

struct Cpu {
  template <typename T>
  using Ops = CpuOps<T>;
  static constexpr const char* kName = "Cpu";
  static bool available(std::string*) { return true; }
};

#ifdef FNNDTPS_TEST_CUDA
struct Cuda {
  template <typename T>
  using Ops = CudaOps<T>;
  static constexpr const char* kName = "Cuda";
  static bool available(std::string* why) { return cuda_device_present(why); }
};
#endif

using Cases = ::testing::Types<Case<Cpu, float>, Case<Cpu, double>
#ifdef FNNDTPS_TEST_CUDA
                               ,
                               Case<Cuda, float>, Case<Cuda, double>
#endif
                               >;


// ------------------------------------------------------------------------- tolerances
// Largest error of one pass, relative to the largest magnitude of the expected result. Every
// output of a pass is 4 lifting steps deep, each a multiply-add on neighbours of similar size,
// and the backends differ from the reference only in the order of operations, so they agree
// with it to a few units in the last place of
// the data's scale, the inverse's larger synthesis gain included. Measured on N(0,1) data, CPU
// backend against the reference: float up to 9.2e-7 (an inverse pass; forward 1e-7), double
// 4.4e-16. A wrong index, a missed boundary case or a stale halo errs by O(1). (The CUDA
// backend equals the CPU's bit for bit: CudaMatchesCpu.)
template <typename T>
double tol() {
  return std::is_same_v<T, float> ? 4e-6 : 1e-14;
}
// Forward then inverse, two passes each way in 2D: T.800's float round trips stay near 2e-6.
template <typename T>
double round_trip_tol() {
  return std::is_same_v<T, float> ? 1e-5 : 1e-13;
}

// ------------------------------------------------------------------------- matrices

template <typename T>
struct Mat {
  using Self = Mat;  // a non-deduced context: lets halo arguments be nullptr
  int rows = 0, cols = 0, ld = 0;
  Buf<T> v;
  Mat() = default;
  Mat(int r, int c, int pad) : rows(r), cols(c), ld(c + pad), v(std::size_t(r) * (c + pad), poison<T>()) {}
  T& at(int r, int c) { return v[std::size_t(r) * ld + c]; }
  const T& at(int r, int c) const { return v[std::size_t(r) * ld + c]; }
  T* row(int r) { return v.data() + std::size_t(r) * ld; }
  const T* row(int r) const { return v.data() + std::size_t(r) * ld; }
};

// N(0,1) samples, about one in eight exactly zero, padding poisoned.
template <typename T>
Mat<T> random_mat(int rows, int cols, int pad, unsigned seed) {
  Mat<T> m(rows, cols, pad);
  test_support::RandomValues values(seed);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m.at(r, c) = values.next<T>();
  return m;
}

// Rows [r0, r0 + n) of m, as a new matrix with its own padding.
template <typename T>
Mat<T> rows_of(const Mat<T>& m, int r0, int n, int pad) {
  Mat<T> out(n, m.cols, pad);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < m.cols; ++c) out.at(r, c) = m.at(r0 + r, c);
  return out;
}

// got matches want within tol of want's largest magnitude, every element of got was written
// (finite) and got's padding is untouched.
template <typename T>
::testing::AssertionResult close(const Mat<T>& got, const Mat<T>& want, double rel) {
  if (got.rows != want.rows || got.cols != want.cols)
    return ::testing::AssertionFailure() << "shape " << got.rows << "x" << got.cols << " vs "
                                         << want.rows << "x" << want.cols;
  double scale = 0, worst = 0;
  int wr = 0, wc = 0;
  for (int r = 0; r < want.rows; ++r)
    for (int c = 0; c < want.cols; ++c) scale = std::max(scale, std::abs(double(want.at(r, c))));
  for (int r = 0; r < got.rows; ++r) {
    for (int c = 0; c < got.cols; ++c) {
      const double g = double(got.at(r, c)), e = double(want.at(r, c));
      if (!std::isfinite(g))
        return ::testing::AssertionFailure() << "element (" << r << ", " << c << ") is " << g
                                             << (is_poison(got.at(r, c)) ? " (never written)" : "");
      if (std::abs(g - e) > worst) {
        worst = std::abs(g - e);
        wr = r;
        wc = c;
      }
    }
    for (int c = got.cols; c < got.ld; ++c)
      if (!is_poison(got.at(r, c)))
        return ::testing::AssertionFailure() << "padding (" << r << ", " << c << ") overwritten";
  }
  if (worst > rel * std::max(scale, 1e-300))
    return ::testing::AssertionFailure()
           << got.rows << "x" << got.cols << ": error " << worst << " at (" << wr << ", " << wc
           << "): got " << got.at(wr, wc) << ", want " << want.at(wr, wc) << "; relative "
           << worst / scale << " > " << rel;
  return ::testing::AssertionSuccess();
}

template <typename T>
::testing::AssertionResult bit_equal(const Mat<T>& got, const Mat<T>& want) {
  if (got.rows != want.rows || got.cols != want.cols)
    return ::testing::AssertionFailure() << "shape differs";
  for (int r = 0; r < got.rows; ++r) {
    for (int c = 0; c < got.cols; ++c)
      if (std::memcmp(&got.at(r, c), &want.at(r, c), sizeof(T)) != 0)
        return ::testing::AssertionFailure() << "(" << r << ", " << c << "): " << got.at(r, c)
                                             << " vs " << want.at(r, c);
    for (int c = got.cols; c < got.ld; ++c)
      if (!is_poison(got.at(r, c)))
        return ::testing::AssertionFailure() << "padding (" << r << ", " << c << ") overwritten";
  }
  return ::testing::AssertionSuccess();
}

// ------------------------------------------------------------------------- the oracle
template <typename T>
Mat<T> ref_rows(const Mat<T>& x, Direction dir) {
  Mat<T> out(x.rows, x.cols, 0);
  for (int r = 0; r < x.rows; ++r) {
    if (dir == Direction::Forward)
      lwt::ref::forward_1d(x.row(r), 1, x.cols, out.row(r), 1);
    else
      lwt::ref::inverse_1d(x.row(r), 1, x.cols, out.row(r), 1);
  }
  return out;
}

template <typename T>
Mat<T> ref_cols(const Mat<T>& x, Direction dir) {
  Mat<T> out(x.rows, x.cols, 0);
  for (int c = 0; c < x.cols; ++c) {
    if (dir == Direction::Forward)
      lwt::ref::forward_1d(x.row(0) + c, x.ld, x.rows, out.row(0) + c, out.ld);
    else
      lwt::ref::inverse_1d(x.row(0) + c, x.ld, x.rows, out.row(0) + c, out.ld);
  }
  return out;
}

template <typename T>
Mat<T> ref_rows_lift(Mat<T> m, Step step, Direction dir) {
  for (int r = 0; r < m.rows; ++r) lwt::ref::lift_1d(m.row(r), 1, m.cols, step, dir);
  return m;
}

template <typename T>
Mat<T> ref_cols_lift(Mat<T> m, Step step, Direction dir) {
  for (int c = 0; c < m.cols; ++c) lwt::ref::lift_1d(m.row(0) + c, m.ld, m.rows, step, dir);
  return m;
}

// Split-layout row of x-index y in a line of n.
int split_row(int y, int n) { return y % 2 == 0 ? y / 2 : low_count(n) + y / 2; }

std::string shape(int rows, int cols) {
  std::ostringstream s;
  s << rows << " x " << cols;
  return s.str();
}

constexpr int kRowCounts[] = {1, 2, 3, 33};
// Line lengths: tiny, odd, past a warp, past the CUDA row tile (2040 outputs) more than once.
constexpr int kRowLengths[] = {2, 3, 4, 5, 6, 7, 33, 257, 1031, 2041, 4100};

template <typename C>
class Lifting : public ::testing::Test {
 protected:
  using Scalar = typename C::Scalar;
  using BackendOps = typename C::Backend::template Ops<Scalar>;
  void SetUp() override {
    std::string why;
    if (!C::Backend::available(&why)) GTEST_SKIP() << "backend unavailable: " << why;
  }
};
TYPED_TEST_SUITE(Lifting, Cases, CaseNames);

// ------------------------------------------------------------------------- known answers
// DESIGN.md 4.1: x = 1..16.
constexpr double kKnownL[] = {1.3336405, 3.0732668, 5, 7, 9, 11, 12.9465025, 15.0634105};
constexpr double kKnownH[] = {0.25, 0, 0, 0, 0, 0, -0.1825435, 0.8650871};

TEST(LiftingReference, KnownAnswer) {
  double x[16], y[16];
  for (int i = 0; i < 16; ++i) x[i] = i + 1;
  lwt::ref::forward_1d(x, 1, 16, y, 1);
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(y[i], kKnownL[i], 1e-7) << "L" << i;  // the table's 7 decimals
    EXPECT_NEAR(y[8 + i], kKnownH[i], 1e-7) << "H" << i;
  }
}

TYPED_TEST(Lifting, KnownAnswer) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  Mat<T> x(1, 16, 0), y(1, 16, 0), back(1, 16, 0);
  for (int i = 0; i < 16; ++i) x.at(0, i) = T(i + 1);
  Ops::rows_forward(x.v, x.ld, y.v, y.ld, 1, 16);
  const double abs_tol = 1e-7 + 16 * tol<T>();  // table's 7 decimals + rounding at 16
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(double(y.at(0, i)), kKnownL[i], abs_tol) << "L" << i;
    EXPECT_NEAR(double(y.at(0, 8 + i)), kKnownH[i], abs_tol) << "H" << i;
  }
  Ops::rows_inverse(y.v, y.ld, back.v, back.ld, 1, 16);
  EXPECT_TRUE(close(back, x, tol<T>()));
}

// ------------------------------------------------------------------------- horizontal
TYPED_TEST(Lifting, RowsFusedMatchReference) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  unsigned seed = 1;
  for (int rows : kRowCounts) {
    for (int n : kRowLengths) {
      SCOPED_TRACE(shape(rows, n));
      const Mat<T> x = random_mat<T>(rows, n, 3, seed++);
      const Mat<T> x_copy = x;
      const Mat<T> want_f = ref_rows(x, Direction::Forward);
      const Mat<T> want_i = ref_rows(x, Direction::Inverse);

      Mat<T> out(rows, n, 5);
      Ops::rows_forward(x.v, x.ld, out.v, out.ld, rows, n);
      EXPECT_TRUE(close(out, want_f, tol<T>())) << "rows_forward";
      EXPECT_TRUE(bit_equal(x, x_copy)) << "rows_forward modified its input";

      out = Mat<T>(rows, n, 1);
      Ops::rows_inverse(x.v, x.ld, out.v, out.ld, rows, n);
      EXPECT_TRUE(close(out, want_i, tol<T>())) << "rows_inverse";
      EXPECT_TRUE(bit_equal(x, x_copy)) << "rows_inverse modified its input";

      Mat<T> inplace = x;  // in == out
      Ops::rows_forward(inplace.v, inplace.ld, inplace.v, inplace.ld, rows, n);
      EXPECT_TRUE(close(inplace, want_f, tol<T>())) << "rows_forward in place";
      inplace = x;
      Ops::rows_inverse(inplace.v, inplace.ld, inplace.v, inplace.ld, rows, n);
      EXPECT_TRUE(close(inplace, want_i, tol<T>())) << "rows_inverse in place";
    }
  }
}

// Rows longer than one CUDA block's shared memory holds whole (in place: from a copy), and
// rows that need the opt-in shared-memory size.
TYPED_TEST(Lifting, LongRowsInPlace) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  for (int n : {16384, 16385, 60001}) {
    SCOPED_TRACE(shape(2, n));
    const Mat<T> x = random_mat<T>(2, n, 1, 7u + unsigned(n));
    for (Direction dir : {Direction::Forward, Direction::Inverse}) {
      Mat<T> m = x;
      if (dir == Direction::Forward)
        Ops::rows_forward(m.v, m.ld, m.v, m.ld, 2, n);
      else
        Ops::rows_inverse(m.v, m.ld, m.v, m.ld, 2, n);
      EXPECT_TRUE(close(m, ref_rows(x, dir), tol<T>())) << (dir == Direction::Forward ? "fwd" : "inv");
    }
  }
}

TYPED_TEST(Lifting, RowsSplitMerge) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  unsigned seed = 100;
  for (int rows : kRowCounts) {
    for (int n : {1, 2, 3, 5, 33, 257, 1031}) {
      SCOPED_TRACE(shape(rows, n));
      const Mat<T> x = random_mat<T>(rows, n, 2, seed++);
      Mat<T> want(rows, n, 3);
      for (int r = 0; r < rows; ++r)
        for (int i = 0; i < n; ++i) want.at(r, split_row(i, n)) = x.at(r, i);
      Mat<T> split(rows, n, 3), merged(rows, n, 1);
      Ops::rows_split(x.v, x.ld, split.v, split.ld, rows, n);
      EXPECT_TRUE(bit_equal(split, want)) << "rows_split";
      Ops::rows_merge(split.v, split.ld, merged.v, merged.ld, rows, n);
      EXPECT_TRUE(bit_equal(merged, rows_of(x, 0, rows, 1))) << "rows_merge";
    }
  }
}

// One unit's per-unit Mallat layout is the image's Mallat layout: detail level l holds the
// top-left image_rows(l-1) x cols(l-1) block less its top-left image_rows(l) x cols(l) block.
// copy_levels keeps exactly the kept levels' elements, bit for bit, and writes 0 elsewhere.
TYPED_TEST(Lifting, CopyLevelsKeepsTheLevelsItIsGiven) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  auto shrink = [](int n, int l) {
    for (int i = 0; i < l; ++i) n = low_count(n);
    return n;
  };
  unsigned seed = 300;
  struct Shape {
    int h, w, levels;
  };
  for (const auto& [h, w, levels] : {Shape{2, 2, 1}, Shape{5, 3, 2}, Shape{33, 17, 3}, Shape{64, 100, 5}, Shape{97, 1031, 6}}) {
    for (const std::uint32_t keep : {0u, 1u, 2u, 0b1010u, 0b0101u, ~0u}) {
      SCOPED_TRACE(shape(h, w) + " levels " + std::to_string(levels) + " keep " + std::to_string(keep));
      const Mat<T> x = random_mat<T>(h, w, 2, seed++);
      Mat<T> want(h, w, 3), got(h, w, 3);
      for (int r = 0; r < h; ++r)
        for (int c = 0; c < w; ++c) {
          int l = 1;  // the deepest level whose block holds (r, c)
          while (l < levels && r < shrink(h, l) && c < shrink(w, l)) ++l;
          if (l == levels && r < shrink(h, levels) && c < shrink(w, levels)) l = 0;
          want.at(r, c) = (keep >> l & 1u) ? x.at(r, c) : T(0);
        }
      Ops::copy_levels(x.v, x.ld, got.v, got.ld, h, w, levels, keep);
      EXPECT_TRUE(bit_equal(got, want));
    }
  }
}

TYPED_TEST(Lifting, RowsLiftEachStep) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  unsigned seed = 200;
  for (int rows : {1, 2, 33}) {
    for (int n : {2, 3, 4, 5, 33, 257, 1031}) {
      const Mat<T> x = random_mat<T>(rows, n, 3, seed++);
      for (Direction dir : {Direction::Forward, Direction::Inverse}) {
        for (int k = 0; k < lwt::kNumSteps; ++k) {
          SCOPED_TRACE(shape(rows, n) + " step " + std::to_string(k) +
                       (dir == Direction::Forward ? " forward" : " inverse"));
          Mat<T> m = x;
          Ops::rows_lift(m.v, m.ld, rows, n, Step(k), dir);
          EXPECT_TRUE(close(m, ref_rows_lift(x, Step(k), dir), tol<T>()));
        }
      }
    }
  }
}

// The steps pipeline (seed 000, Algorithm 1) equals the fused pass.
TYPED_TEST(Lifting, RowsStepsEqualFused) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  unsigned seed = 300;
  for (int rows : {1, 3, 33}) {
    for (int n : {2, 3, 33, 1031, 4100}) {
      SCOPED_TRACE(shape(rows, n));
      const Mat<T> x = random_mat<T>(rows, n, 1, seed++);
      Mat<T> fused(rows, n, 2), steps(rows, n, 2);
      Ops::rows_forward(x.v, x.ld, fused.v, fused.ld, rows, n);
      Ops::rows_split(x.v, x.ld, steps.v, steps.ld, rows, n);
      for (int k = 0; k < lwt::kNumSteps; ++k)
        Ops::rows_lift(steps.v, steps.ld, rows, n, Step(k), Direction::Forward);
      EXPECT_TRUE(close(steps, fused, tol<T>())) << "forward";

      Mat<T> lifted = x, back_fused(rows, n, 2), back_steps(rows, n, 2);
      Ops::rows_inverse(x.v, x.ld, back_fused.v, back_fused.ld, rows, n);
      for (int k = lwt::kNumSteps - 1; k >= 0; --k)
        Ops::rows_lift(lifted.v, lifted.ld, rows, n, Step(k), Direction::Inverse);
      Ops::rows_merge(lifted.v, lifted.ld, back_steps.v, back_steps.ld, rows, n);
      EXPECT_TRUE(close(back_steps, back_fused, tol<T>())) << "inverse";
    }
  }
}

// ------------------------------------------------------------------------- vertical
// Applies the steps pipeline of a vertical pass: gather, the 5 lifts, scatter.
template <typename Ops, typename T>
Mat<T> cols_steps(const Mat<T>& in, const typename Mat<T>::Self* above,
                  const typename Mat<T>::Self* below, Direction dir) {
  const bool has_above = above != nullptr, has_below = below != nullptr;
  const int h = in.rows, w = in.cols, n_win = lwt::cpu::window_rows(h, has_above, has_below);
  const int ld_halo = above ? above->ld : below ? below->ld : 0;
  Mat<T> win(n_win, w, 3), out(h, w, 2);
  if (dir == Direction::Forward) {
    Ops::cols_gather(in.v, in.ld, h, w, above ? &above->v : nullptr, below ? &below->v : nullptr,
                     ld_halo, win.v, win.ld);
    for (int k = 0; k < lwt::kNumSteps; ++k) Ops::cols_lift(win.v, win.ld, n_win, w, Step(k), dir);
    Ops::cols_scatter(win.v, win.ld, h, w, has_above, has_below, out.v, out.ld);
  } else {
    Ops::cols_gather_inverse(in.v, in.ld, h, w, above ? &above->v : nullptr,
                             below ? &below->v : nullptr, ld_halo, win.v, win.ld);
    for (int k = lwt::kNumSteps - 1; k >= 0; --k)
      Ops::cols_lift(win.v, win.ld, n_win, w, Step(k), dir);
    Ops::cols_scatter_inverse(win.v, win.ld, h, w, has_above, has_below, out.v, out.ld);
  }
  return out;
}

// The fused vertical pass, which may use x as scratch: run it on a copy.
template <typename Ops, typename T>
Mat<T> cols_fused(const Mat<T>& in, const typename Mat<T>::Self* above,
                  const typename Mat<T>::Self* below, Direction dir) {
  const int h = in.rows, w = in.cols;
  const int ld_halo = above ? above->ld : below ? below->ld : 0;
  Mat<T> out(h, w, 2);
  if (dir == Direction::Forward) {
    Mat<T> x = in;
    Ops::cols_forward(x.v, x.ld, h, w, above ? &above->v : nullptr, below ? &below->v : nullptr,
                      ld_halo, out.v, out.ld);
  } else {
    Ops::cols_inverse(in.v, in.ld, h, w, above ? &above->v : nullptr, below ? &below->v : nullptr,
                      ld_halo, out.v, out.ld);
  }
  return out;
}

TYPED_TEST(Lifting, ColsLiftEachStep) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  unsigned seed = 400;
  for (int n_win : {2, 3, 5, 33, 140}) {
    for (int w : {1, 3, 257}) {
      const Mat<T> x = random_mat<T>(n_win, w, 3, seed++);
      for (Direction dir : {Direction::Forward, Direction::Inverse}) {
        for (int k = 0; k < lwt::kNumSteps; ++k) {
          SCOPED_TRACE(shape(n_win, w) + " step " + std::to_string(k) +
                       (dir == Direction::Forward ? " forward" : " inverse"));
          Mat<T> m = x;
          Ops::cols_lift(m.v, m.ld, n_win, w, Step(k), dir);
          EXPECT_TRUE(close(m, ref_cols_lift(x, Step(k), dir), tol<T>()));
        }
      }
    }
  }
}

// A whole image as one unit (no halos: symmetric extension at both edges).
TYPED_TEST(Lifting, ColsWholeImageMatchReference) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  unsigned seed = 500;
  for (int h : {2, 3, 5, 33, 257, 1031}) {
    for (int w : {1, 2, 3, 33, 257}) {
      SCOPED_TRACE(shape(h, w));
      const Mat<T> x = random_mat<T>(h, w, 3, seed++);
      const Mat<T> x_copy = x;
      for (Direction dir : {Direction::Forward, Direction::Inverse}) {
        SCOPED_TRACE(dir == Direction::Forward ? "forward" : "inverse");
        const Mat<T> want = ref_cols(x, dir);
        const Mat<T> fused = cols_fused<Ops>(x, nullptr, nullptr, dir);
        EXPECT_TRUE(close(fused, want, tol<T>())) << "fused";
        const Mat<T> steps = cols_steps<Ops>(x, nullptr, nullptr, dir);
        EXPECT_TRUE(close(steps, want, tol<T>())) << "steps";
        EXPECT_TRUE(close(steps, fused, tol<T>())) << "steps vs fused";
        EXPECT_TRUE(bit_equal(x, x_copy)) << "input modified";
      }
    }
  }
}

// Units at even row offsets: heights 8, 6, 136 (past the CUDA column tile of 128 rows), 4 and
// an odd last one, so every unit meets a halo, an edge, or both.
constexpr int kUnitStarts[] = {0, 8, 14, 150, 154};
constexpr int kImageRows = 299;

struct Unit {
  int g0, h;
  bool above, below;
};
std::vector<Unit> units() {
  std::vector<Unit> u;
  const int n = int(std::size(kUnitStarts));
  for (int i = 0; i < n; ++i) {
    const int g1 = i + 1 < n ? kUnitStarts[i + 1] : kImageRows;
    u.push_back({kUnitStarts[i], g1 - kUnitStarts[i], i > 0, i + 1 < n});
  }
  return u;
}

// Unit u of `image` as a column pass takes it: its rows, and the 4 rows above and below it
// where it has neighbours (above() and below() null where not).
template <typename T>
struct UnitInput {
  Mat<T> x, up, down;
  bool has_up, has_down;
  UnitInput(const Mat<T>& image, const Unit& u)
      : x(rows_of(image, u.g0, u.h, 3)), has_up(u.above), has_down(u.below) {
    if (u.above) up = rows_of(image, u.g0 - kHalo, kHalo, 1);
    if (u.below) down = rows_of(image, u.g0 + u.h, kHalo, 1);
  }
  const Mat<T>* above() const { return has_up ? &up : nullptr; }
  const Mat<T>* below() const { return has_down ? &down : nullptr; }
};

// Gathers and scatters are permutations of rows: check them bit for bit, each on its own.
TYPED_TEST(Lifting, ColsGatherScatterLayout) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  const int w = 37;
  for (int h : {4, 7, 10}) {
    for (int halos = 0; halos < 4; ++halos) {
      const bool has_above = halos & 1, has_below = (halos & 2) && h % 2 == 0;
      SCOPED_TRACE("h " + std::to_string(h) + (has_above ? " above" : "") +
                   (has_below ? " below" : ""));
      const int a = has_above ? kHalo : 0, n_win = lwt::cpu::window_rows(h, has_above, has_below);
      const Mat<T> unit = random_mat<T>(h, w, 3, 900u + unsigned(h * 4 + halos));
      const Mat<T> above = random_mat<T>(kHalo, w, 1, 950u + unsigned(h));
      const Mat<T> below = random_mat<T>(kHalo, w, 1, 970u + unsigned(h));
      const Buf<T>* pa = has_above ? &above.v : nullptr;
      const Buf<T>* pb = has_below ? &below.v : nullptr;
      // Window row k holds x-index k - a: a halo row or a unit row (x-order forward; split
      // layout for the inverse), stored at split row split_row(k, n_win).
      for (Direction dir : {Direction::Forward, Direction::Inverse}) {
        Mat<T> want(n_win, w, 2), win(n_win, w, 2);
        for (int k = 0; k < n_win; ++k) {
          const int y = k - a;
          for (int c = 0; c < w; ++c)
            want.at(split_row(k, n_win), c) =
                y < 0    ? above.at(y + kHalo, c)
                : y >= h ? below.at(y - h, c)
                         : unit.at(dir == Direction::Forward ? y : split_row(y, h), c);
        }
        if (dir == Direction::Forward)
          Ops::cols_gather(unit.v, unit.ld, h, w, pa, pb, above.ld, win.v, win.ld);
        else
          Ops::cols_gather_inverse(unit.v, unit.ld, h, w, pa, pb, above.ld, win.v, win.ld);
        EXPECT_TRUE(bit_equal(win, want)) << (dir == Direction::Forward ? "gather" : "gather_inverse");
      }
      const Mat<T> win = random_mat<T>(n_win, w, 2, 990u + unsigned(h));
      Mat<T> want_f(h, w, 1), want_i(h, w, 1), out_f(h, w, 1), out_i(h, w, 1);
      for (int y = 0; y < h; ++y)
        for (int c = 0; c < w; ++c) {
          want_f.at(split_row(y, h), c) = win.at(split_row(y + a, n_win), c);
          want_i.at(y, c) = win.at(split_row(y + a, n_win), c);
        }
      Ops::cols_scatter(win.v, win.ld, h, w, has_above, has_below, out_f.v, out_f.ld);
      Ops::cols_scatter_inverse(win.v, win.ld, h, w, has_above, has_below, out_i.v, out_i.ld);
      EXPECT_TRUE(bit_equal(out_f, want_f)) << "scatter";
      EXPECT_TRUE(bit_equal(out_i, want_i)) << "scatter_inverse";
    }
  }
}

// Forward: each unit's fused and steps passes, with halos from its neighbours' rows, give
// exactly its part of the global column transform: its L rows, then its H rows.
TYPED_TEST(Lifting, ColsForwardUnitsWithHalos) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  const int H = kImageRows, HL = low_count(H);
  for (int w : {1, 37, 4229}) {
    SCOPED_TRACE("width " + std::to_string(w));
    const Mat<T> image = random_mat<T>(H, w, 2, 600u + unsigned(w));
    const Mat<T> global = ref_cols(image, Direction::Forward);
    for (const Unit& u : units()) {
      SCOPED_TRACE("unit rows [" + std::to_string(u.g0) + ", " + std::to_string(u.g0 + u.h) + ")");
      const UnitInput<T> in(image, u);
      const Mat<T>& x = in.x;
      Mat<T> want(u.h, w, 0);
      for (int i = 0; i < u.h; ++i) {
        const int g = i < low_count(u.h) ? u.g0 / 2 + i : HL + u.g0 / 2 + (i - low_count(u.h));
        for (int c = 0; c < w; ++c) want.at(i, c) = global.at(g, c);
      }
      const Mat<T>* pa = in.above();
      const Mat<T>* pb = in.below();
      const Mat<T> fused = cols_fused<Ops>(x, pa, pb, Direction::Forward);
      EXPECT_TRUE(close(fused, want, tol<T>())) << "cols_forward";
      const Mat<T> steps = cols_steps<Ops>(x, pa, pb, Direction::Forward);
      EXPECT_TRUE(close(steps, want, tol<T>())) << "gather, lift, scatter";
      EXPECT_TRUE(close(steps, fused, tol<T>())) << "steps vs fused";

      // The halos this unit hands its neighbours: its first and last 4 rows.
      Mat<T> top(kHalo, w, 2), bottom(kHalo, w, 2);
      Ops::write_halos(x.v, x.ld, u.h, w, Direction::Forward, &top.v, &bottom.v, top.ld);
      EXPECT_TRUE(bit_equal(top, rows_of(image, u.g0, kHalo, 2))) << "top halo";
      EXPECT_TRUE(bit_equal(bottom, rows_of(image, u.g0 + u.h - kHalo, kHalo, 2))) << "bottom halo";
      Mat<T> only(kHalo, w, 2);
      Ops::write_halos(x.v, x.ld, u.h, w, Direction::Forward, nullptr, &only.v, only.ld);
      EXPECT_TRUE(bit_equal(only, bottom)) << "bottom halo alone";
    }
  }
}

// Inverse: units hold their coefficients in split layout; halos in x-order come from the
// neighbours' write_halos(..., Inverse, ...). Each unit recovers exactly its rows of the
// global inverse column transform.
TYPED_TEST(Lifting, ColsInverseUnitsWithHalos) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  const int H = kImageRows, HL = low_count(H);
  for (int w : {1, 37, 4229}) {
    SCOPED_TRACE("width " + std::to_string(w));
    const Mat<T> coeffs = random_mat<T>(H, w, 2, 700u + unsigned(w));  // global split layout
    const Mat<T> global = ref_cols(coeffs, Direction::Inverse);
    const std::vector<Unit> us = units();
    std::vector<Mat<T>> c(us.size()), tops(us.size()), bottoms(us.size());
    for (std::size_t k = 0; k < us.size(); ++k) {
      const Unit& u = us[k];
      c[k] = Mat<T>(u.h, w, 3);
      for (int i = 0; i < u.h; ++i) {
        const int g = i < low_count(u.h) ? u.g0 / 2 + i : HL + u.g0 / 2 + (i - low_count(u.h));
        for (int col = 0; col < w; ++col) c[k].at(i, col) = coeffs.at(g, col);
      }
      tops[k] = Mat<T>(kHalo, w, 1);
      bottoms[k] = Mat<T>(kHalo, w, 1);
      Ops::write_halos(c[k].v, c[k].ld, u.h, w, Direction::Inverse, &tops[k].v,
                       u.below ? &bottoms[k].v : nullptr, tops[k].ld);
      // Halos hold x-order coefficient rows: global x-index y is split row split_row(y, H).
      Mat<T> want_top(kHalo, w, 1), want_bottom(kHalo, w, 1);
      for (int j = 0; j < kHalo; ++j)
        for (int col = 0; col < w; ++col) {
          want_top.at(j, col) = coeffs.at(split_row(u.g0 + j, H), col);
          if (u.below) want_bottom.at(j, col) = coeffs.at(split_row(u.g0 + u.h - kHalo + j, H), col);
        }
      EXPECT_TRUE(bit_equal(tops[k], want_top)) << "top halo of unit " << k;
      if (u.below) {
        EXPECT_TRUE(bit_equal(bottoms[k], want_bottom)) << "bottom halo of unit " << k;
      }
    }
    for (std::size_t k = 0; k < us.size(); ++k) {
      const Unit& u = us[k];
      SCOPED_TRACE("unit rows [" + std::to_string(u.g0) + ", " + std::to_string(u.g0 + u.h) + ")");
      const Mat<T>* pa = u.above ? &bottoms[k - 1] : nullptr;
      const Mat<T>* pb = u.below ? &tops[k + 1] : nullptr;
      const Mat<T> c_copy = c[k];
      const Mat<T> want = rows_of(global, u.g0, u.h, 0);
      const Mat<T> fused = cols_fused<Ops>(c[k], pa, pb, Direction::Inverse);
      EXPECT_TRUE(close(fused, want, tol<T>())) << "cols_inverse";
      EXPECT_TRUE(bit_equal(c[k], c_copy)) << "cols_inverse modified c";
      const Mat<T> steps = cols_steps<Ops>(c[k], pa, pb, Direction::Inverse);
      EXPECT_TRUE(close(steps, want, tol<T>())) << "gather_inverse, lift, scatter_inverse";
      EXPECT_TRUE(close(steps, fused, tol<T>())) << "steps vs fused";
    }
  }
}

// ------------------------------------------------------------------------- CUDA against CPU
#ifdef FNNDTPS_TEST_CUDA
// Every pass computes each output with the same operations in the same order on both backends,
// none fused (lwt_cuda builds with --fmad=false, lwt_cpu with -ffp-contract=off), so a unit
// gives the same bits on a core as on a GPU and a transform's result does not depend on where
// the scheduler ran its units (across ranks too).
template <typename T>
void expect_cuda_equals_cpu() {
  using OnCpu = CpuOps<T>;
  using OnGpu = CudaOps<T>;
  unsigned seed = 900;
  for (int rows : {1, 3, 33}) {
    for (int n : {2, 3, 5, 33, 1031, 2041, 4100}) {
      SCOPED_TRACE(shape(rows, n));
      const Mat<T> x = random_mat<T>(rows, n, 3, seed++);
      Mat<T> a(rows, n, 2), b(rows, n, 2);
      OnCpu::rows_forward(x.v, x.ld, a.v, a.ld, rows, n);
      OnGpu::rows_forward(x.v, x.ld, b.v, b.ld, rows, n);
      EXPECT_TRUE(bit_equal(b, a)) << "rows_forward";
      a = Mat<T>(rows, n, 2), b = Mat<T>(rows, n, 2);
      OnCpu::rows_inverse(x.v, x.ld, a.v, a.ld, rows, n);
      OnGpu::rows_inverse(x.v, x.ld, b.v, b.ld, rows, n);
      EXPECT_TRUE(bit_equal(b, a)) << "rows_inverse";
      a = Mat<T>(rows, n, 2), b = Mat<T>(rows, n, 2);  // the steps pipeline
      OnCpu::rows_split(x.v, x.ld, a.v, a.ld, rows, n);
      OnGpu::rows_split(x.v, x.ld, b.v, b.ld, rows, n);
      for (int k = 0; k < lwt::kNumSteps; ++k) {
        OnCpu::rows_lift(a.v, a.ld, rows, n, Step(k), Direction::Forward);
        OnGpu::rows_lift(b.v, b.ld, rows, n, Step(k), Direction::Forward);
      }
      EXPECT_TRUE(bit_equal(b, a)) << "rows_split, rows_lift";
    }
  }
  for (int w : {1, 37, 4229}) {
    SCOPED_TRACE("width " + std::to_string(w));
    const Mat<T> image = random_mat<T>(kImageRows, w, 2, 950u + unsigned(w));
    for (const Unit& u : units()) {
      SCOPED_TRACE("unit rows [" + std::to_string(u.g0) + ", " + std::to_string(u.g0 + u.h) + ")");
      const UnitInput<T> in(image, u);
      const Mat<T>& x = in.x;
      const Mat<T>* pa = in.above();
      const Mat<T>* pb = in.below();
      for (const Direction dir : {Direction::Forward, Direction::Inverse}) {
        const char* name = dir == Direction::Forward ? "forward" : "inverse";
        EXPECT_TRUE(bit_equal(cols_fused<OnGpu>(x, pa, pb, dir), cols_fused<OnCpu>(x, pa, pb, dir))) << "fused " << name;
        EXPECT_TRUE(bit_equal(cols_steps<OnGpu>(x, pa, pb, dir), cols_steps<OnCpu>(x, pa, pb, dir))) << "steps " << name;
      }
    }
  }
}

TEST(CudaMatchesCpu, BitForBit) {
  std::string why;
  if (!cuda_device_present(&why)) GTEST_SKIP() << "backend unavailable: " << why;
  {
    SCOPED_TRACE("float");
    expect_cuda_equals_cpu<float>();
  }
  {
    SCOPED_TRACE("double");
    expect_cuda_equals_cpu<double>();
  }
}
#endif

// ------------------------------------------------------------------------- round trip
TYPED_TEST(Lifting, RoundTrip2D) {
  using T = typename TestFixture::Scalar;
  using Ops = typename TestFixture::BackendOps;
  for (auto [h, w] : {std::pair{257, 1031}, std::pair{2, 3}, std::pair{1031, 33}}) {
    SCOPED_TRACE(shape(h, w));
    const Mat<T> x = random_mat<T>(h, w, 3, 800u + unsigned(h));
    Mat<T> rows(h, w, 1), coeffs(h, w, 2), cols(h, w, 1), back(h, w, 3);
    Ops::rows_forward(x.v, x.ld, rows.v, rows.ld, h, w);
    Ops::cols_forward(rows.v, rows.ld, h, w, nullptr, nullptr, 0, coeffs.v, coeffs.ld);
    Ops::cols_inverse(coeffs.v, coeffs.ld, h, w, nullptr, nullptr, 0, cols.v, cols.ld);
    Ops::rows_inverse(cols.v, cols.ld, back.v, back.ld, h, w);
    EXPECT_TRUE(close(back, rows_of(x, 0, h, 3), round_trip_tol<T>()));
  }
}

}  // namespace
}  // namespace lwt_test
