#include "common/small_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace accel {

std::optional<std::string> ReadSmallFile(const std::string& path, std::string* why, size_t max_bytes) {
  std::string ignored;
  std::string& reason = why ? *why : ignored;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    struct stat st;
    const bool dangling = ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
    if (dangling)
      reason = "dangling symlink";
    else
      reason = err == ENOENT || err == ENOTDIR ? "missing" : std::strerror(err);
    return std::nullopt;
  }
  std::string bytes;
  char buf[4096];
  while (bytes.size() < max_bytes) {
    const size_t want = std::min(sizeof buf, max_bytes - bytes.size());
    const ssize_t n = ::read(fd, buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      reason = std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return bytes;
}

std::string PathUnderRoot(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return path.empty() || path[0] != '/' ? r + "/" + path : r + path;
}

}  // namespace accel
