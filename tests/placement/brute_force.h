// Brute force for tiny hosts: enumerates every assignment of cells to nodes, every set of CPUs
// for each cell, every emulator CPU, page size and device set, and asks Validate() whether any
// is valid. Exponential on purpose; only for hosts of a few nodes with a few CPUs each.
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "placement/cell_fit.h"
#include "placement/engine.h"
#include "placement/node_view.h"
#include "placement/pci_fit.h"

namespace accel::placement::testing {

namespace bf {

inline void Subsets(const std::vector<int>& items, int k, size_t start, std::vector<int>& cur,
                    const std::function<bool(const std::vector<int>&)>& fn, bool* stop) {
  if (*stop) return;
  if (static_cast<int>(cur.size()) == k) {
    *stop = fn(cur);
    return;
  }
  for (size_t i = start; i < items.size() && !*stop; ++i) {
    cur.push_back(items[i]);
    Subsets(items, k, i + 1, cur, fn, stop);
    cur.pop_back();
  }
}

/// Calls fn on every k-subset of items until fn returns true; returns whether it did.
inline bool AnySubset(const std::vector<int>& items, int k,
                      const std::function<bool(const std::vector<int>&)>& fn) {
  std::vector<int> cur;
  bool stop = false;
  Subsets(items, k, 0, cur, fn, &stop);
  return stop;
}

inline const CoreView* CoreOf(const std::vector<CoreView>& cores, int cpu) {
  for (const CoreView& c : cores)
    if (c.threads.Contains(cpu)) return &c;
  return nullptr;
}

}  // namespace bf

/// True when some valid placement of `req` exists (by Validate's definition).
inline bool BruteForceFits(const topology::HostTopology& host, const HostUsage& usage,
                           const HostPolicy& policy, const PlacementRequest& req) {
  const std::vector<NodeView> views = BuildNodeViews(host, usage, policy);
  // Devices: every free device, tried as ordered per-request subsets.
  std::vector<const topology::PciDevice*> devs;
  for (const auto& d : host.pci)
    if (!usage.devices.count(d.address) && d.role != topology::PciRole::kBridge &&
        d.role != topology::PciRole::kHostBridge)
      devs.push_back(&d);
  std::function<bool(Placement&, size_t, std::vector<bool>&)> try_devices =
      [&](Placement& p, size_t r, std::vector<bool>& used) -> bool {
    if (r == req.pci.size()) return Validate(host, usage, policy, req, p).empty();
    std::vector<int> idx;
    for (size_t i = 0; i < devs.size(); ++i)
      if (!used[i]) idx.push_back(static_cast<int>(i));
    return bf::AnySubset(idx, req.pci[r].count, [&](const std::vector<int>& pick) {
      size_t before = p.devices.size();
      for (int i : pick) {
        used[i] = true;
        p.devices.push_back({req.pci[r].alias, devs[i]->address, devs[i]->vendor_id,
                             devs[i]->device_id, devs[i]->numa_node, -1});
      }
      bool ok = try_devices(p, r + 1, used);
      for (int i : pick) used[i] = false;
      p.devices.resize(before);
      return ok;
    });
  };
  auto finish = [&](Placement& p) {
    std::vector<bool> used(devs.size(), false);
    return try_devices(p, 0, used);
  };

  if (req.cells.empty()) {
    Placement p;
    p.floating_vcpus = req.vcpus;
    p.floating_memory_mib = req.memory_mib;
    return finish(p);
  }
  const size_t k = req.cells.size();
  if (k > views.size()) return false;
  std::vector<int> order(views.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);

  // Recursively choose node, CPUs and page size for cell g; then the emulator; then devices.
  std::function<bool(Placement&, size_t, std::vector<bool>&, CpuSet&)> cell_step =
      [&](Placement& p, size_t g, std::vector<bool>& node_used, CpuSet& taken) -> bool {
    if (g == k) {
      auto with_shared = [&](Placement& q) {
        for (CellPlacement& c : q.cells) {
          const NodeView& v = views[host.NodeIndex(c.host_node)];
          c.shared_cpus = c.shared_vcpus.Empty()
                              ? CpuSet()
                              : v.shared_cpus.Minus(v.pinned_cpus).Minus(taken).Minus(q.emulator_consumed_cpus);
        }
        return finish(q);
      };
      if (req.emulator_policy == EmulatorPolicy::kShare) return with_shared(p);
      const NodeView& v0 = views[host.NodeIndex(p.cells[0].host_node)];
      for (const CoreView& core : v0.Cores())
        for (int cpu : core.free.Minus(taken).ToVector()) {
          p.emulator_cpus = CpuSet{cpu};
          p.emulator_consumed_cpus =
              req.thread_policy == ThreadPolicy::kIsolate ? core.threads : CpuSet{cpu};
          if (with_shared(p)) return true;
        }
      p.emulator_cpus = p.emulator_consumed_cpus = CpuSet();
      return false;
    }
    const GuestCell& cell = req.cells[g];
    for (size_t h = 0; h < views.size(); ++h) {
      if (node_used[h]) continue;
      const NodeView& v = views[h];
      std::vector<int> free;
      const std::vector<CoreView> cores = v.Cores();
      for (const CoreView& c : cores)
        for (int cpu : c.free.Minus(taken).ToVector()) free.push_back(cpu);
      std::sort(free.begin(), free.end());
      const std::vector<int> vcpus = cell.dedicated_vcpus.ToVector();
      bool found = bf::AnySubset(free, static_cast<int>(vcpus.size()), [&](const std::vector<int>& cpus) {
        CellPlacement c;
        c.guest_cell = static_cast<int>(g);
        c.host_node = v.id;
        c.shared_vcpus = cell.shared_vcpus;
        c.memory_mib = cell.memory_mib;
        for (size_t i = 0; i < cpus.size(); ++i) {
          c.pinning[vcpus[i]] = cpus[i];
          c.consumed_cpus.Add(cpus[i]);
          if (req.thread_policy == ThreadPolicy::kIsolate)
            c.consumed_cpus = c.consumed_cpus.Union(bf::CoreOf(cores, cpus[i])->threads);
        }
        if (c.consumed_cpus.Intersects(taken)) return false;
        for (uint64_t size : CandidatePageSizes(v, req.page_size)) {
          if (size == 0 || (cell.memory_mib * 1024) % size) continue;
          c.page_size_kib = size;
          c.pages = cell.memory_mib * 1024 / size;
          p.cells.push_back(c);
          node_used[h] = true;
          CpuSet saved = taken;
          taken = taken.Union(c.consumed_cpus);
          bool ok = cell_step(p, g + 1, node_used, taken);
          taken = saved;
          node_used[h] = false;
          p.cells.pop_back();
          if (ok) return true;
        }
        return false;
      });
      if (found) return true;
    }
    return false;
  };
  Placement p;
  std::vector<bool> node_used(views.size(), false);
  CpuSet taken;
  return cell_step(p, 0, node_used, taken);
}

}  // namespace accel::placement::testing
