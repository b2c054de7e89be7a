#include "scheduler/plugin.hpp"

#include <cstdlib>

namespace sched {

bool use_policy_from_env(starpu_conf* conf) {
  starpu_sched_policy* p = find_policy(std::getenv("STARPU_SCHED"));
  if (p) {
    conf->sched_policy = p;
    conf->sched_policy_name = nullptr;  // else StarPU looks the name up among its own first
  }
  return p != nullptr;
}

}  // namespace sched

extern "C" {
starpu_sched_policy* starpu_get_sched_lib_policy(const char* name) { return sched::find_policy(name); }
starpu_sched_policy** starpu_get_sched_lib_policies(void) { return sched::all_policies(); }
int fnndtps_end_batch(void) { return sched::end_batch_now() ? 1 : 0; }
}
