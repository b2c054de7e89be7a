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

}  // namespace sched

extern "C" {
starpu_sched_policy* starpu_get_sched_lib_policy(const char* name);
starpu_sched_policy** starpu_get_sched_lib_policies(void);
}
