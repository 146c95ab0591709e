// HostState: one host prepared for many placements. It holds the node views of (host, usage,
// policy) -- free whole cores, free threads, pages left per size, shared load, free accelerators
// per node, and each node's cores with their free threads -- built once and kept in step with
// claims by Apply/Release, so Place(state, request) (placement/engine.h) only compares counts
// per node and materializes CPU sets for the nodes a guest lands on.
//
// Copyable: a copy is an independent state on the same topology (cheaper than building one;
// fleet capacity fills one copy per flavor).
//
// It refers to the HostTopology it was built from, which must outlive it. Not synchronized:
// Place() on a const state may run from many threads at once; Apply/Release need exclusive use.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "placement/node_view.h"
#include "placement/placement.h"
#include "placement/usage.h"
#include "topology/host.h"

namespace accel::placement {

class HostState {
 public:
  /// Views `host` (kept by reference) as `usage` and `policy` leave it.
  HostState(const topology::HostTopology& host, HostUsage usage, HostPolicy policy);

  /// Adds what `p` holds, as HostUsage::Apply does, and updates the views of the nodes it
  /// touches (of their cores, only those holding a CPU of `p`), leaving the state equal to one
  /// built from scratch on the new usage. Returns "" on success; on a double booking returns
  /// the reason and changes nothing. Cost: the nodes `p` touches, not the host.
  std::string Apply(const Placement& p);
  /// Removes what `p` holds (the caller guarantees it was applied) and updates the views of
  /// the nodes it touches, as Apply does.
  void Release(const Placement& p);

  const topology::HostTopology& host() const { return *host_; }
  const HostUsage& usage() const { return usage_; }
  const HostPolicy& policy() const { return policy_; }
  /// One view per host node, in HostTopology::numa_nodes order.
  const std::vector<NodeView>& nodes() const { return nodes_; }
  /// Room left for guests without NUMA topology.
  const FloatingRoom& floating_room() const { return room_; }

 private:
  // Brings the views in step with usage_ after `p` was applied (applied) or released.
  void Refresh(const Placement& p, bool applied);
  // Recomputes *v's pinned set, the stored cores holding a CPU of `changed`, and the counts.
  void UpdatePinned(NodeView* v, const CpuSet& changed) const;
  // Recomputes *v's (node `index`) shared vCPUs and free pages from usage_.
  void UpdateLoad(NodeView* v, size_t index) const;

  const topology::HostTopology* host_;
  HostUsage usage_;
  HostPolicy policy_;
  HostCpuSets sets_;
  std::vector<NodeView> nodes_;
  FloatingRoom room_;
  /// Per node, its page pools with what an unused host leaves free (after the policy's
  /// reservation): the base Apply/Release subtract the pages held from.
  std::vector<std::vector<PoolView>> pool_room_;
  /// The host's accelerators of a known node: address (the topology's string) and node index,
  /// so Apply finds a claim's GPUs among a few entries instead of every PCI function.
  std::vector<std::pair<std::string_view, int>> accelerators_;
};

}  // namespace accel::placement
