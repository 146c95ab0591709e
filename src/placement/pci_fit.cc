#include "placement/pci_fit.h"

#include <algorithm>
#include <tuple>

namespace accel::placement {

namespace {
constexpr int kIneligible = 1000;

bool IsPf(const topology::PciDevice& d) { return d.sriov_total_vfs > 0; }
}  // namespace

namespace {

// A PciSpec as integers, matching exactly what SpecMatches matches (Eligible and Matches
// together), without comparing strings per device.
struct CompiledSpec {
  enum Type : uint8_t { kPlain, kPf, kVf };
  int request = 0;    // index of the request the spec belongs to
  int vendor = -1;    // -1: any
  int product = -1;   // -1: any
  Type type = kPlain;

  static CompiledSpec Of(const PciSpec& spec, int request) {
    CompiledSpec c;
    c.request = request;
    if (spec.vendor_id) c.vendor = *spec.vendor_id;
    if (spec.product_id) c.product = *spec.product_id;
    c.type = spec.device_type == "type-PF" ? kPf : spec.device_type == "type-VF" ? kVf : kPlain;
    return c;
  }
  // What every spec requires: no bridge.
  static bool Eligible(const topology::PciDevice& dev) {
    return dev.role != topology::PciRole::kBridge && dev.role != topology::PciRole::kHostBridge;
  }
  // SpecMatches for an Eligible device.
  bool Matches(const topology::PciDevice& dev) const {
    if (vendor >= 0 && vendor != dev.vendor_id) return false;
    if (product >= 0 && product != dev.device_id) return false;
    switch (type) {
      case kPf: return IsPf(dev);
      case kVf: return dev.is_vf();
      case kPlain: return !IsPf(dev) && !dev.is_vf();
    }
    return false;
  }
};

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
    : nodes_(nodes), requests_(requests) {
  match_begin_.assign(requests.size() + 1, 0);
  per_node_.assign(nodes.size() + 1, 0);
  for (const NodeView& n : nodes) packages_known_ = packages_known_ && n.package >= 0;
  if (requests.empty()) return;
  for (const PciRequest& r : requests) {
    if (r.numa_policy != PciNumaPolicy::kPreferred) {
      constrains_ = true;
      constrained_slots_ += r.count;
    }
    has_socket_ = has_socket_ || r.numa_policy == PciNumaPolicy::kSocket;
  }
  // The requests' specs as integers, once: every device is tested against all of them, and
  // most devices (bridges, NICs, NVSwitches) match none. SpecMatches stays the definition;
  // Compiled::Matches answers the same.
  SmallVector<CompiledSpec, 8> specs;
  for (size_t r = 0; r < requests.size(); ++r)
    for (const PciSpec& spec : requests[r].specs) specs.push_back(CompiledSpec::Of(spec, static_cast<int>(r)));
  auto matches_any = [&](const topology::PciDevice& d) {
    if (!CompiledSpec::Eligible(d)) return false;
    for (const CompiledSpec& c : specs)
      if (c.Matches(d)) return true;
    return false;
  };
  // Matching first: a host has many PCI functions and requests match few of them, so the usage
  // lookup (a string set) is asked only of those few.
  for (const topology::PciDevice& d : host.pci) {
    if (!matches_any(d) || usage.devices.count(d.address)) continue;
    const int node = host.NodeIndex(d.numa_node);
    candidates_.push_back({&d, node});
    ++per_node_[node + 1];
  }
  // Per request, its candidates in address order (the few candidates are matched again rather
  // than keeping a per-request list for every device).
  for (size_t r = 0; r < requests.size(); ++r) {
    for (size_t c = 0; c < candidates_.size(); ++c) {
      const topology::PciDevice& d = *candidates_[c].dev;
      for (const CompiledSpec& spec : specs)
        if (spec.request == static_cast<int>(r) && spec.Matches(d)) {
          match_.push_back(static_cast<int>(c));
          break;
        }
    }
    match_begin_[r + 1] = static_cast<int>(match_.size());
  }
}

int DevicePool::Rank(const PciRequest& req, int node, std::span<const uint8_t> on_node, bool floating,
                     std::span<const uint8_t> on_package) const {
  const bool local = node >= 0 && on_node[node];
  const bool unknown = node < 0;
  // Nova's socket policy needs the socket of every host cell (_filter_pools_for_socket_affinity
  // returns no pool when one is None).
  const bool same_socket = node >= 0 && packages_known_ && on_package[nodes_[node].package];
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

namespace {

// Bipartite matching of slots (one per wanted device) to candidates by augmenting paths
// (Kuhn), each slot trying its options in preference order.
struct Matching {
  const SmallVector<int, 16>& slot_request;  // [slot] -> request
  const SmallVector<int, 32>& options;       // options of request r: [begin[r], begin[r + 1])
  const SmallVector<int, 8>& begin;
  SmallVector<int, 16>& owner;  // [candidate] -> slot, -1 free
  SmallVector<uint8_t, 16>& seen;  // [candidate], per augmenting search

  bool Augment(int s) {
    const int r = slot_request[s];
    for (int i = begin[r]; i < begin[r + 1]; ++i) {
      const int c = options[i];
      if (seen[c]) continue;
      seen[c] = 1;
      if (owner[c] < 0 || Augment(owner[c])) {
        owner[c] = s;
        return true;
      }
    }
    return false;
  }
};

}  // namespace

bool DevicePool::Choose(std::span<const uint8_t> on_node, bool floating, DeviceChoice* chosen) const {
  int max_package = 0;
  for (const NodeView& n : nodes_) max_package = std::max(max_package, n.package + 1);
  SmallVector<uint8_t, 8> on_package(max_package, 0);
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (on_node[i] && nodes_[i].package >= 0) on_package[nodes_[i].package] = 1;
  const std::span<const uint8_t> packages(on_package.data(), on_package.size());

  // Each request's eligible candidates in preference order, once; one slot per wanted device.
  struct Ranked {
    int rank, nth, candidate;
  };
  SmallVector<int, 32> options;
  SmallVector<int, 8> begin(requests_.size() + 1, 0);
  SmallVector<int, 16> slot_request;
  SmallVector<Ranked, 16> ranked;
  SmallVector<int, 16> seen_on_node;
  for (size_t r = 0; r < requests_.size(); ++r) {
    // (rank, n-th eligible device of its node, candidate): local devices first, and among equals
    // round-robin over nodes, so a guest spanning nodes gets its devices spread over its cells.
    // Candidates come in ascending order, so sorting on all three keeps the stable order.
    ranked.clear();
    seen_on_node.assign(nodes_.size() + 1, 0);
    for (int i = match_begin_[r]; i < match_begin_[r + 1]; ++i) {
      const int c = match_[i];
      const int rank = Rank(requests_[r], candidates_[c].node, on_node, floating, packages);
      if (rank == kIneligible) continue;
      ranked.push_back({rank, seen_on_node[candidates_[c].node + 1]++, c});
    }
    if (static_cast<int>(ranked.size()) < requests_[r].count) return false;
    std::sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
      return std::tie(a.rank, a.nth, a.candidate) < std::tie(b.rank, b.nth, b.candidate);
    });
    for (const Ranked& x : ranked) options.push_back(x.candidate);
    begin[r + 1] = static_cast<int>(options.size());
    for (int i = 0; i < requests_[r].count; ++i) slot_request.push_back(static_cast<int>(r));
  }
  SmallVector<int, 16> owner(candidates_.size(), -1);
  SmallVector<uint8_t, 16> seen;
  Matching m{slot_request, options, begin, owner, seen};
  for (size_t s = 0; s < slot_request.size(); ++s) {
    seen.assign(candidates_.size(), 0);
    if (!m.Augment(static_cast<int>(s))) return false;
  }
  if (chosen == nullptr) return true;
  chosen->clear();
  for (size_t r = 0; r < requests_.size(); ++r)
    for (size_t c = 0; c < candidates_.size(); ++c)
      if (owner[c] >= 0 && slot_request[owner[c]] == static_cast<int>(r))
        chosen->push_back({static_cast<int>(r), candidates_[c].dev});
  return true;
}

SmallVector<int, 16> DevicePool::ConstrainingNodes() const {
  SmallVector<uint8_t, 16> mark(nodes_.size(), 0);
  for (size_t r = 0; r < requests_.size(); ++r) {
    if (requests_[r].numa_policy == PciNumaPolicy::kPreferred) continue;
    for (int i = match_begin_[r]; i < match_begin_[r + 1]; ++i) {
      int node = candidates_[match_[i]].node;
      if (node < 0) continue;
      mark[node] = 1;
      if (requests_[r].numa_policy != PciNumaPolicy::kSocket || !packages_known_) continue;
      for (size_t j = 0; j < nodes_.size(); ++j)
        if (nodes_[j].package == nodes_[node].package) mark[j] = 1;
    }
  }
  SmallVector<int, 16> out;
  for (size_t i = 0; i < mark.size(); ++i)
    if (mark[i]) out.push_back(static_cast<int>(i));
  return out;
}

}  // namespace accel::placement
