#include "codelets/cuda/check.hpp"
#include "codelets/cuda/heights_cuda.hpp"

namespace heights::cuda {

namespace {

constexpr int kThreads = 256;

// Adds `q` over the block, in a fixed tree (warp shuffles, then one warp over the warps' sums);
// thread 0 returns the block's total.
__device__ Partial block_total(Partial q) {
  for (int off = 16; off > 0; off >>= 1) {
    q.points += __shfl_down_sync(0xffffffffu, q.points, off);
    q.sum += __shfl_down_sync(0xffffffffu, q.sum, off);
    q.largest = fmax(q.largest, __shfl_down_sync(0xffffffffu, q.largest, off));
    q.s1 += __shfl_down_sync(0xffffffffu, q.s1, off);
    q.s2 += __shfl_down_sync(0xffffffffu, q.s2, off);
    q.s3 += __shfl_down_sync(0xffffffffu, q.s3, off);
    q.s4 += __shfl_down_sync(0xffffffffu, q.s4, off);
    q.hi = fmax(q.hi, __shfl_down_sync(0xffffffffu, q.hi, off));
    q.lo = fmin(q.lo, __shfl_down_sync(0xffffffffu, q.lo, off));
  }
  // Raw storage: a __shared__ array may not have a constructor (Partial's initialisers).
  __shared__ alignas(Partial) unsigned char raw[sizeof(Partial) * (kThreads / 32)];
  Partial* warps = reinterpret_cast<Partial*>(raw);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warps[warp] = q;
  __syncthreads();
  Partial t;
  if (warp == 0) {
    if (lane < kThreads / 32) t = warps[lane];
    for (int off = kThreads / 64; off > 0; off >>= 1) {
      t.points += __shfl_down_sync(0xffffffffu, t.points, off);
      t.sum += __shfl_down_sync(0xffffffffu, t.sum, off);
      t.largest = fmax(t.largest, __shfl_down_sync(0xffffffffu, t.largest, off));
      t.s1 += __shfl_down_sync(0xffffffffu, t.s1, off);
      t.s2 += __shfl_down_sync(0xffffffffu, t.s2, off);
      t.s3 += __shfl_down_sync(0xffffffffu, t.s3, off);
      t.s4 += __shfl_down_sync(0xffffffffu, t.s4, off);
      t.hi = fmax(t.hi, __shfl_down_sync(0xffffffffu, t.hi, off));
      t.lo = fmin(t.lo, __shfl_down_sync(0xffffffffu, t.lo, off));
    }
  }
  return t;
}

__device__ bool valid(const Strip& s, int r, int c) {
  return !(s.mask && s.mask[ptrdiff_t(r) * s.ld_mask + c]);
}

// Block p sums part p's rows; its threads stride over the columns (coalesced).
__global__ void first_pass_kernel(Strip s, bool mark, Partial* parts) {
  Partial q;
  const int p = blockIdx.x;
  for (int r = int(long(p) * s.rows / kParts); r < int(long(p + 1) * s.rows / kParts); ++r) {
    float* z = s.z + ptrdiff_t(r) * s.ld;
    float* res = s.residual ? s.residual + ptrdiff_t(r) * s.ld_residual : nullptr;
    for (int c = threadIdx.x; c < s.cols; c += kThreads) {
      float v = z[c];
      if (res) {
        const float left = res[c] - v;
        res[c] = left;
        q.largest = fmax(q.largest, fabs(double(left)));
      } else {
        q.largest = fmax(q.largest, fabs(double(v)));
      }
      if (!valid(s, r, c)) {
        if (mark) z[c] = __int_as_float(0x7fc00000);  // quiet NaN
        continue;
      }
      if (isfinite(v)) {
        q.sum += v;
        ++q.points;
      }
    }
  }
  const Partial t = block_total(q);
  if (threadIdx.x == 0) parts[p] = t;
}

__global__ void moments_kernel(Strip s, double mean, Partial* parts) {
  Partial q;
  const int p = blockIdx.x;
  for (int r = int(long(p) * s.rows / kParts); r < int(long(p + 1) * s.rows / kParts); ++r) {
    const float* z = s.z + ptrdiff_t(r) * s.ld;
    for (int c = threadIdx.x; c < s.cols; c += kThreads) {
      const float v = z[c];
      if (!valid(s, r, c) || !isfinite(v)) continue;
      const double d = double(v) - mean, d2 = d * d;
      ++q.points;
      q.s1 += fabs(d);
      q.s2 += d2;
      q.s3 += d2 * d;
      q.s4 += d2 * d2;
      q.hi = fmax(q.hi, d);
      q.lo = fmin(q.lo, d);
    }
  }
  const Partial t = block_total(q);
  if (threadIdx.x == 0) parts[p] = t;
}

}  // namespace

void first_pass(const Strip& s, bool mark, Partial* parts, cudaStream_t stream) {
  first_pass_kernel<<<kParts, kThreads, 0, stream>>>(s, mark, parts);
  FNNDTPS_CUDA_CHECK_LAUNCH();
}

void moments(const Strip& s, double mean, Partial* parts, cudaStream_t stream) {
  moments_kernel<<<kParts, kThreads, 0, stream>>>(s, mean, parts);
  FNNDTPS_CUDA_CHECK_LAUNCH();
}

}  // namespace heights::cuda
