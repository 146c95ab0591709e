// The HCA each accelerator of this node is paired with, for the device plugin's NCCL_IB_HCA
// (PluginConfig::nccl, kube/plugin_server.h's NcclHcaMap). Computed here, in the agent, because
// the pairing lives in the fabric layer and the kube layer must not depend on it.
//
// Pure functions apart from NcclHcaMapForNode, which reads the RDMA ports under a root;
// thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "fabric/nic_ports.h"
#include "fabric/pairing.h"
#include "kube/plugin_server.h"
#include "topology/host.h"

namespace accel::agent {

/// GPU address → "mlx5_0:1" for every pair of `fabric` that has a NIC (pairs with nic -1 are
/// left out: NCCL then keeps its own choice for that GPU). Never throws.
kube::NcclHcaMap NcclHcaMapOf(const fabric::Fabric& fabric);

/// Pairs the accelerators of `host` with its RDMA NICs as `accel fabric pairs` does with default
/// options (`ports` = fabric::ReadNicPorts of the same machine, or empty when unknown: every port
/// then counts as up) and returns NcclHcaMapOf the result. The pairing's notes (NICs left out,
/// GPUs without a NIC) go to `notes` when non-null. Never throws: a host without accelerators
/// or NICs gives an empty map.
kube::NcclHcaMap ComputeNcclHcaMap(const topology::HostTopology& host,
                                   const std::vector<fabric::NicPort>& ports,
                                   std::vector<std::string>* notes = nullptr);

/// What the agent calls at start: the RDMA ports of the machine `topology_spec` names (the agent
/// config's `topology`: "live" reads /sys/class/infiniband, "sysfs:DIR" or a directory DIR reads
/// DIR/sys/class/infiniband, a topology file reads none), then ComputeNcclHcaMap. Logs one line
/// per paired GPU count and each note through `log` (may be empty). Never throws.
kube::NcclHcaMap NcclHcaMapForNode(const topology::HostTopology& host,
                                   const std::string& topology_spec,
                                   const std::function<void(const std::string&)>& log);

}  // namespace accel::agent
