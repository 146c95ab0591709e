// NodeView: one host NUMA node as the engine sees it under a policy and current usage: which
// CPUs are free for pinning (grouped by core), which run shared vCPUs, how many pages of each
// size are left. Built once per Place() call; read-only afterwards.
#pragma once

#include <cstdint>
#include <vector>

#include "common/cpuset.h"
#include "placement/usage.h"
#include "topology/host.h"

namespace accel::placement {

/// One physical core restricted to the CPUs dedicated vCPUs may use.
struct CoreView {
  CpuSet threads;  ///< the core's CPUs that are in the dedicated set
  CpuSet free;     ///< of those, the ones nobody holds
  bool whole_free() const { return !threads.Empty() && free == threads; }
};

/// A page pool with what is left of it.
struct PoolView {
  uint64_t size_kib = 0;  ///< page size
  uint64_t free = 0;      ///< pages a new guest may take (total - used - reserved)
};

struct NodeView {
  int index = 0;          ///< index in HostTopology::numa_nodes
  int id = 0;             ///< OS node id
  int package = -1;       ///< package id, -1 unknown
  std::vector<CoreView> cores;  ///< cores with at least one dedicated-eligible CPU, ascending
  int threads_per_core = 1;     ///< largest configured sibling set on the node
  CpuSet dedicated_cpus;  ///< node CPUs in the dedicated set
  CpuSet shared_cpus;     ///< node CPUs in the shared set
  CpuSet pinned_cpus;     ///< node CPUs held by pinned guests
  int shared_vcpus_used = 0;    ///< floating vCPUs already charged here
  double shared_capacity = 0;   ///< |shared_cpus| x cpu_allocation_ratio
  std::vector<PoolView> pools;  ///< ascending by size; pools[0] is the base page pool
  int free_accelerators = 0;    ///< unused GPUs/HPUs local to the node
  bool untouched = true;        ///< nothing is held on this node

  int FreeThreads() const;
  int WholeFreeCores() const;
  const PoolView* Pool(uint64_t size_kib) const;
};

/// Builds the view of every node of `host`, in numa_nodes order.
std::vector<NodeView> BuildNodeViews(const topology::HostTopology& host, const HostUsage& usage,
                                     const HostPolicy& policy);

}  // namespace accel::placement
