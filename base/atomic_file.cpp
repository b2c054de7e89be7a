#include "base/atomic_file.hpp"

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
#include <mutex>
#include <utility>

namespace base {
namespace {

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

// A C name, so unique in the program (perturb has an on_signal of its own).
extern "C" void fnndtps_base_on_signal(int sig) {
  const int saved = errno;
  remove_registered();
  // The action we replaced runs once this handler returns (the signal is blocked until then):
  // by default, the program ends by the signal.
  ::sigaction(sig, &previous[sig], nullptr);
  ::raise(sig);
  errno = saved;
}

// "<path>.tmp-<pid>-<n>": unique within the process and among processes.
std::string temp_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  return path + ".tmp-" + std::to_string(long(::getpid())) + "-" + std::to_string(counter.fetch_add(1));
}

std::string file_name(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

void remove_temporaries_on_signal() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : kSignals) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler == SIG_IGN) continue;
      previous[sig] = old;
      struct sigaction act {};
      act.sa_handler = fnndtps_base_on_signal;
      sigemptyset(&act.sa_mask);
      for (int other : kSignals) sigaddset(&act.sa_mask, other);  // one cleanup at a time
      ::sigaction(sig, &act, nullptr);
    }
  });
}

InFlight::InFlight(const std::string& path, Kind kind) : slot_(-1) {
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

// ---- Files replaced whole -----------------------------------------------------------------

AtomicFile::AtomicFile(std::string path, Mode mode)
    : path_(std::move(path)),
      folder_(mode == kInFolder ? temp_name(path_) : std::string()),
      temp_(mode == kInFolder ? folder_ + "/" + file_name(path_) : temp_name(path_)),
      guard_(mode == kInFolder ? folder_ : temp_, mode == kInFolder ? InFlight::kFolder : InFlight::kFile) {}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (f_) std::fclose(f_);
  f_ = nullptr;
  if (!committed_) ::unlink(temp_.c_str());
  if (folder_.empty()) return;
  // The private folder goes in any case; libzip's own temporaries (<name>.XXXXXX) may be
  // beside ours after a failure: empty it first.
  const int fd = ::open(folder_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    empty_folder(fd, 2);
    ::close(fd);
  }
  ::rmdir(folder_.c_str());
}

int AtomicFile::prepare() {
  if (folder_.empty() || ::mkdir(folder_.c_str(), 0777) == 0) return 0;
  return errno;
}

std::FILE* AtomicFile::open() {
  if (const int err = prepare()) {
    errno = err;
    return nullptr;
  }
  f_ = std::fopen(temp_.c_str(), "wb");
  return f_;
}

int AtomicFile::close() {
  if (!f_) return 0;
  const bool bad = std::ferror(f_) != 0;
  const int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc == 0 && !bad) return 0;
  failed_ = true;
  return rc != 0 && errno ? errno : EIO;
}

int AtomicFile::commit() {
  if (const int err = close()) return err;
  if (failed_) return EIO;
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) return errno;
  committed_ = true;
  return 0;
}

int replace_file(const std::string& path, const std::string& bytes) {
  AtomicFile file(path);
  std::FILE* f = file.open();
  if (!f) return errno;
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) return errno ? errno : EIO;
  return file.commit();
}

}  // namespace base
