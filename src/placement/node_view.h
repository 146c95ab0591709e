// NodeView: one host NUMA node as the engine sees it under a policy and current usage: how many
// CPUs are free for pinning and in what shape (whole cores, partly held cores), its cores with
// their free threads, which CPUs run shared vCPUs, how many pages of each size are left.
// A HostState (placement/host_state.h) builds them once, with the cores stored, and rebuilds a
// node when a claim changes it; a one-shot Place() builds them without cores. Place() reads the
// counts of every node and the cores of the nodes a guest lands on. Plain data; read-only while
// the engine uses it.
#pragma once

#include <cstdint>
#include <vector>

#include "common/cpuset.h"
#include "placement/usage.h"
#include "topology/host.h"

namespace accel::placement {

/// One physical core restricted to the CPUs dedicated vCPUs may use.
struct CoreView {
  CpuSet threads;        ///< the core's CPUs that are in the dedicated set
  CpuSet free;           ///< of those, the ones nobody holds
  int thread_count = 0;  ///< |threads|, counted once
  int free_count = 0;    ///< |free|, counted once
  bool whole = false;    ///< threads non-empty and all free, decided once
  bool whole_free() const { return whole; }
  bool operator==(const CoreView&) const = default;
};

/// A page pool with what is left of it.
struct PoolView {
  uint64_t size_kib = 0;  ///< page size
  uint64_t free = 0;      ///< pages a new guest may take (total - used - reserved)
  bool operator==(const PoolView&) const = default;
};

// Counts first: the engine reads them for every node of every call, the CPU sets only for the
// nodes a guest lands on, so the counts share the first cache lines.
struct NodeView {
  int index = 0;          ///< index in HostTopology::numa_nodes
  int id = 0;             ///< OS node id
  int package = -1;       ///< package id, -1 unknown
  int threads_per_core = 1;      ///< largest configured sibling set on the node
  int free_threads = 0;          ///< dedicated CPUs nobody holds
  int whole_free_cores = 0;      ///< cores whose dedicated CPUs are all free
  int whole_free_smt_threads = 0;///< CPUs in whole free cores of 2+ dedicated threads
  int partial_free_threads = 0;  ///< free CPUs on cores that are partly held
  int shared_free = 0;           ///< shared CPUs nobody pinned
  int shared_vcpus_used = 0;     ///< floating vCPUs already charged here
  double shared_capacity = 0;    ///< |shared_cpus| x cpu_allocation_ratio
  int free_accelerators = 0;     ///< unused GPUs/HPUs local to the node
  bool dedicated_in_shared = false;  ///< every dedicated CPU is also a shared CPU
  std::vector<PoolView> pools;   ///< ascending by size; pools[0] is the base page pool
  const topology::NumaNode* node = nullptr;  ///< the topology's node (owned by the host)
  CpuSet dedicated_cpus;  ///< node CPUs in the dedicated set
  CpuSet shared_cpus;     ///< node CPUs in the shared set
  CpuSet pinned_cpus;     ///< node CPUs held by pinned guests
  /// The node's cores with at least one dedicated CPU, in topology order, with free threads;
  /// stored only when has_cores (a HostState keeps them; a one-shot view builds them on demand).
  std::vector<CoreView> cores;
  bool has_cores = false;

  /// The cores as `cores` describes them: the stored ones, or built now.
  std::vector<CoreView> Cores() const;
  /// The same without a copy: the stored cores, or *scratch filled with them.
  const std::vector<CoreView>& CoresIn(std::vector<CoreView>* scratch) const;
  /// The pool of `size_kib` pages, or nullptr when the node has none.
  const PoolView* Pool(uint64_t size_kib) const;
  bool operator==(const NodeView&) const = default;
};

/// What guests without NUMA topology may still take, host-wide.
struct FloatingRoom {
  double vcpu_capacity = 0;    ///< shared CPUs of all nodes x cpu_allocation_ratio
  int vcpus_used = 0;          ///< floating vCPUs plus shared vCPUs charged to nodes
  int64_t cpu_milli_used = 0;  ///< pod CPU thousandths of floating guests (HostUsage::floating_cpu_milli)
  uint64_t free_base_mib = 0;  ///< base-page memory left after floating guests
  bool operator==(const FloatingRoom&) const = default;
};

/// Sums the nodes' shared capacity and base pages, less what floating guests hold.
FloatingRoom FloatingRoomOf(const std::vector<NodeView>& nodes, const HostUsage& usage);

/// The host-wide CPU sets every node view is cut from.
struct HostCpuSets {
  CpuSet dedicated;  ///< the policy's dedicated set within the host (all CPUs when unset)
  CpuSet shared;     ///< the policy's shared set within the host (all CPUs when unset)
  /// CPUs any claim pins. A claim may record an emulator CPU under another node's entry, so
  /// every node looks at the union.
  CpuSet pinned;
};

/// The sets of `host` under `policy` and `usage`.
HostCpuSets HostCpuSetsOf(const topology::HostTopology& host, const HostUsage& usage,
                          const HostPolicy& policy);

/// The view of node `index` of `host`, all fields but free_accelerators (see
/// FreeAccelerators); with its cores stored when keep_cores. `sets` must be
/// HostCpuSetsOf(host, usage, policy).
NodeView BuildNodeView(const topology::HostTopology& host, size_t index, const HostCpuSets& sets,
                       const HostUsage& usage, const HostPolicy& policy, bool keep_cores);

/// Accelerators (GPUs, HPUs) local to node `index` that no claim holds.
int FreeAccelerators(const topology::HostTopology& host, const HostUsage& usage, size_t index);

/// Builds the view of every node of `host`, in numa_nodes order, without stored cores: the
/// counts a one-shot Place() or a Validate() needs.
std::vector<NodeView> BuildNodeViews(const topology::HostTopology& host, const HostUsage& usage,
                                     const HostPolicy& policy);
/// The same from sets already computed (`sets` must be HostCpuSetsOf(host, usage, policy)),
/// with every node's cores stored when keep_cores.
std::vector<NodeView> BuildNodeViews(const topology::HostTopology& host, const HostCpuSets& sets,
                                     const HostUsage& usage, const HostPolicy& policy,
                                     bool keep_cores);

}  // namespace accel::placement
