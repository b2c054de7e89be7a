// The mechanism shared by all five policies (DESIGN §6): per-worker queues of ready tasks,
// data units placed in proportion to target shares with unit-to-worker affinity, and
// re-balancing by remaining time. No StarPU dependency and no locking: the policy calls it
// under its own mutex.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

namespace sched {

// A ready task in a worker's queue, with the data unit it belongs to and that unit's size.
struct Queued {
  void* task = nullptr;
  const void* unit = nullptr;
  double bytes = 0;
  int codelet = 0;  // the policy's codelet slot, for cost estimates
};

// Units are indivisible: zeroes the shares of eligible workers (all when `eligible` is
// empty) whose part of `units` units is below one, until none is (dropping one raises the
// others' parts); the largest share always stays.
void drop_fractional_workers(std::vector<double>& shares, const std::vector<char>& eligible, double units);

class Balancer {
 public:
  explicit Balancer(std::size_t workers);

  std::size_t size() const { return queues_.size(); }

  // Target shares, one per worker; normalised here (negative and NaN count as 0; all zero
  // means equal shares).
  void set_shares(const std::vector<double>& shares);
  const std::vector<double>& shares() const { return shares_; }

  // The worker that owns a unit in this batch, or -1: a unit's tasks stay where its data is.
  int owner(const void* unit) const;
  // Places a unit not yet owned in this batch on the eligible worker furthest below its
  // target share: the one maximising s_i (A + bytes) - A_i over eligible workers, with s_i
  // the shares renormalised over them and A their assigned bytes (seed 000 eq. 7:
  // D_i = CP_i / sum CP x D). The unit's owner in an earlier batch keeps it while that
  // worker is still below its share, so data moves only where the shares changed.
  // Records the ownership (not for a null unit: a task without data) and the bytes.
  // Returns -1 when no worker is eligible.
  int place(const void* unit, double bytes, const std::vector<char>& eligible);
  // Gives a unit to a worker (a move, or an owner that cannot run a task).
  void assign(const void* unit, int worker, double bytes);
  // Bytes placed per worker since the batch started.
  const std::vector<double>& assigned() const { return assigned_; }
  // A new batch: assigned bytes restart from 0; this batch's owners become the hints that
  // place() follows where the new shares allow.
  void start_batch();
  // Forgets all ownership (e.g. after the application unregistered its data).
  void forget_units();

  void push(int worker, const Queued& q);
  bool pop(int worker, Queued* out);
  std::size_t queued(int worker) const { return queues_[std::size_t(worker)].size(); }
  // Queued tasks of all workers and the shared queue.
  std::size_t queued_total() const;

  // Cold start: a unit whose codelet has not been timed on every worker yet waits in one
  // shared queue, and the first worker that runs dry takes it (as eager would) and owns it.
  // Every worker thus times a first unit before any share is computed from the speeds.
  void push_shared(const Queued& q) { shared_.push_back(q); }
  // The first shared task `worker` can run, its unit now owned by `worker` in this batch.
  bool pop_shared(int worker, Queued* out, const std::function<bool(void* task)>& can_run);
  std::size_t shared() const { return shared_.size(); }

  // seed 000 eq. 8: remaining time of a worker, T_i^r = sum over its queued tasks of their
  // estimated time on it (T_i^unit x the units left).
  using Cost = std::function<double(int worker, const Queued&)>;
  double remaining(int worker, const Cost& cost) const;

  // When the workers at least twice as fast as `idle` would finish the work queued now, shared
  // among them: their divisible-load bound T* = 1 / sum_w 1/T_w (DESIGN §8), T_w worker w's
  // time for all of it. Their units are small next to the idle worker's, so they can share the
  // queue finely; workers closer in speed cannot. Infinity when there are none. `cost` must be
  // proportional to a task's bytes within a codelet (T^unit per byte): T_w is summed per
  // codelet, not per task.
  double faster_bound(int idle, const Cost& cost) const;

  // Re-balancing for an idle worker: takes the worker with the largest remaining time; while
  // threshold x the time at which the idle worker would end the last queued unit (after the
  // units it took before) is below both that remaining time and faster_bound (units are
  // indivisible: past it, the faster workers would have done everything before the idle
  // worker's unit ends), moves that whole unit (all its queued tasks) to the idle worker. A unit's
  // time counts the tasks it still has to come in this batch, not only the queued ones: its
  // later tasks follow it (a GEMM C tile's k-steps arrive one at a time). `can_run` tells
  // whether the idle worker can run a task. Returns the tasks moved.
  std::size_t rebalance(int idle, const Cost& cost, double threshold,
                        const std::function<bool(void* task)>& can_run);
  // Tasks of `unit` still to run in this batch, `queued` of them in a queue now: the most an
  // earlier batch pushed for it less those already taken from the queues (at least `queued`).
  double expected_tasks(const void* unit, std::size_t queued) const;

 private:
  std::vector<std::deque<Queued>> queues_;
  std::deque<Queued> shared_;
  std::vector<double> shares_, assigned_;
  // Owner of each unit and the batch it was placed in: an entry from an earlier batch is
  // only a hint (start_batch is O(1), whatever the number of units).
  struct Owner {
    int worker = -1;
    long batch = -1;
    int pushes = 0;       // tasks pushed for the unit in that batch
    int most_pushes = 0;  // the most any earlier batch pushed for it
  };
  // Records `worker` as the unit's owner in this batch, keeping its task counts.
  void own(const void* unit, int worker);

  std::unordered_map<const void*, Owner> owner_;
  long batch_ = 0;
};

}  // namespace sched
