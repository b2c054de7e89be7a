// StarPU's SimGrid build (DESIGN §8) runs no codelet: a task's duration comes from the
// calibrated model of the worker it runs on. A codelet must still declare a CUDA
// implementation for simulated GPUs to take it (simulated_only, never called).
//
// Simulated perturbations, for every policy alike (named as simulated wherever reported):
//   FNNDTPS_SIM_NOISE=R              each task lasts its modelled time x (1 + R |N(0,1)|)
//   FNNDTPS_SIM_SLOWDOWN=W:F[@MS]    worker W's tasks last F x longer from MS ms of simulated
//                                    time on (default 0)
//   FNNDTPS_SIM_SEED=S               the noise's seed (default 1): runs repeat exactly
// With either set, the codelets run simulate_task in the simulation (STARPU_CODELET_SIMGRID_EXECUTE),
// which sleeps StarPU's simulated sleep for the perturbed duration; CUDA tasks are then
// synchronous. A bad setting throws std::invalid_argument from simulation_perturbed (the apps
// check it before StarPU starts, and end with one line and status 2).
#pragma once

#include <starpu.h>

#include <cstdio>
#include <cstdlib>

namespace codelets {

inline void simulated_only(void* /*buffers*/[], void* /*cl_arg*/) {
  std::fprintf(stderr, "fnndtps: a simulated CUDA implementation was called; only StarPU's SimGrid build runs these codelets\n");
  std::abort();
}

// Whether a simulated perturbation is set (the environment is read once); throws
// std::invalid_argument for a bad setting.
bool simulation_perturbed();
// The codelet function under a perturbation: sleeps the task's perturbed modelled duration.
void simulate_task(void* buffers[], void* cl_arg);

// Under the SimGrid build with a perturbation set, makes `cl` run simulate_task.
inline void perturb_in_simulation([[maybe_unused]] starpu_codelet& cl) {
#ifdef STARPU_SIMGRID
  if (!simulation_perturbed()) return;
  cl.flags |= STARPU_CODELET_SIMGRID_EXECUTE;
  cl.cpu_funcs[0] = simulate_task;
  cl.cuda_funcs[0] = simulate_task;
  cl.cuda_flags[0] = 0;
#endif
}

}  // namespace codelets
