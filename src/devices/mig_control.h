// MigControl: reading and changing the MIG partitioning of one GPU (MIG mode, GPU instances,
// compute instances) through the vendor library. `accel mig apply` drives it.
//
// One object per GPU; not thread-safe (one caller changes a GPU at a time). Every call goes to
// the driver: nothing is cached except identity and the profile table, so a GpuInstances() after
// a change sees the change. Driver refusals throw BackendError carrying NVML's error text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "devices/backend.h"

namespace accel::devices {

/// A GPU-instance profile as the driver reports it (nvmlDeviceGetGpuInstanceProfileInfo).
struct MigDriverProfile {
  /// NVML_GPU_INSTANCE_PROFILE_* index it was enumerated by.
  unsigned index = 0;
  /// Per-device profile id: what creation and placement queries take.
  unsigned id = 0;
  /// SM slices (the "g" number).
  unsigned compute_slices = 0;
  /// Most instances of it on the GPU.
  unsigned instance_count = 0;
  unsigned long long memory_mb = 0;
  /// "1g.10gb" (NVML's name without "MIG "), or synthesized when the driver has no names.
  std::string name;
};

/// One placement of a GPU-instance profile, in memory slices.
struct MigSlotRange {
  int start = 0;
  int size = 0;
  bool operator==(const MigSlotRange&) const = default;
};

/// A compute instance inside a GPU instance.
struct MigComputeInstanceInfo {
  unsigned id = 0;          ///< unique within its GPU instance
  unsigned profile_id = 0;  ///< compute-instance profile id
  int start = 0;            ///< first compute slice inside the GPU instance
  int slices = 0;           ///< compute slices
};

/// A GPU instance as it exists now.
struct MigGpuInstanceInfo {
  unsigned id = 0;          ///< unique within the GPU
  unsigned profile_id = 0;  ///< per-device GI profile id
  int start = 0;            ///< first memory slice
  int size = 0;             ///< memory slices
  /// Ordered by start.
  std::vector<MigComputeInstanceInfo> compute_instances;
  /// Processes run on it: destroying it (or its compute instances) would kill them.
  bool busy = false;
};

/// MIG mode now and after the next GPU reset.
struct MigModeState {
  bool current = false;
  bool pending = false;
};

class MigControl {
 public:
  virtual ~MigControl() = default;

  /// NVML index.
  virtual unsigned index() const = 0;
  /// "NVIDIA H100 80GB HBM3".
  virtual const std::string& product_name() const = 0;
  /// (device << 16) | vendor, e.g. 0x233010DE, as mig-parted's device-filter writes it.
  virtual uint32_t pci_id() const = 0;
  /// (subsystem device << 16) | subsystem vendor.
  virtual uint32_t pci_subsystem_id() const = 0;
  /// Whether the GPU supports MIG at all (decided at open).
  virtual bool mig_capable() const = 0;

  /// Current and pending MIG mode. Throws BackendError.
  virtual MigModeState Mode() = 0;
  /// Sets the MIG mode. Returns true when it took effect now, false when it is only pending
  /// (the driver needs a GPU reset or reboot first). Throws BackendError when refused (busy GPU,
  /// GPU instances left, no permission).
  virtual bool SetMigEnabled(bool enabled) = 0;
  /// Whether any process runs on the GPU (any instance, or the whole GPU). Throws BackendError.
  virtual bool HasProcesses() = 0;

  /// The driver's GPU-instance profiles (empty when the GPU is not MIG-capable, or the driver
  /// only lists them with MIG on). Read once, then cached. Throws BackendError.
  virtual const std::vector<MigDriverProfile>& Profiles() = 0;
  /// Every GPU instance, ordered by start; empty with MIG off. Throws BackendError.
  virtual std::vector<MigGpuInstanceInfo> GpuInstances() = 0;
  /// Where the driver allows a GI of `profile_id`, regardless of what is occupied.
  /// Throws BackendError.
  virtual std::vector<MigSlotRange> PossiblePlacements(unsigned profile_id) = 0;

  /// Creates a GI of `profile_id` at memory slice `start`; returns its id. Throws BackendError
  /// (e.g. "Insufficient resources" when the slices are taken).
  virtual unsigned CreateGpuInstance(unsigned profile_id, int start) = 0;
  /// Creates `count` compute instances of `slices` compute slices in GI `gpu_instance`. Throws
  /// BackendError; the ones created before the failure stay.
  virtual void CreateComputeInstances(unsigned gpu_instance, int slices, int count) = 0;
  /// Destroys every compute instance of GI `gpu_instance`. Throws BackendError ("In use by
  /// another client" when processes run); the ones destroyed before the failure stay destroyed.
  virtual void DestroyComputeInstances(unsigned gpu_instance) = 0;
  /// Destroys GI `gpu_instance`, which must have no compute instances. Throws BackendError.
  virtual void DestroyGpuInstance(unsigned gpu_instance) = 0;
};

using MigGpus = std::vector<std::unique_ptr<MigControl>>;

/// Opens every NVIDIA GPU for MIG control through NVML (same library search as OpenNvml:
/// `library` when named, else the default names). The GPUs share one nvmlInit; the last one
/// destroyed calls nvmlShutdown. Returns an empty list when `library` is empty and no NVML is
/// installed. Throws BackendError when the library is named or found but cannot be loaded or
/// initialised, or lacks the MIG functions (driver older than R470).
MigGpus OpenNvmlMigControl(const std::string& library);

}  // namespace accel::devices
