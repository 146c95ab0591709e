// Reading a host's /proc and /sys through a filesystem root, keeping what was read as evidence.
//
// Every doctor check reads through these functions so that the same code runs against this
// machine (root "/") and against fake trees in tests or a copy of another host's /sys gathered
// for a support case. Paths are always written as they are on a real host ("/proc/cmdline");
// the root is prepended only to open them. Nothing here throws for what it reads: a missing file
// or an unreadable one is a value ("(missing)", "(unreadable: Is a directory)") that ends up in
// a finding's evidence. Plain functions; safe from any thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "doctor/finding.h"

namespace accel::doctor {

/// One read of one file.
struct FileValue {
  std::string path;    ///< the path as on a real host, e.g. "/proc/cmdline"
  bool ok = false;     ///< the file was read
  bool missing = false;  ///< it does not exist (neither file nor link)
  std::string value;   ///< trimmed contents when ok; "(missing)" or "(unreadable: why)" otherwise

  /// {path, value}, for a finding's evidence.
  Evidence ToEvidence() const { return Evidence{path, value}; }
};

/// Reads ROOT + `path` whole (at most `max_bytes`), trimming surrounding whitespace. A missing
/// file gives value "(missing)"; a directory, a dangling symlink or a permission error gives
/// "(unreadable: <reason>)".
FileValue ReadFile(const std::string& root, const std::string& path, size_t max_bytes = 1 << 20);

/// Reads ROOT + `path` as raw bytes (no trimming), at most `max_bytes`; for PCI config space.
/// Returns false (and sets *why to "missing" or the reason) when it cannot be read.
bool ReadBytes(const std::string& root, const std::string& path, size_t max_bytes,
               std::string* bytes, std::string* why);

/// True when ROOT + `path` exists (following links: a dangling link does not exist).
bool PathExists(const std::string& root, const std::string& path);

/// Names in the directory ROOT + `path`, sorted in natural order ("cpu2" before "cpu10");
/// empty when it is missing or not a directory.
std::vector<std::string> ListDir(const std::string& root, const std::string& path);

/// The last component of the target of the symlink ROOT + `path` (e.g. the driver bound to a
/// PCI function: "/sys/bus/pci/devices/X/driver" → "nvidia"); "" when it is not a link.
std::string LinkBaseName(const std::string& root, const std::string& path);

}  // namespace accel::doctor
