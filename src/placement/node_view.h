// NodeView: one host NUMA node as the engine sees it under a policy and current usage: how many
// CPUs are free for pinning and in what shape (whole cores, partly held cores), which CPUs run
// shared vCPUs, how many pages of each size are left. Built once per Place() call without
// allocating per core; the per-core view (Cores()) is built only for the nodes a guest lands
// on. Read-only after construction.
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
  const topology::NumaNode* node = nullptr;  ///< the topology's node (owned by the host)
  int threads_per_core = 1;     ///< largest configured sibling set on the node
  CpuSet dedicated_cpus;  ///< node CPUs in the dedicated set
  CpuSet shared_cpus;     ///< node CPUs in the shared set
  CpuSet pinned_cpus;     ///< node CPUs held by pinned guests
  int free_threads = 0;          ///< dedicated CPUs nobody holds
  int whole_free_cores = 0;      ///< cores whose dedicated CPUs are all free
  int whole_free_smt_threads = 0;///< CPUs in whole free cores of 2+ dedicated threads
  int partial_free_threads = 0;  ///< free CPUs on cores that are partly held
  int shared_free = 0;           ///< shared CPUs nobody pinned
  bool dedicated_in_shared = false;  ///< every dedicated CPU is also a shared CPU
  int shared_vcpus_used = 0;    ///< floating vCPUs already charged here
  double shared_capacity = 0;   ///< |shared_cpus| x cpu_allocation_ratio
  std::vector<PoolView> pools;  ///< ascending by size; pools[0] is the base page pool
  int free_accelerators = 0;    ///< unused GPUs/HPUs local to the node

  /// The node's cores with at least one dedicated CPU, in topology order, with free threads.
  std::vector<CoreView> Cores() const;
  const PoolView* Pool(uint64_t size_kib) const;
};

/// What guests without NUMA topology may still take, host-wide.
struct FloatingRoom {
  double vcpu_capacity = 0;    ///< shared CPUs of all nodes x cpu_allocation_ratio
  int vcpus_used = 0;          ///< floating vCPUs plus shared vCPUs charged to nodes
  uint64_t free_base_mib = 0;  ///< base-page memory left after floating guests
};

/// Sums the nodes' shared capacity and base pages, less what floating guests hold.
FloatingRoom FloatingRoomOf(const std::vector<NodeView>& nodes, const HostUsage& usage);

/// Builds the view of every node of `host`, in numa_nodes order.
std::vector<NodeView> BuildNodeViews(const topology::HostTopology& host, const HostUsage& usage,
                                     const HostPolicy& policy);

}  // namespace accel::placement
