// The CUDA backend of tests/test_heights.cpp: a host strip copied to the device (padding
// included), heights::cuda's pass, everything copied back.
#include "codelets/cuda/check.hpp"
#include "codelets/cuda/heights_cuda.hpp"

namespace heights_test {

namespace {

template <typename T>
T* to_device(const T* host, std::size_t n) {
  if (!host) return nullptr;
  T* d = nullptr;
  FNNDTPS_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&d), n * sizeof(T)));
  FNNDTPS_CUDA_CHECK(cudaMemcpy(d, host, n * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
template <typename T>
void to_host(T* host, T* dev, std::size_t n) {
  if (!host) return;
  FNNDTPS_CUDA_CHECK(cudaMemcpy(host, dev, n * sizeof(T), cudaMemcpyDeviceToHost));
  FNNDTPS_CUDA_CHECK(cudaFree(dev));
}

void on_device(heights::Strip& s, bool first, bool mark, double mean, heights::Partial* parts) {
  heights::Strip d = s;
  const std::size_t rows = std::size_t(s.rows);
  d.z = to_device(s.z, rows * std::size_t(s.ld));
  d.residual = to_device(s.residual, rows * std::size_t(s.ld_residual));
  d.mask = to_device(s.mask, rows * std::size_t(s.ld_mask));
  heights::Partial* dp = to_device(parts, heights::kParts);
  if (first) heights::cuda::first_pass(d, mark, dp, nullptr);
  else heights::cuda::moments(d, mean, dp, nullptr);
  FNNDTPS_CUDA_CHECK(cudaDeviceSynchronize());
  to_host(s.z, d.z, rows * std::size_t(s.ld));
  to_host(s.residual, d.residual, rows * std::size_t(s.ld_residual));
  if (d.mask) FNNDTPS_CUDA_CHECK(cudaFree(const_cast<unsigned char*>(d.mask)));
  to_host(parts, dp, heights::kParts);
}

}  // namespace

void cuda_first_pass(heights::Strip& s, bool mark, heights::Partial* parts) { on_device(s, true, mark, 0, parts); }
void cuda_moments(heights::Strip& s, double mean, heights::Partial* parts) { on_device(s, false, false, mean, parts); }

}  // namespace heights_test
