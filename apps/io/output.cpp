#include "apps/io/output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

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
