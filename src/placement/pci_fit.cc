#include "placement/pci_fit.h"

#include <algorithm>
#include <functional>
#include <tuple>

namespace accel::placement {

namespace {
constexpr int kIneligible = 1000;

bool IsPf(const topology::PciDevice& d) { return d.sriov_total_vfs > 0; }
}  // namespace

bool SpecMatches(const PciSpec& spec, const topology::PciDevice& dev) {
  if (dev.role == topology::PciRole::kBridge || dev.role == topology::PciRole::kHostBridge)
    return false;
  if (spec.vendor_id && *spec.vendor_id != dev.vendor_id) return false;
  if (spec.product_id && *spec.product_id != dev.device_id) return false;
  // Nova hands out PFs only to type-PF requests and VFs only to type-VF requests.
  if (spec.device_type == "type-PF") return IsPf(dev);
  if (spec.device_type == "type-VF") return dev.is_vf();
  return !IsPf(dev) && !dev.is_vf();
}

DevicePool::DevicePool(const topology::HostTopology& host, const HostUsage& usage,
                       const std::vector<NodeView>& nodes, const std::vector<PciRequest>& requests)
    : nodes_(nodes), requests_(requests), matches_(requests.size()) {
  if (requests.empty()) return;
  for (const topology::PciDevice& d : host.pci) {
    if (usage.devices.count(d.address)) continue;
    bool any = false;
    for (size_t r = 0; r < requests.size(); ++r) {
      bool m = std::any_of(requests[r].specs.begin(), requests[r].specs.end(),
                           [&](const PciSpec& s) { return SpecMatches(s, d); });
      if (m) matches_[r].push_back(static_cast<int>(candidates_.size()));
      any = any || m;
    }
    if (any) candidates_.push_back({&d, host.NodeIndex(d.numa_node)});
  }
}

int DevicePool::Rank(const PciRequest& req, int node, const std::vector<bool>& on_node,
                     bool floating, const std::vector<bool>& on_package) const {
  const bool local = node >= 0 && on_node[node];
  const bool unknown = node < 0;
  const bool same_socket = node >= 0 && nodes_[node].package >= 0 &&
                           on_package[nodes_[node].package];
  if (floating) return local ? 0 : unknown ? 1 : 3;
  if (local) return 0;
  switch (req.numa_policy) {
    case PciNumaPolicy::kRequired:
      return kIneligible;
    case PciNumaPolicy::kLegacy:
      return unknown ? 1 : kIneligible;
    case PciNumaPolicy::kSocket:
      return same_socket ? 2 : kIneligible;
    case PciNumaPolicy::kPreferred:
      return unknown ? 1 : same_socket ? 2 : 3;
  }
  return kIneligible;
}

bool DevicePool::Choose(const std::vector<bool>& on_node, bool floating,
                        std::vector<std::vector<const topology::PciDevice*>>* chosen) const {
  int max_package = 0;
  for (const NodeView& n : nodes_) max_package = std::max(max_package, n.package + 1);
  std::vector<bool> on_package(max_package, false);
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (on_node[i] && nodes_[i].package >= 0) on_package[nodes_[i].package] = true;

  // One slot per wanted device; each slot's eligible candidates in preference order.
  struct Slot {
    size_t request;
    std::vector<int> options;
  };
  std::vector<Slot> slots;
  for (size_t r = 0; r < requests_.size(); ++r) {
    // (rank, n-th eligible device of its node, candidate): local devices first, and among equals
    // round-robin over nodes, so a guest spanning nodes gets its devices spread over its cells.
    std::vector<std::tuple<int, int, int>> ranked;
    std::vector<int> seen_on_node(nodes_.size() + 1, 0);
    for (int c : matches_[r]) {
      int rank = Rank(requests_[r], candidates_[c].node, on_node, floating, on_package);
      if (rank == kIneligible) continue;
      ranked.push_back({rank, seen_on_node[candidates_[c].node + 1]++, c});
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
    if (static_cast<int>(ranked.size()) < requests_[r].count) return false;
    Slot s{r, {}};
    for (const auto& [rank, nth, c] : ranked) s.options.push_back(c);
    for (int i = 0; i < requests_[r].count; ++i) slots.push_back(s);
  }
  // Bipartite matching slots -> candidates by augmenting paths (Kuhn), trying each slot's
  // options in preference order so the result leans to local devices.
  std::vector<int> owner(candidates_.size(), -1);
  std::function<bool(int, std::vector<bool>&)> augment = [&](int s, std::vector<bool>& seen) {
    for (int c : slots[s].options) {
      if (seen[c]) continue;
      seen[c] = true;
      if (owner[c] < 0 || augment(owner[c], seen)) {
        owner[c] = s;
        return true;
      }
    }
    return false;
  };
  for (size_t s = 0; s < slots.size(); ++s) {
    std::vector<bool> seen(candidates_.size(), false);
    if (!augment(static_cast<int>(s), seen)) return false;
  }
  chosen->assign(requests_.size(), {});
  for (size_t c = 0; c < candidates_.size(); ++c)
    if (owner[c] >= 0) (*chosen)[slots[owner[c]].request].push_back(candidates_[c].dev);
  return true;
}

std::vector<int> DevicePool::ConstrainingNodes() const {
  std::vector<bool> mark(nodes_.size(), false);
  for (size_t r = 0; r < requests_.size(); ++r) {
    if (requests_[r].numa_policy == PciNumaPolicy::kPreferred) continue;
    for (int c : matches_[r]) {
      int node = candidates_[c].node;
      if (node < 0) continue;
      mark[node] = true;
      if (requests_[r].numa_policy != PciNumaPolicy::kSocket || nodes_[node].package < 0) continue;
      for (size_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i].package == nodes_[node].package) mark[i] = true;
    }
  }
  std::vector<int> out;
  for (size_t i = 0; i < mark.size(); ++i)
    if (mark[i]) out.push_back(static_cast<int>(i));
  return out;
}

int DevicePool::DevicesOnNode(int node) const {
  return static_cast<int>(std::count_if(candidates_.begin(), candidates_.end(),
                                        [&](const Candidate& c) { return c.node == node; }));
}

int DevicePool::MatchingCount(size_t r) const { return static_cast<int>(matches_[r].size()); }

bool DevicePool::Constrains() const {
  return std::any_of(requests_.begin(), requests_.end(), [](const PciRequest& r) {
    return r.numa_policy != PciNumaPolicy::kPreferred;
  });
}

int DevicePool::ConstrainedSlots() const {
  int n = 0;
  for (const PciRequest& r : requests_)
    if (r.numa_policy != PciNumaPolicy::kPreferred) n += r.count;
  return n;
}

bool DevicePool::HasSocketPolicy() const {
  return std::any_of(requests_.begin(), requests_.end(), [](const PciRequest& r) {
    return r.numa_policy == PciNumaPolicy::kSocket;
  });
}

}  // namespace accel::placement
