// Where the files of an MPS-shared resource live, on the host and in a client container — the
// layout of NVIDIA's mps-control-daemon (cmd/mps-control-daemon/mps/root.go): one directory per
// resource under the MPS root, holding `pipe` (the control daemon's pipes and its
// nvidia-cuda-mps-control.pid) and `log` (control.log, server.log).
//
//   host       /run/nvidia/mps/nvidia.com/gpu/pipe   ← CUDA_MPS_PIPE_DIRECTORY of the daemon
//              /run/nvidia/mps/nvidia.com/gpu/log    ← CUDA_MPS_LOG_DIRECTORY of the daemon
//   container  /mps/nvidia.com/gpu/pipe              ← CUDA_MPS_PIPE_DIRECTORY of a client
//
// Pure functions; thread-safe.
#pragma once

#include <string>

namespace accel::kube {

/// Where NVIDIA's plugin mounts a resource's pipe directory in client containers.
inline constexpr const char* kMpsContainerRoot = "/mps";
/// The POSIX shared memory the MPS server and its clients must share. The agent's daemon uses
/// the host's /dev/shm (a DaemonSet mounts it), so clients get the host's /dev/shm.
/// NVIDIA's mps-control-daemon instead mounts a private 64 MiB tmpfs at <root>/shm over its
/// own /dev/shm; see docs/node-agent.md for the difference.
inline constexpr const char* kMpsShmDir = "/dev/shm";
/// The file the control daemon writes its PID into, in its pipe directory (NVIDIA MPS docs).
inline constexpr const char* kMpsPidFile = "nvidia-cuda-mps-control.pid";

struct MpsPaths {
  /// <root>/<resource>/pipe on the host.
  std::string pipe_dir;
  /// <root>/<resource>/log on the host.
  std::string log_dir;
  /// /mps/<resource>/pipe in a client container.
  std::string container_pipe_dir;
};

/// The paths of `resource` (a full name, "nvidia.com/gpu") under the host directory `root`
/// (flags.mpsRoot, absolute; a trailing '/' is ignored).
MpsPaths MpsPathsFor(const std::string& root, const std::string& resource);

}  // namespace accel::kube
