// Files replaced whole, for every file the project writes (the apps' arrays, surfaces and
// views, the FNN and DTPS model files, traces): one temporary-and-rename writer, and the
// temporaries a signal must not leave behind. The lowest layer: fnn, the scheduler and the apps
// all link it (base <- fnn <- scheduler <- apps).
#pragma once

#include <cstdio>
#include <string>

namespace base {

// A temporary being written, removed if SIGINT, SIGTERM or SIGHUP ends the program while it is
// registered, once the program installed the handlers (remove_temporaries_on_signal): the
// handler removes every registered path with async-signal-safe calls, then gives the signal to
// the action it replaced (by default the program ends by the signal). Register before creating
// the path; the destructor unregisters (the owner has renamed or removed it by then).
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
// Installs the handlers, once. A program's choice, not a library's: the apps call it first
// thing (apps::run_main), before StarPU starts, whose SIGINT handler passes the signal on to
// the one it replaced, ours. A signal the program ignores then stays ignored.
void remove_temporaries_on_signal();

// A file replaced whole: written as a temporary beside `path` (same folder, so that the rename
// is atomic), then renamed over it by commit(). Readers see the old file or the new one, never
// half of one; a failure, or a signal above, leaves the old one and no temporary. No fsync: a
// crash of the machine may lose the new file, not corrupt the old.
class AtomicFile {
 public:
  // kInFolder: the temporary is a file of the same name inside a private folder beside `path`,
  // for writers that make temporaries of their own beside the file they write (libzip).
  enum Mode { kFile, kInFolder };
  explicit AtomicFile(std::string path, Mode mode = kFile);
  ~AtomicFile();  // closes the stream and removes the temporary unless commit() succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& temp() const { return temp_; }  // where to write: "<path>.tmp-<pid>-<n>"
  // kInFolder: creates the private folder (kFile: nothing). 0, or errno.
  int prepare();
  // temp() opened for writing ("wb"); null, with errno set, where it cannot be created.
  std::FILE* open();
  // Closes the stream open() gave, if open: 0, or errno (then commit() replaces nothing).
  int close();
  // close(), then temp() renamed over the path: 0, or errno and the path untouched.
  int commit();
  // Closes the stream and removes the temporary (unless committed) and kInFolder's folder now,
  // as the destructor does: for callers that end the process without unwinding.
  void discard();

 private:
  std::string path_, folder_, temp_;  // folder_: kInFolder's private folder, else empty
  std::FILE* f_ = nullptr;
  bool failed_ = false, committed_ = false;
  InFlight guard_;  // the temporary, or kInFolder's folder
};

// `path` replaced with `bytes` through an AtomicFile; 0, or errno and `path` untouched.
int replace_file(const std::string& path, const std::string& bytes);

}  // namespace base
