#include "scheduler/emulation.hpp"

#include <starpu.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

// StarPU's clock and sleep: simulated time under its SimGrid build (DESIGN §8), where a real
// sleep would stall the simulation instead of stretching the task.
namespace emu {
namespace {

struct State {
  std::map<int, double> factors;
  long after_tasks = 0;
  double after_ms = 0;
  std::string text;
  std::set<int> gpu_class;
  std::string gpu_text;
  double corun = 1;
  std::atomic<long> tasks{0};
  std::atomic<double> t0_us{-1};  // the first task's start, -1 before
};

double parse_number(const std::string& what, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0') throw std::invalid_argument(what + " '" + v + "' is not a number");
  return x;
}

// A count in [0, 1e15]: whole, finite (NaN fails every comparison, so it is refused too).
long parse_count(const std::string& what, const std::string& v) {
  const double x = parse_number(what, v);
  if (!(x >= 0 && x <= 1e15) || x != std::floor(x))
    throw std::invalid_argument(what + " '" + v + "' must be a whole number in [0, 1e15]");
  return long(x);
}

// StarPU's worker ids are small, and a factor above 1e6 (a 1 ms task stretched past 16 minutes)
// is a typo, not an emulation.
constexpr double kMaxWorker = (1 << 20) - 1, kMaxFactor = 1e6;

void load(State& s) {
  s.factors.clear();
  s.after_tasks = 0;
  s.after_ms = 0;
  s.text.clear();
  s.gpu_class.clear();
  s.gpu_text.clear();
  s.tasks = 0;
  s.t0_us = -1;
  s.corun = 1;
  if (const char* v = std::getenv("FNNDTPS_CORUN_SLOWDOWN"); v && *v) {
    s.corun = parse_number("FNNDTPS_CORUN_SLOWDOWN", v);
    if (!(s.corun >= 1 && s.corun <= kMaxFactor))
      throw std::invalid_argument("FNNDTPS_CORUN_SLOWDOWN '" + std::string(v) + "' must be a factor in [1, 1e6]");
  }
  if (const char* v = std::getenv("FNNDTPS_EMULATED_GPUS"); v && *v) {
    s.gpu_text = v;
    std::stringstream in(v);
    std::string item;
    while (std::getline(in, item, ',')) {
      const double w = parse_number("FNNDTPS_EMULATED_GPUS worker", item);
      if (!(w >= 0 && w <= kMaxWorker) || w != std::floor(w))
        throw std::invalid_argument("FNNDTPS_EMULATED_GPUS entry '" + item + "' is not a worker number");
      s.gpu_class.insert(int(w));
    }
  }
  // Checked whether or not FNNDTPS_SLOWDOWN is set: a bad value is refused, never ignored.
  if (const char* v = std::getenv("FNNDTPS_SLOWDOWN_AFTER_TASKS"); v && *v)
    s.after_tasks = parse_count("FNNDTPS_SLOWDOWN_AFTER_TASKS", v);
  if (const char* v = std::getenv("FNNDTPS_SLOWDOWN_AFTER_MS"); v && *v) {
    s.after_ms = parse_number("FNNDTPS_SLOWDOWN_AFTER_MS", v);
    if (!(s.after_ms >= 0 && s.after_ms <= 1e12))
      throw std::invalid_argument("FNNDTPS_SLOWDOWN_AFTER_MS '" + std::string(v) + "' must be milliseconds in [0, 1e12]");
  }
  const char* spec = std::getenv("FNNDTPS_SLOWDOWN");
  if (!spec || !*spec) return;
  s.text = spec;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto colon = item.find(':');
    if (colon == std::string::npos)
      throw std::invalid_argument("FNNDTPS_SLOWDOWN entry '" + item + "' is not worker:factor");
    const double w = parse_number("FNNDTPS_SLOWDOWN worker", item.substr(0, colon));
    const double f = parse_number("FNNDTPS_SLOWDOWN factor", item.substr(colon + 1));
    if (!(w >= 0 && w <= kMaxWorker) || w != std::floor(w) || !(f >= 1 && f <= kMaxFactor))
      throw std::invalid_argument("FNNDTPS_SLOWDOWN entry '" + item +
                                  "': workers are whole numbers >= 0, factors in [1, 1e6]");
    s.factors[int(w)] = f;
  }
}

State& state() {
  static State* s = [] {
    auto* st = new State;
    try {
      load(*st);
    } catch (const std::invalid_argument& e) {  // a bad setting ends the program with one line
      std::fprintf(stderr, "fnndtps: %s\n", e.what());
      std::exit(2);
    }
    return st;
  }();
  return *s;
}

bool switched_on(State& s) {
  if (s.tasks.load(std::memory_order_relaxed) < s.after_tasks) return false;
  if (s.after_ms <= 0) return true;
  const double t0 = s.t0_us.load(std::memory_order_relaxed);
  return t0 >= 0 && starpu_timing_now() - t0 >= 1e3 * s.after_ms;
}

void note_start(State& s) {
  double none = -1;
  if (s.t0_us.load(std::memory_order_relaxed) < 0) s.t0_us.compare_exchange_strong(none, starpu_timing_now());
}

}  // namespace

double factor(int worker) {
  State& s = state();
  if (s.factors.empty()) return 1.0;
  note_start(s);
  const auto it = s.factors.find(worker);
  return it == s.factors.end() || !switched_on(s) ? 1.0 : it->second;
}

double corun_factor() { return state().corun; }

bool configured() { return !state().factors.empty() || !state().gpu_class.empty() || state().corun > 1; }

bool gpu_class(int worker) { return state().gpu_class.count(worker) > 0; }

int last_gpu_class_worker() { return state().gpu_class.empty() ? -1 : *state().gpu_class.rbegin(); }

int last_slowdown_worker() { return state().factors.empty() ? -1 : state().factors.rbegin()->first; }

double stretch(int worker, double seconds, double extra) {
  State& s = state();
  const double f = factor(worker) * extra;
  s.tasks.fetch_add(1, std::memory_order_relaxed);
  if (f > 1.0 && seconds > 0) starpu_usleep(float((f - 1.0) * seconds * 1e6));
  return f;
}

std::string describe() {
  State& s = state();
  std::ostringstream o;
  if (!s.factors.empty()) {
    o << "emulated slowdown " << s.text;
    if (s.after_tasks > 0) o << " after " << s.after_tasks << " tasks";
    if (s.after_ms > 0) o << " after " << s.after_ms << " ms";
  }
  if (!s.gpu_class.empty()) o << (s.factors.empty() ? "" : ", ") << "emulated GPU class " << s.gpu_text;
  if (s.corun > 1) o << (o.tellp() > 0 ? ", " : "") << "emulated co-run slowdown " << s.corun << "x";
  return o.str();
}

void reload() { load(state()); }

}  // namespace emu
