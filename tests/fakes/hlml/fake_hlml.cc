// Fake libhlml.so: the HLML functions accel calls, answered from the JSON file named by
// $FAKE_HLML_CONFIG (schema: docs/fake-hlml.md). Units are the real library's: °C, mW, mJ,
// MHz, bytes, percent.
#include <cstring>

#include "rocm_smi/fake_model.h"

#define HLML_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using accel::fakes::Json;

enum : int {
  kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3,
  kInsufficientSize = 7, kTimeout = 10, kAipIsLost = 15, kUnknown = 49,
};

constexpr unsigned kMaxDevices = 256;

bool ValueKeyOk(const std::string& key) {
  static const std::set<std::string> keys = {
      "utilization_aip", "memory.total", "memory.used", "memory.free", "temperature_c.on_aip",
      "temperature_c.on_board", "power_mw", "power_default_limit_mw", "energy_mj",
      "clock_mhz.soc", "clock_mhz.ic", "clock_mhz.mme", "clock_mhz.tpc", "pcie_replay_count",
      "ecc.volatile.corrected", "ecc.volatile.uncorrected", "ecc.aggregate.corrected",
      "ecc.aggregate.uncorrected", "replaced_rows.single_bit", "replaced_rows.double_bit",
      "replaced_rows.pending"};
  return keys.count(key) > 0;
}

accel::fakes::Model& TheModel() {
  static accel::fakes::Model model(accel::fakes::Vendor{
      "fake HLML", "FAKE_HLML_CONFIG", kUninitialized, kInvalidArgument, kAipIsLost, kNotSupported,
      {"name", "uuid", "serial", "pci_bus_id", "pci_device_id", "minor", "board_id",
       "firmware_fit", "firmware_spi", "comment"},
      {"driver_version", "hlml_version", "comment"},
      ValueKeyOk});
  return model;
}

// Device handles are addresses inside this array: stable, and checkable.
char g_handles[kMaxDevices];

void* HandleOf(unsigned index) { return &g_handles[index]; }

/// The index behind a handle; kMaxDevices (a bad index) for anything else.
unsigned IndexOf(void* handle) {
  auto* p = static_cast<char*>(handle);
  return p >= g_handles && p < g_handles + kMaxDevices ? static_cast<unsigned>(p - g_handles)
                                                      : kMaxDevices;
}

template <typename T>
int Fill(unsigned dv, const std::string& key, T* out) {
  if (!out) return kInvalidArgument;
  std::optional<double> v = TheModel().Read(dv, key);
  if (!v) return kNotSupported;
  *out = static_cast<T>(*v);
  return kSuccess;
}

/// One call of `fn` on the device behind `handle` that answers value `key`.
template <typename T>
int Get(void* handle, const char* fn, const std::string& key, T* out) {
  unsigned dv = IndexOf(handle);
  if (int s = TheModel().Call(dv, fn)) return s;
  return Fill(dv, key, out);
}

int GetText(void* handle, const char* fn, const char* key, char* buffer, unsigned length) {
  unsigned dv = IndexOf(handle);
  if (int s = TheModel().Call(dv, fn)) return s;
  if (!buffer) return kInvalidArgument;
  Json j = TheModel().Identity(dv, key);
  if (j.is_null()) return kNotSupported;
  return accel::fakes::CopyOut(accel::fakes::Text(j), buffer, length) ? kSuccess : kInsufficientSize;
}

int GetTopText(const char* key, char* buffer, unsigned length) {
  if (int s = TheModel().CallGlobal()) return s;
  if (!buffer) return kInvalidArgument;
  Json j = TheModel().Top(key);
  if (j.is_null()) return kNotSupported;
  return accel::fakes::CopyOut(accel::fakes::Text(j), buffer, length) ? kSuccess : kInsufficientSize;
}

/// An event set: which devices registered for which event bits.
struct EventSet {
  std::mutex mu;
  std::map<unsigned, unsigned long long> types;
};

}  // namespace

// --- init, versions, enumeration ------------------------------------------------------------

HLML_EXPORT int hlml_init() { return TheModel().Init() ? kSuccess : kUnknown; }
HLML_EXPORT int hlml_init_with_flags(unsigned) { return hlml_init(); }
HLML_EXPORT int hlml_shutdown() { return TheModel().Shutdown() ? kSuccess : kUninitialized; }

HLML_EXPORT int hlml_get_hlml_version(char* buffer, unsigned length) {
  return GetTopText("hlml_version", buffer, length);
}
HLML_EXPORT int hlml_get_driver_version(char* buffer, unsigned length) {
  return GetTopText("driver_version", buffer, length);
}

HLML_EXPORT int hlml_device_get_count(unsigned* count) {
  if (int s = TheModel().CallGlobal()) return s;
  if (!count) return kInvalidArgument;
  *count = static_cast<unsigned>(std::min<size_t>(TheModel().device_count(), kMaxDevices));
  return kSuccess;
}

HLML_EXPORT int hlml_device_get_handle_by_index(unsigned index, void** device) {
  if (int s = TheModel().CallGlobal()) return s;
  if (!device || index >= TheModel().device_count() || index >= kMaxDevices) return kInvalidArgument;
  *device = HandleOf(index);
  return kSuccess;
}

// --- identity -------------------------------------------------------------------------------

HLML_EXPORT int hlml_device_get_name(void* h, char* buffer, unsigned length) {
  return GetText(h, __func__, "name", buffer, length);
}
HLML_EXPORT int hlml_device_get_uuid(void* h, char* buffer, unsigned length) {
  return GetText(h, __func__, "uuid", buffer, length);
}
HLML_EXPORT int hlml_device_get_serial(void* h, char* buffer, unsigned length) {
  return GetText(h, __func__, "serial", buffer, length);
}
HLML_EXPORT int hlml_get_firmware_fit_version(void* h, char* buffer, unsigned length) {
  return GetText(h, __func__, "firmware_fit", buffer, length);
}
HLML_EXPORT int hlml_get_firmware_spi_version(void* h, char* buffer, unsigned length) {
  return GetText(h, __func__, "firmware_spi", buffer, length);
}

HLML_EXPORT int hlml_device_get_minor_number(void* h, unsigned* minor) {
  unsigned dv = IndexOf(h);
  if (int s = TheModel().Call(dv, __func__)) return s;
  if (!minor) return kInvalidArgument;
  Json j = TheModel().Identity(dv, "minor");
  *minor = j.is_number() ? j.get<unsigned>() : dv;  // the driver numbers hl0, hl1, ... by index
  return kSuccess;
}

HLML_EXPORT int hlml_device_get_board_id(void* h, unsigned* board_id) {
  unsigned dv = IndexOf(h);
  if (int s = TheModel().Call(dv, __func__)) return s;
  if (!board_id) return kInvalidArgument;
  Json j = TheModel().Identity(dv, "board_id");
  if (!j.is_number()) return kNotSupported;
  *board_id = j.get<unsigned>();
  return kSuccess;
}

struct FakePciInfo {
  unsigned bus;
  char bus_id[15];
  unsigned device, domain, pci_device_id;
  char link_speed[10], link_width[10];
};
HLML_EXPORT int hlml_device_get_pci_info(void* h, FakePciInfo* pci) {
  unsigned dv = IndexOf(h);
  if (int s = TheModel().Call(dv, __func__)) return s;
  if (!pci) return kInvalidArgument;
  Json j = TheModel().Identity(dv, "pci_bus_id");
  if (!j.is_string()) return kNotSupported;
  const std::string text = j.get<std::string>();
  *pci = FakePciInfo{};
  // Like the real struct, the 15-byte bus_id is NUL-terminated only when the text is shorter.
  std::memcpy(pci->bus_id, text.data(), std::min(text.size(), sizeof pci->bus_id));
  unsigned domain = 0, bus = 0, device = 0, fn = 0;
  std::sscanf(text.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &fn);
  pci->domain = domain;
  pci->bus = bus;
  pci->device = device;
  Json id = TheModel().Identity(dv, "pci_device_id");
  pci->pci_device_id = id.is_null() ? 0x10da1da3 : static_cast<unsigned>(
      std::strtoul(accel::fakes::Text(id).c_str(), nullptr, 0));
  std::strcpy(pci->link_speed, "16GT/s");
  std::strcpy(pci->link_width, "x16");
  return kSuccess;
}

// --- readings -------------------------------------------------------------------------------

HLML_EXPORT int hlml_device_get_utilization_rates(void* h, unsigned* aip) {
  return Get(h, __func__, "utilization_aip", aip);
}

struct FakeMemory { unsigned long long free, total, used; };
HLML_EXPORT int hlml_device_get_memory_info(void* h, FakeMemory* memory) {
  unsigned dv = IndexOf(h);
  if (int s = TheModel().Call(dv, __func__)) return s;
  if (!memory) return kInvalidArgument;
  if (int s = Fill(dv, "memory.total", &memory->total)) return s;
  if (int s = Fill(dv, "memory.used", &memory->used)) return s;
  memory->free = memory->total - std::min(memory->used, memory->total);
  Fill(dv, "memory.free", &memory->free);  // an explicit free overrides total - used
  return kSuccess;
}

HLML_EXPORT int hlml_device_get_temperature(void* h, unsigned sensor, unsigned* celsius) {
  static const char* const kSensors[] = {"temperature_c.on_aip", "temperature_c.on_board"};
  unsigned dv = IndexOf(h);
  if (int s = TheModel().Call(dv, __func__)) return s;
  if (sensor > 1) return kNotSupported;
  return Fill(dv, kSensors[sensor], celsius);
}

HLML_EXPORT int hlml_device_get_power_usage(void* h, unsigned* milliwatts) {
  return Get(h, __func__, "power_mw", milliwatts);
}
HLML_EXPORT int hlml_device_get_power_management_default_limit(void* h, unsigned* milliwatts) {
  return Get(h, __func__, "power_default_limit_mw", milliwatts);
}
HLML_EXPORT int hlml_device_get_total_energy_consumption(void* h, unsigned long long* mj) {
  return Get(h, __func__, "energy_mj", mj);
}

HLML_EXPORT int hlml_device_get_clock_info(void* h, unsigned type, unsigned* mhz) {
  static const char* const kClocks[] = {"clock_mhz.soc", "clock_mhz.ic", "clock_mhz.mme",
                                        "clock_mhz.tpc"};
  unsigned dv = IndexOf(h);
  if (int s = TheModel().Call(dv, __func__)) return s;
  if (type > 3) return kInvalidArgument;
  return Fill(dv, kClocks[type], mhz);
}

HLML_EXPORT int hlml_device_get_pcie_replay_counter(void* h, unsigned* count) {
  return Get(h, __func__, "pcie_replay_count", count);
}

HLML_EXPORT int hlml_device_get_total_ecc_errors(void* h, unsigned error_type, unsigned counter_type,
                                                 unsigned long long* count) {
  unsigned dv = IndexOf(h);
  if (int s = TheModel().Call(dv, __func__)) return s;
  if (error_type > 1 || counter_type > 1) return kInvalidArgument;
  const std::string key = std::string("ecc.") + (counter_type ? "aggregate." : "volatile.") +
                          (error_type ? "uncorrected" : "corrected");
  return Fill(dv, key, count);
}

struct FakeRowAddress { uint8_t hbm_idx, pc, sid, bank_idx; uint16_t row_addr; };
HLML_EXPORT int hlml_device_get_replaced_rows(void* h, unsigned cause, unsigned* row_count,
                                              FakeRowAddress* rows) {
  unsigned dv = IndexOf(h);
  if (int s = TheModel().Call(dv, __func__)) return s;
  if (!row_count || cause > 1) return kInvalidArgument;
  unsigned n = 0;
  if (int s = Fill(dv, cause ? "replaced_rows.double_bit" : "replaced_rows.single_bit", &n)) return s;
  if (rows && *row_count < n) return kInsufficientSize;
  for (unsigned i = 0; rows && i < n; ++i) {
    rows[i] = FakeRowAddress{0, 0, 0, static_cast<uint8_t>(i % 16), static_cast<uint16_t>(i)};
  }
  *row_count = n;
  return kSuccess;
}

HLML_EXPORT int hlml_device_get_replaced_rows_pending_status(void* h, unsigned* pending) {
  return Get(h, __func__, "replaced_rows.pending", pending);
}

// --- events ---------------------------------------------------------------------------------

HLML_EXPORT int hlml_event_set_create(void** set) {
  if (int s = TheModel().CallGlobal()) return s;
  if (!set) return kInvalidArgument;
  *set = new EventSet;
  return kSuccess;
}

HLML_EXPORT int hlml_event_set_free(void* set) {
  delete static_cast<EventSet*>(set);
  return kSuccess;
}

HLML_EXPORT int hlml_device_register_events(void* h, unsigned long long types, void* set) {
  unsigned dv = IndexOf(h);
  if (int s = TheModel().Call(dv, __func__)) return s;
  if (!set) return kInvalidArgument;
  auto* events = static_cast<EventSet*>(set);
  std::lock_guard<std::mutex> lock(events->mu);
  events->types[dv] |= types;
  return kSuccess;
}

struct FakeEventData { void* device; unsigned long long event_type; };
HLML_EXPORT int hlml_event_set_wait(void* set, FakeEventData* data, unsigned timeout_ms) {
  if (int s = TheModel().CallGlobal()) return s;
  if (!set || !data) return kInvalidArgument;
  auto* events = static_cast<EventSet*>(set);
  auto accept = [events](const accel::fakes::Event& e) {
    std::lock_guard<std::mutex> lock(events->mu);
    auto it = events->types.find(e.device);
    return it != events->types.end() && (it->second & e.type);
  };
  std::vector<accel::fakes::Event> due =
      accel::fakes::WaitForEvents(TheModel(), 1, accept, timeout_ms);
  if (due.empty()) return kTimeout;
  data->device = HandleOf(due[0].device);
  data->event_type = due[0].type;
  return kSuccess;
}
