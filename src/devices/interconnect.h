// Interconnect: how each pair of a node's accelerators reaches the other — NVLink (direct or
// through NVSwitch) and the PCIe path (same board, one switch, several switches, one host
// bridge, one NUMA node, across sockets) — scored as go-gpuallocator scores it, so "best
// interconnect" means the same thing to accel and to operators who know NVIDIA's plugin.
//
// Built once per node from the shared topology model (PCIe tree) and the vendor library (link
// counts); immutable afterwards and safe to read from any thread.
#pragma once

#include <string>
#include <vector>

#include "topology/host.h"

namespace accel::devices {

/// The closest common point of two devices on the PCIe tree. Values are go-gpuallocator's
/// points for that level.
enum class PcieLink : int {
  kCrossSocket = 10,   ///< different NUMA nodes / sockets (nvidia-smi SYS)
  kSameNuma = 20,      ///< same NUMA node, different host bridges (NODE)
  kHostBridge = 30,    ///< same host bridge / root complex (PHB)
  kMultiSwitch = 40,   ///< below one PCIe switch hierarchy, several switches apart (PXB)
  kSingleSwitch = 50,  ///< behind the same PCIe switch (PIX)
  kSameBoard = 60,     ///< same board (multi-GPU card)
};

/// One direct link of a device, as the vendor library reports it.
struct PeerLink {
  /// Canonical PCI address of the far end ("0000:18:00.0"); for NVSwitch ports the switch.
  std::string remote_pci_address;
  /// The far end is an NVSwitch (so the device reaches every GPU on the same switch fabric).
  bool remote_is_switch = false;
};

/// The pairwise interconnect of n devices (n ≤ 64).
struct Interconnect {
  /// Canonical PCI addresses, in the order the matrices use.
  std::vector<std::string> devices;
  /// n×n, row-major: PCIe level between i and j (diagonal unused).
  std::vector<PcieLink> pcie;
  /// n×n: NVLink (AMD XGMI) links between i and j; through NVSwitch, the smaller of the two
  /// devices' switch-link counts. Symmetric.
  std::vector<int> links;
  /// Any device reaches its peers through NVSwitch.
  bool nvswitch = false;

  size_t size() const { return devices.size(); }
  /// go-gpuallocator's pair score: 100 × links + PCIe points. Symmetric; 0 on the diagonal.
  int PairScore(size_t i, size_t j) const;
};

/// The PCIe part from the topology model's PCI tree (parents, NUMA nodes); `addresses` are
/// canonical PCI addresses of devices in `host` (other spellings are canonicalised). Levels:
/// functions of one PCI device (same bus:device) → kSameBoard; lowest common ancestor a
/// bridge with both devices at most two levels below it (upstream port → downstream port →
/// device) → kSingleSwitch; a common bridge further up → kMultiSwitch; a common host bridge →
/// kHostBridge; else by NUMA node (the device's own, or its nearest ancestor's): same →
/// kSameNuma, different → kCrossSocket (both unknown on a host of ≤ 1 node → kSameNuma).
/// A device missing from the tree gets kCrossSocket to everything (never an error:
/// allocation must still work). The diagonal is kCrossSocket; `links` is all zero.
Interconnect PcieInterconnect(const topology::HostTopology& host,
                              const std::vector<std::string>& addresses);

/// Adds link counts from each device's PeerLink list (same order as interconnect.devices):
/// direct GPU↔GPU links are counted per pair; links to NVSwitches make every pair of
/// switch-attached devices linked with min(switch links of i, of j). Asymmetric reports are
/// symmetrised with the minimum, never rejected.
void AddPeerLinks(Interconnect& interconnect, const std::vector<std::vector<PeerLink>>& links);

}  // namespace accel::devices
