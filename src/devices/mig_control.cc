// OpenNvmlMigControl: one NVML session (nvml_session.h) shared by every GPU it opens.
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

void NvmlMigSession::Check(unsigned gpu, const char* call, nvmlReturn_t rc) const {
  if (rc != NVML_SUCCESS) Fail(gpu, std::string(call) + " failed: " + api().ErrorString(rc));
}

void NvmlMigSession::Fail(unsigned gpu, const std::string& what) const {
  throw BackendError("NVML (" + session_->path() + ") GPU " + std::to_string(gpu) + ": " + what);
}

MigGpus OpenNvmlMigControl(const std::string& library) {
  NvmlSessionOptions options;
  options.init = NvmlInit::kNeedGpus;
  options.also_required = MissingMigSymbols;
  options.missing_what = "symbols missing for MIG control";
  options.missing_fix = "MIG control needs the R470 driver or newer";
  std::unique_ptr<NvmlSession> opened = OpenNvmlSession(
      library, options,
      "install the NVIDIA driver's libnvidia-ml.so.1 or name the library explicitly");
  MigGpus gpus;
  if (!opened) return gpus;
  auto session = std::make_shared<const NvmlMigSession>(std::move(opened));
  unsigned count = 0;
  session->Check(0, "nvmlDeviceGetCount_v2", session->api().nvmlDeviceGetCount_v2(&count));
  for (unsigned i = 0; i < count; ++i) gpus.push_back(std::make_unique<NvmlMigControl>(session, i));
  return gpus;
}

}  // namespace accel::devices
