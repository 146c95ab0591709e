// GuestLayout: what a VM of a flavor looks like from inside — the NUMA cells the guest kernel
// sees, their vCPUs and SMT siblings, their memory and what backs it on the host, and which
// passed-through device sits behind which guest cell.
//
// It is what the kubelet inside a node-group VM manages, so every kubelet choice accel makes
// (kubelet/derive.h) is derived from it. Facts it encodes, with their source:
//   - guest cells are the flavor's hw:numa_nodes cells renumbered 0..k-1, each with the vCPUs and
//     memory the flavor gives it (placement/request.h);
//   - the guest's CPU topology is Nova's get_best_cpu_topology for the flavor
//     (placement/flavor_cpu_topology.h), and libvirt numbers vCPUs socket-major, core, then
//     thread: with threads = 2, vCPUs 2c and 2c+1 are SMT siblings of guest core c;
//   - a device has a guest NUMA node only because accel's libvirt XML puts it behind a pxb-pcie
//     expander of its guest cell (placement/libvirt_pci_layout.h); in a plain Nova guest
//     passed-through devices have no guest NUMA node (shared/reference/nova-numa.md §5), which
//     `device_cell_source` records.
//
// Plain data; GuestLayoutOf is a pure function (thread-safe).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/cpuset.h"
#include "placement/placement.h"
#include "placement/request.h"
#include "topology/host.h"

namespace accel::kubelet {

/// One guest NUMA cell as the guest kernel sees it.
struct GuestCellLayout {
  int cell = 0;                 ///< guest NUMA node id, 0..k-1
  CpuSet vcpus;                 ///< guest CPU ids of the cell (dedicated and shared)
  CpuSet dedicated_vcpus;       ///< pinned 1:1 to host CPUs
  CpuSet shared_vcpus;          ///< floating over the host node's shared (housekeeping) CPUs
  uint64_t memory_mib = 0;      ///< guest RAM of the cell
  /// Host page size backing the cell's RAM, KiB (4 = base pages, 2048, 1048576). The guest's own
  /// hugepage pools are carved out of its RAM inside the guest; a 1 GiB-backed cell can hold
  /// 1 GiB guest pages without splitting host pages.
  uint64_t host_page_kib = 4;
  int host_node = -1;           ///< host NUMA node the cell is placed on (-1: not placed)
};

/// One passed-through device as the guest sees it.
struct GuestDevice {
  std::string alias;            ///< the flavor's PCI alias it satisfies
  std::string host_address;     ///< host PCI address "dddd:bb:dd.f"
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  topology::PciRole role = topology::PciRole::kOther;  ///< gpu, hpu, nic, ...
  bool rdma = false;            ///< the host device has RDMA (an RDMA NIC or its VF)
  /// Guest NUMA node the device reports (-1: none — remote to every cell, or no guest NUMA).
  int guest_cell = -1;
};

/// Where the devices' guest NUMA nodes come from.
enum class DeviceCellSource {
  kExpanderBus,  ///< accel's libvirt XML: a pxb-pcie expander per guest cell
  kNone,         ///< plain Nova XML: passed-through devices have no guest NUMA node
};

struct GuestLayout {
  std::string flavor;           ///< flavor name
  std::string host;             ///< hypervisor the layout was placed on ("" when not placed)
  int vcpus = 0;                ///< guest CPUs in all
  int sockets = 1;              ///< guest CPU topology (Nova's choice for the flavor)
  int cores_per_socket = 1;
  int threads_per_core = 1;     ///< > 1: the guest sees SMT siblings (vCPUs 2c, 2c+1 when 2)
  /// Guest cells; empty when the flavor has no NUMA topology: the guest then sees one node 0
  /// with every vCPU and all memory (cells_or_one() gives that view).
  std::vector<GuestCellLayout> cells;
  uint64_t memory_mib = 0;      ///< guest RAM in all
  std::vector<GuestDevice> devices;
  DeviceCellSource device_cells = DeviceCellSource::kExpanderBus;

  /// The guest's NUMA nodes as its kernel sees them: `cells`, or one node 0 holding everything.
  std::vector<GuestCellLayout> cells_or_one() const;
  /// The guest CPUs of guest core `core` (its SMT siblings), in vCPU order.
  CpuSet CoreVcpus(int core) const;
  /// Guest core of a vCPU.
  int CoreOf(int vcpu) const { return vcpu / threads_per_core; }
};

/// The layout of `request` as placed by `placement` on `host` (the engine's answer for that
/// flavor), with device guest cells as `source` gives them. Throws InputError when the
/// placement does not belong to the request (cell counts differ) — a caller's mix-up.
GuestLayout GuestLayoutOf(const placement::PlacementRequest& request, const placement::Placement& placement,
                          const topology::HostTopology& host,
                          DeviceCellSource source = DeviceCellSource::kExpanderBus);

}  // namespace accel::kubelet
