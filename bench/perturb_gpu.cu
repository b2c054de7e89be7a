// perturb's busy kernel (see perturb.cpp): every SM filled with resident blocks that spin on the
// GPU's global timer for a given time. The time is wall-clock (%globaltimer, ns), so one launch
// lasts about as long whether or not the driver time-slices it with another context; keeping
// launches short (a few ms) is what lets the measured program's kernels in between.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "codelets/cuda/check.hpp"

namespace perturb {

namespace {

constexpr int kThreads = 256;

struct Gpu {
  int dev = -1;
  int blocks = 0;
  unsigned long long* sink = nullptr;  // 8 bytes: the only allocation
  cudaStream_t stream = nullptr;
};
Gpu g_gpu;

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin(unsigned long long ns, unsigned long long* sink) {
  const unsigned long long t0 = global_ns();
  unsigned long long n = 0;
  while (global_ns() - t0 < ns) ++n;
  if (n == ~0ull) *sink = n;  // never taken; keeps the count observable
}

}  // namespace

std::string gpu_open(int dev) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess)
    throw std::invalid_argument("--gpu " + std::to_string(dev) + ": no CUDA device (" + cudaGetErrorName(err) + ")");
  if (dev >= count)
    throw std::invalid_argument("--gpu " + std::to_string(dev) + ": there are " + std::to_string(count) + " CUDA devices");
  FNNDTPS_CUDA_CHECK(cudaSetDevice(dev));
  // Wait for each launch by sleeping on the driver, not spinning a CPU core that the measured
  // program may need.
  FNNDTPS_CUDA_CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  cudaDeviceProp prop{};
  FNNDTPS_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  int per_sm = 0;
  FNNDTPS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, spin, kThreads, 0));
  g_gpu.dev = dev;
  g_gpu.blocks = per_sm * prop.multiProcessorCount;
  FNNDTPS_CUDA_CHECK(cudaMalloc(&g_gpu.sink, sizeof *g_gpu.sink));
  FNNDTPS_CUDA_CHECK(cudaStreamCreateWithFlags(&g_gpu.stream, cudaStreamNonBlocking));
  return std::string(prop.name) + ", " + std::to_string(prop.multiProcessorCount) + " SMs x " +
         std::to_string(per_sm) + " blocks of " + std::to_string(kThreads) + " threads";
}

void gpu_busy(double ms) {
  thread_local bool current = false;  // the runtime's current device is per thread
  if (!current) {
    FNNDTPS_CUDA_CHECK(cudaSetDevice(g_gpu.dev));
    current = true;
  }
  spin<<<g_gpu.blocks, kThreads, 0, g_gpu.stream>>>(static_cast<unsigned long long>(ms * 1e6), g_gpu.sink);
  FNNDTPS_CUDA_CHECK_LAUNCH();
  FNNDTPS_CUDA_CHECK(cudaStreamSynchronize(g_gpu.stream));
}

}  // namespace perturb
