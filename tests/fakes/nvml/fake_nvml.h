// The fake libnvidia-ml.so.1: internal model shared by its .cc files.
//
// A JSON file named in FAKE_NVML_CONFIG describes the GPUs (docs/fake-nvml.md); nvmlInit reads it
// when the init count goes from 0 to 1. All state lives in one global guarded by one mutex;
// injected hangs sleep with the mutex released, so a hung call on one GPU never blocks calls on
// another. Every exported function validates arguments and init state the way NVML does.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "devices/nvml_abi.h"

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

namespace fake_nvml {

using namespace accel::devices::nvml;

constexpr int kMaxDevices = 64;
constexpr int kMaxMigDevices = 16;  ///< MIG device slots per GPU (H100: 7)
/// NVLink links a fake GPU has (H100: 18); link numbers at or past it are INVALID_ARGUMENT.
constexpr unsigned kNvLinkSlots = 18;

/// A metric's value: constant, cycling through a list (one step per read), or a linear ramp in
/// time since nvmlInit.
struct ValueSpec {
  std::vector<double> cycle;  ///< one entry = a constant
  bool ramp = false;
  double start = 0;
  double per_second = 0;
  size_t next = 0;  ///< next cycle position
};
using Metrics = std::map<std::string, ValueSpec>;

/// An injected fault on one device: after `after_calls` calls of `function` (or of any function
/// when "*") and `after_ms` since init, the call hangs `hang_ms` (-1 forever) and then returns
/// `error` (or proceeds normally when no error is given); for `times` calls when not 0.
struct Fault {
  std::string function;
  std::optional<nvmlReturn_t> error;
  long long hang_ms = 0;
  unsigned long long after_calls = 0;
  long long after_ms = 0;
  unsigned long long times = 0;  ///< calls it affects; 0 = every one from after_calls on
};

/// An XID delivered by nvmlEventSetWait at `at_ms` after init.
struct XidEvent {
  long long at_ms = 0;
  unsigned long long xid = 0;
  unsigned gpu_instance_id = kNvmlNoInstance;
  unsigned compute_instance_id = kNvmlNoInstance;
  bool delivered = false;
};

struct MigProfile {
  unsigned index = 0;  ///< the profile index NVML enumerates by
  unsigned id = 0;
  unsigned slices = 0;
  unsigned instance_count = 0;
  unsigned long long memory_mb = 0;
  unsigned multiprocessors = 0;
  std::string name;  ///< NVML's name, e.g. "MIG 1g.10gb"
  unsigned placement_size = 1;            ///< memory slices one instance covers
  std::vector<unsigned> placement_starts;  ///< allowed first memory slices
};

/// One MIG device (a compute instance inside a GPU instance).
struct MigDevice {
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  unsigned profile_id = 0;       ///< the GPU instance's profile id
  unsigned placement_start = 0;  ///< the GPU instance's first memory slice
  std::string uuid;
  Metrics metrics;  ///< memory_total_mib / memory_used_mib / memory_reserved_mib
  Metrics gpm;      ///< GPM metric id (decimal string) -> percent or MiB/s
  unsigned ci_profile_id = 0;  ///< compute-instance profile id (= its index in the fake)
  unsigned ci_start = 0;       ///< first compute slice inside the GPU instance
  unsigned ci_slices = 0;      ///< compute slices
  int slot = 0;                ///< its nvmlComputeInstance_t handle slot
};

/// One GPU instance (mig_control.cc). Its compute instances are the MigDevices with its id.
struct GpuInstance {
  unsigned id = 0;
  unsigned profile_id = 0;
  unsigned start = 0;  ///< first memory slice
  int slot = 0;        ///< its nvmlGpuInstance_t handle slot
};

/// The far end of one NVLink link ("nvlink_peers" in the config).
struct NvLinkPeer {
  enum class Kind { kGpu, kSwitch, kDown };
  Kind kind = Kind::kDown;  ///< kDown: the link exists but is inactive
  std::string bus_id;       ///< NVML spelling ("00000000:43:00.0"); empty when down
};

struct Process {
  unsigned pid = 0;
  unsigned long long used_bytes = 0;
  unsigned gpu_instance_id = kNvmlNoInstance;
  unsigned compute_instance_id = kNvmlNoInstance;
  unsigned sm_util = 0, memory_util = 0;
};

struct Device {
  std::string uuid, name, pci_bus_id, serial, vbios;
  /// InfoROM versions ("inforom" in the config); an empty one answers NOT_SUPPORTED.
  std::string inforom_oem = "2.1", inforom_ecc = "7.16", inforom_power,
              inforom_image = "G520.0200.00.05";
  unsigned minor = 0;
  unsigned pci_device_id = 0x233010DE;
  unsigned pci_subsystem_id = 0x16C110DE;
  Metrics metrics;
  std::set<std::string> not_supported;  ///< metric or function names
  bool gpm_supported = false;
  Metrics gpm;
  bool mig_capable = false;
  unsigned mig_mode = 0, mig_pending_mode = 0, max_mig_devices = 7;
  std::vector<MigProfile> profiles;
  std::vector<MigDevice> mig;
  std::vector<GpuInstance> gpu_instances;  ///< derived from `mig` at parse time, then live
  /// What nvmlDeviceSetMigMode reports as activation status; not SUCCESS = the change only
  /// becomes pending (a reset is needed).
  nvmlReturn_t mig_activation = NVML_SUCCESS;
  std::vector<Fault> faults;
  std::vector<XidEvent> events;
  unsigned long long supported_event_types = 0;
  std::vector<Process> processes;
  /// Link i's far end, from "nvlink_peers"; nullopt when the config has none (link state then
  /// comes from the nvlink_links metric and remote queries are NOT_SUPPORTED).
  std::optional<std::vector<NvLinkPeer>> nvlink_peers;

  // Run-time state.
  bool lost = false;
  std::map<std::string, unsigned long long> calls;  ///< by function name
};

struct Config {
  std::string driver_version = "580.95.05";
  std::string nvml_version = "13.580.95.05";
  int cuda_driver_version = 13000;
  std::optional<nvmlReturn_t> init_error;
  std::vector<Device> devices;
};

/// A problem in the config file; the message is "<json path>: <what is wrong>".
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Parses a config document. Throws ConfigError. config.cc.
Config ParseConfig(const std::string& text);
/// "NOT_SUPPORTED", "NVML_ERROR_NOT_SUPPORTED" or "3" -> the code; nullopt when unknown.
std::optional<nvmlReturn_t> ParseReturnCode(const std::string& text);
/// The names of every exported nvmlReturn_t function (fault targets).
const std::set<std::string>& FunctionNames();

struct EventSet {
  std::map<int, unsigned long long> registered;  ///< device position -> event types
};

struct GpmSample {
  int device = -1;  ///< -1 until filled
  std::optional<unsigned> gpu_instance;
};

/// The process-wide fake driver.
struct State {
  std::mutex mu;
  int init_count = 0;
  Config config;
  std::chrono::steady_clock::time_point init_time;
  std::string last_config_error;  ///< shown by nvmlErrorString(UNKNOWN) after a failed init
  std::set<EventSet*> event_sets;
  std::set<GpmSample*> gpm_samples;
};
State& Global();

/// Seconds / milliseconds since the last init from zero. Call with Global().mu held.
double SecondsSinceInit();
long long MillisSinceInit();

/// A metric's current value (advances cycles). nullopt when the spec map has no such metric.
std::optional<double> ReadValue(Metrics& metrics, const std::string& name);

/// Copies `text` into an NVML string buffer: INSUFFICIENT_SIZE when it does not fit.
nvmlReturn_t CopyString(const std::string& text, char* out, unsigned length);

nvmlDevice_t DeviceHandle(int device);
nvmlDevice_t MigHandle(int device, int mig);
nvmlGpuInstance_t GpuInstanceHandle(int device, int slot);
nvmlComputeInstance_t ComputeInstanceHandle(int device, int slot);

// ---- MIG control model (mig_control.cc); call with Global().mu held ----

/// The profile with this id, or null.
const MigProfile* ProfileById(const Device& dev, unsigned id);
/// The GPU instance in handle slot `slot` / with id `id`, or null.
GpuInstance* GpuInstanceBySlot(Device& dev, int slot);
GpuInstance* GpuInstanceById(Device& dev, unsigned id);
/// Memory slices (bit i = slice i) the GPU instance covers.
unsigned GpuInstanceMask(const Device& dev, const GpuInstance& gi);
/// Compute slices of a compute-instance profile index (0 when the fake has none).
unsigned ComputeProfileSlices(unsigned profile);
/// Derives gpu_instances and compute-instance fields from the configured `mig` list.
void DeriveMigTopology(Device* dev);
/// Default placements of the built-in H100 table, by profile id.
void SetDefaultPlacements(MigProfile* profile);
/// Writes every device's MIG state as JSON to FAKE_NVML_STATE_OUT (when set).
void WriteStateOut(const Config& config);

/// A call that needs only an initialised library: locks the state and checks init.
class GlobalCall {
 public:
  GlobalCall();
  nvmlReturn_t rc() const { return rc_; }
  State& state() { return Global(); }

 private:
  std::unique_lock<std::mutex> lock_;
  nvmlReturn_t rc_ = NVML_SUCCESS;
};

/// A call on one device handle: locks, checks init and the handle, counts the call, applies the
/// device's faults (sleeping unlocked through hangs) and its not_supported list. rc() is what
/// the function must return when not SUCCESS. MIG handles are refused with NOT_SUPPORTED
/// unless `allow_mig`.
class DeviceCall {
 public:
  DeviceCall(const char* function, nvmlDevice_t handle, bool allow_mig = false);
  nvmlReturn_t rc() const { return rc_; }
  Device& device() { return Global().config.devices[position_]; }
  int position() const { return position_; }
  /// The MIG device the handle names, or null for a GPU handle.
  MigDevice* mig() { return mig_ < 0 ? nullptr : &device().mig[mig_]; }
  int mig_index() const { return mig_; }
  /// A device metric, or nullopt when absent or listed in not_supported.
  std::optional<double> Metric(const std::string& name);

 private:
  nvmlReturn_t Enter(const char* function, nvmlDevice_t handle, bool allow_mig);
  std::unique_lock<std::mutex> lock_;
  nvmlReturn_t rc_ = NVML_SUCCESS;
  int position_ = -1;
  int mig_ = -1;
};

/// Decodes a handle made by DeviceHandle/MigHandle: false when it is not one of the current
/// config's devices. Call with Global().mu held.
bool DecodeDevice(nvmlDevice_t handle, int* device, int* mig);
/// Decodes a GpuInstanceHandle / ComputeInstanceHandle by address only (callers look the slot
/// up in the device).
bool DecodeGpuInstance(nvmlGpuInstance_t handle, int* device, int* slot);
bool DecodeComputeInstance(nvmlComputeInstance_t handle, int* device, int* slot);

/// Reads a metric into an unsigned NVML out-parameter: the body of most getters.
template <typename T>
nvmlReturn_t GetMetric(const char* function, nvmlDevice_t handle, const char* metric, T* out) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call(function, handle);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  std::optional<double> value = call.Metric(metric);
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  *out = static_cast<T>(*value < 0 ? 0 : *value);
  return NVML_SUCCESS;
}

}  // namespace fake_nvml

// Every export, declared from the shared ABI list so a definition with a different signature
// fails to compile.
#define FAKE_NVML_DECLARE(name, params) \
  FAKE_NVML_EXPORT accel::devices::nvml::nvmlReturn_t name params;
using namespace accel::devices::nvml;
ACCEL_NVML_FUNCTIONS(FAKE_NVML_DECLARE)
#undef FAKE_NVML_DECLARE
FAKE_NVML_EXPORT const char* nvmlErrorString(accel::devices::nvml::nvmlReturn_t result);
