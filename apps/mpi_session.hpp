// StarPU-MPI's start and stop for apps::StarpuSession, shared by the MPI apps (DESIGN §11).
#pragma once

#include <starpu.h>

#include <vector>

#include "apps/rank_shares.hpp"

namespace apps::mpi {

// MPI for any thread (the apps call MPI themselves while StarPU-MPI's progression thread polls
// it), then StarPU-MPI on MPI_COMM_WORLD. Throws std::runtime_error where MPI cannot.
int init(starpu_conf* conf);
void shutdown();  // StarPU-MPI, then MPI
// Whether this process is rank 0, from the launcher's environment: usable before MPI starts,
// so that a usage error is printed once, not once per rank.
bool is_rank_zero();
// This rank's speed for the codelet that ran the most work under our policy: the sum of its
// workers' speeds and its fastest worker's (NaN under another policy or before any task ran).
// Node shares come from the same model as the workers' (DESIGN §11).
RankSpeed rank_speed();
// Every rank's, in rank order (collective over MPI_COMM_WORLD); a rank whose policy has no speed
// yet keeps the one it had in `last`.
std::vector<RankSpeed> all_rank_speeds(const std::vector<RankSpeed>& last);
// Each of this rank's workers' time in that codelet so far, in ms (empty as rank_speed's NaN).
std::vector<double> worker_busy_ms();

}  // namespace apps::mpi
