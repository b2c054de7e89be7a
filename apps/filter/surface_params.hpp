// ISO 25178-2:2021 areal height parameters (§4.1) of a sampled surface, on the heights minus
// their mean (the mean plane of a levelled surface; the bands of lwt2d filter are levelled by
// construction, the input is levelled by removing its mean only).
//   Sa = mean |z|            Sq = sqrt(mean z^2)        Sp = max z      Sv = |min z|
//   Sz = Sp + Sv             Ssk = mean z^3 / Sq^3      Sku = mean z^4 / Sq^4
// Sums run in double over the finite samples only (invalid points are NaN, ISO 25178-72).
#pragma once

#include <cmath>
#include <cstddef>

namespace filter {

struct HeightParams {
  double sa = 0, sq = 0, sp = 0, sv = 0, sz = 0, ssk = 0, sku = 0;
  std::size_t points = 0;  // finite samples used
};

// The parameters from the sums about the mean of the finite samples: the second pass of
// height_params, or of the height tasks (codelets/heights.hpp), which lwt2d filter runs where
// its bands are. Throws std::invalid_argument when there is no point. Ssk and Sku are 0 for a
// flat surface.
struct CentralSums {
  std::size_t points = 0;
  double s1 = 0, s2 = 0, s3 = 0, s4 = 0;  // sums of |d|, d^2, d^3, d^4 with d = z - mean
  double hi = -INFINITY, lo = INFINITY;   // max and min of d
};
HeightParams from_central_sums(const CentralSums& m);

// The plain two-pass computation over a host array, the height tasks' reference. Throws
// std::invalid_argument when no sample is finite. Sums run on the host's threads in fixed
// chunks: the result does not depend on their number.
HeightParams height_params(const float* z, std::size_t n);

// `in` into `out` on the host's threads, every non-finite height as NaN (an invalid point,
// ISO 25178-72); returns how many there were. Elementwise, so the same on any thread count.
std::size_t copy_marking_invalid(const float* in, float* out, std::size_t n);

}  // namespace filter
