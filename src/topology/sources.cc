#include "topology/sources.h"

#include "common/structured_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/error.h"
#include "topology/host_json.h"
#include "topology/hwloc_source.h"
#include "topology/sysfs_source.h"

namespace accel::topology {

namespace {

std::string FileBaseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = name.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

}  // namespace


HostTopology LoadTopology(const std::string& spec) {
  if (spec == "live") return LoadLiveHost();
  if (spec.rfind("sysfs:", 0) == 0) return LoadSysfsHost(spec.substr(6));
  std::error_code ec;
  if (std::filesystem::is_directory(spec, ec)) return LoadSysfsHost(spec);
  std::string text = ReadWholeFile(spec);
  size_t first = text.find_first_not_of(" \t\r\n");
  // A UTF-8 byte order mark may precede XML written on other systems.
  if (first != std::string::npos && text.compare(first, 3, "\xef\xbb\xbf") == 0)
    first = text.find_first_not_of(" \t\r\n", first + 3);
  char c = first == std::string::npos ? '\0' : text[first];
  if (c == '{') return HostFromJson(text, spec);
  // hwloc's minimal XML parser (used without libhwloc-plugins) refuses a byte order mark.
  if (c == '<') return LoadHwlocXmlText(text.substr(first), spec, FileBaseName(spec));
  throw InputError(spec, "",
                   first == std::string::npos ? "is empty" : "is neither JSON nor hwloc XML",
                   "give accel's host JSON (accel topo -o json), an hwloc XML export "
                   "(lstopo host.xml), a directory holding a copy of a host's sys/ or 'live'");
}

}  // namespace accel::topology
