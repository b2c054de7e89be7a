// The policies' settings, all from environment variables with the FNNDTPS_ prefix.
//   FNNDTPS_THRESHOLD   an idle worker takes a queued task from the busiest worker when this
//                       many times its time to run it here stays under the time the task
//                       would wait there (default 1)
//   FNNDTPS_BATCH_GAP_MS  a batch ends once nothing ran for this long (default 2): shorter
//                       gaps are the submitter falling behind, not the end of a job
//   FNNDTPS_MODEL_DIR   where FNN models, task costs and DTPS ratios live
//                       (default $XDG_CACHE_HOME/fnndtps/models or ~/.cache/fnndtps/models)
//   FNNDTPS_HIDDEN      hidden neurons of new FNN models (default 16)
//   FNNDTPS_SUMMARY     1: print a per-worker summary at exit (default 0)
//   FNNDTPS_VERBOSE     1: one line per batch (DTPS decisions, model training) (default 0)
//   FNNDTPS_SAVE        0: never write the model directory (default 1)
//   FNNDTPS_IDLE_NAP_US a CPU worker idle for 2 ms waits up to this long between its polls,
//                       woken at once by a push to it (default 0: it polls as StarPU's
//                       non-blocking drivers do, every few us)
//   FNNDTPS_REBALANCE   1/0: move queued tasks from late workers to idle ones (seed 000 eq. 8);
//                       default on for fnn and fnn-dtps, whose model includes it, off for the others
// plus the emulated slowdowns of scheduler/emulation.hpp.
#pragma once

#include <string>

namespace sched {

struct Config {
  double threshold = 1.0;
  double batch_gap_us = 2000;
  std::string model_dir;
  int hidden = 16;
  bool summary = false;
  bool verbose = false;
  bool save = true;
  int rebalance = -1;  // -1: the policy's default
  double nap_us = 0;

  // Reads the environment; throws std::invalid_argument with a one-line message.
  static Config from_env();
};

}  // namespace sched
