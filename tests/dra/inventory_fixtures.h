// Inventories of the repository's fake nodes for the DRA tests: node devices from the fake
// vendor libraries (tests/kube/kube_fixtures.h), the host fixtures' PCI trees, and RDMA ports
// made from the tree by hand (as ReadNicPorts would report them on that machine), so no fake
// sysfs has to be written. Header only.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "common/strings.h"
#include "dra/inventory.h"
#include "kube/kube_fixtures.h"

namespace accel::dra::testing {

/// One ACTIVE port per RDMA device of `host`: link layer Ethernet for "ens*"/"enp*"/"eth*"
/// netdevs, InfiniBand otherwise; VFs carry their PF's address.
inline std::vector<fabric::NicPort> PortsOf(const topology::HostTopology& host) {
  std::vector<fabric::NicPort> out;
  for (const topology::PciDevice& d : host.pci) {
    for (size_t k = 0; k < d.rdma_devices.size(); ++k) {
      fabric::NicPort p;
      p.rdma_device = d.rdma_devices[k];
      p.port = 1;
      p.pci_address = d.address;
      p.state = "ACTIVE";
      p.phys_state = "LinkUp";
      p.netdev = k < d.netdevs.size() ? d.netdevs[k] : "";
      const bool eth = p.netdev.rfind("en", 0) == 0 || p.netdev.rfind("eth", 0) == 0;
      p.link_layer = eth ? "Ethernet" : "InfiniBand";
      p.rate_gbps = 400;
      p.physfn = d.physfn;
      out.push_back(p);
    }
  }
  std::sort(out.begin(), out.end(), [](const fabric::NicPort& a, const fabric::NicPort& b) {
    return NaturalLess(a.rdma_device, b.rdma_device);
  });
  return out;
}

inline InventoryOptions Options(const std::string& node = "node-a") {
  InventoryOptions o;
  o.node_name = node;
  return o;
}

/// The fake HGX H100 (8 GPUs, 12 RDMA ports of which 8 are the GPUs' rails), with the node
/// devices of a fake NVML config ("nvml/examples/h100x8-mig.json": GPUs 4-7 in MIG mode).
inline Inventory Hgx(const std::string& nvml = "nvml/examples/h100x8-mig.json",
                     bool whole_only = false) {
  topology::HostTopology host = kube::testing::Host("hgx-h100");
  std::vector<kube::NodeDevice> devs = kube::testing::NvmlDevices(nvml);
  if (whole_only) devs = kube::testing::WholeGpusOf(devs);
  return BuildInventory(devs, host, PortsOf(host), Options());
}

inline Inventory Amd() {
  topology::HostTopology host = kube::testing::Host("epyc-nps4-mi300x");
  return BuildInventory(kube::testing::AmdDevices(), host, PortsOf(host), Options());
}

inline Inventory Gaudi() {
  topology::HostTopology host = kube::testing::Host("gaudi2-8hpu");
  return BuildInventory(kube::testing::GaudiDevices(), host, PortsOf(host), Options());
}

/// Whole H100s at the accelerator addresses of `host` (for hosts no fake config matches).
inline std::vector<kube::NodeDevice> GpusAt(const topology::HostTopology& host) {
  std::vector<kube::NodeDevice> out;
  for (const topology::PciDevice& d : host.pci) {
    if (!d.is_accelerator()) continue;
    kube::NodeDevice g = kube::testing::Gpu(static_cast<unsigned>(out.size()));
    g.pci_address = d.address;
    g.numa_node = d.numa_node;
    out.push_back(g);
  }
  return out;
}

inline Inventory VmGuest() {
  topology::HostTopology host = kube::testing::Host("vm-guest-h100x8");
  return BuildInventory(GpusAt(host), host, PortsOf(host), Options());
}

/// The HGX with every GPU in MIG mode holding seven 1g.10gb devices, and `vfs` SR-IOV VFs on
/// each of the eight rail NICs: 8 + 56 accelerator devices, 12 + 8·vfs NIC devices.
inline Inventory BigHgx(int vfs = 16) {
  topology::HostTopology host = kube::testing::Host("hgx-h100");
  std::vector<topology::PciDevice> added;
  int next = 100;
  for (const topology::PciDevice& pf : host.pci) {
    if (pf.rdma_devices.empty() || pf.netdevs.empty() || pf.netdevs[0].rfind("ib", 0) != 0) continue;
    const std::string bus = pf.address.substr(0, 8);  // "0000:18:"
    for (int k = 0; k < vfs; ++k) {
      topology::PciDevice vf = pf;
      char tail[16];
      std::snprintf(tail, sizeof tail, "%02x.%d", (k + 1) / 8, (k + 1) % 8);
      vf.address = bus + tail;
      vf.rdma_devices = {"mlx5_" + std::to_string(next++)};
      vf.netdevs = {pf.netdevs[0] + "v" + std::to_string(k)};
      vf.physfn = pf.address;
      vf.sriov_total_vfs = vf.sriov_num_vfs = 0;
      added.push_back(vf);
    }
  }
  for (auto& d : added) host.pci.push_back(d);
  std::vector<kube::NodeDevice> devs;
  for (const kube::NodeDevice& g0 : GpusAt(host)) {
    kube::NodeDevice g = g0;
    g.mig_enabled = true;
    devs.push_back(g);
    for (unsigned k = 0; k < 7; ++k) {
      kube::NodeDevice m = kube::testing::Mig(g, k, 9 + k, "1g.10gb");
      m.id = "MIG-" + std::to_string(g.index) + "-" + std::to_string(k);
      devs.push_back(m);
    }
  }
  return BuildInventory(devs, host, PortsOf(host), Options());
}

}  // namespace accel::dra::testing
