// A small but complete HostTopology for tests: 2 packages, 2 NUMA nodes with SMT, hugepages,
// distances, and a PCI tree with a PCIe switch, a GPU, an RDMA NIC (SR-IOV PF with a VF) and
// an NVMe drive. Every optional field of the JSON schema is set somewhere.
#pragma once

#include <string>

#include "topology/host.h"

namespace accel::topology {

/// Tests compare pools as values; the model itself needs no operator==.
inline bool operator==(const HugepagePool& a, const HugepagePool& b) {
  return a.size_kib == b.size_kib && a.total == b.total && a.free == b.free;
}

}  // namespace accel::topology

namespace accel::topology::testing {

inline PciDevice Pci(const std::string& address, const std::string& parent, PciRole role,
                     uint16_t vendor = 0, uint16_t device = 0, uint16_t cls = 0, int node = -1) {
  PciDevice d;
  d.address = address;
  d.parent = parent;
  d.role = role;
  d.vendor_id = vendor;
  d.device_id = device;
  d.class_id = cls;
  d.numa_node = node;
  return d;
}

inline HostTopology SampleHost() {
  HostTopology h;
  h.hostname = "sample-1";
  h.source = "test: sample host \"quoted\"";
  h.packages = {{0, CpuSet{0, 1, 2, 3}, "Intel(R) Xeon(R) Platinum 8480+"},
                {1, CpuSet{4, 5, 6, 7}, ""}};
  NumaNode n0;
  n0.id = 0;
  n0.package = 0;
  n0.cpus = CpuSet{0, 1, 2, 3};
  n0.cores = {CpuSet{0, 2}, CpuSet{1, 3}};
  n0.memory_kib = 16 * 1048576;
  n0.pages = {{4, 3670016, 3000000}, {2048, 512, 100}, {1048576, 2, 2}};
  n0.distances = {10, 21};
  NumaNode n1 = n0;
  n1.id = 1;
  n1.package = 1;
  n1.cpus = CpuSet{4, 5, 6, 7};
  n1.cores = {CpuSet{4, 6}, CpuSet{5, 7}};
  n1.pages = {{4, 4194304, 4194304}};
  n1.distances = {21, 10};
  h.numa_nodes = {n0, n1};

  h.pci.push_back(Pci("pci0000:15", "", PciRole::kHostBridge));
  PciDevice port = Pci("0000:15:01.0", "pci0000:15", PciRole::kBridge, 0x8086, 0x352a, 0x0604, 0);
  port.link_gbps = 63.015;
  h.pci.push_back(port);
  PciDevice gpu = Pci("0000:18:00.0", "0000:15:01.0", PciRole::kGpu, 0x10de, 0x2330, 0x0302, 0);
  gpu.link_gbps = 31.5;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.os_devices = {"nvml0", "card1"};
  h.pci.push_back(gpu);
  PciDevice nic = Pci("0000:19:00.0", "0000:15:01.0", PciRole::kNic, 0x15b3, 0x1021, 0x0207, 0);
  nic.link_gbps = 0.1;
  nic.name = "MT2910 Family [ConnectX-7]";
  nic.rdma_devices = {"mlx5_0"};
  nic.netdevs = {"ibp25s0"};
  nic.sriov_total_vfs = 16;
  nic.sriov_num_vfs = 1;
  h.pci.push_back(nic);
  PciDevice vf = Pci("0000:19:00.1", "0000:15:01.0", PciRole::kNic, 0x15b3, 0x101e, 0x0207, 0);
  vf.physfn = "0000:19:00.0";
  vf.netdevs = {"ibp25s0v0"};
  h.pci.push_back(vf);
  h.pci.push_back(Pci("pci0000:80", "", PciRole::kHostBridge));
  PciDevice nvme = Pci("0000:80:02.0", "pci0000:80", PciRole::kStorage, 0x144d, 0xa80a, 0x0108);
  h.pci.push_back(nvme);
  return h;
}

}  // namespace accel::topology::testing
