#include "placement/node_view.h"

#include <algorithm>

namespace accel::placement {

namespace {

// The cores of `node` restricted to `dedicated`, less `pinned`, as CoreViews.
void AppendCores(const topology::NumaNode& node, const CpuSet& dedicated, const CpuSet& pinned,
                 std::vector<CoreView>* out) {
  const bool all_dedicated = dedicated == node.cpus;
  const bool none_pinned = pinned.Empty();
  out->reserve(node.cores.size());
  for (const CpuSet& core : node.cores) {
    CpuSet threads = all_dedicated ? core : core.Intersect(dedicated);
    const int n = threads.Count();
    if (n == 0) continue;
    CpuSet free = none_pinned ? threads : threads.Minus(pinned);
    const int free_count = none_pinned ? n : free.Count();
    out->push_back(CoreView{std::move(threads), std::move(free), n, free_count, free_count == n});
  }
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

// Counts the free CPUs by the shape of their core; stores the cores when keep_cores.
void CountCores(NodeView* v, bool keep_cores) {
  for (const CpuSet& core : v->node->cores) v->threads_per_core = std::max(v->threads_per_core, core.Count());
  if (keep_cores) {
    AppendCores(*v->node, v->dedicated_cpus, v->pinned_cpus, &v->cores);
    v->has_cores = true;
    for (const CoreView& c : v->cores) {
      v->free_threads += c.free_count;
      if (c.whole) {
        ++v->whole_free_cores;
        if (c.thread_count >= 2) v->whole_free_smt_threads += c.thread_count;
      } else {
        v->partial_free_threads += c.free_count;
      }
    }
    return;
  }
  // Without building per-core sets: a one-shot view counts every core of every node.
  for (const CpuSet& core : v->node->cores) {
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

const std::vector<CoreView>& NodeView::CoresIn(std::vector<CoreView>* scratch) const {
  if (has_cores) return cores;
  scratch->clear();
  AppendCores(*node, dedicated_cpus, pinned_cpus, scratch);
  return *scratch;
}

const PoolView* NodeView::Pool(uint64_t size_kib) const {
  for (const PoolView& p : pools)
    if (p.size_kib == size_kib) return &p;
  return nullptr;
}

std::vector<CoreView> NodeView::Cores() const {
  if (has_cores) return cores;
  std::vector<CoreView> built;
  AppendCores(*node, dedicated_cpus, pinned_cpus, &built);
  return built;
}

FloatingRoom FloatingRoomOf(const std::vector<NodeView>& nodes, const HostUsage& usage) {
  FloatingRoom room;
  room.vcpus_used = usage.floating_vcpus;
  room.cpu_milli_used = usage.floating_cpu_milli;
  uint64_t free_mib = 0;
  for (const NodeView& n : nodes) {
    room.vcpu_capacity += n.shared_capacity;
    room.vcpus_used += n.shared_vcpus_used;
    if (!n.pools.empty()) free_mib += n.pools.front().free * n.pools.front().size_kib / 1024;
  }
  room.free_base_mib = free_mib > usage.floating_memory_mib ? free_mib - usage.floating_memory_mib : 0;
  return room;
}

HostCpuSets HostCpuSetsOf(const topology::HostTopology& host, const HostUsage& usage,
                          const HostPolicy& policy) {
  const CpuSet all = host.AllCpus();
  HostCpuSets s;
  s.dedicated = policy.cpu_dedicated_set ? policy.cpu_dedicated_set->Intersect(all) : all;
  s.shared = policy.cpu_shared_set ? policy.cpu_shared_set->Intersect(all) : all;
  for (const auto& [id, n] : usage.nodes) s.pinned = s.pinned.Union(n.pinned_cpus);
  return s;
}

NodeView BuildNodeView(const topology::HostTopology& host, size_t index, const HostCpuSets& sets,
                       const HostUsage& usage, const HostPolicy& policy, bool keep_cores) {
  const topology::NumaNode& node = host.numa_nodes[index];
  NodeView v;
  v.index = static_cast<int>(index);
  v.id = node.id;
  v.package = node.package;
  v.node = &node;
  v.dedicated_cpus = node.cpus.Intersect(sets.dedicated);
  v.shared_cpus = node.cpus.Intersect(sets.shared);
  v.pinned_cpus = node.cpus.Intersect(sets.pinned);
  CountCores(&v, keep_cores);
  v.shared_free = v.shared_cpus.Count() - v.shared_cpus.CountIntersect(v.pinned_cpus);
  v.dedicated_in_shared = v.dedicated_cpus.IsSubsetOf(v.shared_cpus);
  auto it = usage.nodes.find(node.id);
  const NodeUsage* used = it == usage.nodes.end() ? nullptr : &it->second;
  v.shared_vcpus_used = used ? used->shared_vcpus : 0;
  v.shared_capacity = v.shared_cpus.Count() * policy.cpu_allocation_ratio;
  v.pools = Pools(node, used, policy);
  return v;
}

int FreeAccelerators(const topology::HostTopology& host, const HostUsage& usage, size_t index) {
  int n = 0;
  for (const topology::PciDevice& d : host.pci)
    if (d.is_accelerator() && host.NodeIndex(d.numa_node) == static_cast<int>(index) &&
        !usage.devices.count(d.address))
      ++n;
  return n;
}

std::vector<NodeView> BuildNodeViews(const topology::HostTopology& host, const HostUsage& usage,
                                     const HostPolicy& policy) {
  return BuildNodeViews(host, HostCpuSetsOf(host, usage, policy), usage, policy, false);
}

std::vector<NodeView> BuildNodeViews(const topology::HostTopology& host, const HostCpuSets& sets,
                                     const HostUsage& usage, const HostPolicy& policy,
                                     bool keep_cores) {
  std::vector<NodeView> views;
  views.reserve(host.numa_nodes.size());
  for (size_t i = 0; i < host.numa_nodes.size(); ++i)
    views.push_back(BuildNodeView(host, i, sets, usage, policy, keep_cores));
  for (const topology::PciDevice& d : host.pci) {
    if (!d.is_accelerator() || usage.devices.count(d.address)) continue;
    int idx = host.NodeIndex(d.numa_node);
    if (idx >= 0) ++views[idx].free_accelerators;
  }
  return views;
}

}  // namespace accel::placement
