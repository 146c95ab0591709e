// Internals of the NVIDIA backend (OpenNvml in backend.h): the dlsym table, per-device state and
// the readers split over nvml_*.cc. Nothing outside src/devices/nvml_*.cc includes this header.
//
// Thread-safety: the session's NvmlApi is immutable. Each NvmlDeviceState is guarded by its own
// mutex, held for a whole Read() of that device, so reads of distinct devices never contend
// (and a call hung in the driver blocks only its own device).
#pragma once

#include <array>
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
#include "devices/nvml_session.h"

namespace accel::devices {

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
  // Opt-in readings (ExtraReads).
  kEccAggCorrected,
  kEccAggUncorrected,
  kRetiredSbe,
  kRetiredDbe,
  kRetiredPending,
  kViolationPower,  ///< + ThrottleReason: one slot per perf policy (nvmlDeviceGetViolationStatus)
  kViolationLast = kViolationPower + kThrottleReasons - 1,
  kFieldViolationPower,  ///< + ThrottleReason: field values 74..79 when the call is refused
  kFieldViolationLast = kFieldViolationPower + kThrottleReasons - 1,
  kClockEvents,
  kFieldNvlinkCrcFlit,
  kFieldNvlinkCrcData,
  kFieldNvlinkReplay,
  kFieldNvlinkRecovery,
  kNvlinkErrorCounter,  ///< per-link nvmlDeviceGetNvLinkErrorCounter when the fields are refused
  kP2p,
  kCount
};

/// NVLink links DCGM names per-link fields for (DCGM_FI_DEV_NVLINK_BANDWIDTH_L0 .. L17).
inline constexpr unsigned kNvlinkFieldLinks = 18;

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
  /// The same per link (ExtraReads::nvlink_per_link).
  std::array<std::optional<uint64_t>, kNvlinkFieldLinks> link_kib;
  std::array<int64_t, kNvlinkFieldLinks> link_at_us{};
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
  NvmlReadContext(const NvmlApi& api, const ExtraReads& extra, NvmlDeviceState& device,
                  DeviceReading& reading)
      : api_(api), extra_(extra), device_(device), reading_(reading) {}

  const NvmlApi& api() const { return api_; }
  /// What to read beyond the default set.
  const ExtraReads& extra() const { return extra_; }
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
  const ExtraReads& extra_;
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

/// Fills the GPU-wide part of ctx.reading().sample (everything but GPM), the opt-in parts when
/// ctx.extra() asks for them. nvml_sample.cc.
void ReadGpuSample(NvmlReadContext& ctx);
/// Fills memory_* of `sample` from `handle` (a GPU or MIG handle): nvmlDeviceGetMemoryInfo_v2,
/// falling back to v1 (no reserved) when v2 is missing or refused.
void ReadMemory(NvmlReadContext& ctx, nvml::nvmlDevice_t handle, NvmlSlot v2, NvmlSlot v1,
                Sample* sample);

/// Takes a GPM sample into `pair` (whole GPU when `gpu_instance` is empty, else that GI) and, from
/// the second call on, fills the GPM ratios and PCIe rates of `sample` (and SM occupancy, the
/// FP pipes and NVLink bytes when ctx.extra().gpm_more). nvml_gpm.cc.
void ReadGpm(NvmlReadContext& ctx, NvmlGpmPair* pair, std::optional<unsigned> gpu_instance,
             NvmlSlot slot, Sample* sample);
/// Frees both buffers of `pair`.
void FreeGpm(const NvmlApi& api, NvmlGpmPair* pair);

/// Fills mig_enabled and mig[] of ctx.reading(). nvml_mig.cc.
void ReadMig(NvmlReadContext& ctx);

/// Fills ctx.reading().p2p: nvmlDeviceGetP2PStatus(NVLINK) towards each of `peers` (handle,
/// DeviceIdentity::index); a peer NVML refuses is left out. nvml_sample.cc.
void ReadP2p(NvmlReadContext& ctx,
             const std::vector<std::pair<nvml::nvmlDevice_t, unsigned>>& peers);

/// Fills the identity_details part of `id` (NVML version, brand, InfoROM versions) for the GPU
/// at `handle`; what NVML refuses stays empty. nvml_sample.cc.
void ReadIdentityDetails(const NvmlApi& api, nvml::nvmlDevice_t handle, DeviceIdentity* id);

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

/// The DeviceBackend over an initialised NVML session. nvml_backend.cc.
class NvmlBackend : public DeviceBackend {
 public:
  /// Takes over `session` (initialised) and enumerates devices. Throws BackendError when NVML
  /// cannot count the devices.
  explicit NvmlBackend(std::unique_ptr<NvmlSession> session);
  ~NvmlBackend() override;  ///< frees GPM samples and the event set; the session shuts NVML down

  Vendor vendor() const override { return Vendor::kNvidia; }
  const std::string& library_path() const override { return session_->path(); }
  const std::string& driver_version() const override { return driver_version_; }
  const std::vector<DeviceIdentity>& devices() const override { return identities_; }
  DeviceReading Read(size_t position) override;
  std::vector<HealthEvent> WaitEvents(std::chrono::milliseconds timeout) override;
  void SetExtraReads(const ExtraReads& extra) override;

 private:
  const NvmlApi& api() const { return session_->api(); }
  void Enumerate();

  std::unique_ptr<NvmlSession> session_;  ///< first member: destroyed last
  ExtraReads extra_;  ///< what Read() fetches beyond the default set (set before collecting)
  std::string driver_version_;
  std::vector<DeviceIdentity> identities_;
  std::vector<std::unique_ptr<NvmlDeviceState>> states_;  ///< parallel to identities_
  std::unique_ptr<NvmlEvents> events_;
};

}  // namespace accel::devices
