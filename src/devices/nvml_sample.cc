// GPU-wide metrics of one NVML device, filled the way DCGM fills its default fields
// (telemetry.md §2.6).
#include <chrono>

#include "devices/nvml_backend.h"

namespace accel::devices {

using namespace nvml;

namespace {

// NVML reports a few sentinel temperatures (e.g. 255) when a sensor misreads; DCGM drops > 200.
constexpr double kMaxPlausibleCelsius = 200;

void ReadClocks(NvmlReadContext& ctx, Sample& s) {
  unsigned mhz = 0;
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kSmClock, nvmlDeviceGetClockInfo, ctx.handle(), NVML_CLOCK_SM,
                     &mhz)) {
    s.sm_clock_mhz = mhz;
  }
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kMemClock, nvmlDeviceGetClockInfo, ctx.handle(), NVML_CLOCK_MEM,
                     &mhz)) {
    s.memory_clock_mhz = mhz;
  }
}

void ReadTemperature(NvmlReadContext& ctx, Sample& s) {
  // The legacy call is what DCGM uses; NVML 13 deprecates it in favour of the versioned one.
  unsigned legacy = 0;
  std::optional<double> celsius;
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kTemperature, nvmlDeviceGetTemperature, ctx.handle(),
                     NVML_TEMPERATURE_GPU, &legacy)) {
    celsius = legacy;
  } else if (ctx.Unsupported(NvmlSlot::kTemperature)) {
    nvmlTemperature_t t{};
    t.version = nvmlTemperature_v1;
    t.sensorType = NVML_TEMPERATURE_GPU;
    if (ACCEL_NVML_ASK(ctx, NvmlSlot::kTemperatureV, nvmlDeviceGetTemperatureV, ctx.handle(), &t)) {
      celsius = t.temperature;
    }
  }
  if (celsius && *celsius <= kMaxPlausibleCelsius) s.temperature_c = celsius;
}

void ReadPower(NvmlReadContext& ctx, Sample& s) {
  unsigned milliwatts = 0;
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kPower, nvmlDeviceGetPowerUsage, ctx.handle(), &milliwatts)) {
    s.power_w = milliwatts / 1000.0;
  }
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kPowerLimit, nvmlDeviceGetEnforcedPowerLimit, ctx.handle(),
                     &milliwatts)) {
    s.power_limit_w = milliwatts / 1000.0;
  }
  unsigned long long millijoules = 0;
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kEnergy, nvmlDeviceGetTotalEnergyConsumption, ctx.handle(),
                     &millijoules)) {
    s.energy_mj = millijoules;
  }
}

void ReadActivity(NvmlReadContext& ctx, Sample& s) {
  nvmlUtilization_t util{};
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kUtilization, nvmlDeviceGetUtilizationRates, ctx.handle(),
                     &util)) {
    s.gpu_utilization = util.gpu / 100.0;
    s.memory_utilization = util.memory / 100.0;
  }
  unsigned percent = 0, period_us = 0;
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kEncoder, nvmlDeviceGetEncoderUtilization, ctx.handle(),
                     &percent, &period_us)) {
    s.encoder_utilization = percent / 100.0;
  }
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kDecoder, nvmlDeviceGetDecoderUtilization, ctx.handle(),
                     &percent, &period_us)) {
    s.decoder_utilization = percent / 100.0;
  }
}

void ReadHealth(NvmlReadContext& ctx, Sample& s) {
  unsigned correctable = 0, uncorrectable = 0, pending = 0, failure = 0;
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kRemappedRows, nvmlDeviceGetRemappedRows, ctx.handle(),
                     &correctable, &uncorrectable, &pending, &failure)) {
    s.remapped_rows_correctable = correctable;
    s.remapped_rows_uncorrectable = uncorrectable;
    s.row_remap_pending = pending != 0;
    s.row_remap_failure = failure != 0;
  }
  unsigned long long count = 0;
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kEccCorrected, nvmlDeviceGetTotalEccErrors, ctx.handle(),
                     NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &count)) {
    s.ecc_correctable = count;
  }
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kEccUncorrected, nvmlDeviceGetTotalEccErrors, ctx.handle(),
                     NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &count)) {
    s.ecc_uncorrectable = count;
  }
  unsigned replays = 0;
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kPcieReplay, nvmlDeviceGetPcieReplayCounter, ctx.handle(),
                     &replays)) {
    s.pcie_replays = replays;
  }
}

// DCGM publishes 0 on bare metal (NOT_SUPPORTED or no grid licensing); only a library without
// the function leaves the field absent.
void ReadVgpuLicense(NvmlReadContext& ctx, Sample& s) {
  auto* function = ctx.api().nvmlDeviceGetGridLicensableFeatures_v4;
  if (!function || ctx.lost()) return;
  if (ctx.Unsupported(NvmlSlot::kVgpuLicense)) {
    s.vgpu_license_status = 0;
    return;
  }
  nvmlGridLicensableFeatures_t features{};
  nvmlReturn_t rc = function(ctx.handle(), &features);
  if (rc == NVML_ERROR_NOT_SUPPORTED) {
    ctx.MarkUnsupported(NvmlSlot::kVgpuLicense);
    s.vgpu_license_status = 0;
    return;
  }
  if (!ctx.CheckCall("nvmlDeviceGetGridLicensableFeatures_v4", rc)) return;
  int licensed = 0;
  unsigned count = std::min(features.licensableFeaturesCount, NVML_GRID_LICENSE_FEATURE_MAX_COUNT);
  for (unsigned i = 0; features.isGridLicenseSupported && i < count; ++i) {
    if (features.gridLicensableFeatures[i].featureState != 0) licensed = 1;
  }
  s.vgpu_license_status = licensed;
}

uint64_t AsUnsigned(const nvmlFieldValue_t& v) {
  switch (v.valueType) {
    case NVML_VALUE_TYPE_DOUBLE: return v.value.dVal < 0 ? 0 : static_cast<uint64_t>(v.value.dVal);
    case NVML_VALUE_TYPE_UNSIGNED_INT: return v.value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return v.value.ulVal;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return v.value.sllVal < 0 ? 0 : v.value.sllVal;
    case NVML_VALUE_TYPE_SIGNED_INT: return v.value.siVal < 0 ? 0 : v.value.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return v.value.usVal;
    default: return v.value.ullVal;
  }
}

NvmlSlot SlotOfField(unsigned field) {
  switch (field) {
    case NVML_FI_DEV_MEMORY_TEMP: return NvmlSlot::kFieldMemoryTemp;
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: return NvmlSlot::kFieldNvlinkTx;
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: return NvmlSlot::kFieldNvlinkRx;
    case NVML_FI_DEV_REMAPPED_COR: return NvmlSlot::kFieldRemapCor;
    case NVML_FI_DEV_REMAPPED_UNC: return NvmlSlot::kFieldRemapUnc;
    case NVML_FI_DEV_REMAPPED_PENDING: return NvmlSlot::kFieldRemapPending;
    default: return NvmlSlot::kFieldRemapFailure;
  }
}

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// DCGM's NVLINK_BANDWIDTH_TOTAL: (delta of the TX+RX KiB counters / seconds) / 1000, about MB/s.
// The first reading, and a counter that went backwards (driver reload), publish 0.
void UpdateNvlinkRate(NvmlDeviceState& dev, uint64_t kib, int64_t at_us, Sample& s) {
  double rate = 0;
  if (dev.nvlink_kib && kib >= *dev.nvlink_kib && at_us > dev.nvlink_at_us) {
    double seconds = (at_us - dev.nvlink_at_us) / 1e6;
    rate = static_cast<double>(kib - *dev.nvlink_kib) / seconds / 1000.0;
  }
  dev.nvlink_kib = kib;
  dev.nvlink_at_us = at_us;
  s.nvlink_bandwidth_mb_per_second = rate;
}

// One batched nvmlDeviceGetFieldValues for everything that has no dedicated call.
void ReadFields(NvmlReadContext& ctx, Sample& s) {
  std::vector<nvmlFieldValue_t> fields;
  auto want = [&](NvmlSlot slot, unsigned id, unsigned scope) {
    if (ctx.Unsupported(slot)) return;
    nvmlFieldValue_t v{};
    v.fieldId = id;
    v.scopeId = scope;
    fields.push_back(v);
  };
  want(NvmlSlot::kFieldMemoryTemp, NVML_FI_DEV_MEMORY_TEMP, 0);
  want(NvmlSlot::kFieldNvlinkTx, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, kNvmlScopeAllLinks);
  want(NvmlSlot::kFieldNvlinkRx, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, kNvmlScopeAllLinks);
  if (ctx.Unsupported(NvmlSlot::kRemappedRows)) {
    want(NvmlSlot::kFieldRemapCor, NVML_FI_DEV_REMAPPED_COR, 0);
    want(NvmlSlot::kFieldRemapUnc, NVML_FI_DEV_REMAPPED_UNC, 0);
    want(NvmlSlot::kFieldRemapPending, NVML_FI_DEV_REMAPPED_PENDING, 0);
    want(NvmlSlot::kFieldRemapFailure, NVML_FI_DEV_REMAPPED_FAILURE, 0);
  }
  if (fields.empty() ||
      !ACCEL_NVML_ASK(ctx, NvmlSlot::kFieldValues, nvmlDeviceGetFieldValues, ctx.handle(),
                      static_cast<int>(fields.size()), fields.data())) {
    return;
  }
  std::optional<uint64_t> tx, rx;
  int64_t nvlink_at = 0;
  for (const nvmlFieldValue_t& v : fields) {
    NvmlSlot slot = SlotOfField(v.fieldId);
    if (!ctx.Check(slot, "nvmlDeviceGetFieldValues", v.nvmlReturn)) {
      if (ctx.lost()) return;
      continue;
    }
    switch (v.fieldId) {
      case NVML_FI_DEV_MEMORY_TEMP:
        // DCGM reads uiVal whatever valueType says (R545 reported a wrong type).
        if (v.value.uiVal <= kMaxPlausibleCelsius) s.memory_temperature_c = v.value.uiVal;
        break;
      case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
        tx = AsUnsigned(v);
        nvlink_at = v.timestamp;
        break;
      case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: rx = AsUnsigned(v); break;
      case NVML_FI_DEV_REMAPPED_COR: s.remapped_rows_correctable = AsUnsigned(v); break;
      case NVML_FI_DEV_REMAPPED_UNC: s.remapped_rows_uncorrectable = AsUnsigned(v); break;
      case NVML_FI_DEV_REMAPPED_PENDING: s.row_remap_pending = AsUnsigned(v) != 0; break;
      case NVML_FI_DEV_REMAPPED_FAILURE: s.row_remap_failure = AsUnsigned(v) != 0; break;
    }
  }
  if (tx && rx)
    UpdateNvlinkRate(ctx.device(), *tx + *rx, nvlink_at > 0 ? nvlink_at : NowMicros(), s);
}

}  // namespace

void ReadMemory(NvmlReadContext& ctx, nvmlDevice_t handle, NvmlSlot v2, NvmlSlot v1, Sample* s) {
  nvmlMemory_v2_t memory{};
  memory.version = nvmlMemory_v2;
  if (ACCEL_NVML_ASK(ctx, v2, nvmlDeviceGetMemoryInfo_v2, handle, &memory)) {
    s->memory_total_bytes = memory.total;
    s->memory_used_bytes = memory.used;
    s->memory_free_bytes = memory.free;
    s->memory_reserved_bytes = memory.reserved;
    return;
  }
  if (!ctx.Unsupported(v2)) return;  // lost or a transient error: no fallback this time
  nvmlMemory_t legacy{};
  if (ACCEL_NVML_ASK(ctx, v1, nvmlDeviceGetMemoryInfo, handle, &legacy)) {
    s->memory_total_bytes = legacy.total;
    s->memory_used_bytes = legacy.used;
    s->memory_free_bytes = legacy.free;
  }
}

void ReadGpuSample(NvmlReadContext& ctx) {
  Sample& s = ctx.reading().sample;
  ReadClocks(ctx, s);
  ReadTemperature(ctx, s);
  ReadPower(ctx, s);
  ReadActivity(ctx, s);
  ReadMemory(ctx, ctx.handle(), NvmlSlot::kMemoryV2, NvmlSlot::kMemoryV1, &s);
  ReadHealth(ctx, s);
  ReadVgpuLicense(ctx, s);
  ReadFields(ctx, s);
}

}  // namespace accel::devices
