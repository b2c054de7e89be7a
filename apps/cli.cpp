#include "apps/cli.hpp"

#include "base/atomic_file.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

namespace apps {

void parse_flags(int argc, char** argv, int first, const std::vector<Flag>& flags, const std::string& command) {
  const std::string tail = (command.empty() ? "" : " for " + command) + " (see --help)";
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i], value;
    if (a.size() < 2 || a[0] != '-') throw UsageError("unexpected argument '" + a + "'" + tail);
    const std::size_t eq = a.compare(0, 2, "--") == 0 ? a.find('=') : std::string::npos;
    if (eq != std::string::npos) value = a.substr(eq + 1), a.resize(eq);
    const Flag* f = nullptr;
    for (const Flag& g : flags)
      if (g.name == a) f = &g;
    if (!f) throw UsageError("unknown option '" + a + "'" + tail);
    if (!f->takes_value && eq != std::string::npos) throw UsageError(a + " takes no value");
    if (f->takes_value && eq == std::string::npos) {
      if (i + 1 >= argc) throw UsageError(a + " needs a value");
      value = argv[++i];
    }
    f->set(value);
  }
}

bool help_requested(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return true;
  return false;
}

long long parse_int(const std::string& flag, const std::string& v, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno == ERANGE)
    throw UsageError(flag + (lo > 0 ? " needs a positive integer" : " needs an integer") + ", got '" + v + "'");
  if (x < lo) throw UsageError(flag + " must be at least " + std::to_string(lo) + ", got " + v);
  if (x > hi) throw UsageError(flag + " must be at most " + std::to_string(hi) + ", got " + v);
  return x;
}

int parse_positive(const std::string& flag, const std::string& v) { return int(parse_int(flag, v, 1, INT_MAX)); }

std::pair<int, int> parse_size(const std::string& flag, const std::string& v) {
  const auto x = v.find('x');
  if (x == std::string::npos) {
    const int s = parse_positive(flag, v);
    return {s, s};
  }
  return {parse_positive(flag, v.substr(0, x)), parse_positive(flag, v.substr(x + 1))};
}

double parse_real(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0') throw UsageError(flag + " '" + v + "' is not a number");
  return x;
}

bool env_switch(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  if (std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0) return *v == '1';
  throw UsageError(std::string(name) + "='" + v + "' must be 0 or 1");
}

int run_main(const Program& p, int argc, char** argv, const std::function<int()>& body) {
  auto done = [&](int status) { return p.status ? p.status(status) : status; };
  if (help_requested(argc, argv)) {
    if (p.speaks) std::fputs(p.usage.c_str(), stdout);
    return done(0);
  }
  // Before StarPU starts: its SIGINT handler passes the signal on to the one it replaced, ours.
  base::remove_temporaries_on_signal();
  try {
    return done(body());
  } catch (const UsageError& e) {
    std::fflush(stdout);
    if (p.speaks) std::fprintf(stderr, "%s: %s\n", p.name, e.what());
    return done(2);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", p.name, e.what());
    return done(1);
  } catch (...) {
    std::fprintf(stderr, "%s: unexpected failure\n", p.name);
    return done(1);
  }
}

}  // namespace apps
