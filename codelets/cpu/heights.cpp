#include "codelets/heights.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace heights::cpu {

namespace {

inline bool valid(const Strip& s, int r, int c) {
  return !(s.mask && s.mask[std::ptrdiff_t(r) * s.ld_mask + c]);
}

}  // namespace

void first_pass(const Strip& s, bool mark, Partial* parts) {
  for (int p = 0; p < kParts; ++p) {
    Partial q;
    for (int r = int(long(p) * s.rows / kParts); r < int(long(p + 1) * s.rows / kParts); ++r) {
      float* z = s.z + std::ptrdiff_t(r) * s.ld;
      float* res = s.residual ? s.residual + std::ptrdiff_t(r) * s.ld_residual : nullptr;
      for (int c = 0; c < s.cols; ++c) {
        if (res) {
          res[c] -= z[c];
          q.largest = std::max(q.largest, std::fabs(double(res[c])));
        } else {
          q.largest = std::max(q.largest, std::fabs(double(z[c])));
        }
        if (!valid(s, r, c)) {
          if (mark) z[c] = std::numeric_limits<float>::quiet_NaN();
          continue;
        }
        if (std::isfinite(z[c])) {
          q.sum += z[c];
          ++q.points;
        }
      }
    }
    parts[p] = q;
  }
}

void moments(const Strip& s, double mean, Partial* parts) {
  for (int p = 0; p < kParts; ++p) {
    Partial q;
    for (int r = int(long(p) * s.rows / kParts); r < int(long(p + 1) * s.rows / kParts); ++r) {
      const float* z = s.z + std::ptrdiff_t(r) * s.ld;
      for (int c = 0; c < s.cols; ++c) {
        if (!valid(s, r, c) || !std::isfinite(z[c])) continue;
        const double d = double(z[c]) - mean, d2 = d * d;
        ++q.points;
        q.s1 += std::fabs(d);
        q.s2 += d2;
        q.s3 += d2 * d;
        q.s4 += d2 * d2;
        q.hi = std::max(q.hi, d);
        q.lo = std::min(q.lo, d);
      }
    }
    parts[p] = q;
  }
}

}  // namespace heights::cpu
