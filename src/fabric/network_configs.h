// Network device configurations generated from the host's pairing, so pods can request NICs
// aligned with their GPUs: the SR-IOV network device plugin's resourceList (one resource per
// rail), the RDMA shared device plugin's configList, and a NicClusterPolicy fragment of the
// NVIDIA Network Operator (mellanox.com/v1alpha1) embedding both. Pure functions; thread-safe.
//
// Device plugins know nothing finer than a NUMA node, so the only way to hand a pod "the NIC
// next to each of its GPUs" is one resource per rail (rail k = the k-th NIC in use, in PCI
// order, the same on every node of one model) and a request for one of each; the pod then
// reads the pairing itself (accel fabric env / pod). Field names are the plugins' own:
// k8snetworkplumbingwg/sriov-network-device-plugin pkg/types/types.go,
// Mellanox/k8s-rdma-shared-dev-plugin pkg/types/types.go, Mellanox/network-operator
// api/v1alpha1/nicclusterpolicy_types.go.
#pragma once

#include <string>
#include <vector>

#include "fabric/pairing.h"

namespace accel::fabric {

/// Knobs of the generated configs.
struct NetworkConfigOptions {
  std::string resource_prefix = "nvidia.com";  ///< SR-IOV DP resourcePrefix
  std::string rdma_prefix = "rdma";            ///< RDMA shared DP resourcePrefix
  int rdma_hca_max = 63;                       ///< pods sharing one RDMA shared resource
  /// Name pattern of per-rail resources; "%d" becomes the rail index (NIC order of UsedNics).
  /// Without "%d" the index is appended.
  std::string rail_name = "rdma_rail%d";
  /// NUMA-wide resources too ("rdma_numa0", ...) for pods that take all GPUs of a node.
  bool per_numa = true;
  /// Image repository and version of the Network Operator components in the NicClusterPolicy
  /// (the operator release's own values; the docs of each release list them).
  std::string repository = "nvcr.io/nvidia/mellanox";
  std::string version = "network-operator-v26.4.1";
};

/// SR-IOV network device plugin config (JSON text): one resource per used NIC (rail), selected
/// by vendor, device id, driver-independent rootDevices (the PF) and linkTypes, isRdma true.
/// deviceType is "netDevice"; selectors is a list (the plugin's current form). The VF device
/// id comes from a VF of that PF in the topology, else from the known ConnectX/BlueField
/// PF→VF ids, else "devices" is left out (rootDevices alone still selects only its VFs). A
/// NIC that is itself a VF is selected by pciAddresses instead. Ends with a newline.
std::string RenderSriovDevicePluginConfig(const topology::HostTopology& host, const Fabric& fabric,
                                          const NetworkConfigOptions& options);

/// RDMA shared device plugin config (JSON text): one entry per rail selected by ifNames (the
/// NIC's netdev) with rdmaHcaMax, plus per-NUMA entries ("rdma_numa<node>", ifNames of the
/// rails on that node) when options.per_numa. NICs without a netdev cannot be selected by
/// name and are left out (see NetworkConfigNotes). Ends with a newline.
std::string RenderRdmaSharedDevicePluginConfig(const Fabric& fabric,
                                               const NetworkConfigOptions& options);

/// NicClusterPolicy (name nic-cluster-policy, the singleton the operator reconciles) YAML with
/// rdmaSharedDevicePlugin.config and sriovDevicePlugin.config set to the two configs above
/// (as literal blocks), and nvIpam enabled (Whereabouts was removed in v25.10).
std::string RenderNicClusterPolicy(const topology::HostTopology& host, const Fabric& fabric,
                                   const NetworkConfigOptions& options);

/// What an operator should know before applying the configs, one sentence each: no NIC in
/// use, a NIC without SR-IOV (no VFs to hand out), a NIC without a netdev (invisible to the
/// RDMA shared plugin's ifNames), mixed link layers.
std::vector<std::string> NetworkConfigNotes(const topology::HostTopology& host,
                                            const Fabric& fabric);

/// The rail names in use, rail k at [k], e.g. {"rdma_rail0", ...}: what a pod requests.
std::vector<std::string> RailResourceNames(const Fabric& fabric,
                                           const NetworkConfigOptions& options);

}  // namespace accel::fabric
