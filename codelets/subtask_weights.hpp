// Sub-task weights and dispatch of DTPS (seed 001, 001_db3574ac63890b2d.txt, sections 1.1-1.2):
// what a sub-task costs in compute (IA) and communication (DA), its ordering weight, which
// class of worker it suits, and a one-cut split of a job's sub-tasks between the CPU class and
// the GPU class for a CPU-class share alpha (the share comes from the DTPS ratio controller,
// scheduler/dtps.hpp; nothing here depends on it). Pure logic, no StarPU.
//
// Seed 001's equations (1)-(8) are images missing from the text we have. Where this file needs
// one it states the definition it chose, marked "chosen", next to the code (DESIGN section 6):
//   eq. (3)  IA = sum_i m_i * n_i                      compute size in standard operations
//   eq. (4)  DA = DA_in + DA_out                       communication with neighbouring sub-tasks
//   eq. (5)  w  = IA / DA                              ordering weight (chosen), larger = more
//                                                      compute per byte moved
//   eq. (6)  DA > q -> CPU;  IA > p and DA < q -> GPU;  else either   p = P/(2N), q = Q/(2N)
//
// What a scheduling policy can read of these weights (the scheduler includes nothing from
// codelets/, DESIGN §2, so they reach it through StarPU's own task fields):
//   IA  = task->flops, which our codelets set and the plugin already takes as a task's work;
//   DA  = the bytes of the task's buffers, each handle's size once per direction (R in, W out,
//         RW both): what eq. (4) counts for our GEMM blocks (codelets/gemm.hpp), and what any
//         StarPU program's tasks expose without help from it;
//   w   = IA / DA (eq. (5)).
// task->priority is not used for w: heteroprio reads priorities as bucket indices (0..99), and
// dmdas would reorder its queues by it. scheduler/dtps_dispatch.hpp applies eqs. (5)-(6) and
// §1.3 case (1) to a batch so described; partition() below is the same rule on SubTaskWeight
// (tests/test_dtps_dispatch.cpp checks that they agree).
#pragma once

#include <cstddef>
#include <vector>

namespace weights {

// One kind of operation inside a sub-task: `count` operations (m_i), each worth
// `standard_ops` standard operations (n_i).
struct OperationCount {
  double count = 0.0;
  double standard_ops = 1.0;
};

// Seed 001 §1.1 eq. (3): IA = sum_i m_i * n_i.
double compute_size(const std::vector<OperationCount>& ops);

// Seed 001 §1.1 eq. (4): DA = DA_in + DA_out.
double communication(double da_in, double da_out);

// A sub-task's compute size IA and communication DA (seed 001 §1.1 eq. (2)).
struct SubTaskWeight {
  double ia = 0.0;
  double da = 0.0;
};

// Seed 001 §1.1 eq. (5), chosen: w = IA / DA; DA = 0 gives +inf (pure compute) unless IA = 0
// too, which gives 0. Larger = more compute-heavy. Negative or NaN inputs count as 0.
double ordering_weight(const SubTaskWeight& w);

enum class Class { Cpu, Gpu, Either };
const char* to_string(Class c);

// Thresholds of seed 001 §1.2 eq. (6): p = P/(2N), q = Q/(2N), P and Q the totals of IA and DA
// over the job's N sub-tasks. Both 0 for an empty job.
struct DispatchThresholds {
  double p = 0.0;
  double q = 0.0;
};
DispatchThresholds dispatch_thresholds(const std::vector<SubTaskWeight>& subtasks);

// Seed 001 §1.2 eq. (6): DA > q -> Cpu (communication first, also when IA > p);
// IA > p and DA < q -> Gpu; otherwise Either.
Class dispatch(const SubTaskWeight& w, double p, double q);

// Which sub-tasks go to which class for a CPU-class share alpha (seed 001 §1.3 case (1)).
struct Partition {
  std::vector<std::size_t> order;  // sub-task indices, GPU end first
  std::size_t gpu_count = 0;       // order[0, gpu_count) -> GPU class, the rest -> CPU class
  std::vector<Class> assignment;   // per sub-task (input order): Cpu or Gpu
  double gpu_ia = 0.0;             // IA given to each class
  double cpu_ia = 0.0;
};

// Sorts the sub-tasks (eq. (6) class Gpu, then Either, then Cpu; within a class by eq. (5)
// weight, larger first; ties by index) and cuts the list once so that the GPU class gets the
// front, about beta = 1 - alpha of the total IA, and the CPU class the rest. alpha <= 0 gives
// all to the GPU class, alpha >= 1 all to the CPU class. See subtask_weights.cpp for why the
// GPU takes the front where seed 001 §1.3 gives the front to the CPU.
Partition partition(const std::vector<SubTaskWeight>& subtasks, double alpha);

}  // namespace weights
