// The programs' command lines, one parser for all (lwt2d, lwt2d-mpi, gemm, gemm-mpi, fnn-tool,
// perturb): a flag table per command, one --help and one bad-flag behaviour.
// Ours rather than CLI11: the apps' commands take per-command flags and their validation
// messages are precise one-liners that the tests and users rely on; CLI11's own messages,
// help formatter and exit codes would each need overriding to keep them, for a loop of 40 lines.
// The contract, for every program:
// - "--help" or "-h" anywhere: the usage on stdout, exit status 0;
// - a bad command line (unknown flag, missing value, bad value): one line on stderr,
//   "<program>: <what is wrong>", exit status 2; an unknown flag's line names it and --help;
// - another failure: one line on stderr, exit status 1.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace apps {

// A user error: the program prints "<program>: <what()>" and exits with status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One entry of a command's flag table: "--name" takes the next argument (or "--name=value")
// as its value, or none for a switch; `set` gets the value ("" for a switch) and throws
// UsageError for a bad one.
struct Flag {
  std::string name;
  bool takes_value;
  std::function<void(const std::string&)> set;
};
inline Flag value_flag(std::string name, std::function<void(const std::string&)> set) {
  return {std::move(name), true, std::move(set)};
}
inline Flag switch_flag(std::string name, bool& on) {
  return {std::move(name), false, [&on](const std::string&) { on = true; }};
}

// Applies argv[first..argc) to `flags`, in order; a flag given twice is set twice. `command`,
// where not empty, names the command in messages ("unknown option '--x' for forward").
void parse_flags(int argc, char** argv, int first, const std::vector<Flag>& flags,
                 const std::string& command = "");

// Whether "--help" or "-h" is among the arguments.
bool help_requested(int argc, char** argv);

// A command line's integer `v` for `flag` in [lo, hi]; UsageError otherwise.
long long parse_int(const std::string& flag, const std::string& v, long long lo, long long hi);
// A positive integer, at most INT_MAX.
int parse_positive(const std::string& flag, const std::string& v);
// A surface's size, "S" (S x S) or "RxC", each positive; UsageError naming `flag` otherwise.
std::pair<int, int> parse_size(const std::string& flag, const std::string& v);
// A real number (strtod's syntax).
double parse_real(const std::string& flag, const std::string& v);
// An environment switch `name`: `fallback` where unset or empty, else 0 or 1; UsageError otherwise.
bool env_switch(const char* name, bool fallback);

// What main does around the program's body.
struct Program {
  const char* name;   // prefixes every message: "lwt2d: ..."
  std::string usage;  // printed by --help
  // Whether this process prints the usage and usage errors (an MPI job's rank 0 alone).
  bool speaks = true;
  // Maps the exit status before main returns it (an MPI job's apps::mpi::exit_status).
  int (*status)(int) = nullptr;
};

// main's frame: --help, else body(), with the temporaries of the files it writes removed on a
// signal (base::remove_temporaries_on_signal); a UsageError it throws ends with status 2, another
// exception with 1, each as one line on stderr after what the body printed on stdout.
int run_main(const Program& p, int argc, char** argv, const std::function<int()>& body);

}  // namespace apps
