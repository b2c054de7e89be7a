#include "apps/mpi_session.hpp"

#include <mpi.h>
#include <unistd.h>
#include <starpu_mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "scheduler/plugin.hpp"

namespace apps::mpi {

namespace {
int* g_argc = nullptr;  // keep_args: MPI may take its own arguments out of them
char*** g_argv = nullptr;
}  // namespace

void keep_args(int* argc, char*** argv) { g_argc = argc, g_argv = argv; }

int init(starpu_conf* conf) {
#ifdef STARPU_SIMGRID
  // SimGrid's SMPI: StarPU-MPI starts MPI inside each simulated rank (its actors run one at a
  // time, so MPI_THREAD_SINGLE is enough); it needs the rank's arguments.
  return starpu_mpi_init_conf(g_argc, g_argv, 1, MPI_COMM_WORLD, conf);
#else
  // MPI for any thread: the apps' collectives (all_gather, broadcast) run while StarPU-MPI's
  // progression thread polls.
  int provided = 0;
  if (MPI_Init_thread(g_argc, g_argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    throw std::runtime_error("MPI_Init_thread failed");
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    throw std::runtime_error("this MPI library does not provide MPI_THREAD_MULTIPLE");
  }
  return starpu_mpi_init_conf(nullptr, nullptr, 0, MPI_COMM_WORLD, conf);
#endif
}

void shutdown() {
  starpu_mpi_shutdown();
#ifndef STARPU_SIMGRID  // there StarPU-MPI started MPI and ends it
  MPI_Finalize();
#endif
}

#ifdef STARPU_SIMGRID
namespace {

// Under SMPI the program's thread is not an MPI process: the values go through StarPU-MPI's
// point-to-point. Their tags lie beyond any the apps give their data; every rank calls these in
// the same order, so the counters agree.
constexpr starpu_mpi_tag_t kValueTags = starpu_mpi_tag_t(1) << 40;
starpu_mpi_tag_t next_value_tag() {
  static starpu_mpi_tag_t n = 0;
  return kValueTags + n++;
}

// Sends `v` to rank `peer`, or receives it from there, and returns when done.
void exchange(std::vector<double>& v, int peer, bool send, starpu_mpi_tag_t tag) {
  starpu_data_handle_t h = nullptr;
  starpu_vector_data_register(&h, STARPU_MAIN_RAM, uintptr_t(v.data()), uint32_t(v.size()), sizeof(double));
  const int rc = send ? starpu_mpi_send(h, peer, tag, MPI_COMM_WORLD)
                      : starpu_mpi_recv(h, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  starpu_data_unregister(h);
  if (rc != 0) throw std::runtime_error("StarPU-MPI could not exchange values with rank " + std::to_string(peer));
}

}  // namespace

void broadcast(std::vector<double>& v) {
  const int rank = starpu_mpi_world_rank(), ranks = starpu_mpi_world_size();
  const starpu_mpi_tag_t tag = next_value_tag();
  if (rank != 0) return exchange(v, 0, false, tag);
  for (int r = 1; r < ranks; ++r) exchange(v, r, true, tag);
}

std::vector<double> all_gather(const std::vector<double>& mine) {
  const int rank = starpu_mpi_world_rank(), ranks = starpu_mpi_world_size();
  const std::size_t n = mine.size();
  std::vector<double> all(n * std::size_t(ranks));
  const starpu_mpi_tag_t tag = next_value_tag();
  if (rank == 0) {
    std::copy(mine.begin(), mine.end(), all.begin());
    std::vector<double> part(n);
    for (int r = 1; r < ranks; ++r) {
      exchange(part, r, false, tag);
      std::copy(part.begin(), part.end(), all.begin() + std::ptrdiff_t(n * std::size_t(r)));
    }
  } else {
    std::vector<double> m = mine;
    exchange(m, 0, true, tag);
  }
  broadcast(all);
  return all;
}
#else
// MPI's own collectives: through StarPU-MPI, as under SMPI, the slowed rank's DTPS share of
// gemm-mpi's blocks in tests/mpi_gemm.sh spread over 0.15-0.47 in 12 runs on 2 cores, against
// 0.24-0.37 with these.
void broadcast(std::vector<double>& v) { MPI_Bcast(v.data(), int(v.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD); }

std::vector<double> all_gather(const std::vector<double>& mine) {
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  std::vector<double> all(mine.size() * std::size_t(ranks));
  std::vector<double> m = mine;  // MPI's send buffer is not const in every MPI
  MPI_Allgather(m.data(), int(m.size()), MPI_DOUBLE, all.data(), int(m.size()), MPI_DOUBLE, MPI_COMM_WORLD);
  return all;
}
#endif

void broadcast(std::string& s) {
  std::vector<double> size{double(s.size())};
  broadcast(size);
  std::vector<double> chars(static_cast<std::size_t>(size[0]));
  for (std::size_t i = 0; i < s.size() && i < chars.size(); ++i) chars[i] = static_cast<unsigned char>(s[i]);
  broadcast(chars);
  s.assign(chars.size(), '\0');
  for (std::size_t i = 0; i < chars.size(); ++i) s[i] = static_cast<char>(static_cast<unsigned char>(chars[i]));
}

namespace {
// FNV-1a of `s` continuing from `h`; fnv52 keeps 52 bits, exact in a double (all_gather's).
constexpr std::uint64_t kFnvStart = 1469598103934665603ull;
std::uint64_t fnv(const char* s, std::uint64_t h = kFnvStart) {
  for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  return h;
}
double fnv52(std::uint64_t h) { return double(h & ((std::uint64_t(1) << 52) - 1)); }
}  // namespace

std::vector<double> all_hosts() {
#ifdef STARPU_SIMGRID
  return all_gather({double(starpu_mpi_world_rank())});
#else
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) std::strcpy(name, "?");
  return all_gather({fnv52(fnv(name))});
#endif
}

std::vector<double> all_workers() {
  std::uint64_t h = kFnvStart;
  for (unsigned w = 0; w < starpu_worker_get_count(); ++w) {
    char name[128] = {};
    starpu_worker_get_name(int(w), name, sizeof name - 1);
    h = fnv("\n", fnv(name, h));  // a separator: "CPU 1" + "0" is not "CPU 10"
  }
  return all_gather({fnv52(h)});
}

int exit_status(int status) {
#ifdef STARPU_SIMGRID
  if (status != 0) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(status);
  }
#endif
  return status;
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
  const RankSpeed here = rank_speed();
  const std::vector<double> all = all_gather({here.total, here.fastest});
  std::vector<RankSpeed> speeds(all.size() / 2);
  for (std::size_t r = 0; r < speeds.size(); ++r) {
    speeds[r] = {all[2 * r], all[2 * r + 1]};
    if (!(speeds[r].total > 0) && r < last.size()) speeds[r] = last[r];
  }
  return speeds;
}

std::vector<bool> all_warming(long& seen) {
  const auto d = sched::decision();
  const long now = d ? d->warm_ups : 0;
  std::vector<bool> warming;
  for (const double w : all_gather({double(now - seen)})) warming.push_back(w > 0);
  seen = now;
  return warming;
}

std::vector<double> worker_busy_ms() {
  std::vector<double> busy;
  const auto d = sched::decision();
  if (d && !d->codelet.empty())
    for (const auto& w : d->workers) busy.push_back(w.busy_ms);
  return busy;
}

}  // namespace apps::mpi
