// Deterministic random numbers for weight initialisation and batch order. The standard
// library's distributions are not specified bit for bit (libstdc++ and libc++ differ), so
// the Gaussian (Box-Muller), the uniform and the shuffle (Fisher-Yates) are written here on
// top of std::mt19937_64, whose output sequence the standard does fix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace fnn {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : gen_(seed) {}

  std::uint64_t next() { return gen_(); }

  // Uniform on [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }

  // Standard normal, Box-Muller; the second value of each pair is kept for the next call.
  double normal();

  // Uniform integer in [0, n), n > 0, without modulo bias (rejection).
  std::size_t below(std::size_t n);

 private:
  std::mt19937_64 gen_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// Fisher-Yates shuffle of v in place.
void shuffle(std::vector<std::size_t>& v, Rng& rng);

}  // namespace fnn
