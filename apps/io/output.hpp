// The apps' outputs: a destination checked before any work, temporaries that a signal does not
// leave behind, and a folder's set of files moved into place all or none.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace io {

// A destination that cannot be written, found before any work: the apps end with exit status
// 2, as for other bad input. what(): one line, "<path>: <what is wrong>; <what to do>".
class OutputPathError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `path` can become a file: it is not a folder or a special file, and its folder exists and
// takes a new file (tried by creating and removing one). Throws OutputPathError.
void check_output_file(const std::string& path);
// `dir` is a folder that takes new files, or can be created in the nearest folder above it
// that exists. Throws OutputPathError.
void check_output_dir(const std::string& dir);

// A temporary being written, removed if SIGINT, SIGTERM or SIGHUP ends the program while it is
// registered: the handler removes every registered path with async-signal-safe calls, then
// gives the signal to the action it replaced (by default the program ends by the signal). A
// signal the program ignores when the handlers are installed stays ignored. Register before
// creating the path; the destructor unregisters (the owner has renamed or removed it by then).
class InFlight {
 public:
  enum Kind { kFile, kFolder };  // a folder is removed with what it holds
  explicit InFlight(const std::string& path, Kind kind = kFile);
  ~InFlight();
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  int slot_;  // -1: too many in flight or too long a path, not protected
};
// Installs the handlers (once; InFlight does it too). The apps call it before StarPU starts:
// StarPU's SIGINT handler passes the signal on to the one it replaced, ours.
void remove_temporaries_on_signal();

// Files of one run, written into a staging folder inside `out_dir` and moved into place all or
// none. The staging folder goes with the object (and on a signal, as an InFlight).
class Staging {
 public:
  // Creates `out_dir` (and the folders above it) where missing; OutputError on failure.
  explicit Staging(const std::string& out_dir);
  // Removes the staging folder, and the folders the constructor created unless commit() ran
  // (where they are empty).
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  // Where to write the file `name` (a plain name).
  std::string path(const std::string& name);
  // Moves every file named through path() into `out_dir`, replacing files of the same names.
  // Where one cannot move, the ones moved are taken back and the files they replaced
  // restored, and OutputError names the failure. Returns the final paths.
  std::vector<std::string> commit();

 private:
  std::string out_dir_, dir_, created_;  // created_: the topmost folder the constructor made
  std::vector<std::string> names_;
  bool committed_ = false;
  std::unique_ptr<InFlight> guard_;
};

}  // namespace io
