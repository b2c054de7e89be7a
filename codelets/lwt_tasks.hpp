// The multi-level 2D CDF 9/7 transform as StarPU tasks over data units (seed 002's
// local-transform layout, DESIGN §4.2-4.3). Per level and unit: a horizontal pass over the
// unit's rows, which also writes the 4-row halos its neighbours need, then a vertical pass
// that reads the neighbours' halos, so neighbours never wait on each other's whole strip.
//
// `Fused` runs one task per unit and pass; `Steps` runs one task per lifting step
// (split, predict, update, scale and their inverses; seed 000 Algorithm 1).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codelets/plan.hpp"

struct starpu_task;
struct _starpu_data_state;
typedef struct _starpu_data_state* starpu_data_handle_t;

namespace lwt {

enum class Pipeline { Steps, Fused };
Pipeline parse_pipeline(const std::string& name);  // throws PlanError on an unknown name
const char* pipeline_name(Pipeline p);

// What each StarPU worker did during one transform.
struct WorkerStats {
  std::string name;
  unsigned tasks = 0;
  unsigned units = 0;      // distinct data units it processed
  double busy_ms = 0;      // time inside our codelets
};

// A caller's file traffic beside a transform, unit by unit (one process only): fill(k, h) just
// before unit k's first task is submitted (h: its input strip, on the caller's buffer), where the
// caller may acquire h in W mode (starpu_data_acquire_cb) and release it once the buffer holds
// the unit's input, so that the unit's tasks wait for its own rows alone; drain(k, h) once unit
// k's last task is submitted (h: its output strip), where it may acquire h in R mode and release
// it once the unit's result is written. The transform returns once every acquisition is released.
struct UnitFiles {
  std::function<void(int, starpu_data_handle_t)> fill, drain;
};

// Forward transform of `image` (H x W, row-major) into `units_layout` (H x W, the per-unit
// Mallat layout of Plan). StarPU must be initialised. Blocks until done.
// In StarPU's MPI build, with MPI initialised and several ranks (DESIGN §11): every rank calls
// it with the same plan; unit k runs on rank k R / U (halos cross between neighbouring units of
// different ranks through StarPU-MPI); `image` and `units_layout` are rank 0's, where the
// result is gathered, and unused elsewhere (may be null). The same holds for inverse().
void forward(const Plan& plan, Pipeline pipeline, const float* image, float* units_layout,
             std::vector<WorkerStats>* stats = nullptr, const UnitFiles* files = nullptr);
// A caller's own tasks on an inverse's output, before its strips come home (one process only):
// strip(k, h, priority) once unit k's last task is submitted (h: its output strip, the image's
// rows from plan.unit_row0(0, k); priority: that task's), then finish(hs) once every task so far
// has ended (hs: the strips in unit order), where it may submit more and wait for them.
struct OutputTasks {
  std::function<void(int, starpu_data_handle_t, int)> strip;
  std::function<void(const std::vector<starpu_data_handle_t>&)> finish;
};

// Inverse: per-unit layout back to the image; of the levels in `keep` alone (the others taken
// as zero by each unit's first task, on its worker) where `keep` names a subset.
void inverse(const Plan& plan, Pipeline pipeline, const float* units_layout, float* image,
             std::vector<WorkerStats>* stats = nullptr, LevelSet keep = kAllLevels,
             const OutputTasks* then = nullptr, const UnitFiles* files = nullptr);

// Allocates on each GPU's memory node the buffers a transform of `plan` places there (a GPU's
// share: the units over the GPUs, rounded up), then hands them to StarPU's allocation cache,
// where the transform's handles of the same sizes find them (memalloc.c): a fresh process's
// first transform would otherwise wait on cudaMalloc, ~17 ms for a 16384^2 forward's 3 GiB.
// StarPU must be running (not paused). Nothing to do without CUDA workers or across ranks.
void preallocate(const Plan& plan, Pipeline pipeline, bool forward);

// Across ranks: the rank of each unit for the next transforms of plans of owner.size() units
// (every rank passes the same); other plans, or an empty vector, spread units evenly.
void set_unit_ranks(const std::vector<int>& owner);
// Across ranks: whether the next transforms' input is on every rank, each holding at least its
// own units' rows of it (at the same place in an image-sized buffer): each unit's input is then
// that rank's, and only halos and outputs cross. Otherwise (the default) rank 0 holds the input
// and sends each unit its strip.
void set_local_input(bool local);

// Across ranks: whether the next transforms bring every unit's output to rank 0 (the default),
// or leave each on its unit's rank, in that rank's image-sized output buffer at the unit's rows
// (only those written), for the rank to write out itself.
void set_gather_output(bool gather);

// Across ranks, after a transform, in microseconds of this rank's starpu_timing_now(): gathered
// (set_gather_output), on rank 0, when each unit's output reached rank 0 (its own units': when
// their last task ended), empty on the other ranks; not gathered, on every rank, when each of
// its own units' outputs was complete, 0 for the other ranks' units. Empty in one process.
const std::vector<double>& unit_home_us();

// Tasks one transform submits (for reports and tests).
long task_count(const Plan& plan, Pipeline pipeline, bool forward);
// A task of these codelets: its data unit and decomposition level (1 the finest); others are
// left alone. For traces (sched::trace::set_describer).
void describe_task(const starpu_task* task, int* unit, int* level);

}  // namespace lwt
