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
// (base/host_threads.hpp): the filter sums after its transforms, with StarPU's workers paused.
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
struct Moments {
  double s1 = 0, s2 = 0, s3 = 0, s4 = 0, hi = -INFINITY, lo = INFINITY;
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
  HeightParams p;
  p.points = points;
  if (p.points == 0) throw std::invalid_argument("no valid height to compute parameters from");
  const double mean = sum / double(p.points);
  Moments m;
  for (const Moments& c : chunked<Moments>(n, [z, mean](std::size_t b, std::size_t e) {
         Moments c;
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

}  // namespace

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

BandResidual::BandResidual(float* input, std::size_t n) : r_(input), n_(n) {
  for (double m : chunked<double>(n, [input](std::size_t b, std::size_t e) {
         double m = 0;
         for (std::size_t i = b; i < e; ++i) m = std::max(m, std::fabs(double(input[i])));
         return m;
       }))
    scale_ = std::max(scale_, m);
  largest_ = scale_;
}

HeightParams BandResidual::take(float* band, const std::vector<bool>* invalid) {
  struct Partial {
    Sum sum;
    double largest = 0;
  };
  largest_ = 0;
  double sum = 0;
  std::size_t points = 0;
  for (const Partial& c : chunked<Partial>(n_, [this, band, invalid](std::size_t b, std::size_t e) {
         Partial c;
         for (std::size_t i = b; i < e; ++i) {
           r_[i] -= band[i];
           c.largest = std::max(c.largest, std::fabs(double(r_[i])));
           if (invalid && (*invalid)[i]) band[i] = std::numeric_limits<float>::quiet_NaN();
           if (std::isfinite(band[i])) {
             c.sum.sum += band[i];
             ++c.sum.points;
           }
         }
         return c;
       })) {
    largest_ = std::max(largest_, c.largest);
    sum += c.sum.sum;
    points += c.sum.points;
  }
  return about_mean(band, n_, sum, points);
}

double BandResidual::relative_error() const { return scale_ > 0 ? largest_ / scale_ : largest_; }

}  // namespace filter
