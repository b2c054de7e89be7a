#include "apps/filter/surface_params.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "base/host_threads.hpp"

namespace filter {

namespace {

// Sums over a surface in fixed chunks, combined in chunk order, so that a result does not
// depend on how many threads computed it. The chunks share the cores the process started with
// (base/host_threads.hpp): the filter copies its input before StarPU starts.
constexpr std::size_t kChunk = std::size_t(1) << 20;

template <typename Partial, typename F>
std::vector<Partial> chunked(std::size_t n, F&& f) {
  const std::size_t chunks = std::max<std::size_t>(1, (n + kChunk - 1) / kChunk);
  std::vector<Partial> part(chunks);
  const unsigned threads = unsigned(std::min<std::size_t>(chunks, base::host_threads()));
  base::run_on_host_threads(threads, [&](unsigned t) {
    for (std::size_t c = t; c < chunks; c += threads) part[c] = f(c * kChunk, std::min(n, (c + 1) * kChunk));
  });
  return part;
}

struct Sum {
  double sum = 0;
  std::size_t points = 0;
};

}  // namespace

std::size_t copy_marking_invalid(const float* in, float* out, std::size_t n) {
  std::size_t invalid = 0;
  for (std::size_t c : chunked<std::size_t>(n, [in, out](std::size_t b, std::size_t e) {
         std::size_t bad = 0;
         for (std::size_t i = b; i < e; ++i) {
           const bool ok = std::isfinite(in[i]);
           out[i] = ok ? in[i] : std::numeric_limits<float>::quiet_NaN();
           bad += !ok;
         }
         return bad;
       }))
    invalid += c;
  return invalid;
}

namespace {

// The second pass of height_params: the moments about the mean of the finite samples whose
// sum and count the first gave.
HeightParams about_mean(const float* z, std::size_t n, double sum, std::size_t points) {
  if (points == 0) throw std::invalid_argument("no valid height to compute parameters from");
  const double mean = sum / double(points);
  CentralSums m;
  m.points = points;
  for (const CentralSums& c : chunked<CentralSums>(n, [z, mean](std::size_t b, std::size_t e) {
         CentralSums c;
         for (std::size_t i = b; i < e; ++i) {
           if (!std::isfinite(z[i])) continue;
           const double d = double(z[i]) - mean, d2 = d * d;
           c.s1 += std::fabs(d);
           c.s2 += d2;
           c.s3 += d2 * d;
           c.s4 += d2 * d2;
           c.hi = std::max(c.hi, d);
           c.lo = std::min(c.lo, d);
         }
         return c;
       })) {
    m.s1 += c.s1;
    m.s2 += c.s2;
    m.s3 += c.s3;
    m.s4 += c.s4;
    m.hi = std::max(m.hi, c.hi);
    m.lo = std::min(m.lo, c.lo);
  }
  return from_central_sums(m);
}

}  // namespace

HeightParams from_central_sums(const CentralSums& m) {
  HeightParams p;
  p.points = m.points;
  if (p.points == 0) throw std::invalid_argument("no valid height to compute parameters from");
  const double count = double(p.points);
  p.sa = m.s1 / count;
  p.sq = std::sqrt(m.s2 / count);
  p.sp = m.hi;
  p.sv = std::fabs(m.lo);
  p.sz = p.sp + p.sv;
  if (p.sq > 0) {
    p.ssk = m.s3 / count / (p.sq * p.sq * p.sq);
    p.sku = m.s4 / count / (p.sq * p.sq * p.sq * p.sq);
  }
  return p;
}

HeightParams height_params(const float* z, std::size_t n) {
  double sum = 0;
  std::size_t points = 0;
  for (const Sum& s : chunked<Sum>(n, [z](std::size_t b, std::size_t e) {
         Sum s;
         for (std::size_t i = b; i < e; ++i)
           if (std::isfinite(z[i])) {
             s.sum += z[i];
             ++s.points;
           }
         return s;
       })) {
    sum += s.sum;
    points += s.points;
  }
  return about_mean(z, n, sum, points);
}

}  // namespace filter
