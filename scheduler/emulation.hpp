// Emulated heterogeneity for machines without GPUs (DESIGN §6, §8): a per-worker slowdown
// factor that the policies apply after each task of that worker (so it acts on any StarPU
// program; codelets know nothing of it), optionally switched on after a
// number of tasks or milliseconds to emulate a fluctuation. Reported as emulation wherever
// it appears. Configured by
//   FNNDTPS_SLOWDOWN=worker:factor[,worker:factor...]   e.g. 0:1,1:1,2:2,3:4
//   FNNDTPS_SLOWDOWN_AFTER_TASKS=N   (factors apply once N tasks have run; default 0)
//   FNNDTPS_SLOWDOWN_AFTER_MS=T      (or once T ms have passed since the first task)
//   FNNDTPS_EMULATED_GPUS=worker[,worker...]   CPU workers the DTPS policies count in the
//                                    GPU class, to run the code paths of several GPUs here
//   FNNDTPS_CORUN_SLOWDOWN=F         a task that ends while a worker of the other class runs
//                                    one takes F times as long: the classes' contention for
//                                    host memory, which makes a co-run slower than one class
//                                    alone on a memory-bound node (DESIGN §6, makespan guard)
// Worker numbers are StarPU worker ids. No StarPU dependency. A malformed setting ends the
// program with one line on stderr at the first use.
#pragma once

#include <string>

namespace emu {

struct Slowdown;

// Factor for a worker now (1 when none or not yet switched on). Thread-safe, cheap.
double factor(int worker);
// FNNDTPS_CORUN_SLOWDOWN (1 when unset).
double corun_factor();
// True when FNNDTPS_SLOWDOWN, FNNDTPS_EMULATED_GPUS or FNNDTPS_CORUN_SLOWDOWN is set.
bool configured();
// True when FNNDTPS_EMULATED_GPUS lists the worker.
bool gpu_class(int worker);
// The largest worker FNNDTPS_EMULATED_GPUS lists, or -1.
int last_gpu_class_worker();
// The largest worker FNNDTPS_SLOWDOWN names, or -1.
int last_slowdown_worker();
// Call at a task's end with the seconds it ran: counts the task and sleeps
// (factor x extra - 1) x seconds, so the task takes factor x extra times as long (`extra`:
// corun_factor() when the other class was running, else 1). Returns factor x extra.
double stretch(int worker, double seconds, double extra = 1);
// "emulated slowdown 0:1,1:1,2:2,3:4 after 10 tasks, emulated GPU class 2,3, emulated co-run
// slowdown 3x" or "".
std::string describe();
// Re-reads the environment (tests); throws std::invalid_argument on a malformed value.
void reload();

}  // namespace emu
