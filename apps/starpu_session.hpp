// StarPU set-up shared by the apps: checks the StarPU environment the user gave (policy name,
// requested CUDA workers) before and after starpu_init, so that bad settings end with one
// clear line instead of StarPU's fallback.
#pragma once

#include <starpu_config.h>

#include <stdexcept>
#include <string>

namespace apps {

// StarPU's SimGrid build (DESIGN §8): codelets do not run and time is simulated, so the apps
// neither fill nor check data (host buffers stay untouched, hence unmapped) and time by
// starpu_timing_now().
#ifdef STARPU_SIMGRID
constexpr bool kSimulated = true;
#else
constexpr bool kSimulated = false;
#endif

// A user error: main prints "<prog>: <what()>" and exits with status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class StarpuSession {
 public:
  StarpuSession();  // throws UsageError (bad settings) or std::runtime_error (init failed)
  ~StarpuSession();
  StarpuSession(const StarpuSession&) = delete;
  StarpuSession& operator=(const StarpuSession&) = delete;

  std::string policy() const;  // the scheduling policy in use
  unsigned cpu_workers() const;
  unsigned cuda_workers() const;
};

}  // namespace apps
