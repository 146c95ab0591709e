// PlanTuning: place the flavors' instances one by one with the placement engine on the host as
// it will be once tuned, then reserve exactly the pages they took and isolate the CPUs pinned
// guests may use.
#include "tuning/tune_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/error.h"
#include "placement/engine.h"
#include "tuning/tune_internal.h"

namespace accel::tuning {

namespace {

using placement::HostPolicy;
using placement::HostUsage;
using placement::PlacementRequest;

constexpr uint64_t kMib = 1024;  // KiB per MiB
// A flavor without a count that requests devices is placed until it no longer fits; devices
// bound that, but guard against a request that takes none (count 0 cannot pass BuildRequest).
constexpr int kMaxInstancesPerFlavor = 4096;

// What one flavor asks, with how many instances of it to plan (-1: as many as fit).
struct Wanted {
  size_t index = 0;  // into the flavors
  PlacementRequest request;
  int count = 1;
  bool named = false;
};

bool Pins(const PlacementRequest& r) {
  return r.cpu_policy != placement::CpuPolicy::kShared ||
         r.emulator_policy == placement::EmulatorPolicy::kIsolate;
}

int DeviceCount(const PlacementRequest& r) {
  int n = 0;
  for (const placement::PciRequest& p : r.pci) n += p.count;
  return n;
}

int DedicatedVcpus(const PlacementRequest& r) {
  if (r.cells.empty()) return 0;
  int n = 0;
  for (const placement::GuestCell& c : r.cells) n += c.dedicated_vcpus.Count();
  return n;
}

// Largest first, so that small instances fill the gaps big ones leave (first-fit decreasing).
bool Bigger(const Wanted& a, const Wanted& b) {
  auto key = [](const Wanted& w) {
    return std::make_tuple(DeviceCount(w.request), DedicatedVcpus(w.request), w.request.vcpus,
                           w.request.memory_mib);
  };
  return key(a) > key(b);
}

std::string FirstReasons(const placement::NoFit& no_fit) {
  std::string s;
  for (size_t i = 0; i < no_fit.reasons.size() && i < 2; ++i)
    s += (s.empty() ? "" : "; ") + no_fit.reasons[i];
  if (no_fit.reasons.size() > 2) s += "; ...";
  return s.empty() ? "no reason given" : s;
}

std::string Instances(int n) { return std::to_string(n) + (n == 1 ? " instance" : " instances"); }

// The housekeeping CPUs of a node: its first `cores` physical cores (the boot CPU's core first
// on node 0, which nohz_full must never hold anyway).
CpuSet HousekeepingOf(const topology::NumaNode& node, int cores) {
  CpuSet hk;
  for (size_t c = 0; c < node.cores.size() && c < static_cast<size_t>(cores); ++c)
    hk = hk.Union(node.cores[c]);
  return hk;
}

// Places instances on a planning copy of the host whose hugepage pools are as large as each
// node's memory budget still allows, re-cut before every placement so that all page sizes draw
// from one budget.
class Planner {
 public:
  Planner(const topology::HostTopology& host, std::vector<uint64_t> budget_kib, HostPolicy policy)
      : planning_(host), budget_kib_(std::move(budget_kib)), policy_(std::move(policy)) {}

  // Places one instance; on success the usage holds it.
  placement::PlaceResult Place(const PlacementRequest& request) {
    CutPools();
    placement::PlaceResult result = placement::Place(planning_, usage_, policy_, request);
    if (result.fits() && !usage_.Apply(*result.placement).empty()) {
      // Cannot happen for a placement the engine just made on this usage; refuse it if it did.
      result.no_fit.reasons = {"the engine returned a double booking"};
      result.placement.reset();
    }
    return result;
  }

  const HostUsage& usage() const { return usage_; }

 private:
  uint64_t UsedKib(int node_id) const {
    auto it = usage_.nodes.find(node_id);
    if (it == usage_.nodes.end()) return 0;
    uint64_t kib = 0;
    for (const auto& [size, pages] : it->second.pages_used) kib += size * pages;
    return kib;
  }

  uint64_t PagesUsed(int node_id, uint64_t size) const {
    auto it = usage_.nodes.find(node_id);
    if (it == usage_.nodes.end()) return 0;
    auto p = it->second.pages_used.find(size);
    return p == it->second.pages_used.end() ? 0 : p->second;
  }

  void CutPools() {
    // Guests without NUMA topology take base pages from anywhere: charge them to the nodes in
    // proportion to their budgets.
    uint64_t total_budget = 0;
    for (uint64_t b : budget_kib_) total_budget += b;
    const uint64_t floating_kib = usage_.floating_memory_mib * kMib;
    for (size_t i = 0; i < planning_.numa_nodes.size(); ++i) {
      topology::NumaNode& node = planning_.numa_nodes[i];
      uint64_t base_kib = node.pages.empty() ? 4 : node.pages[0].size_kib;
      uint64_t share = total_budget == 0 || floating_kib == 0
                           ? 0
                           : static_cast<uint64_t>(static_cast<long double>(floating_kib) *
                                                   budget_kib_[i] / total_budget) + 1;
      uint64_t used = UsedKib(node.id) + share;
      uint64_t left = budget_kib_[i] > used ? budget_kib_[i] - used : 0;
      uint64_t base_left = left + std::min(share, budget_kib_[i]);
      node.pages = {{base_kib, PagesUsed(node.id, base_kib) + base_left / base_kib, 0}};
      for (uint64_t size : {kPage2M, kPage1G})
        if (size > base_kib) node.pages.push_back({size, PagesUsed(node.id, size) + left / size, 0});
      for (topology::HugepagePool& p : node.pages) p.free = p.total;
    }
  }

  topology::HostTopology planning_;
  std::vector<uint64_t> budget_kib_;  // per numa_nodes index: memory guests may take
  HostPolicy policy_;
  HostUsage usage_;
};

void CheckOptions(const std::vector<placement::Flavor>& flavors, const TuneOptions& options) {
  if (options.housekeeping_cores_per_node < 1)
    throw InputError("tune options", "housekeeping_cores_per_node",
                     "must be at least 1 (got " + std::to_string(options.housekeeping_cores_per_node) + ")",
                     "the kernel needs housekeeping CPUs for IRQs, RCU callbacks and timers");
  if (options.spare_pages_per_node < 0)
    throw InputError("tune options", "spare_pages_per_node", "must not be negative");
  std::set<std::string> names;
  for (const placement::Flavor& f : flavors)
    if (!names.insert(f.name).second)
      throw InputError("flavor " + f.name, "name", "two flavors are called \"" + f.name + "\"",
                       "give every flavor its own name");
  for (const auto& [name, count] : options.counts) {
    if (!names.count(name)) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      throw InputError("--count", name, "names no flavor", "flavors: " + known);
    }
    if (count < 0)
      throw InputError("--count", name, "must not be negative (got " + std::to_string(count) + ")");
  }
}

// Memory per node kept in base pages for the host, in MiB.
uint64_t HostMemoryMib(const topology::NumaNode& node, const TuneOptions& options) {
  uint64_t node_mib = node.memory_kib / kMib;
  uint64_t want = options.host_memory_mib_per_node > 0
                      ? options.host_memory_mib_per_node
                      : std::max<uint64_t>(4096, (node_mib + 31) / 32);
  return std::min(want, node_mib);
}

void SplitCpus(const topology::HostTopology& host, const TuneOptions& options, bool pin,
               TunePlan* plan) {
  for (const topology::NumaNode& node : host.numa_nodes) {
    NodePlan np;
    np.node = node.id;
    np.housekeeping = pin ? HousekeepingOf(node, options.housekeeping_cores_per_node) : node.cpus;
    np.dedicated = node.cpus.Minus(np.housekeeping);
    np.host_memory_mib = HostMemoryMib(node, options);
    plan->dedicated = plan->dedicated.Union(np.dedicated);
    plan->housekeeping = plan->housekeeping.Union(np.housekeeping);
    plan->nodes.push_back(std::move(np));
  }
}

void Record(const std::string& instance, const placement::Placement& p, TunePlan* plan) {
  plan->planned.push_back(instance);
  plan->placements.push_back(p);
  for (const placement::CellPlacement& cell : p.cells) {
    for (NodePlan& np : plan->nodes) {
      if (np.node != cell.host_node) continue;
      if (np.guests.empty() || np.guests.back() != instance) np.guests.push_back(instance);
      if (cell.page_size_kib == kPage1G) np.pages_1g += cell.pages;
      if (cell.page_size_kib == kPage2M) np.pages_2m += cell.pages;
    }
  }
}

}  // namespace

placement::PciAliasTable DefaultAliases(const topology::HostTopology& host) {
  std::map<std::string, std::set<std::pair<uint16_t, uint16_t>>> kinds;
  for (const topology::PciDevice& d : host.pci) {
    const char* kind = d.role == topology::PciRole::kGpu   ? "gpu"
                       : d.role == topology::PciRole::kHpu ? "hpu"
                       : d.role == topology::PciRole::kNic && d.is_rdma() ? "nic"
                                                                          : nullptr;
    if (kind != nullptr) kinds[kind].insert({d.vendor_id, d.device_id});
  }
  std::vector<placement::PciAlias> aliases;
  for (const char* kind : {"gpu", "hpu", "nic"}) {
    auto it = kinds.find(kind);
    if (it == kinds.end()) continue;
    placement::PciAlias alias;
    alias.name = kind;
    for (const auto& [vendor, device] : it->second)
      alias.specs.push_back({kind, vendor, device, ""});
    aliases.push_back(std::move(alias));
  }
  return placement::PciAliasTable(std::move(aliases), "accel: aliases by kind (" + host.hostname + ")");
}

TunePlan PlanTuning(const topology::HostTopology& host,
                    const std::vector<placement::Flavor>& flavors, const TuneOptions& options) {
  CheckOptions(flavors, options);
  const placement::PciAliasTable aliases =
      options.aliases.empty() ? DefaultAliases(host) : options.aliases;
  std::vector<Wanted> wanted;
  for (size_t i = 0; i < flavors.size(); ++i) {
    Wanted w;
    w.index = i;
    w.request = placement::BuildRequest(flavors[i], aliases, "flavor " + flavors[i].name);
    auto count = options.counts.find(flavors[i].name);
    w.named = count != options.counts.end();
    w.count = w.named ? count->second : w.request.pci.empty() ? 1 : -1;
    wanted.push_back(std::move(w));
  }

  TunePlan plan;
  plan.host = host.hostname;
  bool pin = std::any_of(wanted.begin(), wanted.end(),
                         [](const Wanted& w) { return w.count != 0 && Pins(w.request); });
  SplitCpus(host, options, pin, &plan);

  HostPolicy policy = TunedPolicy(plan);
  std::vector<uint64_t> budget;
  for (size_t i = 0; i < host.numa_nodes.size(); ++i)
    budget.push_back(host.numa_nodes[i].memory_kib - plan.nodes[i].host_memory_mib * kMib);
  Planner planner(host, budget, policy);

  std::vector<int> placed(flavors.size(), 0);
  auto place = [&](const Wanted& w, placement::NoFit* why) {
    placement::PlaceResult r = planner.Place(w.request);
    if (!r.fits()) {
      *why = r.no_fit;
      return false;
    }
    Record(flavors[w.index].name + " #" + std::to_string(++placed[w.index]), *r.placement, &plan);
    return true;
  };

  // Fixed counts (named, or one of each device-less flavor), largest first.
  std::vector<const Wanted*> fixed;
  for (const Wanted& w : wanted)
    for (int k = 0; k < w.count; ++k) fixed.push_back(&w);
  std::stable_sort(fixed.begin(), fixed.end(),
                   [](const Wanted* a, const Wanted* b) { return Bigger(*a, *b); });
  std::map<size_t, std::pair<int, std::string>> missed;  // flavor -> (instances left out, why)
  for (const Wanted* w : fixed) {
    placement::NoFit why;
    if (!place(*w, &why)) {
      auto& m = missed[w->index];
      if (m.first++ == 0) m.second = FirstReasons(why);
    }
  }
  for (const auto& [index, m] : missed)
    plan.notes.push_back(flavors[index].name + ": " + std::to_string(m.first) + " of " +
                         Instances(placed[index] + m.first) +
                         (m.first == 1 ? " does not fit: " : " do not fit: ") + m.second);

  // Device flavors without a count: one instance of each in turn while any still fits.
  std::vector<const Wanted*> open;
  for (const Wanted& w : wanted)
    if (w.count < 0) open.push_back(&w);
  std::map<size_t, std::string> stopped;
  while (!open.empty()) {
    std::vector<const Wanted*> next;
    for (const Wanted* w : open) {
      placement::NoFit why;
      if (placed[w->index] < kMaxInstancesPerFlavor && place(*w, &why))
        next.push_back(w);
      else
        stopped[w->index] = FirstReasons(why);
    }
    open = std::move(next);
  }
  for (const auto& [index, why] : stopped)
    plan.notes.push_back(
        placed[index] == 0
            ? flavors[index].name + ": no instance fits: " + why
            : flavors[index].name + ": " + Instances(placed[index]) +
                  ", as many as fit (the next one: " + why + ")");

  for (NodePlan& np : plan.nodes) {
    const topology::NumaNode& node = host.numa_nodes[host.NodeIndex(np.node)];
    if (node.memory_kib > 0) np.pages_1g += static_cast<uint64_t>(options.spare_pages_per_node);
  }
  FinishPlan(host, options, pin, &plan);
  return plan;
}

topology::HostTopology TunedHost(const topology::HostTopology& host, const TunePlan& plan) {
  topology::HostTopology tuned = host;
  for (topology::NumaNode& node : tuned.numa_nodes) {
    uint64_t base_kib = node.pages.empty() ? 4 : node.pages[0].size_kib;
    std::vector<topology::HugepagePool> huge;
    for (const NodePlan& np : plan.nodes) {
      if (np.node != node.id) continue;
      if (np.pages_2m > 0 && kPage2M > base_kib) huge.push_back({kPage2M, np.pages_2m, np.pages_2m});
      if (np.pages_1g > 0 && kPage1G > base_kib) huge.push_back({kPage1G, np.pages_1g, np.pages_1g});
    }
    uint64_t kept_kib = 0;  // hugepages, and the host's own share of base pages
    for (const topology::HugepagePool& p : huge) kept_kib += p.size_kib * p.total;
    for (const NodePlan& np : plan.nodes)
      if (np.node == node.id) kept_kib += np.host_memory_mib * kMib;
    uint64_t base = node.memory_kib > kept_kib ? (node.memory_kib - kept_kib) / base_kib : 0;
    node.pages = {{base_kib, base, base}};
    node.pages.insert(node.pages.end(), huge.begin(), huge.end());
  }
  return tuned;
}

placement::HostPolicy TunedPolicy(const TunePlan& plan) {
  HostPolicy policy;
  policy.cpu_dedicated_set = plan.dedicated;
  policy.cpu_shared_set = plan.housekeeping;
  // Spread keeps the nodes evenly used, so each node's reservation covers a fair share.
  policy.strategy = placement::Strategy::kSpread;
  return policy;
}

}  // namespace accel::tuning
