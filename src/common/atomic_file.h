// WriteFileAtomically: the one way accel replaces a file that others read while it runs —
// node labels in NFD's features.d, the MIG state file, generated configs given with -o.
//
// Readers see the old file or the whole new one, never a part: the content goes to a hidden
// temporary file in the same directory (".NAME.tmp.PID.N.RANDOM": a leading dot, so directory scanners
// such as node-feature-discovery's features.d reader skip it), is flushed to disk with fsync,
// then renamed over the target; the directory is synced so the rename survives a crash.
// Thread-safe: concurrent writers (threads or processes) never share a temporary file; the last
// rename wins.
#pragma once

#include <string>
#include <string_view>
#include <sys/types.h>

namespace accel {

struct AtomicWriteOptions {
  /// Permission bits of the new file (before the umask).
  mode_t mode = 0644;
  /// Create missing parent directories (0755) first; when false a missing directory fails.
  bool create_directories = false;
};

/// Replaces the file at `path` with `content` as described above.
/// Throws SystemError naming `path` and the OS's reason (missing directory, permission, disk
/// full, read-only filesystem); the target is then unchanged and no temporary file is left.
void WriteFileAtomically(const std::string& path, std::string_view content,
                         const AtomicWriteOptions& options = {});

}  // namespace accel
