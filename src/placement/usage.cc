#include "placement/usage.h"

#include <algorithm>

namespace accel::placement {

// What one placement holds, per host node, gathered once so Apply can check it all before
// changing anything. Emulator CPUs are charged to the host node of guest cell 0: Apply has no
// topology to look up which node holds a CPU, and the engine takes the emulator CPU from cell 0's
// node (as Nova does). CPU double booking is checked across all nodes, so the choice of node only
// affects per-node accounting, never safety.
namespace {

struct Held {
  std::map<int, NodeUsage> nodes;
  CpuSet all_cpus;  // union over nodes, to find overlaps inside the placement
};

CpuSet CellCpus(const CellPlacement& cell) {
  CpuSet cpus = cell.consumed_cpus;
  for (const auto& [vcpu, cpu] : cell.pinning) cpus.Add(cpu);  // consumed should hold them already
  return cpus;
}

// Gathers everything `p` holds into *held. Returns "" or the first reason `p` books one CPU
// twice itself (it still gathers the rest, so Release can undo a placement in full).
std::string Gather(const Placement& p, Held* held) {
  std::string first_error;
  auto add_cpus = [&](int node, const CpuSet& cpus, const std::string& what) {
    CpuSet twice = cpus.Intersect(held->all_cpus);
    if (!twice.Empty() && first_error.empty()) {
      first_error = what + " CPUs " + twice.ToString() +
                    " are also used elsewhere in the same placement";
    }
    held->all_cpus = held->all_cpus.Union(cpus);
    NodeUsage& u = held->nodes[node];
    u.pinned_cpus = u.pinned_cpus.Union(cpus);
  };
  for (const CellPlacement& cell : p.cells) {
    add_cpus(cell.host_node, CellCpus(cell), "guest cell " + std::to_string(cell.guest_cell));
    NodeUsage& u = held->nodes[cell.host_node];
    u.shared_vcpus += cell.shared_vcpus.Count();
    if (cell.pages > 0) u.pages_used[cell.page_size_kib] += cell.pages;
  }
  if (!p.emulator_consumed_cpus.Empty()) {
    int node = p.cells.empty() ? -1 : p.cells.front().host_node;
    add_cpus(node, p.emulator_consumed_cpus, "emulator");
  }
  return first_error;
}

CpuSet AllPinned(const HostUsage& usage) {
  CpuSet all;
  for (const auto& [id, node] : usage.nodes) all = all.Union(node.pinned_cpus);
  return all;
}

// Subtracts without wrapping below zero: Release trusts its caller, but a bad caller should get
// an under-count, not 2^64 pages.
uint64_t SubClamped(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

bool IsEmpty(const NodeUsage& u) {
  return u.pinned_cpus.Empty() && u.shared_vcpus == 0 && u.pages_used.empty();
}

}  // namespace

std::string HostUsage::Apply(const Placement& p) {
  Held held;
  if (std::string err = Gather(p, &held); !err.empty()) return err;
  CpuSet taken = held.all_cpus.Intersect(AllPinned(*this));
  if (!taken.Empty()) return "CPUs " + taken.ToString() + " are already pinned by another claim";
  std::set<std::string> own;
  for (const DevicePlacement& d : p.devices) {
    if (devices.count(d.address)) return "device " + d.address + " is already used by another claim";
    if (!own.insert(d.address).second) {
      return "device " + d.address + " appears twice in the same placement";
    }
  }
  // Every check passed: from here on nothing can fail, so usage changes all or nothing.
  for (const auto& [id, add] : held.nodes) {
    NodeUsage& u = nodes[id];
    u.pinned_cpus = u.pinned_cpus.Union(add.pinned_cpus);
    u.shared_vcpus += add.shared_vcpus;
    for (const auto& [size, pages] : add.pages_used) u.pages_used[size] += pages;
  }
  devices.insert(own.begin(), own.end());
  floating_vcpus += p.floating_vcpus;
  floating_memory_mib += p.floating_memory_mib;
  return "";
}

void HostUsage::Release(const Placement& p) {
  Held held;
  Gather(p, &held);  // `p` was applied, so it has no overlap inside; ignore the answer
  for (const auto& [id, sub] : held.nodes) {
    auto it = nodes.find(id);
    if (it == nodes.end()) continue;
    NodeUsage& u = it->second;
    u.pinned_cpus = u.pinned_cpus.Minus(sub.pinned_cpus);
    u.shared_vcpus = std::max(0, u.shared_vcpus - sub.shared_vcpus);
    for (const auto& [size, pages] : sub.pages_used) {
      auto page = u.pages_used.find(size);
      if (page == u.pages_used.end()) continue;
      page->second = SubClamped(page->second, pages);
      if (page->second == 0) u.pages_used.erase(page);
    }
    // Drop emptied nodes so that usage after releases equals usage rebuilt from live claims.
    if (IsEmpty(u)) nodes.erase(it);
  }
  for (const DevicePlacement& d : p.devices) devices.erase(d.address);
  floating_vcpus = std::max(0, floating_vcpus - p.floating_vcpus);
  floating_memory_mib = SubClamped(floating_memory_mib, p.floating_memory_mib);
}

}  // namespace accel::placement
