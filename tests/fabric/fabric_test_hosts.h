// Small PCI trees for fabric tests, built in a few lines, and a random tree generator for the
// property tests. Header-only.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support/shared_fixture.h"
#include "topology/host.h"
#include "topology/sources.h"

namespace accel::fabric::testing {

using topology::HostTopology;
using topology::PciDevice;
using topology::PciRole;

constexpr double kGen5x16 = 63.015;
constexpr double kGen4x16 = 31.508;
constexpr double kGen3x16 = 15.754;

/// Builds a HostTopology PCI tree: bus numbers are handed out in order.
class TreeBuilder {
 public:
  explicit TreeBuilder(int numa_nodes = 2) {
    for (int n = 0; n < numa_nodes; ++n) {
      topology::NumaNode node;
      node.id = n;
      node.cpus = CpuSet{n * 4, n * 4 + 1, n * 4 + 2, n * 4 + 3};
      host_.numa_nodes.push_back(node);
    }
    host_.source = "test";
  }

  /// A root complex "pci0000:BB"; returns its address.
  std::string HostBridge(int numa) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "pci0000:%02x", NextBus());
    PciDevice d;
    d.address = buf;
    d.role = PciRole::kHostBridge;
    d.numa_node = numa;
    host_.pci.push_back(d);
    return d.address;
  }

  /// Any PCI function below `parent`; returns its address.
  std::string Add(const std::string& parent, PciRole role, int numa, double link = kGen5x16,
                  uint16_t vendor = 0, uint16_t device = 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0000:%02x:00.0", NextBus());
    PciDevice d;
    d.address = buf;
    d.parent = parent;
    d.role = role;
    d.numa_node = numa;
    d.link_gbps = link;
    d.vendor_id = vendor;
    d.device_id = device;
    if (role == PciRole::kGpu) {
      d.vendor_id = 0x10de;
      d.device_id = 0x2330;
      d.class_id = 0x0302;
    }
    if (role == PciRole::kBridge) d.class_id = 0x0604;
    host_.pci.push_back(d);
    return d.address;
  }

  std::string Bridge(const std::string& parent, int numa, double link = kGen5x16,
                     uint16_t vendor = 0x8086, uint16_t device = 0x352a) {
    return Add(parent, PciRole::kBridge, numa, link, vendor, device);
  }
  std::string Gpu(const std::string& parent, int numa, double link = kGen5x16) {
    return Add(parent, PciRole::kGpu, numa, link);
  }
  /// An RDMA NIC function named `rdma` (netdev "ib_<rdma>").
  std::string Nic(const std::string& parent, int numa, const std::string& rdma,
                  double link = kGen5x16) {
    std::string a = Add(parent, PciRole::kNic, numa, link, 0x15b3, 0x1021);
    host_.pci.back().class_id = 0x0207;
    host_.pci.back().rdma_devices = {rdma};
    host_.pci.back().netdevs = {"ib_" + rdma};
    return a;
  }
  /// A PCIe switch below `parent`: upstream port plus `ports` downstream ports; returns the
  /// downstream port addresses.
  std::vector<std::string> Switch(const std::string& parent, int numa, int ports,
                                  uint16_t vendor = 0x10b5, uint16_t device = 0x9797,
                                  double link = kGen5x16) {
    std::string up = Bridge(parent, numa, link, vendor, device);
    std::vector<std::string> down;
    for (int i = 0; i < ports; ++i) down.push_back(Bridge(up, numa, link, vendor, device));
    return down;
  }
  /// Host bridge + root port; returns the root port.
  std::string RootPort(int numa) { return Bridge(HostBridge(numa), numa); }

  PciDevice& Last() { return host_.pci.back(); }
  HostTopology& host() { return host_; }

 private:
  int NextBus() { return bus_++; }
  HostTopology host_;
  int bus_ = 1;
};

/// A random machine: 1-2 NUMA nodes, 1-3 root complexes each, switches up to three levels
/// (some Broadcom), 1-`max_gpus` GPUs and 1-`max_nics` RDMA NICs placed anywhere, link speeds
/// mixed, NUMA nodes occasionally unknown.
inline HostTopology RandomHost(std::mt19937& rng, int max_gpus, int max_nics) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int numa = pick(1, 2);
  TreeBuilder b(numa);
  std::vector<std::pair<std::string, int>> slots;  // (bridge to hang devices on, numa)
  for (int n = 0; n < numa; ++n) {
    for (int r = pick(1, 3); r > 0; --r) {
      std::string port = b.RootPort(n);
      slots.push_back({port, n});
      std::vector<std::pair<std::string, int>> frontier{{port, 0}};
      for (size_t i = 0; i < frontier.size(); ++i) {
        auto [at, depth] = frontier[i];
        if (depth >= 3 || pick(0, 2) == 0) continue;
        bool bcm = pick(0, 1) == 1;
        double link = pick(0, 2) == 0 ? kGen4x16 : kGen5x16;
        for (const std::string& down :
             b.Switch(at, n, pick(1, 3), bcm ? 0x1000 : 0x10b5, bcm ? 0xc030 : 0x9797, link)) {
          slots.push_back({down, n});
          frontier.push_back({down, depth + 1});
        }
      }
    }
  }
  int gpus = pick(1, max_gpus), nics = pick(1, max_nics);
  static constexpr double kLinks[] = {kGen5x16, kGen4x16, kGen3x16};
  for (int i = 0; i < gpus + nics; ++i) {
    auto [at, n] = slots[pick(0, static_cast<int>(slots.size()) - 1)];
    int node = pick(0, 9) == 0 ? -1 : n;
    double link = kLinks[pick(0, 2)];
    if (i < gpus) {
      b.Gpu(at, node, link);
    } else {
      b.Nic(at, node, "mlx5_" + std::to_string(i - gpus), link);
    }
  }
  return b.host();
}

inline std::string Fixture(const std::string& rel) {
  return std::string(ACCEL_SOURCE_DIR) + "/" + rel;
}
/// A real machine's hwloc XML under ../shared (tests skip with ACCEL_REQUIRE_SHARED when absent).
inline std::string SharedHwloc(const std::string& name) {
  return test_support::SharedPath("fixtures/hwloc/" + name);
}

}  // namespace accel::fabric::testing
