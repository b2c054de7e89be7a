#include "scheduler/trace.hpp"

#include <starpu_profiling.h>
#include <starpu_scheduler.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/atomic_file.hpp"
#include "scheduler/simulated.hpp"

namespace sched::trace {
namespace {

struct Event {
  int name;  // index into the recording worker's name table
  int worker, unit, level;
  double start_us, end_us;
  // From StarPU's profiling: when the policy's push began (the task was ready; < 0: never
  // pushed, as a task given to a named worker), the push's own time, the wait for its data.
  double pushed_us, push_us, fetch_us;
  long long bytes_in;  // < 0: unknown
};

// One worker's events and the codelet names they use, written only by that worker's thread.
struct Row {
  std::vector<Event> events;
  std::vector<std::pair<const char*, int>> seen;  // name pointer -> index in `names`
  std::vector<std::string> names;                 // copies: a program may free its codelets
  int intern(const char* s) {
    for (const auto& [p, i] : seen)
      if (p == s) return i;
    names.emplace_back(s);
    seen.emplace_back(s, int(names.size()) - 1);
    return int(names.size()) - 1;
  }
};

// Push-time snapshots for bytes_in, sharded by task so that pushes on several threads rarely
// meet on one mutex. missing[n]: bytes of the task's read buffers not valid on node n.
constexpr int kShards = 64;
struct Shard {
  std::mutex m;
  std::unordered_map<const starpu_task*, std::vector<long long>> missing;
};

struct Span {
  std::string name;
  double start_us, end_us;
  bool timed;
};

struct Recorder {
  std::string path, policy, program;
  starpu_sched_policy inner{}, outer{};
  std::array<Row, STARPU_NMAXWORKERS> rows;
  Row others;  // tasks ended off their worker's thread
  std::mutex others_m;
  std::array<Shard, kShards> shards;
  std::vector<std::string> worker_names;
  std::vector<Span> spans;
  std::mutex spans_m;
  int contexts = 0;
  std::mutex ctx_m;
};

Recorder* rec = nullptr;  // set once, before StarPU starts; never freed (policies outlive it)
Describer describer = nullptr;

Shard& shard_of(const starpu_task* t) { return rec->shards[(reinterpret_cast<std::uintptr_t>(t) >> 6) % kShards]; }

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (const unsigned char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += char(c);
    else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else o += char(c);
  }
  return o + "\"";
}

const char* task_name(const starpu_task* t) {
  if (t->name) return t->name;
  if (t->cl && t->cl->name) return t->cl->name;
  if (t->cl && t->cl->model && t->cl->model->symbol) return t->cl->model->symbol;
  return "task";
}

void init_hook(unsigned ctx) {
  {
    std::lock_guard<std::mutex> lock(rec->ctx_m);
    if (rec->contexts++ == 0)
      for (unsigned w = 0; w < starpu_worker_get_count(); ++w) rec->rows[w].events.reserve(8192);
  }
  if (rec->inner.init_sched) rec->inner.init_sched(ctx);
}

int push_hook(starpu_task* task) {
  if (task->cl) {
    const unsigned nodes = starpu_memory_nodes_get_count();
    std::vector<long long> missing(nodes, 0);
    const unsigned nbuf = STARPU_TASK_GET_NBUFFERS(task);
    for (unsigned i = 0; i < nbuf; ++i) {
      starpu_data_handle_t h = STARPU_TASK_GET_HANDLE(task, i);
      if (!h || !(STARPU_TASK_GET_MODE(task, i) & STARPU_R)) continue;
      const long long size = (long long)starpu_data_get_size(h);
      for (unsigned n = 0; n < nodes; ++n) {
        int allocated = 0, valid = 0, requested = 0;
        starpu_data_query_status(h, int(n), &allocated, &valid, &requested);
        if (!valid) missing[n] += size;
      }
    }
    Shard& s = shard_of(task);
    std::lock_guard<std::mutex> lock(s.m);
    s.missing[task] = std::move(missing);
  }
  return rec->inner.push_task(task);
}

void post_exec_hook(starpu_task* task, unsigned ctx) {
  if (const starpu_profiling_task_info* p = task->profiling_info; p && p->workerid >= 0) {
    Event e{};
    e.worker = p->workerid;
    e.start_us = starpu_timing_timespec_to_us(const_cast<timespec*>(&p->start_time));
    e.end_us = starpu_timing_timespec_to_us(const_cast<timespec*>(&p->end_time));
    const auto us = [](const timespec& t) { return starpu_timing_timespec_to_us(const_cast<timespec*>(&t)); };
    const bool pushed = p->push_start_time.tv_sec != 0 || p->push_start_time.tv_nsec != 0;
    e.pushed_us = pushed ? us(p->push_start_time) : -1;
    e.push_us = pushed ? us(p->push_end_time) - e.pushed_us : 0;
    e.fetch_us = us(p->acquire_data_end_time) - us(p->acquire_data_start_time);
    e.unit = e.level = -1;
    if (describer) describer(task, &e.unit, &e.level);
    e.bytes_in = -1;
    {
      Shard& s = shard_of(task);
      std::lock_guard<std::mutex> lock(s.m);
      if (auto it = s.missing.find(task); it != s.missing.end()) {
        const unsigned node = starpu_worker_get_memory_node(unsigned(e.worker));
        if (node < it->second.size()) e.bytes_in = it->second[node];
        s.missing.erase(it);
      }
    }
    if (starpu_worker_get_id() == e.worker) {
      Row& r = rec->rows[std::size_t(e.worker)];
      e.name = r.intern(task_name(task));
      r.events.push_back(e);
    } else {
      std::lock_guard<std::mutex> lock(rec->others_m);
      e.name = rec->others.intern(task_name(task));
      rec->others.events.push_back(e);
    }
  }
  if (rec->inner.post_exec_hook) rec->inner.post_exec_hook(task, ctx);
}

void fail(const std::string& what) {
  std::fprintf(stderr, "fnndtps: trace %s: %s\n", rec->path.c_str(), what.c_str());
  std::fflush(nullptr);
  _exit(1);
}

void write() {
  rec->worker_names.clear();  // here: StarPU names its workers as their drivers start
  for (unsigned w = 0; w < starpu_worker_get_count(); ++w) {
    char name[128];
    starpu_worker_get_name(int(w), name, sizeof name);
    rec->worker_names.emplace_back(name);
  }
  base::AtomicFile file(rec->path);
  std::FILE* f = file.open();
  if (!f) fail(std::strerror(errno));
  double first = -1, last = 0;
  long tasks = 0;
  auto each_row = [&](auto fn) {
    for (const Row& r : rec->rows) fn(r);
    fn(rec->others);
  };
  each_row([&](const Row& r) {
    for (const Event& e : r.events) {
      if (first < 0 || e.start_us < first) first = e.start_us;
      if (e.end_us > last) last = e.end_us;
      ++tasks;
    }
  });
  const int runs_tid = int(rec->worker_names.size());
  std::fprintf(f, "{\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"policy\":%s,\"program\":%s,\"workers\":%zu,"
               "\"tasks\":%ld,\"first_start_us\":%.3f,\"makespan_us\":%.3f,\"clock\":\"StarPU's, us since its init\"},\n"
               "\"traceEvents\":[\n",
               json_string(rec->policy).c_str(), json_string(rec->program).c_str(), rec->worker_names.size(), tasks,
               first < 0 ? 0.0 : first, first < 0 ? 0.0 : last - first);
  std::fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":%s}}",
               json_string(rec->program + " under " + rec->policy).c_str());
  for (std::size_t w = 0; w < rec->worker_names.size(); ++w) {
    std::fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%zu,\"args\":{\"name\":%s}}", w,
                 json_string(rec->worker_names[w]).c_str());
    std::fprintf(f, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":%zu,\"args\":{\"sort_index\":%zu}}", w, w);
  }
  if (!rec->spans.empty())
    std::fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"args\":{\"name\":\"runs\"}}", runs_tid);
  each_row([&](const Row& r) {
    for (const Event& e : r.events) {
      std::fprintf(f, ",\n{\"name\":%s,\"cat\":\"task\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{",
                   json_string(r.names[std::size_t(e.name)]).c_str(), e.worker, e.start_us, e.end_us - e.start_us);
      const char* sep = "";
      if (e.unit >= 0) std::fprintf(f, "\"unit\":%d", e.unit), sep = ",";
      if (e.level >= 0) std::fprintf(f, "%s\"level\":%d", sep, e.level), sep = ",";
      if (e.bytes_in >= 0) std::fprintf(f, "%s\"bytes_in\":%lld", sep, e.bytes_in), sep = ",";
      if (e.pushed_us >= 0) std::fprintf(f, "%s\"pushed_us\":%.3f,\"push_us\":%.3f", sep, e.pushed_us, e.push_us), sep = ",";
      std::fprintf(f, "%s\"fetch_us\":%.3f", sep, e.fetch_us);
      std::fputs("}}", f);
    }
  });
  for (const Span& s : rec->spans)
    std::fprintf(f, ",\n{\"name\":%s,\"cat\":\"%s\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}",
                 json_string(s.name).c_str(), s.timed ? "run" : "untimed", runs_tid, s.start_us, s.end_us - s.start_us);
  std::fputs("\n]}\n", f);
  if (const int err = file.commit()) {
    file.discard();  // fail() ends the process without unwinding
    fail(std::strerror(err));
  }
  std::fprintf(stderr, "fnndtps: wrote trace %s (%ld tasks)\n", rec->path.c_str(), tasks);
}

void deinit_hook(unsigned ctx) {
  if (rec->inner.deinit_sched) rec->inner.deinit_sched(ctx);
  std::lock_guard<std::mutex> lock(rec->ctx_m);
  if (--rec->contexts == 0) write();
}

}  // namespace

std::string check_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) return "no file named";
  std::error_code ec;
  if (fs::is_directory(path, ec)) return "'" + path + "' is a folder";
  const fs::path dir = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  if (!fs::is_directory(dir, ec)) return "its folder '" + dir.string() + "' does not exist";
  const std::string probe = path + ".probe-" + std::to_string(getpid());
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (!f) return "'" + dir.string() + "' takes no new file (" + std::strerror(errno) + ")";
  std::fclose(f);
  std::remove(probe.c_str());
  return "";
}

// Under an MPI launcher with several ranks, each rank writes its own file: FILE.json becomes
// FILE.rank<r>.json (the launchers' environment, read before MPI_Init: StarPU may start first;
// under SMPI, whose ranks share one process, the rank's simulated hosts).
std::string rank_path(const std::string& path) {
  const char* rank = nullptr;
  const char* size = nullptr;
  for (const auto& [r, n] : {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, std::pair{"PMI_RANK", "PMI_SIZE"}})
    if (std::getenv(r) && std::getenv(n)) {
      rank = std::getenv(r);
      size = std::getenv(n);
      break;
    }
#ifdef STARPU_SIMGRID
  const std::string simulated_rank = simulated::rank();
  if (!simulated_rank.empty()) rank = simulated_rank.c_str(), size = "2";
#endif
  if (!rank || std::atoi(size) <= 1) return path;
  const std::size_t dot = path.rfind('.'), slash = path.rfind('/');
  const bool ext = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return ext ? path.substr(0, dot) + ".rank" + rank + path.substr(dot) : path + ".rank" + rank;
}

starpu_sched_policy* wrap(const starpu_sched_policy* inner, const std::string& path) {
  if (!inner) return nullptr;
  if (rec) return rec->policy == (inner->policy_name ? inner->policy_name : "?") ? &rec->outer : nullptr;
  rec = new Recorder;
  rec->path = rank_path(path);
  rec->policy = inner->policy_name ? inner->policy_name : "?";
  rec->program = program_invocation_short_name;
  rec->inner = *inner;
  rec->outer = *inner;
  rec->outer.init_sched = init_hook;
  rec->outer.deinit_sched = deinit_hook;
  rec->outer.post_exec_hook = post_exec_hook;
  if (inner->push_task) rec->outer.push_task = push_hook;
  setenv("STARPU_PROFILING", "1", 1);  // read by starpu_init after it picked the policy
  return &rec->outer;
}

bool on() { return rec != nullptr; }

void set_describer(Describer d) { describer = d; }

void add_span(const std::string& name, double start_us, double end_us, bool timed) {
  if (!rec) return;
  std::lock_guard<std::mutex> lock(rec->spans_m);
  rec->spans.push_back({name, start_us, end_us, timed});
}

}  // namespace sched::trace
