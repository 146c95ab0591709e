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

#include "common/small_file.h"
#include "common/strings.h"

namespace accel::doctor {

namespace fs = std::filesystem;


bool ReadBytes(const std::string& root, const std::string& path, size_t max_bytes,
               std::string* bytes, std::string* why) {
  std::optional<std::string> read = ReadSmallFile(PathUnderRoot(root, path), why, max_bytes);
  *bytes = read ? std::move(*read) : std::string();
  return read.has_value();
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
  return ::stat(PathUnderRoot(root, path).c_str(), &st) == 0;
}


std::vector<std::string> ListDir(const std::string& root, const std::string& path) {
  std::vector<std::string> names;
  std::error_code ec;
  fs::directory_iterator it(PathUnderRoot(root, path), ec);
  if (ec) return names;
  for (const fs::directory_entry& e : it) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end(), NaturalLess);
  return names;
}

std::string LinkBaseName(const std::string& root, const std::string& path) {
  std::error_code ec;
  fs::path target = fs::read_symlink(PathUnderRoot(root, path), ec);
  if (ec) return "";
  std::string s = target.string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  size_t slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

}  // namespace accel::doctor
