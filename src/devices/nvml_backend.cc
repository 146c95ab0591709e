#include "devices/nvml_backend.h"

#include <algorithm>
#include <stdexcept>

#include "devices/topology_join.h"

namespace accel::devices {

using namespace nvml;

namespace {

// Reads a string attribute; "" when NVML refuses (serial and VBIOS are optional).
template <typename Function>
std::string ReadString(Function* function, nvmlDevice_t handle, unsigned size) {
  if (!function) return "";
  std::vector<char> buffer(size + 1, '\0');
  if (function(handle, buffer.data(), size) != NVML_SUCCESS) return "";
  return std::string(buffer.data());
}

}  // namespace

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

NvmlBackend::NvmlBackend(std::unique_ptr<NvmlSession> session) : session_(std::move(session)) {
  Enumerate();
}

NvmlBackend::~NvmlBackend() {
  events_.reset();
  for (auto& state : states_) {
    FreeGpm(api(), &state->gpm);
    for (auto& [gi, pair] : state->mig_gpm) FreeGpm(api(), &pair);
  }
}

void NvmlBackend::SetExtraReads(const ExtraReads& extra) {
  extra_ = extra;
  if (!extra.identity_details) return;
  for (size_t i = 0; i < states_.size(); ++i) {
    if (states_[i]->handle) ReadIdentityDetails(api(), states_[i]->handle, &identities_[i]);
  }
}

void NvmlBackend::Enumerate() {
  const NvmlApi& nvml = api();
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE + 1] = {};
  if (nvml.nvmlSystemGetDriverVersion(version, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE) ==
      NVML_SUCCESS) {
    driver_version_ = version;
  }
  unsigned count = 0;
  nvmlReturn_t rc = nvml.nvmlDeviceGetCount_v2(&count);
  if (rc != NVML_SUCCESS) {
    throw BackendError(session_->Failure("nvmlDeviceGetCount_v2", rc) +
                       " (the driver answered nvmlInit but not enumeration; check `nvidia-smi`)");
  }

  std::vector<nvmlDevice_t> event_handles;
  std::vector<unsigned> event_indices;
  for (unsigned i = 0; i < count; ++i) {
    DeviceIdentity id;
    id.vendor = Vendor::kNvidia;
    id.index = i;
    id.driver_version = driver_version_;
    auto state = std::make_unique<NvmlDeviceState>();
    rc = nvml.nvmlDeviceGetHandleByIndex_v2(i, &state->handle);
    if (rc != NVML_SUCCESS) {
      state->handle = nullptr;
      state->lost = rc == NVML_ERROR_GPU_IS_LOST;
      state->fatal_error = "nvmlDeviceGetHandleByIndex_v2: " + nvml.ErrorString(rc);
    } else {
      nvmlDevice_t h = state->handle;
      unsigned value = 0;
      if (nvml.nvmlDeviceGetIndex(h, &value) == NVML_SUCCESS) id.index = value;
      id.uuid = ReadString(nvml.nvmlDeviceGetUUID, h, NVML_DEVICE_UUID_V2_BUFFER_SIZE);
      id.model = ReadString(nvml.nvmlDeviceGetName, h, NVML_DEVICE_NAME_V2_BUFFER_SIZE);
      id.serial = ReadString(nvml.nvmlDeviceGetSerial, h, NVML_DEVICE_SERIAL_BUFFER_SIZE);
      id.firmware_version =
          ReadString(nvml.nvmlDeviceGetVbiosVersion, h, NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE);
      if (nvml.nvmlDeviceGetMinorNumber(h, &value) == NVML_SUCCESS)
        id.minor = static_cast<int>(value);
      nvmlPciInfo_t pci{};
      if (nvml.nvmlDeviceGetPciInfo_v3(h, &pci) == NVML_SUCCESS) {
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
  events_ = std::make_unique<NvmlEvents>(nvml, event_handles, event_indices);
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
  NvmlReadContext ctx(api(), extra_, state, reading);
  ReadGpuSample(ctx);
  ReadGpm(ctx, &state.gpm, std::nullopt, NvmlSlot::kGpm, &reading.sample);
  if (!ctx.lost()) ReadMig(ctx);
  if (!ctx.lost() && extra_.p2p_status) {
    std::vector<std::pair<nvmlDevice_t, unsigned>> peers;
    for (size_t i = 0; i < states_.size(); ++i) {
      // Handles are fixed after open; another device's lock is not needed to pass its handle.
      if (i != position && states_[i]->handle) peers.emplace_back(states_[i]->handle, identities_[i].index);
    }
    ReadP2p(ctx, peers);
  }
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
  // NO_GPUS: a node whose driver sees no GPU is a node with zero devices, not a broken node.
  NvmlSessionOptions options;
  options.init = NvmlInit::kAllowNoGpus;
  std::unique_ptr<NvmlSession> session = OpenNvmlSession(
      library, options, "install the NVIDIA driver's libnvidia-ml.so.1 or fix --nvml-library");
  if (!session) return nullptr;
  return std::make_unique<NvmlBackend>(std::move(session));
}

}  // namespace accel::devices
