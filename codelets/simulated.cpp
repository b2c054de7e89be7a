#include "codelets/simulated.hpp"

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace codelets {
namespace {

struct Perturbation {
  double noise = 0;
  int slow_worker = -1;
  double factor = 1, after_us = 0;
  unsigned seed = 1;
  bool any() const { return noise > 0 || slow_worker >= 0; }
};

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument(what); }

double number(const char* name, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !std::isfinite(x) || x < 0) bad(std::string(name) + " '" + v + "' is not a number >= 0");
  return x;
}

const Perturbation& perturbation() {
  static const Perturbation p = [] {
    Perturbation q;
    if (const char* v = std::getenv("FNNDTPS_SIM_NOISE"); v && *v) q.noise = number("FNNDTPS_SIM_NOISE", v);
    if (const char* v = std::getenv("FNNDTPS_SIM_SEED"); v && *v) q.seed = unsigned(number("FNNDTPS_SIM_SEED", v));
    if (const char* v = std::getenv("FNNDTPS_SIM_SLOWDOWN"); v && *v) {
      const std::string s = v;
      const auto colon = s.find(':'), at = s.find('@');
      if (colon == std::string::npos) bad("FNNDTPS_SIM_SLOWDOWN '" + s + "' is not WORKER:FACTOR[@MS]");
      const double w = number("FNNDTPS_SIM_SLOWDOWN worker", s.substr(0, colon));
      if (w != std::floor(w) || w >= STARPU_NMAXWORKERS) bad("FNNDTPS_SIM_SLOWDOWN worker '" + s.substr(0, colon) + "' is not a worker number");
      q.slow_worker = int(w);
      q.factor = number("FNNDTPS_SIM_SLOWDOWN factor", s.substr(colon + 1, at == std::string::npos ? std::string::npos : at - colon - 1));
      if (q.factor < 1) bad("FNNDTPS_SIM_SLOWDOWN factor must be >= 1");
      if (at != std::string::npos) q.after_us = 1e3 * number("FNNDTPS_SIM_SLOWDOWN ms", s.substr(at + 1));
    }
    return q;
  }();
  return p;
}

}  // namespace

bool simulation_perturbed() { return perturbation().any(); }

void simulate_task(void* /*buffers*/[], void* /*cl_arg*/) {
  const Perturbation& p = perturbation();
  starpu_task* task = starpu_task_get_current();
  const int w = starpu_worker_get_id_check();
  double us = starpu_task_worker_expected_length(task, unsigned(w), task->sched_ctx, 0);
  if (!std::isfinite(us) || us < 0) us = 0;
  // One generator per worker, seeded by the seed and the worker: the simulation runs the same
  // tasks on the same workers in the same order, so a run repeats exactly.
  static std::vector<std::mt19937> rng = [&] {
    std::vector<std::mt19937> r;
    for (unsigned i = 0; i < starpu_worker_get_count(); ++i) r.emplace_back(p.seed * 7919u + i);
    return r;
  }();
  if (p.noise > 0) us *= 1 + p.noise * std::fabs(std::normal_distribution<double>(0, 1)(rng[std::size_t(w)]));
  if (w == p.slow_worker && starpu_timing_now() >= p.after_us) us *= p.factor;
  starpu_usleep(float(us));
}

}  // namespace codelets
