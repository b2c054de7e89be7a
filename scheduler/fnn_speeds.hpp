// A codelet's state and its workers' speeds (DESIGN §5, §6): the codelet's entry, made on its
// first task from what an earlier process saved (task costs, FNN model, DTPS ratio); the live
// features an idle worker samples; the speeds push reads, refreshed from the policy's speed
// source (cost.hpp); the FNN's samples and their training (seed 000 §5.2). Locking: policy.cpp.
#pragma once

#include <starpu.h>

#include <cstddef>
#include <string>

#include "scheduler/probe.hpp"
#include "scheduler/state.hpp"

namespace sched {

inline constexpr const char* kCostsExt = ".costs";
// The file of a codelet's saved state in the model folder: its FNN (.fnn) or costs (kCostsExt).
std::string model_path(const state::Policy& p, const std::string& codelet, const char* ext = ".fnn");

// The task's codelet's entry, made on its first task (lock-free once made).
state::CodeletState& codelet_state(state::Policy& p, starpu_task* task);
// Every worker's live features into Policy::features, at most every kFeaturesTtlUs; on an idle
// worker only (/proc and NVML reads take up to milliseconds).
void sample_features(state::Policy& p, double now);
// The codelet's speeds from its source when stale; never waits (trylock).
void refresh_speeds(state::Policy& p, state::CodeletState& c, double now);
// Only the class the codelet runs on alone, from its rates now (re-balancing's check: the
// speeds, which push refreshes, stay as they are).
void refresh_alone(state::Policy& p, state::CodeletState& c);
// Worker w's pending FNN samples into their codelets' sets; unless `wait`, trylocks only.
void merge_samples(state::WorkerSlot& s, std::size_t w, bool wait);
// The training a batch end left due, each codelet under its own mutex, then batch_mutex.
void train_models(state::Policy& p);
// What the probe reads (this machine's, or the simulated platform's).
ProbeOptions probe_options();

}  // namespace sched
