// Which class each unit of a DTPS batch went to (DESIGN §6, dtps_dispatch.hpp's UnitPlan),
// shared by every push. A unit is the set of large handles its tasks touch together
// (task_info::Unit): the first task to touch any of them places the unit, and every later task
// touching one of them follows that place.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <unordered_map>

#include "scheduler/locks.hpp"
#include "scheduler/task_info.hpp"

namespace sched {

// DTPS by units (dtps_dispatch.hpp, UnitPlan): the class each unit of the open batch went to,
// by handle. A unit is the set of large handles its tasks touch together (a strip's input,
// work and output buffers), its small ones (halos) aside; striped so that pushes of different
// units rarely meet. An entry of an earlier batch counts as absent (a handle's address may come
// back for another unit).
class UnitTable {
 public:
  static constexpr std::size_t kMaxHandles = task_info::Unit::kMaxHandles;
  struct Place {
    int cls = -1, owner = -1;  // class (1 GPU, 0 CPU, -1 either); the worker that keeps it (-1 none)
  };
  // The place of a task whose large handles are `h[0..n)` in batch `batch`: that of the first
  // of them already placed, which the others join; when none is, a new unit that takes
  // `assign(k)`, k counting the batch's new units (`seen`). `crossing`: two of them were
  // placed in different classes.
  template <class Assign>
  Place place_of(const void* const* h, std::size_t n, int batch, std::atomic<long>& seen, Assign&& assign,
                 bool& crossing);

 private:
  struct Entry {
    int batch;
    Place place;
  };
  struct Stripe {
    Mutex mutex;
    std::unordered_map<const void*, Entry> map;
  };
  // Simulated, one stripe: SimGrid's mutexes are simcalls, each of which lets the simulated
  // threads run in another order, and how many stripes a task's handles fall in depends on their
  // addresses; with one the simulated run is the same every time (DESIGN §8).
#ifdef STARPU_SIMGRID
  static constexpr std::size_t kStripes = 1;
#else
  static constexpr std::size_t kStripes = 64;
#endif
  static constexpr std::size_t kPruneAt = (std::size_t(1) << 18) / kStripes;  // entries a stripe holds before pruning
  std::array<Stripe, kStripes> stripes_;
};

template <class Assign>
inline UnitTable::Place UnitTable::place_of(const void* const* h, std::size_t n, int batch, std::atomic<long>& seen,
                                     Assign&& assign, bool& crossing) {
  std::array<std::size_t, kMaxHandles> stripe{};
  n = std::min(n, kMaxHandles);
  for (std::size_t i = 0; i < n; ++i) stripe[i] = (reinterpret_cast<std::uintptr_t>(h[i]) >> 6) % kStripes;
  std::array<std::size_t, kMaxHandles> order = stripe;  // locked in increasing order: no deadlock
  std::sort(order.begin(), order.begin() + std::ptrdiff_t(n));
  const std::size_t locks = std::size_t(std::unique(order.begin(), order.begin() + std::ptrdiff_t(n)) - order.begin());
  starpu_worker_relax_on();
  for (std::size_t i = 0; i < locks; ++i) stripes_[order[i]].mutex.lock();
  starpu_worker_relax_off();
  bool found = false;
  Place place;
  crossing = false;
  for (std::size_t i = 0; i < n; ++i) {
    auto& map = stripes_[stripe[i]].map;
    const auto it = map.find(h[i]);
    if (it == map.end() || it->second.batch != batch) continue;
    if (!found) place = it->second.place, found = true;
    else crossing = crossing || it->second.place.cls != place.cls;
  }
  if (!found) place = assign(std::size_t(seen.fetch_add(1)));
  for (std::size_t i = 0; i < n; ++i) {
    auto& map = stripes_[stripe[i]].map;
    if (map.size() >= kPruneAt)
      for (auto it = map.begin(); it != map.end();) it = it->second.batch != batch ? map.erase(it) : std::next(it);
    auto [it, fresh] = map.try_emplace(h[i], Entry{batch, place});
    if (!fresh && it->second.batch != batch) it->second = Entry{batch, place};
  }
  for (std::size_t i = locks; i-- > 0;) stripes_[order[i]].mutex.unlock();
  return place;
}

}  // namespace sched
