// OpenNvmlMigControl and the NVML session its GPUs share.
#include "devices/mig_control.h"

#include "devices/nvml_mig_control.h"

namespace accel::devices {

using namespace nvml;

namespace {

// What MIG control calls besides the backend's required symbols (all present since R470).
std::vector<std::string> MissingMigSymbols(const NvmlApi& api) {
  std::vector<std::pair<const char*, bool>> wanted = {
      {"nvmlDeviceGetMigMode", api.nvmlDeviceGetMigMode != nullptr},
      {"nvmlDeviceSetMigMode", api.nvmlDeviceSetMigMode != nullptr},
      {"nvmlDeviceGetGpuInstanceProfileInfo", api.nvmlDeviceGetGpuInstanceProfileInfo != nullptr},
      {"nvmlDeviceGetGpuInstancePossiblePlacements_v2",
       api.nvmlDeviceGetGpuInstancePossiblePlacements_v2 != nullptr},
      {"nvmlDeviceCreateGpuInstanceWithPlacement",
       api.nvmlDeviceCreateGpuInstanceWithPlacement != nullptr},
      {"nvmlDeviceGetGpuInstances", api.nvmlDeviceGetGpuInstances != nullptr},
      {"nvmlDeviceGetGpuInstanceById", api.nvmlDeviceGetGpuInstanceById != nullptr},
      {"nvmlGpuInstanceGetInfo", api.nvmlGpuInstanceGetInfo != nullptr},
      {"nvmlGpuInstanceDestroy", api.nvmlGpuInstanceDestroy != nullptr},
      {"nvmlGpuInstanceGetComputeInstanceProfileInfo",
       api.nvmlGpuInstanceGetComputeInstanceProfileInfo != nullptr},
      {"nvmlGpuInstanceCreateComputeInstance", api.nvmlGpuInstanceCreateComputeInstance != nullptr},
      {"nvmlGpuInstanceGetComputeInstances", api.nvmlGpuInstanceGetComputeInstances != nullptr},
      {"nvmlComputeInstanceDestroy", api.nvmlComputeInstanceDestroy != nullptr},
      {"nvmlComputeInstanceGetInfo_v2", api.nvmlComputeInstanceGetInfo_v2 != nullptr},
      {"nvmlDeviceGetComputeRunningProcesses_v3",
       api.nvmlDeviceGetComputeRunningProcesses_v3 != nullptr},
  };
  std::vector<std::string> missing;
  for (const auto& [name, present] : wanted) {
    if (!present) missing.push_back(name);
  }
  return missing;
}

}  // namespace

NvmlMigSession::NvmlMigSession(std::unique_ptr<SharedLibrary> library)
    : library_(std::move(library)) {
  std::vector<std::string> missing = api_.Load(*library_);
  std::vector<std::string> mig = MissingMigSymbols(api_);
  missing.insert(missing.end(), mig.begin(), mig.end());
  if (!missing.empty()) {
    std::string names;
    for (const std::string& name : missing) names += (names.empty() ? "" : ", ") + name;
    throw BackendError("NVML (" + library_->path() + "): symbols missing for MIG control: " +
                       names + " (MIG control needs the R470 driver or newer)");
  }
  nvmlReturn_t rc = api_.nvmlInit_v2();
  if (rc != NVML_SUCCESS) {
    throw BackendError("NVML (" + library_->path() +
                       "): nvmlInit_v2 failed: " + api_.ErrorString(rc) +
                       " (check that `nvidia-smi` works on this node, or pass the library path)");
  }
}

NvmlMigSession::~NvmlMigSession() { api_.nvmlShutdown(); }

void NvmlMigSession::Check(unsigned gpu, const char* call, nvmlReturn_t rc) const {
  if (rc != NVML_SUCCESS) Fail(gpu, std::string(call) + " failed: " + api_.ErrorString(rc));
}

void NvmlMigSession::Fail(unsigned gpu, const std::string& what) const {
  throw BackendError("NVML (" + library_->path() + ") GPU " + std::to_string(gpu) + ": " + what);
}

MigGpus OpenNvmlMigControl(const std::string& library) {
  std::unique_ptr<SharedLibrary> loaded = LoadVendorLibrary(
      library, NvmlDefaultCandidates(), "NVML",
      "install the NVIDIA driver's libnvidia-ml.so.1 or name the library explicitly");
  MigGpus gpus;
  if (!loaded) return gpus;
  auto session = std::make_shared<const NvmlMigSession>(std::move(loaded));
  unsigned count = 0;
  session->Check(0, "nvmlDeviceGetCount_v2", session->api().nvmlDeviceGetCount_v2(&count));
  for (unsigned i = 0; i < count; ++i) gpus.push_back(std::make_unique<NvmlMigControl>(session, i));
  return gpus;
}

}  // namespace accel::devices
