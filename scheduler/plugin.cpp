#include "scheduler/plugin.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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
starpu_sched_policy* starpu_get_sched_lib_policy(const char* name) {
  if (starpu_sched_policy* p = sched::find_policy(name)) return p;
  // StarPU asks here first for every name (STARPU_SCHED, contexts' policy names), then looks
  // among its own ("heft..." is its old name for dmda); a name neither knows would run its
  // default policy after a warning: bad input, one line and status 2, as in the apps.
  if (!name || !*name || std::strcmp(name, "help") == 0 || std::strncmp(name, "heft", 4) == 0) return nullptr;
  std::string starpu;
  for (starpu_sched_policy** q = starpu_sched_get_predefined_policies(); *q; ++q) {
    if (!(*q)->policy_name) continue;
    if (std::strcmp(name, (*q)->policy_name) == 0) return nullptr;
    starpu += std::string(starpu.empty() ? "" : ", ") + (*q)->policy_name;
  }
  std::string ours;
  for (starpu_sched_policy** q = sched::all_policies(); *q; ++q) ours += std::string(ours.empty() ? "" : ", ") + (*q)->policy_name;
  std::fprintf(stderr, "fnndtps: unknown scheduling policy '%s'; the policies are %s (STARPU_SCHED_LIB's) and %s (StarPU's)\n",
               name, ours.c_str(), starpu.c_str());
  std::exit(2);
}
starpu_sched_policy** starpu_get_sched_lib_policies(void) { return sched::all_policies(); }
int fnndtps_end_batch(void) { return sched::end_batch_now() ? 1 : 0; }
}
