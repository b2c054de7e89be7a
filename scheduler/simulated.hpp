// Names of this process's simulated hosts (DESIGN §8). StarPU names a lone simulation's hosts
// plainly ("MAIN", "CUDA0", ...); under SMPI, StarPU-MPI names each rank's "StarPU-MPI<rank>-"
// followed by the same (its src/core/simgrid.c), and every thread of a rank runs on one of its
// rank's hosts, so the calling thread's host tells the prefix.
#pragma once

#include <starpu.h>

#ifdef STARPU_SIMGRID
#include <simgrid/host.h>

#include <cstring>
#include <string>

namespace sched::simulated {

// "StarPU-MPI<rank>-" under SMPI, "" in a lone simulation.
inline std::string node_prefix() {
  static constexpr char kMpi[] = "StarPU-MPI";  // StarPU's STARPU_MPI_AS_PREFIX
  const sg_host_t self = sg_host_self();
  const char* name = self ? sg_host_get_name(self) : nullptr;
  if (!name || std::strncmp(name, kMpi, sizeof kMpi - 1) != 0) return "";
  const char* dash = std::strchr(name + sizeof kMpi - 1, '-');
  return dash ? std::string(name, std::size_t(dash - name) + 1) : "";
}

// This node's host `name` ("CUDA0"), or null where the platform has none.
inline sg_host_t host(const std::string& name) { return sg_host_by_name((node_prefix() + name).c_str()); }

// The rank this thread simulates under SMPI ("0", "1", ...), "" in a lone simulation.
inline std::string rank() {
  const std::string p = node_prefix();
  return p.empty() ? "" : p.substr(sizeof "StarPU-MPI" - 1, p.size() - sizeof "StarPU-MPI");
}

}  // namespace sched::simulated
#endif
