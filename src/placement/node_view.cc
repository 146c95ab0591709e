#include "placement/node_view.h"

#include <algorithm>

namespace accel::placement {

const PoolView* NodeView::Pool(uint64_t size_kib) const {
  for (const PoolView& p : pools)
    if (p.size_kib == size_kib) return &p;
  return nullptr;
}

std::vector<CoreView> NodeView::Cores() const {
  std::vector<CoreView> cores;
  cores.reserve(node->cores.size());
  const bool all_dedicated = dedicated_cpus == node->cpus;
  const bool none_pinned = pinned_cpus.Empty();
  for (const CpuSet& core : node->cores) {
    CoreView& c = cores.emplace_back();
    c.threads = all_dedicated ? core : core.Intersect(dedicated_cpus);
    if (c.threads.Empty()) {
      cores.pop_back();
      continue;
    }
    c.free = none_pinned ? c.threads : c.threads.Minus(pinned_cpus);
  }
  return cores;
}

namespace {

// Pinned CPUs are global facts; a claim may record an emulator CPU under another node's entry,
// so every node looks at the union.
CpuSet AllPinned(const HostUsage& usage) {
  CpuSet all;
  for (const auto& [id, n] : usage.nodes) all = all.Union(n.pinned_cpus);
  return all;
}

std::vector<PoolView> Pools(const topology::NumaNode& node, const NodeUsage* used,
                            const HostPolicy& policy) {
  std::vector<PoolView> pools;
  pools.reserve(node.pages.size());
  for (size_t i = 0; i < node.pages.size(); ++i) {
    const topology::HugepagePool& p = node.pages[i];
    uint64_t total = p.total;
    if (i == 0 && p.size_kib > 0) {
      uint64_t reserved = policy.reserved_host_memory_mib_per_node * 1024 / p.size_kib;
      total = total > reserved ? total - reserved : 0;
    }
    uint64_t taken = 0;
    if (used) {
      auto it = used->pages_used.find(p.size_kib);
      if (it != used->pages_used.end()) taken = it->second;
    }
    pools.push_back({p.size_kib, total > taken ? total - taken : 0});
  }
  return pools;
}

// Counts free CPUs by the shape of their core, without keeping the cores.
void CountCores(NodeView* v) {
  for (const CpuSet& core : v->node->cores) {
    v->threads_per_core = std::max(v->threads_per_core, core.Count());
    const int n = core.CountIntersect(v->dedicated_cpus);
    if (n == 0) continue;
    const int free = core.CountIntersectMinus(v->dedicated_cpus, v->pinned_cpus);
    v->free_threads += free;
    if (free == n) {
      ++v->whole_free_cores;
      if (n >= 2) v->whole_free_smt_threads += n;
    } else {
      v->partial_free_threads += free;
    }
  }
}

}  // namespace

FloatingRoom FloatingRoomOf(const std::vector<NodeView>& nodes, const HostUsage& usage) {
  FloatingRoom room;
  room.vcpus_used = usage.floating_vcpus;
  uint64_t free_mib = 0;
  for (const NodeView& n : nodes) {
    room.vcpu_capacity += n.shared_capacity;
    room.vcpus_used += n.shared_vcpus_used;
    if (!n.pools.empty()) free_mib += n.pools.front().free * n.pools.front().size_kib / 1024;
  }
  room.free_base_mib = free_mib > usage.floating_memory_mib ? free_mib - usage.floating_memory_mib : 0;
  return room;
}

std::vector<NodeView> BuildNodeViews(const topology::HostTopology& host, const HostUsage& usage,
                                     const HostPolicy& policy) {
  const CpuSet all = host.AllCpus();
  const CpuSet dedicated = policy.cpu_dedicated_set ? policy.cpu_dedicated_set->Intersect(all) : all;
  const CpuSet shared = policy.cpu_shared_set ? policy.cpu_shared_set->Intersect(all) : all;
  const CpuSet pinned = AllPinned(usage);

  std::vector<NodeView> views(host.numa_nodes.size());
  for (size_t i = 0; i < host.numa_nodes.size(); ++i) {
    const topology::NumaNode& node = host.numa_nodes[i];
    NodeView& v = views[i];
    v.index = static_cast<int>(i);
    v.id = node.id;
    v.package = node.package;
    v.node = &node;
    v.dedicated_cpus = node.cpus.Intersect(dedicated);
    v.shared_cpus = node.cpus.Intersect(shared);
    v.pinned_cpus = node.cpus.Intersect(pinned);
    CountCores(&v);
    v.shared_free = v.shared_cpus.Count() - v.shared_cpus.CountIntersect(v.pinned_cpus);
    v.dedicated_in_shared = v.dedicated_cpus.IsSubsetOf(v.shared_cpus);
    auto it = usage.nodes.find(node.id);
    const NodeUsage* used = it == usage.nodes.end() ? nullptr : &it->second;
    v.shared_vcpus_used = used ? used->shared_vcpus : 0;
    v.shared_capacity = v.shared_cpus.Count() * policy.cpu_allocation_ratio;
    v.pools = Pools(node, used, policy);
  }
  for (const topology::PciDevice& d : host.pci) {
    if (!d.is_accelerator() || usage.devices.count(d.address)) continue;
    int idx = host.NodeIndex(d.numa_node);
    if (idx >= 0) ++views[idx].free_accelerators;
  }
  return views;
}

}  // namespace accel::placement
