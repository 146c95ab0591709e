// GPU-wide metrics of one NVML device, filled the way DCGM fills its default fields
// (telemetry.md §2.6).
#include <chrono>
#include <iterator>
#include <string>

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

NvmlSlot ViolationSlot(NvmlSlot first, size_t reason) {
  return static_cast<NvmlSlot>(static_cast<unsigned>(first) + reason);
}

NvmlSlot SlotOfField(unsigned field) {
  switch (field) {
    case NVML_FI_DEV_MEMORY_TEMP: return NvmlSlot::kFieldMemoryTemp;
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX: return NvmlSlot::kFieldNvlinkTx;
    case NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX: return NvmlSlot::kFieldNvlinkRx;
    case NVML_FI_DEV_REMAPPED_COR: return NvmlSlot::kFieldRemapCor;
    case NVML_FI_DEV_REMAPPED_UNC: return NvmlSlot::kFieldRemapUnc;
    case NVML_FI_DEV_REMAPPED_PENDING: return NvmlSlot::kFieldRemapPending;
    case NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: return NvmlSlot::kFieldNvlinkCrcFlit;
    case NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL: return NvmlSlot::kFieldNvlinkCrcData;
    case NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL: return NvmlSlot::kFieldNvlinkReplay;
    case NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL: return NvmlSlot::kFieldNvlinkRecovery;
    default:
      if (field >= NVML_FI_DEV_PERF_POLICY_POWER &&
          field < NVML_FI_DEV_PERF_POLICY_POWER + kThrottleReasons) {
        return ViolationSlot(NvmlSlot::kFieldViolationPower, field - NVML_FI_DEV_PERF_POLICY_POWER);
      }
      return NvmlSlot::kFieldRemapFailure;
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

// The per-link part of the batch: TX, RX pairs for links 0, 1, ... in order. Each link's rate
// is computed like the total; a link whose entries NVML refuses (down, past the GPU's last link)
// is absent and forgets its previous counter.
void ApplyPerLink(NvmlDeviceState& dev, const nvmlFieldValue_t* values, size_t count, Sample& s) {
  s.nvlink_link_mb_per_second.assign(kNvlinkFieldLinks, std::nullopt);
  for (size_t i = 0; i + 1 < count; i += 2) {
    unsigned link = values[i].scopeId;
    if (link >= kNvlinkFieldLinks) continue;
    if (values[i].nvmlReturn != NVML_SUCCESS || values[i + 1].nvmlReturn != NVML_SUCCESS) {
      dev.link_kib[link].reset();
      continue;
    }
    uint64_t kib = AsUnsigned(values[i]) + AsUnsigned(values[i + 1]);
    int64_t at = values[i].timestamp > 0 ? values[i].timestamp : NowMicros();
    double rate = 0;
    if (dev.link_kib[link] && kib >= *dev.link_kib[link] && at > dev.link_at_us[link]) {
      rate = static_cast<double>(kib - *dev.link_kib[link]) / ((at - dev.link_at_us[link]) / 1e6) /
             1000.0;
    }
    dev.link_kib[link] = kib;
    dev.link_at_us[link] = at;
    s.nvlink_link_mb_per_second[link] = rate;
  }
  // Trailing links nobody reported: drop the vector's tail so it ends at the last real link.
  while (!s.nvlink_link_mb_per_second.empty() && !s.nvlink_link_mb_per_second.back()) {
    s.nvlink_link_mb_per_second.pop_back();
  }
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
  const ExtraReads& extra = ctx.extra();
  if (extra.nvlink_errors) {
    // DCGM reads these totals (fields 38/45/52/59, all links); per-link counters are the
    // fallback when a driver refuses them (ReadNvlinkErrorCounters).
    want(NvmlSlot::kFieldNvlinkCrcFlit, NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, 0);
    want(NvmlSlot::kFieldNvlinkCrcData, NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, 0);
    want(NvmlSlot::kFieldNvlinkReplay, NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, 0);
    want(NvmlSlot::kFieldNvlinkRecovery, NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, 0);
  }
  if (extra.violations) {
    for (size_t k = 0; k < kThrottleReasons; ++k) {
      // Only where nvmlDeviceGetViolationStatus was refused (deprecated in NVML 13).
      if (ctx.Unsupported(ViolationSlot(NvmlSlot::kViolationPower, k))) {
        want(ViolationSlot(NvmlSlot::kFieldViolationPower, k),
             NVML_FI_DEV_PERF_POLICY_POWER + static_cast<unsigned>(k), 0);
      }
    }
  }
  // Per-link NVLink throughput: no slot of its own; a link the driver refuses stays absent.
  size_t per_link_first = fields.size();
  if (extra.nvlink_per_link) {
    for (unsigned link = 0; link < kNvlinkFieldLinks; ++link) {
      for (unsigned id : {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX}) {
        nvmlFieldValue_t v{};
        v.fieldId = id;
        v.scopeId = link;
        fields.push_back(v);
      }
    }
  }
  if (fields.empty() ||
      !ACCEL_NVML_ASK(ctx, NvmlSlot::kFieldValues, nvmlDeviceGetFieldValues, ctx.handle(),
                      static_cast<int>(fields.size()), fields.data())) {
    return;
  }
  std::optional<uint64_t> tx, rx;
  int64_t nvlink_at = 0;
  if (per_link_first < fields.size()) {
    ApplyPerLink(ctx.device(), fields.data() + per_link_first, fields.size() - per_link_first, s);
    fields.resize(per_link_first);
  }
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
      case NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: s.nvlink_crc_flit_errors = AsUnsigned(v); break;
      case NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL: s.nvlink_crc_data_errors = AsUnsigned(v); break;
      case NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL: s.nvlink_replay_errors = AsUnsigned(v); break;
      case NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL:
        s.nvlink_recovery_errors = AsUnsigned(v);
        break;
      default:
        if (v.fieldId >= NVML_FI_DEV_PERF_POLICY_POWER &&
            v.fieldId < NVML_FI_DEV_PERF_POLICY_POWER + kThrottleReasons) {
          s.violation_ns[v.fieldId - NVML_FI_DEV_PERF_POLICY_POWER] = AsUnsigned(v);
        }
        break;
    }
  }
  if (tx && rx)
    UpdateNvlinkRate(ctx.device(), *tx + *rx, nvlink_at > 0 ? nvlink_at : NowMicros(), s);
}

// Lifetime (aggregate) ECC totals, for DCGM_FI_DEV_ECC_*_AGG_TOTAL.
void ReadEccAggregate(NvmlReadContext& ctx, Sample& s) {
  unsigned long long count = 0;
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kEccAggCorrected, nvmlDeviceGetTotalEccErrors, ctx.handle(),
                     NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, &count)) {
    s.ecc_correctable_aggregate = count;
  }
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kEccAggUncorrected, nvmlDeviceGetTotalEccErrors, ctx.handle(),
                     NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &count)) {
    s.ecc_uncorrectable_aggregate = count;
  }
}

// nvmlDeviceGetRetiredPages with a zero-sized buffer: NVML answers INSUFFICIENT_SIZE with the
// count when pages exist (DCGM accepts that as the answer), SUCCESS with 0 when none.
void ReadRetiredPages(NvmlReadContext& ctx, Sample& s) {
  auto* function = ctx.api().nvmlDeviceGetRetiredPages;
  const NvmlSlot slots[2] = {NvmlSlot::kRetiredSbe, NvmlSlot::kRetiredDbe};
  for (unsigned cause = 0; cause < 2; ++cause) {
    if (!ctx.Want(slots[cause], function != nullptr)) continue;
    unsigned count = 0;
    nvmlReturn_t rc = function(ctx.handle(), cause, &count, nullptr);
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) rc = NVML_SUCCESS;
    if (!ctx.Check(slots[cause], "nvmlDeviceGetRetiredPages", rc)) continue;
    (cause == 0 ? s.retired_pages_sbe : s.retired_pages_dbe) = count;
  }
  nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kRetiredPending, nvmlDeviceGetRetiredPagesPendingStatus,
                     ctx.handle(), &pending)) {
    s.retired_pages_pending = pending == NVML_FEATURE_ENABLED;
  }
}

// Throttle time per perf policy (ns). Refused policies fall back to field values in ReadFields.
void ReadViolations(NvmlReadContext& ctx, Sample& s) {
  for (size_t k = 0; k < kThrottleReasons; ++k) {
    nvmlViolationTime_t t{};
    if (ACCEL_NVML_ASK(ctx, ViolationSlot(NvmlSlot::kViolationPower, k),
                       nvmlDeviceGetViolationStatus, ctx.handle(),
                       NVML_PERF_POLICY_POWER + static_cast<unsigned>(k), &t)) {
      s.violation_ns[k] = t.violationTime;
    }
  }
}

void ReadClockEvents(NvmlReadContext& ctx, Sample& s) {
  unsigned long long reasons = 0;
  if (ACCEL_NVML_ASK(ctx, NvmlSlot::kClockEvents, nvmlDeviceGetCurrentClocksEventReasons,
                     ctx.handle(), &reasons)) {
    s.clock_event_reasons = reasons;
  }
}

// Where the field-value totals are refused: the per-link counters summed over active links.
void ReadNvlinkErrorCounters(NvmlReadContext& ctx, Sample& s) {
  bool fields_refused =
      ctx.Unsupported(NvmlSlot::kFieldValues) ||
      (ctx.Unsupported(NvmlSlot::kFieldNvlinkCrcFlit) && ctx.Unsupported(NvmlSlot::kFieldNvlinkReplay));
  const NvmlApi& api = ctx.api();
  if (!fields_refused || !api.nvmlDeviceGetNvLinkState ||
      !ctx.Want(NvmlSlot::kNvlinkErrorCounter, api.nvmlDeviceGetNvLinkErrorCounter != nullptr)) {
    return;
  }
  uint64_t totals[4] = {};
  bool any = false;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    nvmlReturn_t rc = api.nvmlDeviceGetNvLinkState(ctx.handle(), link, &active);
    if (rc == NVML_ERROR_INVALID_ARGUMENT || rc == NVML_ERROR_GPU_IS_LOST) break;
    if (rc != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
    for (unsigned counter = 0; counter < 4; ++counter) {
      unsigned long long value = 0;
      rc = api.nvmlDeviceGetNvLinkErrorCounter(ctx.handle(), link, counter, &value);
      if (!ctx.Check(NvmlSlot::kNvlinkErrorCounter, "nvmlDeviceGetNvLinkErrorCounter", rc)) return;
      totals[counter] += value;
      any = true;
    }
  }
  if (!any) return;
  s.nvlink_replay_errors = totals[NVML_NVLINK_ERROR_DL_REPLAY];
  s.nvlink_recovery_errors = totals[NVML_NVLINK_ERROR_DL_RECOVERY];
  s.nvlink_crc_flit_errors = totals[NVML_NVLINK_ERROR_DL_CRC_FLIT];
  s.nvlink_crc_data_errors = totals[NVML_NVLINK_ERROR_DL_CRC_DATA];
}

// nvidia-smi's "Product Brand" spellings for nvmlBrandType_t 0..16 (unconfirmed that DCGM's
// DCGM_FI_DEV_BRAND uses exactly these strings).
const char* BrandName(nvmlBrandType_t brand) {
  static const char* const kNames[] = {
      "Unknown",        "Quadro",     "Tesla",           "NVS",
      "Grid",           "GeForce",    "Titan",           "NVIDIA Virtual Applications",
      "NVIDIA Virtual PC", "NVIDIA Virtual Compute Server", "NVIDIA RTX Virtual Workstation",
      "NVIDIA Cloud Gaming", "Quadro RTX", "NVIDIA RTX", "NVIDIA", "GeForce RTX", "Titan RTX"};
  return brand < std::size(kNames) ? kNames[brand] : "Unknown";
}

std::string NvmlString(nvmlReturn_t rc, const char* buffer) {
  return rc == NVML_SUCCESS ? std::string(buffer) : std::string();
}

}  // namespace

void ReadIdentityDetails(const NvmlApi& api, nvmlDevice_t handle, DeviceIdentity* id) {
  char buffer[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE + 1] = {};
  if (api.nvmlSystemGetNVMLVersion) {
    id->library_version = NvmlString(
        api.nvmlSystemGetNVMLVersion(buffer, NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE), buffer);
  }
  nvmlBrandType_t brand = 0;
  if (api.nvmlDeviceGetBrand && api.nvmlDeviceGetBrand(handle, &brand) == NVML_SUCCESS) {
    id->brand = BrandName(brand);
  }
  if (api.nvmlDeviceGetInforomVersion) {
    std::string* out[] = {&id->inforom_oem_version, &id->inforom_ecc_version,
                          &id->inforom_power_version};
    for (nvmlInforomObject_t object : {NVML_INFOROM_OEM, NVML_INFOROM_ECC, NVML_INFOROM_POWER}) {
      char version[NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE + 1] = {};
      *out[object] = NvmlString(api.nvmlDeviceGetInforomVersion(
                                    handle, object, version, NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE),
                                version);
    }
  }
  if (api.nvmlDeviceGetInforomImageVersion) {
    char version[NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE + 1] = {};
    id->inforom_image_version = NvmlString(
        api.nvmlDeviceGetInforomImageVersion(handle, version, NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE),
        version);
  }
}

void ReadP2p(NvmlReadContext& ctx, const std::vector<std::pair<nvmlDevice_t, unsigned>>& peers) {
  auto* function = ctx.api().nvmlDeviceGetP2PStatus;
  for (const auto& [peer, index] : peers) {
    if (!ctx.Want(NvmlSlot::kP2p, function != nullptr)) return;
    nvmlGpuP2PStatus_t status = NVML_P2P_STATUS_UNKNOWN;
    nvmlReturn_t rc = function(ctx.handle(), peer, NVML_P2P_CAPS_INDEX_NVLINK, &status);
    // GPU_IS_LOST here may be the peer's: only this device's own reads mark it lost.
    if (rc == NVML_ERROR_GPU_IS_LOST) continue;
    if (!ctx.Check(NvmlSlot::kP2p, "nvmlDeviceGetP2PStatus", rc)) continue;
    ctx.reading().p2p.push_back({index, static_cast<int>(status)});
  }
}

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
  const ExtraReads& extra = ctx.extra();
  if (extra.ecc_aggregate) ReadEccAggregate(ctx, s);
  if (extra.retired_pages) ReadRetiredPages(ctx, s);
  if (extra.violations) ReadViolations(ctx, s);
  if (extra.clock_events) ReadClockEvents(ctx, s);
  ReadFields(ctx, s);
  if (extra.nvlink_errors && !ctx.lost()) ReadNvlinkErrorCounters(ctx, s);
}

}  // namespace accel::devices
