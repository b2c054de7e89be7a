// ISO 25178-2:2021 areal height parameters (§4.1) of a sampled surface, on the heights minus
// their mean (the mean plane of a levelled surface; the bands of lwt2d filter are levelled by
// construction, the input is levelled by removing its mean only).
//   Sa = mean |z|            Sq = sqrt(mean z^2)        Sp = max z      Sv = |min z|
//   Sz = Sp + Sv             Ssk = mean z^3 / Sq^3      Sku = mean z^4 / Sq^4
// Sums run in double over the finite samples only (invalid points are NaN, ISO 25178-72).
#pragma once

#include <cstddef>
#include <vector>

namespace filter {

struct HeightParams {
  double sa = 0, sq = 0, sp = 0, sv = 0, sz = 0, ssk = 0, sku = 0;
  std::size_t points = 0;  // finite samples used
};

// Throws std::invalid_argument when no sample is finite. Ssk and Sku are 0 for a flat surface.
// Sums run on the host's threads in fixed chunks: the result does not depend on their number.
HeightParams height_params(const float* z, std::size_t n);

// `in` into `out` on the host's threads, every non-finite height as NaN (an invalid point,
// ISO 25178-72); returns how many there were. Elementwise, so the same on any thread count.
std::size_t copy_marking_invalid(const float* in, float* out, std::size_t n);

// The bands of a filter partition the coefficients, so they sum to the input. The check, one
// band at a time so that no band is held for it: `input` becomes input - (the bands so far), in
// float32 (each subtraction rounds by half an ulp of what is left, about 6e-8 of the input's
// scale: far below a transform's own error). relative_error(): the largest |residual| over the
// largest |input| (the absolute error where the input is 0), as the last take() left it.
class BandResidual {
 public:
  BandResidual(float* input, std::size_t n);
  // Subtracts `band` from the residual, then sets the band's `invalid` points (null: none) to
  // NaN and returns its height_params: the subtraction's pass is also the parameters' first
  // (the sums), and it takes the residual's largest magnitude as it goes. The same parameters
  // as height_params of the band so marked.
  HeightParams take(float* band, const std::vector<bool>* invalid);
  double relative_error() const;

 private:
  float* r_;
  std::size_t n_;
  double scale_ = 0;
  double largest_;  // max |residual|: of the input until the first take()
};

}  // namespace filter
