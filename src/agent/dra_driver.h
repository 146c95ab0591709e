// DraDriver: the agent's `dra:` part — accel's DRA driver (resource.k8s.io/v1) on one node.
// It joins the dra layer's pieces over the agent's devices:
//   inventory   the node's GPUs, MIG devices and RDMA NICs with accel's rails and NVLink cliques
//               (dra/inventory.h BuildNodeInventory over the agent's dra::NodeHardware)
//   slices      published with the API client and kept current (dra/slice_publisher.h): again
//               when a device's health changes (an unhealthy device leaves the pool, so nothing
//               new is allocated on it) and every resync interval (a slice someone deleted
//               comes back)
//   claims      NodePrepareResources / NodeUnprepareResources by dra/claim_preparer.h, which
//               reads each claim from the API server and writes its CDI spec with NCCL wired
//   kubelet     registration and the DRA service (dra/plugin_server.h), with device health
//               streamed from the same health state the device plugin uses (XIDs, lost devices)
//
// Thread-safe Start/Stop (from the agent's control thread); the destructor stops.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "agent/agent_config.h"
#include "agent/agent_internal.h"
#include "dra/inventory.h"
#include "dra/node_hardware.h"
#include "kube/device_health.h"
#include "topology/host.h"

namespace accel::agent::internal {

/// What DraDriver reads besides its section; all owned by the agent and outliving the driver.
struct DraInputs {
  /// The node as dra::ReadNodeHardware read it (the same read the device plugin's NCCL_IB_HCA
  /// comes from): its devices, topology, NVLink interconnect (nvlinkClique) and the GPU↔NIC
  /// pairing (rails). Null = an empty node.
  const dra::NodeHardware* node = nullptr;
  /// Health of node->devices (same order); null = every device healthy. The driver ticks it
  /// (quiet period recoveries) each time it looks.
  kube::DeviceHealth* health = nullptr;
};

/// The node name the driver publishes under: section.node_name, else $NODE_NAME, else the
/// host's name (topology hostname, then gethostname). Lowercased.
std::string DraNodeName(const DraSection& section, const topology::HostTopology& host);

/// The inventory options `section` gives on a node of `host`: driver name, DraNodeName, VFs,
/// partitionable devices. The driver and `accel dra` both build with these.
dra::InventoryOptions DraInventoryOptions(const DraSection& section, const topology::HostTopology& host);

class DraDriver {
 public:
  DraDriver(DraSection section, DraInputs inputs, Log log);
  ~DraDriver();  ///< Stop()

  /// Builds the inventory, opens the API client (kubeconfig or in-cluster; nothing is contacted
  /// yet), publishes the ResourceSlices once (a failure is logged and retried by the resync
  /// thread: the API server may come later), then serves the kubelet sockets and starts the
  /// thread that follows health and resyncs. Throws InputError for a bad kubeconfig or no
  /// API access configured, SystemError when a socket cannot be served; nothing runs then.
  void Start();
  /// Stops serving the kubelet (registration first), stops the thread. Published slices stay
  /// (the pool is still there after an agent restart; a prepared claim's CDI spec too).
  /// Idempotent.
  void Stop();

  /// One line per published device ("gpu-0  gpu  rail 0  0000:18:00.0"), for `serve --once`.
  std::vector<std::string> DeviceLines() const;
  /// Re-checks health and publishes if anything changed (what the thread does each second);
  /// returns whether the slices were written. For tests.
  bool SyncNow();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace accel::agent::internal
