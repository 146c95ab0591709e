#include "placement/usage.h"

#include <algorithm>
#include <map>
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

// The bits of memory slices [start, start + count) of a MIG GPU instance; 0 when out of range.
uint32_t SliceBits(int start, int count) {
  if (start < 0 || count <= 0 || start > 32 || count > 32 - start) return 0;
  return ((count == 32 ? ~uint32_t{0} : (uint32_t{1} << count) - 1)) << start;
}

// The memory slices GPU part `g` holds: its MIG GPU instance's bits; 0 for a share or a whole
// GPU, whatever mig_start/mig_slices say (only a MIG part has a geometry).
uint32_t SliceBitsOf(const GpuPlacement& g) { return g.is_mig() ? SliceBits(g.mig_start, g.mig_slices) : 0; }

// Why GPU part `g` cannot join `usage` (after the parts before it in the same placement were
// added to `pending`, address -> what they hold), or "".
std::string GpuConflict(const GpuPlacement& g, const HostUsage& usage,
                        const std::map<std::string, SharedGpu>& pending) {
  const std::string& a = g.address;
  const auto shared = usage.shared_gpus.find(a);
  const bool whole_elsewhere = usage.devices.count(a) && shared == usage.shared_gpus.end();
  if (whole_elsewhere) return "GPU " + a + " is already used whole by another claim";
  SharedGpu sum = shared == usage.shared_gpus.end() ? SharedGpu{} : shared->second;
  const auto mine = pending.find(a);
  if (mine != pending.end()) {
    sum.milli += mine->second.milli;
    sum.mig_slices |= mine->second.mig_slices;
    sum.holders += mine->second.holders;
  }
  if (!g.is_mig() && !g.is_share()) {
    if (sum.holders > 0) return "GPU " + a + " is shared (" + std::to_string(sum.milli) + "/1000 held), not free whole";
    return "";
  }
  if (g.milli < 1 || g.milli > 1000) return "GPU " + a + ": a share of " + std::to_string(g.milli) + " thousandths is not 1..1000";
  if (g.is_mig()) {
    const uint32_t bits = SliceBits(g.mig_start, g.mig_slices);
    if (bits == 0) return "GPU " + a + ": MIG slices " + std::to_string(g.mig_start) + "+" + std::to_string(g.mig_slices) + " are out of range";
    if (sum.holders > 0 && sum.mig_slices == 0) return "GPU " + a + " holds time-slicing shares, not MIG slices";
    if (sum.mig_slices & bits) return "GPU " + a + ": MIG memory slices " + std::to_string(g.mig_start) + ".." + std::to_string(g.mig_start + g.mig_slices - 1) + " overlap another GPU instance";
    // Slices that do not overlap hold at most the whole GPU; more thousandths than that are a
    // malformed placement, refused here as the fleet store's CHECK refuses it.
    if (sum.milli + g.milli > 1000)
      return "GPU " + a + ": MIG slices would hold " + std::to_string(sum.milli + g.milli) + "/1000 thousandths";
    return "";
  }
  if (sum.mig_slices != 0) return "GPU " + a + " holds MIG slices, not time-slicing shares";
  if (sum.milli + g.milli > 1000)
    return "GPU " + a + ": " + std::to_string(sum.milli) + "/1000 already shared, " + std::to_string(g.milli) + " more would exceed the GPU";
  return "";
}

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
  std::map<std::string, SharedGpu> pending;  // GPU parts of `p` checked so far
  std::set<std::string> whole_here;           // GPUs `p` takes whole
  for (const GpuPlacement& g : p.gpus) {
    const bool whole = !g.is_mig() && !g.is_share();
    // One GPU whole and again (whole or in part) in the same placement, or passed through too.
    if (whole_here.count(g.address) || (whole && pending.count(g.address)))
      return "GPU " + g.address + " appears twice in the same placement";
    for (const DevicePlacement& d : p.devices)
      if (d.address == g.address) return "GPU " + g.address + " appears twice in the same placement";
    if (std::string why = GpuConflict(g, *this, pending); !why.empty()) return why;
    if (whole) whole_here.insert(g.address);
    SharedGpu& mine = pending[g.address];
    mine.milli += g.milli;
    mine.mig_slices |= SliceBitsOf(g);
    ++mine.holders;
  }
  // Every check passed: from here on nothing can fail, so usage changes all or nothing.
  for (const HeldNode& add : held.nodes) {
    NodeUsage& u = nodes[add.node];
    if (!add.cpus.Empty()) u.pinned_cpus = u.pinned_cpus.Union(add.cpus);
    u.shared_vcpus += add.shared_vcpus;
    if (add.pages > 0) u.pages_used[add.page_size_kib] += add.pages;
  }
  for (const DevicePlacement& d : p.devices) devices.insert(d.address);
  for (const GpuPlacement& g : p.gpus) {
    devices.insert(g.address);
    if (!g.is_mig() && !g.is_share()) continue;
    SharedGpu& held = shared_gpus[g.address];
    held.milli += g.milli;
    held.mig_slices |= SliceBitsOf(g);
    ++held.holders;
  }
  floating_vcpus += p.floating_vcpus;
  floating_memory_mib += p.floating_memory_mib;
  floating_cpu_milli += p.floating_cpu_milli;
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
  for (const GpuPlacement& g : p.gpus) {
    auto held = shared_gpus.find(g.address);
    if (held == shared_gpus.end()) {
      devices.erase(g.address);
      continue;
    }
    held->second.milli = std::max(0, held->second.milli - g.milli);
    held->second.mig_slices &= ~SliceBitsOf(g);
    if (--held->second.holders <= 0) {
      shared_gpus.erase(held);
      devices.erase(g.address);
    }
  }
  floating_vcpus = std::max(0, floating_vcpus - p.floating_vcpus);
  floating_memory_mib = SubClamped(floating_memory_mib, p.floating_memory_mib);
  floating_cpu_milli = std::max<int64_t>(0, floating_cpu_milli - p.floating_cpu_milli);
}

}  // namespace accel::placement
