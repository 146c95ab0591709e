// Parsing and validating the fake's JSON config (schema: docs/fake-nvml.md). Strict: an unknown
// key or metric name is an error, so a typo in a test fixture fails loudly instead of silently
// turning a metric "not supported".
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "fake_nvml.h"

namespace fake_nvml {

namespace {

using nlohmann::json;

const std::set<std::string> kDeviceMetrics = {
    "sm_clock_mhz",
    "memory_clock_mhz",
    "graphics_clock_mhz",
    "video_clock_mhz",
    "max_sm_clock_mhz",
    "max_memory_clock_mhz",
    "temperature_c",
    "memory_temperature_c",
    "power_mw",
    "power_instant_mw",
    "power_limit_mw",
    "enforced_power_limit_mw",
    "energy_mj",
    "gpu_util_pct",
    "memory_util_pct",
    "encoder_util_pct",
    "decoder_util_pct",
    "memory_total_mib",
    "memory_used_mib",
    "memory_reserved_mib",
    "pcie_replays",
    "pcie_tx_kbps",
    "pcie_rx_kbps",
    "ecc_mode",
    "ecc_sbe_volatile",
    "ecc_dbe_volatile",
    "ecc_sbe_aggregate",
    "ecc_dbe_aggregate",
    "remapped_rows_correctable",
    "remapped_rows_uncorrectable",
    "remap_pending",
    "remap_failure",
    "retired_pages_sbe",
    "retired_pages_dbe",
    "retired_pages_pending",
    "nvlink_tx_kib",
    "nvlink_rx_kib",
    "nvlink_links",
    "nvlink_replay_errors",
    "nvlink_recovery_errors",
    "nvlink_crc_flit_errors",
    "nvlink_crc_data_errors",
    "vgpu_licensed",
    "clocks_event_reasons",
    "fan_speed_pct",
    "pstate",
    "persistence_mode",
    "violation_power_ns",
    "violation_thermal_ns",
    "violation_sync_boost_ns",
    "violation_board_limit_ns",
    "violation_low_util_ns",
    "violation_reliability_ns",
    "brand",
};
const std::set<std::string> kMigMetrics = {"memory_total_mib", "memory_used_mib",
                                           "memory_reserved_mib"};

const std::map<std::string, unsigned> kGpmNames = {
    {"graphics_util", 1},
    {"sm_util", 2},
    {"sm_occupancy", 3},
    {"integer_util", 4},
    {"any_tensor_util", 5},
    {"dfma_tensor_util", 6},
    {"hmma_tensor_util", 7},
    {"dmma_tensor_util", 8},
    {"imma_tensor_util", 9},
    {"dram_bw_util", 10},
    {"fp64_util", 11},
    {"fp32_util", 12},
    {"fp16_util", 13},
    {"pcie_tx_per_sec", 20},
    {"pcie_rx_per_sec", 21},
    {"nvlink_total_rx_per_sec", 60},
    {"nvlink_total_tx_per_sec", 61},
};

const char* const kReturnNames[] = {
    "SUCCESS",
    "UNINITIALIZED",
    "INVALID_ARGUMENT",
    "NOT_SUPPORTED",
    "NO_PERMISSION",
    "ALREADY_INITIALIZED",
    "NOT_FOUND",
    "INSUFFICIENT_SIZE",
    "INSUFFICIENT_POWER",
    "DRIVER_NOT_LOADED",
    "TIMEOUT",
    "IRQ_ISSUE",
    "LIBRARY_NOT_FOUND",
    "FUNCTION_NOT_FOUND",
    "CORRUPTED_INFOROM",
    "GPU_IS_LOST",
    "RESET_REQUIRED",
    "OPERATING_SYSTEM",
    "LIB_RM_VERSION_MISMATCH",
    "IN_USE",
    "MEMORY",
    "NO_DATA",
    "VGPU_ECC_NOT_SUPPORTED",
    "INSUFFICIENT_RESOURCES",
    "FREQ_NOT_SUPPORTED",
    "ARGUMENT_VERSION_MISMATCH",
    "DEPRECATED",
    "NOT_READY",
    "GPU_NOT_FOUND",
    "INVALID_STATE",
    "RESET_TYPE_NOT_SUPPORTED",
};

// H100 80GB HBM3, as `nvidia-smi mig -lgip` / `-lgipp` list it. Indices 5, 6 and 8 are
// profiles the H100 does not offer (NOT_SUPPORTED); 10 and up are past the table
// (INVALID_ARGUMENT).
const std::vector<MigProfile> kH100Profiles = {
    {0, 19, 1, 7, 9984, 16, "MIG 1g.10gb", 1, {0, 1, 2, 3, 4, 5, 6}},
    {1, 14, 2, 3, 20096, 32, "MIG 2g.20gb", 2, {0, 2, 4}},
    {2, 9, 3, 2, 40448, 60, "MIG 3g.40gb", 4, {0, 4}},
    {3, 5, 4, 1, 40448, 64, "MIG 4g.40gb", 4, {0}},
    {4, 0, 7, 1, 81152, 132, "MIG 7g.80gb", 8, {0}},
    {7, 20, 1, 1, 9984, 16, "MIG 1g.10gb+me", 1, {0, 1, 2, 3, 4, 5, 6}},
    {9, 15, 1, 4, 20096, 26, "MIG 1g.20gb", 2, {0, 2, 4, 6}},
};

[[noreturn]] void Fail(const std::string& path, const std::string& what) {
  throw ConfigError(path.empty() ? what : path + ": " + what);
}

std::string Child(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

bool BadBusId(const std::string& id) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  char tail = 0;
  return std::sscanf(id.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &tail) != 4;
}

std::string Join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void CheckKeys(const json& object, const std::string& path, const std::set<std::string>& allowed) {
  if (!object.is_object()) Fail(path, "expected an object");
  for (const auto& [key, value] : object.items()) {
    if (!allowed.count(key)) Fail(Child(path, key), "unknown key (allowed: " + Join(allowed) + ")");
  }
}

std::string String(const json& object, const std::string& key, const std::string& path,
                   std::optional<std::string> fallback = std::nullopt) {
  if (!object.contains(key)) {
    if (!fallback) Fail(Child(path, key), "missing (a string is required)");
    return *fallback;
  }
  if (!object[key].is_string()) Fail(Child(path, key), "expected a string");
  return object[key].get<std::string>();
}

unsigned long long Unsigned(const json& object, const std::string& key, const std::string& path,
                            unsigned long long fallback) {
  if (!object.contains(key)) return fallback;
  const json& v = object[key];
  if (v.is_number_unsigned()) return v.get<unsigned long long>();
  if (v.is_string()) {  // "0x..." for bit masks and PCI ids
    try {
      size_t used = 0;
      unsigned long long parsed = std::stoull(v.get<std::string>(), &used, 0);
      if (used == v.get<std::string>().size()) return parsed;
    } catch (const std::exception&) {
    }
  }
  Fail(Child(path, key), "expected a non-negative integer");
}

ValueSpec ParseValue(const json& v, const std::string& path) {
  ValueSpec spec;
  if (v.is_number()) {
    spec.cycle = {v.get<double>()};
  } else if (v.is_array()) {
    if (v.empty()) Fail(path, "an empty list (give at least one value)");
    for (const json& item : v) {
      if (!item.is_number()) Fail(path, "a list must hold only numbers");
      spec.cycle.push_back(item.get<double>());
    }
  } else if (v.is_object()) {
    CheckKeys(v, path, {"start", "per_second"});
    if (!v.contains("start") || !v["start"].is_number() || !v.contains("per_second") ||
        !v["per_second"].is_number()) {
      Fail(path, "a ramp needs numbers \"start\" and \"per_second\"");
    }
    spec.ramp = true;
    spec.start = v["start"].get<double>();
    spec.per_second = v["per_second"].get<double>();
  } else {
    Fail(path, "expected a number, a list of numbers or {\"start\": x, \"per_second\": y}");
  }
  return spec;
}

Metrics ParseMetrics(const json& object, const std::string& path,
                     const std::set<std::string>& known) {
  if (!object.is_object()) Fail(path, "expected an object of metric -> value");
  Metrics metrics;
  for (const auto& [name, value] : object.items()) {
    if (!known.count(name)) Fail(Child(path, name), "unknown metric (known: " + Join(known) + ")");
    metrics[name] = ParseValue(value, Child(path, name));
  }
  return metrics;
}

Metrics ParseGpm(const json& object, const std::string& path) {
  if (!object.is_object()) Fail(path, "expected an object of GPM metric -> value");
  Metrics metrics;
  for (const auto& [name, value] : object.items()) {
    auto named = kGpmNames.find(name);
    unsigned id = 0;
    if (named != kGpmNames.end()) {
      id = named->second;
    } else if (!name.empty() && std::all_of(name.begin(), name.end(), ::isdigit) &&
               name.size() < 4) {
      id = std::stoul(name);
    } else {
      Fail(Child(path, name),
           "unknown GPM metric (a metric id such as \"5\", or a name like "
           "any_tensor_util, graphics_util, sm_util, dram_bw_util, pcie_tx_per_sec)");
    }
    metrics[std::to_string(id)] = ParseValue(value, Child(path, name));
  }
  return metrics;
}

Fault ParseFault(const json& f, const std::string& path) {
  CheckKeys(f, path, {"function", "error", "hang_ms", "after_calls", "after_ms", "times"});
  Fault fault;
  fault.function = String(f, "function", path);
  if (fault.function != "*" && !FunctionNames().count(fault.function)) {
    Fail(path + ".function", "\"" + fault.function + "\" is not a function the fake exports");
  }
  if (f.contains("error")) {
    std::string text = f["error"].is_number()   ? f["error"].dump()
                       : f["error"].is_string() ? f["error"].get<std::string>()
                                                : "";
    fault.error = ParseReturnCode(text);
    if (!fault.error)
      Fail(path + ".error", "unknown NVML return code (e.g. NOT_SUPPORTED, GPU_IS_LOST, 999)");
  }
  if (f.contains("hang_ms")) {
    if (f["hang_ms"] == "forever") {
      fault.hang_ms = -1;
    } else {
      fault.hang_ms = static_cast<long long>(Unsigned(f, "hang_ms", path, 0));
    }
  }
  if (!fault.error && fault.hang_ms == 0) Fail(path, "a fault needs \"error\" or \"hang_ms\"");
  fault.after_calls = Unsigned(f, "after_calls", path, 0);
  fault.after_ms = static_cast<long long>(Unsigned(f, "after_ms", path, 0));
  fault.times = Unsigned(f, "times", path, 0);
  return fault;
}

// {"starts": [0, 4], "size": 4}: where instances of a profile may sit, in memory slices.
void ParsePlacements(const json& p, const std::string& path, MigProfile* profile) {
  CheckKeys(p, path, {"starts", "size"});
  profile->placement_size = Unsigned(p, "size", path, profile->placement_size);
  if (profile->placement_size == 0 || profile->placement_size > 8) Fail(path + ".size", "1..8");
  if (!p.contains("starts")) return;
  if (!p["starts"].is_array()) Fail(path + ".starts", "expected a list of memory slices");
  profile->placement_starts.clear();
  for (const json& start : p["starts"]) {
    if (!start.is_number_unsigned() || start.get<unsigned>() + profile->placement_size > 8) {
      Fail(path + ".starts", "each start must be an integer with start + size <= 8");
    }
    profile->placement_starts.push_back(start.get<unsigned>());
  }
}

MigProfile ParseProfile(const json& p, const std::string& path) {
  CheckKeys(p, path,
            {"index", "id", "slices", "instance_count", "memory_mb", "multiprocessors", "name",
             "placements"});
  MigProfile profile;
  profile.index = Unsigned(p, "index", path, 0);
  profile.id = Unsigned(p, "id", path, profile.index);
  profile.slices = Unsigned(p, "slices", path, 1);
  profile.instance_count = Unsigned(p, "instance_count", path, 1);
  profile.memory_mb = Unsigned(p, "memory_mb", path, 10240);
  profile.multiprocessors = Unsigned(p, "multiprocessors", path, 16);
  profile.name = String(p, "name", path, "MIG " + std::to_string(profile.slices) + "g");
  SetDefaultPlacements(&profile);
  if (p.contains("placements")) ParsePlacements(p["placements"], path + ".placements", &profile);
  return profile;
}

void ParseMig(const json& m, const std::string& path, Device* dev) {
  CheckKeys(m, path,
            {"mode", "pending_mode", "max_devices", "profiles", "instances", "activation_status"});
  dev->mig_capable = true;
  dev->mig_mode = Unsigned(m, "mode", path, 0);
  dev->mig_pending_mode = Unsigned(m, "pending_mode", path, dev->mig_mode);
  dev->max_mig_devices = Unsigned(m, "max_devices", path, 7);
  if (dev->mig_mode > 1 || dev->mig_pending_mode > 1) Fail(path + ".mode", "must be 0 or 1");
  if (dev->max_mig_devices > kMaxMigDevices) Fail(path + ".max_devices", "at most 16");
  if (m.contains("activation_status")) {
    auto code = ParseReturnCode(m["activation_status"].is_string()
                                    ? m["activation_status"].get<std::string>() : "");
    if (!code) Fail(path + ".activation_status", "unknown NVML return code (e.g. RESET_REQUIRED)");
    dev->mig_activation = *code;
  }
  dev->profiles = kH100Profiles;
  if (m.contains("profiles")) {
    if (!m["profiles"].is_array()) Fail(path + ".profiles", "expected a list");
    dev->profiles.clear();
    for (size_t i = 0; i < m["profiles"].size(); ++i) {
      dev->profiles.push_back(
          ParseProfile(m["profiles"][i], path + ".profiles[" + std::to_string(i) + "]"));
    }
  }
  const json instances = m.value("instances", json::array());
  if (!instances.is_array()) Fail(path + ".instances", "expected a list");
  if (instances.size() > dev->max_mig_devices) {
    Fail(path + ".instances",
         "more MIG devices than max_devices (" + std::to_string(dev->max_mig_devices) + ")");
  }
  for (size_t i = 0; i < instances.size(); ++i) {
    std::string at = path + ".instances[" + std::to_string(i) + "]";
    const json& in = instances[i];
    CheckKeys(in, at,
              {"gpu_instance_id", "compute_instance_id", "profile_id", "placement_start", "uuid",
               "metrics", "gpm", "compute_slices", "processes"});
    MigDevice mig;
    mig.gpu_instance_id = Unsigned(in, "gpu_instance_id", at, i + 1);
    mig.compute_instance_id = Unsigned(in, "compute_instance_id", at, 0);
    mig.profile_id = Unsigned(in, "profile_id", at, 19);
    mig.placement_start = Unsigned(in, "placement_start", at, i);
    mig.uuid = String(in, "uuid", at);
    if (in.contains("metrics"))
      mig.metrics = ParseMetrics(in["metrics"], at + ".metrics", kMigMetrics);
    if (in.contains("gpm")) mig.gpm = ParseGpm(in["gpm"], at + ".gpm");
    auto profile = std::find_if(dev->profiles.begin(), dev->profiles.end(),
                                [&](const MigProfile& p) { return p.id == mig.profile_id; });
    if (profile == dev->profiles.end()) Fail(at + ".profile_id", "no profile with this id");
    mig.ci_slices = Unsigned(in, "compute_slices", at, profile->slices);
    if (mig.ci_slices == 0 || mig.ci_slices > profile->slices)
      Fail(at + ".compute_slices", "1 .. the GPU instance's slices");
    // Synthetic processes on this compute instance: destroying it answers IN_USE.
    for (unsigned long long n = Unsigned(in, "processes", at, 0); n > 0; --n) {
      Process process;
      process.pid = 60000 + static_cast<unsigned>(dev->processes.size());
      process.gpu_instance_id = mig.gpu_instance_id;
      process.compute_instance_id = mig.compute_instance_id;
      dev->processes.push_back(process);
    }
    if (std::any_of(dev->mig.begin(), dev->mig.end(), [&](const MigDevice& o) {
          return o.gpu_instance_id == mig.gpu_instance_id &&
                 o.compute_instance_id == mig.compute_instance_id;
        })) {
      Fail(at, "duplicate gpu_instance_id/compute_instance_id");
    }
    dev->mig.push_back(std::move(mig));
  }
  for (const MigProfile& p : dev->profiles) {
    std::set<unsigned> gis;
    for (const MigDevice& d : dev->mig) {
      if (d.profile_id == p.id) gis.insert(d.gpu_instance_id);
    }
    if (gis.size() > p.instance_count) {
      Fail(path + ".instances", "more GPU instances of profile " + std::to_string(p.id) +
                                    " than its instance_count " + std::to_string(p.instance_count));
    }
  }
  DeriveMigTopology(dev);
}

XidEvent ParseEvent(const json& e, const std::string& path) {
  CheckKeys(e, path, {"at_ms", "xid", "gpu_instance_id", "compute_instance_id"});
  XidEvent event;
  event.at_ms = static_cast<long long>(Unsigned(e, "at_ms", path, 0));
  if (!e.contains("xid")) Fail(path + ".xid", "missing (the XID number)");
  event.xid = Unsigned(e, "xid", path, 0);
  event.gpu_instance_id = Unsigned(e, "gpu_instance_id", path, kNvmlNoInstance);
  event.compute_instance_id = Unsigned(e, "compute_instance_id", path, kNvmlNoInstance);
  return event;
}

// Where an NVSwitch port says it is when the config gives no address: a bus no GPU uses.
constexpr const char* kDefaultSwitchBusId = "00000000:FF:00.0";

// Any "d:b:d.f" spelling -> NVML's "00000000:1B:00.0". Call only on ids BadBusId accepts.
std::string NvmlBusId(const std::string& id) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  std::sscanf(id.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &function);
  char out[32];
  std::snprintf(out, sizeof out, "%08X:%02X:%02X.%X", domain, bus, device, function);
  return out;
}

// One "nvlink_peers" entry: a GPU's bus id, "switch" / "switch:<bus id>", or "down".
NvLinkPeer ParsePeer(const json& p, const std::string& path) {
  const char* expected = "expected a PCI bus id, \"switch\", \"switch:<bus id>\" or \"down\"";
  if (!p.is_string()) Fail(path, expected);
  std::string text = p.get<std::string>();
  NvLinkPeer peer;
  if (text == "down") return peer;
  std::string bus = text;
  peer.kind = NvLinkPeer::Kind::kGpu;
  if (text == "switch" || text.rfind("switch:", 0) == 0) {
    peer.kind = NvLinkPeer::Kind::kSwitch;
    bus = text == "switch" ? kDefaultSwitchBusId : text.substr(7);
  }
  if (BadBusId(bus)) Fail(path, expected);
  peer.bus_id = NvmlBusId(bus);
  return peer;
}

Process ParseProcess(const json& p, const std::string& path) {
  CheckKeys(p, path,
            {"pid", "used_memory_mib", "gpu_instance_id", "compute_instance_id", "sm_util_pct",
             "memory_util_pct"});
  Process process;
  process.pid = Unsigned(p, "pid", path, 0);
  process.used_bytes = Unsigned(p, "used_memory_mib", path, 0) << 20;
  process.gpu_instance_id = Unsigned(p, "gpu_instance_id", path, kNvmlNoInstance);
  process.compute_instance_id = Unsigned(p, "compute_instance_id", path, kNvmlNoInstance);
  process.sm_util = Unsigned(p, "sm_util_pct", path, 0);
  process.memory_util = Unsigned(p, "memory_util_pct", path, 0);
  return process;
}

template <typename T, typename Parse>
std::vector<T> ParseList(const json& object, const char* key, const std::string& path,
                         Parse parse) {
  std::vector<T> out;
  if (!object.contains(key)) return out;
  const json& list = object[key];
  if (!list.is_array()) Fail(Child(path, key), "expected a list");
  for (size_t i = 0; i < list.size(); ++i) {
    out.push_back(parse(list[i], Child(path, key) + "[" + std::to_string(i) + "]"));
  }
  return out;
}

Device ParseDevice(const json& d, const std::string& path, unsigned position) {
  CheckKeys(d, path,
            {"uuid", "name", "pci_bus_id", "pci_device_id", "pci_subsystem_id", "serial", "minor",
             "vbios_version", "inforom", "metrics", "not_supported", "gpm", "mig", "faults",
             "events", "supported_event_types", "processes", "nvlink_peers"});
  Device dev;
  dev.uuid = String(d, "uuid", path);
  dev.name = String(d, "name", path, "NVIDIA H100 80GB HBM3");
  dev.pci_bus_id = String(d, "pci_bus_id", path);
  dev.serial = String(d, "serial", path, "");
  dev.vbios = String(d, "vbios_version", path, "96.00.99.00.01");
  if (d.contains("inforom")) {
    const std::string at = path + ".inforom";
    CheckKeys(d["inforom"], at, {"oem", "ecc", "power", "image"});
    dev.inforom_oem = String(d["inforom"], "oem", at, dev.inforom_oem);
    dev.inforom_ecc = String(d["inforom"], "ecc", at, dev.inforom_ecc);
    dev.inforom_power = String(d["inforom"], "power", at, dev.inforom_power);
    dev.inforom_image = String(d["inforom"], "image", at, dev.inforom_image);
  }
  dev.minor = Unsigned(d, "minor", path, position);
  dev.pci_device_id = Unsigned(d, "pci_device_id", path, 0x233010DE);
  dev.pci_subsystem_id = Unsigned(d, "pci_subsystem_id", path, 0x16C110DE);
  if (d.contains("metrics"))
    dev.metrics = ParseMetrics(d["metrics"], path + ".metrics", kDeviceMetrics);
  if (d.contains("not_supported")) {
    const json& list = d["not_supported"];
    if (!list.is_array())
      Fail(path + ".not_supported", "expected a list of metric or function names");
    for (const json& name : list) {
      std::string n = name.is_string() ? name.get<std::string>() : "";
      if (!kDeviceMetrics.count(n) && !FunctionNames().count(n)) {
        Fail(path + ".not_supported", "\"" + n + "\" is neither a metric nor an exported function");
      }
      dev.not_supported.insert(n);
    }
  }
  if (d.contains("gpm")) {
    CheckKeys(d["gpm"], path + ".gpm", {"supported", "metrics"});
    dev.gpm_supported = d["gpm"].value("supported", true);
    if (d["gpm"].contains("metrics"))
      dev.gpm = ParseGpm(d["gpm"]["metrics"], path + ".gpm.metrics");
  }
  dev.processes = ParseList<Process>(d, "processes", path, ParseProcess);
  if (d.contains("nvlink_peers")) {
    dev.nvlink_peers = ParseList<NvLinkPeer>(d, "nvlink_peers", path, ParsePeer);
    if (dev.nvlink_peers->size() > kNvLinkSlots) {
      Fail(path + ".nvlink_peers", "at most " + std::to_string(kNvLinkSlots) + " links");
    }
  }
  if (d.contains("mig")) ParseMig(d["mig"], path + ".mig", &dev);
  dev.faults = ParseList<Fault>(d, "faults", path, ParseFault);
  dev.events = ParseList<XidEvent>(d, "events", path, ParseEvent);
  dev.supported_event_types = Unsigned(
      d, "supported_event_types", path,
      nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError | nvmlEventTypePState |
          nvmlEventTypeXidCriticalError | nvmlEventTypeClock | nvmlEventTypeMigConfigChange);
  if (BadBusId(dev.pci_bus_id)) Fail(path + ".pci_bus_id", "expected \"00000000:3B:00.0\"");
  return dev;
}

}  // namespace

std::optional<nvmlReturn_t> ParseReturnCode(const std::string& text) {
  std::string name = text.rfind("NVML_ERROR_", 0) == 0 ? text.substr(11) : text;
  if (name == "NVML_SUCCESS") name = "SUCCESS";
  for (int code = 0; code < static_cast<int>(std::size(kReturnNames)); ++code) {
    if (name == kReturnNames[code]) return static_cast<nvmlReturn_t>(code);
  }
  if (name == "UNKNOWN" || name == "999") return NVML_ERROR_UNKNOWN;
  if (!name.empty() && name.size() < 4 && std::all_of(name.begin(), name.end(), ::isdigit)) {
    int code = std::stoi(name);
    if (code < static_cast<int>(std::size(kReturnNames))) return static_cast<nvmlReturn_t>(code);
  }
  return std::nullopt;
}

Config ParseConfig(const std::string& text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    Fail("", std::string("not valid JSON: ") + e.what());
  }
  CheckKeys(doc, "",
            {"driver_version", "nvml_version", "cuda_driver_version", "init_error", "devices"});
  Config config;
  config.driver_version = String(doc, "driver_version", "", config.driver_version);
  config.nvml_version = String(doc, "nvml_version", "", config.nvml_version);
  config.cuda_driver_version = static_cast<int>(Unsigned(doc, "cuda_driver_version", "", 13000));
  if (doc.contains("init_error")) {
    config.init_error =
        ParseReturnCode(doc["init_error"].is_string() ? doc["init_error"].get<std::string>() : "");
    if (!config.init_error) Fail("init_error", "unknown NVML return code (e.g. DRIVER_NOT_LOADED)");
  }
  if (doc.contains("devices") && !doc["devices"].is_array()) Fail("devices", "expected a list");
  const json devices = doc.value("devices", json::array());
  if (devices.size() > kMaxDevices) Fail("devices", "at most 64 devices");
  for (size_t i = 0; i < devices.size(); ++i) {
    config.devices.push_back(ParseDevice(devices[i], "devices[" + std::to_string(i) + "]", i));
  }
  return config;
}

}  // namespace fake_nvml
