#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <random>

#include "common/error.h"

namespace accel {

namespace {

/// write(2) until everything is written; false (errno set) on an error.
bool WriteAll(int fd, std::string_view content) {
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    content.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

[[noreturn]] void Fail(const std::string& path, int err) {
  throw SystemError::FromErrno("cannot write", path, err,
                               "check that the directory exists, is writable and has space");
}

}  // namespace

void WriteFileAtomically(const std::string& path, std::string_view content,
                         const AtomicWriteOptions& options) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (options.create_directories) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw SystemError("cannot create directory", dir.string(), ec.message());
  }
  // PID, a per-process sequence and a random part: a container's agent is often PID 1 again
  // after a restart, and a temporary file left by a killed run must not block the next one.
  static std::atomic<unsigned> sequence{0};
  std::random_device random;
  std::string temp;
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "%08x%08x", random(), random());
    temp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                   std::to_string(sequence.fetch_add(1)) + "." + suffix))
               .string();
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, options.mode);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) Fail(path, errno);
  bool ok = WriteAll(fd, content) && ::fsync(fd) == 0;
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && std::rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(temp.c_str());
    Fail(path, err);
  }
  // The rename is durable once the directory entry is on disk; a failure here loses nothing
  // the caller can act on, so it is not reported.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace accel
