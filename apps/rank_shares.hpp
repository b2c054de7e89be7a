// How many of a job's equal items (C blocks, data units) each MPI rank takes, from the ranks'
// speeds under our policy (DESIGN §11): the policy's earliest finish (DESIGN §6), one level up.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace apps::mpi {

// A rank's speed for a codelet, in the policy's work per microsecond: `total`, the sum of its
// workers' speeds; `fastest`, its fastest worker's. NaN where unknown.
struct RankSpeed {
  double total = NAN;
  double fastest = NAN;
};

// Whether every rank's speed is measured (items_by_finish's precondition).
inline bool all_known(const std::vector<RankSpeed>& speeds) {
  for (const RankSpeed& v : speeds)
    if (!(v.total > 0 && v.fastest > 0 && std::isfinite(v.total) && std::isfinite(v.fastest))) return false;
  return true;
}

// Each item in turn goes to the rank that would then finish its items first, a rank's time for
// n > 0 items being max(n / total, 1 / fastest) in units of one item's work: its workers share
// the items, but one item runs on one worker. So a rank too slow to run one item before the
// others finish all of them gets none, where shares in proportion to the total speeds would
// give it one and make it the job's last (seed 000's proportional division is the many-item
// limit). Ties go to the lower rank. Every speed must be positive and finite.
inline std::vector<int> items_by_finish(int items, const std::vector<RankSpeed>& speeds) {
  std::vector<int> count(speeds.size(), 0);
  const auto finish = [&](std::size_t r, int n) {
    return n == 0 ? 0.0 : std::fmax(n / speeds[r].total, 1.0 / speeds[r].fastest);
  };
  for (int i = 0; i < items; ++i) {
    std::size_t best = 0;
    for (std::size_t r = 1; r < speeds.size(); ++r)
      if (finish(r, count[r] + 1) < finish(best, count[best] + 1)) best = r;
    ++count[best];
  }
  return count;
}

}  // namespace apps::mpi
