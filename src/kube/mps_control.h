// MpsControl: one NVIDIA MPS control daemon (nvidia-cuda-mps-control) driven the way NVIDIA's
// mps-control-daemon drives it (cmd/mps-control-daemon/mps/daemon.go):
//   - started with `nvidia-cuda-mps-control -d` and the environment CUDA_MPS_PIPE_DIRECTORY and
//     CUDA_MPS_LOG_DIRECTORY of its resource (MpsPathsFor);
//   - commanded through its stdin protocol: a second `nvidia-cuda-mps-control` with the same
//     environment reads one command from stdin, hands it to the daemon, prints the answer and
//     exits 0 (non-zero when no daemon answers) — the documented `echo quit | nvidia-cuda-mps-control`;
//   - found alive through the PID it writes to <pipe dir>/nvidia-cuda-mps-control.pid.
// MpsLimitCommands gives each client its 1/replicas share of memory and compute.
//
// The control binary is a child process; nothing here links a CUDA library. Every call blocks
// for at most the timeout given to the constructor. Thread-compatible: one MpsControl per
// daemon, used from one thread at a time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "kube/mps_paths.h"
#include "kube/node_devices.h"
#include "kube/plugin_config.h"
#include "kube/resources.h"

namespace accel::kube {

/// The control binary's name, as NVIDIA's mps-control-daemon runs it.
inline constexpr const char* kMpsControlBinary = "nvidia-cuda-mps-control";

/// The commands that set every client's share of `resource` (an MPS resource over `devices`), in
/// this order: `set_default_device_pinned_mem_limit <GPU UUID> <MiB>M` per physical GPU whose
/// memory is known, with MiB = memory / replicas / 2^20 rounded down, then
/// `set_default_active_thread_percentage <100 / replicas>` (integer division) — NVIDIA's
/// perDevicePinnedDeviceMemoryLimits and activeThreadPercentage. NVIDIA's daemon names the GPU by
/// its NVML index; accel by UUID (the MPS control accepts both, and a UUID cannot name another
/// GPU when CUDA orders devices differently from NVML). Empty when the resource has no devices.
std::vector<std::string> MpsLimitCommands(const PluginResource& resource,
                                          const std::vector<NodeDevice>& devices);

/// The control binary to run: `settings.control_path` when set; else the first executable
/// nvidia-cuda-mps-control in the directories of `path_env` (a PATH value), then under
/// `driver_root` (flags.nvidiaDriverRoot) in usr/bin and bin. Empty when none is found.
std::string FindMpsControl(const MpsSettings& settings, const std::string& driver_root,
                           const std::string& path_env);

class MpsControl {
 public:
  /// `binary`: the control binary's path. `paths`: the daemon's directories. `timeout`: the
  /// longest any one call waits for the binary.
  MpsControl(std::string binary, MpsPaths paths, std::chrono::milliseconds timeout);

  /// Creates the pipe and log directories (0755) and runs `binary -d`. Throws SystemError naming
  /// the binary and its output when a directory cannot be made, the binary cannot run, exits
  /// non-zero or does not return within the timeout.
  void StartDaemon() const;

  /// Sends one command ("quit", "set_default_active_thread_percentage 50") and returns what the
  /// control printed. Throws SystemError when the binary cannot run, exits non-zero (no daemon
  /// listening) or does not return within the timeout.
  std::string Send(const std::string& command) const;

  /// The PID in the daemon's PID file when that process runs this binary and has not exited (a
  /// zombie child of this process is reaped); 0 otherwise. Reading /proc/<pid>/exe guards
  /// against a PID reused after a crash; where it cannot be read, a live PID is taken as is.
  pid_t RunningPid() const;

  /// Asks the daemon to quit, waits up to the timeout for its process to end, then kills it
  /// (SIGKILL) if it still runs. Never throws; returns what happened, for the log.
  std::string Quit() const;

  /// The last line of <log dir>/control.log (the daemon's own log), for error messages; empty
  /// when there is none.
  std::string LastLogLine() const;

  const std::string& binary() const { return binary_; }
  const MpsPaths& paths() const { return paths_; }

 private:
  /// Runs the binary with `args`, the daemon's environment and `input` on stdin; returns the
  /// exit status and what it wrote to stdout and stderr.
  struct Result {
    int status = -1;  ///< exit status; -1 when it did not end within the timeout (killed)
    std::string output;
  };
  Result Run(const std::vector<std::string>& args, const std::string& input) const;

  std::string binary_;
  MpsPaths paths_;
  std::chrono::milliseconds timeout_;
};

}  // namespace accel::kube
