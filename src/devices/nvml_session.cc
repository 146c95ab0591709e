#include "devices/nvml_session.h"

#include "common/strings.h"
#include "devices/backend.h"
#include "devices/topology_join.h"

namespace accel::devices {

using namespace nvml;

namespace {

// Without these no user of NVML can even name a device.
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


}  // namespace

const std::vector<std::string>& NvmlDefaultCandidates() {
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

// ---- NvmlSession ----

NvmlSession::NvmlSession(std::unique_ptr<SharedLibrary> library, const NvmlSessionOptions& options)
    : library_(std::move(library)) {
  std::vector<std::string> missing = api_.Load(*library_);
  if (options.also_required) {
    std::vector<std::string> more = options.also_required(api_);
    missing.insert(missing.end(), more.begin(), more.end());
  }
  if (!missing.empty()) {
    throw BackendError("NVML (" + path() + "): " + options.missing_what + ": " + JoinStrings(missing, ", ") +
                       " (" + options.missing_fix + ")");
  }
  bool allow_no_gpus = options.init == NvmlInit::kAllowNoGpus;
  nvmlReturn_t rc = allow_no_gpus ? api_.nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS)
                                  : api_.nvmlInit_v2();
  if (rc != NVML_SUCCESS) {
    throw BackendError(Failure(allow_no_gpus ? "nvmlInitWithFlags" : "nvmlInit_v2", rc) + " (" +
                       InitHint(rc) + ")");
  }
}

NvmlSession::~NvmlSession() { api_.nvmlShutdown(); }

nvmlDevice_t NvmlSession::DeviceAt(const std::string& pci_address) const {
  std::string canonical = CanonicalPciAddress(pci_address);
  nvmlDevice_t handle = nullptr;
  if (canonical.empty() || !api_.nvmlDeviceGetHandleByPciBusId_v2 ||
      api_.nvmlDeviceGetHandleByPciBusId_v2(NvmlPciBusId(canonical).c_str(), &handle) !=
          NVML_SUCCESS) {
    return nullptr;
  }
  return handle;
}

std::string NvmlSession::Failure(const std::string& call, nvmlReturn_t rc) const {
  return "NVML (" + path() + "): " + call + " failed: " + api_.ErrorString(rc);
}

// ---- Opening ----

std::unique_ptr<NvmlSession> OpenNvmlSession(const std::string& library,
                                             const NvmlSessionOptions& options,
                                             const std::string& fix) {
  std::unique_ptr<SharedLibrary> loaded =
      LoadVendorLibrary(library, NvmlDefaultCandidates(), "NVML", fix);
  if (!loaded) return nullptr;
  return std::make_unique<NvmlSession>(std::move(loaded), options);
}

std::unique_ptr<NvmlSession> TryNvmlSession(const std::string& library_path,
                                            const std::function<bool(const NvmlApi&)>& usable) {
  if (library_path.empty()) return nullptr;  // dlopen("") would be the program itself
  NvmlSessionOptions options;
  options.init = NvmlInit::kNeedGpus;
  options.also_required = [&usable](const NvmlApi& api) {
    bool ok = api.nvmlDeviceGetHandleByPciBusId_v2 && (!usable || usable(api));
    return ok ? std::vector<std::string>{} : std::vector<std::string>{"(a query function)"};
  };
  try {
    std::unique_ptr<SharedLibrary> loaded =
        LoadVendorLibrary(library_path, {}, "NVML", "best effort");
    if (!loaded) return nullptr;
    return std::make_unique<NvmlSession>(std::move(loaded), options);
  } catch (const std::exception&) {
    return nullptr;
  }
}

}  // namespace accel::devices
