// Resources the node agent advertises: which NodeDevices go under which extended resource name
// (nvidia.com/gpu, nvidia.com/mig-1g.10gb, nvidia.com/gpu.shared, amd.com/gpu, habana.ai/gaudi)
// and with which IDs (time-sliced replicas "UUID::N").
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
  /// Full resource name, e.g. "nvidia.com/mig-1g.10gb".
  std::string name;
  devices::Vendor vendor = devices::Vendor::kNvidia;
  /// Socket file name in the plugin dir, e.g. "accel-nvidia.com-mig-1g.10gb.sock".
  std::string socket_name;
  /// Replicas per unit (1 = not shared).
  int replicas = 1;
  /// Allocate refuses more than one replica per request.
  bool fail_requests_greater_than_one = false;
  /// Advertised IDs in a stable order (device order, then replica).
  std::vector<AdvertisedDevice> devices;
};

/// The resources for `devices` under `config`: NVIDIA per MIG strategy (none: every GPU
/// nvidia.com/gpu; single: MIG devices as nvidia.com/gpu, requiring every GPU MIG-enabled with
/// one profile; mixed: whole non-MIG GPUs nvidia.com/gpu plus nvidia.com/mig-<profile> with '+'
/// → '.'), time-slicing applied to the named resources (renamed "<name>.shared" when
/// rename_by_default), AMD amd.com/gpu, Gaudi habana.ai/gaudi. Resources with no devices are
/// omitted. Throws InputError when the node contradicts the strategy (single with mixed
/// profiles or mixed MIG modes) or a time-slicing resource names nothing on the node.
std::vector<PluginResource> BuildResources(const std::vector<NodeDevice>& devices,
                                           const PluginConfig& config);

}  // namespace accel::kube
