// The fused CUDA passes alone, on device-resident data, against the device's copy bandwidth.
//   bench_lwt_cuda [--size S] [--levels L] [--units U] [--reps R]
// Bytes counted per pass: its region read once and written once (the fewest it must move).
// The copy bandwidth is a device-to-device cudaMemcpy of the same image, read + write.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "codelets/cuda/lifting_cuda.hpp"
#include "codelets/plan.hpp"

namespace {

#define BENCH_CUDA(call)                                                                     \
  do {                                                                                       \
    const cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "bench_lwt_cuda: %s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorName(e_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
std::vector<double> time_ms(int reps, cudaStream_t s, F&& f) {
  cudaEvent_t a, b;
  BENCH_CUDA(cudaEventCreate(&a));
  BENCH_CUDA(cudaEventCreate(&b));
  f();  // warm-up
  BENCH_CUDA(cudaStreamSynchronize(s));
  std::vector<double> out;
  for (int r = 0; r < reps; ++r) {
    BENCH_CUDA(cudaEventRecord(a, s));
    f();
    BENCH_CUDA(cudaEventRecord(b, s));
    BENCH_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    BENCH_CUDA(cudaEventElapsedTime(&ms, a, b));
    out.push_back(ms);
  }
  BENCH_CUDA(cudaEventDestroy(a));
  BENCH_CUDA(cudaEventDestroy(b));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int size = 16384, levels = 4, units = 1, reps = 10;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (i + 1 >= argc) { std::fprintf(stderr, "bench_lwt_cuda: %s needs a value\n", f.c_str()); return 2; }
    char* end = nullptr;
    const long v = std::strtol(argv[++i], &end, 10);
    if (*end != '\0' || v < 1 || v > 1 << 20) {
      std::fprintf(stderr, "bench_lwt_cuda: %s needs a positive integer, got '%s'\n", f.c_str(), argv[i]);
      return 2;
    }
    if (f == "--size") size = int(v);
    else if (f == "--levels") levels = int(v);
    else if (f == "--units") units = int(v);
    else if (f == "--reps") reps = int(v);
    else { std::fprintf(stderr, "bench_lwt_cuda: unknown option %s\n", f.c_str()); return 2; }
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_lwt_cuda: no CUDA device\n");
    return 2;
  }
  std::unique_ptr<lwt::Plan> made;
  try {
    made = std::make_unique<lwt::Plan>(size, size, levels, units);
  } catch (const lwt::PlanError& e) {
    std::fprintf(stderr, "bench_lwt_cuda: %s\n", e.what());
    return 2;
  }
  const lwt::Plan& plan = *made;
  const std::size_t n = std::size_t(size) * size, bytes = n * sizeof(float);
  float *x, *b, *c;
  BENCH_CUDA(cudaMalloc(&x, bytes));
  BENCH_CUDA(cudaMalloc(&b, bytes));
  BENCH_CUDA(cudaMalloc(&c, bytes));
  // Random data, not zeros: a host pattern from a cheap generator.
  {
    std::vector<float> h(n);
    unsigned long long s = 88172645463325252ull;
    for (auto& v : h) {
      s ^= s << 13; s ^= s >> 7; s ^= s << 17;
      v = float(double(s >> 11) * (1.0 / 9007199254740992.0) - 0.5);
    }
    BENCH_CUDA(cudaMemcpy(x, h.data(), bytes, cudaMemcpyHostToDevice));
  }
  cudaStream_t st;
  BENCH_CUDA(cudaStreamCreate(&st));
  std::vector<float*> halo_top(units, nullptr), halo_bot(units, nullptr);
  for (int k = 0; k < units; ++k) {
    BENCH_CUDA(cudaMalloc(&halo_top[k], sizeof(float) * lwt::kHalo * size));
    BENCH_CUDA(cudaMalloc(&halo_bot[k], sizeof(float) * lwt::kHalo * size));
  }

  const double copy_ms = median(time_ms(reps, st, [&] {
    BENCH_CUDA(cudaMemcpyAsync(c, x, bytes, cudaMemcpyDeviceToDevice, st));
  }));
  const double copy_gbs = 2.0 * double(bytes) / copy_ms / 1e6;

  // One level's passes over every unit, as the StarPU tasks run them.
  double total_bytes_h = 0, total_bytes_v = 0;
  for (int l = 0; l < levels; ++l)
    for (int k = 0; k < units; ++k) {
      const double region = double(plan.unit_rows(l, k)) * plan.cols(l) * sizeof(float);
      total_bytes_h += 2 * region;
      total_bytes_v += 2 * region;
    }
  auto horizontal = [&](int l) {
    for (int k = 0; k < units; ++k) {
      const std::size_t off = std::size_t(plan.unit_row0(0, k)) * size;
      const int h = plan.unit_rows(l, k), w = plan.cols(l);
      lwt::cuda::rows_forward<float>(l == 0 ? x + off : c + off, size, b + off, size, h, w, st);
      lwt::cuda::write_halos<float>(b + off, size, h, w, lwt::Direction::Forward,
                                    plan.has_above(k) ? halo_top[k] : nullptr,
                                    plan.has_below(k) ? halo_bot[k] : nullptr, w, st);
    }
  };
  auto vertical = [&](int l) {
    for (int k = 0; k < units; ++k) {
      const std::size_t off = std::size_t(plan.unit_row0(0, k)) * size;
      const int h = plan.unit_rows(l, k), w = plan.cols(l);
      lwt::cuda::cols_forward<float>(b + off, size, h, w, plan.has_above(k) ? halo_bot[k - 1] : nullptr,
                                     plan.has_below(k) ? halo_top[k + 1] : nullptr, w, c + off, size, st);
    }
  };
  std::vector<double> h_ms(levels), v_ms(levels);
  for (int l = 0; l < levels; ++l) {
    // Each level's input must be the previous level's output: run the levels before it once.
    for (int p = 0; p < l; ++p) { horizontal(p); vertical(p); }
    h_ms[l] = median(time_ms(reps, st, [&] { horizontal(l); }));
    v_ms[l] = median(time_ms(reps, st, [&] { vertical(l); }));
  }
  const double all_ms = median(time_ms(reps, st, [&] {
    for (int l = 0; l < levels; ++l) { horizontal(l); vertical(l); }
  }));

  cudaDeviceProp prop;
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s; image %d x %d float32, %d levels, %d units, median of %d\n", prop.name, size,
              size, levels, units, reps);
  std::printf("device copy (D2D, read+write): %.2f ms, %.0f GB/s\n", copy_ms, copy_gbs);
  std::printf("%-6s %-10s %10s %10s %10s\n", "level", "pass", "ms", "GB/s", "% copy");
  for (int l = 0; l < levels; ++l) {
    double region = 0;
    for (int k = 0; k < units; ++k) region += double(plan.unit_rows(l, k)) * plan.cols(l) * sizeof(float);
    const double gh = 2 * region / h_ms[l] / 1e6, gv = 2 * region / v_ms[l] / 1e6;
    std::printf("%-6d %-10s %10.3f %10.0f %9.1f%%\n", l, "rows", h_ms[l], gh, 100 * gh / copy_gbs);
    std::printf("%-6d %-10s %10.3f %10.0f %9.1f%%\n", l, "columns", v_ms[l], gv, 100 * gv / copy_gbs);
  }
  const double g_all = (total_bytes_h + total_bytes_v) / all_ms / 1e6;
  std::printf("all    %-10s %10.3f %10.0f %9.1f%%\n", "forward", all_ms, g_all, 100 * g_all / copy_gbs);
  std::printf("RESULT lwt_cuda_forward size=%d levels=%d units=%d ms=%.3f gbs=%.0f copy_gbs=%.0f pct=%.1f\n",
              size, levels, units, all_ms, g_all, copy_gbs, 100 * g_all / copy_gbs);
  for (int k = 0; k < units; ++k) {
    cudaFree(halo_top[k]);
    cudaFree(halo_bot[k]);
  }
  cudaFree(x);
  cudaFree(b);
  cudaFree(c);
  cudaStreamDestroy(st);
  return 0;
}
