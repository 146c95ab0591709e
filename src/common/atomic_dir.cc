#include "common/atomic_dir.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "common/error.h"

namespace accel {

namespace {

namespace fs = std::filesystem;

void SyncPath(const fs::path& p, int flags) {
  const int fd = ::open(p.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void WriteAndSync(const fs::path& p, const std::string& content) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw SystemError::FromErrno("cannot write", p.string(), errno, "check the directory's permissions and free space");
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      throw SystemError::FromErrno("cannot write", p.string(), err, "check free space");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    throw SystemError::FromErrno("cannot write", p.string(), errno, "check free space and the filesystem");
}

bool SafeRelative(const std::string& rel) {
  if (rel.empty() || rel.front() == '/') return false;
  for (const auto& part : fs::path(rel))
    if (part == ".." || part == ".") return false;
  return true;
}

}  // namespace

void WriteDirectoryAtomically(const std::string& path, const std::map<std::string, std::string>& files) {
  for (const auto& [rel, content] : files)
    if (!SafeRelative(rel))
      throw InputError(path, rel, "is not a plain relative path", "name files below the directory, without ..");
  const fs::path target = fs::absolute(fs::path(path)).lexically_normal();
  std::error_code ec;
  const bool exists = fs::exists(target, ec);
  if (exists && !fs::is_directory(target, ec))
    throw InputError(path, "", "exists and is not a directory", "choose another --out, or remove the file");
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec) throw SystemError("cannot create", parent.string(), ec.message(), "check the permissions of its parent");
  std::random_device rd;
  const fs::path tmp = parent / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                                 std::to_string(rd()));
  try {
    fs::create_directory(tmp, ec);
    if (ec) throw SystemError("cannot create", tmp.string(), ec.message(), "check the permissions of " + parent.string());
    for (const auto& [rel, content] : files) {
      const fs::path file = tmp / rel;
      fs::create_directories(file.parent_path(), ec);
      if (ec) throw SystemError("cannot create", file.parent_path().string(), ec.message(), "check free space");
      WriteAndSync(file, content);
    }
    for (auto it = fs::recursive_directory_iterator(tmp); it != fs::recursive_directory_iterator(); ++it)
      if (it->is_directory()) SyncPath(it->path(), O_RDONLY | O_DIRECTORY);
    SyncPath(tmp, O_RDONLY | O_DIRECTORY);
    if (exists) {
      if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0)
        throw SystemError::FromErrno("cannot replace", target.string(), errno, "check the permissions of " + parent.string());
      // tmp now holds the old content.
      fs::remove_all(tmp, ec);
    } else if (::rename(tmp.c_str(), target.c_str()) != 0) {
      throw SystemError::FromErrno("cannot create", target.string(), errno, "check the permissions of " + parent.string());
    }
    SyncPath(parent, O_RDONLY | O_DIRECTORY);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace accel
