// Sub-task weights and dispatch (seed 001 §1.1-1.2; codelets/subtask_weights.hpp). Equations
// (1)-(8) of seed 001 are images missing from our copy of the paper; the definitions marked
// "chosen" below are ours, built from the surrounding text, and the reasons are given beside
// each.
#include "codelets/subtask_weights.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace weights {

namespace {

double non_negative(double v) { return v > 0.0 ? v : 0.0; }  // NaN -> 0

}  // namespace

// Seed 001 §1.1 eq. (3): IA = sum_i m_i * n_i, the operations of a sub-task converted to
// standard operations (m_i operations of kind i, each worth n_i standard ones).
double compute_size(const std::vector<OperationCount>& ops) {
  double ia = 0.0;
  for (const OperationCount& op : ops) ia += non_negative(op.count) * non_negative(op.standard_ops);
  return ia;
}

// Seed 001 §1.1 eq. (4): DA = DA_in + DA_out, data received from and sent to the neighbouring
// sub-tasks.
double communication(double da_in, double da_out) {
  return non_negative(da_in) + non_negative(da_out);
}

// Seed 001 §1.1 eq. (5), chosen: w = IA / DA. The paper sorts by this weight and, in §1.2,
// wants much compute and little communication on the GPU, so the weight must grow with IA and
// fall with DA; the ratio (operations per unit of data moved, i.e. arithmetic intensity) does
// both and is independent of the sub-task's size, so halving every tile keeps the order.
double ordering_weight(const SubTaskWeight& w) {
  const double ia = non_negative(w.ia);
  const double da = non_negative(w.da);
  if (da == 0.0) return ia > 0.0 ? std::numeric_limits<double>::infinity() : 0.0;
  return ia / da;
}

const char* to_string(Class c) {
  switch (c) {
    case Class::Cpu: return "cpu";
    case Class::Gpu: return "gpu";
    case Class::Either: return "either";
  }
  return "?";
}

// Seed 001 §1.2: p = P/(2N), q = Q/(2N), with P, Q the job's total compute and communication
// over its N sub-tasks: half the mean sub-task.
DispatchThresholds dispatch_thresholds(const std::vector<SubTaskWeight>& subtasks) {
  if (subtasks.empty()) return {};
  double total_ia = 0.0;
  double total_da = 0.0;
  for (const SubTaskWeight& w : subtasks) {
    total_ia += non_negative(w.ia);
    total_da += non_negative(w.da);
  }
  const double two_n = 2.0 * static_cast<double>(subtasks.size());
  return {total_ia / two_n, total_da / two_n};
}

// Seed 001 §1.2 eq. (6). The text: much compute and little communication -> GPU; little
// compute and much communication -> CPU (the text says "GPU" here, a typo: the next sentence
// sends the conflicting case, much of both, to the CPU because "communication comes first").
// So DA > q decides CPU whatever IA is; IA > p with DA < q decides GPU; the rest (little of
// both, or DA exactly q) may go to either class.
Class dispatch(const SubTaskWeight& w, double p, double q) {
  const double ia = non_negative(w.ia);
  const double da = non_negative(w.da);
  if (da > q) return Class::Cpu;
  if (ia > p && da < q) return Class::Gpu;
  return Class::Either;
}

// Seed 001 §1.3 case (1): "sort the sub-tasks by weight, larger first; the front part goes to
// the CPU, the back part to the GPU, in the ratio alpha : beta". Taken literally this sends the
// most compute-heavy sub-tasks (largest eq. (5) weight) to the CPU, against §1.2 and eq. (6),
// which send them to the GPU. We keep §1.2: the list is sorted the paper's way (larger weight
// first) and the GPU class takes the front, the CPU class the back. What the ratio controls is
// unchanged (how much work each class gets); only which sub-tasks fill it follows §1.2.
//
// The sort key puts eq. (6)'s verdict first (Gpu, Either, Cpu) and the eq. (5) weight second,
// so a single cut honours eq. (6) as far as the ratio allows: GPU-bound sub-tasks are the last
// the GPU gives up, CPU-bound ones (communication-heavy) the last the CPU gives up.
//
// The cut: walking the order, a sub-task goes to the GPU class when the middle of its IA falls
// within the GPU's beta * P, so each class's IA is within half a sub-task of its share.
// When every IA is 0 the cut is by count instead: round(beta * N) sub-tasks to the GPU.
Partition partition(const std::vector<SubTaskWeight>& subtasks, double alpha) {
  Partition out;
  const std::size_t n = subtasks.size();
  out.order.resize(n);
  std::iota(out.order.begin(), out.order.end(), std::size_t{0});
  if (n == 0) return out;

  const DispatchThresholds t = dispatch_thresholds(subtasks);
  std::vector<int> rank(n);
  std::vector<double> weight(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Class c = dispatch(subtasks[i], t.p, t.q);
    rank[i] = c == Class::Gpu ? 0 : c == Class::Either ? 1 : 2;
    weight[i] = ordering_weight(subtasks[i]);
  }
  std::sort(out.order.begin(), out.order.end(), [&](std::size_t a, std::size_t b) {
    if (rank[a] != rank[b]) return rank[a] < rank[b];
    if (weight[a] != weight[b]) return weight[a] > weight[b];
    return a < b;
  });

  double total = 0.0;
  for (const SubTaskWeight& w : subtasks) total += non_negative(w.ia);
  // NaN alpha counts as 0.5: no information, even split.
  const double a = std::isnan(alpha) ? 0.5 : std::clamp(alpha, 0.0, 1.0);
  const double beta = 1.0 - a;

  std::size_t cut = 0;
  if (a <= 0.0) {
    cut = n;
  } else if (a >= 1.0) {
    cut = 0;
  } else if (total > 0.0) {
    const double gpu_target = beta * total;
    double before = 0.0;
    while (cut < n) {
      const double ia = non_negative(subtasks[out.order[cut]].ia);
      if (before + 0.5 * ia > gpu_target) break;
      before += ia;
      ++cut;
    }
  } else {
    cut = static_cast<std::size_t>(std::llround(beta * static_cast<double>(n)));
  }

  out.gpu_count = cut;
  out.assignment.assign(n, Class::Cpu);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = out.order[k];
    const double ia = non_negative(subtasks[i].ia);
    if (k < cut) {
      out.assignment[i] = Class::Gpu;
      out.gpu_ia += ia;
    } else {
      out.cpu_ia += ia;
    }
  }
  return out;
}

}  // namespace weights
