// Write a test once, run it on every backend (Thrust's testing/, Ginkgo's reference vs
// device tests): a typed-test case is a backend and a scalar type, named "Cpu_float" etc.
// The CUDA backend's cases skip with the reason where no device can be used.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>

namespace test_support {

template <typename B, typename T>
struct Case {
  using Backend = B;
  using Scalar = T;
};

struct CaseNames {
  template <typename C>
  static std::string GetName(int) {
    return std::string(C::Backend::kName) + (std::is_same_v<typename C::Scalar, float> ? "_float" : "_double");
  }
};

// True where a CUDA device can be used; otherwise false and the reason in *why.
// Defined in tests/cuda_device_present.cpp, built only with CUDA.
bool cuda_device_present(std::string* why);

// Test data: N(0,1) samples, about one in eight exactly zero (zeros take the kernels' exact
// paths), the same sequence for the same seed.
class RandomValues {
 public:
  explicit RandomValues(unsigned seed) : gen_(seed) {}
  template <typename T>
  T next() {
    return zero_(gen_) == 0 ? T(0) : T(normal_(gen_));
  }

 private:
  std::mt19937 gen_;
  std::normal_distribution<double> normal_;
  std::uniform_int_distribution<int> zero_{0, 7};
};

// A NaN with a payload that no arithmetic produces: padding must keep these exact bits, and
// an output poisoned with it shows where a kernel never wrote.
template <typename T>
T poison() {
  T v;
  if constexpr (std::is_same_v<T, float>) {
    const std::uint32_t bits = 0x7fc05a5au;
    std::memcpy(&v, &bits, sizeof v);
  } else {
    const std::uint64_t bits = 0x7ff800000005a5a5ull;
    std::memcpy(&v, &bits, sizeof v);
  }
  return v;
}
template <typename T>
bool is_poison(T v) {
  const T p = poison<T>();
  return std::memcmp(&v, &p, sizeof v) == 0;
}

}  // namespace test_support
