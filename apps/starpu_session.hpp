// StarPU set-up shared by the apps: checks the StarPU environment the user gave (policy name,
// requested CUDA workers) before and after starpu_init, so that bad settings end with one
// clear line instead of StarPU's fallback.
#pragma once

#include <starpu.h>
#include <sys/mman.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <initializer_list>
#include <utility>
#include <vector>

#include "apps/cli.hpp"  // UsageError

namespace apps {

// StarPU's SimGrid build (DESIGN §8): codelets do not run and time is simulated, so the apps
// neither fill nor check data (host buffers stay untouched, hence unmapped) and time by
// starpu_timing_now().
#ifdef STARPU_SIMGRID
constexpr bool kSimulated = true;
#else
constexpr bool kSimulated = false;
#endif

// Host memory that a simulated job holds without touching it: every rank of an SMPI job lives
// in one process of the CPU machine, so that each rank's buffers, and every copy it receives,
// would otherwise be held for real. Folded (STARPU_MALLOC_SIMULATION_FOLDED), all of it maps the
// same few pages. 0 outside simulation.
constexpr int kFoldedInSimulation =
#ifdef STARPU_SIMGRID
    STARPU_MALLOC_SIMULATION_FOLDED;
#else
    0;
#endif

// Refuses (UsageError) a run whose buffers, `bytes` of host memory at least, exceed 90% of the
// machine's physical memory, before any work, as gemm does, instead of failing in an allocation
// partway: "<what> needs 447.0 GiB of host memory but this machine has 23.5 GiB; <advice>".
// Not in simulation, whose buffers stay untouched.
void check_host_memory(const std::string& what, double bytes, const std::string& advice);

// `n` elements of host memory from starpu_malloc: pinned where CUDA workers exist, so that
// StarPU's transfers to and from a GPU run at the bus's speed. StarPU must be running.
// `extra`: more of starpu_malloc_flags's flags (kFoldedInSimulation).
template <typename T>
struct HostArray {
  T* p = nullptr;
  std::size_t n = 0;
  int flags = STARPU_MALLOC_PINNED;
  explicit HostArray(std::size_t count, int extra = 0) : n(count), flags(STARPU_MALLOC_PINNED | extra) {
    if (starpu_malloc_flags(reinterpret_cast<void**>(&p), n * sizeof(T), flags) != 0)
      throw std::runtime_error("out of host memory for " + std::to_string(n * sizeof(T)) + " bytes");
  }
  ~HostArray() { starpu_free_flags(p, n * sizeof(T), flags); }
  HostArray(const HostArray&) = delete;
  HostArray& operator=(const HostArray&) = delete;
};

// --trace FILE (DESIGN §8): the next session records a per-task trace into FILE, whichever
// policy runs (scheduler/trace.hpp); without it, FNNDTPS_TRACE=FILE does. Throws UsageError
// when FILE cannot be written.
void trace_to(const std::string& file);
// A span of the program's own on the trace's "runs" row, from `start_us` (starpu_timing_now())
// to now: `timed`, a run the program's median counts (bench/gantt.py --run median picks among
// those), else a warm-up or another untimed run. No-op without a trace.
void trace_span(const std::string& name, double start_us, bool timed = true);

// --bound (DESIGN §8): StarPU's linear-programming bound over the tasks submitted between
// bound_start() and print_bound(what): "BOUND <what> lp_ms=X lp_deps_ms=none (why)",
// or lp_ms=none (why) where it cannot be computed (no GLPK in this StarPU, as its simulation
// build; a task kind without a usable duration in StarPU's history models).
void bound_start();
void print_bound(const char* what);

class StarpuSession {
 public:
  // `default_policy`: one of ours, used where STARPU_SCHED names none (null: StarPU's default).
  // `init` and `shutdown` start and stop StarPU (StarPU-MPI's apps pass theirs).
  // Throws UsageError (bad settings) or std::runtime_error (init failed).
  using Init = int (*)(starpu_conf*);
  using Shutdown = void (*)();
  explicit StarpuSession(const char* default_policy = nullptr, Init init = starpu_init, Shutdown shutdown = starpu_shutdown);
  ~StarpuSession();
  StarpuSession(const StarpuSession&) = delete;
  StarpuSession& operator=(const StarpuSession&) = delete;

  std::string policy() const;  // the scheduling policy in use
  // A job (one transform, one product) ended: our policies close their batch here (DTPS's
  // feedback is per job, seed 001 §1.4), as jobs run back to back leave no idle gap.
  void end_job() const;
  // The same for a rank of a StarPU-MPI job, its job's time ending at `own_end_us` (its part
  // done, starpu_timing_now's clock; NaN: its last task's end): not its waits on other ranks.
  void end_job(double own_end_us) const;
  unsigned cpu_workers() const;
  unsigned cuda_workers() const;

 private:
  Shutdown shutdown_;
};

// Host memory that a command fills before StarPU starts and uses after StarPU stops (or while
// it is paused): StarPU's idle workers poll their cores, and a file read or written beside
// them shares a core with one (bench/RESULTS.md AC). While StarPU runs it is pinned where CUDA
// workers exist (starpu_memory_pin), as HostArray's memory is.
class FileBuffer {
 public:
  explicit FileBuffer(std::size_t count) : bytes_((count * sizeof(float) + 4095) / 4096 * 4096) {
    void* m = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("out of host memory for " + std::to_string(bytes_) + " bytes");
    ::madvise(m, bytes_, MADV_HUGEPAGE);  // 512 times fewer page faults as the file fills it
    p = static_cast<float*>(m);
  }
  ~FileBuffer() {
    unpin();
    ::munmap(p, bytes_);
  }
  FileBuffer(const FileBuffer&) = delete;
  FileBuffer& operator=(const FileBuffer&) = delete;
  void pin(const StarpuSession& s) {  // once: a buffer start_beside pinned is not pinned again
    if (!pinned_) pinned_ = s.cuda_workers() > 0 && starpu_memory_pin(p, bytes_) == 0;
  }
  void unpin() {  // before StarPU stops (Pinned)
    if (pinned_) starpu_memory_unpin(p, bytes_);
    pinned_ = false;
  }
  float* p = nullptr;

 private:
  std::size_t bytes_;  // whole pages, as cudaHostRegister wants
  bool pinned_ = false;
};

// StarPU's start (its workers, the CUDA contexts, the bus model: a few hundred ms) beside a
// command's own first work, reading its input: starpu_init runs on a thread of its own, which
// then pauses StarPU (paused, its workers sleep instead of polling the cores the read uses)
// and pins `pin`, buffers the work does not touch. The calling thread runs `work`, then takes
// the running session, bound to the core STARPU_MAIN_THREAD_BIND reserves for the thread that
// submits the tasks. An error on either side comes out of the call, the start's first (a bad
// setting is named before a bad file); whatever was pinned is unpinned first. `paused`, where
// given, runs on the calling thread after both, before StarPU resumes (host work that needs
// the workers' counts); `running`, where given, on the starting thread once StarPU has
// started, before it pauses (work for the workers beside the read: the GPUs' allocations). On success the caller unpins `pin` before the session ends (Pinned).
// `work` must not read or change the environment: the session's start sets and restores
// StarPU's variables meanwhile (setenv is not thread-safe).
std::unique_ptr<StarpuSession> start_beside(const std::function<void()>& work, std::initializer_list<FileBuffer*> pin,
                                            const char* default_policy = nullptr,
                                            const std::function<void(StarpuSession&)>& paused = {},
                                            const std::function<void(StarpuSession&)>& running = {});

// FileBuffers pinned for a scope inside a StarpuSession's: unpinned however the scope ends,
// before StarPU stops.
class Pinned {
 public:
  Pinned(const StarpuSession& s, std::initializer_list<FileBuffer*> buffers) : b_(buffers) {
    for (FileBuffer* b : b_) b->pin(s);
  }
  ~Pinned() {
    for (FileBuffer* b : b_) b->unpin();
  }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;

 private:
  std::vector<FileBuffer*> b_;
};

}  // namespace apps
