// A batch (DESIGN §6): the work between two idle moments, opened by a push, ended by an idle
// gap longer than the debounce or by the program; DTPS's feedback at its end, the FNN's
// training left to an idle worker.
#pragma once

#include <starpu.h>

#include <cmath>

#include "scheduler/state.hpp"

namespace sched {

// Ends the batch: DTPS feedback and the next batch's cuts. `force`: also with tasks in flight.
// `job_end`: see dtps_feedback.
void end_batch(state::Policy& p, bool force, double job_end = NAN);
// At a push: opens a batch where none is, after closing one an idle gap left open.
void note_push(state::Policy& p, starpu_task* task, double now);
// A worker found nothing to do: whether the batch should end.
bool batch_end_due(state::Policy& p, double now);

}  // namespace sched
