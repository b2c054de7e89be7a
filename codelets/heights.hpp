// The sums behind ISO 25178-2's height parameters (apps/filter/surface_params.hpp, which gives
// the formulas) over one strip of a surface's rows: the kernels of the height tasks
// (height_tasks.hpp). Declared once here; cpu/heights.cpp and cuda/heights.cu implement.
//
// A strip's rows split into kParts fixed slices (part p: rows [p rows / kParts, (p+1) rows /
// kParts)), each summed into its own Partial, on a CPU core as on a GPU (one block a part).
// Every backend thus returns the same parts; within a part the order of the double sums is the
// backend's, so two backends agree to a few ulps of double, not to the bit.
#pragma once

#include <cmath>

namespace heights {

constexpr int kParts = 128;

// One part's sums. Points: those neither masked nor non-finite (invalid, ISO 25178-72).
struct Partial {
  unsigned long long points = 0;
  double sum = 0;      // first pass: of the points' heights
  double largest = 0;  // first pass: max |residual| with a residual, else max |z| over every point
  double s1 = 0, s2 = 0, s3 = 0, s4 = 0;  // second pass: sums of |d|, d^2, d^3, d^4, d = z - mean
  double hi = -INFINITY, lo = INFINITY;   // second pass: max and min of d
};

// t with q added in: sums added, extremes kept (the order of adding is the caller's).
inline void add_part(Partial& t, const Partial& q) {
  t.points += q.points;
  t.sum += q.sum;
  t.largest = t.largest < q.largest ? q.largest : t.largest;
  t.s1 += q.s1;
  t.s2 += q.s2;
  t.s3 += q.s3;
  t.s4 += q.s4;
  t.hi = t.hi < q.hi ? q.hi : t.hi;
  t.lo = q.lo < t.lo ? q.lo : t.lo;
}

// A strip: rows x cols heights z (row stride ld); optionally a float32 residual of the same
// shape and a byte mask (nonzero: an invalid point), each with its own stride.
struct Strip {
  float* z = nullptr;
  int ld = 0;
  float* residual = nullptr;
  int ld_residual = 0;
  const unsigned char* mask = nullptr;
  int ld_mask = 0;
  int rows = 0, cols = 0;
};

// The first pass: with a residual, residual -= z (first) and largest = max |residual| after it;
// with `mark`, masked heights become NaN (after the subtraction, so the residual subtracts the
// transform's value there); then the sum and count of the points. Writes parts[0..kParts).
namespace cpu {
void first_pass(const Strip& s, bool mark, Partial* parts);
// The second pass: the sums about `mean` of the points.
void moments(const Strip& s, double mean, Partial* parts);
}  // namespace cpu

}  // namespace heights
