#include <cuda_runtime.h>

#include "tests/backend_cases.hpp"

namespace test_support {

bool cuda_device_present(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it so that no later check reports it
    *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err);
    return false;
  }
  if (count == 0) {
    *why = "no CUDA device";
    return false;
  }
  return true;
}

}  // namespace test_support
