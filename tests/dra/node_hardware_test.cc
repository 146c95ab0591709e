// ReadNodeHardware and the RDMA-port root rule: which root RDMA ports are read under for every
// kind of topology, the ports and pairing read on the fake HGX H100 (a fake sysfs with one port
// down), the NVLink interconnect from the fake NVML, and BuildNodeInventory's nvlinkClique.
#include "dra/node_hardware.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/error.h"
#include "devices/backend.h"
#include "dra/inventory.h"
#include "support/fake_sysfs.h"
#include "topology/sources.h"

namespace accel::dra {
namespace node_hardware_test {

namespace fs = std::filesystem;

std::string Fixture(const std::string& name) {
  return std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/" + name + ".json";
}

NodeSource Source(const std::string& topology, const std::string& host_root = "/",
                  const std::string& sysfs_root = "") {
  NodeSource s;
  s.topology = topology;
  s.host_root = host_root;
  s.sysfs_root = sysfs_root;
  return s;
}

/// A fresh directory under the test temp dir, removed with the object.
struct TempDir {
  TempDir() {
    path = fs::path(::testing::TempDir()) /
           ("accel-node-hardware-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

/// The NIC pairing gave the accelerator at `gpu`; "" for none.
std::string NicOf(const fabric::Fabric& f, const std::string& gpu) {
  for (const fabric::GpuNicPair& p : f.pairs)
    if (p.gpu_address == gpu && p.nic >= 0) return f.nics[p.nic].rdma_device;
  return "";
}

TEST(RdmaPortRoot, FollowsTheRuleInItsOrder) {
  TempDir dir;
  const std::string copy = dir.path.string();
  // 1. An explicit root wins over everything.
  EXPECT_EQ(RdmaPortRoot(Source("live", "/host", "/sysfs-copy")), "/sysfs-copy");
  EXPECT_EQ(RdmaPortRoot(Source("sysfs:" + copy, "/host", "/sysfs-copy")), "/sysfs-copy");
  // 2. A topology read from a sysfs copy: that copy's ports, whatever hostRoot says.
  EXPECT_EQ(RdmaPortRoot(Source("sysfs:" + copy)), copy);
  EXPECT_EQ(RdmaPortRoot(Source(copy)), copy);
  EXPECT_EQ(RdmaPortRoot(Source("sysfs:" + copy, "/host")), copy);
  // 3. The live machine: where its /sys is seen.
  EXPECT_EQ(RdmaPortRoot(Source("live")), "/");
  EXPECT_EQ(RdmaPortRoot(Source("live", "/host")), "/host");
  // 4. A host root named on purpose, beside a topology file.
  EXPECT_EQ(RdmaPortRoot(Source(Fixture("hgx-h100"), "/fake")), "/fake");
  EXPECT_EQ(RdmaPortRoot(Source("none", "/fake")), "/fake");
  // 5. A topology file alone: no ports of this machine.
  EXPECT_EQ(RdmaPortRoot(Source(Fixture("hgx-h100"))), "");
  EXPECT_EQ(RdmaPortRoot(Source("none")), "");
}

TEST(ReadNodeHardware, ReadsThePortsOfTheHostRootAndPairsWithThem) {
  TempDir dir;
  const topology::HostTopology host = topology::LoadTopology(Fixture("hgx-h100"));
  ::accel::testing::WriteFakeSysfs(host, dir.path.string());
  // mlx5_0 (beside GPU 0) loses its link.
  ::accel::testing::WriteFakeFile(dir.path.string(), "sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");

  NodeHardware hw = ReadNodeHardware(Source(Fixture("hgx-h100"), dir.path.string()), {}, nullptr);
  EXPECT_EQ(hw.rdma_root, dir.path.string());
  EXPECT_EQ(hw.host.pci.size(), host.pci.size());
  EXPECT_TRUE(hw.devices.empty()) << "no backends: no devices";
  EXPECT_EQ(hw.interconnect.size(), 0u);
  ASSERT_FALSE(hw.ports.empty());
  EXPECT_EQ(hw.ports[0].rdma_device, "mlx5_0");
  EXPECT_EQ(hw.ports[0].state, "DOWN");
  ASSERT_EQ(hw.pairing.pairs.size(), 8u);
  EXPECT_NE(NicOf(hw.pairing, "0000:1b:00.0"), "mlx5_0");
  EXPECT_NE(NicOf(hw.pairing, "0000:1b:00.0"), "");
  EXPECT_EQ(NicOf(hw.pairing, "0000:df:00.0"), "mlx5_11");

  // The same file without a host root: no ports, every port counted as up.
  hw = ReadNodeHardware(Source(Fixture("hgx-h100")), {}, nullptr);
  EXPECT_EQ(hw.rdma_root, "");
  EXPECT_TRUE(hw.ports.empty());
  EXPECT_EQ(NicOf(hw.pairing, "0000:1b:00.0"), "mlx5_0");
}

TEST(ReadNodeHardware, AnUnreadableTopologyIsAWarningUnlessRequired) {
  NodeSource source = Source("/nonexistent/host.json");
  std::vector<std::string> lines;
  NodeHardware hw = ReadNodeHardware(source, {}, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_TRUE(hw.host.pci.empty());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("warning: no host topology"), std::string::npos) << lines[0];
  source.topology_required = true;
  EXPECT_THROW(ReadNodeHardware(source, {}, nullptr), InputError);
  // "none" is not an error either way.
  source.topology = "none";
  EXPECT_TRUE(ReadNodeHardware(source, {}, nullptr).host.pci.empty());
}

TEST(ReadNodeHardware, FakeHgxGpusAreOneNvlinkCliqueInTheInventory) {
  setenv("FAKE_NVML_CONFIG",
         (std::string(ACCEL_SOURCE_DIR) + "/tests/fakes/nvml/examples/h100x8-mig.json").c_str(), 1);
  {
    auto nvml = devices::OpenNvml(ACCEL_FAKE_NVML);
    std::vector<std::string> lines;
    NodeHardware hw = ReadNodeHardware(Source(Fixture("hgx-h100")), {nvml.get()},
                                       [&](const std::string& l) { lines.push_back(l); });
    EXPECT_EQ(hw.interconnect.size(), 8u);
    EXPECT_TRUE(hw.interconnect.nvswitch);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0], "interconnect: 28 NVLink-connected GPU pair(s) among 8 GPU(s), through NVSwitch");
    InventoryOptions io;
    io.node_name = "node-a";
    Inventory inv = BuildNodeInventory(hw, io);
    int cliqued = 0;
    for (const DraDevice& d : inv.devices) {
      auto it = d.attributes.find("nvlinkClique");
      if (d.kind == DeviceKind::kNic) {
        EXPECT_EQ(it, d.attributes.end()) << d.name;
        continue;
      }
      ASSERT_NE(it, d.attributes.end()) << d.name;
      EXPECT_EQ(it->second, AttributeValue::Int(0)) << d.name;
      ++cliqued;
    }
    EXPECT_GT(cliqued, 8) << "the GPUs and their MIG devices";
    // The rails come from hw.pairing itself.
    EXPECT_EQ(inv.fabric.pairs.size(), hw.pairing.pairs.size());

    // Without NVLink reading: PCIe levels only, nothing logged, no clique.
    NodeSource source = Source(Fixture("hgx-h100"));
    source.nvlink = false;
    lines.clear();
    hw = ReadNodeHardware(source, {nvml.get()}, [&](const std::string& l) { lines.push_back(l); });
    EXPECT_TRUE(lines.empty());
    inv = BuildNodeInventory(hw, io);
    for (const DraDevice& d : inv.devices) EXPECT_EQ(d.attributes.count("nvlinkClique"), 0u) << d.name;
  }
  unsetenv("FAKE_NVML_CONFIG");
}

TEST(AddNvlinkCliques, NumbersLinkedGroupsInPciOrderAndSkipsLoneGpus) {
  Inventory inv;
  for (const char* address : {"0000:01:00.0", "0000:02:00.0", "0000:03:00.0", "0000:04:00.0", "0000:05:00.0"}) {
    DraDevice d;
    d.name = std::string("gpu-") + address[6];
    d.pci_address = address;
    inv.devices.push_back(d);
  }
  devices::Interconnect ic;
  // Listed out of PCI order; 04↔02 and 05↔03 linked, 01 alone.
  ic.devices = {"0000:04:00.0", "0000:05:00.0", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0"};
  ic.links.assign(25, 0);
  auto link = [&ic](size_t a, size_t b) { ic.links[a * 5 + b] = ic.links[b * 5 + a] = 2; };
  link(0, 3);
  link(1, 4);
  AddNvlinkCliques(&inv, ic);
  EXPECT_EQ(inv.devices[0].attributes.count("nvlinkClique"), 0u);
  EXPECT_EQ(inv.devices[1].attributes.at("nvlinkClique"), AttributeValue::Int(0));
  EXPECT_EQ(inv.devices[3].attributes.at("nvlinkClique"), AttributeValue::Int(0));
  EXPECT_EQ(inv.devices[2].attributes.at("nvlinkClique"), AttributeValue::Int(1));
  EXPECT_EQ(inv.devices[4].attributes.at("nvlinkClique"), AttributeValue::Int(1));
}

}  // namespace node_hardware_test
}  // namespace accel::dra
