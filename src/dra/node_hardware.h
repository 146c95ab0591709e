// NodeHardware: the one reader of a node's hardware for everything that hands out its devices —
// the agent's device plugin (NCCL_IB_HCA from the GPU↔NIC pairing, preferred allocation over the
// interconnect), the agent's DRA driver (dra/inventory.h BuildNodeInventory: rails and
// nvlinkClique) and `accel dra slices|claim`. All of them call ReadNodeHardware with the same
// NodeSource, so a node's DRA rails and its device plugin's NCCL_IB_HCA come from one pairing of
// one set of RDMA ports, and the CLI prints exactly what the agent publishes.
//
// What is read, in order:
//   topology      topology::LoadTopology(source.topology) ("none" = an empty host)
//   devices       kube::DiscoverNodeDevices of the backends given, joined to the topology
//   interconnect  devices::PcieInterconnect of the physical devices, plus the NVIDIA GPUs'
//                 NVLink / NVSwitch links from NVML (devices/nvml_links.h) when source.nvlink
//   RDMA ports    fabric::ReadNicPorts(RdmaPortRoot(source)) — the rule below
//   pairing       fabric::PairGpusWithNics(host, ports, source.pairing)
//
// It lives in the dra layer, the lowest that sees devices, kube and fabric together; the agent
// and the CLI are above it. Not thread-safe with concurrent reads of the same backends (device
// discovery reads each device once); the result is plain data.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "devices/backend.h"
#include "devices/interconnect.h"
#include "fabric/nic_ports.h"
#include "fabric/pairing.h"
#include "kube/node_devices.h"
#include "topology/host.h"

namespace accel::dra {

/// Where a node's hardware is read from and how its accelerators are paired with its NICs
/// (agent::NodeSourceOf gives the agent config's; `accel dra --root` adds sysfs_root).
struct NodeSource {
  /// The topology (topology::LoadTopology's spec): "live", "sysfs:DIR" or a directory DIR (a
  /// copy of a host's sys/), an accel host JSON or hwloc XML file; "none" = no topology.
  std::string topology = "live";
  /// Where the host's /sys is seen (agent config dra.hostRoot): "/" on the host or in a
  /// privileged pod, "/host" when the host is mounted there.
  std::string host_root = "/";
  /// An explicit root for the RDMA ports (`accel dra --root`); "" = by the rule
  /// (RdmaPortRoot). Not checked here: the caller that takes it from a person checks it.
  std::string sysfs_root;
  /// A topology that cannot be read is an error (InputError, as the operator named it: the
  /// CLI) instead of a logged warning and an empty host (the agent, which must keep serving).
  bool topology_required = false;
  /// Read the NVIDIA GPUs' NVLink links through NVML (a second, short NVML session); false =
  /// the interconnect has PCIe levels only and no link is logged.
  bool nvlink = true;
  /// How GPUs are paired with NICs; the defaults are `accel fabric pairs`' defaults, so the
  /// generated job specs, the device plugin's NCCL_IB_HCA and the DRA rails agree.
  fabric::PairingOptions pairing;
};

/// The RDMA-port root rule, decided here and nowhere else: the directory ROOT whose
/// ROOT/sys/class/infiniband gives the node's RDMA port states, link layers, rates and netdevs,
/// or "" for none. The first that applies:
///   1. source.sysfs_root, when set (`accel dra --root DIR`);
///   2. DIR, when the topology is read from a sysfs copy ("sysfs:DIR", or a directory DIR):
///      the ports of the machine whose PCI tree the topology is;
///   3. source.host_root, when the topology is "live" ("/" on the host, "/host" in a pod that
///      mounts the host there);
///   4. source.host_root, when it is not "/" whatever the topology: a host root named on
///      purpose (a test's fake machine beside a topology file, a container mounting the host);
///   5. else "": a topology file (or "none") describes a machine this one may not be, so no
///      port is read here and pairing counts every RDMA port of the topology as up.
/// Pure (reads nothing); never throws.
std::string RdmaPortRoot(const NodeSource& source);

/// A node's hardware as the device plugin, the DRA driver and `accel dra` see it.
struct NodeHardware {
  /// The topology; empty when "none", or when it could not be read and was not required.
  topology::HostTopology host;
  /// Accelerators and MIG devices of the backends, NUMA nodes joined from `host`.
  std::vector<kube::NodeDevice> devices;
  /// The physical devices' interconnect (PCIe levels, NVLink links): one entry per PCI address
  /// of `devices`, in device order; empty when there are no devices.
  devices::Interconnect interconnect;
  /// RdmaPortRoot(source): where `ports` were read; "" = none read.
  std::string rdma_root;
  /// The RDMA ports under rdma_root (empty when none: every port then counts as up).
  std::vector<fabric::NicPort> ports;
  /// The GPU↔NIC pairing of `host` with `ports` (source.pairing): the DRA rails and the device
  /// plugin's NCCL_IB_HCA both come from it. Its notes say which NICs were left out and why.
  fabric::Fabric pairing;
};

/// Reads the node as described at the top of this file. `backends` are the vendor backends the
/// caller opened (devices::OpenBackends; null entries skipped; none = a node read without its
/// devices, e.g. the exporter alone). `log` (may be empty) gets one line each for a topology
/// that could not be read (when not required), the NVLink links found ("interconnect: 28
/// NVLink-connected GPU pair(s) among 8 GPU(s), through NVSwitch") and RDMA ports that could
/// not be read. Throws InputError for a required topology that cannot be read and for
/// source.pairing.gpus naming an accelerator the host lacks (fabric::PairGpusWithNics); a
/// vendor device fault is not an error (kube::DiscoverNodeDevices).
NodeHardware ReadNodeHardware(const NodeSource& source,
                              const std::vector<devices::DeviceBackend*>& backends,
                              const std::function<void(const std::string&)>& log);

}  // namespace accel::dra
