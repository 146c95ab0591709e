// MIG (GPU instances, MIG device handles, profiles) and GPM samples/metrics.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "fake_nvml.h"

using namespace fake_nvml;

namespace {

// Profile lookup by index: NOT_SUPPORTED inside the table's range, INVALID_ARGUMENT past it.
nvmlReturn_t ProfileByIndex(const Device& dev, unsigned index, const MigProfile** out) {
  if (!dev.mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  unsigned last = 0;
  for (const MigProfile& p : dev.profiles) {
    if (p.index == index) {
      *out = &p;
      return NVML_SUCCESS;
    }
    last = std::max(last, p.index);
  }
  return index > last ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
}

template <typename Info>
void FillProfile(const MigProfile& p, Info* info) {
  info->id = p.id;
  info->isP2pSupported = 0;
  info->sliceCount = p.slices;
  info->instanceCount = p.instance_count;
  info->multiprocessorCount = p.multiprocessors;
  info->copyEngineCount = p.slices;
  info->decoderCount = p.slices;
  info->encoderCount = 0;
  info->jpegCount = p.slices;
  info->ofaCount = p.slices == 7 ? 1 : 0;
  info->memorySizeMB = p.memory_mb;
}

// The GPM metric table a sample reads: the GPU's, or the first MIG device of its GPU instance.
Metrics* GpmMetricsFor(Device& dev, std::optional<unsigned> gpu_instance) {
  if (!gpu_instance) return &dev.gpm;
  for (MigDevice& m : dev.mig) {
    if (m.gpu_instance_id == *gpu_instance) return &m.gpm;
  }
  return nullptr;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                                   unsigned int* pendingMode) {
  if (!currentMode || !pendingMode) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetMigMode", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  if (!call.device().mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  *currentMode = call.device().mig_mode;
  *pendingMode = call.device().mig_pending_mode;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device,
                                                             unsigned int* count) {
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetMaxMigDeviceCount", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  if (!call.device().mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  *count = call.device().max_mig_devices;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device,
                                                                  unsigned int index,
                                                                  nvmlDevice_t* migDevice) {
  if (!migDevice) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetMigDeviceHandleByIndex", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  const Device& dev = call.device();
  if (!dev.mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  if (dev.mig_mode != 1 || index >= dev.max_mig_devices) return NVML_ERROR_INVALID_ARGUMENT;
  if (index >= dev.mig.size()) return NVML_ERROR_NOT_FOUND;
  *migDevice = MigHandle(call.position(), index);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device,
                                                          unsigned int* isMigDevice) {
  if (!isMigDevice) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceIsMigDeviceHandle", device, /*allow_mig=*/true);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  *isMigDevice = call.mig() != nullptr;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                           nvmlDevice_t* device) {
  if (!device) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", migDevice, /*allow_mig=*/true);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  if (!call.mig()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = DeviceHandle(call.position());
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  if (!id) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetGpuInstanceId", device, /*allow_mig=*/true);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  if (!call.mig()) return NVML_ERROR_NOT_SUPPORTED;
  *id = call.mig()->gpu_instance_id;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device,
                                                             unsigned int* id) {
  if (!id) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetComputeInstanceId", device, /*allow_mig=*/true);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  if (!call.mig()) return NVML_ERROR_NOT_SUPPORTED;
  *id = call.mig()->compute_instance_id;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                           nvmlGpuInstance_t* gpuInstance) {
  if (!gpuInstance) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetGpuInstanceById", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  Device& dev = call.device();
  if (!dev.mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  if (dev.mig_mode != 1) return NVML_ERROR_INVALID_ARGUMENT;
  const GpuInstance* gi = GpuInstanceById(dev, id);
  if (!gi) return NVML_ERROR_NOT_FOUND;
  *gpuInstance = GpuInstanceHandle(call.position(), gi->slot);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance,
                                                     nvmlGpuInstanceInfo_t* info) {
  int d = 0, slot = 0;
  if (!info || !DecodeGpuInstance(gpuInstance, &d, &slot)) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlGpuInstanceGetInfo", DeviceHandle(d));
  if (call.rc() != NVML_SUCCESS) return call.rc();
  Device& dev = call.device();
  const GpuInstance* gi = GpuInstanceBySlot(dev, slot);
  if (!gi || dev.mig_mode != 1) return NVML_ERROR_INVALID_ARGUMENT;
  const MigProfile* profile = ProfileById(dev, gi->profile_id);
  info->device = DeviceHandle(d);
  info->id = gi->id;
  info->profileId = gi->profile_id;
  info->placement = {gi->start, profile ? profile->placement_size : 1};
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                        nvmlGpuInstance_t* gpuInstances,
                                                        unsigned int* count) {
  if (!gpuInstances || !count) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetGpuInstances", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  const Device& dev = call.device();
  if (!dev.mig_capable || dev.mig_mode != 1) return NVML_ERROR_NOT_SUPPORTED;
  const MigProfile* profile = ProfileById(dev, profileId);
  if (!profile) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned n = 0;
  // The caller's array holds the profile's instanceCount; creation keeps us inside it.
  for (const GpuInstance& gi : dev.gpu_instances) {
    if (gi.profile_id == profileId && n < profile->instance_count) {
      gpuInstances[n++] = GpuInstanceHandle(call.position(), gi.slot);
    }
  }
  *count = n;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(
    nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t* info) {
  if (!info) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetGpuInstanceProfileInfo", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  const MigProfile* p = nullptr;
  nvmlReturn_t rc = ProfileByIndex(call.device(), profile, &p);
  if (rc != NVML_SUCCESS) return rc;
  FillProfile(*p, info);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(
    nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t* info) {
  if (!info) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetGpuInstanceProfileInfoV", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  if (info->version != nvmlGpuInstanceProfileInfo_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  const MigProfile* p = nullptr;
  nvmlReturn_t rc = ProfileByIndex(call.device(), profile, &p);
  if (rc != NVML_SUCCESS) return rc;
  FillProfile(*p, info);
  std::snprintf(info->name, sizeof info->name, "%s", p->name.c_str());
  return NVML_SUCCESS;
}

// ---- GPM ----

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device,
                                                        nvmlGpmSupport_t* gpmSupport) {
  if (!gpmSupport) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlGpmQueryDeviceSupport", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  if (gpmSupport->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  gpmSupport->isSupportedDevice = call.device().gpm_supported;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample) {
  if (!gpmSample) return NVML_ERROR_INVALID_ARGUMENT;
  GlobalCall call;
  if (call.rc() != NVML_SUCCESS) return call.rc();
  auto* sample = new GpmSample;
  call.state().gpm_samples.insert(sample);
  *gpmSample = reinterpret_cast<nvmlGpmSample_t>(sample);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample) {
  GlobalCall call;
  if (call.rc() != NVML_SUCCESS) return call.rc();
  auto* sample = reinterpret_cast<GpmSample*>(gpmSample);
  if (!call.state().gpm_samples.erase(sample)) return NVML_ERROR_INVALID_ARGUMENT;
  delete sample;
  return NVML_SUCCESS;
}

namespace {

nvmlReturn_t TakeSample(const char* function, nvmlDevice_t device,
                        std::optional<unsigned> gpu_instance, nvmlGpmSample_t gpmSample) {
  DeviceCall call(function, device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  Device& dev = call.device();
  if (!dev.gpm_supported) return NVML_ERROR_NOT_SUPPORTED;
  auto* sample = reinterpret_cast<GpmSample*>(gpmSample);
  if (!Global().gpm_samples.count(sample)) return NVML_ERROR_INVALID_ARGUMENT;
  if (gpu_instance && (dev.mig_mode != 1 || !GpmMetricsFor(dev, gpu_instance))) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  sample->device = call.position();
  sample->gpu_instance = gpu_instance;
  return NVML_SUCCESS;
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample) {
  return TakeSample("nvmlGpmSampleGet", device, std::nullopt, gpmSample);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
                                                  nvmlGpmSample_t gpmSample) {
  return TakeSample("nvmlGpmMigSampleGet", device, gpuInstanceId, gpmSample);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet) {
  if (!metricsGet) return NVML_ERROR_INVALID_ARGUMENT;
  if (metricsGet->version != NVML_GPM_METRICS_GET_VERSION)
    return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (metricsGet->numMetrics > kNvmlGpmMetricMax) return NVML_ERROR_INVALID_ARGUMENT;
  int device = -1;
  std::optional<unsigned> gpu_instance;
  {
    GlobalCall call;
    if (call.rc() != NVML_SUCCESS) return call.rc();
    auto* first = reinterpret_cast<GpmSample*>(metricsGet->sample1);
    auto* second = reinterpret_cast<GpmSample*>(metricsGet->sample2);
    const auto& samples = call.state().gpm_samples;
    if (!samples.count(first) || !samples.count(second) || first == second || first->device < 0 ||
        first->device != second->device || first->gpu_instance != second->gpu_instance) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    device = first->device;
    gpu_instance = first->gpu_instance;
  }
  DeviceCall call("nvmlGpmMetricsGet", DeviceHandle(device));
  if (call.rc() != NVML_SUCCESS) return call.rc();
  Metrics* metrics = GpmMetricsFor(call.device(), gpu_instance);
  for (unsigned i = 0; i < metricsGet->numMetrics; ++i) {
    nvmlGpmMetric_t& m = metricsGet->metrics[i];
    std::optional<double> value =
        metrics ? ReadValue(*metrics, std::to_string(m.metricId)) : std::nullopt;
    m.nvmlReturn = value ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
    m.value = value.value_or(0);
    m.metricInfo = {nullptr, nullptr, nullptr};
  }
  return NVML_SUCCESS;
}
