// The AMD backend: ROCm SMI (librocm_smi64) loaded with dlopen, plus sysfs for the clocks.
#include <algorithm>
#include <bitset>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <thread>

#include "devices/amd_sysfs.h"
#include "common/small_file.h"
#include "devices/backend.h"
#include "devices/rocm_smi_api.h"
#include "devices/topology_join.h"

namespace accel::devices {
// Named rather than anonymous: the unity build compiles this file with the other backends.
namespace rocm_smi_impl {

using rsmi::Status;

// Debian's package first (SONAME .so.1), then AMD's ROCm releases (6.1+ ship .so.7).
const std::vector<std::string> kRocmSmiLibraries = {
    "librocm_smi64.so.1", "librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5",
    "/opt/rocm/lib/librocm_smi64.so.7", "/opt/rocm/lib/librocm_smi64.so",
};

/// Sample fields whose "unsupported" answer is remembered per device.
enum Field {
  kBusy, kMemoryBusy, kTempJunction, kTempEdge, kTempMemory, kPowerAverage, kSocketPower,
  kPowerCap, kEnergy, kVramTotal, kVramUsed, kPcieReplay, kEcc, kSysClock, kMemClock, kFieldCount
};

bool MeansUnsupported(Status s) {
  return s == rsmi::kNotSupported || s == rsmi::kNotYetImplemented;
}

/// rsmi_dev_pci_id_get's packed BDF: domain in bits 63..32, bus 15..8, device 7..3, function
/// 2..0. Newer releases put an MI300 partition id in bits 31..28, which is masked off.
std::string PackedBdfToPci(uint64_t bdf) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", static_cast<unsigned>((bdf >> 32) & 0xffff),
                static_cast<unsigned>((bdf >> 8) & 0xff), static_cast<unsigned>((bdf >> 3) & 0x1f),
                static_cast<unsigned>(bdf & 0x7));
  return CanonicalPciAddress(text);
}

class RocmSmiBackend final : public DeviceBackend {
 public:
  explicit RocmSmiBackend(std::unique_ptr<SharedLibrary> lib) : lib_(std::move(lib)) {}
  ~RocmSmiBackend() override;

  /// Resolves symbols, calls rsmi_init and reads every identity. Throws BackendError.
  void Open();

  Vendor vendor() const override { return Vendor::kAmd; }
  const std::string& library_path() const override { return lib_->path(); }
  const std::string& driver_version() const override { return driver_version_; }
  const std::vector<DeviceIdentity>& devices() const override { return identities_; }
  DeviceReading Read(size_t position) override;
  std::vector<HealthEvent> WaitEvents(std::chrono::milliseconds timeout) override;

 private:
  /// What Read() keeps between calls for one device; touched only by Read(position).
  struct DeviceState {
    uint32_t dv_ind = 0;
    std::string card_dir;             ///< amdgpu sysfs directory, "" when unknown
    bool probe_with_dev_id = false;   ///< rsmi_dev_id_get answered at open time
    bool lost = false;
    std::bitset<kFieldCount> unsupported;
    uint64_t ecc_unsupported_blocks = 0;
  };

  [[noreturn]] void Fail(const std::string& call, Status status, const std::string& hint) const;
  DeviceIdentity ReadIdentity(uint32_t dv_ind, DeviceState* state);
  std::string ReadString(rsmi::DevStringFn* fn, uint32_t dv_ind) const;
  bool LooksLost(const DeviceState& d) const;
  /// Runs one sample call. True on success; false when the field is unsupported (cached in
  /// `d`) or the call failed (recorded in `r->error`).
  bool Ok(DeviceState& d, Field f, const char* call, Status s, DeviceReading* r) const;
  void ReadActivity(DeviceState& d, DeviceReading* r);
  void ReadThermalsAndPower(DeviceState& d, DeviceReading* r);
  void ReadMemoryAndErrors(DeviceState& d, DeviceReading* r);
  void ReadClocks(DeviceState& d, DeviceReading* r);
  void StartEvents();

  std::unique_ptr<SharedLibrary> lib_;  // first member: unloaded last
  rsmi::Api api_;
  bool initialised_ = false;
  std::string driver_version_;
  std::vector<DeviceIdentity> identities_;
  std::vector<DeviceState> states_;
  // Event channel, owned by the WaitEvents() thread.
  bool events_started_ = false;
  std::vector<uint32_t> event_devices_;
};

RocmSmiBackend::~RocmSmiBackend() {
  if (!initialised_) return;
  if (api_.event_stop) {
    for (uint32_t dv : event_devices_) api_.event_stop(dv);
  }
  api_.shut_down();
}

void RocmSmiBackend::Fail(const std::string& call, Status status, const std::string& hint) const {
  throw BackendError("ROCm SMI library " + lib_->path() + ": " + call + " failed: " +
                     api_.StatusText(status) + " (" + hint + ")");
}

void RocmSmiBackend::Open() {
  std::string missing = api_.Resolve(*lib_);
  if (!missing.empty()) {
    throw BackendError("ROCm SMI library " + lib_->path() + ": missing symbol " + missing +
                       " (not a ROCm SMI library, or too old; install ROCm SMI 5.x or newer)");
  }
  if (Status s = api_.init(0); s != rsmi::kSuccess) {
    Fail("rsmi_init", s,
         "is the amdgpu driver loaded? check `lsmod | grep amdgpu`, /sys/class/kfd and that "
         "this user may read /dev/kfd");
  }
  initialised_ = true;
  uint32_t count = 0;
  if (Status s = api_.num_monitor_devices(&count); s != rsmi::kSuccess) {
    Fail("rsmi_num_monitor_devices", s, "the driver answered rsmi_init but not enumeration");
  }
  if (api_.version_str) {
    char text[256] = {};
    if (api_.version_str(rsmi::kSwComponentDriver, text, sizeof text - 1) == rsmi::kSuccess) {
      driver_version_ = text;
    }
  }
  const std::string root = amd_sysfs::SysfsRoot();
  states_.resize(count);
  for (uint32_t dv = 0; dv < count; ++dv) {
    states_[dv].dv_ind = dv;
    identities_.push_back(ReadIdentity(dv, &states_[dv]));
    if (!identities_.back().pci_address.empty()) {
      states_[dv].card_dir = amd_sysfs::CardDeviceDir(root, identities_.back().pci_address);
    }
  }
}

std::string RocmSmiBackend::ReadString(rsmi::DevStringFn* fn, uint32_t dv_ind) const {
  char text[256] = {};
  if (!fn || fn(dv_ind, text, sizeof text - 1) != rsmi::kSuccess) return "";
  return text;
}

DeviceIdentity RocmSmiBackend::ReadIdentity(uint32_t dv, DeviceState* state) {
  DeviceIdentity id;
  id.vendor = Vendor::kAmd;
  id.index = dv;
  id.driver_version = driver_version_;
  uint64_t value = 0;
  if (api_.unique_id && api_.unique_id(dv, &value) == rsmi::kSuccess) {
    char uuid[32];
    std::snprintf(uuid, sizeof uuid, "GPU-%016" PRIx64, value);
    id.uuid = uuid;
  }
  if (api_.name) {
    char text[256] = {};
    if (api_.name(dv, text, sizeof text - 1) == rsmi::kSuccess) id.model = text;
  }
  if (id.model.empty()) id.model = ReadString(api_.brand, dv);
  if (api_.pci_id(dv, &value) == rsmi::kSuccess) id.pci_address = PackedBdfToPci(value);
  id.serial = ReadString(api_.serial, dv);
  id.firmware_version = ReadString(api_.vbios, dv);
  uint32_t minor = 0;
  if (api_.render_minor && api_.render_minor(dv, &minor) == rsmi::kSuccess) {
    id.minor = static_cast<int>(minor);
  }
  uint16_t device_id = 0;
  state->probe_with_dev_id = api_.dev_id && api_.dev_id(dv, &device_id) == rsmi::kSuccess;
  return id;
}

bool RocmSmiBackend::LooksLost(const DeviceState& d) const {
  // An identity read that worked at open and now fails to reach the device's files (INIT_ERROR,
  // FILE_ERROR) means the device fell off the bus or the driver unbound it.
  uint16_t device_id = 0;
  uint64_t bdf = 0;
  Status s = d.probe_with_dev_id ? api_.dev_id(d.dv_ind, &device_id) : api_.pci_id(d.dv_ind, &bdf);
  return s == rsmi::kInitError || s == rsmi::kFileError;
}

bool RocmSmiBackend::Ok(DeviceState& d, Field f, const char* call, Status s,
                        DeviceReading* r) const {
  if (s == rsmi::kSuccess) return true;
  if (MeansUnsupported(s)) {
    d.unsupported.set(f);
  } else {
    r->error = std::string(call) + ": " + api_.StatusText(s);
  }
  return false;
}

DeviceReading RocmSmiBackend::Read(size_t position) {
  DeviceReading r;
  DeviceState& d = states_.at(position);
  if (!d.lost && LooksLost(d)) d.lost = true;
  if (d.lost) {
    r.lost = true;
    r.error = "device " + std::to_string(d.dv_ind) + " is gone (identity reads fail)";
    return r;
  }
  ReadActivity(d, &r);
  ReadThermalsAndPower(d, &r);
  ReadMemoryAndErrors(d, &r);
  ReadClocks(d, &r);
  return r;
}

void RocmSmiBackend::ReadActivity(DeviceState& d, DeviceReading* r) {
  uint32_t percent = 0;
  if (api_.busy_percent && !d.unsupported[kBusy] &&
      Ok(d, kBusy, "rsmi_dev_busy_percent_get", api_.busy_percent(d.dv_ind, &percent), r)) {
    r->sample.gpu_utilization = percent / 100.0;
  }
  if (api_.memory_busy_percent && !d.unsupported[kMemoryBusy] &&
      Ok(d, kMemoryBusy, "rsmi_dev_memory_busy_percent_get",
         api_.memory_busy_percent(d.dv_ind, &percent), r)) {
    r->sample.memory_utilization = percent / 100.0;
  }
}

void RocmSmiBackend::ReadThermalsAndPower(DeviceState& d, DeviceReading* r) {
  Sample& s = r->sample;
  auto temperature = [&](Field f, uint32_t sensor) -> std::optional<double> {
    int64_t millidegrees = 0;
    if (!api_.temp_metric || d.unsupported[f]) return std::nullopt;
    Status st = api_.temp_metric(d.dv_ind, sensor, rsmi::kTempCurrent, &millidegrees);
    if (!Ok(d, f, "rsmi_dev_temp_metric_get", st, r)) return std::nullopt;
    return millidegrees / 1000.0;
  };
  // Junction (hotspot) is what the AMD exporter and dashboards watch; older parts have edge
  // only. A transient junction error leaves the field absent rather than mixing in edge values.
  s.temperature_c = temperature(kTempJunction, rsmi::kTempJunction);
  if (d.unsupported[kTempJunction]) s.temperature_c = temperature(kTempEdge, rsmi::kTempEdge);
  s.memory_temperature_c = temperature(kTempMemory, rsmi::kTempMemory);

  uint64_t microwatts = 0;
  if (api_.power_ave && !d.unsupported[kPowerAverage] &&
      Ok(d, kPowerAverage, "rsmi_dev_power_ave_get", api_.power_ave(d.dv_ind, 0, &microwatts), r)) {
    s.power_w = microwatts / 1e6;
  } else if (api_.current_socket_power && d.unsupported[kPowerAverage] &&
             !d.unsupported[kSocketPower] &&
             Ok(d, kSocketPower, "rsmi_dev_current_socket_power_get",
                api_.current_socket_power(d.dv_ind, &microwatts), r)) {
    s.power_w = microwatts / 1e6;  // MI300: no average, only current socket power
  }
  if (api_.power_cap && !d.unsupported[kPowerCap] &&
      Ok(d, kPowerCap, "rsmi_dev_power_cap_get", api_.power_cap(d.dv_ind, 0, &microwatts), r)) {
    s.power_limit_w = microwatts / 1e6;
  }
  uint64_t counter = 0, timestamp = 0;
  float resolution_uj = 0;
  if (api_.energy_count && !d.unsupported[kEnergy] &&
      Ok(d, kEnergy, "rsmi_dev_energy_count_get",
         api_.energy_count(d.dv_ind, &counter, &resolution_uj, &timestamp), r)) {
    s.energy_mj = static_cast<uint64_t>(static_cast<long double>(counter) * resolution_uj / 1000.0L);
  }
}

void RocmSmiBackend::ReadMemoryAndErrors(DeviceState& d, DeviceReading* r) {
  Sample& s = r->sample;
  uint64_t bytes = 0;
  if (api_.memory_total && !d.unsupported[kVramTotal] &&
      Ok(d, kVramTotal, "rsmi_dev_memory_total_get",
         api_.memory_total(d.dv_ind, rsmi::kMemoryVram, &bytes), r)) {
    s.memory_total_bytes = bytes;
  }
  if (api_.memory_usage && !d.unsupported[kVramUsed] &&
      Ok(d, kVramUsed, "rsmi_dev_memory_usage_get",
         api_.memory_usage(d.dv_ind, rsmi::kMemoryVram, &bytes), r)) {
    s.memory_used_bytes = bytes;
  }
  if (s.memory_total_bytes && s.memory_used_bytes) {
    s.memory_free_bytes = *s.memory_total_bytes - std::min(*s.memory_used_bytes, *s.memory_total_bytes);
  }
  uint64_t count = 0;
  if (api_.pci_replay_counter && !d.unsupported[kPcieReplay] &&
      Ok(d, kPcieReplay, "rsmi_dev_pci_replay_counter_get",
         api_.pci_replay_counter(d.dv_ind, &count), r)) {
    s.pcie_replays = count;
  }
  uint64_t blocks = 0;
  if (!api_.ecc_enabled || !api_.ecc_count || d.unsupported[kEcc] ||
      !Ok(d, kEcc, "rsmi_dev_ecc_enabled_get", api_.ecc_enabled(d.dv_ind, &blocks), r)) {
    return;
  }
  // Sum over the RAS blocks ECC is enabled on, like the exporter's gpu_ecc_*_total.
  uint64_t correctable = 0, uncorrectable = 0;
  bool any = false;
  for (rsmi::GpuBlock block = rsmi::kFirstBlock; block <= rsmi::kLastBlock; block <<= 1) {
    if (!(blocks & block) || (d.ecc_unsupported_blocks & block)) continue;
    rsmi::ErrorCount counts{};
    Status st = api_.ecc_count(d.dv_ind, block, &counts);
    if (MeansUnsupported(st)) {
      d.ecc_unsupported_blocks |= block;
    } else if (st != rsmi::kSuccess) {
      r->error = "rsmi_dev_ecc_count_get: " + api_.StatusText(st);
    } else {
      correctable += counts.correctable_err;
      uncorrectable += counts.uncorrectable_err;
      any = true;
    }
  }
  if (any) {
    s.ecc_correctable = correctable;
    s.ecc_uncorrectable = uncorrectable;
  }
}

void RocmSmiBackend::ReadClocks(DeviceState& d, DeviceReading* r) {
  auto clock = [&](Field f, const char* file) -> std::optional<double> {
    if (d.card_dir.empty() || d.unsupported[f]) return std::nullopt;
    std::optional<std::string> text = ReadSmallFile(d.card_dir + "/" + file);
    if (!text) {
      d.unsupported.set(f);  // older ASICs and VFs have no DPM table
      return std::nullopt;
    }
    return amd_sysfs::CurrentDpmLevelMhz(*text);
  };
  r->sample.sm_clock_mhz = clock(kSysClock, "pp_dpm_sclk");
  r->sample.memory_clock_mhz = clock(kMemClock, "pp_dpm_mclk");
}

void RocmSmiBackend::StartEvents() {
  events_started_ = true;
  if (!api_.event_init || !api_.event_mask_set || !api_.event_get) return;
  const uint64_t mask = rsmi::EventMask(rsmi::kEventVmFault) |
                        rsmi::EventMask(rsmi::kEventThermalThrottle) |
                        rsmi::EventMask(rsmi::kEventGpuPreReset) |
                        rsmi::EventMask(rsmi::kEventGpuPostReset);
  for (const DeviceState& d : states_) {
    // Fails without /dev/kfd access or on kernels before KFD 1.3: that device has no events.
    if (api_.event_init(d.dv_ind) != rsmi::kSuccess) continue;
    event_devices_.push_back(d.dv_ind);
    api_.event_mask_set(d.dv_ind, mask);
  }
}

std::vector<HealthEvent> RocmSmiBackend::WaitEvents(std::chrono::milliseconds timeout) {
  if (!events_started_) StartEvents();
  std::vector<HealthEvent> events;
  if (event_devices_.empty()) {
    std::this_thread::sleep_for(timeout);
    return events;
  }
  rsmi::EventData data[32] = {};
  uint32_t count = 32;
  const int timeout_ms = static_cast<int>(std::clamp<int64_t>(timeout.count(), 0, INT32_MAX));
  Status s = api_.event_get(timeout_ms, &count, data);
  if (s != rsmi::kSuccess) {
    // NO_DATA is the normal timeout; anything else must not turn the caller into a busy loop.
    if (s != rsmi::kNoData) std::this_thread::sleep_for(timeout);
    return events;
  }
  const auto now = std::chrono::system_clock::now();
  for (uint32_t i = 0; i < std::min<uint32_t>(count, 32); ++i) {
    HealthEvent e;
    e.device_index = data[i].dv_ind;
    e.vendor = Vendor::kAmd;
    e.code = data[i].event;
    e.when = now;
    events.push_back(e);
  }
  return events;
}

}  // namespace rocm_smi_impl

std::unique_ptr<DeviceBackend> OpenRocmSmi(const std::string& library) {
  std::unique_ptr<SharedLibrary> lib = LoadVendorLibrary(
      library, rocm_smi_impl::kRocmSmiLibraries, "ROCm SMI",
      "fix --rocm-smi-library: the path of librocm_smi64.so.*, usually under /opt/rocm/lib");
  if (!lib) return nullptr;
  auto backend = std::make_unique<rocm_smi_impl::RocmSmiBackend>(std::move(lib));
  backend->Open();
  return backend;
}

}  // namespace accel::devices
