#include "scheduler/config.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace sched {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

double number(const char* name, double fallback, double lo, double hi) {
  const char* v = env(name);
  if (!v) return fallback;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (*end != '\0' || !std::isfinite(x) || x < lo || x > hi)
    throw std::invalid_argument(std::string(name) + "='" + v + "' must be a number in [" + std::to_string(lo) +
                                ", " + std::to_string(hi) + "]");
  return x;
}

int integer(const char* name, int fallback, int lo, int hi) {
  const char* v = env(name);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || errno == ERANGE || x < lo || x > hi)
    throw std::invalid_argument(std::string(name) + "='" + v + "' must be a whole number in [" + std::to_string(lo) +
                                ", " + std::to_string(hi) + "]");
  return int(x);
}

bool flag(const char* name, bool fallback) {
  const char* v = env(name);
  if (!v) return fallback;
  const std::string s = v;
  if (s == "1" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "no" || s == "off") return false;
  throw std::invalid_argument(std::string(name) + "='" + v + "' must be 0 or 1");
}

}  // namespace

Config Config::from_env() {
  Config c;
  c.threshold = number("FNNDTPS_THRESHOLD", c.threshold, 0.0, 1e9);
  c.hidden = integer("FNNDTPS_HIDDEN", c.hidden, 1, 64);
  c.batch_gap_us = 1e3 * number("FNNDTPS_BATCH_GAP_MS", c.batch_gap_us / 1e3, 0.0, 1e6);
  c.nap_us = number("FNNDTPS_IDLE_NAP_US", c.nap_us, 0.0, 1e6);
  c.summary = flag("FNNDTPS_SUMMARY", c.summary);
  c.verbose = flag("FNNDTPS_VERBOSE", c.verbose);
  c.save = flag("FNNDTPS_SAVE", c.save);
  if (env("FNNDTPS_REBALANCE")) c.rebalance = flag("FNNDTPS_REBALANCE", true) ? 1 : 0;
  if (const char* d = env("FNNDTPS_MODEL_DIR")) {
    c.model_dir = d;
  } else if (const char* x = env("XDG_CACHE_HOME")) {
    c.model_dir = std::string(x) + "/fnndtps/models";
  } else if (const char* h = env("HOME")) {
    c.model_dir = std::string(h) + "/.cache/fnndtps/models";
  } else {
    c.model_dir = ".fnndtps-models";
  }
  return c;
}

}  // namespace sched
