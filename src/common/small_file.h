// Reading the small files of sysfs, procfs, /run and mounted secrets — one contract for every
// layer: a bounded read that never blocks on a device node or a FIFO and says why it failed.
// Free functions; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace accel {

/// How much ReadSmallFile reads unless told otherwise: far above any sysfs attribute, token or
/// certificate, small enough that a wrong path (a disk image, /dev/zero) costs nothing.
inline constexpr size_t kSmallFileMaxBytes = size_t{1} << 20;

/// The first `max_bytes` bytes of `path` (all of it when shorter), or nullopt when it cannot be
/// opened or read; then *why, when non-null, says why: "missing" (no such file or directory),
/// "dangling symlink", or the OS's reason ("Permission denied", "Is a directory").
/// Opened O_NONBLOCK, so a FIFO without a writer does not block.
std::optional<std::string> ReadSmallFile(const std::string& path, std::string* why = nullptr,
                                         size_t max_bytes = kSmallFileMaxBytes);

/// `path` (absolute, as on a real host) inside the filesystem tree at `root`: "" and "/" are
/// the host itself. PathUnderRoot("/host/", "/dev/nvidia0") == "/host/dev/nvidia0"; a relative
/// `path` is joined with one '/'.
std::string PathUnderRoot(const std::string& root, const std::string& path);

}  // namespace accel
