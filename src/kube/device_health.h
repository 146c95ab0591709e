// DeviceHealth: the Healthy/Unhealthy state of every NodeDevice, driven by the vendor's health
// events (NVIDIA XIDs; benign application XIDs ignored) and by device reads (a lost device is
// unhealthy; one that answers again recovers), with recovery after a quiet period; and by the
// service a shared unit needs (its MPS control daemon), which is down or up.
//
// Thread-safe: events, readings and queries may come from different threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "devices/device.h"
#include "kube/node_devices.h"
#include "kube/plugin_config.h"

namespace accel::kube {

class DeviceHealth {
 public:
  using Clock = std::chrono::steady_clock;

  /// All devices start Healthy. `devices` is copied (only vendor, index and MIG ids are used).
  DeviceHealth(const std::vector<NodeDevice>& devices, HealthPolicy policy);

  /// Applies one event at `now`: a critical event (for NVIDIA: an XID not in ignored_xids)
  /// marks the physical device's units unhealthy; a MIG-scoped event only the MIG device with
  /// that GPU-instance id and the whole-GPU unit that contains it (device-wide when no MIG
  /// device matches). Events of unknown devices are ignored. Returns whether any state changed.
  bool OnEvent(const devices::HealthEvent& event, Clock::time_point now);

  /// Applies a reading of the physical device (vendor, index): lost → its units unhealthy;
  /// answering again → recovery once the quiet period since the last critical event passed.
  /// Returns whether any state changed.
  bool OnReading(devices::Vendor vendor, unsigned index, const devices::DeviceReading& reading,
                 Clock::time_point now);

  /// Re-evaluates quiet-period recoveries at `now`. Returns whether any state changed.
  bool Tick(Clock::time_point now);

  /// Marks the service of devices[i] for every i in `units` (out-of-range ignored) down or up:
  /// a unit whose service is down is Unhealthy whatever the health policy (health.enabled false
  /// included: a pod admitted onto it would run without its MPS limits). Returns whether any
  /// state changed.
  bool SetServiceDown(const std::vector<size_t>& units, bool down);

  /// Whether devices[i] is healthy now.
  bool healthy(size_t i) const;
  /// Increments on every change; lets servers notice changes cheaply.
  uint64_t generation() const;

 private:
  /// Recomputes healthy_[i] from lost_/critical_; counts a change. Needs mu_.
  bool Update(size_t i);
  /// Clears critical_[i] when its quiet period has passed at `now`. Needs mu_.
  void MaybeRecover(size_t i, Clock::time_point now);

  mutable std::mutex mu_;
  HealthPolicy policy_;
  std::vector<NodeDevice> devices_;
  std::vector<bool> healthy_;
  /// The last reading of the physical device said lost.
  std::vector<bool> lost_;
  /// A critical event hit the unit and it has not recovered yet.
  std::vector<bool> critical_;
  /// The unit's sharing service (MPS control daemon) is down.
  std::vector<bool> service_down_;
  std::vector<Clock::time_point> last_critical_;
  uint64_t generation_ = 0;
};

}  // namespace accel::kube
