#include "scheduler/report.hpp"

#include <cstdio>
#include <string>

#include "scheduler/emulation.hpp"

namespace sched::report {

using namespace state;

namespace {

// Per codelet, per worker: tasks, busy time, share of the codelet's work, speed, CP.
void codelet(Policy& p, CodeletState& c) {
  double total = 0;
  for (const WorkerSlot& s : p.workers) total += get(c.done[std::size_t(s.id)].work);
  const double alpha = get(c.alpha);
  std::fprintf(stderr, "  codelet %s", c.name.c_str());
  if (alpha >= 0) std::fprintf(stderr, ": CPU-class share alpha %.4f (DTPS)", alpha);
  const int alone = c.alone.load(std::memory_order_relaxed);
  // The codelet's rates' verdict; push decides a task by its own times where every arch knows them.
  std::fprintf(stderr, "%s\n", alone < 0 ? "" : alone ? ", GPU class alone without a plan (by its rates)" : ", CPU class alone without a plan (by its rates)");
  {
    ReadLock g(c.costs_lock);
    for (std::size_t a = 0; a < c.costs.archs(); ++a)
      std::fprintf(stderr, "    cost on %s: %.4g us + work / %.4g per us (%s)\n", c.costs.arch_name(a).c_str(),
                   c.costs.fixed_us(a), c.costs.throughput(a),
                   c.costs.sizes(a) ? ("fitted to " + std::to_string(c.costs.sizes(a)) + " sizes").c_str() : "prior");
  }
  std::fprintf(stderr, "    %-22s %8s %11s %7s %14s %6s\n", "worker", "tasks", "busy ms", "share", "speed work/us", "CP");
  for (WorkerSlot& s : p.workers) {
    const auto w = std::size_t(s.id);
    if (!s.ever_member) continue;
    char name[64];
    starpu_worker_get_name(s.id, name, sizeof name);
    const CodeletState::Done& d = c.done[w];
    std::fprintf(stderr, "    %-22s %8ld %11.2f %7.3f %14.4g %6.3f\n", name, d.runs.load(), get(d.busy_us) / 1e3,
                 total > 0 ? get(d.work) / total : 0.0, get(c.speed[w]), get(c.cp_now[w]));
  }
}

}  // namespace

// FNNDTPS_VERBOSE: per batch, what re-balancing moved and, per codelet the batch ran, each
// worker's tasks, speed and predicted CP. Under batch_mutex.
void batch(Policy& p) {
  const long moved = p.moved.load(std::memory_order_relaxed);
  std::fprintf(stderr, "fnndtps: batch %d: %ld tasks moved by re-balancing\n", p.batch.ended, moved - p.moved_reported);
  p.moved_reported = moved;
  std::string busy;
  char b[48];
  for (const WorkerSlot& s : p.workers)
    if (s.member && get(s.batch.busy_us) > 0) std::snprintf(b, sizeof b, " %d:%.2f", s.id, get(s.batch.busy_us) / 1e3), busy += b;
  if (!busy.empty()) std::fprintf(stderr, "fnndtps:   busy ms per worker:%s\n", busy.c_str());
  p.codelets.each([&](CodeletState& c) {
    std::string line;
    char buf[96];
    for (const WorkerSlot& s : p.workers) {
      const auto w = std::size_t(s.id);
      if (!s.member || get(c.done[w].batch_work) <= 0) continue;
      std::snprintf(buf, sizeof buf, " %d:%.4g/%.3f", s.id, get(c.speed[w]), get(c.cp_now[w]));
      line += buf;
    }
    if (!line.empty()) std::fprintf(stderr, "fnndtps:   %s worker:speed/CP%s\n", c.name.c_str(), line.c_str());
  });
}

void summary(Policy& p) {
  std::fprintf(stderr, "fnndtps summary: policy %s, %d batches, %ld tasks moved by re-balancing%s%s\n",
               to_string(p.source), p.batch.ended, p.moved.load(), emu::configured() ? ", " : "", emu::describe().c_str());
  std::fprintf(stderr, "  %-24s %8s %12s %14s %10s %9s %8s  %s\n", "worker", "tasks", "busy ms", "work", "F GFLOP/s",
               "M GiB", "P", "UF, UM read from");
  for (WorkerSlot& s : p.workers) {
    if (!s.ever_member) continue;
    char name[64];
    starpu_worker_get_name(s.id, name, sizeof name);
    const RawFeatures f = p.probe->static_features(std::size_t(s.id));  // the FNN's F, M, P (DESIGN §5)
    const std::size_t w = std::size_t(s.id);
    std::fprintf(stderr, "  %-24s %8lu %12.2f %14.4g %10.0f %9.1f %8.0f  %s, %s\n", name, s.tasks, s.busy_us / 1e3,
                 s.work, f.F, f.M / double(1ull << 30), f.P, source_name(p.probe->uf_source(w)),
                 source_name(p.probe->um_source(w)));
  }
  p.codelets.each([&](CodeletState& c) { codelet(p, c); });
  // Host time in our callbacks, real time even in simulation: what the policy itself costs.
  std::string spent;
  for (int k = 0; k < kCallbacks; ++k) {
    Spent sum;
    if (k == kPush) sum.calls = p.app_spent.calls.load(), sum.ns = p.app_spent.ns.load();
    for (const WorkerSlot& s : p.workers) sum.calls += s.spent[std::size_t(k)].calls, sum.ns += s.spent[std::size_t(k)].ns;
    char b[96];
    std::snprintf(b, sizeof b, "%s %s %ld x %.2f us", k ? "," : "", kCallbackNames[k], sum.calls,
                  sum.calls ? double(sum.ns) * 1e-3 / double(sum.calls) : 0.0);
    spent += b;
  }
  std::fprintf(stderr, "  host time in callbacks:%s\n", spent.c_str());
  for (const std::string& line : p.log) std::fprintf(stderr, "  %s\n", line.c_str());
  if (uses_dtps(p))
    for (const std::string& k : p.dtps.kinds())
      std::fprintf(stderr, "  dtps %s: alpha %.4f (CPU class), turn %d\n", k.c_str(), p.dtps.find(k)->alpha(),
                   p.dtps.find(k)->turn());
}

}  // namespace sched::report
