#include "apps/io/output.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "apps/io/npy.hpp"

namespace io {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
  throw OutputPathError(path + ": " + what);
}

// `dir` without a trailing separator: "D/" and "D" name one folder.
fs::path folder(const std::string& dir) {
  const fs::path p = fs::path(dir).lexically_normal();
  return p.has_filename() || p.parent_path() == p ? p : p.parent_path();
}

// Whether `dir` takes a new file, found by creating and removing one: permission bits miss a
// read-only mount, ACLs, and root on /proc or /sys. Returns errno, or 0.
int try_create_in(const std::string& dir) {
  static std::atomic<unsigned> counter{0};
  const std::string probe = dir + "/.probe-" + std::to_string(long(::getpid())) + "-" + std::to_string(counter++);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  ::close(fd);
  ::unlink(probe.c_str());
  return 0;
}

// ---- Temporaries removed on a signal ------------------------------------------------------
// A fixed table, so that the handler reads it without locks or allocation: a slot is free (0),
// being filled (1) or armed (2); the handler acts on armed slots only.
static_assert(std::atomic<int>::is_always_lock_free, "the handler reads the slots' states");
constexpr int kSlots = 64;
struct Slot {
  std::atomic<int> state{0};
  int kind = InFlight::kFile;
  char path[PATH_MAX];
};
Slot slots[kSlots];
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction previous[NSIG];

// Removes what the folder open as `fd` holds, folders in it to `depth` levels; async-signal-safe.
void empty_folder(int fd, int depth) {
  alignas(8) char buf[4096];
  for (int pass = 0; pass < 8; ++pass) {  // removing entries while listing may skip some: list again
    ::lseek(fd, 0, SEEK_SET);
    bool removed = false;
    long n;
    while ((n = ::syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const dirent64*>(buf + off);
        off += d->d_reclen;
        const char* name = d->d_name;
        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
        if (::unlinkat(fd, name, 0) == 0) {
          removed = true;
        } else if (errno == EISDIR && depth > 0) {
          const int sub = ::openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (sub >= 0) {
            empty_folder(sub, depth - 1);
            ::close(sub);
          }
          if (::unlinkat(fd, name, AT_REMOVEDIR) == 0) removed = true;
        }
      }
    }
    if (!removed) return;
  }
}

void remove_registered() {
  for (int kind : {int(InFlight::kFile), int(InFlight::kFolder)})  // files first: some are in the folders
    for (Slot& s : slots) {
      if (s.state.load(std::memory_order_acquire) != 2 || s.kind != kind) continue;
      if (kind == InFlight::kFile) {
        ::unlink(s.path);
        continue;
      }
      const int fd = ::open(s.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) continue;
      empty_folder(fd, 2);
      ::close(fd);
      ::rmdir(s.path);
    }
}

extern "C" void on_signal(int sig) {
  const int saved = errno;
  remove_registered();
  // The action we replaced runs once this handler returns (the signal is blocked until then):
  // by default, the program ends by the signal.
  ::sigaction(sig, &previous[sig], nullptr);
  ::raise(sig);
  errno = saved;
}

}  // namespace

void check_output_file(const std::string& path) {
  if (path.empty()) throw OutputPathError("empty output path; give a file name");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) refuse(path, "is a directory; give a file name for the output");
  if (fs::exists(st) && !fs::is_regular_file(st))
    refuse(path, "exists and is not a regular file; give a file name for the output");
  const fs::path parent = fs::path(path).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  const fs::file_status d = fs::status(dir, ec);
  if (!fs::exists(d)) refuse(path, "the directory " + dir + " does not exist; create it or give another path");
  if (!fs::is_directory(d)) refuse(path, dir + " is not a directory; give another path");
  if (const int err = try_create_in(dir))
    refuse(path, "cannot write in " + dir + " (" + std::strerror(err) + "); give a writable location");
}

void check_output_dir(const std::string& dir) {
  if (dir.empty()) throw OutputPathError("empty output directory; give a directory name");
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) refuse(dir, "exists and is not a directory; give a directory");
  // The nearest folder that exists: where the missing ones would be created.
  const fs::path want = folder(dir);
  fs::path p = want;
  while (!p.empty() && !fs::exists(p, ec)) p = p.parent_path();
  if (p.empty()) p = ".";
  if (!fs::is_directory(p, ec)) refuse(dir, "cannot be created: " + p.string() + " is not a directory");
  if (const int err = try_create_in(p.string()))
    refuse(dir, (p == want ? std::string("cannot write in it (") : "cannot be created in " + p.string() + " (") +
                    std::strerror(err) + "); give a writable location");
}

void remove_temporaries_on_signal() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : kSignals) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
      previous[sig] = old;
      struct sigaction act {};
      act.sa_handler = on_signal;
      sigemptyset(&act.sa_mask);
      for (int other : kSignals) sigaddset(&act.sa_mask, other);  // one cleanup at a time
      ::sigaction(sig, &act, nullptr);
    }
  });
}

InFlight::InFlight(const std::string& path, Kind kind) : slot_(-1) {
  remove_temporaries_on_signal();
  if (path.size() >= PATH_MAX) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!slots[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].kind = kind;
    slots[i].state.store(2, std::memory_order_release);
    slot_ = i;
    return;
  }
}

InFlight::~InFlight() {
  if (slot_ >= 0) slots[slot_].state.store(0, std::memory_order_release);
}

// ---- A folder's files, all or none ---------------------------------------------------------

Staging::Staging(const std::string& out_dir) : out_dir_(folder(out_dir).string()) {
  std::error_code ec;
  for (fs::path p = out_dir_; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) created_ = p.string();
  fs::create_directories(out_dir_, ec);
  if (ec || !fs::is_directory(out_dir_))
    throw OutputError(out_dir + ": cannot create the output directory (" + ec.message() + ")");
  dir_ = out_dir_ + "/.staging-" + std::to_string(long(::getpid()));
  guard_ = std::make_unique<InFlight>(dir_, InFlight::kFolder);
  if (!fs::create_directory(dir_, ec)) throw OutputError(dir_ + ": cannot create (" + (ec ? ec.message() : "it exists") + ")");
}

Staging::~Staging() {
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (committed_ || created_.empty()) return;
  // Only empty folders go: nothing of anyone else's.
  for (fs::path p = out_dir_; fs::remove(p, ec) && p.string() != created_; p = p.parent_path()) {
  }
}

std::string Staging::path(const std::string& name) {
  names_.push_back(name);
  return dir_ + "/" + name;
}

std::vector<std::string> Staging::commit() {
  // Each file a move will replace is kept as a hard link in the staging folder first, so that a
  // failed commit can put it back; the staging folder is on the same file system.
  std::vector<bool> kept(names_.size());
  auto dest = [&](std::size_t i) { return out_dir_ + "/" + names_[i]; };
  auto keep = [&](std::size_t i) { return dir_ + "/.kept-" + names_[i]; };
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (::link(dest(i).c_str(), keep(i).c_str()) == 0) kept[i] = true;
    else if (errno != ENOENT)
      throw OutputError(dest(i) + ": cannot replace (" + std::strerror(errno) + "); nothing was written");
  }
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (::rename((dir_ + "/" + names_[i]).c_str(), dest(i).c_str()) == 0) continue;
    const int err = errno;
    for (std::size_t j = i; j-- > 0;) {
      if (kept[j]) ::rename(keep(j).c_str(), dest(j).c_str());
      else ::unlink(dest(j).c_str());
    }
    throw OutputError(dest(i) + ": cannot move into place (" + std::strerror(err) + "); nothing was written");
  }
  committed_ = true;
  std::vector<std::string> out;
  for (std::size_t i = 0; i < names_.size(); ++i) out.push_back(dest(i));
  return out;
}

}  // namespace io
