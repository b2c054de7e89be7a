#include "apps/mpi_session.hpp"

#include <mpi.h>
#include <starpu_mpi.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "scheduler/plugin.hpp"

namespace apps::mpi {

int init(starpu_conf* conf) {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    throw std::runtime_error("MPI_Init_thread failed");
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    throw std::runtime_error("this MPI library does not provide MPI_THREAD_MULTIPLE");
  }
  return starpu_mpi_init_conf(nullptr, nullptr, 0, MPI_COMM_WORLD, conf);
}

void shutdown() {
  starpu_mpi_shutdown();
  MPI_Finalize();
}

bool is_rank_zero() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* r = std::getenv(v)) return std::strcmp(r, "0") == 0;
  return true;
}

RankSpeed rank_speed() {
  const auto d = sched::decision();
  RankSpeed s;
  if (!d || d->codelet.empty()) return s;
  double sum = 0, fastest = 0;
  for (const auto& w : d->workers) sum += w.speed, fastest = std::fmax(fastest, w.speed);
  if (sum > 0) s.total = sum, s.fastest = fastest;
  return s;
}

std::vector<RankSpeed> all_rank_speeds(const std::vector<RankSpeed>& last) {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const RankSpeed here = rank_speed();
  const double mine[2] = {here.total, here.fastest};
  std::vector<double> all(2 * std::size_t(ranks));
  MPI_Allgather(mine, 2, MPI_DOUBLE, all.data(), 2, MPI_DOUBLE, MPI_COMM_WORLD);
  std::vector<RankSpeed> speeds(static_cast<std::size_t>(ranks));
  for (std::size_t r = 0; r < speeds.size(); ++r) {
    speeds[r] = {all[2 * r], all[2 * r + 1]};
    if (!(speeds[r].total > 0) && r < last.size()) speeds[r] = last[r];
  }
  return speeds;
}

std::vector<double> worker_busy_ms() {
  std::vector<double> busy;
  const auto d = sched::decision();
  if (d && !d->codelet.empty())
    for (const auto& w : d->workers) busy.push_back(w.busy_ms);
  return busy;
}

}  // namespace apps::mpi
