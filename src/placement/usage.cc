#include "placement/usage.h"

#include <algorithm>
#include <string>
#include <vector>

namespace accel::placement {

// What one placement holds, per host node, gathered once so Apply can check it all before
// changing anything. Emulator CPUs are charged to the host node of guest cell 0: Apply has no
// topology to look up which node holds a CPU, and the engine takes the emulator CPU from cell 0's
// node (as Nova does). CPU double booking is checked across all nodes, so the choice of node only
// affects per-node accounting, never safety.
namespace {

// One node's share of a placement; a placement touches few nodes, so a flat list, in the order
// the placement names them, stands in for a map (Apply and Release add and subtract
// entry by entry, which sums to the same).
struct HeldNode {
  int node = 0;
  CpuSet cpus;
  int shared_vcpus = 0;
  uint64_t page_size_kib = 0;  // with pages > 0
  uint64_t pages = 0;
};

struct Held {
  std::vector<HeldNode> nodes;
  CpuSet all_cpus;  // union over nodes, to find overlaps inside the placement
};

// Adds the CPUs `cpus` to *held; `what` names them in the first error (a function, so the name
// is written only when there is an error).
template <typename What>
void AddCpus(const CpuSet& cpus, What what, Held* held, std::string* first_error) {
  if (first_error->empty() && cpus.Intersects(held->all_cpus)) {
    *first_error = what() + " CPUs " + cpus.Intersect(held->all_cpus).ToString() +
                   " are also used elsewhere in the same placement";
  }
  held->all_cpus = held->all_cpus.Union(cpus);
}

// Gathers everything `p` holds into *held. Returns "" or the first reason `p` books one CPU
// twice itself (it still gathers the rest, so Release can undo a placement in full).
std::string Gather(const Placement& p, Held* held) {
  std::string first_error;
  held->nodes.reserve(p.cells.size() + 1);
  for (const CellPlacement& cell : p.cells) {
    HeldNode& u = held->nodes.emplace_back();
    u.node = cell.host_node;
    u.cpus = cell.consumed_cpus;
    for (const auto& [vcpu, cpu] : cell.pinning) u.cpus.Add(cpu);  // consumed should hold them already
    AddCpus(u.cpus, [&] { return "guest cell " + std::to_string(cell.guest_cell); }, held, &first_error);
    u.shared_vcpus = cell.shared_vcpus.Count();
    if (cell.pages > 0) {
      u.page_size_kib = cell.page_size_kib;
      u.pages = cell.pages;
    }
  }
  if (!p.emulator_consumed_cpus.Empty()) {
    HeldNode& u = held->nodes.emplace_back();
    u.node = p.cells.empty() ? -1 : p.cells.front().host_node;
    u.cpus = p.emulator_consumed_cpus;
    AddCpus(u.cpus, [] { return std::string("emulator"); }, held, &first_error);
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
  if (!held.all_cpus.Empty()) {
    CpuSet taken = held.all_cpus.Intersect(AllPinned(*this));
    if (!taken.Empty()) return "CPUs " + taken.ToString() + " are already pinned by another claim";
  }
  for (size_t i = 0; i < p.devices.size(); ++i) {
    const std::string& address = p.devices[i].address;
    if (devices.count(address)) return "device " + address + " is already used by another claim";
    for (size_t j = 0; j < i; ++j)
      if (p.devices[j].address == address)
        return "device " + address + " appears twice in the same placement";
  }
  // Every check passed: from here on nothing can fail, so usage changes all or nothing.
  for (const HeldNode& add : held.nodes) {
    NodeUsage& u = nodes[add.node];
    if (!add.cpus.Empty()) u.pinned_cpus = u.pinned_cpus.Union(add.cpus);
    u.shared_vcpus += add.shared_vcpus;
    if (add.pages > 0) u.pages_used[add.page_size_kib] += add.pages;
  }
  for (const DevicePlacement& d : p.devices) devices.insert(d.address);
  floating_vcpus += p.floating_vcpus;
  floating_memory_mib += p.floating_memory_mib;
  return "";
}

void HostUsage::Release(const Placement& p) {
  Held held;
  Gather(p, &held);  // `p` was applied, so it has no overlap inside; ignore the answer
  for (const HeldNode& sub : held.nodes) {
    auto it = nodes.find(sub.node);
    if (it == nodes.end()) continue;
    NodeUsage& u = it->second;
    if (!sub.cpus.Empty()) u.pinned_cpus = u.pinned_cpus.Minus(sub.cpus);
    u.shared_vcpus = std::max(0, u.shared_vcpus - sub.shared_vcpus);
    if (sub.pages > 0) {
      auto page = u.pages_used.find(sub.page_size_kib);
      if (page != u.pages_used.end()) {
        page->second = SubClamped(page->second, sub.pages);
        if (page->second == 0) u.pages_used.erase(page);
      }
    }
    // Drop emptied nodes so that usage after releases equals usage rebuilt from live claims.
    if (IsEmpty(u)) nodes.erase(it);
  }
  for (const DevicePlacement& d : p.devices) devices.erase(d.address);
  floating_vcpus = std::max(0, floating_vcpus - p.floating_vcpus);
  floating_memory_mib = SubClamped(floating_memory_mib, p.floating_memory_mib);
}

}  // namespace accel::placement
