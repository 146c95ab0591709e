// Snapshot: everything one /metrics response says, frozen after a complete collection pass.
//
// The collector builds a new Snapshot in the background and publishes it whole; scrapes only
// read published snapshots (immutable, shared through std::shared_ptr<const Snapshot>), so a
// scrape never waits on a vendor library and never sees half a pass.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "devices/device.h"

namespace accel::telemetry {

/// A Kubernetes container that holds (a share of) a device, from the kubelet pod-resources API.
struct PodRef {
  std::string namespace_name;  ///< pod namespace
  std::string pod;             ///< pod name
  std::string container;       ///< container name
  std::string resource;        ///< extended resource, e.g. "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"
  /// Time-slicing / MPS replica number from a "GPU-<uuid>::<n>" device ID; -1 for a whole device.
  int replica = -1;
};

/// Health of a device as the exporter sees it.
enum class DeviceHealth {
  kHealthy,  ///< last pass read it within the staleness limit
  kLost,     ///< the vendor library said the device is gone (GPU_IS_LOST); sticky
  kStale,    ///< no fresh reading within the staleness limit (a hung vendor call)
};

/// One MIG GPU instance with the pods that hold it.
struct MigState {
  devices::MigInstance instance;
  std::vector<PodRef> pods;
};

/// One device in a snapshot.
struct DeviceState {
  devices::DeviceIdentity identity;
  /// The last complete reading of this device (kept when the device goes stale, so its identity
  /// series survive; the values are not rendered while stale or lost).
  devices::Sample sample;
  bool mig_enabled = false;
  std::vector<MigState> mig;
  DeviceHealth health = DeviceHealth::kHealthy;
  /// When `sample` was read; epoch when never.
  std::chrono::system_clock::time_point sampled_at{};
  /// Last health event code (NVIDIA XID) seen on the device; 0 before any.
  uint64_t last_xid = 0;
  /// Events seen since the exporter started, by code.
  std::map<uint64_t, uint64_t> xid_counts;
  /// Events within the last Snapshot::event_window, by code (DCGM_EXP_XID_ERRORS_COUNT); kept
  /// only when the collector tracks windows.
  std::map<uint64_t, uint64_t> xid_window;
  /// Passes within the last Snapshot::event_window whose reading had each clock-event bit set,
  /// by bit value (DCGM_EXP_CLOCK_EVENTS_COUNT); kept only when the collector tracks windows.
  std::map<uint64_t, uint64_t> clock_event_window;
  /// NVLink P2P status towards the other GPUs (read only when a selection asks for it).
  std::vector<devices::PeerStatus> p2p;
  /// Pods holding the whole device or a time-sliced replica of it (not its MIG instances).
  std::vector<PodRef> pods;
  /// Last vendor error (for logs and accel_device_info's `error`-free health series); may be empty.
  std::string error;
};

/// Counters about the exporter itself.
struct CollectorStats {
  uint64_t passes = 0;                 ///< complete collection passes since start
  double last_pass_seconds = 0;        ///< wall time of the last pass
  uint64_t pod_resources_errors = 0;   ///< failed kubelet List calls since start
  bool pod_resources_enabled = false;  ///< pod attribution is on (a kubelet socket was given)
  bool pod_resources_ok = false;       ///< last kubelet List succeeded
};

struct Snapshot {
  /// Node name: $NODE_NAME, else gethostname().
  std::string hostname;
  /// Devices of every vendor, grouped by vendor (nvidia, amd, habana) then by index.
  std::vector<DeviceState> devices;
  /// Driver version per vendor name ("nvidia" -> "580.95.05").
  std::map<std::string, std::string> driver_versions;
  std::chrono::system_clock::time_point taken_at{};
  CollectorStats stats;
  /// Length of the sliding window of xid_window / clock_event_window (dcgm-exporter's default
  /// --xid-count-window-size and --clock-events-count-window-size, 5 minutes).
  std::chrono::milliseconds event_window{300000};
};

}  // namespace accel::telemetry
