// The XID channel (telemetry.md §2.7): one NVML event set, XidCriticalError only.
#include <climits>
#include <thread>

#include "devices/nvml_backend.h"

namespace accel::devices {

using namespace nvml;

namespace {

// After this many failures in a row the set is considered broken (DCGM gives up at 1000 too);
// Wait then just sleeps instead of spinning on a wedged driver.
constexpr int kMaxConsecutiveErrors = 1000;
// Events already queued are drained in one Wait, up to this many.
constexpr int kMaxDrain = 256;

unsigned ToTimeoutMs(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) return 0;
  return timeout.count() >= UINT_MAX ? UINT_MAX - 1 : static_cast<unsigned>(timeout.count());
}

}  // namespace

NvmlEvents::NvmlEvents(const NvmlApi& api, const std::vector<nvmlDevice_t>& handles,
                       const std::vector<unsigned>& indices)
    : api_(api) {
  if (!api.nvmlEventSetCreate || !api.nvmlEventSetFree || !api.nvmlDeviceGetSupportedEventTypes ||
      !api.nvmlDeviceRegisterEvents || (!api.nvmlEventSetWait_v2 && !api.nvmlEventSetWait)) {
    return;
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    unsigned long long supported = 0;
    if (api.nvmlDeviceGetSupportedEventTypes(handles[i], &supported) != NVML_SUCCESS ||
        !(supported & nvmlEventTypeXidCriticalError)) {
      continue;  // vGPU guests and some consumer boards have no XID events
    }
    if (!set_ && api.nvmlEventSetCreate(&set_) != NVML_SUCCESS) {
      set_ = nullptr;
      return;
    }
    if (api.nvmlDeviceRegisterEvents(handles[i], nvmlEventTypeXidCriticalError, set_) ==
        NVML_SUCCESS) {
      index_by_handle_[handles[i]] = indices[i];
    }
  }
  if (set_ && index_by_handle_.empty()) {
    api.nvmlEventSetFree(set_);
    set_ = nullptr;
  }
}

NvmlEvents::~NvmlEvents() {
  if (set_) api_.nvmlEventSetFree(set_);
}

std::optional<unsigned> NvmlEvents::IndexOf(nvmlDevice_t handle) const {
  auto it = index_by_handle_.find(handle);
  if (it != index_by_handle_.end()) return it->second;
  // Some drivers report a MIG-scoped event on the MIG device handle: map it to its parent.
  nvmlDevice_t parent = nullptr;
  if (api_.nvmlDeviceGetDeviceHandleFromMigDeviceHandle &&
      api_.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(handle, &parent) == NVML_SUCCESS) {
    it = index_by_handle_.find(parent);
    if (it != index_by_handle_.end()) return it->second;
  }
  return std::nullopt;
}

nvmlReturn_t NvmlEvents::WaitOne(nvmlEventData_t* data, unsigned timeout_ms) {
  *data = nvmlEventData_t{};
  // The legacy call leaves the instance ids untouched: pre-set them to "device-wide".
  data->gpuInstanceId = kNvmlNoInstance;
  data->computeInstanceId = kNvmlNoInstance;
  return api_.nvmlEventSetWait_v2 ? api_.nvmlEventSetWait_v2(set_, data, timeout_ms)
                                  : api_.nvmlEventSetWait(set_, data, timeout_ms);
}

std::vector<HealthEvent> NvmlEvents::Wait(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<HealthEvent> events;
  if (!set_ || consecutive_errors_ >= kMaxConsecutiveErrors) {
    std::this_thread::sleep_for(timeout);
    return events;
  }
  nvmlEventData_t data;
  nvmlReturn_t rc = WaitOne(&data, ToTimeoutMs(timeout));
  for (int drained = 0; rc == NVML_SUCCESS && drained < kMaxDrain; ++drained) {
    std::optional<unsigned> index = IndexOf(data.device);
    if ((data.eventType & nvmlEventTypeXidCriticalError) && index) {
      HealthEvent event;
      event.device_index = *index;
      event.vendor = Vendor::kNvidia;
      event.code = data.eventData;
      if (data.gpuInstanceId != kNvmlNoInstance) event.gpu_instance_id = data.gpuInstanceId;
      event.when = std::chrono::system_clock::now();
      events.push_back(event);
    }
    rc = WaitOne(&data, 0);
  }
  if (rc == NVML_SUCCESS || rc == NVML_ERROR_TIMEOUT || !events.empty()) {
    consecutive_errors_ = 0;
  } else {
    // Errors come back at once; sleeping out the timeout keeps a caller's loop from spinning.
    ++consecutive_errors_;
    std::this_thread::sleep_for(timeout);
  }
  return events;
}

}  // namespace accel::devices
