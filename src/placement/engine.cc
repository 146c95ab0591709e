#include "placement/engine.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <set>
#include <span>

#include "common/min_cost_assignment.h"
#include "placement/cell_fit.h"
#include "placement/gpu_fit.h"
#include "placement/node_view.h"
#include "placement/pci_fit.h"
#include "common/small_vector.h"

namespace accel::placement {

namespace {

// Score levels, most important first, packed into one AssignmentCost per (cell, node):
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
static_assert(kAccelShift + kAccelBits <= 64, "one cell's levels below pci must fit in 64 bits");
// A budget on node subsets examined for PCI affinity; real hosts need a few hundred at most.
constexpr int kMaxSubsets = 50000;

AssignmentCost Level(long value, int bits, int shift) {
  long cap = (1L << bits) - 1;
  return static_cast<AssignmentCost>(std::clamp(value, 0L, cap)) << shift;
}


// What the search reads of a host: a HostState's parts, or views built for one call.
struct HostView {
  const topology::HostTopology& topology;
  const HostUsage& usage;
  const HostPolicy& policy;
  const std::vector<NodeView>& nodes;
  const FloatingRoom& room;
};

// Costs, nodes and demands per call: inline up to these sizes, so typical calls allocate nothing.
using CostMatrix = SmallVector<AssignmentCost, 64>;
using NodeList = SmallVector<int, 16>;
// One flag per host node: the nodes a guest sits on, for DevicePool::Choose.
using NodeMask = SmallVector<uint8_t, 16>;

// The search over one request. Costs live in a flat [cell][node] matrix; kForbidden marks a
// pair that does not fit. Pairs are first judged from counts (CountCell); only if a chosen pair
// then fails its exact fit is everything redone with FitCell ("exact" mode).
struct Search {
  const HostView& host;
  const PlacementRequest& req;
  const std::vector<NodeView>& nodes;
  const DevicePool& pool;
  const size_t k, n;
  const bool wants_pci, pack;
  Search(const HostView& h, const PlacementRequest& r, const DevicePool& d)
      : host(h), req(r), nodes(h.nodes), pool(d), k(r.cells.size()), n(h.nodes.size()),
        wants_pci(!r.pci.empty()), pack(h.policy.strategy == Strategy::kPack) {}

  SmallVector<CellDemand, 8> demand;  // [cell]
  CostMatrix cost;                    // [cell * n + node]
  bool same_rows = false;             // every cell's row of `cost` is the same
  bool exact = false;
  std::vector<CellFit> exact_fits;    // [cell * n + node], exact mode only

  bool has_best = false;
  AssignmentCost best_cost = 0;
  NodeList best_nodes;
  DeviceChoice best_devices;
  int subsets = 0;

  // The levels below pci fit in 64 bits for one cell; they are built there and widened once.
  AssignmentCost CellCost(int h, int whole_cores_broken, int free_threads_after) const {
    auto level = [](long value, int bits, int shift) {
      return static_cast<uint64_t>(std::clamp(value, 0L, (1L << bits) - 1)) << shift;
    };
    const long max_fill = (1L << kFillBits) - 1;
    uint64_t low = level(whole_cores_broken, kCoreBits, kCoreShift) +
                   level(pack ? free_threads_after : max_fill - free_threads_after, kFillBits, kFillShift) +
                   level(h, kNodeBits, 0);
    if (!wants_pci) return static_cast<AssignmentCost>(low + level(nodes[h].free_accelerators, kAccelBits, kAccelShift));
    return static_cast<AssignmentCost>(low) + (pool.DevicesOnNode(h) == 0 ? Level(1, 1, kPciShift) : 0);
  }

  bool Usable(size_t h) const {
    for (size_t g = 0; g < k; ++g)
      if (cost[g * n + h] < kForbidden) return true;
    return false;
  }

  size_t UsableCount() const {
    size_t count = 0;
    for (size_t h = 0; h < n; ++h) count += Usable(h) ? 1 : 0;
    return count;
  }

  // Costs of every (cell, node) pair, then the best assignment. Cells with the same demand as
  // the previous one get its row: a count answer depends on the demand only.
  void Evaluate(bool exact_mode) {
    exact = exact_mode;
    cost.assign(k * n, kForbidden);
    if (exact) exact_fits.assign(k * n, CellFit());
    const bool emulator = req.emulator_policy == EmulatorPolicy::kIsolate;
    for (size_t g = 0; g < k; ++g) {
      AssignmentCost* row = &cost[g * n];
      if (!exact && g > 0 && demand[g] == demand[g - 1]) {
        std::copy(row - n, row, row);
        continue;
      }
      for (size_t h = 0; h < n; ++h) {
        const int hi = static_cast<int>(h);
        if (exact) {
          CellFit& f = exact_fits[g * n + h];
          f = FitCell(nodes[h], req.cells[g], req, emulator && g == 0);
          if (f.ok) row[h] = CellCost(hi, f.whole_cores_broken, f.free_threads_after);
        } else {
          const CellCount c = CountCell(nodes[h], demand[g], req, nullptr);
          if (c.ok) row[h] = CellCost(hi, c.whole_cores_broken, c.free_threads_after);
        }
      }
    }
    same_rows = true;
    for (size_t g = 1; g < k && same_rows; ++g)
      same_rows = std::equal(&cost[g * n], &cost[g * n] + n, &cost[0]);
    has_best = false;
    subsets = 0;
    if (pool.Constrains()) {
      NodeList candidates;
      for (int h : pool.ConstrainingNodes())
        if (Usable(h)) candidates.push_back(h);
      EnumerateSubsets(candidates);
    } else {
      TryForced({});
    }
  }

  // Best assignment whose nodes include every node in `forced`; keeps it if better than best.
  void TryForced(std::span<const int> forced) {
    if (k == 1) return TryForcedOneCell(forced);
    const AssignmentCost* c = cost.data();
    CostMatrix forced_cost;
    if (!forced.empty()) {
      forced_cost = cost;
      const AssignmentCost bonus = static_cast<AssignmentCost>(1) << kForceShift;
      for (size_t g = 0; g < k; ++g)
        for (int h : forced)
          if (forced_cost[g * n + h] < kForbidden) forced_cost[g * n + h] -= bonus;
      c = forced_cost.data();
    }
    NodeList assign;
    assign.resize(k);
    const int rows = static_cast<int>(k), cols = static_cast<int>(n);
    // Forcing subtracts the same bonus from every row, so equal rows stay equal.
    if (!(same_rows ? SameRowsAssignment(c, rows, cols, assign.data())
                    : MinCostAssignment(c, rows, cols, assign.data())))
      return;
    AssignmentCost total = 0;
    for (size_t g = 0; g < k; ++g) total += cost[g * n + assign[g]];
    for (int h : forced)
      if (std::find(assign.begin(), assign.end(), h) == assign.end()) return;
    if (has_best && total >= best_cost) return;  // the devices cannot make it better
    DeviceChoice devices;
    if (!req.pci.empty()) {
      NodeMask on_node(n, 0);
      for (int h : assign) on_node[h] = 1;
      if (!pool.Choose(on_node, false, &devices)) return;
    }
    has_best = true;
    best_cost = total;
    best_nodes = assign;
    best_devices = devices;
  }

  // One guest cell: the assignment is the cheapest allowed node, no Hungarian needed.
  void TryForcedOneCell(std::span<const int> forced) {
    if (forced.size() > 1) return;
    int best = -1;
    for (size_t h = 0; h < n; ++h) {
      if (cost[h] >= kForbidden || (!forced.empty() && forced[0] != static_cast<int>(h))) continue;
      if (best < 0 || cost[h] < cost[best]) best = static_cast<int>(h);
    }
    if (best < 0) return;
    if (has_best && cost[best] >= best_cost) return;  // the devices cannot make it better
    DeviceChoice devices;
    if (!req.pci.empty()) {
      NodeMask on_node(n, 0);
      on_node[best] = 1;
      if (!pool.Choose(on_node, false, &devices)) return;
    }
    has_best = true;
    best_cost = cost[best];
    best_nodes.assign(1, best);
    best_devices = devices;
  }

  bool Satisfiable(std::span<const int> node_set) const {
    NodeMask on_node(n, 0);
    for (int h : node_set) on_node[h] = 1;
    return pool.Choose(on_node, false, nullptr);
  }

  // Depth-first over subsets T of the constraining nodes (|T| ≤ cells) that can supply the
  // devices; each satisfiable T is handed to TryForced and not extended (supersets add nothing
  // a forced assignment of T would not find).
  void EnumerateSubsets(const NodeList& candidates) {
    NodeList t;
    SubsetsFrom(candidates, 0, 0, t);
  }

  // One step of EnumerateSubsets: T = *t, extended by candidates from `start` on.
  void SubsetsFrom(const NodeList& candidates, size_t start, int devices_in_t, NodeList& t) {
    if (++subsets > kMaxSubsets) return;
    if (Satisfiable(t)) {
      TryForced(t);
      return;
    }
    const int cells = static_cast<int>(k);
    if (static_cast<int>(t.size()) == cells) return;
    const bool count_bound = !pool.HasSocketPolicy();
    SmallVector<int, 16> rest;
    for (size_t i = start; i < candidates.size(); ++i) {
      if (count_bound) {
        // Devices reachable: T's plus the richest (k - |T|) nodes from i on.
        rest.clear();
        for (size_t j = i; j < candidates.size(); ++j) rest.push_back(pool.DevicesOnNode(candidates[j]));
        std::sort(rest.begin(), rest.end(), std::greater<int>());
        int reach = devices_in_t + pool.DevicesOnNode(-1);
        for (size_t j = 0; j < rest.size() && static_cast<int>(j) < cells - static_cast<int>(t.size()); ++j)
          reach += rest[j];
        if (reach < pool.ConstrainedSlots()) return;
      }
      t.push_back(candidates[i]);
      SubsetsFrom(candidates, i + 1, devices_in_t + pool.DevicesOnNode(candidates[i]), t);
      t.pop_back();
    }
  }

  // Why cell g does not fit on node h, in the mode of the last evaluation.
  std::string Reason(size_t g, size_t h) const {
    if (exact) return exact_fits[g * n + h].reason;
    std::string why;
    const bool emulator = req.emulator_policy == EmulatorPolicy::kIsolate && g == 0;
    CountCell(nodes[h], DemandOf(req.cells[g], emulator), req, &why);
    return why;
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

// Appends the chosen devices; each is local to the guest cell on its node, if any.
void AddDevices(const DeviceChoice& chosen, const PlacementRequest& req, Placement* p) {
  p->devices.reserve(p->devices.size() + chosen.size());
  for (const auto& [r, d] : chosen) {
    DevicePlacement dp{req.pci[r].alias, d->address, d->vendor_id, d->device_id, d->numa_node, -1};
    for (const CellPlacement& c : p->cells)
      if (c.host_node == d->numa_node) dp.guest_cell = c.guest_cell;
    if (dp.guest_cell < 0 && !req.cells.empty())
      p->notes.push_back("device " + d->address + " (" + req.pci[r].alias + ") is not local to any guest cell (policy " +
                         PciNumaPolicyName(req.pci[r].numa_policy) + ")");
    p->devices.push_back(std::move(dp));
  }
}

// The GPU choice the engine makes on its own for a request with a GpuRequest (a fleet scheduler
// makes it by its policy instead): a share on the fullest GPU it fits (best fit: free GPUs stay
// free); a MIG slice on the GPU with the most slices in use, at its first allowed start; whole
// GPUs as GpuChoices packs them.
GpuChoice DefaultGpuChoice(const std::vector<GpuSlot>& slots, std::vector<GpuChoice> choices) {
  auto key = [&](const GpuChoice& c) {
    const GpuSlot& s = slots[static_cast<size_t>(c.gpus.front())];
    return c.mig_start >= 0 ? -std::popcount(s.mig_slices) : s.free_milli;
  };
  return *std::min_element(choices.begin(), choices.end(),
                           [&](const GpuChoice& a, const GpuChoice& b) { return key(a) < key(b); });
}

// Adds the GPU part of `req` to `p`, a placement of its cells: `gpu_choice` when given (it must
// be one GpuChoices offers), else the choice whose GPUs are all on the cells' host nodes (then
// any), by DefaultGpuChoice among equals — GPUs passed through in `p` excluded. Returns "" or
// why no GPU can be given.
std::string AddGpusBesideCells(const HostView& host, const PlacementRequest& req, const GpuChoice* gpu_choice,
                               Placement* p) {
  const std::vector<const topology::PciDevice*> accelerators = AcceleratorsOf(host.topology);
  std::vector<GpuSlot> slots = GpuSlotsOf(accelerators, host.usage);
  for (const DevicePlacement& d : p->devices)
    for (size_t i = 0; i < accelerators.size(); ++i)
      if (accelerators[i]->address == d.address) slots[i].whole_held = true, slots[i].free_milli = 0;
  std::string why;
  std::vector<GpuChoice> choices = GpuChoices(accelerators, slots, *req.gpu, &why);
  if (choices.empty()) return why;
  if (gpu_choice) {
    for (const GpuChoice& c : choices)
      if (c.gpus == gpu_choice->gpus && c.mig_start == gpu_choice->mig_start) {
        p->gpus = GpuPlacementsOf(accelerators, c, *req.gpu);
        return "";
      }
    return "the chosen GPUs cannot take the request";
  }
  std::set<int> nodes;
  for (const CellPlacement& c : p->cells) nodes.insert(c.host_node);
  std::vector<GpuChoice> local;
  for (const GpuChoice& c : choices)
    if (std::all_of(c.gpus.begin(), c.gpus.end(),
                    [&](int g) { return nodes.count(accelerators[static_cast<size_t>(g)]->numa_node) > 0; }))
      local.push_back(c);
  const GpuChoice chosen = DefaultGpuChoice(slots, local.empty() ? std::move(choices) : std::move(local));
  p->gpus = GpuPlacementsOf(accelerators, chosen, *req.gpu);
  for (const GpuPlacement& g : p->gpus)
    if (!nodes.count(g.numa_node))
      p->notes.push_back("GPU " + g.address + " is not local to any guest cell (no free local GPU could take it)");
  return "";
}

// A guest without NUMA cells: shared vCPUs and pod CPU (thousandths) against the shared
// capacity, memory against base pages, PCI devices anywhere, GPUs by model and size — with
// `gpu_choice` when the caller chose them (it must be one GpuChoices gives), else by
// DefaultGpuChoice.
PlaceResult PlaceFloating(const HostView& host, const PlacementRequest& req, const DevicePool& pool,
                          const GpuChoice* gpu_choice) {
  PlaceResult result;
  const FloatingRoom& room = host.room;
  const int used = room.vcpus_used;
  const double capacity = room.vcpu_capacity;
  const uint64_t free_mib = room.free_base_mib;
  // In whole vCPUs while no pod CPU is involved (Nova's rule and message); in thousandths as
  // soon as the request or the host's floating guests hold any, so a VM counts what pods hold.
  const bool in_milli = req.cpu_milli > 0 || room.cpu_milli_used > 0;
  if (!in_milli && used + req.vcpus > capacity)
    result.no_fit.reasons.push_back("host: " + std::to_string(used) + " shared vCPUs already on a capacity of " +
                                    std::to_string(static_cast<long>(capacity)) + " (cpu_allocation_ratio " +
                                    std::to_string(host.policy.cpu_allocation_ratio) + "); needs " +
                                    std::to_string(req.vcpus) + " more");
  if (in_milli) {
    const int64_t used_milli = int64_t{used} * 1000 + room.cpu_milli_used;
    const int64_t want = int64_t{req.vcpus} * 1000 + req.cpu_milli;
    const auto capacity_milli = static_cast<int64_t>(capacity * 1000 + 0.5);
    if (used_milli + want > capacity_milli)
      result.no_fit.reasons.push_back("host: " + std::to_string(capacity_milli - used_milli) +
                                      " CPU thousandths free of a shared capacity of " + std::to_string(capacity_milli) +
                                      ", needs " + std::to_string(want));
  }
  if (free_mib < req.memory_mib)
    result.no_fit.reasons.push_back("host: " + std::to_string(free_mib) + " MiB of base-page memory free, needs " +
                                    std::to_string(req.memory_mib));
  DeviceChoice chosen;
  if (!pool.Choose(NodeMask(host.nodes.size(), 0), true, &chosen)) {
    std::string why = PciShortfall(req, pool);
    result.no_fit.reasons.push_back(why.empty() ? "not enough free matching PCI devices" : why);
  }
  std::vector<GpuPlacement> gpus;
  if (req.gpu) {
    const std::vector<const topology::PciDevice*> accelerators = AcceleratorsOf(host.topology);
    std::vector<GpuSlot> slots = GpuSlotsOf(accelerators, host.usage);
    // A GPU this placement passes through for a PCI alias is not free for its GPU request.
    for (const auto& [r, d] : chosen)
      for (size_t i = 0; i < accelerators.size(); ++i)
        if (accelerators[i]->address == d->address) {
          slots[i].whole_held = true;
          slots[i].free_milli = 0;
        }
    std::string why;
    std::vector<GpuChoice> choices = GpuChoices(accelerators, slots, *req.gpu, &why);
    if (choices.empty()) {
      result.no_fit.reasons.push_back("GPUs: " + why);
    } else if (gpu_choice) {
      // The offered choice, not the caller's copy: its geometry (slices of the instance and of
      // the GPU) is what GpuChoices computed for this host.
      const auto offered = std::find_if(choices.begin(), choices.end(), [&](const GpuChoice& c) {
        return c.gpus == gpu_choice->gpus && c.mig_start == gpu_choice->mig_start;
      });
      if (offered == choices.end()) result.no_fit.reasons.push_back("GPUs: the chosen GPUs cannot take the request");
      else gpus = GpuPlacementsOf(accelerators, *offered, *req.gpu);
    } else {
      gpus = GpuPlacementsOf(accelerators, DefaultGpuChoice(slots, std::move(choices)), *req.gpu);
    }
  }
  if (!result.no_fit.reasons.empty()) return result;
  Placement& p = result.placement.emplace();
  p.host = host.topology.hostname;
  p.flavor = req.flavor;
  p.floating_vcpus = req.vcpus;
  p.floating_memory_mib = req.memory_mib;
  p.floating_cpu_milli = req.cpu_milli;
  p.gpus = std::move(gpus);
  AddDevices(chosen, req, &p);
  return result;
}

// Fills *p from the best assignment of `s`, choosing the CPUs of each pair (FitCell; in exact
// mode the fits are already there and are moved out). Returns false, with *p partly filled,
// when a pair judged from counts fails its exact fit.
bool Materialize(Search& s, Placement* p) {
  const PlacementRequest& req = s.req;
  const bool emulator = req.emulator_policy == EmulatorPolicy::kIsolate;
  p->host = s.host.topology.hostname;
  p->flavor = req.flavor;
  p->cells.reserve(req.cells.size());
  for (size_t g = 0; g < req.cells.size(); ++g) {
    const int h = s.best_nodes[g];
    CellFit f = s.exact ? std::move(s.exact_fits[g * s.n + h]) : FitCell(s.nodes[h], req.cells[g], req, emulator && g == 0);
    if (!f.ok) return false;
    // Built from its parts in one go: constructing it empty and assigning would clear every
    // CPU set first, and this is on the path of every call.
    p->cells.push_back(CellPlacement{static_cast<int>(g), s.nodes[h].id, std::move(f.pinning),
                                     req.cells[g].shared_vcpus, std::move(f.shared_cpus),
                                     std::move(f.consumed), req.cells[g].memory_mib, f.page_size_kib,
                                     f.pages});
    if (!f.emulator_cpus.Empty()) p->emulator_cpus = p->emulator_cpus.Union(f.emulator_cpus);
    if (!f.emulator_consumed.Empty())
      p->emulator_consumed_cpus = p->emulator_consumed_cpus.Union(f.emulator_consumed);
  }
  AddDevices(s.best_devices, req, p);
  return true;
}

// Reasons for a no-fit of a guest with NUMA cells: per node, why no cell fits there; then
// the global cause (too few nodes).
NoFit Explain(const Search& s) {
  NoFit nf;
  const size_t k = s.k;
  for (size_t h = 0; h < s.n; ++h) {
    std::set<std::string> seen;
    for (size_t g = 0; g < k; ++g) {
      if (s.cost[g * s.n + h] < kForbidden) continue;
      std::string reason = s.Reason(g, h);
      if (seen.insert(reason).second)
        nf.reasons.push_back(reason + (k > 1 ? " (guest cell " + std::to_string(g) + ")" : ""));
    }
  }
  const size_t usable = s.UsableCount();
  if (usable > 0 && usable < k)
    nf.reasons.push_back("guest has " + std::to_string(k) + " NUMA cells but only " +
                         std::to_string(usable) + " host nodes can hold one");
  return nf;
}

// The search on one host view; Place() gives it a HostState's views or views built for the call.
PlaceResult PlaceOn(const HostView& host, const PlacementRequest& req, const GpuChoice* gpu_choice = nullptr) {
  const std::vector<NodeView>& nodes = host.nodes;
  const DevicePool pool(host.topology, host.usage, nodes, req.pci);
  if (req.cells.empty()) return PlaceFloating(host, req, pool, gpu_choice);
  if (req.cpu_milli > 0) {
    PlaceResult result;
    result.no_fit.reasons.push_back("CPU thousandths are for guests without NUMA cells; this request has " +
                                    std::to_string(req.cells.size()));
    return result;
  }
  if (req.gpu) {
    // A vGPU flavor with a NUMA topology: the cells first, then the GPU part beside them.
    PlacementRequest cells_only = req;
    cells_only.gpu.reset();
    PlaceResult result = PlaceOn(host, cells_only);
    if (!result.fits()) return result;
    if (std::string why = AddGpusBesideCells(host, req, gpu_choice, &*result.placement); !why.empty()) {
      result.placement.reset();
      result.no_fit.reasons.push_back("GPUs: " + why);
    }
    return result;
  }

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
  Search s(host, req, pool);
  const bool emulator = req.emulator_policy == EmulatorPolicy::kIsolate;
  for (size_t g = 0; g < k; ++g) s.demand.push_back(DemandOf(req.cells[g], emulator && g == 0));
  // Counts are exact except for shared vCPUs on partly overlapping CPU sets, so the chosen
  // pairs are confirmed with FitCell and the search redone exactly if one fails.
  s.Evaluate(false);
  if (s.has_best) {
    if (Materialize(s, &result.placement.emplace())) return result;
    result.placement.reset();
    s.Evaluate(true);
    if (s.has_best) {
      Materialize(s, &result.placement.emplace());
      return result;
    }
  }
  result.no_fit = Explain(s);
  const size_t usable = s.UsableCount();
  if (usable >= k && !req.pci.empty()) {
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

}  // namespace

PlaceResult Place(const HostState& state, const PlacementRequest& req) {
  return PlaceOn({state.host(), state.usage(), state.policy(), state.nodes(), state.floating_room()}, req);
}

// The same search on views built for this call: counts only, a node's cores built when a guest
// lands on it, nothing copied.
PlaceResult Place(const topology::HostTopology& host, const HostUsage& usage,
                  const HostPolicy& policy, const PlacementRequest& req) {
  const std::vector<NodeView> nodes = BuildNodeViews(host, usage, policy);
  const FloatingRoom room = FloatingRoomOf(nodes, usage);
  return PlaceOn({host, usage, policy, nodes, room}, req);
}

PlaceResult PlaceWithGpuChoice(const topology::HostTopology& host, const HostUsage& usage,
                               const HostPolicy& policy, const PlacementRequest& req, const GpuChoice& choice) {
  const std::vector<NodeView> nodes = BuildNodeViews(host, usage, policy);
  const FloatingRoom room = FloatingRoomOf(nodes, usage);
  return PlaceOn({host, usage, policy, nodes, room}, req, req.gpu ? &choice : nullptr);
}

}  // namespace accel::placement
