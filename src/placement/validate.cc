// Validate(): the definition of a valid placement. The engine must only produce placements that
// pass it, and the brute-force tests enumerate candidates and keep those that pass it.
#include <algorithm>
#include <map>
#include <set>

#include "placement/cell_fit.h"
#include "placement/engine.h"
#include "placement/gpu_fit.h"
#include "placement/node_view.h"
#include "placement/pci_fit.h"

namespace accel::placement {

namespace {

const CoreView* CoreOf(const std::vector<CoreView>& cores, int cpu) {
  for (const CoreView& c : cores)
    if (c.threads.Contains(cpu)) return &c;
  return nullptr;
}

std::string CheckThreads(const NodeView& v, const PlacementRequest& req, const CellPlacement& c,
                         const CpuSet& pinned) {
  const std::vector<CoreView> cores = v.Cores();
  std::map<const CoreView*, int> per_core;
  for (int cpu : pinned.ToVector()) {
    const CoreView* core = CoreOf(cores, cpu);
    if (!core || !core->free.Contains(cpu))
      return "CPU " + std::to_string(cpu) + " is not a free dedicated CPU of node " + std::to_string(v.id);
    ++per_core[core];
  }
  CpuSet expect = pinned;
  switch (pinned.Empty() ? ThreadPolicy::kPrefer : req.thread_policy) {
    case ThreadPolicy::kPrefer:
      break;
    case ThreadPolicy::kIsolate:
      for (const auto& [core, n] : per_core) {
        if (!core->whole_free() || n != 1)
          return "thread policy isolate: core " + core->threads.ToString() + " is not a whole free core used once";
        expect = expect.Union(core->threads);
      }
      break;
    case ThreadPolicy::kRequire: {
      if (v.threads_per_core < 2) return "thread policy require on a node without SMT";
      int underfilled = 0;
      for (const auto& [core, n] : per_core) {
        if (!core->whole_free() || core->threads.Count() < 2)
          return "thread policy require: core " + core->threads.ToString() + " was not a whole free SMT core";
        if (n < core->threads.Count()) ++underfilled;
      }
      if (underfilled > 1) return "thread policy require: more than one core is only partly used";
      break;
    }
  }
  if (c.consumed_cpus != expect)
    return "cell " + std::to_string(c.guest_cell) + ": consumed CPUs " + c.consumed_cpus.ToString() +
           ", expected " + expect.ToString();
  return "";
}

std::string CheckMemory(const NodeView& v, const PlacementRequest& req, const CellPlacement& c) {
  if (c.memory_mib != req.cells[c.guest_cell].memory_mib) return "cell memory differs from the request";
  std::vector<uint64_t> sizes = CandidatePageSizes(v, req.page_size);
  if (std::find(sizes.begin(), sizes.end(), c.page_size_kib) == sizes.end())
    return "page size " + std::to_string(c.page_size_kib) + " KiB not allowed by the request on node " +
           std::to_string(v.id);
  if (c.pages * c.page_size_kib != c.memory_mib * 1024) return "pages do not add up to the cell memory";
  if (v.Pool(c.page_size_kib)->free < c.pages) return "not enough free pages on node " + std::to_string(v.id);
  return "";
}

std::string CheckEmulator(const std::vector<NodeView>& views, const topology::HostTopology& host,
                          const PlacementRequest& req, const Placement& p, const CpuSet& taken) {
  if (req.emulator_policy == EmulatorPolicy::kShare)
    return p.emulator_cpus.Empty() && p.emulator_consumed_cpus.Empty() ? "" : "emulator CPUs without isolate";
  if (p.emulator_cpus.Count() != 1) return "emulator isolate needs exactly one emulator CPU";
  const NodeView& v = views[host.NodeIndex(p.cells[0].host_node)];
  int cpu = p.emulator_cpus.First();
  const std::vector<CoreView> cores = v.Cores();
  const CoreView* core = CoreOf(cores, cpu);
  if (!core || !core->free.Contains(cpu)) return "emulator CPU is not a free dedicated CPU of guest cell 0's node";
  if (taken.Contains(cpu)) return "emulator CPU is also pinned to a vCPU";
  CpuSet expect = p.emulator_cpus;
  if (req.thread_policy == ThreadPolicy::kIsolate) {
    if (!core->whole_free() || core->threads.Intersects(taken))
      return "emulator CPU under isolate must take a whole free core";
    expect = core->threads;
  }
  return p.emulator_consumed_cpus == expect ? "" : "emulator consumed CPUs are wrong";
}

bool Eligible(const PciRequest& r, int node, const std::vector<NodeView>& views,
              const std::set<int>& on_node, bool floating) {
  if (floating || r.numa_policy == PciNumaPolicy::kPreferred) return true;
  if (node >= 0 && on_node.count(node)) return true;
  if (r.numa_policy == PciNumaPolicy::kLegacy) return node < 0;
  // socket: never a device of unknown node, and nothing beyond the guest's nodes when some node
  // has no single package (Nova's socket policy then finds no pool: pci_fit.h).
  if (r.numa_policy == PciNumaPolicy::kSocket && node >= 0 &&
      std::all_of(views.begin(), views.end(), [](const NodeView& v) { return v.package >= 0; }))
    for (int h : on_node)
      if (views[h].package == views[node].package) return true;
  return false;
}

std::string CheckDevices(const topology::HostTopology& host, const HostUsage& usage,
                         const std::vector<NodeView>& views, const PlacementRequest& req,
                         const Placement& p) {
  std::set<int> on_node;
  for (const CellPlacement& c : p.cells) on_node.insert(host.NodeIndex(c.host_node));
  std::set<std::string> seen;
  std::map<std::string, int> per_alias;
  for (const DevicePlacement& d : p.devices) {
    const topology::PciDevice* dev = host.FindPci(d.address);
    if (!dev) return "device " + d.address + " is not on the host";
    if (usage.devices.count(d.address)) return "device " + d.address + " is already in use";
    if (!seen.insert(d.address).second) return "device " + d.address + " given twice";
    auto r = std::find_if(req.pci.begin(), req.pci.end(), [&](const PciRequest& x) { return x.alias == d.request_alias; });
    if (r == req.pci.end()) return "device " + d.address + " for unknown alias " + d.request_alias;
    if (!std::any_of(r->specs.begin(), r->specs.end(), [&](const PciSpec& s) { return SpecMatches(s, *dev); }))
      return "device " + d.address + " does not match alias " + r->alias;
    if (!Eligible(*r, host.NodeIndex(dev->numa_node), views, on_node, req.cells.empty()))
      return "device " + d.address + " breaks NUMA policy " + PciNumaPolicyName(r->numa_policy);
    ++per_alias[d.request_alias];
  }
  std::map<std::string, int> want;
  for (const PciRequest& r : req.pci) want[r.alias] += r.count;
  return want == per_alias ? "" : "device count per alias differs from the request";
}

std::string CheckFloating(const std::vector<NodeView>& views, const HostUsage& usage,
                          const PlacementRequest& req, const Placement& p) {
  if (!p.cells.empty() || !p.emulator_cpus.Empty()) return "a guest without NUMA topology got cells";
  if (p.floating_vcpus != req.vcpus || p.floating_memory_mib != req.memory_mib ||
      p.floating_cpu_milli != req.cpu_milli)
    return "floating vCPUs/CPU thousandths/memory differ from the request";
  const FloatingRoom room = FloatingRoomOf(views, usage);
  const int64_t used_milli = int64_t{room.vcpus_used} * 1000 + room.cpu_milli_used;
  if (used_milli + int64_t{req.vcpus} * 1000 + req.cpu_milli > static_cast<int64_t>(room.vcpu_capacity * 1000 + 0.5))
    return "shared CPU capacity exceeded";
  if (room.free_base_mib < req.memory_mib) return "host memory exceeded";
  return "";
}

// The GPUs of `p` are one of the choices GpuChoices offers for `req` on `host` over `usage`,
// none of them also passed through as one of p's PCI devices.
std::string CheckGpus(const topology::HostTopology& host, const HostUsage& usage, const PlacementRequest& req,
                      const Placement& p) {
  if (!req.gpu) return p.gpus.empty() ? "" : "GPUs placed for a request without a GPU part";
  const std::vector<const topology::PciDevice*> accelerators = AcceleratorsOf(host);
  std::vector<GpuSlot> slots = GpuSlotsOf(accelerators, usage);
  for (const DevicePlacement& d : p.devices)
    for (size_t i = 0; i < accelerators.size(); ++i)
      if (accelerators[i]->address == d.address) {
        slots[i].whole_held = true;
        slots[i].free_milli = 0;
      }
  for (const GpuChoice& c : GpuChoices(accelerators, slots, *req.gpu, nullptr))
    if (GpuPlacementsOf(accelerators, c, *req.gpu) == p.gpus) return "";
  return "the GPUs are not a valid choice for the request on this host";
}

}  // namespace

std::string Validate(const topology::HostTopology& host, const HostUsage& usage,
                     const HostPolicy& policy, const PlacementRequest& req, const Placement& p) {
  const std::vector<NodeView> views = BuildNodeViews(host, usage, policy);
  if (req.cells.empty()) {
    std::string e = CheckFloating(views, usage, req, p);
    if (e.empty()) e = CheckGpus(host, usage, req, p);
    return e.empty() ? CheckDevices(host, usage, views, req, p) : e;
  }
  if (p.cells.size() != req.cells.size()) return "placement has a different number of cells";
  if (std::string e = CheckGpus(host, usage, req, p); !e.empty()) return e;
  if (req.cpu_milli != 0 || p.floating_cpu_milli != 0) return "CPU thousandths are for guests without NUMA cells";
  std::set<int> nodes_used;
  CpuSet taken;
  for (size_t g = 0; g < p.cells.size(); ++g) {
    const CellPlacement& c = p.cells[g];
    if (c.guest_cell != static_cast<int>(g)) return "cells out of order";
    int idx = host.NodeIndex(c.host_node);
    if (idx < 0) return "cell " + std::to_string(g) + " on unknown node " + std::to_string(c.host_node);
    if (!nodes_used.insert(idx).second) return "two cells on node " + std::to_string(c.host_node);
    const NodeView& v = views[idx];
    CpuSet vcpus, pinned;
    for (const auto& [vcpu, cpu] : c.pinning) {
      vcpus.Add(vcpu);
      if (pinned.Contains(cpu) || taken.Contains(cpu)) return "CPU " + std::to_string(cpu) + " pinned twice";
      pinned.Add(cpu);
    }
    if (vcpus != req.cells[g].dedicated_vcpus) return "cell " + std::to_string(g) + ": pinned vCPUs differ from the request";
    if (std::string e = CheckThreads(v, req, c, pinned); !e.empty()) return e;
    if (taken.Intersects(c.consumed_cpus)) return "cells share a core";
    taken = taken.Union(c.consumed_cpus);
    if (c.shared_vcpus != req.cells[g].shared_vcpus) return "cell " + std::to_string(g) + ": shared vCPUs differ";
    if (std::string e = CheckMemory(v, req, c); !e.empty()) return e;
  }
  if (std::string e = CheckEmulator(views, host, req, p, taken); !e.empty()) return e;
  taken = taken.Union(p.emulator_consumed_cpus);
  for (const CellPlacement& c : p.cells) {
    const NodeView& v = views[host.NodeIndex(c.host_node)];
    int s = c.shared_vcpus.Count();
    if (s == 0) continue;
    if (!c.shared_cpus.IsSubsetOf(v.shared_cpus.Minus(v.pinned_cpus).Minus(taken)) || c.shared_cpus.Count() < s)
      return "cell " + std::to_string(c.guest_cell) + ": shared CPUs overlap pinned CPUs or are too few";
    if (v.shared_vcpus_used + s > v.shared_capacity) return "shared CPU capacity exceeded on node " + std::to_string(v.id);
  }
  return CheckDevices(host, usage, views, req, p);
}

}  // namespace accel::placement
