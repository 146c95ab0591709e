// Per-device metric getters: utilisation, memory, thermals, power, clocks, PCIe, vGPU licence.
#include <algorithm>
#include <cstdio>

#include "fake_nvml.h"

using namespace fake_nvml;

namespace {

struct MemoryBytes {
  unsigned long long total = 0, used = 0, reserved = 0;
};

// GPU memory from the device metrics, MIG memory from the instance (total defaults to the
// profile's size). False when the GPU has no memory_total_mib.
bool ReadMemoryBytes(DeviceCall& call, MemoryBytes* out) {
  auto mib = [](double v) { return static_cast<unsigned long long>(std::max(0.0, v)) << 20; };
  if (MigDevice* mig = call.mig()) {
    unsigned long long profile_mb = 0;
    for (const MigProfile& p : call.device().profiles) {
      if (p.id == mig->profile_id) profile_mb = p.memory_mb;
    }
    out->total = mib(ReadValue(mig->metrics, "memory_total_mib").value_or(profile_mb));
    out->used = mib(ReadValue(mig->metrics, "memory_used_mib").value_or(0));
    out->reserved = mib(ReadValue(mig->metrics, "memory_reserved_mib").value_or(0));
    return true;
  }
  std::optional<double> total = call.Metric("memory_total_mib");
  if (!total) return false;
  out->total = mib(*total);
  out->used = mib(call.Metric("memory_used_mib").value_or(0));
  out->reserved = mib(call.Metric("memory_reserved_mib").value_or(0));
  return true;
}

const char* ClockMetric(nvmlClockType_t type) {
  switch (type) {
    case NVML_CLOCK_GRAPHICS: return "graphics_clock_mhz";
    case NVML_CLOCK_SM: return "sm_clock_mhz";
    case NVML_CLOCK_MEM: return "memory_clock_mhz";
    case NVML_CLOCK_VIDEO: return "video_clock_mhz";
    default: return nullptr;
  }
}

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                            nvmlUtilization_t* utilization) {
  if (!utilization) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetUtilizationRates", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  // Like the driver: no whole-GPU utilisation while MIG is on.
  if (call.device().mig_mode == 1) return NVML_ERROR_NOT_SUPPORTED;
  std::optional<double> gpu = call.Metric("gpu_util_pct");
  if (!gpu) return NVML_ERROR_NOT_SUPPORTED;
  utilization->gpu = static_cast<unsigned>(*gpu);
  utilization->memory = static_cast<unsigned>(call.Metric("memory_util_pct").value_or(0));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device,
                                                              unsigned int* utilization,
                                                              unsigned int* samplingPeriodUs) {
  if (!samplingPeriodUs) return NVML_ERROR_INVALID_ARGUMENT;
  *samplingPeriodUs = 167000;
  return GetMetric("nvmlDeviceGetEncoderUtilization", device, "encoder_util_pct", utilization);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device,
                                                              unsigned int* utilization,
                                                              unsigned int* samplingPeriodUs) {
  if (!samplingPeriodUs) return NVML_ERROR_INVALID_ARGUMENT;
  *samplingPeriodUs = 167000;
  return GetMetric("nvmlDeviceGetDecoderUtilization", device, "decoder_util_pct", utilization);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetMemoryInfo", device, /*allow_mig=*/true);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  MemoryBytes m;
  if (!ReadMemoryBytes(call, &m)) return NVML_ERROR_NOT_SUPPORTED;
  memory->total = m.total;
  memory->used = std::min(m.total, m.used + m.reserved);  // v1 counts reserved as used
  memory->free = m.total - memory->used;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                         nvmlMemory_v2_t* memory) {
  if (!memory) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetMemoryInfo_v2", device, /*allow_mig=*/true);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  MemoryBytes m;
  if (!ReadMemoryBytes(call, &m)) return NVML_ERROR_NOT_SUPPORTED;
  memory->total = m.total;
  memory->used = std::min(m.total, m.used);
  memory->reserved = std::min(m.total - memory->used, m.reserved);
  memory->free = m.total - memory->used - memory->reserved;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                                       nvmlTemperatureSensors_t sensorType,
                                                       unsigned int* temp) {
  if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return GetMetric("nvmlDeviceGetTemperature", device, "temperature_c", temp);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device,
                                                        nvmlTemperature_t* temperature) {
  if (!temperature) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetTemperatureV", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  if (temperature->version != nvmlTemperature_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (temperature->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  std::optional<double> celsius = call.Metric("temperature_c");
  if (!celsius) return NVML_ERROR_NOT_SUPPORTED;
  temperature->temperature = static_cast<int>(*celsius);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return GetMetric("nvmlDeviceGetPowerUsage", device, "power_mw", power);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                                  unsigned long long* energy) {
  return GetMetric("nvmlDeviceGetTotalEnergyConsumption", device, "energy_mj", energy);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device,
                                                                unsigned int* limit) {
  return GetMetric("nvmlDeviceGetPowerManagementLimit", device, "power_limit_mw", limit);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device,
                                                              unsigned int* limit) {
  return GetMetric("nvmlDeviceGetEnforcedPowerLimit", device, "enforced_power_limit_mw", limit);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                     unsigned int* clock) {
  const char* metric = ClockMetric(type);
  if (!metric) return NVML_ERROR_INVALID_ARGUMENT;
  return GetMetric("nvmlDeviceGetClockInfo", device, metric, clock);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                        unsigned int* clock) {
  if (!ClockMetric(type)) return NVML_ERROR_INVALID_ARGUMENT;
  const char* metric = type == NVML_CLOCK_MEM ? "max_memory_clock_mhz" : "max_sm_clock_mhz";
  return GetMetric("nvmlDeviceGetMaxClockInfo", device, metric, clock);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                                     unsigned long long* reasons) {
  return GetMetric("nvmlDeviceGetCurrentClocksEventReasons", device, "clocks_event_reasons",
                   reasons);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device,
                                                           nvmlPerfPolicyType_t policy,
                                                           nvmlViolationTime_t* violation) {
  static const char* const kMetrics[] = {"violation_power_ns",      "violation_thermal_ns",
                                         "violation_sync_boost_ns", "violation_board_limit_ns",
                                         "violation_low_util_ns",   "violation_reliability_ns"};
  if (!violation || policy >= std::size(kMetrics)) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned long long ns = 0;
  nvmlReturn_t rc = GetMetric("nvmlDeviceGetViolationStatus", device, kMetrics[policy], &ns);
  if (rc != NVML_SUCCESS) return rc;
  violation->referenceTime = std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
  violation->violationTime = ns;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed) {
  return GetMetric("nvmlDeviceGetFanSpeed", device, "fan_speed_pct", speed);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device,
                                                            nvmlPstates_t* pState) {
  return GetMetric("nvmlDeviceGetPerformanceState", device, "pstate", pState);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device,
                                                             unsigned int* value) {
  return GetMetric("nvmlDeviceGetPcieReplayCounter", device, "pcie_replays", value);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device,
                                                          nvmlPcieUtilCounter_t counter,
                                                          unsigned int* value) {
  if (counter > NVML_PCIE_UTIL_RX_BYTES) return NVML_ERROR_INVALID_ARGUMENT;
  return GetMetric("nvmlDeviceGetPcieThroughput", device,
                   counter == NVML_PCIE_UTIL_TX_BYTES ? "pcie_tx_kbps" : "pcie_rx_kbps", value);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGridLicensableFeatures_v4(
    nvmlDevice_t device, nvmlGridLicensableFeatures_t* features) {
  if (!features) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetGridLicensableFeatures_v4", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  *features = nvmlGridLicensableFeatures_t{};
  // No vgpu_licensed metric = bare metal: the call works and says licensing is not supported.
  std::optional<double> licensed = call.Metric("vgpu_licensed");
  if (!licensed) return NVML_SUCCESS;
  features->isGridLicenseSupported = 1;
  features->licensableFeaturesCount = 1;
  nvmlGridLicensableFeature_t& f = features->gridLicensableFeatures[0];
  f.featureCode = NVML_GRID_LICENSE_FEATURE_CODE_VGPU;
  f.featureState = *licensed != 0;
  f.featureEnabled = 1;
  std::snprintf(f.productName, sizeof f.productName, "NVIDIA Virtual Compute Server");
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t* type) {
  if (!type) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetBrand", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  *type = static_cast<nvmlBrandType_t>(call.Metric("brand").value_or(14));  // NVML_BRAND_NVIDIA
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetInforomVersion(nvmlDevice_t device,
                                                          nvmlInforomObject_t object,
                                                          char* version, unsigned int length) {
  if (!version || object > NVML_INFOROM_POWER) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetInforomVersion", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  const Device& dev = call.device();
  const std::string& text = object == NVML_INFOROM_OEM   ? dev.inforom_oem
                            : object == NVML_INFOROM_ECC ? dev.inforom_ecc
                                                         : dev.inforom_power;
  if (text.empty()) return NVML_ERROR_NOT_SUPPORTED;
  return CopyString(text, version, length);
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetInforomImageVersion(nvmlDevice_t device, char* version,
                                                               unsigned int length) {
  if (!version) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetInforomImageVersion", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  if (call.device().inforom_image.empty()) return NVML_ERROR_NOT_SUPPORTED;
  return CopyString(call.device().inforom_image, version, length);
}
