// The HCA each accelerator of this node is paired with, for the device plugin's NCCL_IB_HCA
// (PluginConfig::nccl, kube/plugin_server.h's NcclHcaMap). Computed here, in the agent, because
// the pairing lives in the fabric layer and the kube layer must not depend on it. The pairing is
// the node's one (dra::NodeHardware::pairing), so a GPU's NCCL_IB_HCA names the NIC on its DRA
// rail.
//
// Pure functions; thread-safe.
#pragma once

#include <functional>
#include <string>

#include "dra/node_hardware.h"
#include "fabric/pairing.h"
#include "kube/plugin_server.h"

namespace accel::agent {

/// GPU address → "mlx5_0:1" for every pair of `fabric` that has a NIC (pairs with nic -1 are
/// left out: NCCL then keeps its own choice for that GPU). Never throws.
kube::NcclHcaMap NcclHcaMapOf(const fabric::Fabric& fabric);

/// What the agent calls at start: NcclHcaMapOf(node.pairing), logging through `log` (may be
/// empty) one line with the number of paired accelerators (and when no RDMA port was read:
/// node.rdma_root empty, every port counted as up) and one per pairing note. Never throws.
kube::NcclHcaMap NcclHcaMapForNode(const dra::NodeHardware& node,
                                   const std::function<void(const std::string&)>& log);

}  // namespace accel::agent
