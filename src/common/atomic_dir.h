// WriteDirectoryAtomically: the one way accel writes a directory of generated files (a cluster
// plan's per-group configs) so that readers — and a run that fails halfway — see the old
// directory or the whole new one, never a mix.
//
// The files go into a hidden sibling ".NAME.tmp.PID.RANDOM" (each fsynced), which then takes
// the target's place: renameat2(RENAME_EXCHANGE) swaps it with an existing directory in one
// step (the old content is then removed), or a plain rename creates it. The parent directory
// is synced so the swap survives a crash. On any error nothing changes at the target and the
// temporary directory is removed.
//
// Thread-safe across threads and processes (each writer has its own temporary directory; the
// last swap wins).
#pragma once

#include <map>
#include <string>

namespace accel {

/// Replaces the directory `path` with exactly `files` (relative path -> content; subdirectories
/// are created as needed). Relative paths must not be absolute or contain "..".
/// Throws InputError for a bad relative path or when `path` exists and is not a directory;
/// SystemError naming the path and the OS's reason (permission, disk full) otherwise.
void WriteDirectoryAtomically(const std::string& path, const std::map<std::string, std::string>& files);

}  // namespace accel
