#include "base/host_threads.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace base {

namespace {

// Read during static initialisation, before main and so before StarPU binds the main thread.
struct StartCores {
  cpu_set_t set;
  bool known = false;
  unsigned count = 1;
  StartCores() {
    CPU_ZERO(&set);
    known = sched_getaffinity(0, sizeof set, &set) == 0;
    const int n = known ? CPU_COUNT(&set) : 0;
    count = n > 0 ? unsigned(n) : std::max(1u, std::thread::hardware_concurrency());
  }
};

const StartCores& start_cores() {
  static const StartCores cores;
  return cores;
}
const StartCores& kReadBeforeMain = start_cores();

}  // namespace

unsigned host_threads() { return start_cores().count; }

void run_on_host_threads(unsigned threads, const std::function<void(unsigned)>& f) {
  const StartCores& cores = start_cores();
  std::vector<std::exception_ptr> errors(threads);
  const auto body = [&](unsigned t) {
    if (cores.known) pthread_setaffinity_np(pthread_self(), sizeof cores.set, &cores.set);
    try {
      f(t);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  unsigned started = 0;
  for (; started < threads; ++started) {
    try {
      pool.emplace_back(body, started);
    } catch (const std::system_error&) {
      break;  // no more threads: the caller runs the rest
    }
  }
  for (unsigned t = started; t < threads; ++t) {
    try {
      f(t);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  }
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace base
