// StarPU-MPI's start and stop for apps::StarpuSession, shared by the MPI apps (DESIGN §11).
#pragma once

#include <starpu.h>

namespace apps::mpi {

// MPI for any thread (the apps call MPI themselves while StarPU-MPI's progression thread polls
// it), then StarPU-MPI on MPI_COMM_WORLD. Throws std::runtime_error where MPI cannot.
int init(starpu_conf* conf);
void shutdown();  // StarPU-MPI, then MPI
// Whether this process is rank 0, from the launcher's environment: usable before MPI starts,
// so that a usage error is printed once, not once per rank.
bool is_rank_zero();

}  // namespace apps::mpi
