// HostTopology: the one model of a machine that every accel layer reads.
//
// It holds packages, NUMA nodes (CPUs, SMT sibling sets, memory, hugepage pools, distances) and
// the PCI tree with accelerators and NICs classified. It is built by a source (the live host via
// hwloc + sysfs, an hwloc XML export, or accel's JSON; see topology/sources.h) and is plain data:
// readers may share a const HostTopology across threads; writers need their own copy.
//
// The JSON form ("accel.host/v1", topology/host_json.h) maps each struct below field by field and
// round-trips exactly; docs/schemas.md documents it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/cpuset.h"

namespace accel::topology {

/// One pool of memory pages of one size on one NUMA node.
struct HugepagePool {
  uint64_t size_kib = 0;  ///< page size in KiB: 4 (base pages), 2048, 1048576, ...
  uint64_t total = 0;     ///< pages of this size the node has (for base pages: memory not in hugepages)
  uint64_t free = 0;      ///< pages free when the source was read; == total when the source cannot tell
};

/// A NUMA node: CPUs and memory that are local to each other.
struct NumaNode {
  int id = 0;            ///< OS node number (as in /sys/devices/system/node/nodeN); may have gaps
  int package = -1;      ///< id of the package holding all its CPUs; -1 when none or several
  CpuSet cpus;           ///< PU OS indexes local to this node; may be empty (memory-only node)
  std::vector<CpuSet> cores;  ///< SMT sibling sets, one per physical core, ordered by first CPU
  uint64_t memory_kib = 0;    ///< local memory, including memory held in hugepages
  std::vector<HugepagePool> pages;  ///< ascending by size_kib; first is the base page pool
  std::vector<int> distances;  ///< SLIT row (10 = local), indexed like HostTopology::numa_nodes;
                               ///< empty when unknown
};

/// A processor package (socket).
struct Package {
  int id = 0;          ///< OS package id (physical_package_id)
  CpuSet cpus;         ///< all PUs of the package
  std::string model;   ///< CPU model name, e.g. "Intel(R) Xeon(R) Platinum 8480+"; may be empty
};

/// What a PCI object is, as accel's layers care about it.
enum class PciRole {
  kHostBridge,  ///< a root complex; address is the Linux root bus name "pci0000:40"
  kBridge,      ///< a PCI-to-PCI bridge: root port, or a PCIe switch upstream/downstream port
  kGpu,         ///< NVIDIA or AMD GPU / data-center accelerator (class 03xx, or 12xx for AMD)
  kHpu,         ///< Intel Gaudi (Habana Labs) HPU
  kNvSwitch,    ///< NVIDIA NVSwitch (class 0680)
  kNic,         ///< network controller (class 02xx)
  kStorage,     ///< mass storage controller (class 01xx), e.g. NVMe
  kOther,       ///< anything else
};

/// Stable lower-case names used in JSON and text output: "host_bridge", "bridge", "gpu", "hpu",
/// "nvswitch", "nic", "storage", "other".
const char* PciRoleName(PciRole role);
/// Inverse of PciRoleName; returns std::nullopt for an unknown name.
std::optional<PciRole> ParsePciRole(const std::string& name);

/// One PCI function, bridge or host bridge in the PCI tree.
struct PciDevice {
  std::string address;   ///< "dddd:bb:dd.f" (lower-case hex); host bridges: "pciDDDD:BB"
  std::string parent;    ///< address of the upstream bridge or host bridge; "" for host bridges
  PciRole role = PciRole::kOther;
  uint16_t vendor_id = 0;    ///< PCI vendor, e.g. 0x10de NVIDIA, 0x1002 AMD, 0x1da3 Habana, 0x15b3 Mellanox
  uint16_t device_id = 0;    ///< PCI device id
  uint16_t class_id = 0;     ///< base class << 8 | subclass, e.g. 0x0302 3D controller
  int numa_node = -1;        ///< OS id of the local NUMA node; -1 when unknown
  double link_gbps = 0;      ///< PCIe link bandwidth in GB/s as hwloc reports it (Gen4 x16 ~ 31.5); 0 unknown
  std::string name;          ///< human-readable device name; may be empty
  std::vector<std::string> rdma_devices;  ///< RDMA (OpenFabrics) devices, e.g. "mlx5_0"
  std::vector<std::string> netdevs;       ///< network interfaces, e.g. "ibp24s0", "ens1f0"
  std::vector<std::string> os_devices;    ///< other OS devices: "nvml0", "card1", "accel0", ...
  int sriov_total_vfs = 0;   ///< > 0 for an SR-IOV physical function (VFs it can create)
  int sriov_num_vfs = 0;     ///< VFs currently enabled on a PF
  std::string physfn;        ///< for an SR-IOV virtual function: its PF's address; "" otherwise

  bool is_accelerator() const {
    return role == PciRole::kGpu || role == PciRole::kHpu;
  }
  bool is_rdma() const { return !rdma_devices.empty(); }
  bool is_vf() const { return !physfn.empty(); }
};

/// A whole machine.
struct HostTopology {
  std::string hostname;  ///< host name; also the key under which claims are stored
  std::string source;    ///< where it was read from, e.g. "live", "hwloc-xml:FILE"; informational
  std::vector<Package> packages;     ///< ascending by id
  std::vector<NumaNode> numa_nodes;  ///< ascending by id
  std::vector<PciDevice> pci;        ///< tree order: every parent before its children

  /// Index into numa_nodes of the node with OS id `id`, or -1.
  int NodeIndex(int id) const;
  /// The PCI object at `address`, or nullptr.
  const PciDevice* FindPci(const std::string& address) const;
  /// All CPUs of all nodes.
  CpuSet AllCpus() const;
};

/// PCI trees deeper than this are not real machines; sources refuse them.
inline constexpr int kMaxPciDepth = 64;

/// True for a PCI function address as Linux writes it: "dddd:bb:dd.f" in lower-case hex, the
/// domain 4-8 digits (VMD domains have 5), device <= 1f, function <= 7.
bool IsPciFunctionAddress(std::string_view s);

/// True for a Linux PCI root bus name, the address of a host bridge: "pciDDDD:BB".
bool IsPciRootBusName(std::string_view s);

/// The vendor of an accelerator as its vendor stack names it: "nvidia", "amd", "habana", or "".
std::string AcceleratorVendor(const PciDevice& dev);

/// Checks the invariants every source must produce (ids unique, a CPU in one node only,
/// sibling sets partition node CPUs, pools ascending, distances square, PCI parents exist
/// and precede children, addresses well formed). Returns "" when valid, else the first
/// violation as a sentence naming the node/device and field.
std::string CheckInvariants(const HostTopology& host);

}  // namespace accel::topology
