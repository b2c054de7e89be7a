#include "scheduler/plugin.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "scheduler/trace.hpp"

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

namespace {

// FNNDTPS_TRACE=FILE: `p` recording a trace (trace.hpp), whichever policy StarPU asked for.
// Null when not tracing or when `p` is null; a bad FILE is bad input, as the apps' --trace.
starpu_sched_policy* traced(starpu_sched_policy* p) {
  const char* file = std::getenv(sched::trace::kEnv);
  if (!p || !file || !*file) return nullptr;
  if (const std::string why = sched::trace::check_path(file); !why.empty()) {
    std::fprintf(stderr, "fnndtps: %s=%s: %s\n", sched::trace::kEnv, file, why.c_str());
    std::exit(2);
  }
  starpu_sched_policy* t = sched::trace::wrap(p, file);
  if (!t) std::fprintf(stderr, "fnndtps: note: %s traces one policy per process; '%s' is not traced\n", sched::trace::kEnv, p->policy_name);
  return t;
}

}  // namespace

extern "C" {
starpu_sched_policy* starpu_get_sched_lib_policy(const char* name) {
  if (starpu_sched_policy* p = sched::find_policy(name)) {
    starpu_sched_policy* t = traced(p);
    return t ? t : p;
  }
  // StarPU asks here first for every name (STARPU_SCHED, contexts' policy names), then looks
  // among its own ("heft..." is its old name for dmda); a name neither knows would run its
  // default policy after a warning: bad input, one line and status 2, as in the apps.
  if (!name || !*name || std::strcmp(name, "help") == 0 || std::strncmp(name, "heft", 4) == 0) return nullptr;
  std::string starpu;
  for (starpu_sched_policy** q = starpu_sched_get_predefined_policies(); *q; ++q) {
    if (!(*q)->policy_name) continue;
    if (std::strcmp(name, (*q)->policy_name) == 0) return traced(*q);  // null: StarPU takes its own
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
