#include "doctor/host_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/strings.h"

namespace accel::doctor {

namespace fs = std::filesystem;

namespace {

std::string Join(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  return path.empty() || path[0] != '/' ? r + "/" + path : r + path;
}

// The reason a path cannot be opened, in the words an operator expects.
std::string Reason(const std::string& full, int err) {
  struct stat st;
  if (err == ENOENT && ::lstat(full.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    return "dangling symlink";
  }
  return std::strerror(err);
}

}  // namespace

bool ReadBytes(const std::string& root, const std::string& path, size_t max_bytes,
               std::string* bytes, std::string* why) {
  const std::string full = Join(root, path);
  bytes->clear();
  int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    struct stat st;
    bool dangling = ::lstat(full.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
    *why = (err == ENOENT || err == ENOTDIR) && !dangling ? "missing" : Reason(full, err);
    return false;
  }
  char buf[4096];
  while (bytes->size() < max_bytes) {
    size_t want = std::min(sizeof buf, max_bytes - bytes->size());
    ssize_t n = ::read(fd, buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      *why = std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    bytes->append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return true;
}

FileValue ReadFile(const std::string& root, const std::string& path, size_t max_bytes) {
  FileValue v;
  v.path = path;
  std::string bytes, why;
  if (ReadBytes(root, path, max_bytes, &bytes, &why)) {
    v.ok = true;
    v.value = Trim(bytes);
  } else if (why == "missing") {
    v.missing = true;
    v.value = "(missing)";
  } else {
    v.value = "(unreadable: " + why + ")";
  }
  return v;
}

bool PathExists(const std::string& root, const std::string& path) {
  struct stat st;
  return ::stat(Join(root, path).c_str(), &st) == 0;
}


std::vector<std::string> ListDir(const std::string& root, const std::string& path) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(Join(root, path), ec);
  if (ec) return names;
  for (const fs::directory_entry& e : it) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end(), NaturalLess);
  return names;
}

std::string LinkBaseName(const std::string& root, const std::string& path) {
  std::error_code ec;
  fs::path target = fs::read_symlink(Join(root, path), ec);
  if (ec) return "";
  std::string s = target.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  size_t slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

}  // namespace accel::doctor
