// The fake driver's global state, handles, and the per-call bookkeeping (init check, call
// counting, injected faults).
#include <cmath>
#include <cstring>
#include <thread>

#include "fake_nvml.h"

namespace fake_nvml {

namespace {

// Handles are addresses inside these arrays: stable for the process, distinct per GPU and per
// MIG device, and decodable without a lookup table. Slot 0 of a row is the GPU itself.
char g_device_tokens[kMaxDevices][1 + kMaxMigDevices];
char g_gpu_instance_tokens[kMaxDevices][kMaxMigDevices];
char g_compute_instance_tokens[kMaxDevices][kMaxMigDevices];

bool FaultActive(const Fault& fault, const std::string& function, unsigned long long call_number) {
  if (fault.function != "*" && fault.function != function) return false;
  if (fault.times != 0 && call_number > fault.after_calls + fault.times) return false;
  return call_number > fault.after_calls && MillisSinceInit() >= fault.after_ms;
}

}  // namespace

State& Global() {
  static State* state = new State;  // never destroyed: hung callers may still hold it at exit
  return *state;
}

double SecondsSinceInit() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - Global().init_time)
      .count();
}

long long MillisSinceInit() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               Global().init_time)
      .count();
}

std::optional<double> ReadValue(Metrics& metrics, const std::string& name) {
  auto it = metrics.find(name);
  if (it == metrics.end()) return std::nullopt;
  ValueSpec& spec = it->second;
  if (spec.ramp) return spec.start + spec.per_second * SecondsSinceInit();
  double value = spec.cycle[spec.next];
  spec.next = (spec.next + 1) % spec.cycle.size();
  return value;
}

nvmlReturn_t CopyString(const std::string& text, char* out, unsigned length) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

nvmlDevice_t DeviceHandle(int device) {
  return reinterpret_cast<nvmlDevice_t>(&g_device_tokens[device][0]);
}

nvmlDevice_t MigHandle(int device, int mig) {
  return reinterpret_cast<nvmlDevice_t>(&g_device_tokens[device][1 + mig]);
}

nvmlGpuInstance_t GpuInstanceHandle(int device, int slot) {
  return reinterpret_cast<nvmlGpuInstance_t>(&g_gpu_instance_tokens[device][slot]);
}

nvmlComputeInstance_t ComputeInstanceHandle(int device, int slot) {
  return reinterpret_cast<nvmlComputeInstance_t>(&g_compute_instance_tokens[device][slot]);
}

bool DecodeDevice(nvmlDevice_t handle, int* device, int* mig) {
  const char* p = reinterpret_cast<const char*>(handle);
  const char* base = &g_device_tokens[0][0];
  if (p < base || p >= base + sizeof g_device_tokens) return false;
  size_t offset = p - base;
  *device = static_cast<int>(offset / (1 + kMaxMigDevices));
  *mig = static_cast<int>(offset % (1 + kMaxMigDevices)) - 1;
  const Config& config = Global().config;
  if (*device >= static_cast<int>(config.devices.size())) return false;
  return *mig < static_cast<int>(config.devices[*device].mig.size());
}

bool DecodeGpuInstance(nvmlGpuInstance_t handle, int* device, int* slot) {
  const char* p = reinterpret_cast<const char*>(handle);
  const char* base = &g_gpu_instance_tokens[0][0];
  if (p < base || p >= base + sizeof g_gpu_instance_tokens) return false;
  size_t offset = p - base;
  *device = static_cast<int>(offset / kMaxMigDevices);
  *slot = static_cast<int>(offset % kMaxMigDevices);
  return true;
}

bool DecodeComputeInstance(nvmlComputeInstance_t handle, int* device, int* slot) {
  const char* p = reinterpret_cast<const char*>(handle);
  const char* base = &g_compute_instance_tokens[0][0];
  if (p < base || p >= base + sizeof g_compute_instance_tokens) return false;
  size_t offset = p - base;
  *device = static_cast<int>(offset / kMaxMigDevices);
  *slot = static_cast<int>(offset % kMaxMigDevices);
  return true;
}

const std::set<std::string>& FunctionNames() {
#define FAKE_NVML_NAME(name, params) #name,
  static const std::set<std::string> names = {ACCEL_NVML_FUNCTIONS(FAKE_NVML_NAME)};
#undef FAKE_NVML_NAME
  return names;
}

GlobalCall::GlobalCall() : lock_(Global().mu) {
  if (Global().init_count == 0) rc_ = NVML_ERROR_UNINITIALIZED;
}

DeviceCall::DeviceCall(const char* function, nvmlDevice_t handle, bool allow_mig)
    : lock_(Global().mu) {
  rc_ = Enter(function, handle, allow_mig);
}

nvmlReturn_t DeviceCall::Enter(const char* function, nvmlDevice_t handle, bool allow_mig) {
  State& state = Global();
  if (state.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (!DecodeDevice(handle, &position_, &mig_)) return NVML_ERROR_INVALID_ARGUMENT;
  Device* dev = &device();
  if (dev->lost) return NVML_ERROR_GPU_IS_LOST;
  unsigned long long call_number = ++dev->calls[function];
  unsigned long long any_call_number = ++dev->calls["*"];
  for (size_t i = 0; i < dev->faults.size(); ++i) {
    Fault fault = dev->faults[i];  // a copy: the config may be replaced while we sleep
    if (!FaultActive(fault, function, fault.function == "*" ? any_call_number : call_number))
      continue;
    if (fault.hang_ms != 0) {
      // Hang with the lock released: other GPUs keep answering, like a real wedged device.
      lock_.unlock();
      if (fault.hang_ms < 0) {
        for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(fault.hang_ms));
      lock_.lock();
      if (state.init_count == 0 || position_ >= static_cast<int>(state.config.devices.size())) {
        return NVML_ERROR_UNINITIALIZED;
      }
      dev = &device();
    }
    if (fault.error) {
      if (*fault.error == NVML_ERROR_GPU_IS_LOST) dev->lost = true;
      return *fault.error;
    }
  }
  if (dev->not_supported.count(function)) return NVML_ERROR_NOT_SUPPORTED;
  if (mig_ >= 0 && !allow_mig) return NVML_ERROR_NOT_SUPPORTED;
  return NVML_SUCCESS;
}

std::optional<double> DeviceCall::Metric(const std::string& name) {
  Device& dev = device();
  if (dev.not_supported.count(name)) return std::nullopt;
  return ReadValue(dev.metrics, name);
}

}  // namespace fake_nvml
