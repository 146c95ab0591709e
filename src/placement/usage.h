// HostUsage: what existing placements hold on a host, and HostPolicy: how the operator lets
// guests use it. Together with a HostTopology they are the engine's whole view of a host.
//
// HostUsage is the sum of live claims (fleet/fleet_store.h); Apply/Release keep it in step
// with one placement. Plain data, not synchronized.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/cpuset.h"
#include "placement/placement.h"
#include "topology/host.h"

namespace accel::placement {

/// Whether to fill NUMA nodes one at a time or keep them evenly used.
enum class Strategy { kPack, kSpread };

/// Operator configuration of a compute host (Nova's [compute] options, in accel's words).
struct HostPolicy {
  /// CPUs dedicated (pinned) vCPUs may use; unset = every CPU of the host.
  std::optional<CpuSet> cpu_dedicated_set;
  /// CPUs shared (floating) vCPUs run on; unset = every CPU of the host.
  std::optional<CpuSet> cpu_shared_set;
  double cpu_allocation_ratio = 4.0;  ///< overcommit for shared vCPUs per node's shared CPUs
  /// MiB of base-page memory per NUMA node kept for the host OS and QEMU overhead.
  uint64_t reserved_host_memory_mib_per_node = 0;
  Strategy strategy = Strategy::kPack;  ///< pack (default) or spread across nodes
};

/// Resources held on one host NUMA node.
struct NodeUsage {
  CpuSet pinned_cpus;   ///< host CPUs consumed by dedicated vCPUs and emulator threads
  int shared_vcpus = 0; ///< floating vCPUs charged to this node
  std::map<uint64_t, uint64_t> pages_used;  ///< page size KiB -> pages held
};

/// What shares or MIG slices hold of one GPU. A GPU with an entry is also in HostUsage::devices,
/// so nothing takes it whole; it holds either time-slicing/MPS shares or MIG slices, never both.
struct SharedGpu {
  int milli = 0;          ///< thousandths held by shares (0..1000), or by MIG slices' memory
  uint32_t mig_slices = 0;  ///< bit i: memory slice i is in a MIG GPU instance; 0 = no MIG
  int holders = 0;        ///< placements holding a part of it (the entry goes with the last)
};

struct HostUsage {
  std::map<int, NodeUsage> nodes;      ///< by host NUMA node OS id
  std::set<std::string> devices;       ///< PCI addresses handed to guests, wholly or in part
  std::map<std::string, SharedGpu> shared_gpus;  ///< GPUs held in part, by PCI address
  int floating_vcpus = 0;              ///< vCPUs of guests without NUMA topology
  uint64_t floating_memory_mib = 0;    ///< memory of guests without NUMA topology
  int64_t floating_cpu_milli = 0;      ///< pod-shaped CPU (thousandths) of guests without NUMA topology

  /// Adds what `p` holds. Returns "" on success; if any CPU, page or device is already held
  /// (a double booking) — a whole GPU already held in any way, shares (or MIG slices) above 1000
  /// thousandths on one GPU, shares beside MIG slices, overlapping MIG slices — returns the
  /// reason and leaves usage unchanged.
  std::string Apply(const Placement& p);
  /// Removes what `p` holds; the caller guarantees `p` was applied before.
  void Release(const Placement& p);
};

}  // namespace accel::placement
