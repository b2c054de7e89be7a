// StarPU-MPI's start and stop for apps::StarpuSession, shared by the MPI apps (DESIGN §11).
#pragma once

#include <starpu.h>

#include <string>
#include <vector>

#include "apps/rank_shares.hpp"

namespace apps::mpi {

// The program's arguments for MPI to start with (SMPI reads each simulated rank's there): main
// calls it before anything else.
void keep_args(int* argc, char*** argv);
// MPI for any thread, then StarPU-MPI on MPI_COMM_WORLD; in simulation (SimGrid's SMPI)
// StarPU-MPI starts MPI itself. Throws std::runtime_error where MPI cannot.
int init(starpu_conf* conf);
void shutdown();  // StarPU-MPI, then MPI
// Every rank's `mine` (each rank's of the same length), in rank order, on every rank; and rank
// 0's `v` on every rank (same length everywhere). Collective over the ranks: MPI's collectives,
// or under SimGrid's SMPI, where the program's thread is not an MPI process, StarPU-MPI's
// point-to-point on a registered vector. For the few numbers the apps share once a job.
std::vector<double> all_gather(const std::vector<double>& mine);
void broadcast(std::vector<double>& v);
void broadcast(std::string& s);  // rank 0's (a file name: a few numbers' worth)
// Every rank's host, in rank order (collective): ranks with the same id share a host's memory.
// Under SMPI each rank simulates a node of its own.
std::vector<double> all_hosts();
// Every rank's workers, in rank order (collective), as one number each: ranks with the same
// number have the same workers (StarPU's names, which carry each device's model and memory).
std::vector<double> all_workers();
// Whether this process is rank 0, from the launcher's environment: usable before MPI starts,
// so that a usage error is printed once, not once per rank.
bool is_rank_zero();
// The status main returns. Under SMPI the ranks are actors of one simulation, whose exit status
// is not theirs (smpirun ends with 0 whatever they return): a failing status there ends the
// simulation at once with it, after the first failing rank's message, so the job prints one line
// and fails as a real one does.
int exit_status(int status);
// This rank's speed for the codelet that ran the most work under our policy: the sum of its
// workers' speeds and its fastest worker's (NaN under another policy or before any task ran).
// Node shares come from the same model as the workers' (DESIGN §11).
RankSpeed rank_speed();
// Every rank's, in rank order (collective over MPI_COMM_WORLD); a rank whose policy has no speed
// yet keeps the one it had in `last`.
std::vector<RankSpeed> all_rank_speeds(const std::vector<RankSpeed>& last);
// Each rank's, in rank order (collective): whether its policy warmed up a co-run of its CPUs
// and GPUs since `seen` (this rank's sched::Decision::warm_ups then; updated). Its time over
// that span says little of its share: RankDtps::end_round's `warming`.
std::vector<bool> all_warming(long& seen);
// Each of this rank's workers' time in that codelet so far, in ms (empty as rank_speed's NaN).
std::vector<double> worker_busy_ms();

}  // namespace apps::mpi
