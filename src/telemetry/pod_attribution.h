// Pod attribution: which Kubernetes containers hold which device, MIG instance or replica.
//
// Joins the device IDs the kubelet reports (kube::PodResourcesClient::List) to the devices of a
// snapshot, accepting every ID form the NVIDIA, GKE, AMD and Gaudi device plugins use (see
// research notes telemetry.md §1.5 and §7). Pure functions of their arguments; thread-compatible.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devices/device.h"
#include "kube/pod_resources.h"
#include "telemetry/snapshot.h"

namespace accel::telemetry {

/// The form of a device-plugin device ID.
enum class DeviceIdKind {
  kGpuUuid,     ///< "GPU-<uuid>": a whole device by vendor UUID (NVIDIA, AMD)
  kReplica,     ///< "GPU-<uuid>::<n>": time-slicing / MPS replica n of a device
  kMigUuid,     ///< "MIG-<uuid>" (optionally "::<n>"): a MIG instance by its own UUID
  kLegacyMig,   ///< "MIG-GPU-<uuid>/<gi>/<ci>": a MIG instance by parent UUID and ids (old drivers)
  kDeviceName,  ///< "nvidia<N>": an NVIDIA device by enumeration index (dcgm's `device` label)
  kGke,         ///< "nvidia<N>/gi<G>", "nvidia<N>/gi<G>/vgpu<V>", "nvidia<N>/vgpu<V>": GKE plugin
  kPciAddress,  ///< "0000:c1:00.0" (any case, 1-8 digit domain, or none): AMD's plugin
  kOpaque,      ///< anything else (a Gaudi serial, ...): matched against serial, then UUID
};

/// A device ID taken apart. Fields that the kind does not use keep their defaults.
struct DeviceRef {
  DeviceIdKind kind = DeviceIdKind::kOpaque;
  /// kGpuUuid, kReplica, kLegacyMig: the (parent) "GPU-..." UUID; kMigUuid: the "MIG-..." UUID;
  /// kPciAddress: the canonical address ("0000:c1:00.0"); kOpaque: the whole ID. Case as given.
  std::string key;
  /// kDeviceName, kGke: N of "nvidia<N>".
  int index = -1;
  /// kLegacyMig, kGke: the MIG GPU-instance id; -1 for a whole device.
  int gpu_instance_id = -1;
  /// kLegacyMig: the MIG compute-instance id (informational: instances are matched per GI).
  int compute_instance_id = -1;
  /// Replica number of "::<n>" or GKE "vgpu<V>"; -1 for an unshared device.
  int replica = -1;
};

/// Takes a device ID apart. Never throws; an ID of no known form is kOpaque.
DeviceRef ParseDeviceId(std::string_view id);

/// The vendor whose devices an extended resource names: "nvidia.com/*" (gpu, mig-*, shared),
/// "amd.com/*", "habana.ai/*". nullopt for any other resource (not ours to attribute).
std::optional<devices::Vendor> ResourceVendor(std::string_view resource);

/// What AttributePods did with the device IDs it was given.
struct AttributionStats {
  size_t matched = 0;    ///< IDs attached to a device or MIG instance
  size_t unmatched = 0;  ///< IDs of a vendor's resource that name none of that vendor's devices
  size_t ignored = 0;    ///< IDs of resources no vendor here owns (ResourceVendor() is nullopt)
  /// The first few unmatched IDs (at most kMaxUnmatchedExamples), for a log line.
  std::vector<std::string> unmatched_examples;
};

inline constexpr size_t kMaxUnmatchedExamples = 8;

/// Clears every DeviceState::pods and MigState::pods in *devices, then attaches one PodRef per
/// (container, device ID) to the device or MIG instance the ID names, among devices of the
/// resource's vendor. Each pods list comes out sorted by (namespace, pod, container, replica,
/// resource) without duplicates. Never throws on any input; unknown IDs are only counted.
AttributionStats AttributePods(const std::vector<kube::ContainerDevices>& containers,
                               std::vector<DeviceState>* devices);

}  // namespace accel::telemetry
