// DTPS in the policy (seed 001 §1.3, DESIGN §6): at a push, the class a task's weight bin
// gives it (the cut) and the place a unit's plan gives it; at a batch end, the delay
// coefficient from the classes' times, the next batch's cuts and its split by units. Under
// batch_mutex where said.
#pragma once

#include <starpu.h>

#include <cmath>

#include "scheduler/placement.hpp"
#include "scheduler/state.hpp"
#include "scheduler/task_info.hpp"
#include "scheduler/units.hpp"

namespace sched {

// The class the open batch's cut gives the task (1 GPU, 0 CPU, -1 either).
int dispatch_class(state::CodeletState& c, starpu_task* task, double work);
// At a batch end: the next batch's cut for the codelet.
void set_cut(const state::Policy& p, state::CodeletState& c);
// At a push: the place the open batch's plan gives the task's unit (`u`: its unit).
UnitTable::Place unit_split(state::Policy& p, state::CodeletState& c, starpu_task* task, unsigned ctx, double work,
                            const TaskKey& key, ArchCosts& costs, task_info::Unit& u);

// What dtps_feedback saw of a batch.
struct BatchEnd {
  state::CodeletState* dominant = nullptr;
  double makespan_us = NAN, cpu_share = NAN;  // the CPU class's share of the work it ran
  double t_cpu_us = NAN, t_gpu_us = NAN;      // the classes' times seed 001 was given
};

// seed 001's feedback at a batch end (under batch_mutex). `job_end`: when the program ended the
// batch, else NaN; `cold`: the first batch its opening codelet opened.
BatchEnd dtps_feedback(state::Policy& p, double job_end, bool cold);
// The next batch's split by units from this one's end (under batch_mutex).
void plan_units(state::Policy& p, const BatchEnd& b, state::Opened& opened, bool cold);

}  // namespace sched
