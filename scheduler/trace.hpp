// Per-task traces under any policy (DESIGN §8, "Seeing a schedule"): a copy of the policy in use
// whose post_exec_hook also records each task from StarPU's own per-task profiling
// (starpu_profiling_task_info: worker, start, end), written at the policy's deinit in the Trace
// Event format (Perfetto, chrome://tracing): one "X" event per task on its worker's row, "M"
// events naming the rows after starpu_worker_get_name, the policy and program in otherData.
// StarPU copies a policy into its context at init (load_sched_policy), so the copy needs no
// change to the policy itself, ours or StarPU's. Off, nothing is installed: no cost at all.
//
// Recording: each worker's thread appends to its own pre-reserved vector (post_exec runs on
// the thread of the worker that ran the task), so no lock is taken per task; a task ended by
// another thread goes to a shared list under a mutex. bytes_in: the task's read buffers that
// were not valid on its worker's memory node when the task was pushed to the policy, taken in a
// push_task wrapper into a sharded map (an upper bound on what moved for it: a block two tasks
// of one node need counts for both); absent for tasks the policy never saw (pushed to a named
// worker).
#pragma once

#include <starpu.h>

#include <string>

namespace sched::trace {

// The environment variable that traces any StarPU program under libfnndtps.so's policies
// (STARPU_SCHED_LIB), or any of our apps.
constexpr const char* kEnv = "FNNDTPS_TRACE";

// Under an MPI launcher with several ranks (Open MPI's or PMI's environment), rank r records
// into FILE.rank<r>.json instead of FILE.json.
// A copy of `inner` that records into `path` (written at deinit; a write that fails prints
// one line and ends the process with status 1). Sets STARPU_PROFILING=1 for StarPU's init to
// read. One traced policy per process: a second call returns the first copy's policy
// unchanged when it names the same policy, else null.
starpu_sched_policy* wrap(const starpu_sched_policy* inner, const std::string& path);

// Whether a trace is being recorded.
bool on();

// Describes a task of a known codelet family for its event: its data unit and level (-1:
// none). Set by programs that know their cl_arg (lwt2d: lwt::describe_task).
using Describer = void (*)(const starpu_task* task, int* unit, int* level);
void set_describer(Describer d);

// A span of the program's own (a timed run, a warm-up) on the trace's "runs" row, in StarPU's
// clock (starpu_timing_now()); category "run" when `timed`, else "untimed". No-op when no
// trace is recorded.
void add_span(const std::string& name, double start_us, double end_us, bool timed);

// Checks that `path` can take the trace before any work: "" when it can, else why not.
std::string check_path(const std::string& path);

}  // namespace sched::trace
