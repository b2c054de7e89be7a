#include "apps/filter/surface_params.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace filter {

HeightParams height_params(const float* z, std::size_t n) {
  HeightParams p;
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(z[i])) {
      sum += z[i];
      ++p.points;
    }
  if (p.points == 0) throw std::invalid_argument("no valid height to compute parameters from");
  const double mean = sum / double(p.points);
  double s1 = 0, s2 = 0, s3 = 0, s4 = 0, hi = -INFINITY, lo = INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(z[i])) continue;
    const double d = double(z[i]) - mean, d2 = d * d;
    s1 += std::fabs(d);
    s2 += d2;
    s3 += d2 * d;
    s4 += d2 * d2;
    hi = std::max(hi, d);
    lo = std::min(lo, d);
  }
  const double m = double(p.points);
  p.sa = s1 / m;
  p.sq = std::sqrt(s2 / m);
  p.sp = hi;
  p.sv = std::fabs(lo);
  p.sz = p.sp + p.sv;
  if (p.sq > 0) {
    p.ssk = s3 / m / (p.sq * p.sq * p.sq);
    p.sku = s4 / m / (p.sq * p.sq * p.sq * p.sq);
  }
  return p;
}

}  // namespace filter
