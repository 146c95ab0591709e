// The hint providers' rules for one demand (CPU Manager, Memory Manager, device manager) and the
// merge that restricted and single-numa-node apply; the policies in policy_*.cc call them.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <numeric>
#include <stdexcept>

#include "common/strings.h"
#include "kubelet/derive.h"
#include "kubelet/topology_policy.h"
#include "placement/engine.h"

namespace accel::kubelet {

namespace {

std::string CellList(const std::vector<int>& cells) {
  std::string s;
  for (int c : cells) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

// The engine's reasons speak of host nodes; on the guest host they are guest cells.
std::string GuestWords(std::string s) {
  for (size_t at = s.find("node "); at != std::string::npos; at = s.find("node ", at + 1))
    if (at + 5 < s.size() && std::isdigit(static_cast<unsigned char>(s[at + 5]))) s.replace(at, 5, "cell ");
  return s;
}

// The CPUs exclusive allocations may use: not reserved; under full-pcpus-only not on a core
// that holds a reserved CPU either (GetAvailablePhysicalCPUs counts whole cores only).
CpuSet AssignableCpus(const KubeletNode& n) {
  CpuSet all;
  for (int v = 0; v < n.layout.vcpus; ++v) all.Add(v);
  CpuSet out = all.Minus(n.reserved_cpus);
  if (n.full_pcpus_only)
    for (int v : n.reserved_cpus.ToVector()) out = out.Minus(n.layout.CoreVcpus(n.layout.CoreOf(v)));
  return out;
}

bool RequireWholeCores(const KubeletNode& n) { return n.full_pcpus_only && n.layout.threads_per_core > 1; }

// Cell sets of `size` cells out of `cells`, ascending (as the kubelet's bitmask iteration).
std::vector<std::vector<int>> MasksOfSize(int cells, int size) {
  std::vector<std::vector<int>> out;
  for (uint32_t bits = 1; bits < (1u << cells); ++bits) {
    if (__builtin_popcount(bits) != size) continue;
    std::vector<int> m;
    for (int c = 0; c < cells; ++c)
      if (bits & (1u << c)) m.push_back(c);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

DemandContext::DemandContext(const NodeAdmission& admission, const AdmissionDemand& demand, NodeAdmission::State* state,
                             Admission* out)
    : admission_(admission), node_(admission.node()), demand_(demand), state_(state), out_(out) {
  const KubeletNode& n = node_;
  const AdmissionDemand& d = demand_;
  cells_ = n.cell_count();
  uint64_t hugepages = 0;
  for (const auto& [kib, mib] : d.hugepages_mib) hugepages += mib;
  cpu_aligned_ = d.exclusive_cpus > 0;
  memory_aligned_ = d.aligned_memory && (d.memory_mib > 0 || hugepages > 0);
  for (const auto& [name, count] : d.devices)
    if (const NodeResource* r = n.FindResource(name); r != nullptr && r->aligned() && count > 0) devices_aligned_[name] = count;
  // Memory-Manager memory free per cell now.
  memory_free_.resize(static_cast<size_t>(cells_));
  for (int c = 0; c < cells_; ++c) {
    uint64_t held = 0;
    if (auto it = state->usage.nodes.find(c); it != state->usage.nodes.end())
      if (auto p = it->second.pages_used.find(4); p != it->second.pages_used.end()) held = p->second / 256;
    const uint64_t total = n.cell_memory_mib[static_cast<size_t>(c)];
    memory_free_[static_cast<size_t>(c)] = total > held ? total - held : 0;
  }
}

bool DemandContext::Refuse(const std::string& reason, const std::string& message) {
  out_->reason = reason;
  out_->message = (demand_.container.empty() ? "" : "container " + demand_.container + ": ") + message;
  return false;
}

void DemandContext::Reset() {
  out_->reason.clear();
  out_->message.clear();
  has_placement_ = false;
  mask_.clear();
}

bool DemandContext::SmtAligned() {
  const KubeletNode& n = node_;
  const AdmissionDemand& d = demand_;
  if (!n.full_pcpus_only || d.exclusive_cpus == 0) return true;
  const int t = n.layout.threads_per_core;
  if (d.exclusive_cpus % t != 0)
    return Refuse("SMTAlignmentError",
                  std::to_string(d.exclusive_cpus) + " exclusive CPUs is not a multiple of the guest's " +
                      std::to_string(t) + " threads per core: full-pcpus-only gives whole cores only (ask " +
                      std::to_string((d.exclusive_cpus / t + 1) * t) + ")");
  const int free = FreePhysicalCpus();
  if (d.exclusive_cpus > free)
    return Refuse("SMTAlignmentError", std::to_string(d.exclusive_cpus) + " exclusive CPUs asked, the node has " +
                                           std::to_string(free) + " in free whole cores");
  return true;
}

bool DemandContext::MergeHintsFor(bool single, const AdmissionDemand& dd, bool mem_al) {
  const KubeletNode& n = node_;
  const std::vector<GuestCellLayout> layout_cells = n.layout.cells_or_one();
  if (!cpu_aligned_ && !mem_al && devices_aligned_.empty()) return true;
  // The narrowest cell sets that could hold each aligned resource on an empty node.
  auto narrowest = [&](const std::function<bool(const std::vector<int>&)>& fits) {
    for (int size = 1; size <= cells_; ++size)
      for (const std::vector<int>& m : MasksOfSize(cells_, size))
        if (fits(m)) return size;
    return 0;
  };
  struct HintWidth {
    std::string what;
    int cells;
  };
  std::vector<HintWidth> widths;
  if (cpu_aligned_) {
    const int k = narrowest([&](const std::vector<int>& m) {
      int total = 0;
      for (int c : m) total += layout_cells[static_cast<size_t>(c)].vcpus.Count();
      return total >= dd.exclusive_cpus;
    });
    if (k == 0) return Refuse("TopologyAffinityError", "the guest has fewer than " + std::to_string(dd.exclusive_cpus) + " CPUs");
    widths.push_back({std::to_string(dd.exclusive_cpus) + " exclusive CPUs", k});
  }
  if (mem_al) {
    const int k = narrowest([&](const std::vector<int>& m) {
      uint64_t memory = 0;
      for (int c : m) memory += n.cell_memory_mib[static_cast<size_t>(c)];
      if (memory < dd.memory_mib) return false;
      for (const auto& [kib, want] : dd.hugepages_mib) {
        uint64_t have = 0;
        for (int c : m) {
          auto it = n.cell_hugepages_mib[static_cast<size_t>(c)].find(kib);
          have += it == n.cell_hugepages_mib[static_cast<size_t>(c)].end() ? 0 : it->second;
        }
        if (have < want) return false;
      }
      return true;
    });
    if (k == 0)
      return Refuse("TopologyAffinityError", "the guest cells' Memory Manager memory cannot hold " + MiQuantity(dd.memory_mib) +
                                                 " of memory and the hugepages asked, even all together");
    std::string what = MiQuantity(dd.memory_mib) + " of memory";
    for (const auto& [kib, mib] : dd.hugepages_mib) what += " + " + MiQuantity(mib) + " " + HugepageResourceName(kib);
    widths.push_back({what, k});
  }
  for (const auto& [name, count] : devices_aligned_) {
    const NodeResource& r = *n.FindResource(name);
    const int k = narrowest([&, count = count](const std::vector<int>& m) {
      int have = 0;
      for (int c : m) have += r.per_cell[static_cast<size_t>(c)];
      return have >= count;
    });
    if (k == 0)
      return Refuse("TopologyAffinityError",
                    std::to_string(count) + " " + name + " asked; only " +
                        std::to_string(r.total() - r.without_cell) + " of the node's " + std::to_string(r.total()) +
                        " report a guest cell, and the device manager aligns only those");
    widths.push_back({std::to_string(count) + " " + name, k});
  }
  if (single) {
    std::string list;
    int wide = 0;
    for (const HintWidth& x : widths)
      if (x.cells > 1) {
        list += (list.empty() ? "" : ", ") + x.what;
        ++wide;
      }
    if (wide > 0)
      return Refuse("TopologyAffinityError", list + (wide == 1 ? " does" : " do") +
                                                 " not fit one guest cell of this node: single-numa-node admits only "
                                                 "pods whose aligned resources fit one cell");
  }
  const int k = widths.front().cells;
  for (const HintWidth& w : widths)
    if (w.cells != k) {
      std::string list;
      for (const HintWidth& x : widths) list += (list.empty() ? "" : ", ") + x.what + " " + CountOf(x.cells, "cell");
      return Refuse("TopologyAffinityError",
                    "the narrowest guest cells that can hold each aligned resource differ (" + list +
                        "): the kubelet prefers a hint only on each resource's narrowest cells, and " +
                        (single ? "single-numa-node" : "restricted") + " admits only a hint every resource prefers");
    }
  std::string why;
  if (k == 1) {
    std::vector<int> eligible;
    for (int c = 0; c < cells_; ++c)
      if (!mem_al || MemoryMaskOk(dd, {c})) eligible.push_back(c);
    if (!eligible.empty() && PlaceOnCells(dd, eligible, true, {}, &placed_, &why)) {
      has_placement_ = true;
      mask_ = {placed_.cells.front().host_node};  // the one engine cell
    }
  } else {
    for (const std::vector<int>& m : MasksOfSize(cells_, k)) {
      if (mem_al && !MemoryMaskOk(dd, m)) continue;
      std::string reason;
      if (PlaceOnCells(dd, m, false, {}, &placed_, &reason)) {
        has_placement_ = true;
        mask_ = m;
        break;
      }
      if (why.empty()) why = reason;
    }
  }
  if (!has_placement_) {
    std::string what;
    for (const HintWidth& x : widths) what += (what.empty() ? "" : " and ") + x.what;
    return Refuse("TopologyAffinityError",
                  "no " + (k == 1 ? std::string("one guest cell holds ") : std::to_string(k) + " guest cells hold ") + what +
                      " free now (" + RoomSummary(dd) + ")" + (why.empty() ? "" : "; the engine: " + why));
  }
  return true;
}

bool DemandContext::MergeHints(bool single) {
  const KubeletNode& n = node_;
  const AdmissionDemand& d = demand_;
  if (memory_aligned_) {
    bool hint = false;
    for (int size = 1; size <= cells_ && !hint; ++size)
      for (const std::vector<int>& m : MasksOfSize(cells_, size)) {
        uint64_t capacity = 0;
        for (int c : m) capacity += n.cell_memory_mib[static_cast<size_t>(c)];
        if (capacity >= d.memory_mib && MemoryMaskOk(d, m)) {
          hint = true;
          break;
        }
      }
    if (!hint) {
      AdmissionDemand rest = d;
      rest.aligned_memory = false;
      rest.memory_mib = 0;
      rest.hugepages_mib.clear();
      if (!MergeHintsFor(single, rest, false)) return false;
      has_placement_ = false;
      return Refuse("UnexpectedAdmissionError",
                    "the Memory Manager has no guest cells with " + MiQuantity(d.memory_mib) +
                        " (and the hugepages asked) free: it gives no hint, the topology manager admits on the other "
                        "resources, and its Allocate fails (" + RoomSummary(d) + ")");
    }
  }
  return MergeHintsFor(single, d, memory_aligned_);
}

bool DemandContext::AllocateAnywhere() {
  const AdmissionDemand& d = demand_;
  // Each manager allocates anywhere; the Memory Manager takes its default hint, the narrowest
  // cell set with the memory free (its group rules hold).
  std::vector<int> memory_mask;
  if (memory_aligned_) {
    for (int size = 1; size <= cells_ && memory_mask.empty(); ++size)
      for (const std::vector<int>& m : MasksOfSize(cells_, size))
        if (MemoryMaskOk(d, m)) {
          memory_mask = m;
          break;
        }
    if (memory_mask.empty())
      return Refuse("UnexpectedAdmissionError", "the Memory Manager finds no guest cells with the memory free (" +
                                                    RoomSummary(d) + ")");
  }
  if (cpu_aligned_ || memory_aligned_) {
    std::vector<int> all(static_cast<size_t>(cells_));
    std::iota(all.begin(), all.end(), 0);
    std::string why;
    if (!PlaceOnCells(d, all, false, memory_mask, &placed_, &why))
      return Refuse("UnexpectedAdmissionError", "the kubelet's managers cannot allocate it: " + why);
    has_placement_ = true;
  }
  mask_ = memory_mask;
  return true;
}

bool DemandContext::MemoryMaskOk(const AdmissionDemand& d, const std::vector<int>& mask) const {
  const std::vector<std::vector<int>>& group = state_->group;
  const std::vector<int>& assignments = state_->assignments;
  const std::vector<std::map<uint64_t, uint64_t>>& hugepages = state_->cell_hugepages;
  const std::vector<uint64_t>& memory_free = memory_free_;
  if (mask.size() == 1 && group[static_cast<size_t>(mask[0])].size() > 1) return false;
  if (mask.size() > 1)
    for (int c : mask)
      if (assignments[static_cast<size_t>(c)] > 0 && group[static_cast<size_t>(c)] != mask) return false;
  uint64_t memory = 0;
  for (int c : mask) memory += memory_free[static_cast<size_t>(c)];
  if (memory < d.memory_mib) return false;
  for (const auto& [kib, want] : d.hugepages_mib) {
    uint64_t free = 0;
    for (int c : mask) {
      auto it = hugepages[static_cast<size_t>(c)].find(kib);
      free += it == hugepages[static_cast<size_t>(c)].end() ? 0 : it->second;
    }
    if (free < want) return false;
  }
  return true;
}

bool DemandContext::PlaceOnCells(const AdmissionDemand& d, const std::vector<int>& cells, bool one_cell,
                                 const std::vector<int>& memory_cells, placement::Placement* placed,
                                 std::string* why) const {
  const KubeletNode& n = node_;
  const NodeAdmission::State& state = *state_;
  const topology::HostTopology* host_ = &admission_.guest_topology();
  const CpuSet assignable = AssignableCpus(n);
  const bool whole = RequireWholeCores(n);
  // The host the engine sees: the whole guest, or only `cells` (node ids and device addresses kept,
  // so the node's usage applies unchanged).
  const bool all_cells = static_cast<int>(cells.size()) == n.cell_count();
  topology::HostTopology sub;
  if (!all_cells) {
    sub.hostname = host_->hostname;
    sub.packages = host_->packages;
    for (int c : cells) sub.numa_nodes.push_back(host_->numa_nodes[static_cast<size_t>(c)]);
    for (const topology::PciDevice& dev : host_->pci)
      if (dev.role == topology::PciRole::kHostBridge || std::count(cells.begin(), cells.end(), dev.numa_node))
        sub.pci.push_back(dev);
  }
  const topology::HostTopology& host = all_cells ? *host_ : sub;

  placement::PlacementRequest req;
  req.flavor = "pod";
  req.cpu_policy = placement::CpuPolicy::kDedicated;
  req.thread_policy = whole ? placement::ThreadPolicy::kRequire : placement::ThreadPolicy::kPrefer;
  req.page_size.kind = placement::PageSizeRequest::kSmall;
  const uint64_t memory = d.aligned_memory ? d.memory_mib : 0;
  // Engine cells: one, or one per cell of the set with the demand split in cell order (the
  // kubelet's Memory Manager fills a group's cells in order; its CPU Manager packs by topology).
  std::vector<int> cpus_per_cell;
  std::vector<uint64_t> memory_per_cell;
  if (one_cell) {
    cpus_per_cell = {d.exclusive_cpus};
    memory_per_cell = {memory};
  } else {
    int cpus_left = d.exclusive_cpus;
    uint64_t memory_left = memory;
    for (int c : cells) {
      const topology::NumaNode& nn = host_->numa_nodes[static_cast<size_t>(c)];
      const placement::NodeUsage* used = nullptr;
      if (auto it = state.usage.nodes.find(c); it != state.usage.nodes.end()) used = &it->second;
      int free = 0;
      for (const CpuSet& core : nn.cores) {
        const CpuSet usable = core.Intersect(assignable);
        const CpuSet left = used ? usable.Minus(used->pinned_cpus) : usable;
        if (whole) free += left.Count() == core.Count() && core.Count() > 1 ? left.Count() : 0;
        else free += left.Count();
      }
      int take = std::min(cpus_left, free);
      if (whole && take < cpus_left) take -= take % n.layout.threads_per_core;
      cpus_left -= take;
      cpus_per_cell.push_back(take);
      uint64_t base_used = 0;
      if (used)
        if (auto p = used->pages_used.find(4); p != used->pages_used.end()) base_used = p->second / 256;
      const uint64_t free_mib = n.cell_memory_mib[static_cast<size_t>(c)] > base_used
                                    ? n.cell_memory_mib[static_cast<size_t>(c)] - base_used
                                    : 0;
      const bool memory_here = memory_cells.empty() || std::count(memory_cells.begin(), memory_cells.end(), c) > 0;
      const uint64_t m = memory_here ? std::min(memory_left, free_mib) : 0;
      memory_left -= m;
      memory_per_cell.push_back(m);
    }
    if (cpus_left > 0 || memory_left > 0) {
      *why = "cells " + CellList(cells) + " have " +
             (cpus_left > 0 ? std::to_string(d.exclusive_cpus - cpus_left) + " of the " + std::to_string(d.exclusive_cpus) +
                                  " exclusive CPUs free"
                            : MiQuantity(memory - memory_left) + " of the " + MiQuantity(memory) + " of memory free");
      return false;
    }
  }
  int vcpu = 0;
  for (size_t i = 0; i < cpus_per_cell.size(); ++i) {
    placement::GuestCell cell;
    for (int j = 0; j < cpus_per_cell[i]; ++j) cell.dedicated_vcpus.Add(vcpu++);
    cell.memory_mib = memory_per_cell[i];
    req.cells.push_back(cell);
    req.memory_mib += cell.memory_mib;
  }
  req.vcpus = vcpu;
  const bool aligned_devices = n.topology_policy == "restricted" || n.topology_policy == "single-numa-node";
  if (aligned_devices)
    for (const auto& [name, count] : d.devices) {
      if (count <= 0) continue;
      const NodeResource* r = n.FindResource(name);
      if (r == nullptr || !r->aligned()) continue;
      placement::PciRequest pr;
      pr.alias = name;
      pr.count = count;
      placement::PciSpec spec;
      spec.alias = name;
      spec.vendor_id = kSyntheticVendorId;
      spec.product_id = static_cast<uint16_t>(r - n.resources.data());
      pr.specs.push_back(spec);
      pr.numa_policy = placement::PciNumaPolicy::kRequired;
      req.pci.push_back(pr);
    }
  placement::HostPolicy policy;
  policy.cpu_dedicated_set = assignable;
  placement::PlaceResult r = placement::Place(host, state.usage, policy, req);
  if (!r.fits()) {
    std::string s;
    for (const std::string& reason : r.no_fit.reasons) s += (s.empty() ? "" : "; ") + GuestWords(reason);
    *why = s;
    return false;
  }
  *placed = std::move(*r.placement);
  return true;
}

int DemandContext::FreePhysicalCpus() const {
  const NodeAdmission::State& state = *state_;
  const topology::HostTopology* host_ = &admission_.guest_topology();
  const CpuSet assignable = AssignableCpus(node_);
  int free = 0;
  for (const topology::NumaNode& nn : host_->numa_nodes) {
    CpuSet pinned;
    if (auto it = state.usage.nodes.find(nn.id); it != state.usage.nodes.end()) pinned = it->second.pinned_cpus;
    for (const CpuSet& core : nn.cores)
      if (core.IsSubsetOf(assignable) && !core.Intersects(pinned)) free += core.Count();
  }
  return free;
}

std::string DemandContext::RoomSummary(const AdmissionDemand& d) const {
  const KubeletNode& n = node_;
  const NodeAdmission::State& state = *state_;
  const topology::HostTopology* host_ = &admission_.guest_topology();
  const CpuSet assignable = AssignableCpus(n);
  const bool whole = RequireWholeCores(n);
  std::map<int, std::map<int, int>> devices_used;  // cell -> resource index -> held
  for (const std::string& address : state.usage.devices)
    if (const topology::PciDevice* dev = host_->FindPci(address)) ++devices_used[dev->numa_node][dev->device_id];
  std::string s;
  for (const topology::NumaNode& nn : host_->numa_nodes) {
    const size_t c = static_cast<size_t>(nn.id);
    const placement::NodeUsage* used = nullptr;
    if (auto it = state.usage.nodes.find(nn.id); it != state.usage.nodes.end()) used = &it->second;
    std::vector<std::string> parts;
    if (d.exclusive_cpus > 0) {
      int free = 0;
      for (const CpuSet& core : nn.cores) {
        const CpuSet left = used ? core.Intersect(assignable).Minus(used->pinned_cpus) : core.Intersect(assignable);
        free += whole ? (left == core && core.Count() > 1 ? left.Count() : 0) : left.Count();
      }
      parts.push_back(std::to_string(free) + (whole ? " CPUs in free whole cores" : " free CPUs"));
    }
    if (d.aligned_memory) {
      uint64_t held = 0;
      if (used)
        if (auto p = used->pages_used.find(4); p != used->pages_used.end()) held = p->second / 256;
      parts.push_back(MiQuantity(n.cell_memory_mib[c] > held ? n.cell_memory_mib[c] - held : 0) + " memory");
      for (const auto& [kib, mib] : d.hugepages_mib) {
        auto it = state.cell_hugepages[c].find(kib);
        parts.push_back(MiQuantity(it == state.cell_hugepages[c].end() ? 0 : it->second) + " " + HugepageResourceName(kib));
      }
    }
    for (const auto& [name, count] : d.devices) {
      const NodeResource* r = n.FindResource(name);
      if (r == nullptr || !r->aligned()) continue;
      const int index = static_cast<int>(r - n.resources.data());
      parts.push_back(std::to_string(r->per_cell[c] - devices_used[nn.id][index]) + " " + name);
    }
    std::string cell;
    for (const std::string& p : parts) cell += (cell.empty() ? "" : ", ") + p;
    s += (s.empty() ? "" : "; ") + ("cell " + std::to_string(c) + ": " + (cell.empty() ? "-" : cell));
  }
  return s;
}

void DemandContext::Keep() {
  const placement::Placement* p = has_placement_ ? &placed_ : nullptr;
  const AdmissionDemand& d = demand_;
  const std::vector<int>& mask = mask_;
  const bool memory_group = memory_aligned_;
  NodeAdmission::State* state = state_;
  Admission* out = out_;
  std::map<int, CellShare> shares;
  if (p != nullptr) {
    const std::string error = state->usage.Apply(*p);
    if (!error.empty()) throw std::logic_error("pod admission: " + error);
    for (const placement::CellPlacement& cp : p->cells) {
      CellShare& s = shares[cp.host_node];
      s.cell = cp.host_node;
      for (const auto& [vcpu, cpu] : cp.pinning) s.cpus.Add(cpu);
      s.memory_mib += cp.memory_mib;
    }
    for (const placement::DevicePlacement& dp : p->devices) {
      CellShare& s = shares[dp.numa_node];
      s.cell = dp.numa_node;
      ++s.devices[dp.request_alias];
    }
    out->placements.push_back(*p);
  }
  if (d.aligned_memory) {
    for (const auto& [kib, want] : d.hugepages_mib) {
      uint64_t left = want;
      for (int c : mask) {
        uint64_t& free = state->cell_hugepages[static_cast<size_t>(c)][kib];
        const uint64_t take = std::min(left, free);
        if (take == 0) continue;
        free -= take;
        left -= take;
        shares[c].cell = c;
        shares[c].hugepages_mib[kib] += take;
      }
    }
    if (memory_group) {
      for (int c : mask) {
        ++state->assignments[static_cast<size_t>(c)];
        state->group[static_cast<size_t>(c)] = mask;
      }
      out->memory_masks.push_back(mask);
    }
  }
  // Merge into the pod's per-cell view (ascending by cell).
  for (auto& [cell, share] : shares) {
    auto it = std::find_if(out->cells.begin(), out->cells.end(), [&, cell = cell](const CellShare& s) { return s.cell == cell; });
    if (it == out->cells.end()) {
      out->cells.push_back(share);
      continue;
    }
    it->cpus = it->cpus.Union(share.cpus);
    it->memory_mib += share.memory_mib;
    for (const auto& [kib, mib] : share.hugepages_mib) it->hugepages_mib[kib] += mib;
    for (const auto& [name, count] : share.devices) it->devices[name] += count;
  }
  std::sort(out->cells.begin(), out->cells.end(), [](const CellShare& a, const CellShare& b) { return a.cell < b.cell; });
}

}  // namespace accel::kubelet
