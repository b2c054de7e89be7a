// Entry points of the policy library. StarPU finds the policies of libfnndtps.so through
// STARPU_SCHED_LIB and the two C functions below; the bundled apps call use_policy_from_env()
// so that STARPU_SCHED=fnn-dtps works without STARPU_SCHED_LIB.
#pragma once

#include <starpu.h>

#include <optional>
#include <string>
#include <vector>

namespace sched {

// Our policy named `name` ("fnn-dtps", "fnn", "dtps", "boyer", "even"), or null.
starpu_sched_policy* find_policy(const char* name);
// The five policies, null-terminated.
starpu_sched_policy** all_policies();
// Where STARPU_SCHED names one of our policies, sets conf->sched_policy to it (StarPU
// prefers an explicit policy over the variable). Returns whether it did.
bool use_policy_from_env(starpu_conf* conf);
// Ends the current batch now (DESIGN §6: "or an explicit API call"): DTPS feedback and model
// training run, and the next push starts a new batch. For programs that never let every
// worker go idle between phases, or whose jobs end with copies home after the last task.
// From the first call on, batches end only there (and at shutdown), not at idle gaps: the
// batch's makespan, which the makespan guard compares, lasts until the call. Returns whether
// a batch was open.
bool end_batch_now();
// As end_batch_now, the batch's makespan ending at `end_us` (starpu_timing_now's clock): a
// rank of a StarPU-MPI job passes when its own part was done, so that its waits on the other
// ranks after it (their results, a barrier) are not counted as its time; NaN: when its last
// task ended.
bool end_batch_at(double end_us);

// What our policy of the global scheduling context decided so far, for programs that show it
// (lwt2d demo): for the codelet that ran the most work, each worker's planned share (its
// speed over the members' total), the FNN's predicted CP (NaN without a model), its tasks and
// busy time, and DTPS's CPU-class share with its last decision. Empty when the policy is not
// ours.
struct Decision {
  struct Worker {
    std::string name;
    double share = 0, cp = 0, busy_ms = 0;
    double speed = 0;  // the policy's speed for the codelet, work (flops or bytes) per microsecond
    double uf = 0, own_busy = 0;  // live UF (the load not ours; NaN before a sample), our share
    long tasks = 0;
  };
  std::string policy, codelet;
  double alpha = -1;  // < 0: no DTPS share
  std::string dtps;   // the controller's last decision
  long warm_ups = 0;  // batches so far that were a co-run's warm-up, which the controller did not judge
  std::vector<Worker> workers;
};
std::optional<Decision> decision();

}  // namespace sched

extern "C" {
starpu_sched_policy* starpu_get_sched_lib_policy(const char* name);
starpu_sched_policy** starpu_get_sched_lib_policies(void);
// C entry point of sched::end_batch_now (find it with dlsym when the library was loaded
// through STARPU_SCHED_LIB); returns 1 when a batch was open, 0 otherwise.
int fnndtps_end_batch(void);
}
