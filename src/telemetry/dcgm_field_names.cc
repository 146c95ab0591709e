// The names DCGM knows: every DCGM_FI_* field id name of go-dcgm's const_fields.go (DCGM 4.x),
// the DCGM_EXP_* counters of dcgm-exporter's counters package, and go-dcgm's legacy 1.x names
// (legacy_fields.csv). Families with one name per link, lane, engine or error block are
// generated rather than listed. Used only to tell "a DCGM field accel does not serve" (a
// warning) from "not a DCGM field" (a typo, an error).
#include <string>
#include <unordered_set>
#include <utility>

#include "telemetry/dcgm_fields.h"

namespace accel::telemetry {

namespace {

// DCGM_FI_ + each of these, as go-dcgm spells them.
const char* const kFieldNames[] = {
    "UNKNOWN", "DRIVER_VERSION", "NVML_VERSION", "PROCESS_NAME", "DEV_COUNT",
    "CUDA_DRIVER_VERSION", "BIND_UNBIND_EVENT", "DEV_NAME", "DEV_BRAND", "DEV_NVML_INDEX",
    "DEV_SERIAL", "DEV_UUID", "DEV_MINOR_NUMBER", "DEV_OEM_INFOROM_VER", "DEV_PCI_BUSID",
    "DEV_PCI_COMBINED_ID", "DEV_PCI_SUBSYS_ID", "GPU_TOPOLOGY_PCI", "GPU_TOPOLOGY_NVLINK",
    "GPU_TOPOLOGY_AFFINITY", "DEV_CUDA_COMPUTE_CAPABILITY", "DEV_P2P_NVLINK_STATUS",
    "DEV_COMPUTE_MODE", "DEV_PERSISTENCE_MODE", "DEV_MIG_MODE", "DEV_CUDA_VISIBLE_DEVICES_STR",
    "DEV_MIG_MAX_SLICES", "DEV_CC_MODE", "DEV_MIG_ATTRIBUTES", "DEV_MIG_GI_INFO",
    "DEV_MIG_CI_INFO", "DEV_ECC_INFOROM_VER", "DEV_POWER_INFOROM_VER", "DEV_INFOROM_IMAGE_VER",
    "DEV_INFOROM_CONFIG_CHECK", "DEV_INFOROM_CONFIG_VALID", "DEV_VBIOS_VERSION",
    "DEV_BAR1_TOTAL", "SYNC_BOOST", "DEV_BAR1_USED", "DEV_BAR1_FREE", "DEV_GPM_SUPPORT",
    "DEV_SM_CLOCK", "DEV_MEM_CLOCK", "DEV_VIDEO_CLOCK", "DEV_APP_SM_CLOCK", "DEV_APP_MEM_CLOCK",
    "DEV_CLOCKS_EVENT_REASONS", "DEV_CLOCK_THROTTLE_REASONS", "DEV_MAX_SM_CLOCK",
    "DEV_MAX_MEM_CLOCK", "DEV_MAX_VIDEO_CLOCK", "DEV_AUTOBOOST", "DEV_SUPPORTED_CLOCKS",
    "DEV_MEMORY_TEMP", "DEV_GPU_TEMP", "DEV_MEM_MAX_OP_TEMP", "DEV_GPU_MAX_OP_TEMP",
    "DEV_GPU_TEMP_LIMIT", "DEV_POWER_USAGE", "DEV_TOTAL_ENERGY_CONSUMPTION",
    "DEV_POWER_USAGE_INSTANT", "DEV_SLOWDOWN_TEMP", "DEV_SHUTDOWN_TEMP", "DEV_POWER_MGMT_LIMIT",
    "DEV_POWER_MGMT_LIMIT_MIN", "DEV_POWER_MGMT_LIMIT_MAX", "DEV_POWER_MGMT_LIMIT_DEF",
    "DEV_ENFORCED_POWER_LIMIT", "DEV_REQUESTED_POWER_PROFILE_MASK",
    "DEV_ENFORCED_POWER_PROFILE_MASK", "DEV_VALID_POWER_PROFILE_MASK",
    "DEV_FABRIC_MANAGER_STATUS", "DEV_FABRIC_MANAGER_ERROR_CODE", "DEV_FABRIC_CLUSTER_UUID",
    "DEV_FABRIC_CLIQUE_ID", "DEV_FABRIC_HEALTH_MASK", "DEV_PSTATE", "DEV_FAN_SPEED",
    "DEV_PCIE_TX_THROUGHPUT", "DEV_PCIE_RX_THROUGHPUT", "DEV_PCIE_REPLAY_COUNTER",
    "DEV_GPU_UTIL", "DEV_MEM_COPY_UTIL", "DEV_ACCOUNTING_DATA", "DEV_ENC_UTIL", "DEV_DEC_UTIL",
    "DEV_XID_ERRORS", "DEV_PCIE_MAX_LINK_GEN", "DEV_PCIE_MAX_LINK_WIDTH", "DEV_PCIE_LINK_GEN",
    "DEV_PCIE_LINK_WIDTH", "DEV_POWER_VIOLATION", "DEV_THERMAL_VIOLATION",
    "DEV_SYNC_BOOST_VIOLATION", "DEV_BOARD_LIMIT_VIOLATION", "DEV_LOW_UTIL_VIOLATION",
    "DEV_RELIABILITY_VIOLATION", "DEV_TOTAL_APP_CLOCKS_VIOLATION",
    "DEV_TOTAL_BASE_CLOCKS_VIOLATION", "DEV_FB_TOTAL", "DEV_FB_FREE", "DEV_FB_USED",
    "DEV_FB_RESERVED", "DEV_FB_USED_PERCENT", "DEV_C2C_LINK_COUNT", "DEV_C2C_LINK_STATUS",
    "DEV_C2C_MAX_BANDWIDTH", "DEV_ECC_CURRENT", "DEV_ECC_PENDING", "DEV_THRESHOLD_SRM",
    "DEV_DIAG_STATUS", "DEV_DIAG_NCCL_TESTS_RESULT", "DEV_RETIRED_SBE", "DEV_RETIRED_DBE",
    "DEV_RETIRED_PENDING", "DEV_UNCORRECTABLE_REMAPPED_ROWS", "DEV_CORRECTABLE_REMAPPED_ROWS",
    "DEV_ROW_REMAP_FAILURE", "DEV_ROW_REMAP_PENDING", "DEV_GPU_NVLINK_ERRORS",
    "DEV_NVLINK_ERROR_DL_CRC", "DEV_NVLINK_ERROR_DL_RECOVERY", "DEV_NVLINK_ERROR_DL_REPLAY",
    "DEV_VIRTUAL_MODE", "DEV_SUPPORTED_TYPE_INFO", "DEV_CREATABLE_VGPU_TYPE_IDS",
    "DEV_VGPU_INSTANCE_IDS", "DEV_VGPU_UTILIZATIONS", "DEV_VGPU_PER_PROCESS_UTILIZATION",
    "DEV_ENC_STATS", "DEV_FBC_STATS", "DEV_FBC_SESSIONS_INFO", "DEV_SUPPORTED_VGPU_TYPE_IDS",
    "DEV_VGPU_TYPE_INFO", "DEV_VGPU_TYPE_NAME", "DEV_VGPU_TYPE_CLASS", "DEV_VGPU_TYPE_LICENSE",
    "DEV_VGPU_VM_ID", "FIRST_VGPU_FIELD_ID", "DEV_VGPU_VM_NAME", "DEV_VGPU_TYPE",
    "DEV_VGPU_UUID", "DEV_VGPU_DRIVER_VERSION", "DEV_VGPU_MEMORY_USAGE",
    "DEV_VGPU_LICENSE_STATUS", "DEV_VGPU_FRAME_RATE_LIMIT", "DEV_VGPU_ENC_STATS",
    "DEV_VGPU_ENC_SESSIONS_INFO", "DEV_VGPU_FBC_STATS", "DEV_VGPU_FBC_SESSIONS_INFO",
    "DEV_VGPU_INSTANCE_LICENSE_STATE", "DEV_VGPU_PCI_ID", "DEV_VGPU_VM_GPU_INSTANCE_ID",
    "LAST_VGPU_FIELD_ID", "DEV_NVLINK_PPRM_OPER_RECOVERY", "INTERNAL_FIELDS_0_START",
    "INTERNAL_FIELDS_0_END", "FIRST_NVSWITCH_FIELD_ID", "LAST_NVSWITCH_FIELD_ID",
    "DEV_NVLINK_TX_BANDWIDTH_TOTAL", "DEV_NVLINK_RX_BANDWIDTH_TOTAL",
    "PROF_GR_ENGINE_ACTIVE", "PROF_SM_ACTIVE", "PROF_SM_OCCUPANCY", "PROF_PIPE_TENSOR_ACTIVE",
    "PROF_DRAM_ACTIVE", "PROF_PIPE_FP64_ACTIVE", "PROF_PIPE_FP32_ACTIVE", "PROF_PIPE_FP16_ACTIVE",
    "PROF_PCIE_TX_BYTES", "PROF_PCIE_RX_BYTES", "PROF_NVLINK_TX_BYTES", "PROF_NVLINK_RX_BYTES",
    "PROF_PIPE_TENSOR_IMMA_ACTIVE", "PROF_PIPE_TENSOR_HMMA_ACTIVE",
    "PROF_PIPE_TENSOR_DFMA_ACTIVE", "PROF_PIPE_INT_ACTIVE", "PROF_NVOFA0_ACTIVE",
    "PROF_NVOFA1_ACTIVE", "PROF_C2C_TX_ALL_BYTES", "PROF_C2C_TX_DATA_BYTES",
    "PROF_C2C_RX_ALL_BYTES", "PROF_C2C_RX_DATA_BYTES", "PROF_HOSTMEM_CACHE_HIT",
    "PROF_HOSTMEM_CACHE_MISS", "PROF_PEERMEM_CACHE_HIT", "PROF_PEERMEM_CACHE_MISS",
    "DEV_CPU_UTIL_TOTAL", "DEV_CPU_UTIL_USER", "DEV_CPU_UTIL_NICE", "DEV_CPU_UTIL_SYS",
    "DEV_CPU_UTIL_IRQ", "DEV_CPU_TEMP_CURRENT", "DEV_CPU_TEMP_WARNING", "DEV_CPU_TEMP_CRITICAL",
    "DEV_CPU_CLOCK_CURRENT", "DEV_CPU_POWER_UTIL_CURRENT", "DEV_CPU_POWER_LIMIT",
    "DEV_SYSIO_POWER_UTIL_CURRENT", "DEV_MODULE_POWER_UTIL_CURRENT", "DEV_CPU_VENDOR",
    "DEV_CPU_MODEL", "DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL", "DEV_FIRST_CONNECTX_FIELD_ID",
    "DEV_LAST_CONNECTX_FIELD_ID", "DEV_C2C_LINK_ERROR_INTR", "DEV_C2C_LINK_ERROR_REPLAY",
    "DEV_C2C_LINK_ERROR_REPLAY_B2B", "DEV_C2C_LINK_POWER_STATE",
    "DEV_PCIE_COUNT_CORRECTABLE_ERRORS", "IMEX_DOMAIN_STATUS", "IMEX_DAEMON_STATUS",
    "DEV_MEMORY_UNREPAIRABLE_FLAG", "DEV_NVLINK_GET_STATE", "DEV_GET_GPU_RECOVERY_ACTION",
};

// DCGM_FI_<prefix><suffix> for every suffix.
struct Family {
  const char* prefix;
  std::vector<std::string> suffixes;
};

std::vector<std::string> Numbered(const char* before, int first, int last, const char* after = "") {
  std::vector<std::string> out;
  for (int i = first; i <= last; ++i) out.push_back(before + std::to_string(i) + after);
  return out;
}

std::vector<std::string> Words(std::initializer_list<const char*> words) {
  return std::vector<std::string>(words.begin(), words.end());
}

std::vector<Family> Families() {
  std::vector<std::string> ecc;  // {SBE,DBE}_{VOL,AGG}_{TOTAL,L1,L2,DEV,REG,TEX,SHM,CBU,SRM}
  for (const char* bits : {"SBE", "DBE"}) {
    for (const char* scope : {"VOL", "AGG"}) {
      for (const char* where : {"TOTAL", "L1", "L2", "DEV", "REG", "TEX", "SHM", "CBU", "SRM"}) {
        ecc.push_back(std::string(bits) + "_" + scope + "_" + where);
      }
    }
  }
  std::vector<std::string> links = Numbered("_L", 0, 17);
  links.push_back("_TOTAL");
  std::vector<std::string> nvswitch = Words(
      {"VOLTAGE_MVOLT", "CURRENT_IDDQ", "CURRENT_IDDQ_REV", "CURRENT_IDDQ_DVDD", "POWER_VDD",
       "POWER_DVDD", "POWER_HVDD", "LINK_THROUGHPUT_TX", "LINK_THROUGHPUT_RX", "LINK_FATAL_ERRORS",
       "LINK_NON_FATAL_ERRORS", "LINK_REPLAY_ERRORS", "LINK_RECOVERY_ERRORS", "LINK_FLIT_ERRORS",
       "LINK_CRC_ERRORS", "LINK_ECC_ERRORS", "FATAL_ERRORS", "NON_FATAL_ERRORS",
       "TEMPERATURE_CURRENT", "TEMPERATURE_LIMIT_SLOWDOWN", "TEMPERATURE_LIMIT_SHUTDOWN",
       "THROUGHPUT_TX", "THROUGHPUT_RX", "PHYS_ID", "RESET_REQUIRED", "LINK_ID", "PCIE_DOMAIN",
       "PCIE_BUS", "PCIE_DEVICE", "PCIE_FUNCTION", "LINK_STATUS", "LINK_TYPE",
       "LINK_REMOTE_PCIE_DOMAIN", "LINK_REMOTE_PCIE_BUS", "LINK_REMOTE_PCIE_DEVICE",
       "LINK_REMOTE_PCIE_FUNCTION", "LINK_DEVICE_LINK_ID", "LINK_DEVICE_LINK_SID", "DEVICE_UUID"});
  for (const char* level : {"LOW", "MEDIUM", "HIGH", "PANIC", "COUNT"}) {
    for (std::string vc : Numbered("_VC", 0, 3)) nvswitch.push_back(std::string("LINK_LATENCY_") + level + vc);
  }
  for (const char* kind : {"CRC", "ECC"}) {
    for (std::string lane : Numbered("_LANE", 0, 7)) {
      nvswitch.push_back(std::string("LINK_") + kind + "_ERRORS" + lane);
    }
  }
  std::vector<std::string> prof_links;
  for (int link = 0; link <= 17; ++link) {
    prof_links.push_back("L" + std::to_string(link) + "_TX_BYTES");
    prof_links.push_back("L" + std::to_string(link) + "_RX_BYTES");
  }
  std::vector<std::string> engines = Numbered("NVDEC", 0, 7, "_ACTIVE");
  for (std::string& e : Numbered("NVJPG", 0, 7, "_ACTIVE")) engines.push_back(std::move(e));
  std::vector<std::string> nvlink_count = Words(
      {"TX_PACKETS", "TX_BYTES", "RX_PACKETS", "RX_BYTES", "RX_MALFORMED_PACKET_ERRORS",
       "RX_BUFFER_OVERRUN_ERRORS", "RX_ERRORS", "RX_REMOTE_ERRORS", "RX_GENERAL_ERRORS",
       "LOCAL_LINK_INTEGRITY_ERRORS", "TX_DISCARDS", "LINK_RECOVERY_SUCCESSFUL_EVENTS",
       "LINK_RECOVERY_FAILED_EVENTS", "LINK_RECOVERY_EVENTS", "RX_SYMBOL_ERRORS", "SYMBOL_BER",
       "SYMBOL_BER_FLOAT", "EFFECTIVE_BER", "EFFECTIVE_BER_FLOAT", "EFFECTIVE_ERRORS"});
  for (std::string& h : Numbered("FEC_HISTORY_", 0, 15)) nvlink_count.push_back(std::move(h));
  return {
      {"DEV_ECC_", ecc},
      {"DEV_CPU_AFFINITY_", Numbered("", 0, 3)},
      {"DEV_MEM_AFFINITY_", Numbered("", 0, 3)},
      {"DEV_DIAG_", Words({"MEMORY_RESULT", "DIAGNOSTIC_RESULT", "PCIE_RESULT",
                           "TARGETED_STRESS_RESULT", "TARGETED_POWER_RESULT",
                           "MEMORY_BANDWIDTH_RESULT", "MEMTEST_RESULT", "PULSE_TEST_RESULT",
                           "EUD_RESULT", "CPU_EUD_RESULT", "SOFTWARE_RESULT",
                           "NVBANDWIDTH_RESULT"})},
      {"DEV_BANKS_REMAP_ROWS_AVAIL_", Words({"MAX", "HIGH", "PARTIAL", "LOW", "NONE"})},
      {"DEV_NVLINK_CRC_FLIT_ERROR_COUNT", links},
      {"DEV_NVLINK_CRC_DATA_ERROR_COUNT", links},
      {"DEV_NVLINK_REPLAY_ERROR_COUNT", links},
      {"DEV_NVLINK_RECOVERY_ERROR_COUNT", links},
      {"DEV_NVLINK_BANDWIDTH", links},
      {"DEV_NVLINK_TX_BANDWIDTH", links},
      {"DEV_NVLINK_RX_BANDWIDTH", links},
      {"DEV_PLATFORM_", Words({"INFINIBAND_GUID", "CHASSIS_SERIAL_NUMBER", "CHASSIS_SLOT_NUMBER",
                               "TRAY_INDEX", "HOST_ID", "PEER_TYPE", "MODULE_ID"})},
      {"DEV_NVLINK_PPCNT_",
       Words({"RECOVERY_TIME_SINCE_LAST", "RECOVERY_TIME_BETWEEN_LAST_TWO",
              "RECOVERY_TOTAL_SUCCESSFUL_EVENTS", "PHYSICAL_SUCCESSFUL_RECOVERY_EVENTS",
              "PHYSICAL_LINK_DOWN_COUNTER", "PLR_RCV_CODES", "PLR_RCV_CODE_ERR",
              "PLR_RCV_UNCORRECTABLE_CODE", "PLR_XMIT_CODES", "PLR_XMIT_RETRY_CODES",
              "PLR_XMIT_RETRY_EVENTS", "PLR_SYNC_EVENTS", "IBPC_PORT_XMIT_WAIT"})},
      {"DEV_NVSWITCH_", nvswitch},
      {"PROF_NVLINK_", prof_links},
      {"PROF_", engines},
      {"DEV_NVLINK_COUNT_", nvlink_count},
      {"DEV_CONNECTX_",
       Words({"HEALTH", "ACTIVE_PCIE_LINK_WIDTH", "ACTIVE_PCIE_LINK_SPEED",
              "EXPECT_PCIE_LINK_WIDTH", "EXPECT_PCIE_LINK_SPEED", "CORRECTABLE_ERR_STATUS",
              "CORRECTABLE_ERR_MASK", "UNCORRECTABLE_ERR_STATUS", "UNCORRECTABLE_ERR_MASK",
              "UNCORRECTABLE_ERR_SEVERITY", "DEVICE_TEMPERATURE"})},
      {"DEV_CLOCKS_EVENT_REASON_",
       Words({"SW_POWER_CAP_NS", "SYNC_BOOST_NS", "SW_THERM_SLOWDOWN_NS", "HW_THERM_SLOWDOWN_NS",
              "HW_POWER_BRAKE_SLOWDOWN_NS"})},
      {"DEV_PWR_SMOOTHING_",
       Words({"ENABLED", "PRIV_LVL", "IMM_RAMP_DOWN_ENABLED", "APPLIED_TMP_CEIL",
              "APPLIED_TMP_FLOOR", "MAX_PERCENT_TMP_FLOOR_SETTING", "MIN_PERCENT_TMP_FLOOR_SETTING",
              "HW_CIRCUITRY_PERCENT_LIFETIME_REMAINING", "MAX_NUM_PRESET_PROFILES",
              "PROFILE_PERCENT_TMP_FLOOR", "PROFILE_RAMP_UP_RATE", "PROFILE_RAMP_DOWN_RATE",
              "PROFILE_RAMP_DOWN_HYST_VAL", "ACTIVE_PRESET_PROFILE",
              "ADMIN_OVERRIDE_PERCENT_TMP_FLOOR", "ADMIN_OVERRIDE_RAMP_UP_RATE",
              "ADMIN_OVERRIDE_RAMP_DOWN_RATE", "ADMIN_OVERRIDE_RAMP_DOWN_HYST_VAL"})},
  };
}

}  // namespace

/// go-dcgm's legacy names (legacy_fields.csv) and the DCGM field each resolves to by id.
const std::pair<const char*, const char*> kLegacyDcgmNames[] = {
    {"DCGM_FI_DEV_GPU_UTIL_RATIO", "DCGM_FI_DEV_GPU_UTIL"},
    {"dcgm_board_limit_violation", "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION"},
    {"dcgm_dec_utilization", "DCGM_FI_DEV_DEC_UTIL"},
    {"dcgm_ecc_dbe_aggregate_total", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"},
    {"dcgm_ecc_dbe_volatile_total", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"},
    {"dcgm_ecc_sbe_aggregate_total", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"},
    {"dcgm_ecc_sbe_volatile_total", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"},
    {"dcgm_enc_utilization", "DCGM_FI_DEV_ENC_UTIL"},
    {"dcgm_fb_free", "DCGM_FI_DEV_FB_FREE"},
    {"dcgm_fb_used", "DCGM_FI_DEV_FB_USED"},
    {"dcgm_fi_prof_dram_active", "DCGM_FI_PROF_DRAM_ACTIVE"},
    {"dcgm_fi_prof_gr_engine_active", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"},
    {"dcgm_fi_prof_pcie_rx_bytes", "DCGM_FI_PROF_PCIE_RX_BYTES"},
    {"dcgm_fi_prof_pcie_tx_bytes", "DCGM_FI_PROF_PCIE_TX_BYTES"},
    {"dcgm_fi_prof_pipe_tensor_active", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"},
    {"dcgm_fi_prof_sm_active", "DCGM_FI_PROF_SM_ACTIVE"},
    {"dcgm_fi_prof_sm_occupancy", "DCGM_FI_PROF_SM_OCCUPANCY"},
    {"dcgm_gpu_temp", "DCGM_FI_DEV_GPU_TEMP"},
    {"dcgm_gpu_utilization", "DCGM_FI_DEV_GPU_UTIL"},
    {"dcgm_low_util_violation", "DCGM_FI_DEV_LOW_UTIL_VIOLATION"},
    {"dcgm_mem_copy_utilization", "DCGM_FI_DEV_MEM_COPY_UTIL"},
    {"dcgm_memory_clock", "DCGM_FI_DEV_MEM_CLOCK"},
    {"dcgm_memory_temp", "DCGM_FI_DEV_MEMORY_TEMP"},
    {"dcgm_nvlink_bandwidth_total", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"},
    {"dcgm_nvlink_data_crc_error_count_total", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"},
    {"dcgm_nvlink_flit_crc_error_count_total", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL"},
    {"dcgm_nvlink_recovery_error_count_total", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"},
    {"dcgm_nvlink_replay_error_count_total", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL"},
    {"dcgm_pcie_replay_counter", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"},
    {"dcgm_pcie_rx_throughput", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT"},
    {"dcgm_pcie_tx_throughput", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT"},
    {"dcgm_power_usage", "DCGM_FI_DEV_POWER_USAGE"},
    {"dcgm_power_violation", "DCGM_FI_DEV_POWER_VIOLATION"},
    {"dcgm_reliability_violation", "DCGM_FI_DEV_RELIABILITY_VIOLATION"},
    {"dcgm_retired_pages_dbe", "DCGM_FI_DEV_RETIRED_DBE"},
    {"dcgm_retired_pages_pending", "DCGM_FI_DEV_RETIRED_PENDING"},
    {"dcgm_retired_pages_sbe", "DCGM_FI_DEV_RETIRED_SBE"},
    {"dcgm_sm_clock", "DCGM_FI_DEV_SM_CLOCK"},
    {"dcgm_sync_boost_violation", "DCGM_FI_DEV_SYNC_BOOST_VIOLATION"},
    {"dcgm_thermal_violation", "DCGM_FI_DEV_THERMAL_VIOLATION"},
    {"dcgm_total_energy_consumption", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"},
    {"dcgm_xid_errors", "DCGM_FI_DEV_XID_ERRORS"},
};

std::string_view CanonicalDcgmName(std::string_view name) {
  for (const auto& [legacy, canonical] : kLegacyDcgmNames) {
    if (name == legacy) return canonical;
  }
  return name;
}

bool IsDcgmFieldName(std::string_view name) {
  static const std::unordered_set<std::string> known = [] {
    std::unordered_set<std::string> names;
    for (const char* n : kFieldNames) names.insert(std::string("DCGM_FI_") + n);
    for (const Family& f : Families()) {
      for (const std::string& s : f.suffixes) names.insert(std::string("DCGM_FI_") + f.prefix + s);
    }
    for (const char* n : {"DCGM_EXP_CLOCK_EVENTS_COUNT", "DCGM_EXP_XID_ERRORS_COUNT",
                          "DCGM_EXP_GPU_HEALTH_STATUS", "DCGM_EXP_P2P_STATUS"}) {
      names.insert(n);
    }
    for (const auto& [legacy, canonical] : kLegacyDcgmNames) names.insert(legacy);
    return names;
  }();
  return known.count(std::string(name)) > 0;
}

std::string_view WhyNotServed(std::string_view name) {
  std::string_view n = CanonicalDcgmName(name);
  if (n == "DCGM_EXP_GPU_HEALTH_STATUS") {
    return "DCGM's health-watch engine has no NVML equivalent; accel_device_up, "
           "DCGM_FI_DEV_XID_ERRORS and the remapped-row fields cover its signals";
  }
  if (n.starts_with("DCGM_FI_DEV_NVSWITCH_")) return "NVSwitch entities are not read";
  if (n.starts_with("DCGM_FI_DEV_CPU_")) return "Grace CPU entities are not read";
  if (n.starts_with("DCGM_FI_DEV_CONNECTX_")) return "ConnectX entities are not read";
  if (n.starts_with("DCGM_FI_DEV_DIAG_")) return "DCGM diagnostics results need DCGM";
  if (n.starts_with("DCGM_FI_DEV_VGPU_")) return "vGPU host fields are not read";
  return "";
}

}  // namespace accel::telemetry
