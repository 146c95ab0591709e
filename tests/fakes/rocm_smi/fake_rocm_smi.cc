// Fake librocm_smi64.so.1: the ROCm SMI 5.2.3 functions accel calls, answered from the JSON file
// named by $FAKE_ROCM_SMI_CONFIG (schema: docs/fake-rocm-smi.md). Units are the real library's:
// millidegrees, microwatts, bytes, percent.
#include <cstring>

#include "rocm_smi/fake_model.h"

#define RSMI_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using accel::fakes::Json;

enum : uint32_t {
  kSuccess = 0, kInvalidArgs = 1, kNotSupported = 2, kFileError = 3, kPermission = 4,
  kInitError = 8, kInsufficientSize = 11, kNoData = 14, kUnknownError = 0xFFFFFFFF,
};

const char* const kBlocks[] = {"umc", "sdma", "gfx", "mmhub", "athub", "pcie_bif", "hdp",
                               "xgmi_wafl", "df", "smn", "sem", "mp0", "mp1", "fuse"};

bool ValueKeyOk(const std::string& key) {
  static const std::set<std::string> plain = {
      "busy_percent", "memory_busy_percent", "temperature_mdeg.edge", "temperature_mdeg.junction",
      "temperature_mdeg.memory", "power_average_uw", "socket_power_uw", "power_cap_uw",
      "energy.counter", "energy.resolution_uj", "memory.vram_total", "memory.vram_used",
      "memory.vis_vram_total", "memory.vis_vram_used", "memory.gtt_total", "memory.gtt_used",
      "pcie_replay_count"};
  if (plain.count(key)) return true;
  for (const char* block : kBlocks) {
    const std::string base = std::string("ecc.") + block + ".";
    if (key == base + "correctable" || key == base + "uncorrectable") return true;
  }
  return false;
}

accel::fakes::Model& TheModel() {
  static accel::fakes::Model model(accel::fakes::Vendor{
      "fake ROCm SMI", "FAKE_ROCM_SMI_CONFIG", kInitError, kInvalidArgs, kFileError, kNotSupported,
      {"name", "brand", "unique_id", "pci_bdf", "serial", "render_minor", "vbios", "device_id",
       "comment"},
      {"driver_version", "comment"},
      ValueKeyOk});
  return model;
}

/// Per-device event notification state (rsmi_event_notification_*).
struct EventState {
  std::mutex mu;
  std::map<uint32_t, uint64_t> masks;  ///< initialised devices and their masks
};
EventState& Events() {
  static EventState state;
  return state;
}

/// Value `key` of device `dv` into *out; NOT_SUPPORTED when the config does not give it.
template <typename T>
uint32_t Fill(uint32_t dv, const std::string& key, T* out) {
  if (!out) return kInvalidArgs;
  std::optional<double> v = TheModel().Read(dv, key);
  if (!v) return kNotSupported;
  *out = static_cast<T>(*v);
  return kSuccess;
}

/// One call of `fn` on `dv` (faults, lost, unsupported) that answers value `key`.
template <typename T>
uint32_t Get(uint32_t dv, const char* fn, const std::string& key, T* out) {
  if (uint32_t s = TheModel().Call(dv, fn)) return s;
  return Fill(dv, key, out);
}

uint32_t GetText(uint32_t dv, const char* fn, const char* key, char* buffer, size_t length) {
  if (uint32_t s = TheModel().Call(dv, fn)) return s;
  if (!buffer) return kInvalidArgs;
  Json j = TheModel().Identity(dv, key);
  if (j.is_null()) return kNotSupported;
  return accel::fakes::CopyOut(accel::fakes::Text(j), buffer, length) ? kSuccess : kInsufficientSize;
}

/// rsmi_dev_pci_id_get's packing of "dddd:bb:dd.f".
uint64_t PackBdf(const std::string& text) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return 0;
  return (uint64_t{domain} << 32) | (bus << 8) | ((dev & 0x1f) << 3) | (fn & 0x7);
}

const char* StatusName(uint32_t status) {
  switch (status) {
    case 0: return "RSMI_STATUS_SUCCESS: The function has been executed successfully.";
    case 1: return "RSMI_STATUS_INVALID_ARGS: Invalid arguments provided";
    case 2: return "RSMI_STATUS_NOT_SUPPORTED: Feature not supported";
    case 3: return "RSMI_STATUS_FILE_ERROR: Problem accessing a file";
    case 4: return "RSMI_STATUS_PERMISSION: Permission denied";
    case 5: return "RSMI_STATUS_OUT_OF_RESOURCES: Unable to acquire memory or other resource";
    case 6: return "RSMI_STATUS_INTERNAL_EXCEPTION: An internal exception was caught";
    case 7: return "RSMI_STATUS_INPUT_OUT_OF_BOUNDS: The provided input is out of allowable range";
    case 8: return "RSMI_STATUS_INIT_ERROR: An error occurred during initialization";
    case 9: return "RSMI_STATUS_NOT_YET_IMPLEMENTED: Not yet implemented";
    case 10: return "RSMI_STATUS_NOT_FOUND: Item was not found";
    case 11: return "RSMI_STATUS_INSUFFICIENT_SIZE: Not enough resources available";
    case 12: return "RSMI_STATUS_INTERRUPT: An interrupt occurred";
    case 13: return "RSMI_STATUS_UNEXPECTED_SIZE: An unexpected amount of data was read";
    case 14: return "RSMI_STATUS_NO_DATA: No data was found";
    case 15: return "RSMI_STATUS_UNEXPECTED_DATA: Unexpected data";
    case 16: return "RSMI_STATUS_BUSY: A resource is busy";
    case 17: return "RSMI_STATUS_REFCOUNT_OVERFLOW: An internal reference counter overflowed";
  }
  return "RSMI_STATUS_UNKNOWN_ERROR: An unknown error occurred";
}

}  // namespace

// --- init, versions -------------------------------------------------------------------------

RSMI_EXPORT uint32_t rsmi_init(uint64_t) { return TheModel().Init() ? kSuccess : kInitError; }

RSMI_EXPORT uint32_t rsmi_shut_down() {
  if (!TheModel().Shutdown()) return kInitError;
  if (!TheModel().initialised()) {
    std::lock_guard<std::mutex> lock(Events().mu);
    Events().masks.clear();
  }
  return kSuccess;
}

RSMI_EXPORT uint32_t rsmi_num_monitor_devices(uint32_t* count) {
  if (uint32_t s = TheModel().CallGlobal()) return s;
  if (!count) return kInvalidArgs;
  *count = static_cast<uint32_t>(TheModel().device_count());
  return kSuccess;
}

RSMI_EXPORT uint32_t rsmi_status_string(uint32_t status, const char** text) {
  if (!text) return kInvalidArgs;
  *text = StatusName(status);
  return kSuccess;
}

struct FakeVersion { uint32_t major, minor, patch; const char* build; };
RSMI_EXPORT uint32_t rsmi_version_get(FakeVersion* v) {
  if (!v) return kInvalidArgs;
  *v = FakeVersion{5, 2, 3, "fake"};
  return kSuccess;
}

RSMI_EXPORT uint32_t rsmi_version_str_get(uint32_t component, char* buffer, uint32_t length) {
  if (uint32_t s = TheModel().CallGlobal()) return s;
  if (!buffer) return kInvalidArgs;
  Json v = TheModel().Top("driver_version");
  if (component != 0 || v.is_null()) return kNotSupported;
  return accel::fakes::CopyOut(accel::fakes::Text(v), buffer, length) ? kSuccess : kInsufficientSize;
}

// --- identity -------------------------------------------------------------------------------

RSMI_EXPORT uint32_t rsmi_dev_id_get(uint32_t dv, uint16_t* id) {
  if (uint32_t s = TheModel().Call(dv, __func__)) return s;
  if (!id) return kInvalidArgs;
  Json j = TheModel().Identity(dv, "device_id");
  if (j.is_null()) return kNotSupported;
  *id = static_cast<uint16_t>(std::strtoul(accel::fakes::Text(j).c_str(), nullptr, 0));
  return kSuccess;
}

RSMI_EXPORT uint32_t rsmi_dev_pci_id_get(uint32_t dv, uint64_t* bdf) {
  if (uint32_t s = TheModel().Call(dv, __func__)) return s;
  if (!bdf) return kInvalidArgs;
  Json j = TheModel().Identity(dv, "pci_bdf");
  if (!j.is_string()) return kNotSupported;
  *bdf = PackBdf(j.get<std::string>());
  return kSuccess;
}

RSMI_EXPORT uint32_t rsmi_dev_unique_id_get(uint32_t dv, uint64_t* id) {
  if (uint32_t s = TheModel().Call(dv, __func__)) return s;
  if (!id) return kInvalidArgs;
  Json j = TheModel().Identity(dv, "unique_id");
  if (j.is_null()) return kNotSupported;
  *id = j.is_number_unsigned() ? j.get<uint64_t>()
                               : std::strtoull(accel::fakes::Text(j).c_str(), nullptr, 0);
  return kSuccess;
}

RSMI_EXPORT uint32_t rsmi_dev_name_get(uint32_t dv, char* buffer, size_t length) {
  return GetText(dv, __func__, "name", buffer, length);
}
RSMI_EXPORT uint32_t rsmi_dev_brand_get(uint32_t dv, char* buffer, uint32_t length) {
  return GetText(dv, __func__, "brand", buffer, length);
}
RSMI_EXPORT uint32_t rsmi_dev_serial_number_get(uint32_t dv, char* buffer, uint32_t length) {
  return GetText(dv, __func__, "serial", buffer, length);
}
RSMI_EXPORT uint32_t rsmi_dev_vbios_version_get(uint32_t dv, char* buffer, uint32_t length) {
  return GetText(dv, __func__, "vbios", buffer, length);
}

RSMI_EXPORT uint32_t rsmi_dev_drm_render_minor_get(uint32_t dv, uint32_t* minor) {
  if (uint32_t s = TheModel().Call(dv, __func__)) return s;
  if (!minor) return kInvalidArgs;
  Json j = TheModel().Identity(dv, "render_minor");
  if (!j.is_number()) return kNotSupported;
  *minor = j.get<uint32_t>();
  return kSuccess;
}

// --- readings -------------------------------------------------------------------------------

RSMI_EXPORT uint32_t rsmi_dev_busy_percent_get(uint32_t dv, uint32_t* percent) {
  return Get(dv, __func__, "busy_percent", percent);
}
RSMI_EXPORT uint32_t rsmi_dev_memory_busy_percent_get(uint32_t dv, uint32_t* percent) {
  return Get(dv, __func__, "memory_busy_percent", percent);
}

RSMI_EXPORT uint32_t rsmi_dev_temp_metric_get(uint32_t dv, uint32_t sensor, uint32_t metric,
                                              int64_t* millidegrees) {
  static const char* const kSensors[] = {"edge", "junction", "memory"};
  if (uint32_t s = TheModel().Call(dv, __func__)) return s;
  if (sensor > 2 || metric != 0) return kNotSupported;  // only CURRENT of edge/junction/memory
  return Fill(dv, std::string("temperature_mdeg.") + kSensors[sensor], millidegrees);
}

RSMI_EXPORT uint32_t rsmi_dev_power_ave_get(uint32_t dv, uint32_t sensor, uint64_t* microwatts) {
  if (sensor != 0) return kNotSupported;
  return Get(dv, __func__, "power_average_uw", microwatts);
}
RSMI_EXPORT uint32_t rsmi_dev_current_socket_power_get(uint32_t dv, uint64_t* microwatts) {
  return Get(dv, __func__, "socket_power_uw", microwatts);
}
RSMI_EXPORT uint32_t rsmi_dev_power_cap_get(uint32_t dv, uint32_t sensor, uint64_t* microwatts) {
  if (sensor != 0) return kNotSupported;
  return Get(dv, __func__, "power_cap_uw", microwatts);
}

RSMI_EXPORT uint32_t rsmi_dev_energy_count_get(uint32_t dv, uint64_t* counter, float* resolution,
                                               uint64_t* timestamp) {
  if (uint32_t s = Get(dv, __func__, "energy.counter", counter)) return s;
  if (!resolution || !timestamp) return kInvalidArgs;
  // 15.259 µJ per count is what MI200/MI300 firmware reports.
  *resolution = static_cast<float>(TheModel().Read(dv, "energy.resolution_uj").value_or(15.259));
  *timestamp = static_cast<uint64_t>(TheModel().ElapsedMs() * 1e6);
  return kSuccess;
}

RSMI_EXPORT uint32_t rsmi_dev_memory_total_get(uint32_t dv, uint32_t type, uint64_t* bytes) {
  static const char* const kKeys[] = {"memory.vram_total", "memory.vis_vram_total", "memory.gtt_total"};
  if (type > 2) return kInvalidArgs;
  return Get(dv, __func__, kKeys[type], bytes);
}
RSMI_EXPORT uint32_t rsmi_dev_memory_usage_get(uint32_t dv, uint32_t type, uint64_t* bytes) {
  static const char* const kKeys[] = {"memory.vram_used", "memory.vis_vram_used", "memory.gtt_used"};
  if (type > 2) return kInvalidArgs;
  return Get(dv, __func__, kKeys[type], bytes);
}

RSMI_EXPORT uint32_t rsmi_dev_pci_replay_counter_get(uint32_t dv, uint64_t* count) {
  return Get(dv, __func__, "pcie_replay_count", count);
}

RSMI_EXPORT uint32_t rsmi_dev_ecc_enabled_get(uint32_t dv, uint64_t* blocks) {
  if (uint32_t s = TheModel().Call(dv, __func__)) return s;
  if (!blocks) return kInvalidArgs;
  if (TheModel().Keys(dv, "ecc.").empty()) return kNotSupported;
  *blocks = 0;
  for (size_t i = 0; i < std::size(kBlocks); ++i) {
    if (!TheModel().Keys(dv, std::string("ecc.") + kBlocks[i] + ".").empty()) *blocks |= 1ull << i;
  }
  return kSuccess;
}

struct FakeErrorCount { uint64_t correctable, uncorrectable; };
RSMI_EXPORT uint32_t rsmi_dev_ecc_count_get(uint32_t dv, uint64_t block, FakeErrorCount* counts) {
  if (uint32_t s = TheModel().Call(dv, __func__)) return s;
  if (!counts) return kInvalidArgs;
  if (block == 0 || (block & (block - 1)) || block > (1ull << 13)) return kInvalidArgs;
  const std::string base = std::string("ecc.") + kBlocks[__builtin_ctzll(block)] + ".";
  if (TheModel().Keys(dv, base).empty()) return kNotSupported;
  counts->correctable = static_cast<uint64_t>(TheModel().Read(dv, base + "correctable").value_or(0));
  counts->uncorrectable = static_cast<uint64_t>(TheModel().Read(dv, base + "uncorrectable").value_or(0));
  return kSuccess;
}

// --- event notification -----------------------------------------------------------------------

RSMI_EXPORT uint32_t rsmi_event_notification_init(uint32_t dv) {
  if (uint32_t s = TheModel().Call(dv, __func__)) return s;
  std::lock_guard<std::mutex> lock(Events().mu);
  Events().masks.emplace(dv, 0);
  return kSuccess;
}

RSMI_EXPORT uint32_t rsmi_event_notification_mask_set(uint32_t dv, uint64_t mask) {
  if (uint32_t s = TheModel().Call(dv, __func__)) return s;
  std::lock_guard<std::mutex> lock(Events().mu);
  auto it = Events().masks.find(dv);
  if (it == Events().masks.end()) return kInitError;
  it->second = mask;
  return kSuccess;
}

RSMI_EXPORT uint32_t rsmi_event_notification_stop(uint32_t dv) {
  if (uint32_t s = TheModel().Call(dv, __func__)) return s;
  std::lock_guard<std::mutex> lock(Events().mu);
  return Events().masks.erase(dv) ? kSuccess : kInvalidArgs;
}

struct FakeEventData { uint32_t dv_ind; uint32_t event; char message[64]; };
RSMI_EXPORT uint32_t rsmi_event_notification_get(int timeout_ms, uint32_t* count,
                                                 FakeEventData* data) {
  if (uint32_t s = TheModel().CallGlobal()) return s;
  if (!count || !data || *count == 0) return kInvalidArgs;
  auto accept = [](const accel::fakes::Event& e) {
    std::lock_guard<std::mutex> lock(Events().mu);
    auto it = Events().masks.find(e.device);
    return it != Events().masks.end() && e.type >= 1 && e.type <= 64 &&
           (it->second & (1ull << (e.type - 1)));
  };
  std::vector<accel::fakes::Event> due =
      accel::fakes::WaitForEvents(TheModel(), *count, accept, std::max(timeout_ms, 0));
  *count = static_cast<uint32_t>(due.size());
  for (size_t i = 0; i < due.size(); ++i) {
    data[i] = FakeEventData{due[i].device, static_cast<uint32_t>(due[i].type), {}};
    std::strncpy(data[i].message, due[i].message.c_str(), sizeof data[i].message - 1);
  }
  return due.empty() ? kNoData : kSuccess;
}
