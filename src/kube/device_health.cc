// DeviceHealth: NVIDIA's XID policy (internal/rm/health.go) with two changes users asked for
// (issues #234, #1340): every replica of a GPU follows the unit (replicas are not tracked here at
// all), and a unit recovers after a quiet period instead of staying unhealthy until restart.
#include "kube/device_health.h"

namespace accel::kube {

DeviceHealth::DeviceHealth(const std::vector<NodeDevice>& devices, HealthPolicy policy)
    : policy_(std::move(policy)),
      devices_(devices),
      healthy_(devices.size(), true),
      lost_(devices.size(), false),
      critical_(devices.size(), false),
      service_down_(devices.size(), false),
      last_critical_(devices.size()) {}

bool DeviceHealth::Update(size_t i) {
  bool healthy = !service_down_[i] && (!policy_.enabled || (!lost_[i] && !critical_[i]));
  if (healthy == healthy_[i]) return false;
  healthy_[i] = healthy;
  ++generation_;
  return true;
}

void DeviceHealth::MaybeRecover(size_t i, Clock::time_point now) {
  if (!critical_[i] || lost_[i] || policy_.recover_after_seconds <= 0) return;
  if (now - last_critical_[i] >= std::chrono::seconds(policy_.recover_after_seconds)) {
    critical_[i] = false;
  }
}

bool DeviceHealth::OnEvent(const devices::HealthEvent& event, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!policy_.enabled) return false;
  if (event.vendor == devices::Vendor::kNvidia && policy_.ignored_xids.count(event.code)) {
    return false;
  }
  auto on_device = [&](size_t i) {
    return devices_[i].vendor == event.vendor && devices_[i].index == event.device_index;
  };
  bool scoped = false;  // a MIG device matches the event's GPU instance
  if (event.gpu_instance_id) {
    for (size_t i = 0; i < devices_.size(); ++i) {
      scoped |= on_device(i) && devices_[i].is_mig() &&
                devices_[i].gpu_instance_id == *event.gpu_instance_id;
    }
  }
  bool changed = false;
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (!on_device(i)) continue;
    // A scoped event spares sibling MIG devices; the whole GPU contains the instance.
    if (scoped && devices_[i].is_mig() && devices_[i].gpu_instance_id != *event.gpu_instance_id) {
      continue;
    }
    critical_[i] = true;
    last_critical_[i] = now;
    changed |= Update(i);
  }
  return changed;
}

bool DeviceHealth::OnReading(devices::Vendor vendor, unsigned index,
                             const devices::DeviceReading& reading, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  bool changed = false;
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].vendor != vendor || devices_[i].index != index) continue;
    lost_[i] = reading.lost;
    MaybeRecover(i, now);
    changed |= Update(i);
  }
  return changed;
}

bool DeviceHealth::Tick(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  bool changed = false;
  for (size_t i = 0; i < devices_.size(); ++i) {
    MaybeRecover(i, now);
    changed |= Update(i);
  }
  return changed;
}

bool DeviceHealth::SetServiceDown(const std::vector<size_t>& units, bool down) {
  std::lock_guard<std::mutex> lock(mu_);
  bool changed = false;
  for (size_t i : units) {
    if (i >= devices_.size()) continue;
    service_down_[i] = down;
    changed |= Update(i);
  }
  return changed;
}

bool DeviceHealth::healthy(size_t i) const {
  std::lock_guard<std::mutex> lock(mu_);
  return i < healthy_.size() && healthy_[i];
}

uint64_t DeviceHealth::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return generation_;
}

}  // namespace accel::kube
