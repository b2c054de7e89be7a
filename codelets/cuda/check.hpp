// One checking macro for the CUDA runtime API (Taskflow's TF_CHECK_CUDA, Ginkgo's
// GKO_ASSERT_NO_CUDA_ERRORS). These calls run inside StarPU callbacks, where no exception may
// cross into C: on error, report file, line, the call and the error's name, then abort.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace lwt::cuda::detail {

inline void check(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "%s:%d: CUDA error %s (%s) in %s\n", file, line, cudaGetErrorName(err),
               cudaGetErrorString(err), what);
  std::fflush(stderr);
  std::abort();
}

}  // namespace lwt::cuda::detail

// FNNDTPS_CUDA_CHECK(cudaMemcpyAsync(...)): checks a runtime call's return code.
#define FNNDTPS_CUDA_CHECK(call) ::lwt::cuda::detail::check((call), #call, __FILE__, __LINE__)
// After every kernel launch: catches launch-configuration errors (and earlier asynchronous
// errors, which the runtime reports at the next call).
#define FNNDTPS_CUDA_CHECK_LAUNCH() \
  ::lwt::cuda::detail::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
