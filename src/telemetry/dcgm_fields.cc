// The served DCGM fields: for each, the NVML source (DCGM's own, telemetry.md §2.6, where DCGM
// reads NVML; GPM for the DCP fields), the unit and value format DCGM publishes (INT64 fields
// as integers, DOUBLE fields with Go's %f), and what a MIG instance row shows.
#include <cmath>
#include <string>
#include <unordered_map>

#include "telemetry/dcgm_fields.h"

namespace accel::telemetry {

namespace {

using devices::Sample;
using devices::ThrottleReason;
using internal::Int;
using internal::IntOf;
using internal::None;
using internal::Real;
using internal::RealOf;
using internal::Value;
using enum MetricType;
using enum DcgmMigSource;
using enum DcgmShape;

// dcgm's INT64 fields; a non-finite reading has no integer form and is left out.
Value Rounded(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? Int(std::llround(*v)) : None();
}
Value WholePercent(const std::optional<double>& ratio) {
  return ratio ? Rounded(*ratio * 100) : None();
}
Value MiB(const std::optional<uint64_t>& bytes) {
  return bytes ? Int(static_cast<int64_t>(*bytes >> 20)) : None();
}
Value Flag(const std::optional<bool>& v) { return v ? Int(*v ? 1 : 0) : None(); }
Value Violation(const Sample& s, ThrottleReason r) {
  return IntOf(s.violation_ns[static_cast<size_t>(r)]);
}

devices::ExtraReads Needs(bool devices::ExtraReads::*flag) {
  devices::ExtraReads e;
  e.*flag = true;
  return e;
}

std::string_view DriverLabel(const Snapshot& s, const DeviceState& d) {
  return internal::DriverVersion(s, d);
}

// One entry per served field; see the header for the columns.
std::vector<DcgmField> BuildFields() {
  using E = devices::ExtraReads;
  const E none;
  std::vector<DcgmField> f = {
      // ---- dcgm-exporter's default set, in default-counters.csv order (HELP texts are ours) --
      {"DCGM_FI_DEV_SM_CLOCK", kValue, kGauge, "SM clock frequency (in MHz).",
       [](const Sample& s) { return Rounded(s.sm_clock_mhz); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetClockInfo(NVML_CLOCK_SM); MHz"},
      {"DCGM_FI_DEV_MEM_CLOCK", kValue, kGauge, "Memory clock frequency (in MHz).",
       [](const Sample& s) { return Rounded(s.memory_clock_mhz); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetClockInfo(NVML_CLOCK_MEM); MHz"},
      {"DCGM_FI_DEV_MEMORY_TEMP", kValue, kGauge, "HBM temperature (in C).",
       [](const Sample& s) { return Rounded(s.memory_temperature_c); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP); degrees C"},
      {"DCGM_FI_DEV_GPU_TEMP", kValue, kGauge, "GPU core temperature (in C).",
       [](const Sample& s) { return Rounded(s.temperature_c); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU), else nvmlDeviceGetTemperatureV; degrees C"},
      {"DCGM_FI_DEV_POWER_USAGE", kValue, kGauge, "Board power draw (in W).",
       [](const Sample& s) { return RealOf(s.power_w); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetPowerUsage (mW) / 1000; W, 6 decimals"},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", kValue, kCounter,
       "Energy used since the driver was loaded (in mJ).",
       [](const Sample& s) { return IntOf(s.energy_mj); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetTotalEnergyConsumption; mJ"},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", kValue, kCounter, "PCIe replays (retries) so far.",
       [](const Sample& s) { return IntOf(s.pcie_replays); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetPcieReplayCounter; count"},
      {"DCGM_FI_DEV_GPU_UTIL", kValue, kGauge, "GPU busy (in %).",
       [](const Sample& s) { return WholePercent(s.gpu_utilization); }, kNone, nullptr, none, 0,
       "nvmlDeviceGetUtilizationRates .gpu; percent (not on MIG instances)"},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", kValue, kGauge, "Memory controller busy (in %).",
       [](const Sample& s) { return WholePercent(s.memory_utilization); }, kNone, nullptr, none, 0,
       "nvmlDeviceGetUtilizationRates .memory; percent (not on MIG instances)"},
      {"DCGM_FI_DEV_ENC_UTIL", kValue, kGauge, "Video encoder busy (in %).",
       [](const Sample& s) { return WholePercent(s.encoder_utilization); }, kNone, nullptr, none, 0,
       "nvmlDeviceGetEncoderUtilization; percent"},
      {"DCGM_FI_DEV_DEC_UTIL", kValue, kGauge, "Video decoder busy (in %).",
       [](const Sample& s) { return WholePercent(s.decoder_utilization); }, kNone, nullptr, none, 0,
       "nvmlDeviceGetDecoderUtilization; percent"},
      {"DCGM_FI_DEV_XID_ERRORS", kXid, kGauge, "Last XID error seen on the GPU (0 before any).",
       nullptr, kDevice, nullptr, none, 0,
       "NVML event set, nvmlEventTypeXidCriticalError; the last XID, labels err_code, err_msg"},
      {"DCGM_FI_DEV_FB_FREE", kValue, kGauge, "Framebuffer memory free (in MiB).",
       [](const Sample& s) { return MiB(s.memory_free_bytes); }, kInstance, nullptr, none, 0,
       "nvmlDeviceGetMemoryInfo_v2 .free (the MIG device's on instance rows); MiB"},
      {"DCGM_FI_DEV_FB_USED", kValue, kGauge, "Framebuffer memory used (in MiB).",
       [](const Sample& s) { return MiB(s.memory_used_bytes); }, kInstance, nullptr, none, 0,
       "nvmlDeviceGetMemoryInfo_v2 .used; MiB"},
      {"DCGM_FI_DEV_FB_RESERVED", kValue, kGauge,
       "Framebuffer memory reserved by the driver (in MiB).",
       [](const Sample& s) { return MiB(s.memory_reserved_bytes); }, kInstance, nullptr, none, 0,
       "nvmlDeviceGetMemoryInfo_v2 .reserved; MiB"},
      {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", kValue, kCounter,
       "NVLink traffic over all links, received plus sent (in MB/s).",
       [](const Sample& s) { return Rounded(s.nvlink_bandwidth_mb_per_second); }, kDevice,
       nullptr, none, 0,
       "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX + _RX, all links): "
       "change of the KiB counters per second / 1000; about MB/s (a rate, typed counter as in DCGM)"},
      {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", kValue, kGauge, "vGPU license status (1 licensed).",
       [](const Sample& s) { return IntOf(s.vgpu_license_status); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetGridLicensableFeatures_v4; 1 licensed, 0 not (0 on bare metal)"},
      {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", kValue, kCounter,
       "Memory rows remapped after uncorrectable errors.",
       [](const Sample& s) { return IntOf(s.remapped_rows_uncorrectable); }, kDevice, nullptr,
       none, 0, "nvmlDeviceGetRemappedRows, else field NVML_FI_DEV_REMAPPED_UNC; rows"},
      {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", kValue, kCounter,
       "Memory rows remapped after correctable errors.",
       [](const Sample& s) { return IntOf(s.remapped_rows_correctable); }, kDevice, nullptr, none,
       0, "nvmlDeviceGetRemappedRows, else field NVML_FI_DEV_REMAPPED_COR; rows"},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", kValue, kGauge, "1 when a memory row remap has failed.",
       [](const Sample& s) { return Flag(s.row_remap_failure); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetRemappedRows failureOccurred; 0/1"},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", kValue, kGauge,
       "Fraction of time a graphics or compute engine was active.",
       [](const Sample& s) { return RealOf(s.engine_active); }, kInstance, nullptr, none, 0,
       "GPM NVML_GPM_METRIC_GRAPHICS_UTIL / 100; ratio 0..1"},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", kValue, kGauge,
       "Fraction of cycles a tensor pipe was active.",
       [](const Sample& s) { return RealOf(s.tensor_active); }, kInstance, nullptr, none, 0,
       "GPM NVML_GPM_METRIC_ANY_TENSOR_UTIL / 100; ratio 0..1"},
      {"DCGM_FI_PROF_DRAM_ACTIVE", kValue, kGauge,
       "Fraction of cycles the device memory interface was sending or receiving.",
       [](const Sample& s) { return RealOf(s.dram_active); }, kInstance, nullptr, none, 0,
       "GPM NVML_GPM_METRIC_DRAM_BW_UTIL / 100; ratio 0..1"},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", kValue, kGauge,
       "PCIe data sent, headers included (in bytes per second).",
       [](const Sample& s) { return Rounded(s.pcie_tx_bytes_per_second); }, kInstanceOrDevice,
       nullptr, none, 0, "GPM NVML_GPM_METRIC_PCIE_TX_PER_SEC (MiB/s) x 1048576; B/s"},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", kValue, kGauge,
       "PCIe data received, headers included (in bytes per second).",
       [](const Sample& s) { return Rounded(s.pcie_rx_bytes_per_second); }, kInstanceOrDevice,
       nullptr, none, 0, "GPM NVML_GPM_METRIC_PCIE_RX_PER_SEC (MiB/s) x 1048576; B/s"},

      // ---- labels (CSV type `label`) ----
      {"DCGM_FI_DRIVER_VERSION", kLabel, kGauge, "Driver version.", nullptr, kDevice, DriverLabel,
       none, 0, "nvmlSystemGetDriverVersion"},
      {"DCGM_FI_NVML_VERSION", kLabel, kGauge, "NVML version.", nullptr, kDevice,
       [](const Snapshot&, const DeviceState& d) -> std::string_view {
         return d.identity.library_version;
       },
       Needs(&E::identity_details), 0, "nvmlSystemGetNVMLVersion"},
      {"DCGM_FI_DEV_BRAND", kLabel, kGauge, "Device brand.", nullptr, kDevice,
       [](const Snapshot&, const DeviceState& d) -> std::string_view { return d.identity.brand; },
       Needs(&E::identity_details), 0, "nvmlDeviceGetBrand, as nvidia-smi names it"},
      {"DCGM_FI_DEV_SERIAL", kLabel, kGauge, "Device serial number.", nullptr, kDevice,
       [](const Snapshot&, const DeviceState& d) -> std::string_view { return d.identity.serial; },
       none, 0, "nvmlDeviceGetSerial"},
      {"DCGM_FI_DEV_OEM_INFOROM_VER", kLabel, kGauge, "OEM InfoROM version.", nullptr, kDevice,
       [](const Snapshot&, const DeviceState& d) -> std::string_view {
         return d.identity.inforom_oem_version;
       },
       Needs(&E::identity_details), 0, "nvmlDeviceGetInforomVersion(NVML_INFOROM_OEM)"},
      {"DCGM_FI_DEV_ECC_INFOROM_VER", kLabel, kGauge, "ECC InfoROM version.", nullptr, kDevice,
       [](const Snapshot&, const DeviceState& d) -> std::string_view {
         return d.identity.inforom_ecc_version;
       },
       Needs(&E::identity_details), 0, "nvmlDeviceGetInforomVersion(NVML_INFOROM_ECC)"},
      {"DCGM_FI_DEV_POWER_INFOROM_VER", kLabel, kGauge, "Power InfoROM version.", nullptr,
       kDevice,
       [](const Snapshot&, const DeviceState& d) -> std::string_view {
         return d.identity.inforom_power_version;
       },
       Needs(&E::identity_details), 0, "nvmlDeviceGetInforomVersion(NVML_INFOROM_POWER)"},
      {"DCGM_FI_DEV_INFOROM_IMAGE_VER", kLabel, kGauge, "InfoROM image version.", nullptr,
       kDevice,
       [](const Snapshot&, const DeviceState& d) -> std::string_view {
         return d.identity.inforom_image_version;
       },
       Needs(&E::identity_details), 0, "nvmlDeviceGetInforomImageVersion"},
      {"DCGM_FI_DEV_VBIOS_VERSION", kLabel, kGauge, "VBIOS version.", nullptr, kDevice,
       [](const Snapshot&, const DeviceState& d) -> std::string_view {
         return d.identity.firmware_version;
       },
       none, 0, "nvmlDeviceGetVbiosVersion"},

      // ---- memory, power, clocks beyond the default set ----
      {"DCGM_FI_DEV_FB_TOTAL", kValue, kGauge, "Framebuffer memory total (in MiB).",
       [](const Sample& s) { return MiB(s.memory_total_bytes); }, kInstance, nullptr, none, 0,
       "nvmlDeviceGetMemoryInfo_v2 .total (the MIG device's on instance rows); MiB"},
      {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", kValue, kGauge, "Enforced power limit (in W).",
       [](const Sample& s) { return RealOf(s.power_limit_w); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetEnforcedPowerLimit (mW) / 1000; W, 6 decimals"},
      {"DCGM_FI_DEV_ROW_REMAP_PENDING", kValue, kGauge,
       "1 when a memory row remap waits for a GPU reset.",
       [](const Sample& s) { return Flag(s.row_remap_pending); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetRemappedRows isPending; 0/1"},
      {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", kValue, kGauge,
       "Reasons the clocks are held down now (NVML bit mask).",
       [](const Sample& s) { return IntOf(s.clock_event_reasons); }, kDevice, nullptr,
       Needs(&E::clock_events), 0, "nvmlDeviceGetCurrentClocksEventReasons; bit mask"},

      // ---- throttling ----
      {"DCGM_FI_DEV_POWER_VIOLATION", kValue, kCounter,
       "Time held below requested clocks by power capping (in ns).",
       [](const Sample& s) { return Violation(s, ThrottleReason::kPower); }, kDevice, nullptr,
       Needs(&E::violations), 0,
       "nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_POWER) .violationTime, else field 74; ns"},
      {"DCGM_FI_DEV_THERMAL_VIOLATION", kValue, kCounter,
       "Time held below requested clocks by thermal limits (in ns).",
       [](const Sample& s) { return Violation(s, ThrottleReason::kThermal); }, kDevice, nullptr,
       Needs(&E::violations), 0,
       "nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_THERMAL), else field 75; ns"},
      {"DCGM_FI_DEV_SYNC_BOOST_VIOLATION", kValue, kCounter,
       "Time held below requested clocks by sync boost (in ns).",
       [](const Sample& s) { return Violation(s, ThrottleReason::kSyncBoost); }, kDevice, nullptr,
       Needs(&E::violations), 0,
       "nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_SYNC_BOOST), else field 76; ns"},
      {"DCGM_FI_DEV_BOARD_LIMIT_VIOLATION", kValue, kCounter,
       "Time held below requested clocks by board limits (in ns).",
       [](const Sample& s) { return Violation(s, ThrottleReason::kBoardLimit); }, kDevice, nullptr,
       Needs(&E::violations), 0,
       "nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_BOARD_LIMIT), else field 77; ns"},
      {"DCGM_FI_DEV_LOW_UTIL_VIOLATION", kValue, kCounter,
       "Time held below requested clocks by low utilization (in ns).",
       [](const Sample& s) { return Violation(s, ThrottleReason::kLowUtil); }, kDevice, nullptr,
       Needs(&E::violations), 0,
       "nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_LOW_UTILIZATION), else field 78; ns"},
      {"DCGM_FI_DEV_RELIABILITY_VIOLATION", kValue, kCounter,
       "Time held below requested clocks by reliability limits (in ns).",
       [](const Sample& s) { return Violation(s, ThrottleReason::kReliability); }, kDevice,
       nullptr, Needs(&E::violations), 0,
       "nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_RELIABILITY), else field 79; ns"},

      // ---- ECC and retired pages ----
      {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", kValue, kCounter,
       "Single-bit ECC errors since the last driver load.",
       [](const Sample& s) { return IntOf(s.ecc_correctable); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetTotalEccErrors(CORRECTED, VOLATILE); errors"},
      {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", kValue, kCounter,
       "Double-bit ECC errors since the last driver load.",
       [](const Sample& s) { return IntOf(s.ecc_uncorrectable); }, kDevice, nullptr, none, 0,
       "nvmlDeviceGetTotalEccErrors(UNCORRECTED, VOLATILE); errors"},
      {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", kValue, kCounter,
       "Single-bit ECC errors over the GPU's life.",
       [](const Sample& s) { return IntOf(s.ecc_correctable_aggregate); }, kDevice, nullptr,
       Needs(&E::ecc_aggregate), 0, "nvmlDeviceGetTotalEccErrors(CORRECTED, AGGREGATE); errors"},
      {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", kValue, kCounter,
       "Double-bit ECC errors over the GPU's life.",
       [](const Sample& s) { return IntOf(s.ecc_uncorrectable_aggregate); }, kDevice, nullptr,
       Needs(&E::ecc_aggregate), 0, "nvmlDeviceGetTotalEccErrors(UNCORRECTED, AGGREGATE); errors"},
      {"DCGM_FI_DEV_RETIRED_SBE", kValue, kCounter, "Pages retired after single-bit errors.",
       [](const Sample& s) { return IntOf(s.retired_pages_sbe); }, kDevice, nullptr,
       Needs(&E::retired_pages), 0,
       "nvmlDeviceGetRetiredPages(MULTIPLE_SINGLE_BIT_ECC_ERRORS) count; pages"},
      {"DCGM_FI_DEV_RETIRED_DBE", kValue, kCounter, "Pages retired after double-bit errors.",
       [](const Sample& s) { return IntOf(s.retired_pages_dbe); }, kDevice, nullptr,
       Needs(&E::retired_pages), 0, "nvmlDeviceGetRetiredPages(DOUBLE_BIT_ECC_ERROR) count; pages"},
      {"DCGM_FI_DEV_RETIRED_PENDING", kValue, kCounter,
       "1 when a page retirement waits for a reboot.",
       [](const Sample& s) { return Flag(s.retired_pages_pending); }, kDevice, nullptr,
       Needs(&E::retired_pages), 0, "nvmlDeviceGetRetiredPagesPendingStatus; 0/1"},

      // ---- NVLink ----
      {"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", kValue, kCounter,
       "NVLink flow-control CRC errors, all links.",
       [](const Sample& s) { return IntOf(s.nvlink_crc_flit_errors); }, kDevice, nullptr,
       Needs(&E::nvlink_errors), 0,
       "field NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL (38), else the sum of "
       "nvmlDeviceGetNvLinkErrorCounter(DL_CRC_FLIT) over active links; errors"},
      {"DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", kValue, kCounter,
       "NVLink data CRC errors, all links.",
       [](const Sample& s) { return IntOf(s.nvlink_crc_data_errors); }, kDevice, nullptr,
       Needs(&E::nvlink_errors), 0,
       "field NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL (45), else the per-link sum; errors"},
      {"DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", kValue, kCounter,
       "NVLink retries, all links.",
       [](const Sample& s) { return IntOf(s.nvlink_replay_errors); }, kDevice, nullptr,
       Needs(&E::nvlink_errors), 0,
       "field NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL (52), else the per-link sum; retries"},
      {"DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", kValue, kCounter,
       "NVLink link recoveries, all links.",
       [](const Sample& s) { return IntOf(s.nvlink_recovery_errors); }, kDevice, nullptr,
       Needs(&E::nvlink_errors), 0,
       "field NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL (59), else the per-link sum; events"},

      // ---- profiling (GPM on Hopper and later) beyond the default set ----
      {"DCGM_FI_PROF_SM_ACTIVE", kValue, kGauge,
       "Fraction of cycles an SM had at least one warp assigned.",
       [](const Sample& s) { return RealOf(s.sm_active); }, kInstance, nullptr, none, 0,
       "GPM NVML_GPM_METRIC_SM_UTIL / 100; ratio 0..1"},
      {"DCGM_FI_PROF_SM_OCCUPANCY", kValue, kGauge,
       "Warps resident on an SM, as a fraction of the most it holds.",
       [](const Sample& s) { return RealOf(s.sm_occupancy); }, kInstance, nullptr,
       Needs(&E::gpm_more), 0, "GPM NVML_GPM_METRIC_SM_OCCUPANCY / 100; ratio 0..1"},
      {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", kValue, kGauge, "Fraction of cycles the FP64 pipe was active.",
       [](const Sample& s) { return RealOf(s.fp64_active); }, kInstance, nullptr,
       Needs(&E::gpm_more), 0, "GPM NVML_GPM_METRIC_FP64_UTIL / 100; ratio 0..1"},
      {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", kValue, kGauge, "Fraction of cycles the FP32 pipe was active.",
       [](const Sample& s) { return RealOf(s.fp32_active); }, kInstance, nullptr,
       Needs(&E::gpm_more), 0, "GPM NVML_GPM_METRIC_FP32_UTIL / 100; ratio 0..1"},
      {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", kValue, kGauge, "Fraction of cycles the FP16 pipe was active.",
       [](const Sample& s) { return RealOf(s.fp16_active); }, kInstance, nullptr,
       Needs(&E::gpm_more), 0, "GPM NVML_GPM_METRIC_FP16_UTIL / 100; ratio 0..1"},
      {"DCGM_FI_PROF_NVLINK_TX_BYTES", kValue, kGauge,
       "NVLink data sent, headers included (in bytes per second).",
       [](const Sample& s) { return Rounded(s.nvlink_tx_bytes_per_second); }, kInstance, nullptr,
       Needs(&E::gpm_more), 0, "GPM NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC (MiB/s) x 1048576; B/s"},
      {"DCGM_FI_PROF_NVLINK_RX_BYTES", kValue, kGauge,
       "NVLink data received, headers included (in bytes per second).",
       [](const Sample& s) { return Rounded(s.nvlink_rx_bytes_per_second); }, kInstance, nullptr,
       Needs(&E::gpm_more), 0, "GPM NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC (MiB/s) x 1048576; B/s"},

      // ---- dcgm-exporter's own counters ----
      {"DCGM_EXP_XID_ERRORS_COUNT", kXidWindow, kCounter,
       "XID errors in the sliding window, by XID (label xid).", nullptr, kDevice, nullptr, none, 0,
       "NVML XID events counted per XID over the last window_size_in_ms (300000)"},
      {"DCGM_EXP_CLOCK_EVENTS_COUNT", kClockWindow, kCounter,
       "Collection passes in the sliding window that saw each clock event (label clock_event).",
       nullptr, kDevice, nullptr, Needs(&E::clock_events), 0,
       "nvmlDeviceGetCurrentClocksEventReasons bits, counted per pass over the last "
       "window_size_in_ms (300000)"},
      {"DCGM_EXP_P2P_STATUS", kP2p, kGauge,
       "NVLink P2P status towards each other GPU (0 OK; label link_status).", nullptr, kDevice,
       nullptr, Needs(&E::p2p_status), 0,
       "nvmlDeviceGetP2PStatus(NVML_P2P_CAPS_INDEX_NVLINK) per GPU pair; NVML status code"},
  };
  // DCGM_FI_DEV_NVLINK_BANDWIDTH_L0 .. L17: names must outlive the table.
  static const std::vector<std::string> link_names = [] {
    std::vector<std::string> names;
    for (unsigned link = 0; link < 18; ++link) {
      names.push_back("DCGM_FI_DEV_NVLINK_BANDWIDTH_L" + std::to_string(link));
    }
    return names;
  }();
  for (unsigned link = 0; link < link_names.size(); ++link) {
    DcgmField field{link_names[link].c_str(), kNvlinkLink, kCounter,
                    "NVLink traffic over one link, received plus sent (in MB/s).", nullptr,
                    kDevice, nullptr, Needs(&E::nvlink_per_link), link,
                    "nvmlDeviceGetFieldValues(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX + _RX, "
                    "scopeId = link): like NVLINK_BANDWIDTH_TOTAL for one link; about MB/s"};
    f.push_back(field);
  }
  return f;
}

}  // namespace

const std::vector<DcgmField>& DcgmFields() {
  static const std::vector<DcgmField> fields = BuildFields();
  return fields;
}

const DcgmField* FindDcgmField(std::string_view name) {
  static const std::unordered_map<std::string_view, const DcgmField*> by_name = [] {
    std::unordered_map<std::string_view, const DcgmField*> m;
    for (const DcgmField& f : DcgmFields()) m.emplace(f.name, &f);
    return m;
  }();
  auto it = by_name.find(CanonicalDcgmName(name));
  return it == by_name.end() ? nullptr : it->second;
}

const std::vector<const DcgmField*>& DefaultDcgmFields() {
  static const std::vector<const DcgmField*> fields = [] {
    std::vector<const DcgmField*> out;
    for (const char* name :
         {"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP",
          "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
          "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL",
          "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_XID_ERRORS",
          "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED",
          "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
          "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
          "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
          "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
          "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES"}) {
      out.push_back(FindDcgmField(name));
    }
    return out;
  }();
  return fields;
}

}  // namespace accel::telemetry
