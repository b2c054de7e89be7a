// The apps' outputs: a destination checked before any work, and a folder's set of files moved
// into place all or none; single files are replaced whole by base::AtomicFile.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/atomic_file.hpp"

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

// Temporaries that a signal removes (base/atomic_file.hpp).
using base::InFlight;
using base::remove_temporaries_on_signal;

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
