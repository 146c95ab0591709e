// Agent: the one long-running daemon of accel — the exporter, the device plugin (one server per
// resource, re-registered across kubelet restarts) with its MPS control daemons when the config
// shares GPUs through MPS, the node-label feature file and the MIG manager, all from one
// AgentConfig over one set of vendor backends. `accel serve` runs every part; `accel exporter`
// is the same agent with only the exporter part enabled (cli/daemon.h runs both). On a node
// without accelerators it still serves the host's topology and metrics.
//
// Thread-safety: Start, Reload and Stop are called from one control thread (the CLI's signal
// loop); the parts run on their own threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/agent_config.h"
#include "kube/mps_daemons.h"
#include "kube/node_devices.h"
#include "kube/node_labels.h"

namespace accel::agent {

/// What a running agent serves, for `accel serve --once` and tests.
struct AgentStatus {
  /// Allocatable units found (whole devices and MIG devices).
  std::vector<kube::NodeDevice> devices;
  /// Resource name → advertised IDs (replicas counted), in BuildResources order.
  std::vector<std::pair<std::string, size_t>> resources;
  /// The node labels (written to labels.file when its directory exists).
  kube::Labels labels;
  /// Latest rendered exposition (empty before Start).
  std::shared_ptr<const std::string> exposition;
  /// Bound exporter port; 0 when the HTTP endpoint is off.
  int exporter_port = 0;
  /// The device plugin manager is running (enabled and the plugin dir exists).
  bool device_plugin = false;
  /// One entry per MPS-shared resource: its control daemon (empty without sharing.mps).
  std::vector<kube::MpsDaemonStatus> mps;
  /// The DRA driver runs (dra.enabled).
  bool dra = false;
  /// Its driver name.
  std::string dra_driver;
  /// The devices it publishes, one line each: "gpu-0  rail 0  0000:18:00.0".
  std::vector<std::string> dra_devices;
};

class Agent {
 public:
  /// Log sink for one-line status and error messages (default: stderr).
  using Log = std::function<void(const std::string&)>;

  explicit Agent(Log log = nullptr);
  ~Agent();  ///< Stop()

  /// Applies the MIG config (when enabled), opens the backends, then starts every enabled part.
  /// Throws InputError (config, web config), BackendError (vendor library) or SystemError
  /// (cannot listen, cannot serve a plugin socket) before anything is left running: on a throw,
  /// nothing was started (a MIG config applied first stays applied). The exporter alone (device
  /// plugin and labels off) reads no device on this thread: a hung vendor call cannot hang it.
  /// Throws std::logic_error when already started.
  void Start(const AgentConfig& config);

  /// Switches to `config`: stops every part, then starts them with `config` (devices and MIG
  /// state may have changed, so nothing is carried over). When `config` fails to start, the
  /// old config is started again and the error is rethrown; when that fails too, or a vendor
  /// call of the old config is still hung (SystemError), nothing runs afterwards: running() says
  /// so. Not started → same as Start.
  void Reload(const AgentConfig& config);

  /// Stops every part: device plugins send an empty list and remove their sockets, the MPS
  /// control daemons are told to quit, the exporter stops serving. Returns false when a vendor
  /// call is still hung (the caller should _exit).
  bool Stop();

  /// True between a successful Start (or Reload) and Stop, or a Reload that left nothing running.
  bool running() const;

  /// Runs one collection pass now and returns its exposition (rates such as GPM activity need
  /// a pass before it). Null when not started. For `accel exporter --once`.
  std::shared_ptr<const std::string> CollectNow();

  /// Bound exporter port (0 when the exporter is off); for tests.
  int exporter_port() const;
  /// Device plugin registrations so far (since the last Start); for tests.
  int plugin_registrations() const;
  /// What is being served now; empty when not started.
  AgentStatus status() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace accel::agent
