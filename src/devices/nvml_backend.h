// Internals of the NVIDIA backend (OpenNvml in backend.h): the dlsym table, per-device state and
// the readers split over nvml_*.cc. Nothing outside src/devices/nvml_*.cc includes this header.
//
// Thread-safety: NvmlApi is immutable after Load(). Each NvmlDeviceState is guarded by its own
// mutex, held for a whole Read() of that device, so reads of distinct devices never contend
// (and a call hung in the driver blocks only its own device).
#pragma once

#include <bitset>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "devices/backend.h"
#include "devices/nvml_abi.h"
#include "devices/shared_library.h"

namespace accel::devices {

/// The library names OpenNvml (and OpenNvmlMigControl) try when none is given: the soname, then
/// where container toolkits and the GPU Operator's driver container put it.
const std::vector<std::string>& NvmlDefaultCandidates();

/// Every NVML function accel may call; a member is null when the library does not export it.
struct NvmlApi {
#define ACCEL_NVML_MEMBER(name, params) nvml::name##_fn* name = nullptr;
  ACCEL_NVML_FUNCTIONS(ACCEL_NVML_MEMBER)
#undef ACCEL_NVML_MEMBER
  nvml::nvmlErrorString_fn* nvmlErrorString = nullptr;

  /// Resolves every symbol in `library`. Returns the required ones that are missing (empty on
  /// success); optional ones simply stay null.
  std::vector<std::string> Load(const SharedLibrary& library);
  /// nvmlErrorString(rc), or "NVML error <rc>" when the library cannot say.
  std::string ErrorString(nvml::nvmlReturn_t rc) const;
};

/// Opens the NVML library at `library_path`, initialises it, and calls visit(api, handle, i) for
/// each of `pci_addresses` NVML finds by bus id; shuts NVML down again. Returns false, calling
/// nothing, when the library does not load, `usable(api)` says a needed symbol is missing, or
/// init fails. For one-shot queries beside a running backend (init is reference counted).
bool ForEachNvmlDevice(const std::string& library_path,
                       const std::vector<std::string>& pci_addresses,
                       const std::function<bool(const NvmlApi&)>& usable,
                       const std::function<void(const NvmlApi&, nvml::nvmlDevice_t, size_t)>& visit);

/// One thing a device may not support. Once NVML says NOT_SUPPORTED / FUNCTION_NOT_FOUND (or the
/// symbol is missing) the slot is remembered and never asked again.
enum class NvmlSlot : unsigned {
  kSmClock,
  kMemClock,
  kTemperatureV,
  kTemperature,
  kPower,
  kEnergy,
  kPcieReplay,
  kUtilization,
  kEncoder,
  kDecoder,
  kMemoryV2,
  kMemoryV1,
  kRemappedRows,
  kEccCorrected,
  kEccUncorrected,
  kPowerLimit,
  kVgpuLicense,
  kFieldValues,
  kGpmSupport,
  kFieldMemoryTemp,
  kFieldNvlinkTx,
  kFieldNvlinkRx,
  kFieldRemapCor,
  kFieldRemapUnc,
  kFieldRemapPending,
  kFieldRemapFailure,
  kGpm,
  kMigMode,
  kMigProfiles,
  kMigMemoryV2,
  kMigMemoryV1,
  kMigGpm,
  kCount
};

/// Two GPM sample buffers: the previous one and the one being taken. Metrics need both.
struct NvmlGpmPair {
  nvml::nvmlGpmSample_t previous = nullptr;  ///< owned; freed with nvmlGpmSampleFree
  nvml::nvmlGpmSample_t current = nullptr;   ///< owned
  bool primed = false;                       ///< `previous` holds a sample
};

/// A GPU-instance profile of a MIG-capable GPU (from nvmlDeviceGetGpuInstanceProfileInfo).
struct NvmlMigProfile {
  unsigned id = 0;              ///< profile id (not the profile index)
  unsigned instance_count = 0;  ///< most GIs of this profile the GPU can hold
  std::string name;             ///< DCGM's "<slices>g.<ceil(memMB/1024)>gb"
};

/// Everything the backend remembers about one GPU between reads.
struct NvmlDeviceState {
  std::mutex mu;  ///< held for a whole Read() of this device
  nvml::nvmlDevice_t handle = nullptr;
  bool lost = false;  ///< sticky: NVML said GPU_IS_LOST once
  std::bitset<static_cast<size_t>(NvmlSlot::kCount)> unsupported;
  /// Why the device can no longer be read (no handle at open, or lost); empty normally.
  std::string fatal_error;
  /// NVLink TX+RX KiB counter at the previous read, and when it was taken (microseconds).
  std::optional<uint64_t> nvlink_kib;
  int64_t nvlink_at_us = 0;
  bool gpm_supported = false;  ///< nvmlGpmQueryDeviceSupport said yes (asked once)
  NvmlGpmPair gpm;
  std::map<unsigned, NvmlGpmPair> mig_gpm;  ///< by GPU-instance id
  bool profiles_loaded = false;
  std::vector<NvmlMigProfile> profiles;
  std::map<unsigned, std::string> profile_by_gi;  ///< GPU-instance id -> profile name
  std::vector<unsigned> profile_gi_ids;  ///< the GI ids present when profile_by_gi was built
};

/// One Read() of one device: turns NVML return codes into "absent" (cached), "lost" (sticky) or
/// an error line for the reading. Not shared between threads.
class NvmlReadContext {
 public:
  NvmlReadContext(const NvmlApi& api, NvmlDeviceState& device, DeviceReading& reading)
      : api_(api), device_(device), reading_(reading) {}

  const NvmlApi& api() const { return api_; }
  NvmlDeviceState& device() { return device_; }
  DeviceReading& reading() { return reading_; }
  nvml::nvmlDevice_t handle() const { return device_.handle; }
  bool lost() const { return device_.lost; }

  /// True when `slot` may be asked: the function is present, the device is not lost and the slot
  /// has not been found unsupported. A missing function marks the slot unsupported.
  bool Want(NvmlSlot slot, bool function_present);
  /// True on SUCCESS. Otherwise caches NOT_SUPPORTED / FUNCTION_NOT_FOUND / DEPRECATED /
  /// ARGUMENT_VERSION_MISMATCH for `slot`, marks the device lost on GPU_IS_LOST, or records
  /// "<function>: <error>" in the reading.
  bool Check(NvmlSlot slot, const char* function, nvml::nvmlReturn_t rc);
  /// Like Check, but for calls outside any slot (nothing is cached).
  bool CheckCall(const char* function, nvml::nvmlReturn_t rc);
  void MarkUnsupported(NvmlSlot slot) { device_.unsupported.set(static_cast<size_t>(slot)); }
  bool Unsupported(NvmlSlot slot) const {
    return device_.unsupported.test(static_cast<size_t>(slot));
  }

 private:
  const NvmlApi& api_;
  NvmlDeviceState& device_;
  DeviceReading& reading_;
};

/// Asks NVML for one slot: Want + call + Check. `ACCEL_NVML_ASK(ctx, slot, nvmlX, args...)`.
template <typename Function, typename... Args>
bool AskNvml(NvmlReadContext& ctx, NvmlSlot slot, const char* name, Function* function,
             Args... args) {
  return ctx.Want(slot, function != nullptr) && ctx.Check(slot, name, function(args...));
}
#define ACCEL_NVML_ASK(ctx, slot, function, ...) \
  ::accel::devices::AskNvml(ctx, slot, #function, (ctx).api().function, __VA_ARGS__)

/// Fills the GPU-wide part of ctx.reading().sample (everything but GPM). nvml_sample.cc.
void ReadGpuSample(NvmlReadContext& ctx);
/// Fills memory_* of `sample` from `handle` (a GPU or MIG handle): nvmlDeviceGetMemoryInfo_v2,
/// falling back to v1 (no reserved) when v2 is missing or refused.
void ReadMemory(NvmlReadContext& ctx, nvml::nvmlDevice_t handle, NvmlSlot v2, NvmlSlot v1,
                Sample* sample);

/// Takes a GPM sample into `pair` (whole GPU when `gpu_instance` is empty, else that GI) and, from
/// the second call on, fills the GPM ratios and PCIe rates of `sample`. nvml_gpm.cc.
void ReadGpm(NvmlReadContext& ctx, NvmlGpmPair* pair, std::optional<unsigned> gpu_instance,
             NvmlSlot slot, Sample* sample);
/// Frees both buffers of `pair`.
void FreeGpm(const NvmlApi& api, NvmlGpmPair* pair);

/// Fills mig_enabled and mig[] of ctx.reading(). nvml_mig.cc.
void ReadMig(NvmlReadContext& ctx);

/// The XID event channel: one event set for every device that supports XidCriticalError.
/// WaitEvents is called from one thread at a time (serialised inside). nvml_events.cc.
class NvmlEvents {
 public:
  /// Registers `handles` (position = DeviceIdentity::index in `indices`). Devices that refuse
  /// are skipped; with none left, Wait just sleeps.
  NvmlEvents(const NvmlApi& api, const std::vector<nvml::nvmlDevice_t>& handles,
             const std::vector<unsigned>& indices);
  ~NvmlEvents();  ///< frees the event set
  NvmlEvents(const NvmlEvents&) = delete;
  NvmlEvents& operator=(const NvmlEvents&) = delete;

  /// Events seen within `timeout` (empty on timeout or error).
  std::vector<HealthEvent> Wait(std::chrono::milliseconds timeout);

 private:
  std::optional<unsigned> IndexOf(nvml::nvmlDevice_t handle) const;
  nvml::nvmlReturn_t WaitOne(nvml::nvmlEventData_t* data, unsigned timeout_ms);

  const NvmlApi& api_;
  std::mutex mu_;
  nvml::nvmlEventSet_t set_ = nullptr;
  std::map<nvml::nvmlDevice_t, unsigned> index_by_handle_;
  int consecutive_errors_ = 0;
};

/// The DeviceBackend over a loaded, initialised NVML. nvml_backend.cc.
class NvmlBackend : public DeviceBackend {
 public:
  /// Takes over `library` (already loaded); initialises NVML and enumerates devices.
  /// Throws BackendError when a required symbol is missing or init fails.
  explicit NvmlBackend(std::unique_ptr<SharedLibrary> library);
  ~NvmlBackend() override;  ///< frees GPM samples and the event set, then nvmlShutdown

  Vendor vendor() const override { return Vendor::kNvidia; }
  const std::string& library_path() const override { return library_->path(); }
  const std::string& driver_version() const override { return driver_version_; }
  const std::vector<DeviceIdentity>& devices() const override { return identities_; }
  DeviceReading Read(size_t position) override;
  std::vector<HealthEvent> WaitEvents(std::chrono::milliseconds timeout) override;

 private:
  void Init();
  void Enumerate();
  std::string Fail(const std::string& call, nvml::nvmlReturn_t rc, const std::string& hint) const;

  std::unique_ptr<SharedLibrary> library_;
  NvmlApi api_;
  bool initialised_ = false;
  std::string driver_version_;
  std::vector<DeviceIdentity> identities_;
  std::vector<std::unique_ptr<NvmlDeviceState>> states_;  ///< parallel to identities_
  std::unique_ptr<NvmlEvents> events_;
};

}  // namespace accel::devices
