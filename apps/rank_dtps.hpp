// Seed 001's DTPS between R >= 2 MPI ranks (DESIGN §11). Seed 001 §1.3 balances two classes;
// RankDtps applies its rule to the ranks by recursive bisection: a binary tree whose every
// inner node splits its ranks [lo, hi) into [lo, mid) (seed 001's first class, alpha its share
// of the node's work) and [mid, hi) (its second), each node a sched::DtpsController of its own.
// With 2 ranks the tree is one node, rank 0 against rank 1: seed 001's two classes as before.
// Pure logic, header only (no MPI, no StarPU): the apps compute the same tree on the ranks that
// need it, and tests/test_rank_dtps.cpp tests it natively.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "scheduler/dtps.hpp"

namespace apps::mpi {

class RankDtps {
 public:
  // What one inner node did at a round's end (end_round), for the apps' `dtps:` lines.
  struct NodeRound {
    int lo = 0, mid = 0, hi = 0;            // the node's ranks [lo, hi), its halves [lo, mid) and [mid, hi)
    double t_first = 0, t_second = 0;       // each half's time: its latest rank's that had work, ms
    double work_first = 0, work_second = 0; // the work each half ran (the caller's unit)
    bool skipped = false;                   // no work in the node (a parent ran the other half alone)
    bool warming = false;                   // ... or one of its ranks was warming up: not judged
    sched::DtpsUpdate update;               // the controller's round (default when skipped)
    double share_before = 0;                // the first half's share of the node's work it ran
    double share_after = 0;                 // ... and its share for the next round (alpha)
  };

  // A tree over `ranks` ranks. `start`: each rank's starting work (any unit; e.g. the model's
  // split), each node's alpha the first half's part of the node's; empty (or a node's all 0):
  // in proportion to the ranks' counts, so that every rank starts with 1 / ranks. `hosts`:
  // each rank's host (any id; empty: unknown): a node whose halves share no host has
  // independent classes (sched::DtpsConfig), one whose halves share a host's memory has not.
  explicit RankDtps(int ranks, const std::vector<double>& start = {}, sched::DtpsConfig config = {},
                    const std::vector<double>& hosts = {})
      : ranks_(ranks), hosts_(hosts) {
    if (ranks < 1) throw std::invalid_argument("RankDtps needs at least 1 rank");
    if (!start.empty() && start.size() != std::size_t(ranks))
      throw std::invalid_argument("RankDtps: " + std::to_string(start.size()) + " start shares for " +
                                  std::to_string(ranks) + " ranks");
    if (!hosts.empty() && hosts.size() != std::size_t(ranks))
      throw std::invalid_argument("RankDtps: " + std::to_string(hosts.size()) + " hosts for " +
                                  std::to_string(ranks) + " ranks");
    build(0, ranks, start, config);
  }

  int ranks() const { return ranks_; }
  // The inner nodes, in pre-order (the root first); none with 1 rank.
  std::size_t nodes() const { return nodes_.size(); }
  const sched::DtpsController& controller(std::size_t node) const { return nodes_.at(node).dtps; }

  // Each rank's share of the next round's work, summing to 1: the product of the alphas (first
  // half) or 1 - alpha (second half) along its path from the root.
  std::vector<double> shares() const {
    std::vector<double> s(std::size_t(ranks_), 1.0);
    for (const Node& n : nodes_) {
      const double a = n.dtps.alpha();
      for (int r = n.lo; r < n.hi; ++r) s[std::size_t(r)] *= r < n.mid ? a : 1.0 - a;
    }
    return s;
  }

  // A round ended: rank r took times_ms[r] for work[r] (any unit, 0: it had none; its time is
  // then ignored). Each node applies seed 001 §1.3 to its two halves as to its two classes:
  // t_first = the latest time among the first half's ranks that had work, t_second likewise,
  // the realised share = the first half's work over the node's. `makespan_ms`: the round's
  // time, for the makespan guard (the root's throughput is its work over it, an inner node's its
  // work over its latest half's time); NaN: no guard. A node without work is skipped, and so is
  // one with a rank whose `warming[r]` is set (its time is not that of its share: its own policy
  // was trying a split it had not run before). Returns each node's round, in pre-order.
  std::vector<NodeRound> end_round(const std::vector<double>& times_ms, const std::vector<double>& work,
                                   double makespan_ms = std::numeric_limits<double>::quiet_NaN(),
                                   const std::vector<bool>& warming = {}) {
    if (times_ms.size() != std::size_t(ranks_) || work.size() != std::size_t(ranks_) ||
        (!warming.empty() && warming.size() != std::size_t(ranks_)))
      throw std::invalid_argument("RankDtps::end_round: one time and one work a rank");
    std::vector<NodeRound> out;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      Node& n = nodes_[i];
      NodeRound u;
      u.lo = n.lo, u.mid = n.mid, u.hi = n.hi;
      for (int r = n.lo; r < n.hi; ++r) {
        const double w = work[std::size_t(r)], t = w > 0 ? times_ms[std::size_t(r)] : 0.0;
        (r < n.mid ? u.work_first : u.work_second) += w > 0 ? w : 0.0;
        double& half = r < n.mid ? u.t_first : u.t_second;
        half = std::fmax(half, t);
      }
      const double node_work = u.work_first + u.work_second;
      for (int r = n.lo; r < n.hi && !warming.empty(); ++r) u.warming = u.warming || warming[std::size_t(r)];
      if (!(node_work > 0) || u.warming) {
        u.skipped = true;
        u.share_before = u.share_after = n.dtps.alpha();
      } else {
        u.share_before = u.work_first / node_work;
        const double span = i == 0 && !std::isnan(makespan_ms) ? makespan_ms : std::fmax(u.t_first, u.t_second);
        const double throughput =
            std::isnan(makespan_ms) ? std::numeric_limits<double>::quiet_NaN() : node_work / span;
        u.update = n.dtps.end_batch(u.t_first, u.t_second, u.share_before, throughput);  // seed 001 §1.3
        u.share_after = n.dtps.alpha();
      }
      out.push_back(u);
    }
    return out;
  }

  // "rank 3" or "ranks 1-2": ranks [lo, hi), as the `dtps:` lines name them.
  static std::string group(int lo, int hi) {
    return hi - lo == 1 ? "rank " + std::to_string(lo)
                        : "ranks " + std::to_string(lo) + "-" + std::to_string(hi - 1);
  }
  // A node's case as its halves: seed 001's "CPU overloaded" (its first class late) is the
  // first half late, "GPU overloaded" the second.
  static std::string case_name(const NodeRound& u) {
    if (u.skipped) return u.warming ? "a rank warming up, skipped" : "no work, skipped";
    if (u.update.kind == sched::DtpsCase::CpuOverloaded) return group(u.lo, u.mid) + " late";
    if (u.update.kind == sched::DtpsCase::GpuOverloaded) return group(u.mid, u.hi) + " late";
    return sched::to_string(u.update.kind);
  }
  // The `dtps:` line's start for a node: "" for the root (all ranks), else its ranks, e.g.
  // "ranks 1-2: ", so that with 2 ranks the line reads as seed 001's two classes.
  std::string prefix(const NodeRound& u) const {
    return u.lo == 0 && u.hi == ranks_ ? std::string() : group(u.lo, u.hi) + ": ";
  }

 private:
  struct Node {
    int lo, mid, hi;
    sched::DtpsController dtps;
  };

  void build(int lo, int hi, const std::vector<double>& start, const sched::DtpsConfig& config) {
    if (hi - lo < 2) return;
    const int mid = lo + (hi - lo) / 2;  // 2 ranks: rank 0 against rank 1
    double first = 0, all = 0;
    for (int r = lo; r < hi && !start.empty(); ++r) {
      const double w = start[std::size_t(r)] > 0 ? start[std::size_t(r)] : 0.0;
      all += w;
      if (r < mid) first += w;
    }
    const double alpha = all > 0 ? first / all : double(mid - lo) / double(hi - lo);
    sched::DtpsConfig mine = config;
    mine.independent_classes = config.independent_classes || share_no_host(lo, mid, hi);
    nodes_.push_back(Node{lo, mid, hi, sched::DtpsController(mine, sched::DtpsState{alpha, 0.0, 0})});
    build(lo, mid, start, config);
    build(mid, hi, start, config);
  }

  // Whether no rank of [lo, mid) is on a host of [mid, hi) (false where hosts are unknown).
  bool share_no_host(int lo, int mid, int hi) const {
    if (hosts_.empty()) return false;
    for (int a = lo; a < mid; ++a)
      for (int b = mid; b < hi; ++b)
        if (hosts_[std::size_t(a)] == hosts_[std::size_t(b)]) return false;
    return true;
  }

  int ranks_;
  std::vector<double> hosts_;
  std::vector<Node> nodes_;
};

}  // namespace apps::mpi
