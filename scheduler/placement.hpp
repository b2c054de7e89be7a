// What a push compares (DESIGN §6): whether a worker can run the task, the task's expected time
// on each arch (the cost model's, task_costs.hpp, or StarPU's history), the class it runs on
// alone, what an allocation in main memory costs; and what pop weighs among ready tasks.
#pragma once

#include <starpu.h>

#include <array>
#include <cstdint>

#include "scheduler/state.hpp"

namespace sched {

// What the cost model reads of a task: its footprint (StarPU's: the codelet model's footprint
// function where it has one, else its data's; computed once per task; with its flops where the
// program sets them, which StarPU's footprints leave out) and its work: those flops, else what
// it touches at its level (its model's size_base), else its unit's bytes (task_info::work).
struct TaskKey {
  std::uint32_t footprint = 0;
  double work = 1;
};
TaskKey task_key(starpu_task* task);

// The task's expected time on worker w's arch, in us. `known`: the task's own time (a
// measured size or StarPU's model), not a line through other sizes or a peak rate.
double arch_us(state::Policy& p, state::CodeletState& c, starpu_task* task, unsigned ctx, int w, const TaskKey& k,
               bool* known = nullptr);

// A push's arch_us per arch, each asked once (StarPU's model and our costs' lock are not free).
struct ArchCosts {
  std::array<double, state::kMaxArchs> us;
  std::array<signed char, state::kMaxArchs> known;  // -1: not asked yet
  ArchCosts() { known.fill(-1); }
  double of(state::Policy& p, state::CodeletState& c, starpu_task* task, unsigned ctx, int w, const TaskKey& k, bool* kn = nullptr) {
    const std::size_t a = p.archs.of[std::size_t(w)];
    if (known[a] < 0) {
      bool is = false;
      us[a] = arch_us(p, c, task, ctx, w, k, &is);
      known[a] = is ? 1 : 0;
    }
    if (kn) *kn = known[a] == 1;
    return us[a];
  }
};

// The class the task runs on alone: 1 GPU, 0 CPU, -1 both.
int alone_class(state::Policy& p, state::CodeletState& c, starpu_task* task, unsigned ctx, const TaskKey& k,
                ArchCosts& costs);
// Whether a task the CPU class would run alone stays on the GPU class: its inputs are on a GPU
// only, and the GPU's time beats a core's plus the copy.
bool held_by_gpu(state::Policy& p, state::CodeletState& c, starpu_task* task, unsigned ctx, const TaskKey& k,
                 ArchCosts& costs);
// Worker w's own expected time: its arch's x rel[w].
double base_us(state::Policy& p, state::CodeletState& c, starpu_task* task, unsigned ctx, int w, const TaskKey& k);
// What placing the task on `node` costs in allocations, in us.
double alloc_us(starpu_task* task, unsigned node);
// What pop weighs among the ready tasks of its head's priority (0: take it).
double pop_cost(const state::Policy& p, const state::WorkerSlot& s, starpu_task* task);
// Whether worker w can run the task, its context aside.
bool can_run(const state::Policy& p, state::CodeletState& c, starpu_task* task, int w);

}  // namespace sched
