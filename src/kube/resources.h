// Resources the node agent advertises: which NodeDevices go under which extended resource name
// (nvidia.com/gpu, nvidia.com/mig-1g.10gb, nvidia.com/gpu.shared, amd.com/gpu, habana.ai/gaudi)
// and with which IDs (time-sliced or MPS replicas "UUID::N", NVIDIA's annotated IDs).
//
// Plain data and a pure function; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "kube/node_devices.h"
#include "kube/plugin_config.h"

namespace accel::kube {

/// One ID advertised to the kubelet.
struct AdvertisedDevice {
  /// The ID in ListAndWatch: the unit's id, or "<id>::<n>" for replica n.
  std::string id;
  /// Index into the NodeDevice list.
  size_t device = 0;
  /// Replica number; -1 when the resource is not shared.
  int replica = -1;
};

/// One extended resource, served by one device plugin socket.
struct PluginResource {
  /// Full resource name as advertised, e.g. "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared".
  std::string name;
  /// The name before a sharing rename ("nvidia.com/gpu" for nvidia.com/gpu.shared); equals
  /// `name` when not renamed. Labels are keyed by it, as GFD keys them.
  std::string base_name;
  devices::Vendor vendor = devices::Vendor::kNvidia;
  /// Socket file name in the plugin dir, e.g. "accel-nvidia.com-mig-1g.10gb.sock".
  std::string socket_name;
  /// Replicas per unit (1 = not shared).
  int replicas = 1;
  /// How the replicas share a unit: kNone when replicas == 1, else the config's strategy.
  SharingStrategy sharing = SharingStrategy::kNone;
  /// Allocate refuses more than one replica per request.
  bool fail_requests_greater_than_one = false;
  /// Advertised IDs in a stable order (device order, then replica).
  std::vector<AdvertisedDevice> devices;

  /// Shared under a name other than its own (rename or renameByDefault).
  bool renamed() const { return name != base_name; }
};

/// The resources for `devices` under `config`: NVIDIA per MIG strategy (none: every GPU
/// nvidia.com/gpu; single: MIG devices as nvidia.com/gpu, requiring every GPU MIG-enabled with
/// one profile; mixed: whole non-MIG GPUs nvidia.com/gpu plus nvidia.com/mig-<profile> with '+'
/// → '.'), the sharing strategy (time-slicing or MPS) applied to the named resources (advertised
/// under their rename, or "<name>.shared" with renameByDefault), AMD amd.com/gpu, Gaudi
/// habana.ai/gaudi. Resources with no devices are omitted. Throws InputError when the node
/// contradicts the strategy (single with mixed profiles or mixed MIG modes), a shared resource
/// names nothing on the node, an advertised name would be taken twice, or MPS would share MIG
/// devices, MIG-enabled GPUs (GFD's refusal) or another vendor's devices (NVIDIA: "sharing using
/// MPS is not supported for MIG devices").
std::vector<PluginResource> BuildResources(const std::vector<NodeDevice>& devices,
                                           const PluginConfig& config);

}  // namespace accel::kube
