#include "fnn/random.hpp"

#include <cmath>
#include <limits>
#include <utility>

namespace fnn {

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  // u1 in (0, 1] so that log(u1) is finite.
  const double u1 = 1.0 - uniform();
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double t = 6.283185307179586476925 * u2;
  spare_ = r * std::sin(t);
  has_spare_ = true;
  return r * std::cos(t);
}

std::size_t Rng::below(std::size_t n) {
  const std::uint64_t range = static_cast<std::uint64_t>(n);
  // Largest multiple of range that fits: draws at or above it are rejected.
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t limit = max - (max % range + 1) % range;
  std::uint64_t r = gen_();
  while (r > limit) r = gen_();
  return static_cast<std::size_t>(r % range);
}

void shuffle(std::vector<std::size_t>& v, Rng& rng) {
  for (std::size_t i = v.size(); i > 1; --i) {
    const std::size_t j = rng.below(i);
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace fnn
