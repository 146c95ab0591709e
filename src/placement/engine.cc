#include "placement/engine.h"

#include <algorithm>
#include <functional>
#include <set>

#include "placement/assignment.h"
#include "placement/cell_fit.h"
#include "placement/node_view.h"
#include "placement/pci_fit.h"

namespace accel::placement {

namespace {

// Score levels, most important first, packed into one Cost per (cell, node):
//   pci   - the node has no free device the guest asked for (only for guests with PCI requests)
//   accel - free accelerators the node would lose to a guest that asked for none
//   cores - whole free cores the cell breaks
//   fill  - pack: free threads left (fewer is better); spread: threads used (fewer is better)
//   node  - node index, so ties go to the lowest node
// Each level's multiplier exceeds the largest possible sum of the levels below over 64 cells.
constexpr int kNodeBits = 6, kFillBits = 14, kCoreBits = 13, kAccelBits = 7;
constexpr int kCellBits = 6;  // up to 64 cells summed
constexpr int kFillShift = kNodeBits + kCellBits;
constexpr int kCoreShift = kFillShift + kFillBits + kCellBits;
constexpr int kAccelShift = kCoreShift + kCoreBits + kCellBits;
constexpr int kPciShift = kAccelShift + kAccelBits + kCellBits;
constexpr int kForceShift = kPciShift + 1 + kCellBits;
// A budget on node subsets examined for PCI affinity; real hosts need a few hundred at most.
constexpr int kMaxSubsets = 50000;

Cost Level(long value, int bits, int shift) {
  long cap = (1L << bits) - 1;
  return static_cast<Cost>(std::clamp(value, 0L, cap)) << shift;
}

struct Search {
  const topology::HostTopology& host;
  const HostPolicy& policy;
  const PlacementRequest& req;
  const std::vector<NodeView>& nodes;
  const DevicePool& pool;
  Search(const topology::HostTopology& h, const HostPolicy& p, const PlacementRequest& r,
         const std::vector<NodeView>& n, const DevicePool& d)
      : host(h), policy(p), req(r), nodes(n), pool(d) {}

  std::vector<std::vector<CellFit>> fits;  // [cell][node]
  std::vector<std::vector<Cost>> cost;     // [cell][node]; kForbidden when the cell does not fit

  bool has_best = false;
  Cost best_cost = 0;
  std::vector<int> best_nodes;
  std::vector<std::vector<const topology::PciDevice*>> best_devices;
  int subsets = 0;

  Cost CellCost(int g, int h) const {
    const CellFit& f = fits[g][h];
    const NodeView& n = nodes[h];
    bool wants_pci = !req.pci.empty();
    Cost c = 0;
    if (wants_pci && pool.DevicesOnNode(h) == 0) c += Level(1, 1, kPciShift);
    if (!wants_pci) c += Level(n.free_accelerators, kAccelBits, kAccelShift);
    c += Level(f.whole_cores_broken, kCoreBits, kCoreShift);
    const long max_fill = (1L << kFillBits) - 1;
    long fill = policy.strategy == Strategy::kPack ? f.free_threads_after
                                                   : max_fill - f.free_threads_after;
    c += Level(fill, kFillBits, kFillShift);
    c += Level(h, kNodeBits, 0);
    return c;
  }

  // Best assignment whose nodes include every node in `forced`; keeps it if better than best.
  void TryForced(const std::vector<int>& forced) {
    if (cost.size() == 1) return TryForcedOneCell(forced);
    std::vector<std::vector<Cost>> c = cost;
    const Cost bonus = static_cast<Cost>(1) << kForceShift;
    for (auto& row : c)
      for (int h : forced)
        if (row[h] < kForbidden) row[h] -= bonus;
    std::vector<int> assign = MinCostAssignment(c);
    if (assign.empty()) return;
    std::vector<bool> on_node(nodes.size(), false);
    Cost total = 0;
    for (size_t g = 0; g < assign.size(); ++g) {
      on_node[assign[g]] = true;
      total += cost[g][assign[g]];
    }
    for (int h : forced)
      if (!on_node[h]) return;
    std::vector<std::vector<const topology::PciDevice*>> devices;
    if (!pool.Choose(on_node, false, &devices)) return;
    if (!has_best || total < best_cost) {
      has_best = true;
      best_cost = total;
      best_nodes = assign;
      best_devices = std::move(devices);
    }
  }

  // One guest cell: the assignment is the cheapest allowed node, no Hungarian needed.
  void TryForcedOneCell(const std::vector<int>& forced) {
    if (forced.size() > 1) return;
    int best = -1;
    for (size_t h = 0; h < cost[0].size(); ++h) {
      if (cost[0][h] >= kForbidden || (!forced.empty() && forced[0] != static_cast<int>(h))) continue;
      if (best < 0 || cost[0][h] < cost[0][best]) best = static_cast<int>(h);
    }
    if (best < 0) return;
    std::vector<std::vector<const topology::PciDevice*>> devices;
    if (!req.pci.empty()) {
      std::vector<bool> on_node(nodes.size(), false);
      on_node[best] = true;
      if (!pool.Choose(on_node, false, &devices)) return;
    }
    if (!has_best || cost[0][best] < best_cost) {
      has_best = true;
      best_cost = cost[0][best];
      best_nodes = {best};
      best_devices = std::move(devices);
    }
  }

  bool Satisfiable(const std::vector<int>& node_set) const {
    std::vector<bool> on_node(nodes.size(), false);
    for (int h : node_set) on_node[h] = true;
    std::vector<std::vector<const topology::PciDevice*>> unused;
    return pool.Choose(on_node, false, &unused);
  }

  // Depth-first over subsets T of the constraining nodes (|T| ≤ cells) that can supply the
  // devices; each satisfiable T is handed to TryForced and not extended (supersets add nothing
  // a forced assignment of T would not find).
  void EnumerateSubsets(const std::vector<int>& candidates) {
    const int k = static_cast<int>(req.cells.size());
    const bool count_bound = !pool.HasSocketPolicy();
    std::vector<int> t;
    std::function<void(size_t, int)> dfs = [&](size_t start, int devices_in_t) {
      if (++subsets > kMaxSubsets) return;
      if (Satisfiable(t)) {
        TryForced(t);
        return;
      }
      if (static_cast<int>(t.size()) == k) return;
      for (size_t i = start; i < candidates.size(); ++i) {
        if (count_bound) {
          // Devices reachable: T's plus the richest (k - |T|) nodes from i on.
          std::vector<int> rest;
          for (size_t j = i; j < candidates.size(); ++j) rest.push_back(pool.DevicesOnNode(candidates[j]));
          std::sort(rest.rbegin(), rest.rend());
          int reach = devices_in_t + pool.DevicesOnNode(-1);
          for (size_t j = 0; j < rest.size() && static_cast<int>(j) < k - static_cast<int>(t.size()); ++j)
            reach += rest[j];
          if (reach < pool.ConstrainedSlots()) return;
        }
        t.push_back(candidates[i]);
        dfs(i + 1, devices_in_t + pool.DevicesOnNode(candidates[i]));
        t.pop_back();
      }
    };
    dfs(0, 0);
  }
};

std::string PciShortfall(const PlacementRequest& req, const DevicePool& pool) {
  for (size_t r = 0; r < req.pci.size(); ++r)
    if (pool.MatchingCount(r) < req.pci[r].count)
      return "PCI alias '" + req.pci[r].alias + "': " + std::to_string(pool.MatchingCount(r)) +
             " free matching devices on the host, needs " + std::to_string(req.pci[r].count);
  return "";
}

std::string DeviceSummary(const std::vector<NodeView>& nodes, const DevicePool& pool) {
  std::string s;
  for (size_t h = 0; h < nodes.size(); ++h) {
    if (!s.empty()) s += ", ";
    s += "node " + std::to_string(nodes[h].id) + ": " + std::to_string(pool.DevicesOnNode(static_cast<int>(h)));
  }
  return s;
}

void AddDevices(const std::vector<std::vector<const topology::PciDevice*>>& chosen,
                const PlacementRequest& req, const std::map<int, int>& cell_of_node,
                Placement* p) {
  for (size_t r = 0; r < chosen.size(); ++r)
    for (const topology::PciDevice* d : chosen[r]) {
      DevicePlacement dp{req.pci[r].alias, d->address, d->vendor_id, d->device_id, d->numa_node, -1};
      auto it = cell_of_node.find(d->numa_node);
      if (it != cell_of_node.end()) dp.guest_cell = it->second;
      else if (!req.cells.empty())
        p->notes.push_back("device " + d->address + " (" + req.pci[r].alias + ") is not local to any guest cell (policy " +
                           PciNumaPolicyName(req.pci[r].numa_policy) + ")");
      p->devices.push_back(dp);
    }
}

PlaceResult PlaceFloating(const topology::HostTopology& host, const HostUsage& usage,
                          const HostPolicy& policy, const PlacementRequest& req,
                          const std::vector<NodeView>& nodes, const DevicePool& pool) {
  PlaceResult result;
  const FloatingRoom room = FloatingRoomOf(nodes, usage);
  const int used = room.vcpus_used;
  const double capacity = room.vcpu_capacity;
  const uint64_t free_mib = room.free_base_mib;
  if (used + req.vcpus > capacity)
    result.no_fit.reasons.push_back("host: " + std::to_string(used) + " shared vCPUs already on a capacity of " +
                                    std::to_string(static_cast<long>(capacity)) + " (cpu_allocation_ratio " +
                                    std::to_string(policy.cpu_allocation_ratio) + "); needs " +
                                    std::to_string(req.vcpus) + " more");
  if (free_mib < req.memory_mib)
    result.no_fit.reasons.push_back("host: " + std::to_string(free_mib) + " MiB of base-page memory free, needs " +
                                    std::to_string(req.memory_mib));
  std::vector<std::vector<const topology::PciDevice*>> chosen;
  if (!pool.Choose(std::vector<bool>(nodes.size(), false), true, &chosen)) {
    std::string why = PciShortfall(req, pool);
    result.no_fit.reasons.push_back(why.empty() ? "not enough free matching PCI devices" : why);
  }
  if (!result.no_fit.reasons.empty()) return result;
  Placement p;
  p.host = host.hostname;
  p.flavor = req.flavor;
  p.floating_vcpus = req.vcpus;
  p.floating_memory_mib = req.memory_mib;
  AddDevices(chosen, req, {}, &p);
  result.placement = std::move(p);
  return result;
}

Placement BuildPlacement(const topology::HostTopology& host, const PlacementRequest& req,
                         const Search& s) {
  Placement p;
  p.host = host.hostname;
  p.flavor = req.flavor;
  std::map<int, int> cell_of_node;
  for (size_t g = 0; g < req.cells.size(); ++g) {
    const CellFit& f = s.fits[g][s.best_nodes[g]];
    CellPlacement c;
    c.guest_cell = static_cast<int>(g);
    c.host_node = s.nodes[s.best_nodes[g]].id;
    c.pinning = f.pinning;
    c.shared_vcpus = req.cells[g].shared_vcpus;
    c.shared_cpus = f.shared_cpus;
    c.consumed_cpus = f.consumed;
    c.memory_mib = req.cells[g].memory_mib;
    c.page_size_kib = f.page_size_kib;
    c.pages = f.pages;
    p.emulator_cpus = p.emulator_cpus.Union(f.emulator_cpus);
    p.emulator_consumed_cpus = p.emulator_consumed_cpus.Union(f.emulator_consumed);
    cell_of_node[c.host_node] = c.guest_cell;
    p.cells.push_back(std::move(c));
  }
  AddDevices(s.best_devices, req, cell_of_node, &p);
  return p;
}

// Reasons for a no-fit of a guest with NUMA cells: per node, why no cell fits there; then
// the global cause (too few nodes, or PCI affinity).
NoFit Explain(const Search& s, const std::vector<int>& usable_nodes) {
  NoFit nf;
  const size_t k = s.req.cells.size();
  for (size_t h = 0; h < s.nodes.size(); ++h) {
    std::set<std::string> seen;
    for (size_t g = 0; g < k; ++g)
      if (!s.fits[g][h].ok && seen.insert(s.fits[g][h].reason).second)
        nf.reasons.push_back(s.fits[g][h].reason + (k > 1 ? " (guest cell " + std::to_string(g) + ")" : ""));
  }
  if (!usable_nodes.empty() && usable_nodes.size() < k)
    nf.reasons.push_back("guest has " + std::to_string(k) + " NUMA cells but only " +
                         std::to_string(usable_nodes.size()) + " host nodes can hold one");
  return nf;
}

}  // namespace

PlaceResult Place(const topology::HostTopology& host, const HostUsage& usage,
                  const HostPolicy& policy, const PlacementRequest& req) {
  const std::vector<NodeView> nodes = BuildNodeViews(host, usage, policy);
  const DevicePool pool(host, usage, nodes, req.pci);
  if (req.cells.empty()) return PlaceFloating(host, usage, policy, req, nodes, pool);

  PlaceResult result;
  const size_t k = req.cells.size();
  if (k > nodes.size()) {
    result.no_fit.reasons.push_back("guest has " + std::to_string(k) + " NUMA cells, host has only " +
                                    std::to_string(nodes.size()) + " NUMA nodes");
    return result;
  }
  if (std::string why = PciShortfall(req, pool); !why.empty()) {
    result.no_fit.reasons.push_back(why);
    return result;
  }
  Search s(host, policy, req, nodes, pool);
  s.fits.assign(k, std::vector<CellFit>(nodes.size()));
  const bool emulator = req.emulator_policy == EmulatorPolicy::kIsolate;
  std::vector<int> usable;
  // exact=false answers each (cell, node) from counts (CheckCell); exact=true chooses the CPUs
  // (FitCell). Counts are exact except for shared vCPUs on partly overlapping CPU sets, so the
  // chosen pairs are confirmed with FitCell and the search redone exactly if one fails.
  auto evaluate = [&](bool exact) {
    s.cost.assign(k, std::vector<Cost>(nodes.size(), kForbidden));
    usable.clear();
    for (size_t h = 0; h < nodes.size(); ++h) {
      bool any = false;
      for (size_t g = 0; g < k; ++g) {
        s.fits[g][h] = exact ? FitCell(nodes[h], req.cells[g], req, emulator && g == 0)
                             : CheckCell(nodes[h], req.cells[g], req, emulator && g == 0);
        if (s.fits[g][h].ok) {
          s.cost[g][h] = s.CellCost(static_cast<int>(g), static_cast<int>(h));
          any = true;
        }
      }
      if (any) usable.push_back(static_cast<int>(h));
    }
    s.has_best = false;
    s.subsets = 0;
    if (pool.Constrains()) {
      std::vector<int> candidates;
      for (int h : pool.ConstrainingNodes())
        if (std::find(usable.begin(), usable.end(), h) != usable.end()) candidates.push_back(h);
      s.EnumerateSubsets(candidates);
    } else {
      s.TryForced({});
    }
  };
  evaluate(false);
  if (s.has_best) {
    for (size_t g = 0; g < k && s.has_best; ++g) {
      CellFit exact = FitCell(nodes[s.best_nodes[g]], req.cells[g], req, emulator && g == 0);
      if (!exact.ok) s.has_best = false;
      else s.fits[g][s.best_nodes[g]] = std::move(exact);
    }
    if (!s.has_best) evaluate(true);
  }
  if (s.has_best) {
    result.placement = BuildPlacement(host, req, s);
    return result;
  }
  result.no_fit = Explain(s, usable);
  if (usable.size() >= k && !req.pci.empty()) {
    std::string want;
    for (const PciRequest& r : req.pci)
      want += (want.empty() ? "" : ", ") + std::to_string(r.count) + " x " + r.alias + " (policy " +
              PciNumaPolicyName(r.numa_policy) + ")";
    result.no_fit.reasons.push_back("PCI affinity: no " + std::to_string(k) +
                                    " nodes that can hold the guest's cells also hold " + want +
                                    "; free matching devices per node: " + DeviceSummary(nodes, pool));
  }
  if (result.no_fit.reasons.empty())
    result.no_fit.reasons.push_back("no combination of host nodes holds every guest cell");
  return result;
}

}  // namespace accel::placement
