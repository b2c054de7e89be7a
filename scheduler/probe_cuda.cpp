// The CUDA-runtime half of the worker probe (probe.hpp): static device data and the
// cudaMemGetInfo fallback for UM. Compiled only when FNNDTPS_BUILD_CUDA (FNNDTPS_HAVE_CUDA);
// probe.cpp holds the stubs otherwise. Every runtime error is cleared and turned into "no
// data": with no driver or no device cudaGetDeviceCount fails and the probe sees no GPU.
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "scheduler/probe.hpp"

namespace sched {
namespace {

int attribute(cudaDeviceAttr attr, int device) noexcept {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return value;
}

// cuCtxGetCurrent through the runtime's driver entry points, so that the plugin gains no
// link-time dependency on libcuda; null when the runtime cannot give it.
using CuCtxGetCurrent = int (*)(void**);

CuCtxGetCurrent ctx_get_current() noexcept {
  static const CuCtxGetCurrent fn = []() noexcept -> CuCtxGetCurrent {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult status{};
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &p, 12000, cudaEnableDefault,
                                         &status) != cudaSuccess ||
        status != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return reinterpret_cast<CuCtxGetCurrent>(p);
  }();
  return fn;
}

}  // namespace

std::vector<GpuInfo> cuda_devices() noexcept {
  std::vector<GpuInfo> out;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {  // no driver, no device
    (void)cudaGetLastError();
    return out;
  }
  try {
    for (int d = 0; d < count; ++d) {
      GpuInfo g;
      g.device = d;
      g.cc_major = attribute(cudaDevAttrComputeCapabilityMajor, d);
      g.cc_minor = attribute(cudaDevAttrComputeCapabilityMinor, d);
      g.sms = attribute(cudaDevAttrMultiProcessorCount, d);
      g.max_threads_per_sm = attribute(cudaDevAttrMaxThreadsPerMultiProcessor, d);
      // kHz. CUDA 13 dropped cudaDeviceProp::clockRate but keeps this attribute.
      g.clock_khz = attribute(cudaDevAttrClockRate, d);
      cudaDeviceProp prop{};
      if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) {
        g.total_mem = prop.totalGlobalMem;
      } else {
        (void)cudaGetLastError();
      }
      std::array<char, 32> bus{};
      if (cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), d) == cudaSuccess) {
        g.pci_bus_id = bus.data();
      } else {
        (void)cudaGetLastError();
      }
      out.push_back(std::move(g));
    }
  } catch (...) {  // allocation failure: report what was read
  }
  return out;
}

std::optional<double> cuda_memory_occupancy_if_current(int device) noexcept {
  // Only where a context is already current: cudaMemGetInfo would otherwise create device
  // `device`'s primary context on this thread (slow, and memory the application did not ask for).
  const CuCtxGetCurrent get = ctx_get_current();
  void* ctx = nullptr;
  if (get == nullptr || get(&ctx) != 0 || ctx == nullptr) return std::nullopt;
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  if (current != device) return std::nullopt;
  std::size_t free_b = 0;
  std::size_t total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  if (total_b == 0) return std::nullopt;
  const double used = static_cast<double>(total_b - (free_b < total_b ? free_b : total_b));
  return used / static_cast<double>(total_b);
}

}  // namespace sched
