// Entry points of the policy library. StarPU finds the policies of libfnndtps.so through
// STARPU_SCHED_LIB and the two C functions below; the bundled apps call use_policy_from_env()
// so that STARPU_SCHED=fnn-dtps works without STARPU_SCHED_LIB.
#pragma once

#include <starpu.h>

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
// worker go idle between phases. Returns whether a batch was open.
bool end_batch_now();

}  // namespace sched

extern "C" {
starpu_sched_policy* starpu_get_sched_lib_policy(const char* name);
starpu_sched_policy** starpu_get_sched_lib_policies(void);
// C entry point of sched::end_batch_now (find it with dlsym when the library was loaded
// through STARPU_SCHED_LIB); returns 1 when a batch was open, 0 otherwise.
int fnndtps_end_batch(void);
}
