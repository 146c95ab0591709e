// Event sets: XIDs from the config, delivered once each when their time since init has come.
#include <algorithm>
#include <cstring>
#include <thread>

#include "fake_nvml.h"

using namespace fake_nvml;

namespace {

// Longest a waiter sleeps between looks at the state, so a shutdown or a newly due event is
// noticed quickly.
constexpr auto kPollStep = std::chrono::milliseconds(5);

// The next due, undelivered XID on a device registered in `set`; also reports when the earliest
// not-yet-due one comes (ms since init), or -1 when none.
XidEvent* DueEvent(EventSet& set, int* device, long long* next_at_ms) {
  Config& config = Global().config;
  long long now = MillisSinceInit();
  XidEvent* best = nullptr;
  *next_at_ms = -1;
  for (const auto& [position, types] : set.registered) {
    if (!(types & nvmlEventTypeXidCriticalError) ||
        position >= static_cast<int>(config.devices.size()))
      continue;
    for (XidEvent& e : config.devices[position].events) {
      if (e.delivered) continue;
      if (e.at_ms > now) {
        if (*next_at_ms < 0 || e.at_ms < *next_at_ms) *next_at_ms = e.at_ms;
      } else if (!best || e.at_ms < best->at_ms) {
        best = &e;
        *device = position;
      }
    }
  }
  return best;
}

nvmlReturn_t Wait(nvmlEventSet_t handle, nvmlEventData_t* data, unsigned timeout_ms, bool v2) {
  if (!data) return NVML_ERROR_INVALID_ARGUMENT;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::chrono::steady_clock::duration sleep = kPollStep;
    {
      GlobalCall call;
      if (call.rc() != NVML_SUCCESS) return call.rc();
      auto* set = reinterpret_cast<EventSet*>(handle);
      if (!call.state().event_sets.count(set)) return NVML_ERROR_INVALID_ARGUMENT;
      int device = -1;
      long long next_at_ms = -1;
      if (XidEvent* e = DueEvent(*set, &device, &next_at_ms)) {
        e->delivered = true;
        nvmlEventData_t out{};
        out.device = DeviceHandle(device);
        out.eventType = nvmlEventTypeXidCriticalError;
        out.eventData = e->xid;
        out.gpuInstanceId = e->gpu_instance_id;
        out.computeInstanceId = e->compute_instance_id;
        // The legacy call predates the instance ids and writes only what came before them.
        std::memcpy(data, &out, v2 ? sizeof out : kNvmlEventDataV1Size);
        return NVML_SUCCESS;
      }
      if (next_at_ms >= 0) {
        sleep = std::min<std::chrono::steady_clock::duration>(
            sleep, std::chrono::milliseconds(std::max(0LL, next_at_ms - MillisSinceInit())));
      }
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return NVML_ERROR_TIMEOUT;
    std::this_thread::sleep_for(std::min(sleep, deadline - now));
  }
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (!set) return NVML_ERROR_INVALID_ARGUMENT;
  GlobalCall call;
  if (call.rc() != NVML_SUCCESS) return call.rc();
  auto* created = new EventSet;
  call.state().event_sets.insert(created);
  *set = reinterpret_cast<nvmlEventSet_t>(created);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  GlobalCall call;
  if (call.rc() != NVML_SUCCESS) return call.rc();
  auto* existing = reinterpret_cast<EventSet*>(set);
  if (!call.state().event_sets.erase(existing)) return NVML_ERROR_INVALID_ARGUMENT;
  delete existing;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                               unsigned long long* eventTypes) {
  if (!eventTypes) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetSupportedEventTypes", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  *eventTypes = call.device().supported_event_types;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                                       unsigned long long eventTypes,
                                                       nvmlEventSet_t set) {
  DeviceCall call("nvmlDeviceRegisterEvents", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  auto* existing = reinterpret_cast<EventSet*>(set);
  if (!Global().event_sets.count(existing)) return NVML_ERROR_INVALID_ARGUMENT;
  if (eventTypes & ~call.device().supported_event_types) return NVML_ERROR_NOT_SUPPORTED;
  existing->registered[call.position()] |= eventTypes;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                  unsigned int timeoutms) {
  return Wait(set, data, timeoutms, /*v2=*/true);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data,
                                               unsigned int timeoutms) {
  return Wait(set, data, timeoutms, /*v2=*/false);
}
