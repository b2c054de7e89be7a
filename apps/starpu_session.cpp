#include "apps/starpu_session.hpp"

#include <dlfcn.h>
#include <starpu.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <string>
#include <vector>

#include "codelets/simulated.hpp"
#include "scheduler/plugin.hpp"
#include "scheduler/trace.hpp"

namespace apps {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// STARPU_SCHED names a policy StarPU or this program finds: ours (linked in), StarPU's own, or,
// where STARPU_SCHED_LIB is set, one that library lists (StarPU looks there first). Otherwise
// UsageError naming them, since StarPU would warn and run its default policy instead.
void check_policy_name(const std::string& name) {
  if (name == "help") return;  // StarPU lists the policies and goes on with its default
  std::vector<std::string> ours, starpu;
  for (starpu_sched_policy** p = sched::all_policies(); *p; ++p) ours.push_back((*p)->policy_name);
  for (starpu_sched_policy** p = starpu_sched_get_predefined_policies(); *p; ++p)
    if ((*p)->policy_name) starpu.push_back((*p)->policy_name);
  auto in = [](const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); };
  if (in(ours, name) || in(starpu, name)) return;
  bool lib_read = false;
  std::vector<std::string> lib_more;  // the library's policies that ours are not (ours: libfnndtps.so)
  std::string lib_problem;
  if (const char* lib = std::getenv("STARPU_SCHED_LIB"); lib && *lib) {
    if (void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)) {
      using List = starpu_sched_policy** (*)();
      if (auto list = reinterpret_cast<List>(dlsym(h, "starpu_get_sched_lib_policies"))) {
        lib_read = true;
        for (starpu_sched_policy** p = list(); p && *p; ++p)
          if ((*p)->policy_name && !in(ours, (*p)->policy_name)) lib_more.push_back((*p)->policy_name);
      } else {
        lib_problem = std::string("STARPU_SCHED_LIB=") + lib + " lists no policies (no starpu_get_sched_lib_policies)";
      }
      dlclose(h);
      if (in(lib_more, name)) return;
    } else {
      const char* why = dlerror();
      lib_problem = std::string("STARPU_SCHED_LIB=") + lib + " cannot be loaded (" + (why ? why : "?") + ")";
    }
  }
  std::string msg = "unknown scheduling policy STARPU_SCHED='" + name + "'; the policies are " + join(ours) +
                    (lib_read && lib_more.empty() ? " (this program's and STARPU_SCHED_LIB's)" : " (this program's)");
  if (!lib_more.empty()) msg += ", " + join(lib_more) + " (STARPU_SCHED_LIB's)";
  msg += " and " + join(starpu) + " (StarPU's)";
  if (!lib_problem.empty()) msg += "; " + lib_problem;
  throw UsageError(msg);
}

std::string trace_file;  // --trace FILE

// The policy StarPU would run for STARPU_SCHED=`name` (its default, lws, for none), where
// this program can name it: ours or StarPU's; null for STARPU_SCHED_LIB's others.
starpu_sched_policy* policy_named(const char* name) {
  if (!name || !*name) name = "lws";
  if (starpu_sched_policy* p = sched::find_policy(name)) return p;
  for (starpu_sched_policy** p = starpu_sched_get_predefined_policies(); *p; ++p)
    if ((*p)->policy_name && std::string((*p)->policy_name) == name) return *p;
  return nullptr;
}

constexpr long kMinCoresToReserve = 8;

// StarPU's files of this host, cut short, as a disk that filled while StarPU saved them at
// shutdown leaves them: StarPU aborts on them (perfmodel_history.c's parser asserts, the bus
// loader likewise) in starpu_init or at a codelet's first task. Each is checked against the
// layout StarPU writes (its values, comments and blank lines aside), enough to tell a whole file
// from a cut one, and named before StarPU starts. Throws UsageError.
namespace starpu_files {

std::vector<std::vector<std::string>> value_lines(const std::string& path, bool* ends_whole) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  *ends_whole = !text.empty() && text.back() == '\n';
  std::vector<std::vector<std::string>> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    for (std::size_t i = 0; i < line.size();) {
      const std::size_t b = line.find_first_not_of(" \t", i);
      if (b == std::string::npos) break;
      const std::size_t e = std::min(line.find_first_of(" \t", b), line.size());
      fields.push_back(line.substr(b, e - b));
      i = e;
    }
    if (!fields.empty()) lines.push_back(std::move(fields));
  }
  return lines;
}

// A history model (format 45): version; combinations; per combination its devices (type, id,
// cores), implementations, and per implementation its entry count, the regression's two lines,
// the multiple-regression flag, then its entries of 8 fields. A flag other than 0 (a layout
// this check does not follow) passes.
bool whole_model(const std::string& path) {
  bool ends = false;
  const auto v = value_lines(path, &ends);
  if (!ends) return false;
  std::size_t at = 1;
  auto next = [&](long* out) {
    if (at >= v.size() || v[at].size() != 1) return false;
    char* end = nullptr;
    *out = std::strtol(v[at][0].c_str(), &end, 10);
    ++at;
    return *end == 0 && *out >= 0;
  };
  long combs = 0;
  if (v.empty() || !next(&combs)) return false;
  for (long c = 0; c < combs; ++c) {
    long devices = 0, impls = 0;
    if (!next(&devices)) return false;
    at += 3 * std::size_t(devices);
    if (!next(&impls)) return false;
    for (long i = 0; i < impls; ++i) {
      long entries = 0, multiple = 0;
      if (!next(&entries)) return false;
      at += 2;
      if (!next(&multiple)) return false;
      if (multiple != 0) return true;
      for (long e = 0; e < entries; ++e, ++at)
        if (at >= v.size() || v[at].size() != 8) return false;
    }
  }
  return true;
}

// A bus latency or bandwidth file: a square matrix, one row per memory node.
bool whole_matrix(const std::string& path) {
  bool ends = false;
  const auto v = value_lines(path, &ends);
  if (!ends || v.empty()) return false;
  for (const auto& row : v)
    if (row.size() != v.size()) return false;
  return true;
}

bool ends_whole(const std::string& path) {
  bool ends = false;
  value_lines(path, &ends);
  return ends;
}

}  // namespace starpu_files

void check_starpu_files() {
  namespace fs = std::filesystem;
  const char* dir = std::getenv("STARPU_PERF_MODEL_DIR");
  fs::path sampling;
  if (dir && *dir) {
    sampling = dir;
  } else {
    const char* home = std::getenv("STARPU_HOME");
    if (!home || !*home) home = std::getenv("HOME");
    if (!home || !*home) return;
    sampling = fs::path(home) / ".starpu" / "sampling";
  }
  std::string host;
  if (const char* h = std::getenv("STARPU_HOSTNAME"); h && *h) {
    host = h;
  } else {
    char name[HOST_NAME_MAX + 1] = {};
    if (gethostname(name, sizeof name - 1) != 0) return;
    host = name;
    host = host.substr(0, host.find('.'));  // as StarPU names its files
  }
  auto refuse = [](const fs::path& f) {
    throw UsageError("StarPU's file " + f.string() + " is cut short (a disk that filled while StarPU saved it?); "
                     "remove it, and StarPU measures it again");
  };
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(sampling / "bus", ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file(ec) || name.rfind(host + ".", 0) != 0 || fs::file_size(e.path(), ec) == 0) continue;
    const std::string kind = name.substr(host.size() + 1);
    const bool whole = kind == "latency" || kind == "bandwidth" ? starpu_files::whole_matrix(e.path().string())
                                                                : starpu_files::ends_whole(e.path().string());
    if (!whole) refuse(e.path());
  }
  for (const auto& version : fs::directory_iterator(sampling / "codelets", ec)) {
    if (!version.is_directory(ec) || version.path().filename() != "45") continue;  // the format this StarPU reads
    for (const auto& e : fs::directory_iterator(version.path(), ec)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file(ec) && name.size() > host.size() + 1 &&
          name.compare(name.size() - host.size() - 1, std::string::npos, "." + host) == 0 &&
          !starpu_files::whole_model(e.path().string()))
        refuse(e.path());
    }
  }
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0') throw UsageError(std::string(name) + "='" + v + "' is not an integer");
  return int(x);
}

}  // namespace

void trace_to(const std::string& file) {
  if (const std::string why = sched::trace::check_path(file); !why.empty()) throw UsageError("--trace " + file + ": " + why);
  trace_file = file;
}

void trace_span(const std::string& name, double start_us, bool timed) {
  sched::trace::add_span(name, start_us, starpu_timing_now(), timed);
}

void bound_start() { starpu_bound_start(0, 0); }

// starpu_bound_compute solves, with GLPK, the LP over task kinds (codelet, footprint) and
// workers: each kind's count spread over the workers at their models' durations, minimise the
// busiest worker's time. It ignores dependencies and transfers: a lower bound on the
// makespan. StarPU offers no computed bound with dependencies (only starpu_bound_print_lp's
// lp_solve MILP, with a constraint per pair of independent tasks and worker).
void print_bound(const char* what) {
  starpu_bound_stop();
  const char* deps = "lp_deps_ms=none (StarPU computes the bound without dependencies only; with them it writes "
                     "an lp_solve MILP of O(tasks^2 workers) constraints, not solved here)";
#ifdef STARPU_HAVE_GLPK_H
  // The relaxation only: it is a lower bound already, and StarPU runs GLPK's integer branch
  // and bound with no time limit, which has no bound on its own time.
  double lp = 0, unused = 0;
  starpu_bound_compute(&lp, &unused, 0);
  if (lp > 0)
    std::printf("BOUND %s lp_ms=%.3f %s\n", what, lp, deps);
  else
    std::printf("BOUND %s lp_ms=none (StarPU found no usable duration for a task kind: its bound takes each kind's history mean minus one standard deviation, none before a policy such as dmda calibrated the models, negative where an outlier made the deviation large) %s\n",
                what, deps);
#else
  std::printf("BOUND %s lp_ms=none (this StarPU was built without GLPK, which starpu_bound_compute needs) %s\n", what,
              deps);
#endif
}

void check_host_memory(const std::string& what, double bytes, const std::string& advice) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const double have = pages > 0 && page > 0 ? double(pages) * double(page) : 0.0;
  if (kSimulated || have <= 0 || bytes <= 0.9 * have) return;
  char msg[160];
  std::snprintf(msg, sizeof msg, " needs %.1f GiB of host memory but this machine has %.1f GiB; ", bytes / 1073741824.0,
                have / 1073741824.0);
  throw UsageError(what + msg + advice);
}

StarpuSession::StarpuSession(const char* default_policy, Init init, Shutdown shutdown) : shutdown_(shutdown) {
  try {  // a bad FNNDTPS_SIM_ setting: one line before StarPU starts
    if (codelets::simulation_perturbed() && !kSimulated)
      std::fprintf(stderr, "note: FNNDTPS_SIM_NOISE/FNNDTPS_SIM_SLOWDOWN act in the simulation build only; ignored here\n");
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const char* sched = std::getenv("STARPU_SCHED");
  if (sched && *sched) check_policy_name(sched);
  check_starpu_files();
  const int want_cuda = env_int("STARPU_NCUDA", -1);
  // The application's thread submits every task and must keep the GPU fed: on a node whose
  // cores are all StarPU workers it competes with them for a core (bench/RESULTS.md K). So,
  // as StarPU offers, it gets a core of its own, subtracted from the
  // CPU workers, where there are enough cores for one to spare; STARPU_MAIN_THREAD_BIND=0
  // gives it back. Not simulated: the simulated node's workers are its platform's.
  if (!kSimulated && sysconf(_SC_NPROCESSORS_ONLN) >= kMinCoresToReserve) setenv("STARPU_MAIN_THREAD_BIND", "1", 0);
  starpu_conf conf;
  starpu_conf_init(&conf);
  // Our policies without STARPU_SCHED_LIB. StarPU re-reads STARPU_SCHED inside starpu_init
  // and warns that it does not know the name, so hide the variable during the call.
  const std::string ours = sched::use_policy_from_env(&conf) ? sched : "";
  if (default_policy && (!sched || !*sched)) {
    conf.sched_policy = sched::find_policy(default_policy);
    conf.sched_policy_name = nullptr;
  }
  // A trace: the policy chosen above, or the one STARPU_SCHED names, wrapped (trace.hpp).
  std::string trace = trace_file;
  if (const char* env = std::getenv(sched::trace::kEnv); trace.empty() && env && *env) {
    if (const std::string why = sched::trace::check_path(env); !why.empty())
      throw UsageError(std::string(sched::trace::kEnv) + "=" + env + ": " + why);
    trace = env;
  }
  const std::string named = sched && *sched ? sched : "";
  bool traced = false;
  if (!trace.empty() && named != "help") {
    starpu_sched_policy* base = conf.sched_policy ? conf.sched_policy : policy_named(named.c_str());
    if (starpu_sched_policy* t = base ? sched::trace::wrap(base, trace) : nullptr) {
      conf.sched_policy = t;
      conf.sched_policy_name = nullptr;
      traced = true;
    } else {
      std::fprintf(stderr, "note: policy '%s' comes from STARPU_SCHED_LIB and is not traced\n", named.c_str());
    }
  }
  const bool hide = !ours.empty() || (traced && !named.empty());
  if (hide) unsetenv("STARPU_SCHED");
  const int rc = init(&conf);
  if (hide) setenv("STARPU_SCHED", named.c_str(), 1);
  if (rc == -ENODEV) throw std::runtime_error("StarPU found no worker to run on (check STARPU_NCPU and STARPU_NCUDA)");
  if (rc != 0) throw std::runtime_error("starpu_init failed (" + std::to_string(rc) + ")");
  if (want_cuda > 0 && cuda_workers() < unsigned(want_cuda)) {
    const unsigned have = cuda_workers();
    shutdown_();
    throw UsageError("STARPU_NCUDA=" + std::to_string(want_cuda) + " asked for CUDA workers but " +
                     std::to_string(have) + " are available (no GPU, or a StarPU built without CUDA); " +
                     "unset STARPU_NCUDA or set it to 0");
  }
  // StarPU allocates what a task needs in main memory and has no buffer for there (a handle
  // registered without memory, first used by a core) pinned where CUDA exists (cudaHostAlloc).
  // FNNDTPS_PIN_TEMPS=0: plain memory instead. Set before any handle is registered, so that
  // every main-memory buffer StarPU allocates is freed with the flags it was allocated with.
  if (!env_switch("FNNDTPS_PIN_TEMPS", true)) starpu_malloc_on_node_set_default_flags(STARPU_MAIN_RAM, STARPU_MALLOC_COUNT);
}

StarpuSession::~StarpuSession() { shutdown_(); }

std::unique_ptr<StarpuSession> start_beside(const std::function<void()>& work, std::initializer_list<FileBuffer*> pin,
                                            const char* default_policy,
                                            const std::function<void(StarpuSession&)>& paused,
                                            const std::function<void(StarpuSession&)>& running) {
  std::vector<FileBuffer*> to_pin(pin);
  auto started = std::async(std::launch::async, [&] {
    auto s = std::make_unique<StarpuSession>(default_policy);
    if (running) running(*s);
    starpu_pause();
    for (FileBuffer* b : to_pin) b->pin(*s);
    return s;
  });
  std::exception_ptr failed;
  try {
    work();
  } catch (...) {
    failed = std::current_exception();
  }
  std::unique_ptr<StarpuSession> s = started.get();  // the start's error, if any, first
  if (!failed && paused) {
    try {
      paused(*s);
    } catch (...) {
      failed = std::current_exception();
    }
  }
  starpu_resume();
  if (failed) {
    for (FileBuffer* b : to_pin) b->unpin();
    std::rethrow_exception(failed);  // `s` stops StarPU on the way out
  }
  const char* bind = std::getenv("STARPU_MAIN_THREAD_BIND");
  if (bind && std::atoi(bind) > 0) starpu_bind_thread_on_main();
  return s;
}

std::string StarpuSession::policy() const {
  starpu_sched_policy* p = starpu_sched_get_sched_policy();
  return p && p->policy_name ? p->policy_name : "?";
}
void StarpuSession::end_job() const { sched::end_batch_now(); }
void StarpuSession::end_job(double own_end_us) const { sched::end_batch_at(own_end_us); }
unsigned StarpuSession::cpu_workers() const { return starpu_cpu_worker_get_count(); }
unsigned StarpuSession::cuda_workers() const { return starpu_cuda_worker_get_count(); }

}  // namespace apps
