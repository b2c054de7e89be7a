// Seed 001 §1.3 case (1) as written, over a whole batch: eq. (6)'s verdict per sub-task and one
// sorted cut. The scheduler never sees a whole batch at once and cuts by weight bins instead
// (scheduler/dtps_dispatch.hpp, weight_cut); this is the oracle its tests compare with.
//
// Two orders (Order): Eq6 sorts by eq. (6)'s verdict first, then by weight (seed 001 as
// written); Weight by the eq. (5) weight alone. They differ on sub-tasks of different sizes:
// eq. (6)'s thresholds are absolute (half the batch's mean IA and DA), so a large block, heavy
// in both, is a "conflict" that §1.2 sends to the CPU ("communication comes first"), where its
// weight would keep it on the GPU. Seed 001's PCIe-bound laptop favours keeping large data off
// the link; a node whose GPU is 40x its CPUs wants the small blocks on the CPUs (Weight).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <vector>

#include "scheduler/dtps_dispatch.hpp"

namespace sched::dtps_dispatch {

enum class Side { Cpu, Gpu, Either };

// Seed 001 §1.2: p = P / (2N), q = Q / (2N), P and Q the batch's total IA and DA over its N
// sub-tasks. Both 0 for an empty batch.
struct Thresholds {
  double p = 0, q = 0;
};
inline Thresholds thresholds(const std::vector<Item>& batch) {
  if (batch.empty()) return {};
  double p = 0, q = 0;
  for (const Item& t : batch) p += clean(t.work), q += clean(t.bytes);
  const double two_n = 2.0 * double(batch.size());
  return {p / two_n, q / two_n};
}

// Seed 001 eq. (6): DA > q -> Cpu (communication comes first, also when IA > p);
// IA > p and DA < q -> Gpu; otherwise Either.
inline Side eq6(const Item& t, const Thresholds& th) {
  const double ia = clean(t.work), da = clean(t.bytes);
  if (da > th.q) return Side::Cpu;
  if (ia > th.p && da < th.q) return Side::Gpu;
  return Side::Either;
}

// The cut in an order already decided: the number of leading items the GPU class takes so that
// it gets about beta = 1 - alpha of the work (an item goes to the GPU when the middle of its
// work falls within beta * total, so each class is within half an item of its share). alpha
// <= 0: all to the GPU; alpha >= 1: none; NaN counts as 0.5. When all work is 0, by count:
// round(beta * N).
inline std::size_t gpu_front(const std::vector<double>& work_in_order, double alpha) {
  const std::size_t n = work_in_order.size();
  const double a = std::isnan(alpha) ? 0.5 : std::clamp(alpha, 0.0, 1.0);
  if (a <= 0) return n;
  if (a >= 1) return 0;
  double total = 0;
  for (double w : work_in_order) total += clean(w);
  if (total <= 0) return std::size_t(std::llround((1 - a) * double(n)));
  const double target = (1 - a) * total;
  std::size_t cut = 0;
  for (double before = 0; cut < n; ++cut) {
    const double w = clean(work_in_order[cut]);
    if (before + 0.5 * w > target) break;
    before += w;
  }
  return cut;
}

struct Decision {
  std::vector<std::size_t> order;  // batch indices: eq. (6) Gpu, Either, Cpu; by weight, larger first
  std::size_t gpu_count = 0;       // order[0, gpu_count) -> GPU class, the rest -> CPU class
  std::vector<Side> side;          // per item (batch order): Cpu or Gpu
  double gpu_work = 0, cpu_work = 0;
};

enum class Order {
  Eq6,     // eq. (6)'s verdict (Gpu, Either, Cpu), then eq. (5) weight: seed 001 as written
  Weight,  // eq. (5) weight alone
};

// Seed 001 §1.3 case (1) (see the top of the file for which end goes where): sort by `order`,
// larger weight first, ties by index; one cut (gpu_front) for the CPU-class share alpha. With
// Eq6, GPU-bound items are the last the GPU gives up and CPU-bound ones the last the CPU gives up.
inline Decision decide(const std::vector<Item>& batch, double alpha, Order order = Order::Eq6) {
  Decision d;
  const std::size_t n = batch.size();
  d.order.resize(n);
  std::iota(d.order.begin(), d.order.end(), std::size_t{0});
  const Thresholds th = thresholds(batch);
  std::vector<int> rank(n);
  std::vector<double> w(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Side s = eq6(batch[i], th);
    rank[i] = order == Order::Weight ? 0 : s == Side::Gpu ? 0 : s == Side::Either ? 1 : 2;
    w[i] = weight(batch[i]);
  }
  std::sort(d.order.begin(), d.order.end(), [&](std::size_t x, std::size_t y) {
    if (rank[x] != rank[y]) return rank[x] < rank[y];
    if (w[x] != w[y]) return w[x] > w[y];
    return x < y;
  });
  std::vector<double> work(n);
  for (std::size_t k = 0; k < n; ++k) work[k] = batch[d.order[k]].work;
  d.gpu_count = gpu_front(work, alpha);
  d.side.assign(n, Side::Cpu);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = d.order[k];
    if (k < d.gpu_count) {
      d.side[i] = Side::Gpu;
      d.gpu_work += clean(batch[i].work);
    } else {
      d.cpu_work += clean(batch[i].work);
    }
  }
  return d;
}

}  // namespace sched::dtps_dispatch
