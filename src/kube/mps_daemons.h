// MpsDaemons: the node agent's MPS part — one NVIDIA MPS control daemon per MPS-shared resource
// (as NVIDIA's mps-control-daemon runs one per resource), started before the device plugins and
// stopped after them, watched and restarted.
//
//   Start   for each resource: find the control binary (MpsSettings / PATH / driver root), quit a
//           daemon a previous agent left in the pipe directory, `nvidia-cuda-mps-control -d`,
//           then MpsLimitCommands (pinned memory per GPU, active thread percentage). Until that
//           succeeded the resource's units are Unhealthy (DeviceHealth::SetServiceDown).
//   Watch   every check interval: the daemon's PID is alive and it answers
//           `get_default_active_thread_percentage` (NVIDIA's AssertHealthy). A daemon that died
//           or hangs takes its units out of service and is started again after a backoff that
//           doubles from first_backoff to max_backoff, reset once it stayed up for max_backoff.
//   Stop    `quit` to each daemon (SIGKILL if it does not end).
//
// Thread-safe: Tick, status and Stop may be called from any thread; a watcher thread calls Tick.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kube/device_health.h"
#include "kube/node_devices.h"
#include "kube/plugin_config.h"
#include "kube/resources.h"

namespace accel::kube {

struct MpsDaemonOptions {
  /// Time between health checks of the watcher thread.
  std::chrono::milliseconds check_interval{5000};
  /// Wait before the first restart of a daemon that failed; doubles per failure.
  std::chrono::milliseconds first_backoff{1000};
  /// Longest wait between restarts; also how long a daemon must stay up to reset the backoff.
  std::chrono::milliseconds max_backoff{30000};
  /// Longest any one call of the control binary may take.
  std::chrono::milliseconds command_timeout{10000};
  /// Run the watcher thread (tests call Tick with their own clock instead).
  bool watch = true;
  /// The PATH searched for the control binary (empty: the agent's $PATH).
  std::string path_env;
};

/// One daemon as the manager sees it, for `accel serve --once`, logs and tests.
struct MpsDaemonStatus {
  /// The MPS resource, e.g. "nvidia.com/gpu".
  std::string resource;
  /// Its pipe directory on the host (CUDA_MPS_PIPE_DIRECTORY of the daemon).
  std::string pipe_dir;
  /// The control binary last used; empty when none was found.
  std::string binary;
  /// Started, configured and answering at the last check.
  bool up = false;
  /// The daemon's PID while up; 0 otherwise.
  int pid = 0;
  /// Successful starts after the first one.
  int restarts = 0;
  /// Why it is down (empty while up).
  std::string error;
  /// The commands that configured each client's share (MpsLimitCommands).
  std::vector<std::string> limits;
};

class MpsDaemons {
 public:
  using Clock = std::chrono::steady_clock;
  using Log = std::function<void(const std::string&)>;

  /// Manages a daemon for every resource of `resources` with sharing == kMps (none: an empty
  /// manager that does nothing). `devices`, `config` and `health` must outlive the manager;
  /// `health` may be null (no health marking). `log` gets one line per state change.
  MpsDaemons(const std::vector<PluginResource>& resources, const std::vector<NodeDevice>& devices,
             const PluginConfig& config, DeviceHealth* health, Log log,
             MpsDaemonOptions options = {});
  ~MpsDaemons();  ///< Stop()

  MpsDaemons(const MpsDaemons&) = delete;
  MpsDaemons& operator=(const MpsDaemons&) = delete;

  /// Starts every daemon now (a failure is logged, its units stay Unhealthy and Tick retries
  /// it) and then the watcher thread. Never throws for a daemon that does not start.
  void Start();

  /// One pass at `now`: checks every daemon that is up, takes down the ones that died, and
  /// (re)starts those whose backoff has passed.
  void Tick(Clock::time_point now);

  /// Stops the watcher and quits every daemon. Idempotent.
  void Stop();

  /// One entry per MPS resource, in resource order.
  std::vector<MpsDaemonStatus> status() const;
  /// How many daemons are managed.
  size_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace accel::kube
