#include "devices/nvml_backend.h"

#include <algorithm>
#include <stdexcept>

#include "devices/topology_join.h"

namespace accel::devices {

using namespace nvml;

namespace {

// Without these the backend cannot even name its devices.
const char* const kRequired[] = {
    "nvmlInit_v2",
    "nvmlInitWithFlags",
    "nvmlShutdown",
    "nvmlErrorString",
    "nvmlSystemGetDriverVersion",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetName",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetIndex",
    "nvmlDeviceGetMinorNumber",
};

std::string InitHint(nvmlReturn_t rc) {
  switch (rc) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "the NVIDIA kernel driver is not loaded: check `lsmod | grep nvidia` and dmesg";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "libnvidia-ml and the kernel driver differ (driver upgraded without reboot?): reboot "
             "or reload the nvidia modules";
    case NVML_ERROR_NO_PERMISSION:
      return "no access to /dev/nvidia*: run privileged or pass the device nodes in";
    default: return "check that `nvidia-smi` works on this node, or pass --nvml-library";
  }
}

// Reads a string attribute; "" when NVML refuses (serial and VBIOS are optional).
template <typename Function>
std::string ReadString(Function* function, nvmlDevice_t handle, unsigned size) {
  if (!function) return "";
  std::vector<char> buffer(size + 1, '\0');
  if (function(handle, buffer.data(), size) != NVML_SUCCESS) return "";
  return std::string(buffer.data());
}

}  // namespace

const std::vector<std::string>& NvmlDefaultCandidates() {
  // Where container toolkits and the GPU Operator's driver container put the library.
  static const std::vector<std::string> candidates = {
      "libnvidia-ml.so.1",
      "/usr/local/nvidia/lib64/libnvidia-ml.so.1",
      "/run/nvidia/driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
  };
  return candidates;
}

// ---- NvmlApi ----

std::vector<std::string> NvmlApi::Load(const SharedLibrary& library) {
#define ACCEL_NVML_RESOLVE(name, params) name = library.Function<nvml::name##_fn>(#name);
  ACCEL_NVML_FUNCTIONS(ACCEL_NVML_RESOLVE)
#undef ACCEL_NVML_RESOLVE
  nvmlErrorString = library.Function<nvml::nvmlErrorString_fn>("nvmlErrorString");
  std::vector<std::string> missing;
  for (const char* name : kRequired) {
    if (!library.Symbol(name)) missing.push_back(name);
  }
  return missing;
}

std::string NvmlApi::ErrorString(nvmlReturn_t rc) const {
  const char* text = nvmlErrorString ? nvmlErrorString(rc) : nullptr;
  return text && *text ? text : "NVML error " + std::to_string(static_cast<int>(rc));
}

// ---- NvmlReadContext ----

bool NvmlReadContext::Want(NvmlSlot slot, bool function_present) {
  if (device_.lost) return false;
  if (!function_present) MarkUnsupported(slot);
  return !Unsupported(slot);
}

bool NvmlReadContext::Check(NvmlSlot slot, const char* function, nvmlReturn_t rc) {
  switch (rc) {
    case NVML_SUCCESS: return true;
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_DEPRECATED:
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: MarkUnsupported(slot); return false;
    default: return CheckCall(function, rc);
  }
}

bool NvmlReadContext::CheckCall(const char* function, nvmlReturn_t rc) {
  if (rc == NVML_SUCCESS) return true;
  if (rc == NVML_ERROR_GPU_IS_LOST) {
    device_.lost = true;
    reading_.lost = true;
  }
  if (rc != NVML_ERROR_NOT_SUPPORTED && rc != NVML_ERROR_FUNCTION_NOT_FOUND) {
    reading_.error = std::string(function) + ": " + api_.ErrorString(rc);
  }
  return false;
}

// ---- NvmlBackend ----

NvmlBackend::NvmlBackend(std::unique_ptr<SharedLibrary> library) : library_(std::move(library)) {
  std::vector<std::string> missing = api_.Load(*library_);
  if (!missing.empty()) {
    std::string names;
    for (const std::string& name : missing) names += (names.empty() ? "" : ", ") + name;
    throw BackendError("NVML (" + library_->path() + "): required symbols missing: " + names +
                       " (the library is too old or not NVIDIA's; use the driver's "
                       "libnvidia-ml.so.1 or pass --nvml-library)");
  }
  Init();
  try {
    Enumerate();
  } catch (...) {
    api_.nvmlShutdown();
    throw;
  }
}

NvmlBackend::~NvmlBackend() {
  events_.reset();
  for (auto& state : states_) {
    FreeGpm(api_, &state->gpm);
    for (auto& [gi, pair] : state->mig_gpm) FreeGpm(api_, &pair);
  }
  if (initialised_) api_.nvmlShutdown();
}

std::string NvmlBackend::Fail(const std::string& call, nvmlReturn_t rc,
                              const std::string& hint) const {
  return "NVML (" + library_->path() + "): " + call + " failed: " + api_.ErrorString(rc) + " (" +
         hint + ")";
}

void NvmlBackend::Init() {
  // NO_GPUS: a node whose driver sees no GPU is a node with zero devices, not a broken node.
  nvmlReturn_t rc = api_.nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS);
  if (rc != NVML_SUCCESS) throw BackendError(Fail("nvmlInitWithFlags", rc, InitHint(rc)));
  initialised_ = true;
}

void NvmlBackend::Enumerate() {
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE + 1] = {};
  if (api_.nvmlSystemGetDriverVersion(version, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE) ==
      NVML_SUCCESS) {
    driver_version_ = version;
  }
  unsigned count = 0;
  nvmlReturn_t rc = api_.nvmlDeviceGetCount_v2(&count);
  if (rc != NVML_SUCCESS) throw BackendError(Fail("nvmlDeviceGetCount_v2", rc, InitHint(rc)));

  std::vector<nvmlDevice_t> event_handles;
  std::vector<unsigned> event_indices;
  for (unsigned i = 0; i < count; ++i) {
    DeviceIdentity id;
    id.vendor = Vendor::kNvidia;
    id.index = i;
    id.driver_version = driver_version_;
    auto state = std::make_unique<NvmlDeviceState>();
    rc = api_.nvmlDeviceGetHandleByIndex_v2(i, &state->handle);
    if (rc != NVML_SUCCESS) {
      state->handle = nullptr;
      state->lost = rc == NVML_ERROR_GPU_IS_LOST;
      state->fatal_error = "nvmlDeviceGetHandleByIndex_v2: " + api_.ErrorString(rc);
    } else {
      nvmlDevice_t h = state->handle;
      unsigned value = 0;
      if (api_.nvmlDeviceGetIndex(h, &value) == NVML_SUCCESS) id.index = value;
      id.uuid = ReadString(api_.nvmlDeviceGetUUID, h, NVML_DEVICE_UUID_V2_BUFFER_SIZE);
      id.model = ReadString(api_.nvmlDeviceGetName, h, NVML_DEVICE_NAME_V2_BUFFER_SIZE);
      id.serial = ReadString(api_.nvmlDeviceGetSerial, h, NVML_DEVICE_SERIAL_BUFFER_SIZE);
      id.firmware_version =
          ReadString(api_.nvmlDeviceGetVbiosVersion, h, NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE);
      if (api_.nvmlDeviceGetMinorNumber(h, &value) == NVML_SUCCESS)
        id.minor = static_cast<int>(value);
      nvmlPciInfo_t pci{};
      if (api_.nvmlDeviceGetPciInfo_v3(h, &pci) == NVML_SUCCESS) {
        pci.busId[sizeof pci.busId - 1] = '\0';
        pci.busIdLegacy[sizeof pci.busIdLegacy - 1] = '\0';
        id.pci_address = CanonicalPciAddress(pci.busId);
        if (id.pci_address.empty()) id.pci_address = CanonicalPciAddress(pci.busIdLegacy);
      }
      event_handles.push_back(h);
      event_indices.push_back(id.index);
    }
    identities_.push_back(std::move(id));
    states_.push_back(std::move(state));
  }
  events_ = std::make_unique<NvmlEvents>(api_, event_handles, event_indices);
}

DeviceReading NvmlBackend::Read(size_t position) {
  if (position >= states_.size()) {
    throw std::out_of_range("NvmlBackend::Read: no device at position " + std::to_string(position));
  }
  NvmlDeviceState& state = *states_[position];
  std::lock_guard<std::mutex> lock(state.mu);
  DeviceReading reading;
  if (state.lost) {
    reading.lost = true;
    reading.error = state.fatal_error;
    return reading;
  }
  if (!state.handle) {
    reading.error = state.fatal_error;
    return reading;
  }
  NvmlReadContext ctx(api_, state, reading);
  ReadGpuSample(ctx);
  ReadGpm(ctx, &state.gpm, std::nullopt, NvmlSlot::kGpm, &reading.sample);
  if (!ctx.lost()) ReadMig(ctx);
  if (ctx.lost()) {
    // A device that vanished mid-read reports only that, never half a sample.
    DeviceReading lost;
    lost.lost = true;
    lost.error = reading.error;
    state.fatal_error = reading.error;
    return lost;
  }
  return reading;
}

std::vector<HealthEvent> NvmlBackend::WaitEvents(std::chrono::milliseconds timeout) {
  return events_->Wait(timeout);
}

// ---- OpenNvml ----

std::unique_ptr<DeviceBackend> OpenNvml(const std::string& library) {
  std::unique_ptr<SharedLibrary> loaded = LoadVendorLibrary(
      library, NvmlDefaultCandidates(), "NVML",
      "install the NVIDIA driver's libnvidia-ml.so.1 or fix --nvml-library");
  if (!loaded) return nullptr;
  return std::make_unique<NvmlBackend>(std::move(loaded));
}

}  // namespace accel::devices
