// Lifecycle, system queries, enumeration and identity.
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "fake_nvml.h"

using namespace fake_nvml;

namespace {

const char* const kErrorStrings[] = {
    "Success",
    "Uninitialized",
    "Invalid Argument",
    "Not Supported",
    "Insufficient Permissions",
    "Already Initialized",
    "Not Found",
    "Insufficient Size",
    "Insufficient External Power",
    "Driver Not Loaded",
    "Timeout",
    "Interrupt Request Issue",
    "NVML Shared Library Not Found",
    "Function Not Found",
    "Corrupted infoROM",
    "GPU is lost",
    "GPU requires restart",
    "The operating system has blocked the request.",
    "RM has detected an NVML/RM version mismatch.",
    "In use by another client",
    "Insufficient Memory",
    "No data",
    "The requested vgpu operation is not available on target device, because ECC is enabled",
    "Insufficient resources",
    "Frequency not supported",
    "Argument version mismatch",
    "Deprecated",
    "Not ready",
    "GPU not found",
    "Invalid state",
    "Reset type not supported",
};

// A thread stuck in an injected "forever" hang must never return into unmapped code, so the fake
// pins itself in memory the first time it is initialised.
void KeepLoaded() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&KeepLoaded), &info) && info.dli_fname) {
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
}

// Loads FAKE_NVML_CONFIG into `config`; "" on success, else what is wrong.
std::string LoadConfig(const char* path, Config* config) {
  std::ifstream in(path);
  if (!in) return std::string("cannot read the file: ") + std::strerror(errno);
  std::stringstream text;
  text << in.rdbuf();
  try {
    *config = ParseConfig(text.str());
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

nvmlReturn_t Init() {
  State& state = Global();
  std::lock_guard<std::mutex> lock(state.mu);
  if (state.init_count > 0) {
    ++state.init_count;
    return NVML_SUCCESS;
  }
  Config config;
  const char* path = std::getenv("FAKE_NVML_CONFIG");
  if (path && *path) {
    std::string problem = LoadConfig(path, &config);
    if (!problem.empty()) {
      state.last_config_error = std::string("fake NVML: ") + path + ": " + problem;
      std::fprintf(stderr, "%s\n", state.last_config_error.c_str());
      return NVML_ERROR_UNKNOWN;
    }
  }
  state.last_config_error.clear();
  if (config.init_error) return *config.init_error;
  KeepLoaded();
  state.config = std::move(config);
  state.init_time = std::chrono::steady_clock::now();
  state.init_count = 1;
  return NVML_SUCCESS;
}

// Parses "0000:3b:00.0" / "00000000:3B:00.0" into a comparable tuple.
bool ParseBusId(const std::string& text, unsigned out[4]) {
  char tail = 0;
  return std::sscanf(text.c_str(), "%x:%x:%x.%x%c", &out[0], &out[1], &out[2], &out[3], &tail) == 4;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  return Init();
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
  return Init();
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlShutdown(void) {
  State& state = Global();
  std::lock_guard<std::mutex> lock(state.mu);
  if (state.init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (--state.init_count == 0) {
    WriteStateOut(state.config);
    // Like the driver: handles from this session die with it.
    for (EventSet* set : state.event_sets) delete set;
    for (GpmSample* sample : state.gpm_samples) delete sample;
    state.event_sets.clear();
    state.gpm_samples.clear();
  }
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  if (result >= 0 && result < static_cast<int>(std::size(kErrorStrings)))
    return kErrorStrings[result];
  if (result != NVML_ERROR_UNKNOWN) return "Unknown Error";
  // Name the config problem, so whoever reports nvmlInit's failure also reports why.
  static thread_local std::string text;
  std::lock_guard<std::mutex> lock(Global().mu);
  text = Global().last_config_error.empty() ? "Unknown Error"
                                            : "Unknown Error (" + Global().last_config_error + ")";
  return text.c_str();
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  GlobalCall call;
  if (call.rc() != NVML_SUCCESS) return call.rc();
  return CopyString(call.state().config.driver_version, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  GlobalCall call;
  if (call.rc() != NVML_SUCCESS) return call.rc();
  return CopyString(call.state().config.nvml_version, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  if (!cudaDriverVersion) return NVML_ERROR_INVALID_ARGUMENT;
  GlobalCall call;
  if (call.rc() != NVML_SUCCESS) return call.rc();
  *cudaDriverVersion = call.state().config.cuda_driver_version;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  if (!deviceCount) return NVML_ERROR_INVALID_ARGUMENT;
  GlobalCall call;
  if (call.rc() != NVML_SUCCESS) return call.rc();
  *deviceCount = static_cast<unsigned>(call.state().config.devices.size());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                            nvmlDevice_t* device) {
  if (!device) return NVML_ERROR_INVALID_ARGUMENT;
  if (index >= static_cast<unsigned>(kMaxDevices)) {
    GlobalCall call;
    return call.rc() != NVML_SUCCESS ? call.rc() : NVML_ERROR_INVALID_ARGUMENT;
  }
  DeviceCall call("nvmlDeviceGetHandleByIndex_v2", DeviceHandle(index));
  if (call.rc() != NVML_SUCCESS) return call.rc();
  *device = DeviceHandle(index);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
  GlobalCall call;
  if (call.rc() != NVML_SUCCESS) return call.rc();
  const auto& devices = call.state().config.devices;
  for (size_t d = 0; d < devices.size(); ++d) {
    if (devices[d].uuid == uuid) {
      *device = DeviceHandle(d);
      return NVML_SUCCESS;
    }
    for (size_t m = 0; m < devices[d].mig.size(); ++m) {
      if (devices[d].mig_mode == 1 && devices[d].mig[m].uuid == uuid) {
        *device = MigHandle(d, m);
        return NVML_SUCCESS;
      }
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId,
                                                               nvmlDevice_t* device) {
  if (!pciBusId || !device) return NVML_ERROR_INVALID_ARGUMENT;
  GlobalCall call;
  if (call.rc() != NVML_SUCCESS) return call.rc();
  unsigned wanted[4], have[4];
  if (!ParseBusId(pciBusId, wanted)) return NVML_ERROR_INVALID_ARGUMENT;
  const auto& devices = call.state().config.devices;
  for (size_t d = 0; d < devices.size(); ++d) {
    if (ParseBusId(devices[d].pci_bus_id, have) && std::equal(have, have + 4, wanted)) {
      *device = DeviceHandle(d);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  if (!index) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetIndex", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  *index = call.position();
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device,
                                                       unsigned int* minorNumber) {
  if (!minorNumber) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetMinorNumber", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  *minorNumber = call.device().minor;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                                unsigned int length) {
  DeviceCall call("nvmlDeviceGetUUID", device, /*allow_mig=*/true);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  return CopyString(call.mig() ? call.mig()->uuid : call.device().uuid, uuid, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                                unsigned int length) {
  DeviceCall call("nvmlDeviceGetName", device, /*allow_mig=*/true);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  std::string text = call.device().name;
  if (MigDevice* mig = call.mig()) {
    for (const MigProfile& p : call.device().profiles) {
      if (p.id == mig->profile_id) text += " " + p.name;
    }
  }
  return CopyString(text, name, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial,
                                                  unsigned int length) {
  DeviceCall call("nvmlDeviceGetSerial", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  if (call.device().serial.empty()) return NVML_ERROR_NOT_SUPPORTED;
  return CopyString(call.device().serial, serial, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t device, char* version,
                                                        unsigned int length) {
  DeviceCall call("nvmlDeviceGetVbiosVersion", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  return CopyString(call.device().vbios, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetPciInfo_v3", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  const Device& dev = call.device();
  unsigned parts[4] = {};
  ParseBusId(dev.pci_bus_id, parts);
  *pci = nvmlPciInfo_t{};
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", parts[0], parts[1],
                parts[2], parts[3]);
  // busId verbatim from the config, so tests can feed odd spellings to the canonicaliser.
  std::snprintf(pci->busId, sizeof pci->busId, "%s", dev.pci_bus_id.c_str());
  pci->domain = parts[0];
  pci->bus = parts[1];
  pci->device = parts[2];
  pci->pciDeviceId = dev.pci_device_id;
  pci->pciSubSystemId = dev.pci_subsystem_id;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device,
                                                           nvmlEnableState_t* mode) {
  return GetMetric("nvmlDeviceGetPersistenceMode", device, "persistence_mode", mode);
}
