// DevicePool against its definition: the free devices SpecMatches accepts, counted per request
// and per node, on random devices and specs (the pool matches specs as integers for speed, so
// this pins it to SpecMatches); Choose's answer does not depend on whether devices are wanted.
#include "placement/pci_fit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace accel::placement {
namespace pci_fit_test {

topology::HostTopology RandomHost(std::mt19937& rng, HostUsage* usage) {
  topology::HostTopology host;
  const int nodes = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < nodes; ++i) {
    topology::NumaNode n;
    n.id = i * 2;  // gaps, as on real hosts
    n.package = static_cast<int>(rng() % 3) - 1;
    host.numa_nodes.push_back(n);
  }
  const int devices = static_cast<int>(rng() % 24);
  const topology::PciRole roles[] = {topology::PciRole::kHostBridge, topology::PciRole::kBridge,
                                     topology::PciRole::kGpu, topology::PciRole::kOther};
  for (int i = 0; i < devices; ++i) {
    topology::PciDevice d;
    d.address = "0000:" + std::to_string(10 + i) + ":00.0";
    d.role = roles[rng() % 4];
    d.vendor_id = static_cast<uint16_t>(0x10de + rng() % 2);
    d.device_id = static_cast<uint16_t>(rng() % 3);
    d.numa_node = static_cast<int>(rng() % (nodes * 2 + 1)) - 1;  // some unknown, some gaps
    if (rng() % 4 == 0) d.sriov_total_vfs = 4;
    if (rng() % 4 == 0) d.physfn = "0000:01:00.0";
    if (rng() % 5 == 0) usage->devices.insert(d.address);
    host.pci.push_back(d);
  }
  return host;
}

std::vector<PciRequest> RandomRequests(std::mt19937& rng) {
  std::vector<PciRequest> requests(rng() % 4);
  const char* types[] = {"", "type-PCI", "type-PF", "type-VF"};
  const PciNumaPolicy policies[] = {PciNumaPolicy::kRequired, PciNumaPolicy::kLegacy,
                                    PciNumaPolicy::kSocket, PciNumaPolicy::kPreferred};
  for (PciRequest& r : requests) {
    r.alias = "a";
    r.count = 1 + static_cast<int>(rng() % 3);
    r.numa_policy = policies[rng() % 4];
    r.specs.resize(1 + rng() % 2);
    for (PciSpec& s : r.specs) {
      if (rng() % 3) s.vendor_id = static_cast<uint16_t>(0x10de + rng() % 2);
      if (rng() % 2) s.product_id = static_cast<uint16_t>(rng() % 3);
      s.device_type = types[rng() % 4];
    }
  }
  return requests;
}

std::vector<NodeView> ViewsOf(const topology::HostTopology& host) {
  std::vector<NodeView> views;
  for (size_t i = 0; i < host.numa_nodes.size(); ++i) {
    NodeView v;
    v.index = static_cast<int>(i);
    v.id = host.numa_nodes[i].id;
    v.package = host.numa_nodes[i].package;
    views.push_back(v);
  }
  return views;
}

TEST(DevicePool, CountsAreThoseOfSpecMatchesOnFreeDevices) {
  std::mt19937 rng(13);
  for (int round = 0; round < 2000; ++round) {
    HostUsage usage;
    const topology::HostTopology host = RandomHost(rng, &usage);
    const std::vector<PciRequest> requests = RandomRequests(rng);
    const std::vector<NodeView> views = ViewsOf(host);
    const DevicePool pool(host, usage, views, requests);
    auto matches = [&](const PciRequest& r, const topology::PciDevice& d) {
      for (const PciSpec& s : r.specs)
        if (SpecMatches(s, d)) return true;
      return false;
    };
    std::vector<int> per_node(views.size() + 1, 0);
    for (const topology::PciDevice& d : host.pci) {
      if (usage.devices.count(d.address)) continue;
      bool any = false;
      for (const PciRequest& r : requests) any = any || matches(r, d);
      if (any) ++per_node[host.NodeIndex(d.numa_node) + 1];
    }
    for (int node = -1; node < static_cast<int>(views.size()); ++node)
      EXPECT_EQ(pool.DevicesOnNode(node), per_node[node + 1]) << "round " << round << " node " << node;
    int constrained = 0;
    for (size_t r = 0; r < requests.size(); ++r) {
      int count = 0;
      for (const topology::PciDevice& d : host.pci)
        if (!usage.devices.count(d.address) && matches(requests[r], d)) ++count;
      EXPECT_EQ(pool.MatchingCount(r), count) << "round " << round << " request " << r;
      if (requests[r].numa_policy != PciNumaPolicy::kPreferred) constrained += requests[r].count;
    }
    EXPECT_EQ(pool.ConstrainedSlots(), constrained);
    EXPECT_EQ(pool.Constrains(), constrained > 0);
  }
}

TEST(DevicePool, ChooseGivesEachRequestItsCountOfDistinctMatchingDevices) {
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    HostUsage usage;
    const topology::HostTopology host = RandomHost(rng, &usage);
    const std::vector<PciRequest> requests = RandomRequests(rng);
    const std::vector<NodeView> views = ViewsOf(host);
    const DevicePool pool(host, usage, views, requests);
    std::vector<uint8_t> on_node(views.size());
    for (uint8_t& on : on_node) on = rng() % 2;
    const bool floating = rng() % 4 == 0;
    DeviceChoice chosen;
    const bool ok = pool.Choose(on_node, floating, &chosen);
    EXPECT_EQ(ok, pool.Choose(on_node, floating, nullptr)) << "round " << round;
    if (!ok) continue;
    std::vector<int> got(requests.size(), 0);
    std::set<const topology::PciDevice*> distinct;
    int last_request = 0;
    for (const ChosenDevice& c : chosen) {
      ASSERT_GE(c.request, last_request) << "grouped by request";
      last_request = c.request;
      ++got[c.request];
      EXPECT_TRUE(distinct.insert(c.device).second) << "device chosen twice";
      EXPECT_FALSE(usage.devices.count(c.device->address)) << "used device chosen";
      bool match = false;
      for (const PciSpec& s : requests[c.request].specs) match = match || SpecMatches(s, *c.device);
      EXPECT_TRUE(match);
    }
    for (size_t r = 0; r < requests.size(); ++r) EXPECT_EQ(got[r], requests[r].count);
  }
}

// Nova's PciDeviceStats._filter_pools_for_numa_cells (nova/pci/stats.py, Nova 26), literally,
// for one request of a guest on host nodes `on_node`: whether the pools it leaves hold `count`
// devices. Devices of unknown NUMA node are Nova's pools with numa_node None.
bool NovaSupports(const topology::HostTopology& host, const HostUsage& usage, const PciRequest& r,
                  const std::vector<uint8_t>& on_node, bool floating) {
  std::vector<int> nodes;  // index of each free matching device's node, -1 unknown
  for (const topology::PciDevice& d : host.pci) {
    if (usage.devices.count(d.address)) continue;
    bool match = false;
    for (const PciSpec& s : r.specs) match = match || SpecMatches(s, d);
    if (match) nodes.push_back(host.NodeIndex(d.numa_node));
  }
  const auto count = [&](auto keep) {
    return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), keep));
  };
  if (floating) return count([](int) { return true; }) >= r.count;  // no numa_cells: every pool
  const int local = count([&](int n) { return n >= 0 && on_node[n]; });
  if (r.numa_policy == PciNumaPolicy::kRequired || local >= r.count) return local >= r.count;
  if (r.numa_policy == PciNumaPolicy::kSocket) {
    // _filter_pools_for_socket_affinity: nothing when a host cell has no socket.
    for (const topology::NumaNode& n : host.numa_nodes)
      if (n.package < 0) return false;
    std::set<int> sockets;
    for (size_t i = 0; i < on_node.size(); ++i)
      if (on_node[i]) sockets.insert(host.numa_nodes[i].package);
    return count([&](int n) { return n >= 0 && sockets.count(host.numa_nodes[n].package); }) >= r.count;
  }
  const int local_or_unknown = count([&](int n) { return n < 0 || on_node[n]; });
  if (r.numa_policy == PciNumaPolicy::kLegacy || local_or_unknown >= r.count) return local_or_unknown >= r.count;
  return count([](int) { return true; }) >= r.count;  // preferred: every pool
}

TEST(DevicePool, OneRequestFitsExactlyWhenNovasNumaFilterLeavesEnoughDevices) {
  std::mt19937 rng(24);
  int fits = 0, refusals = 0;
  for (int round = 0; round < 4000; ++round) {
    HostUsage usage;
    topology::HostTopology host = RandomHost(rng, &usage);
    // As topology validation has it: a device's node is one of the host's, or -1 (unknown).
    for (topology::PciDevice& d : host.pci)
      if (host.NodeIndex(d.numa_node) < 0) d.numa_node = -1;
    std::vector<PciRequest> requests = RandomRequests(rng);
    if (requests.empty()) continue;
    requests.resize(1);
    const std::vector<NodeView> views = ViewsOf(host);
    const DevicePool pool(host, usage, views, requests);
    std::vector<uint8_t> on_node(views.size());
    for (uint8_t& on : on_node) on = rng() % 2;
    if (std::find(on_node.begin(), on_node.end(), 1) == on_node.end()) on_node[rng() % on_node.size()] = 1;
    const bool floating = rng() % 6 == 0;
    const bool nova = NovaSupports(host, usage, requests[0], on_node, floating);
    EXPECT_EQ(pool.Choose(on_node, floating, nullptr), nova)
        << "round " << round << ", policy " << PciNumaPolicyName(requests[0].numa_policy);
    (nova ? fits : refusals) += 1;
  }
  EXPECT_GT(fits, 500);
  EXPECT_GT(refusals, 500);
}

}  // namespace
}  // namespace accel::placement
