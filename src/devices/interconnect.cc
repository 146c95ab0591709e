#include "devices/interconnect.h"

#include <algorithm>
#include <unordered_map>

#include "devices/topology_join.h"

namespace accel::devices {
namespace {

// A chain longer than this is a cycle in a malformed tree; real PCIe trees are < 10 deep.
constexpr size_t kMaxDepth = 64;

// "dddd:bb:dd.f" → "dddd:bb:dd": functions of one PCI device share it.
std::string DeviceSlot(const std::string& address) {
  size_t dot = address.rfind('.');
  return dot == std::string::npos ? address : address.substr(0, dot);
}

std::string Canonical(const std::string& address) {
  std::string canonical = CanonicalPciAddress(address);
  return canonical.empty() ? address : canonical;
}

// Where one device sits: itself and its ancestors (indices into host.pci), nearest first.
struct Placement {
  bool found = false;
  std::vector<int> chain;
  int numa = -1;  // own NUMA node, else the nearest ancestor's; -1 unknown
};

Placement Locate(const topology::HostTopology& host,
                 const std::unordered_map<std::string, int>& index, const std::string& address) {
  Placement p;
  auto it = index.find(address);
  if (it == index.end()) return p;
  p.found = true;
  for (int at = it->second; at >= 0 && p.chain.size() < kMaxDepth;) {
    p.chain.push_back(at);
    if (p.numa < 0) p.numa = host.pci[at].numa_node;
    auto up = index.find(host.pci[at].parent);
    at = up == index.end() ? -1 : up->second;
  }
  return p;
}

PcieLink Classify(const topology::HostTopology& host, const std::string& addr_a,
                  const Placement& a, const std::string& addr_b, const Placement& b) {
  if (!a.found || !b.found) return PcieLink::kCrossSocket;
  if (DeviceSlot(addr_a) == DeviceSlot(addr_b)) return PcieLink::kSameBoard;
  for (size_t da = 0; da < a.chain.size(); ++da) {
    auto hit = std::find(b.chain.begin(), b.chain.end(), a.chain[da]);
    if (hit == b.chain.end()) continue;
    size_t db = static_cast<size_t>(hit - b.chain.begin());
    const topology::PciDevice& ancestor = host.pci[a.chain[da]];
    if (ancestor.role == topology::PciRole::kHostBridge || ancestor.parent.empty())
      return PcieLink::kHostBridge;
    // Two levels down from the common bridge is one switch: upstream port → downstream
    // port → device. Anything deeper crosses a further switch.
    return da <= 2 && db <= 2 ? PcieLink::kSingleSwitch : PcieLink::kMultiSwitch;
  }
  // Different root complexes. With one NUMA node (or none known) everything is local.
  if (a.numa >= 0 && a.numa == b.numa) return PcieLink::kSameNuma;
  if (a.numa < 0 && b.numa < 0 && host.numa_nodes.size() <= 1) return PcieLink::kSameNuma;
  return PcieLink::kCrossSocket;
}

}  // namespace

int Interconnect::PairScore(size_t i, size_t j) const {
  if (i == j) return 0;
  size_t n = size();
  size_t at = i * n + j;
  // Matrices left empty (link discovery failed) score as "nothing known", never out of bounds.
  int pcie_points = at < pcie.size() ? static_cast<int>(pcie[at])
                                     : static_cast<int>(PcieLink::kCrossSocket);
  int link_count = at < links.size() ? links[at] : 0;
  return 100 * link_count + pcie_points;
}

Interconnect PcieInterconnect(const topology::HostTopology& host,
                              const std::vector<std::string>& addresses) {
  std::unordered_map<std::string, int> index;
  for (size_t i = 0; i < host.pci.size(); ++i) index.emplace(host.pci[i].address, int(i));

  Interconnect result;
  size_t n = addresses.size();
  std::vector<Placement> placed;
  for (const std::string& address : addresses) {
    result.devices.push_back(Canonical(address));
    placed.push_back(Locate(host, index, result.devices.back()));
  }
  result.pcie.assign(n * n, PcieLink::kCrossSocket);
  result.links.assign(n * n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      PcieLink level =
          Classify(host, result.devices[i], placed[i], result.devices[j], placed[j]);
      result.pcie[i * n + j] = result.pcie[j * n + i] = level;
    }
  }
  return result;
}

void AddPeerLinks(Interconnect& interconnect, const std::vector<std::vector<PeerLink>>& links) {
  size_t n = interconnect.size();
  if (interconnect.links.size() != n * n) interconnect.links.assign(n * n, 0);
  std::unordered_map<std::string, size_t> position;
  for (size_t i = 0; i < n; ++i) position.emplace(Canonical(interconnect.devices[i]), i);

  // direct[i*n+j]: links i reports towards j; switch_links[i]: links i has into NVSwitches.
  std::vector<int> direct(n * n, 0);
  std::vector<int> switch_links(n, 0);
  for (size_t i = 0; i < std::min(n, links.size()); ++i) {
    for (const PeerLink& link : links[i]) {
      if (link.remote_is_switch) {
        ++switch_links[i];
        continue;
      }
      auto it = position.find(Canonical(link.remote_pci_address));
      if (it != position.end() && it->second != i) ++direct[i * n + it->second];
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (switch_links[i] > 0) interconnect.nvswitch = true;
    for (size_t j = i + 1; j < n; ++j) {
      // One side reporting fewer links (or none: a GPU that fell off the bus) wins.
      int count = std::min(direct[i * n + j], direct[j * n + i]) +
                  std::min(switch_links[i], switch_links[j]);
      interconnect.links[i * n + j] += count;
      interconnect.links[j * n + i] += count;
    }
  }
}

}  // namespace accel::devices
