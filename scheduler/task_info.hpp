// What the policy reads of a task's buffers, in one walk (DESIGN §6): its work, its data's
// bytes for seed 001's weight, its unit, the inputs missing on a node, the buffers a node would
// have to allocate. Every figure counts the data the task owns only: SCRATCH and REDUX buffers
// are StarPU's per-worker space and reduction copies, which no transfer moves for the task.
//
// The accumulators are plain C++ over Buffer records (tested without StarPU, tests/
// test_task_info.cpp); for_each_owned feeds them a task's buffers.
#pragma once

#include <starpu.h>

#include <algorithm>
#include <array>
#include <cstddef>

#include "scheduler/dtps_dispatch.hpp"

namespace sched::task_info {

struct Buffer {
  starpu_data_handle_t handle = nullptr;
  double bytes = 0;
  bool reads = false, writes = false;
};

// f(Buffer) for each buffer of `task` that it owns, in the codelet's order.
template <typename F>
void for_each_owned(starpu_task* task, F&& f) {
  const unsigned n = STARPU_TASK_GET_NBUFFERS(task);
  for (unsigned i = 0; i < n; ++i) {
    const int mode = STARPU_TASK_GET_MODE(task, i);
    if (mode & (STARPU_SCRATCH | STARPU_REDUX)) continue;
    starpu_data_handle_t h = STARPU_TASK_GET_HANDLE(task, i);
    f(Buffer{h, double(starpu_data_get_size(h)), (mode & STARPU_R) != 0, (mode & STARPU_W) != 0});
  }
}

// A task's work where it sets no flops: its unit's bytes, the largest buffer it writes (W or
// RW), else the bytes it reads; a task without data counts 1.
struct Work {
  double written = 0, read = 0;
  void add(const Buffer& b) {
    if (b.writes) written = std::max(written, b.bytes);
    else read += b.bytes;
  }
  double value() const {
    const double b = written > 0 ? written : read;
    return b > 0 ? b : 1;
  }
};

// Seed 001 eqs. (4)-(5): DA, the bytes a task's data brings in (read) and takes out (written).
struct DataBytes {
  double da = 0;
  void add(const Buffer& b) { da += (b.reads ? b.bytes : 0) + (b.writes ? b.bytes : 0); }
};

// A unit: the set of large handles a task touches together. A buffer small beside the task's
// largest (dtps_dispatch::small_handle: a strip's halo rows) joins none; a task that writes
// none of its large ones has no unit (it only reads what others own). At most kMaxHandles, in
// the codelet's order.
struct Unit {
  static constexpr std::size_t kMaxHandles = 8;
  std::array<const void*, kMaxHandles> h{};
  std::size_t n = 0;
};
// `largest`: the task's largest owned buffer; then each owned buffer in order.
class UnitPicker {
 public:
  explicit UnitPicker(double largest) : largest_(largest) {}
  void add(const Buffer& b) {
    if (u_.n == u_.h.size() || dtps_dispatch::small_handle(b.bytes, largest_)) return;
    writes_ = writes_ || b.writes;
    u_.h[u_.n++] = b.handle;
  }
  Unit value() const { return writes_ ? u_ : Unit{}; }

 private:
  double largest_;
  Unit u_;
  bool writes_ = false;
};

// The StarPU side: each walks the task's owned buffers once (unit: twice, largest first).
double work(starpu_task* task);        // Work, or the task's flops where it sets them
double data_bytes(starpu_task* task);  // DataBytes
Unit unit(starpu_task* task);
// Inputs (read buffers) not valid on `node` (dmdar's readiness).
double missing_on(starpu_task* task, unsigned node);
// Bytes of the owned buffers that have no allocation on `node` yet.
double unallocated_bytes(starpu_task* task, unsigned node);
// The share of the owned buffers' bytes that have no allocation on `node` yet (0 without data).
double unallocated_share(starpu_task* task, unsigned node);

}  // namespace sched::task_info
