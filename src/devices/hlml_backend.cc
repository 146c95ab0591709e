// The Intel Gaudi backend: HLML (libhlml.so) loaded with dlopen.
#include <algorithm>
#include <bitset>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "devices/backend.h"
#include "devices/hlml_api.h"
#include "devices/shared_library.h"
#include "devices/topology_join.h"

namespace accel::devices {
// Named rather than anonymous: the unity build compiles this file with the other backends.
namespace hlml_impl {

using hlml::Return;
using hlml::ReturnText;

const std::vector<std::string> kHlmlLibraries = {"libhlml.so",
                                                     "/usr/lib/habanalabs/libhlml.so"};

/// Sample fields whose "unsupported" answer is remembered per device.
enum Field {
  kUtilization, kMemory, kTemperature, kPower, kPowerLimit, kEnergy, kSocClock, kPcieReplays,
  kEccCorrected, kEccUncorrected, kRowsSingleBit, kRowsDoubleBit, kRowsPending, kFieldCount
};

class HlmlBackend final : public DeviceBackend {
 public:
  explicit HlmlBackend(std::unique_ptr<SharedLibrary> lib) : lib_(std::move(lib)) {}
  ~HlmlBackend() override;

  /// Resolves symbols, initialises HLML and reads every identity. Throws BackendError.
  void Open();

  Vendor vendor() const override { return Vendor::kHabana; }
  const std::string& library_path() const override { return lib_->path(); }
  const std::string& driver_version() const override { return driver_version_; }
  const std::vector<DeviceIdentity>& devices() const override { return identities_; }
  DeviceReading Read(size_t position) override;
  std::vector<HealthEvent> WaitEvents(std::chrono::milliseconds timeout) override;

 private:
  /// What Read() keeps between calls for one device; touched only by Read(position).
  struct DeviceState {
    hlml::Device handle = nullptr;
    bool lost = false;
    std::string lost_call;  ///< the call that answered AIP_IS_LOST
    std::bitset<kFieldCount> unsupported;
  };

  [[noreturn]] void Fail(const std::string& call, Return r, const std::string& hint) const;
  DeviceIdentity ReadIdentity(unsigned index, hlml::Device handle) const;
  /// Runs one sample call unless the field is known unsupported or the device is lost. True on
  /// success; otherwise caches NOT_SUPPORTED, marks AIP_IS_LOST, or records the error.
  template <typename Call>
  bool Try(DeviceState& d, Field f, const char* name, DeviceReading* r, Call&& call);
  void ReadPowerAndThermals(DeviceState& d, DeviceReading* r);
  void ReadReliability(DeviceState& d, DeviceReading* r);
  void StartEvents();

  std::unique_ptr<SharedLibrary> lib_;  // first member: unloaded last
  hlml::Api api_;
  bool initialised_ = false;
  std::string driver_version_;
  std::vector<DeviceIdentity> identities_;
  std::vector<DeviceState> states_;
  // Event channel, owned by the WaitEvents() thread.
  bool events_started_ = false;
  hlml::EventSet event_set_ = nullptr;
};

HlmlBackend::~HlmlBackend() {
  if (!initialised_) return;
  if (event_set_ && api_.event_set_free) api_.event_set_free(event_set_);
  api_.shutdown();
}

void HlmlBackend::Fail(const std::string& call, Return r, const std::string& hint) const {
  throw BackendError("HLML library " + lib_->path() + ": " + call + " failed: " + ReturnText(r) +
                     " (" + hint + ")");
}

void HlmlBackend::Open() {
  std::string missing = api_.Resolve(*lib_);
  if (!missing.empty()) {
    throw BackendError("HLML library " + lib_->path() + ": missing symbol " + missing +
                       " (not an HLML library; it ships with the habanalabs driver packages)");
  }
  Return r = api_.init_with_flags ? api_.init_with_flags(0) : api_.init();
  if (r != hlml::kSuccess) {
    Fail(api_.init_with_flags ? "hlml_init_with_flags" : "hlml_init", r,
         "is the habanalabs driver loaded? check `lsmod | grep habanalabs` and /dev/accel");
  }
  initialised_ = true;
  char text[256] = {};
  if (api_.driver_version && api_.driver_version(text, sizeof text - 1) == hlml::kSuccess) {
    driver_version_ = text;
  } else if (api_.hlml_version && api_.hlml_version(text, sizeof text - 1) == hlml::kSuccess) {
    driver_version_ = text;  // HLML ships with the driver; its version is the driver package's
  }
  unsigned count = 0;
  if (Return c = api_.get_count(&count); c != hlml::kSuccess) {
    Fail("hlml_device_get_count", c, "the driver answered hlml_init but not enumeration");
  }
  for (unsigned i = 0; i < count; ++i) {
    DeviceState state;
    if (Return h = api_.handle_by_index(i, &state.handle); h != hlml::kSuccess) {
      Fail("hlml_device_get_handle_by_index(" + std::to_string(i) + ")", h,
           "a device the driver lists cannot be opened; check dmesg for habanalabs errors");
    }
    identities_.push_back(ReadIdentity(i, state.handle));
    states_.push_back(state);
  }
}

DeviceIdentity HlmlBackend::ReadIdentity(unsigned index, hlml::Device handle) const {
  DeviceIdentity id;
  id.vendor = Vendor::kHabana;
  id.index = index;
  id.driver_version = driver_version_;
  auto text = [&](hlml::DevStringFn* fn) -> std::string {
    char buffer[256] = {};
    if (!fn || fn(handle, buffer, sizeof buffer - 1) != hlml::kSuccess) return "";
    return buffer;
  };
  id.uuid = text(api_.uuid);
  id.model = text(api_.name);
  id.serial = text(api_.serial);
  id.firmware_version = text(api_.firmware_fit);
  unsigned minor = 0;
  if (api_.minor && api_.minor(handle, &minor) == hlml::kSuccess) id.minor = static_cast<int>(minor);
  hlml::PciInfo pci{};
  if (api_.pci_info && api_.pci_info(handle, &pci) == hlml::kSuccess) {
    id.pci_address = CanonicalPciAddress(std::string(pci.bus_id, strnlen(pci.bus_id, sizeof pci.bus_id)));
    if (id.pci_address.empty()) {
      char bdf[32];  // bus_id unreadable: the numeric fields carry no function, which is 0 on Gaudi
      std::snprintf(bdf, sizeof bdf, "%04x:%02x:%02x.0", pci.domain, pci.bus, pci.device);
      id.pci_address = CanonicalPciAddress(bdf);
    }
  }
  return id;
}

template <typename Call>
bool HlmlBackend::Try(DeviceState& d, Field f, const char* name, DeviceReading* r, Call&& call) {
  if (d.lost || d.unsupported[f]) return false;
  Return ret = call();
  if (ret == hlml::kSuccess) return true;
  if (ret == hlml::kNotSupported) {
    d.unsupported.set(f);
  } else if (ret == hlml::kAipIsLost) {
    d.lost = true;
    d.lost_call = name;
  } else {
    r->error = std::string(name) + ": " + ReturnText(ret);
  }
  return false;
}

DeviceReading HlmlBackend::Read(size_t position) {
  DeviceReading r;
  DeviceState& d = states_.at(position);
  hlml::Device h = d.handle;
  Sample& s = r.sample;
  hlml::Utilization util{};
  if (api_.utilization && Try(d, kUtilization, "hlml_device_get_utilization_rates", &r,
                              [&] { return api_.utilization(h, &util); })) {
    s.gpu_utilization = util.aip / 100.0;
  }
  hlml::Memory memory{};
  if (api_.memory && Try(d, kMemory, "hlml_device_get_memory_info", &r,
                         [&] { return api_.memory(h, &memory); })) {
    s.memory_total_bytes = memory.total;
    s.memory_used_bytes = memory.used;
    s.memory_free_bytes = memory.free;
  }
  ReadPowerAndThermals(d, &r);
  ReadReliability(d, &r);
  if (d.lost) {
    r = DeviceReading{};
    r.lost = true;
    r.error = d.lost_call + ": " + ReturnText(hlml::kAipIsLost);
  }
  return r;
}

void HlmlBackend::ReadPowerAndThermals(DeviceState& d, DeviceReading* r) {
  hlml::Device h = d.handle;
  Sample& s = r->sample;
  unsigned value = 0;
  // Only the on-chip sensor has a Sample field; on-board temperature has no place in the model.
  if (api_.temperature && Try(d, kTemperature, "hlml_device_get_temperature", r, [&] {
        return api_.temperature(h, hlml::kTemperatureOnAip, &value);
      })) {
    s.temperature_c = value;
  }
  if (api_.power_usage && Try(d, kPower, "hlml_device_get_power_usage", r,
                              [&] { return api_.power_usage(h, &value); })) {
    s.power_w = value / 1000.0;  // mW
  }
  if (api_.power_default_limit &&
      Try(d, kPowerLimit, "hlml_device_get_power_management_default_limit", r,
          [&] { return api_.power_default_limit(h, &value); })) {
    s.power_limit_w = value / 1000.0;  // mW
  }
  unsigned long long millijoules = 0;
  if (api_.energy && Try(d, kEnergy, "hlml_device_get_total_energy_consumption", r,
                         [&] { return api_.energy(h, &millijoules); })) {
    s.energy_mj = millijoules;
  }
  if (api_.clock && Try(d, kSocClock, "hlml_device_get_clock_info", r,
                        [&] { return api_.clock(h, hlml::kClockSoc, &value); })) {
    s.sm_clock_mhz = value;
  }
}

void HlmlBackend::ReadReliability(DeviceState& d, DeviceReading* r) {
  hlml::Device h = d.handle;
  Sample& s = r->sample;
  unsigned value = 0;
  if (api_.pcie_replays && Try(d, kPcieReplays, "hlml_device_get_pcie_replay_counter", r,
                               [&] { return api_.pcie_replays(h, &value); })) {
    s.pcie_replays = value;
  }
  unsigned long long count = 0;
  if (api_.ecc_total && Try(d, kEccCorrected, "hlml_device_get_total_ecc_errors", r, [&] {
        return api_.ecc_total(h, hlml::kErrorCorrected, hlml::kVolatileEcc, &count);
      })) {
    s.ecc_correctable = count;
  }
  if (api_.ecc_total && Try(d, kEccUncorrected, "hlml_device_get_total_ecc_errors", r, [&] {
        return api_.ecc_total(h, hlml::kErrorUncorrected, hlml::kVolatileEcc, &count);
      })) {
    s.ecc_uncorrectable = count;
  }
  auto replaced = [&](Field f, uint32_t cause) -> std::optional<uint64_t> {
    hlml::RowAddress rows[hlml::kMaxReplacedRows];
    unsigned n = hlml::kMaxReplacedRows;
    if (!api_.replaced_rows || !Try(d, f, "hlml_device_get_replaced_rows", r,
                                    [&] { return api_.replaced_rows(h, cause, &n, rows); })) {
      return std::nullopt;
    }
    return n;
  };
  s.remapped_rows_correctable = replaced(kRowsSingleBit, hlml::kRowsMultipleSingleBit);
  s.remapped_rows_uncorrectable = replaced(kRowsDoubleBit, hlml::kRowsDoubleBit);
  uint32_t pending = 0;
  if (api_.replaced_rows_pending &&
      Try(d, kRowsPending, "hlml_device_get_replaced_rows_pending_status", r,
          [&] { return api_.replaced_rows_pending(h, &pending); })) {
    s.row_remap_pending = pending == hlml::kEnabled;
  }
}

void HlmlBackend::StartEvents() {
  events_started_ = true;
  if (!api_.event_set_create || !api_.register_events || !api_.event_set_wait) return;
  if (api_.event_set_create(&event_set_) != hlml::kSuccess) {
    event_set_ = nullptr;
    return;
  }
  // Clock-rate changes are routine (power capping), not health; leave them out.
  const unsigned long long types = hlml::kEventEccDoubleBit | hlml::kEventCritical |
                                   hlml::kEventDramError | hlml::kEventEccSingleBit;
  bool any = false;
  for (const DeviceState& d : states_) {
    any |= api_.register_events(d.handle, types, event_set_) == hlml::kSuccess;
  }
  if (!any) {
    if (api_.event_set_free) api_.event_set_free(event_set_);
    event_set_ = nullptr;
  }
}

std::vector<HealthEvent> HlmlBackend::WaitEvents(std::chrono::milliseconds timeout) {
  if (!events_started_) StartEvents();
  std::vector<HealthEvent> events;
  if (!event_set_) {
    std::this_thread::sleep_for(timeout);
    return events;
  }
  auto wait_ms = static_cast<unsigned>(std::clamp<int64_t>(timeout.count(), 0, UINT32_MAX));
  // One event per wait; after the first, drain what is already queued without waiting.
  for (int taken = 0; taken < 32; ++taken, wait_ms = 0) {
    hlml::EventData data{};
    Return ret = api_.event_set_wait(event_set_, &data, wait_ms);
    if (ret != hlml::kSuccess) {
      if (taken == 0 && ret != hlml::kTimeout && ret != hlml::kNoData) {
        std::this_thread::sleep_for(timeout);  // never a busy loop on a broken channel
      }
      break;
    }
    auto it = std::find_if(states_.begin(), states_.end(),
                           [&](const DeviceState& d) { return d.handle == data.device; });
    if (it == states_.end()) continue;
    for (uint64_t bit = 1; bit != 0; bit <<= 1) {
      if (!(data.event_type & bit)) continue;
      HealthEvent e;
      e.device_index = identities_[it - states_.begin()].index;
      e.vendor = Vendor::kHabana;
      e.code = bit;
      e.when = std::chrono::system_clock::now();
      events.push_back(e);
    }
  }
  return events;
}

}  // namespace hlml_impl

std::unique_ptr<DeviceBackend> OpenHlml(const std::string& library) {
  std::unique_ptr<SharedLibrary> lib = LoadVendorLibrary(
      library, hlml_impl::kHlmlLibraries, "HLML",
      "fix --hlml-library: the path of libhlml.so, usually /usr/lib/habanalabs/libhlml.so");
  if (!lib) return nullptr;
  auto backend = std::make_unique<hlml_impl::HlmlBackend>(std::move(lib));
  backend->Open();
  return backend;
}

}  // namespace accel::devices
