#include "kube/preferred_allocation.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "kube/device_set.h"

namespace accel::kube {

namespace {

// Positions in resource.devices: device order, then replica order.
using Positions = std::vector<size_t>;

// The positions of `ids` in `resource`, first-seen order; unknown IDs and duplicates dropped.
Positions Known(const PluginResource& resource, const std::vector<std::string>& ids) {
  std::unordered_map<std::string, size_t> position;
  for (size_t p = 0; p < resource.devices.size(); ++p) position.emplace(resource.devices[p].id, p);
  Positions out;
  std::set<size_t> seen;
  for (const std::string& id : ids) {
    auto it = position.find(id);
    if (it != position.end() && seen.insert(it->second).second) out.push_back(it->second);
  }
  return out;
}

int NumaOf(const PluginResource& resource, const PluginNode& node, size_t position) {
  size_t device = resource.devices[position].device;
  return device < node.devices->size() ? (*node.devices)[device].numa_node : -1;
}

// Required first, then NUMA groups ranked as PreferredAllocation's contract says.
Positions NumaThenIndex(const PluginResource& resource, const PluginNode& node,
                        const Positions& available, const Positions& required, int size) {
  Positions out = required;
  std::set<int> required_numa;
  for (size_t p : required) required_numa.insert(NumaOf(resource, node, p));
  std::map<int, Positions> groups;
  for (size_t p : available) {
    if (std::find(required.begin(), required.end(), p) == required.end()) {
      groups[NumaOf(resource, node, p)].push_back(p);
    }
  }
  int need = size - static_cast<int>(required.size());
  // Lower tuples first: a required device's node, a node that fits the rest (tightest first),
  // a known node, larger groups, lower node id.
  auto rank = [&](const std::pair<const int, Positions>& g) {
    int count = static_cast<int>(g.second.size());
    bool fits = count >= need;
    return std::make_tuple(required_numa.count(g.first) ? 0 : 1, fits ? 0 : 1, g.first < 0 ? 1 : 0,
                           fits ? count : -count, g.first);
  };
  std::vector<const std::pair<const int, Positions>*> order;
  for (const auto& g : groups) order.push_back(&g);
  std::sort(order.begin(), order.end(), [&](auto* a, auto* b) { return rank(*a) < rank(*b); });
  for (const auto* g : order) {
    for (size_t p : g->second) {
      if (static_cast<int>(out.size()) >= size) return out;
      out.push_back(p);
    }
  }
  return out;
}

// PickReplicas over units; empty when it cannot answer.
Positions Replicas(const PluginResource& resource, const PluginNode& node,
                   const Positions& available, const Positions& required, int size) {
  std::vector<ReplicaCandidate> candidates;
  for (size_t p : available) {
    const AdvertisedDevice& a = resource.devices[p];
    if (a.device >= node.devices->size()) return {};
    candidates.push_back({a.id, (*node.devices)[a.device].id});
  }
  std::vector<std::string> required_ids;
  for (size_t p : required) required_ids.push_back(resource.devices[p].id);
  ReplicaPolicy policy = node.config ? node.config->replica_policy : ReplicaPolicy::kDistributed;
  return Known(resource, PickReplicas(candidates, required_ids, size, resource.replicas, policy));
}

// BestDeviceSet over the node's interconnect; empty when some device is not in it (or is a MIG
// device: several units on one PCI address cannot be ranked by links).
Positions BestInterconnected(const PluginResource& resource, const PluginNode& node,
                             const Positions& available, const Positions& required, int size) {
  if (node.interconnect == nullptr) return {};
  const devices::Interconnect& ic = *node.interconnect;
  std::map<std::string, int> index;
  for (size_t i = 0; i < ic.devices.size(); ++i) index.emplace(ic.devices[i], static_cast<int>(i));
  std::map<int, size_t> position_of;  // interconnect index → position
  auto to_index = [&](size_t p, std::vector<int>* out) {
    size_t device = resource.devices[p].device;
    if (device >= node.devices->size() || (*node.devices)[device].is_mig()) return false;
    auto it = index.find((*node.devices)[device].pci_address);
    if (it == index.end()) return false;
    auto [slot, fresh] = position_of.emplace(it->second, p);
    if (!fresh && slot->second != p) return false;
    out->push_back(it->second);
    return true;
  };
  std::vector<int> avail, req;
  for (size_t p : available) {
    if (!to_index(p, &avail)) return {};
  }
  for (size_t p : required) {
    if (!to_index(p, &req)) return {};
  }
  std::vector<int> best = BestDeviceSet(ic, avail, req, size);
  // Required first, as the kubelet expects them included; the rest ascending.
  Positions out = required;
  for (int i : best) {
    size_t p = position_of.at(i);
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return best.empty() ? Positions{} : out;
}

}  // namespace

std::vector<std::string> PreferredAllocation(const PluginResource& resource, const PluginNode& node,
                                             const std::vector<std::string>& available,
                                             const std::vector<std::string>& required, int size) {
  if (node.devices == nullptr) return {};
  Positions avail = Known(resource, available);
  Positions req = Known(resource, required);
  // The kubelet offers the required IDs among the available ones; be lenient when it does not.
  for (size_t p : req) {
    if (std::find(avail.begin(), avail.end(), p) == avail.end()) avail.push_back(p);
  }
  Positions chosen;
  if (static_cast<int>(req.size()) < size) {
    chosen = resource.replicas > 1 ? Replicas(resource, node, avail, req, size)
                                   : BestInterconnected(resource, node, avail, req, size);
  }
  if (chosen.empty()) {
    std::sort(avail.begin(), avail.end());
    chosen = NumaThenIndex(resource, node, avail, req, size);
  }
  std::vector<std::string> ids;
  for (size_t p : chosen) ids.push_back(resource.devices[p].id);
  return ids;
}

}  // namespace accel::kube
