// StarPU's SimGrid build (DESIGN §8) runs no codelet: a task's duration comes from the
// calibrated model of the worker it runs on. A codelet must still declare a CUDA
// implementation for simulated GPUs to take it; this one stands for it and is never called.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace codelets {

inline void simulated_only(void* /*buffers*/[], void* /*cl_arg*/) {
  std::fprintf(stderr, "fnndtps: a simulated CUDA implementation was called; only StarPU's SimGrid build runs these codelets\n");
  std::abort();
}

}  // namespace codelets
