// Write a test once, run it on every backend (Thrust's testing/, Ginkgo's reference vs
// device tests): a typed-test case is a backend and a scalar type, named "Cpu_float" etc.
// The CUDA backend's cases skip with the reason where no device can be used.
#pragma once

#include <gtest/gtest.h>

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

}  // namespace test_support
