// A worker's queue of ready tasks (DESIGN §6), StarPU's dmdas/dmdar craft without StarPU:
// - sorted by priority, higher first; within a priority, by push order (as
//   starpu_st_fifo_taskq_push_sorted_task keeps its fifos);
// - pop takes, among the tasks of the head's priority, the first that can start at once (its
//   data on the worker's memory node), else the one with the least in its way (as
//   starpu_st_fifo_taskq_pop_first_ready_task does for dmdar and dmdas);
// - re-balancing takes from the back (the lowest priority, pushed last).
// Not thread-safe: the policy holds the owning worker's queue mutex around every call.
#pragma once

#include <cstddef>
#include <deque>
#include <iterator>

namespace sched {

struct QueuedTask {
  void* task = nullptr;
  int priority = 0;
  double predicted_us = 0;  // its share of the worker's expected end: transfer left + run time
  double work = 0;          // bytes of its unit, or its flops (cost.hpp)
  void* codelet = nullptr;  // the policy's state for its codelet
  double planned_end = 0;   // when its push expected it to end (us, the policy's clock)
};

class TaskQueue {
 public:
  std::size_t size() const { return q_.size(); }
  bool empty() const { return q_.empty(); }
  int front_priority() const { return q_.front().priority; }
  int back_priority() const { return q_.back().priority; }
  double back_planned_end() const { return q_.back().planned_end; }

  // The predicted time of the tasks a task of `priority` would wait behind: those of an equal
  // or higher priority (dmdas's exp_len_per_priority).
  double ahead_of(int priority) const {
    double sum = 0;
    for (auto it = q_.begin(); it != q_.end() && it->priority >= priority; ++it) sum += it->predicted_us;
    return sum;
  }

  // After every task of priority >= t.priority: O(1) when priorities are all equal.
  void push(const QueuedTask& t) {
    auto it = q_.end();
    while (it != q_.begin() && std::prev(it)->priority < t.priority) --it;
    q_.insert(it, t);
  }

  // `missing(task)` is how much keeps the task from starting at once (0: nothing): its data not
  // yet on the worker's node, and what the policy adds (pop_cost).
  // Scans the head's priority only: a ready task never overtakes a higher-priority one.
  template <class Missing>
  bool pop_ready(QueuedTask* out, Missing&& missing) {
    if (q_.empty()) return false;
    auto best = q_.begin();
    if (q_.size() > 1) {
      double least = missing(best->task);
      for (auto it = std::next(q_.begin()); least > 0 && it != q_.end() && it->priority == q_.front().priority; ++it)
        if (const double m = missing(it->task); m < least) least = m, best = it;
    }
    *out = *best;
    q_.erase(best);
    return true;
  }

  // The first task that `take` accepts.
  template <class Take>
  bool pop_front_if(QueuedTask* out, Take&& take) {
    for (auto it = q_.begin(); it != q_.end(); ++it)
      if (take(*it)) {
        *out = *it;
        q_.erase(it);
        return true;
      }
    return false;
  }

  // The last task that `take` accepts among the last `scan`.
  template <class Take>
  bool pop_back_if(std::size_t scan, QueuedTask* out, Take&& take) {
    for (auto it = q_.rbegin(); it != q_.rend() && scan > 0; ++it, --scan)
      if (take(*it)) {
        *out = *it;
        q_.erase(std::next(it).base());
        return true;
      }
    return false;
  }

 private:
  std::deque<QueuedTask> q_;
};

}  // namespace sched
