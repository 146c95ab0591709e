// ParseAmdMetricsConfig: AMD device-metrics-exporter's config.json (GPUConfig.Fields,
// CommonConfig.MetricsFieldPrefix), and the field vocabulary it defines (exporterconfig.proto's
// GPUMetricField enum as the exporter's example config and metrics-support-matrix.yaml list it).
#include <algorithm>
#include <set>

#include "common/configmap.h"
#include "common/error.h"
#include "common/structured_file.h"
#include "telemetry/field_selection.h"

namespace accel::telemetry {

namespace {

// Every GPUMetricField name, in the example config's order, except the ECC families, which
// AmdFieldNames() generates (GPU_ECC_{CORRECT,UNCORRECT,DEFERRED}_<block>).
const char* const kPlainNames[] = {
    "GPU_NODES_TOTAL", "GPU_PACKAGE_POWER", "GPU_AVERAGE_PACKAGE_POWER", "GPU_EDGE_TEMPERATURE",
    "GPU_JUNCTION_TEMPERATURE", "GPU_MEMORY_TEMPERATURE", "GPU_HBM_TEMPERATURE",
    "GPU_GFX_ACTIVITY", "GPU_UMC_ACTIVITY", "GPU_MMA_ACTIVITY", "GPU_VCN_ACTIVITY",
    "GPU_JPEG_ACTIVITY", "GPU_VOLTAGE", "GPU_GFX_VOLTAGE", "GPU_MEMORY_VOLTAGE", "PCIE_SPEED",
    "PCIE_MAX_SPEED", "PCIE_BANDWIDTH", "GPU_ENERGY_CONSUMED", "PCIE_REPLAY_COUNT",
    "PCIE_RECOVERY_COUNT", "PCIE_REPLAY_ROLLOVER_COUNT", "PCIE_NACK_SENT_COUNT",
    "PCIE_NACK_RECEIVED_COUNT", "GPU_CLOCK", "GPU_POWER_USAGE", "GPU_VRAM_MAX_BANDWIDTH",
    "GPU_TOTAL_VRAM", "GPU_XGMI_NBR_0_NOP_TX", "GPU_XGMI_NBR_0_REQ_TX", "GPU_XGMI_NBR_0_RESP_TX",
    "GPU_XGMI_NBR_0_BEATS_TX", "GPU_XGMI_NBR_1_NOP_TX", "GPU_XGMI_NBR_1_REQ_TX",
    "GPU_XGMI_NBR_1_RESP_TX", "GPU_XGMI_NBR_1_BEATS_TX", "GPU_XGMI_NBR_0_TX_THRPUT",
    "GPU_XGMI_NBR_1_TX_THRPUT", "GPU_XGMI_NBR_2_TX_THRPUT", "GPU_XGMI_NBR_3_TX_THRPUT",
    "GPU_XGMI_NBR_4_TX_THRPUT", "GPU_XGMI_NBR_5_TX_THRPUT", "GPU_USED_VRAM", "GPU_FREE_VRAM",
    "GPU_TOTAL_VISIBLE_VRAM", "GPU_USED_VISIBLE_VRAM", "GPU_FREE_VISIBLE_VRAM", "GPU_TOTAL_GTT",
    "GPU_USED_GTT", "GPU_FREE_GTT", "GPU_HEALTH", "GPU_XGMI_LINK_RX", "GPU_XGMI_LINK_TX",
    "GPU_VIOLATION_CURRENT_ACCUMULATED_COUNTER",
    "GPU_VIOLATION_PROCESSOR_HOT_RESIDENCY_ACCUMULATED", "GPU_VIOLATION_PPT_RESIDENCY_ACCUMULATED",
    "GPU_VIOLATION_SOCKET_THERMAL_RESIDENCY_ACCUMULATED",
    "GPU_VIOLATION_VR_THERMAL_RESIDENCY_ACCUMULATED",
    "GPU_VIOLATION_HBM_THERMAL_RESIDENCY_ACCUMULATED", "GPU_GFX_BUSY_INSTANTANEOUS",
    "GPU_VCN_BUSY_INSTANTANEOUS", "GPU_JPEG_BUSY_INSTANTANEOUS", "PCIE_RX", "PCIE_TX",
    "PCIE_BIDIRECTIONAL_BANDWIDTH", "GPU_AFID_ERRORS", "GPU_MIN_CLOCK", "GPU_MAX_CLOCK",
    "GPU_VIOLATION_PROCESSOR_HOT_RESIDENCY_PERCENTAGE", "GPU_VIOLATION_PPT_RESIDENCY_PERCENTAGE",
    "GPU_VIOLATION_SOCKET_THERMAL_RESIDENCY_PERCENTAGE",
    "GPU_VIOLATION_VR_THERMAL_RESIDENCY_PERCENTAGE",
    "GPU_VIOLATION_HBM_THERMAL_RESIDENCY_PERCENTAGE",
    "GPU_VIOLATION_GFX_CLOCK_BELOW_HOST_LIMIT_POWER_ACCUMULATED",
    "GPU_VIOLATION_GFX_CLOCK_BELOW_HOST_LIMIT_THERMAL_ACCUMULATED",
    "GPU_VIOLATION_LOW_UTILIZATION_ACCUMULATED",
    "GPU_VIOLATION_GFX_CLOCK_BELOW_HOST_LIMIT_TOTAL_ACCUMULATED",
    "GPU_VIOLATION_GFX_CLOCK_BELOW_HOST_LIMIT_POWER_PERCENTAGE",
    "GPU_VIOLATION_GFX_CLOCK_BELOW_HOST_LIMIT_THERMAL_PERCENTAGE",
    "GPU_VIOLATION_LOW_UTILIZATION_PERCENTAGE",
    "GPU_VIOLATION_GFX_CLOCK_BELOW_HOST_LIMIT_TOTAL_PERCENTAGE", "GPU_PROCESS_CU_OCCUPANCY",
    "GPU_PROF_GRBM_GUI_ACTIVE", "GPU_PROF_SQ_WAVES", "GPU_PROF_GRBM_COUNT",
    "GPU_PROF_CPC_CPC_STAT_BUSY", "GPU_PROF_CPC_CPC_STAT_IDLE", "GPU_PROF_CPC_CPC_STAT_STALL",
    "GPU_PROF_CPC_CPC_TCIU_BUSY", "GPU_PROF_CPC_CPC_TCIU_IDLE", "GPU_PROF_CPC_CPC_UTCL2IU_BUSY",
    "GPU_PROF_CPC_CPC_UTCL2IU_IDLE", "GPU_PROF_CPC_CPC_UTCL2IU_STALL",
    "GPU_PROF_CPC_ME1_BUSY_FOR_PACKET_DECODE", "GPU_PROF_CPC_ME1_DC0_SPI_BUSY",
    "GPU_PROF_CPC_UTCL1_STALL_ON_TRANSLATION", "GPU_PROF_CPC_ALWAYS_COUNT",
    "GPU_PROF_CPC_ADC_VALID_CHUNK_NOT_AVAIL", "GPU_PROF_CPC_ADC_DISPATCH_ALLOC_DONE",
    "GPU_PROF_CPC_ADC_VALID_CHUNK_END", "GPU_PROF_CPC_SYNC_FIFO_FULL_LEVEL",
    "GPU_PROF_CPC_SYNC_FIFO_FULL", "GPU_PROF_CPC_GD_BUSY", "GPU_PROF_CPC_TG_SEND",
    "GPU_PROF_CPC_WALK_NEXT_CHUNK", "GPU_PROF_CPC_STALLED_BY_SE0_SPI",
    "GPU_PROF_CPC_STALLED_BY_SE1_SPI", "GPU_PROF_CPC_STALLED_BY_SE2_SPI",
    "GPU_PROF_CPC_STALLED_BY_SE3_SPI", "GPU_PROF_CPC_LTE_ALL", "GPU_PROF_CPC_SYNC_WRREQ_FIFO_BUSY",
    "GPU_PROF_CPC_CANE_BUSY", "GPU_PROF_CPC_CANE_STALL",
    "GPU_PROF_CPF_CMP_UTCL1_STALL_ON_TRANSLATION", "GPU_PROF_CPF_CPF_STAT_BUSY",
    "GPU_PROF_CPF_CPF_STAT_IDLE", "GPU_PROF_CPF_CPF_STAT_STALL", "GPU_PROF_CPF_CPF_TCIU_BUSY",
    "GPU_PROF_CPF_CPF_TCIU_IDLE", "GPU_PROF_CPF_CPF_TCIU_STALL", "GPU_PROF_FETCH_SIZE",
    "GPU_PROF_WRITE_SIZE", "GPU_PROF_TOTAL_16_OPS", "GPU_PROF_TOTAL_32_OPS",
    "GPU_PROF_TOTAL_64_OPS", "GPU_PROF_GUI_UTIL_PERCENT", "GPU_PROF_OCCUPANCY_PERCENT",
    "GPU_PROF_TENSOR_ACTIVE_PERCENT", "GPU_PROF_VALU_PIPE_ISSUE_UTIL", "GPU_PROF_SM_ACTIVE",
    "GPU_PROF_OCCUPANCY_ELAPSED", "GPU_PROF_OCCUPANCY_PER_ACTIVE_CU", "GPU_PROF_OCCUPANCY_PER_CU",
    "GPU_PROF_SIMD_UTILIZATION",
};

const char* const kEccBlocks[] = {"TOTAL", "SDMA",  "GFX", "MMHUB", "ATHUB", "BIF", "HDP",
                                  "XGMI_WAFL", "DF", "SMN", "SEM", "MP0",  "MP1",  "FUSE",
                                  "UMC",   "MCA",   "VCN", "JPEG",  "IH",    "MPIO"};

// A Prometheus metric name may start with [a-zA-Z_:] and go on with [a-zA-Z0-9_:].
bool IsNamePrefix(const std::string& p) {
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    bool ok = c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// The config document: the file itself, or the entry of a ConfigMap holding it (by
// ChooseConfigMapKey's rule: config.json, as device-metrics-exporter's ConfigMap names it, or
// the only key). Another Kubernetes kind is refused, not read as a config.
nlohmann::json ConfigDocument(std::string_view text, const std::string& source) {
  nlohmann::json doc = ParseStructuredText(text, source);
  if (doc.is_object() && doc.contains("kind")) {  // config.json has no "kind"
    if (doc["kind"] != "ConfigMap") {
      throw InputError(source, "kind",
                       "a Kubernetes " + (doc["kind"].is_string() ? doc["kind"].get<std::string>()
                                                                  : std::string("object")) +
                           ", not a ConfigMap holding device-metrics-exporter's config.json",
                       "give the config.json itself, or its ConfigMap");
    }
    const nlohmann::json& data = doc.contains("data") && doc["data"].is_object()
                                     ? doc["data"]
                                     : nlohmann::json::object();
    std::vector<std::string> keys;
    for (const auto& [key, unused] : data.items()) keys.push_back(key);
    std::string name = doc.contains("metadata") && doc["metadata"].is_object() &&
                               doc["metadata"].contains("name") && doc["metadata"]["name"].is_string()
                           ? doc["metadata"]["name"].get<std::string>()
                           : "";
    std::string key = ChooseConfigMapKey(keys, "", "config.json",
                                         name.empty() ? "the ConfigMap" : "ConfigMap " + name,
                                         source, "");
    if (!data[key].is_string()) {
      throw InputError(source, "data." + key, "must be a string holding the config.json");
    }
    doc = ParseStructuredText(data[key].get<std::string>(), source + ": data." + key);
  }
  if (!doc.is_object()) {
    throw InputError(source, "", "expected a JSON object (device-metrics-exporter's config.json)");
  }
  return doc;
}

bool NonEmpty(const nlohmann::json& object, const char* key) {
  return object.contains(key) && !object[key].is_null() && !object[key].empty();
}

}  // namespace

const std::vector<std::string>& AmdFieldNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out(std::begin(kPlainNames), std::end(kPlainNames));
    for (const char* kind : {"CORRECT", "UNCORRECT", "DEFERRED"}) {
      for (const char* block : kEccBlocks) out.push_back(std::string("GPU_ECC_") + kind + "_" + block);
    }
    return out;
  }();
  return names;
}

const std::vector<std::string>& AmdServedFields() {
  // The families render_amd.cc writes, in its order; the name is the family upper-cased.
  static const std::vector<std::string> served = {
      "GPU_POWER_USAGE",     "GPU_AVERAGE_PACKAGE_POWER", "GPU_ENERGY_CONSUMED",
      "GPU_JUNCTION_TEMPERATURE", "GPU_MEMORY_TEMPERATURE", "GPU_GFX_ACTIVITY",
      "GPU_UMC_ACTIVITY",    "GPU_CLOCK",                 "GPU_TOTAL_VRAM",
      "GPU_USED_VRAM",       "GPU_FREE_VRAM",             "PCIE_REPLAY_COUNT",
      "GPU_ECC_CORRECT_TOTAL", "GPU_ECC_UNCORRECT_TOTAL", "GPU_HEALTH",
      "GPU_NODES_TOTAL"};
  return served;
}

AmdMetricsConfig ParseAmdMetricsConfig(std::string_view text, const std::string& source) {
  nlohmann::json doc = ConfigDocument(text, source);
  AmdMetricsConfig out;
  out.source = source;
  if (doc.contains("CommonConfig") && doc["CommonConfig"].is_object() &&
      doc["CommonConfig"].contains("MetricsFieldPrefix")) {
    const nlohmann::json& p = doc["CommonConfig"]["MetricsFieldPrefix"];
    if (!p.is_string() || !IsNamePrefix(p.get<std::string>())) {
      throw InputError(source, "CommonConfig.MetricsFieldPrefix",
                       "is not a Prometheus name prefix",
                       "use letters, digits, _ and :, not starting with a digit (e.g. amd_)");
    }
    out.prefix = p.get<std::string>();
  }
  if (!doc.contains("GPUConfig") || doc["GPUConfig"].is_null()) return out;
  const nlohmann::json& gpu = doc["GPUConfig"];
  if (!gpu.is_object()) throw InputError(source, "GPUConfig", "expected an object");
  for (const char* key : {"Labels", "CustomLabels", "ExtraPodLabels"}) {
    if (NonEmpty(gpu, key)) out.ignored_settings.push_back(std::string("GPUConfig.") + key);
  }
  if (!gpu.contains("Fields") || gpu["Fields"].is_null()) return out;
  const nlohmann::json& fields = gpu["Fields"];
  if (!fields.is_array()) {
    throw InputError(source, "GPUConfig.Fields", "expected a list of field names",
                     "e.g. [\"GPU_POWER_USAGE\", \"GPU_USED_VRAM\"]");
  }
  if (fields.empty()) return out;  // the exporter's rule: no list = every field
  out.all_fields = false;
  static const std::set<std::string> known(AmdFieldNames().begin(), AmdFieldNames().end());
  static const std::set<std::string> served(AmdServedFields().begin(), AmdServedFields().end());
  std::set<std::string> seen;
  for (size_t i = 0; i < fields.size(); ++i) {
    std::string at = "GPUConfig.Fields[" + std::to_string(i) + "]";
    if (!fields[i].is_string()) throw InputError(source, at, "expected a field name (a string)");
    std::string name = fields[i].get<std::string>();
    // accel accepts any case and reports the upper-case spelling (whether the exporter does is
    // unconfirmed; its example configs are all upper case).
    std::transform(name.begin(), name.end(), name.begin(), ::toupper);
    if (!known.count(name)) {
      throw InputError(source, at, "'" + fields[i].get<std::string>() +
                                       "' is not a device-metrics-exporter GPU field",
                       "see docs/metrics.md for the names (e.g. GPU_POWER_USAGE, GPU_USED_VRAM)");
    }
    if (!seen.insert(name).second) continue;
    (served.count(name) ? out.fields : out.not_served).push_back(name);
  }
  return out;
}

AmdMetricsConfig LoadAmdMetricsConfig(const std::string& path) {
  return ParseAmdMetricsConfig(ReadWholeFile(path), path);
}

}  // namespace accel::telemetry
