// Where a command's wall time goes, beyond the transforms the bench times: named phases, each
// the time since the previous mark, summed per name and printed in the order first seen as one
// line at the end. A user waits for the whole process (its start and stop, its files, StarPU's
// start and stop); bench/cold.py keeps the line in each process's log. Wall clock (steady), not
// StarPU's: under simulation this is still the process's own time.
#pragma once

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace apps {

class Phases {
 public:
  // The first phase, "exec", runs from the process's start (its start time in /proc/self/stat,
  // in clock ticks) to this constructor: the loader and static initialisation, CUDA's among it.
  Phases() : last_(Clock::now()) {
    const double ms = since_start_ms();
    if (ms >= 0) add("exec", ms);
  }

  // Ends the phase that ran since the last mark (or the constructor): its time goes to `name`.
  void mark(const std::string& name) {
    const Clock::time_point now = Clock::now();
    add(name, std::chrono::duration<double, std::milli>(now - last_).count());
    last_ = now;
  }

  // "time ms: exec 41, read 402, ..., total 7611", in the order the names were first marked.
  void print(const char* what) const {
    double total = 0;
    std::printf("%s time ms:", what);
    for (std::size_t i = 0; i < phases_.size(); ++i) {
      std::printf("%s %s %.0f", i ? "," : "", phases_[i].first.c_str(), phases_[i].second);
      total += phases_[i].second;
    }
    std::printf("; total %.0f\n", total);
  }

 private:
  using Clock = std::chrono::steady_clock;

  void add(const std::string& name, double ms) {
    for (auto& p : phases_)
      if (p.first == name) {
        p.second += ms;
        return;
      }
    phases_.emplace_back(name, ms);
  }

  // Field 22 of /proc/self/stat (after the command's parenthesised name) against the boot clock
  // it counts from; -1 where either is unavailable.
  static double since_start_ms() {
    std::ifstream f("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const std::size_t close = text.rfind(')');
    const long hz = sysconf(_SC_CLK_TCK);
    timespec boot{};
    if (close == std::string::npos || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return -1;
    std::istringstream rest(text.substr(close + 1));
    std::string field;
    for (int i = 3; i <= 22 && rest >> field; ++i) {
    }
    if (!rest) return -1;
    const double started_s = std::stod(field) / double(hz);
    const double ms = (double(boot.tv_sec) + double(boot.tv_nsec) * 1e-9 - started_s) * 1e3;
    return ms >= 0 ? ms : -1;
  }

  Clock::time_point last_;
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace apps
