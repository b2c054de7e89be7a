#include "scheduler/balancer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sched {

void drop_fractional_workers(std::vector<double>& s, const std::vector<char>& eligible, double units) {
  auto counts = [&](std::size_t w) { return eligible.empty() || eligible[w]; };
  std::size_t largest = 0;
  for (std::size_t w = 0; w < s.size(); ++w)
    if (counts(w) && (!counts(largest) || s[w] > s[largest])) largest = w;
  for (bool changed = true; changed;) {
    changed = false;
    double sum = 0;
    for (std::size_t w = 0; w < s.size(); ++w)
      if (counts(w)) sum += std::max(0.0, s[w]);
    if (sum <= 0) return;
    for (std::size_t w = 0; w < s.size(); ++w)
      if (counts(w) && w != largest && s[w] > 0 && s[w] / sum * units < 1.0) {
        s[w] = 0;
        changed = true;
      }
  }
}

Balancer::Balancer(std::size_t workers)
    : queues_(workers), shares_(workers, workers ? 1.0 / double(workers) : 0.0), assigned_(workers, 0.0) {}

void Balancer::set_shares(const std::vector<double>& shares) {
  double sum = 0;
  for (std::size_t i = 0; i < shares_.size(); ++i) {
    const double s = i < shares.size() && std::isfinite(shares[i]) && shares[i] > 0 ? shares[i] : 0.0;
    shares_[i] = s;
    sum += s;
  }
  for (double& s : shares_) s = sum > 0 ? s / sum : 1.0 / double(shares_.size());
}

int Balancer::owner(const void* unit) const {
  const auto it = owner_.find(unit);
  return it == owner_.end() || it->second.batch != batch_ ? -1 : it->second.worker;
}

int Balancer::place(const void* unit, double bytes, const std::vector<char>& eligible) {
  double share_sum = 0, total = bytes;
  for (std::size_t i = 0; i < shares_.size(); ++i)
    if (eligible[i]) {
      share_sum += shares_[i];
      total += assigned_[i];
    }
  const auto prev = owner_.find(unit);
  const int hint = prev == owner_.end() ? -1 : prev->second.worker;
  int best = -1;
  double best_deficit = 0;
  for (std::size_t i = 0; i < shares_.size(); ++i) {
    if (!eligible[i]) continue;
    // Eligible workers whose shares are all zero fall back to equal shares.
    const double s = share_sum > 0 ? shares_[i] / share_sum : 1.0;
    const double deficit = s * total - assigned_[i];
    if (int(i) == hint && deficit > 0) {
      best = hint;
      break;
    }
    if (best < 0 || deficit > best_deficit) {
      best = int(i);
      best_deficit = deficit;
    }
  }
  if (best < 0) return best;
  if (unit) assign(unit, best, bytes);
  else assigned_[std::size_t(best)] += bytes;  // a task without data: placed, never owned
  return best;
}

void Balancer::own(const void* unit, int worker) {
  Owner& o = owner_[unit];
  if (o.batch != batch_) {  // first seen in this batch: the last batch's count becomes history
    o.most_pushes = std::max(o.most_pushes, o.pushes);
    o.pushes = 0;
  }
  o.worker = worker;
  o.batch = batch_;
}

void Balancer::assign(const void* unit, int worker, double bytes) {
  const auto it = owner_.find(unit);
  if (it != owner_.end() && it->second.batch == batch_) assigned_[std::size_t(it->second.worker)] -= bytes;
  own(unit, worker);
  assigned_[std::size_t(worker)] += bytes;
}

double Balancer::expected_tasks(const void* unit, std::size_t queued) const {
  const auto it = owner_.find(unit);
  if (it == owner_.end() || it->second.batch != batch_) return double(queued);
  const int taken = it->second.pushes - int(queued);
  return double(std::max<int>(int(queued), it->second.most_pushes - taken));
}

void Balancer::start_batch() {
  std::fill(assigned_.begin(), assigned_.end(), 0.0);
  ++batch_;
}

void Balancer::forget_units() { owner_.clear(); }

void Balancer::push(int worker, const Queued& q) {
  if (q.unit) {
    const auto it = owner_.find(q.unit);
    if (it != owner_.end() && it->second.batch == batch_) ++it->second.pushes;
  }
  queues_[std::size_t(worker)].push_back(q);
}

bool Balancer::pop(int worker, Queued* out) {
  auto& q = queues_[std::size_t(worker)];
  if (q.empty()) return false;
  *out = q.front();
  q.pop_front();
  return true;
}

bool Balancer::pop_shared(int worker, Queued* out, const std::function<bool(void* task)>& can_run) {
  for (auto it = shared_.begin(); it != shared_.end(); ++it) {
    if (!can_run(it->task)) continue;
    *out = *it;
    shared_.erase(it);
    if (out->unit) assign(out->unit, worker, out->bytes);
    else assigned_[std::size_t(worker)] += out->bytes;
    return true;
  }
  return false;
}

std::size_t Balancer::queued_total() const {
  std::size_t n = shared_.size();
  for (const auto& q : queues_) n += q.size();
  return n;
}

double Balancer::remaining(int worker, const Cost& cost) const {
  double t = 0;
  for (const Queued& q : queues_[std::size_t(worker)]) t += cost(worker, q);
  return t;
}

double Balancer::faster_bound(int idle, const Cost& cost) const {
  // Queued bytes per codelet, with one of its tasks to price them on each worker.
  std::vector<std::pair<const Queued*, double>> kinds;
  auto add = [&](const Queued& q) {
    for (auto& k : kinds)
      if (k.first->codelet == q.codelet) {
        k.second += q.bytes;
        return;
      }
    kinds.emplace_back(&q, q.bytes);
  };
  for (const Queued& q : shared_) add(q);
  for (const auto& queue : queues_)
    for (const Queued& q : queue) add(q);
  std::vector<double> all(queues_.size(), 0.0);  // T_w
  for (std::size_t w = 0; w < queues_.size(); ++w)
    for (const auto& [q, bytes] : kinds)
      if (q->bytes > 0) all[w] += cost(int(w), *q) * bytes / q->bytes;
  constexpr double kFiner = 2;  // "at least twice as fast": two of its units in one of the idle worker's
  double speed = 0;
  for (std::size_t w = 0; w < queues_.size(); ++w)
    if (int(w) != idle && all[w] > 0 && kFiner * all[w] <= all[std::size_t(idle)]) speed += 1.0 / all[w];
  return speed > 0 ? 1.0 / speed : std::numeric_limits<double>::infinity();
}

std::size_t Balancer::rebalance(int idle, const Cost& cost, double threshold,
                                const std::function<bool(void* task)>& can_run) {
  int victim = -1;
  double worst = 0;
  for (std::size_t w = 0; w < queues_.size(); ++w) {
    if (int(w) == idle || queues_[w].empty()) continue;
    const double r = remaining(int(w), cost);
    if (victim < 0 || r > worst) {
      victim = int(w);
      worst = r;
    }
  }
  if (victim < 0) return 0;
  const double faster = faster_bound(idle, cost);
  auto& from = queues_[std::size_t(victim)];
  // Each unit's queued work on both workers, in one pass (a task without data is its own unit).
  struct Work {
    double idle = 0, victim = 0;
    std::size_t tasks = 0;
    bool take = false;
  };
  auto key = [](const Queued& q) { return q.unit ? q.unit : static_cast<const void*>(q.task); };
  std::unordered_map<const void*, Work> work;
  for (const Queued& q : from) {
    Work& u = work[key(q)];
    u.idle += cost(idle, q);
    u.victim += cost(victim, q);
    ++u.tasks;
  }
  // Units from the back of the queue (the last to finish on the victim), while each still
  // ends sooner on the idle worker, after the units it took before.
  double mine = remaining(idle, cost);
  std::size_t moved = 0;
  for (auto it = from.rbegin(); it != from.rend(); ++it) {
    Work& u = work.at(key(*it));
    if (u.take) continue;  // an earlier task of a unit already taken
    if (!can_run(it->task)) break;
    // The unit's work on the idle worker counts its tasks still to come in this batch.
    const double unit_time = it->unit ? u.idle * expected_tasks(it->unit, u.tasks) / double(u.tasks) : u.idle;
    if (!(threshold * (mine + unit_time) < std::min(worst, faster))) break;
    u.take = true;
    mine += unit_time;
    worst -= u.victim;
    moved += u.tasks;
  }
  if (moved == 0) return 0;
  std::deque<Queued> keep;
  auto& to = queues_[std::size_t(idle)];
  for (const Queued& q : from) {
    if (!work.at(key(q)).take) {
      keep.push_back(q);
      continue;
    }
    to.push_back(q);
    if (q.unit && owner(q.unit) != idle) assign(q.unit, idle, q.bytes);
  }
  from.swap(keep);
  return moved;
}

}  // namespace sched
