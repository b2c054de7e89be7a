// Nanoseconds per FNN prediction (the scheduler's hot path) and per online SGD step, for
// hidden widths 8, 16 and 32, on one core. Median over repetitions; the checksum of all
// predictions is printed so the compiler cannot drop the work.
//
//   bench_fnn_predict [repetitions=31]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fnn/fnn.hpp"
#include "fnn/random.hpp"
#include "fnn/train.hpp"

namespace {

constexpr std::size_t kBatch = 4096;  // distinct inputs per timed pass

struct Stats {
  double median = 0.0, min = 0.0, max = 0.0;
};

template <class F>
Stats time_ns_per_call(std::size_t reps, F&& pass) {
  std::vector<double> ns;
  pass();  // warm-up
  for (std::size_t r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    const auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kBatch);
  }
  std::sort(ns.begin(), ns.end());
  return {ns[ns.size() / 2], ns.front(), ns.back()};
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t reps = 31;
  if (argc > 1) {
    const long v = std::strtol(argv[1], nullptr, 10);
    if (v < 1 || v > 100000) {
      std::fprintf(stderr, "bench_fnn_predict: repetitions must be in [1, 100000]\n");
      return 2;
    }
    reps = static_cast<std::size_t>(v);
  }

  fnn::Rng rng(7);
  std::vector<fnn::Sample> data(kBatch);
  for (fnn::Sample& s : data) {
    s.x = {rng.uniform(), rng.uniform(), rng.uniform(), rng.uniform(), rng.uniform()};
    s.cp = rng.uniform();
  }

  std::printf("FNN on one core, %zu inputs per pass, %zu passes (median, min, max)\n", kBatch,
              reps);
  std::printf("%6s %12s %8s %8s %14s %12s\n", "hidden", "ns/predict", "min", "max", "ns/sgd_step",
              "checksum");
  for (std::size_t hidden : {8, 16, 32}) {
    fnn::Model m = fnn::Model::random(hidden, 1);
    double checksum = 0.0;
    const Stats p = time_ns_per_call(reps, [&] {
      double sum = 0.0;
      for (const fnn::Sample& s : data) sum += m.predict(s.x);
      checksum += sum;
    });
    // Online fine-tuning at a tiny rate, so the model stays comparable between passes.
    const Stats t = time_ns_per_call(reps, [&] {
      double sum = 0.0;
      for (const fnn::Sample& s : data) sum += fnn::fine_tune(m, s, 1e-9);
      checksum += sum;
    });
    std::printf("%6zu %12.1f %8.1f %8.1f %14.1f %12.6g\n", hidden, p.median, p.min, p.max, t.median,
                checksum);
  }
  return 0;
}
