// Placement: where a PlacementRequest landed on a host, or why it could not.
//
// Produced by the engine (placement/engine.h), stored by the claim store, rendered as text, JSON,
// YAML and libvirt domain XML. Plain data; JSON form "accel.placement/v1" in placement_json.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/cpuset.h"

namespace accel::placement {

/// One guest cell on one host node.
struct CellPlacement {
  int guest_cell = 0;          ///< guest NUMA cell index (0..k-1)
  int host_node = 0;           ///< host NUMA node OS id
  std::map<int, int> pinning;  ///< dedicated vCPU -> host CPU
  CpuSet shared_vcpus;         ///< vCPUs of this cell that float over shared_cpus
  CpuSet shared_cpus;          ///< host CPUs the shared vCPUs may run on (the node's shared set)
  /// Host CPUs this cell takes out of the free pool: the pinned CPUs, plus their siblings
  /// under thread policy isolate (so no other guest lands on them).
  CpuSet consumed_cpus;
  uint64_t memory_mib = 0;     ///< memory of the cell
  uint64_t page_size_kib = 0;  ///< page size backing the cell (4 for base pages)
  uint64_t pages = 0;          ///< pages of page_size_kib taken on host_node
};

/// One PCI device handed to the guest.
struct DevicePlacement {
  std::string request_alias;   ///< the alias of the request it satisfies
  std::string address;         ///< host PCI address "dddd:bb:dd.f"
  uint16_t vendor_id = 0;
  uint16_t device_id = 0;
  int numa_node = -1;          ///< host NUMA node of the device (-1 unknown)
  int guest_cell = -1;         ///< guest cell it is local to; -1 when remote or no NUMA topology
};

/// A GPU, or a part of one, handed out for a GpuRequest (by model and size, not by alias).
struct GpuPlacement {
  std::string address;     ///< the GPU's host PCI address "dddd:bb:dd.f"
  std::string model;       ///< its model, as GpuModelOf names it (placement/gpu_fit.h)
  /// Thousandths of the GPU held: 1000 = the whole GPU, exclusive (it is also in the host's
  /// HostUsage::devices); less = a time-slicing/MPS share. For a MIG slice, its memory slices'
  /// fraction of the GPU (for accounting only; the geometry is mig_start/mig_slices).
  int milli = 1000;
  std::string mig_profile; ///< MIG profile name; "" when not a MIG slice
  int mig_start = -1;      ///< first memory slice of the GPU instance; -1 when not a MIG slice
  int mig_slices = 0;      ///< memory slices the GPU instance covers; 0 when not a MIG slice
  int numa_node = -1;      ///< host NUMA node of the GPU (-1 unknown)
  bool is_mig() const { return !mig_profile.empty(); }
  bool is_share() const { return !is_mig() && milli < 1000; }
  bool operator==(const GpuPlacement&) const = default;
};

struct Placement {
  std::string host;            ///< HostTopology::hostname
  std::string flavor;          ///< flavor name
  std::vector<CellPlacement> cells;  ///< in guest cell order; empty for a floating guest
  CpuSet emulator_cpus;        ///< host CPUs for QEMU emulator threads (isolate); empty = share
  /// Host CPUs consumed for the emulator (its CPU, plus siblings under isolate).
  CpuSet emulator_consumed_cpus;
  std::vector<DevicePlacement> devices;
  /// GPUs given for the request's GpuRequest (whole, shares or MIG slices), in GPU order.
  std::vector<GpuPlacement> gpus;
  /// For a floating guest (no NUMA topology): the vCPU count and memory charged host-wide.
  int floating_vcpus = 0;
  uint64_t floating_memory_mib = 0;
  /// Pod-shaped CPU charged host-wide, in thousandths of a CPU (PlacementRequest::cpu_milli).
  int64_t floating_cpu_milli = 0;
  /// Notes a person may want (e.g. "GPU 0000:41:00.0 is remote to guest cell 0 (policy preferred)").
  std::vector<std::string> notes;
};

/// Why a request did not fit: one line per host node or global cause, each actionable.
struct NoFit {
  std::vector<std::string> reasons;  ///< e.g. "node 1: 6 free whole cores, thread policy isolate needs 8"
};

}  // namespace accel::placement
