// CUDA backend of codelets/heights.hpp: the same passes on device pointers (parts too), each
// enqueued on `stream` (StarPU's per-worker stream inside codelets); one block per part.
#pragma once

#include <cuda_runtime.h>

#include "codelets/heights.hpp"

namespace heights::cuda {

void first_pass(const Strip& s, bool mark, Partial* parts, cudaStream_t stream);
void moments(const Strip& s, double mean, Partial* parts, cudaStream_t stream);

}  // namespace heights::cuda
