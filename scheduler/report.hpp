// What the policy reports (DESIGN §6): FNNDTPS_VERBOSE's lines per batch and FNNDTPS_SUMMARY's
// summary at exit, on stderr. They read the policy's state and change nothing but what was
// last reported (moved_reported).
#pragma once

#include "scheduler/state.hpp"

namespace sched::report {

// Per batch: tasks moved by re-balancing, each worker's busy time, per codelet the batch ran
// each worker's speed and CP. Under batch_mutex.
void batch(state::Policy& p);
// Per worker its tasks, busy time, work and features F, M, P; per codelet print_codelet's
// table; the log; DTPS's alpha per kind. At deinit.
void summary(state::Policy& p);

}  // namespace sched::report
