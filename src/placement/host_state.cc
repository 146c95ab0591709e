#include "placement/host_state.h"

#include <algorithm>
#include <utility>

#include "common/small_vector.h"

namespace accel::placement {

HostState::HostState(const topology::HostTopology& host, HostUsage usage, HostPolicy policy)
    : host_(&host), usage_(std::move(usage)), policy_(std::move(policy)) {
  sets_ = HostCpuSetsOf(host, usage_, policy_);
  nodes_ = BuildNodeViews(host, sets_, usage_, policy_, /*keep_cores=*/true);
  room_ = FloatingRoomOf(nodes_, usage_);
  for (const topology::PciDevice& d : host.pci)
    if (int i = host.NodeIndex(d.numa_node); d.is_accelerator() && i >= 0) accelerators_.emplace_back(d.address, i);
  // Each node's pools as an unused host has them (the policy's reservation applied): free + held,
  // unless a pool is overbooked (0 free, pages held), where only a view of the unused node says.
  pool_room_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    auto it = usage_.nodes.find(nodes_[i].id);
    const NodeUsage* used = it == usage_.nodes.end() ? nullptr : &it->second;
    bool overbooked = false;
    for (const PoolView& pool : nodes_[i].pools) {
      uint64_t taken = 0;
      if (used) {
        auto page = used->pages_used.find(pool.size_kib);
        if (page != used->pages_used.end()) taken = page->second;
      }
      overbooked = overbooked || (pool.free == 0 && taken > 0);
      pool_room_[i].push_back({pool.size_kib, pool.free + taken});
    }
    if (overbooked) {
      const HostUsage unused;
      pool_room_[i] =
          BuildNodeView(host, i, HostCpuSetsOf(host, unused, policy_), unused, policy_, /*keep_cores=*/false).pools;
    }
  }
}

std::string HostState::Apply(const Placement& p) {
  if (std::string err = usage_.Apply(p); !err.empty()) return err;
  Refresh(p, /*applied=*/true);
  return "";
}

void HostState::Release(const Placement& p) {
  usage_.Release(p);
  Refresh(p, /*applied=*/false);
}

// Only what `p` changed is recomputed, so a claim costs the nodes it touches, not the host:
// - a node's pinned set, its cores holding a changed CPU, and its counts (summed from the stored
//   cores) when it holds a CPU whose pinned state changed (pinned CPUs count wherever a claim
//   recorded them, so the changed CPUs are taken from the host-wide pinned set before and after);
// - its shared load and pages when a cell of `p` sits on it;
// - its free accelerators when it holds one of `p`'s devices.
// What depends on the policy alone (dedicated and shared sets, shared capacity, SMT width) never
// changes. The result equals a HostState built from scratch on the new usage
// (tests/placement/host_state_test.cc checks every field on random claim/release sequences).
void HostState::Refresh(const Placement& p, bool applied) {
  CpuSet pinned;
  for (const auto& [id, n] : usage_.nodes) pinned = pinned.Union(n.pinned_cpus);
  const CpuSet changed = pinned.Minus(sets_.pinned).Union(sets_.pinned.Minus(pinned));
  sets_.pinned = std::move(pinned);

  const size_t n = nodes_.size();
  SmallVector<char, 64> has_cell(n, 0), recount_devices(n, 0);
  SmallVector<int, 64> device_delta(n, 0);
  for (const CellPlacement& c : p.cells)
    if (int i = host_->NodeIndex(c.host_node); i >= 0) has_cell[i] = 1;
  for (const DevicePlacement& d : p.devices) {
    auto acc = std::find_if(accelerators_.begin(), accelerators_.end(),
                            [&](const auto& a) { return a.first == d.address; });
    if (acc == accelerators_.end()) continue;  // not an accelerator, or of no known node
    // Apply succeeded, so each of p's devices went from free to used exactly once. A release
    // trusts its caller, so the node is counted again rather than assumed.
    if (applied) --device_delta[acc->second];
    else recount_devices[acc->second] = 1;
  }
  // GPUs by model and size: a share or MIG slice takes a GPU out of the free ones only when it
  // is the first part held, and gives it back only with the last, so their nodes are counted.
  for (const GpuPlacement& g : p.gpus) {
    auto acc = std::find_if(accelerators_.begin(), accelerators_.end(),
                            [&](const auto& a) { return a.first == g.address; });
    if (acc != accelerators_.end()) recount_devices[acc->second] = 1;
  }
  const bool cpus_changed = !changed.Empty();
  for (size_t i = 0; i < n; ++i) {
    NodeView& v = nodes_[i];
    if (cpus_changed && v.node->cpus.Intersects(changed)) UpdatePinned(&v, changed);
    if (has_cell[i]) UpdateLoad(&v, i);
    if (recount_devices[i]) v.free_accelerators = FreeAccelerators(*host_, usage_, i);
    else v.free_accelerators += device_delta[i];
  }
  room_ = FloatingRoomOf(nodes_, usage_);
}

// As BuildNodeView (placement/node_view.cc) computes them, from the stored cores.
void HostState::UpdatePinned(NodeView* v, const CpuSet& changed) const {
  v->pinned_cpus = v->node->cpus.Intersect(sets_.pinned);
  v->free_threads = v->whole_free_cores = v->whole_free_smt_threads = v->partial_free_threads = 0;
  for (CoreView& core : v->cores) {
    if (core.threads.Intersects(changed)) {
      core.free = core.threads.Minus(v->pinned_cpus);
      core.free_count = core.free.Count();
      core.whole = core.free_count == core.thread_count;
    }
    v->free_threads += core.free_count;
    if (core.whole) {
      ++v->whole_free_cores;
      if (core.thread_count >= 2) v->whole_free_smt_threads += core.thread_count;
    } else {
      v->partial_free_threads += core.free_count;
    }
  }
  v->shared_free = v->shared_cpus.Count() - v->shared_cpus.CountIntersect(v->pinned_cpus);
}

// The shared vCPUs charged to node `index` and its pages left, as BuildNodeView computes them:
// a pool's free pages are what an unused host leaves (pool_room_) less the pages held.
void HostState::UpdateLoad(NodeView* v, size_t index) const {
  auto it = usage_.nodes.find(v->id);
  const NodeUsage* used = it == usage_.nodes.end() ? nullptr : &it->second;
  v->shared_vcpus_used = used ? used->shared_vcpus : 0;
  const std::vector<PoolView>& room = pool_room_[index];
  for (size_t j = 0; j < v->pools.size(); ++j) {
    uint64_t taken = 0;
    if (used) {
      auto page = used->pages_used.find(room[j].size_kib);
      if (page != used->pages_used.end()) taken = page->second;
    }
    v->pools[j].free = room[j].free > taken ? room[j].free - taken : 0;
  }
}

}  // namespace accel::placement
