// The hand-written host fixtures (fixtures/hosts/*.json, made by tools/gen_host_fixtures.py):
// each loads, satisfies the model's invariants, writes back byte for byte, and has the shape
// docs/fixtures.md promises (counts, GPU<->NIC switch sharing, NPS4 distances, page pools).
#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "topology/host.h"
#include "topology/host_json.h"

namespace accel::topology {
namespace fixtures_test {

constexpr uint64_t kPage2M = 2048;
constexpr uint64_t kPage1G = 1048576;

std::string FixturePath(const std::string& name) {
  return std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/" + name + ".json";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ADD_FAILURE() << "cannot read " << path << "; run python3 tools/gen_host_fixtures.py";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

HostTopology Load(const std::string& name) {
  std::string path = FixturePath(name);
  return HostFromJson(ReadFile(path), path);
}

// "line N: want ... / got ..." for the first differing line, or "" when equal.
std::string FirstDifference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    bool more_a = static_cast<bool>(std::getline(a, la));
    bool more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return want == got ? "" : "trailing newline differs";
    if (!more_a || !more_b || la != lb)
      return "line " + std::to_string(line) + ":\n  file:   " + (more_a ? la : "<end>") +
             "\n  ToJson: " + (more_b ? lb : "<end>");
  }
}

int CountRole(const HostTopology& host, PciRole role) {
  int n = 0;
  for (const PciDevice& dev : host.pci) n += dev.role == role;
  return n;
}

int CountRdmaFunctions(const HostTopology& host) {
  int n = 0;
  for (const PciDevice& dev : host.pci) n += dev.role == PciRole::kNic && dev.is_rdma();
  return n;
}

std::vector<int> AcceleratorsPerNode(const HostTopology& host) {
  std::vector<int> counts(host.numa_nodes.size(), 0);
  for (const PciDevice& dev : host.pci) {
    int index = host.NodeIndex(dev.numa_node);
    if (dev.is_accelerator() && index >= 0) ++counts[index];
  }
  return counts;
}

const HugepagePool* Pool(const NumaNode& node, uint64_t size_kib) {
  for (const HugepagePool& pool : node.pages)
    if (pool.size_kib == size_kib) return &pool;
  return nullptr;
}

// The upstream port of the PCIe switch right above an endpoint (its parent's parent), or "".
std::string SwitchOf(const HostTopology& host, const PciDevice& endpoint) {
  const PciDevice* port = host.FindPci(endpoint.parent);
  return port == nullptr ? "" : port->parent;
}

// The RDMA NIC functions sharing `gpu`'s PCIe switch.
std::vector<const PciDevice*> NicsBesideOf(const HostTopology& host, const PciDevice& gpu) {
  std::vector<const PciDevice*> nics;
  for (const PciDevice& dev : host.pci)
    if (dev.role == PciRole::kNic && dev.is_rdma() && SwitchOf(host, dev) == SwitchOf(host, gpu))
      nics.push_back(&dev);
  return nics;
}

// --- Every fixture --------------------------------------------------------------------------

struct Expected {
  std::string name;
  int packages, nodes, pus, cores;
  int gpus, hpus, nvswitches, rdma_functions;
  std::vector<int> accelerators_per_node;
  int64_t pages_2m;  ///< 2 MiB pages per node
  int64_t pages_1g;  ///< 1 GiB pages per node; -1: the node has no 1 GiB pool
};

std::ostream& operator<<(std::ostream& os, const Expected& e) { return os << e.name; }

class FixtureTest : public testing::TestWithParam<Expected> {};

TEST_P(FixtureTest, WritesBackByteForByte) {
  std::string path = FixturePath(GetParam().name);
  std::string text = ReadFile(path);
  std::string diff = FirstDifference(text, ToJson(HostFromJson(text, path)));
  EXPECT_TRUE(diff.empty()) << path << " does not round-trip; first difference at " << diff;
}

TEST_P(FixtureTest, SatisfiesTheInvariants) {
  EXPECT_EQ(CheckInvariants(Load(GetParam().name)), "");
}

TEST_P(FixtureTest, HasTheExpectedShape) {
  const Expected& want = GetParam();
  HostTopology host = Load(want.name);
  EXPECT_EQ(host.hostname, want.name);
  EXPECT_EQ(static_cast<int>(host.packages.size()), want.packages);
  EXPECT_EQ(static_cast<int>(host.numa_nodes.size()), want.nodes);
  EXPECT_EQ(host.AllCpus().Count(), want.pus);
  int cores = 0;
  for (const NumaNode& node : host.numa_nodes) cores += static_cast<int>(node.cores.size());
  EXPECT_EQ(cores, want.cores);
  EXPECT_EQ(CountRole(host, PciRole::kGpu), want.gpus);
  EXPECT_EQ(CountRole(host, PciRole::kHpu), want.hpus);
  EXPECT_EQ(CountRole(host, PciRole::kNvSwitch), want.nvswitches);
  EXPECT_EQ(CountRdmaFunctions(host), want.rdma_functions);
  EXPECT_EQ(AcceleratorsPerNode(host), want.accelerators_per_node);
}

TEST_P(FixtureTest, PagePoolsHoldAllNodeMemory) {
  const Expected& want = GetParam();
  for (const NumaNode& node : Load(want.name).numa_nodes) {
    SCOPED_TRACE("node " + std::to_string(node.id));
    ASSERT_FALSE(node.pages.empty());
    EXPECT_EQ(node.pages.front().size_kib, 4u);
    uint64_t kib = 0;
    for (const HugepagePool& pool : node.pages) kib += pool.size_kib * pool.total;
    EXPECT_EQ(kib, node.memory_kib);
    EXPECT_LT(node.pages.front().free, node.pages.front().total);  // read from a live-looking host
    const HugepagePool* pages_2m = Pool(node, kPage2M);
    ASSERT_NE(pages_2m, nullptr);
    EXPECT_EQ(static_cast<int64_t>(pages_2m->total), want.pages_2m);
    const HugepagePool* pages_1g = Pool(node, kPage1G);
    EXPECT_EQ(pages_1g == nullptr ? -1 : static_cast<int64_t>(pages_1g->total), want.pages_1g);
  }
}

TEST_P(FixtureTest, DevicesShareTheNodeOfTheirUpstreamBridge) {
  HostTopology host = Load(GetParam().name);
  for (const PciDevice& dev : host.pci) {
    const PciDevice* parent = host.FindPci(dev.parent);
    if (parent == nullptr || parent->role == PciRole::kHostBridge) continue;
    EXPECT_EQ(dev.numa_node, parent->numa_node) << dev.address;
  }
}

const Expected kFixtures[] = {
    {"hgx-h100", 2, 2, 224, 112, 8, 0, 4, 12, {4, 4}, 16384, 768},
    {"hgx-h200", 2, 2, 224, 112, 8, 0, 4, 12, {4, 4}, 16384, 768},
    {"epyc-nps4-mi300x", 2, 8, 384, 192, 8, 0, 0, 8, {1, 1, 1, 1, 1, 1, 1, 1}, 0, 160},
    {"gaudi2-8hpu", 2, 2, 160, 80, 0, 8, 0, 2, {4, 4}, 0, 256},
    {"devbox", 1, 1, 32, 16, 1, 0, 0, 0, {1}, 4096, -1},
};

INSTANTIATE_TEST_SUITE_P(Hosts, FixtureTest, testing::ValuesIn(kFixtures),
                         [](const testing::TestParamInfo<Expected>& info) {
                           std::string name = info.param.name;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

// --- HGX H100 / H200 ------------------------------------------------------------------------

// GPU bus -> the compute NIC behind the same PCIe switch (docs/fixtures.md).
const std::map<std::string, std::string> kHgxPairs = {
    {"0000:1b:00.0", "mlx5_0"}, {"0000:43:00.0", "mlx5_3"},  {"0000:52:00.0", "mlx5_4"},
    {"0000:61:00.0", "mlx5_5"}, {"0000:9d:00.0", "mlx5_6"},  {"0000:c3:00.0", "mlx5_9"},
    {"0000:d1:00.0", "mlx5_10"}, {"0000:df:00.0", "mlx5_11"},
};

class HgxTest : public testing::TestWithParam<std::string> {};

TEST_P(HgxTest, EachGpuSharesItsSwitchWithOneComputeNic) {
  HostTopology host = Load(GetParam());
  int gpu_index = 0;
  for (const PciDevice& dev : host.pci) {
    if (dev.role != PciRole::kGpu) continue;
    SCOPED_TRACE(dev.address);
    ASSERT_EQ(kHgxPairs.count(dev.address), 1u);
    EXPECT_EQ(AcceleratorVendor(dev), "nvidia");
    EXPECT_EQ(dev.os_devices, std::vector<std::string>{"nvml" + std::to_string(gpu_index++)});
    EXPECT_EQ(dev.numa_node, dev.address < "0000:80" ? 0 : 1);
    std::vector<const PciDevice*> nics = NicsBesideOf(host, dev);
    ASSERT_EQ(nics.size(), 1u);
    EXPECT_EQ(nics[0]->rdma_devices, std::vector<std::string>{kHgxPairs.at(dev.address)});
    EXPECT_EQ(nics[0]->class_id, 0x0207);  // InfiniBand NDR
    EXPECT_EQ(nics[0]->sriov_total_vfs, 16);
    EXPECT_EQ(host.FindPci(SwitchOf(host, dev))->vendor_id, 0x1000);  // Broadcom PEX Gen5
  }
  EXPECT_EQ(gpu_index, 8);
}

TEST_P(HgxTest, StorageNicsAreDualPortEthernetOutsideTheGpuSwitches) {
  HostTopology host = Load(GetParam());
  const std::map<std::string, std::pair<std::string, int>> storage = {
      {"mlx5_1", {"0000:27:00.0", 0}}, {"mlx5_2", {"0000:27:00.1", 0}},
      {"mlx5_7", {"0000:a8:00.0", 1}}, {"mlx5_8", {"0000:a8:00.1", 1}}};
  for (const auto& [rdma, where] : storage) {
    SCOPED_TRACE(rdma);
    const PciDevice* nic = host.FindPci(where.first);
    ASSERT_NE(nic, nullptr);
    EXPECT_EQ(nic->rdma_devices, std::vector<std::string>{rdma});
    EXPECT_EQ(nic->class_id, 0x0200);
    EXPECT_EQ(nic->numa_node, where.second);
    EXPECT_EQ(host.FindPci(nic->parent)->vendor_id, 0x8086);  // straight on a root port
  }
}

TEST_P(HgxTest, BmcVgaAndManagementNicAreNotAcceleratorsOrRdma) {
  HostTopology host = Load(GetParam());
  int vga = 0, management = 0;
  for (const PciDevice& dev : host.pci) {
    if (dev.vendor_id == 0x1a03 && dev.class_id == 0x0300) {
      EXPECT_EQ(dev.role, PciRole::kOther);
      ++vga;
    }
    if (dev.vendor_id == 0x8086 && dev.device_id == 0x1533) {
      EXPECT_EQ(dev.role, PciRole::kNic);
      EXPECT_FALSE(dev.is_rdma());
      ++management;
    }
  }
  EXPECT_EQ(vga, 1);
  EXPECT_EQ(management, 1);
}

INSTANTIATE_TEST_SUITE_P(Hgx, HgxTest, testing::Values("hgx-h100", "hgx-h200"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param == "hgx-h100" ? "h100" : "h200";
                         });

TEST(HgxH200Fixture, DiffersFromH100OnlyInItsGpus) {
  HostTopology h100 = Load("hgx-h100"), h200 = Load("hgx-h200");
  ASSERT_EQ(h100.pci.size(), h200.pci.size());
  for (size_t i = 0; i < h100.pci.size(); ++i) {
    EXPECT_EQ(h100.pci[i].address, h200.pci[i].address);
    if (h200.pci[i].role != PciRole::kGpu) continue;
    EXPECT_EQ(h100.pci[i].device_id, 0x2330);
    EXPECT_EQ(h200.pci[i].device_id, 0x2335);
    EXPECT_EQ(h200.pci[i].name, "NVIDIA H200");
  }
}

// --- EPYC NPS4 + MI300X ---------------------------------------------------------------------

TEST(EpycNps4Fixture, NodesAreSocketQuartersWithSocketDistances) {
  HostTopology host = Load("epyc-nps4-mi300x");
  ASSERT_EQ(host.numa_nodes.size(), 8u);
  EXPECT_EQ(host.numa_nodes[0].cpus.ToString(), "0-23,192-215");
  EXPECT_EQ(host.numa_nodes[7].cpus.ToString(), "168-191,360-383");
  for (const NumaNode& node : host.numa_nodes) {
    SCOPED_TRACE("node " + std::to_string(node.id));
    EXPECT_EQ(node.package, node.id / 4);
    EXPECT_EQ(node.cpus.Count(), 48);
    EXPECT_EQ(node.memory_kib, 192ull * 1024 * 1024);
    ASSERT_EQ(node.distances.size(), 8u);
    for (int other = 0; other < 8; ++other) {
      int want = other == node.id ? 10 : other / 4 == node.id / 4 ? 12 : 32;
      EXPECT_EQ(node.distances[other], want) << "to node " << other;
    }
  }
}

TEST(EpycNps4Fixture, EachNodeHasOneGpuSharingASwitchWithARoceNic) {
  HostTopology host = Load("epyc-nps4-mi300x");
  for (const PciDevice& dev : host.pci) {
    if (dev.role != PciRole::kGpu) continue;
    SCOPED_TRACE(dev.address);
    EXPECT_EQ(AcceleratorVendor(dev), "amd");
    EXPECT_EQ(dev.class_id, 0x1200);
    std::string n = std::to_string(dev.numa_node);
    EXPECT_EQ(dev.os_devices,
              (std::vector<std::string>{"card" + std::to_string(dev.numa_node + 1),
                                        "renderD" + std::to_string(128 + dev.numa_node)}));
    std::vector<const PciDevice*> nics = NicsBesideOf(host, dev);
    ASSERT_EQ(nics.size(), 1u);
    EXPECT_EQ(nics[0]->rdma_devices, std::vector<std::string>{"bnxt_re" + n});
    EXPECT_EQ(nics[0]->numa_node, dev.numa_node);
    EXPECT_EQ(nics[0]->vendor_id, 0x14e4);
  }
}

// --- Gaudi2 ---------------------------------------------------------------------------------

TEST(Gaudi2Fixture, HpusComeInPairsBehindPcieSwitches) {
  HostTopology host = Load("gaudi2-8hpu");
  std::map<std::string, std::vector<std::string>> by_switch;
  int index = 0;
  for (const PciDevice& dev : host.pci) {
    if (dev.role != PciRole::kHpu) continue;
    EXPECT_EQ(AcceleratorVendor(dev), "habana");
    EXPECT_EQ(dev.os_devices, std::vector<std::string>{"accel" + std::to_string(index++)});
    EXPECT_EQ(dev.numa_node, index <= 4 ? 0 : 1);
    by_switch[SwitchOf(host, dev)].push_back(dev.address);
  }
  EXPECT_EQ(by_switch.size(), 4u);
  for (const auto& [upstream, hpus] : by_switch) EXPECT_EQ(hpus.size(), 2u) << upstream;
  for (int node = 0; node < 2; ++node) {
    int nics = 0;
    for (const PciDevice& dev : host.pci)
      if (dev.is_rdma() && dev.numa_node == node) {
        EXPECT_EQ(dev.rdma_devices, std::vector<std::string>{"mlx5_" + std::to_string(node)});
        ++nics;
      }
    EXPECT_EQ(nics, 1) << "node " << node;
  }
}

// --- Devbox ---------------------------------------------------------------------------------

TEST(DevboxFixture, ConsumerGpuWithItsAudioFunction) {
  HostTopology host = Load("devbox");
  const PciDevice* gpu = host.FindPci("0000:01:00.0");
  const PciDevice* audio = host.FindPci("0000:01:00.1");
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(audio, nullptr);
  EXPECT_EQ(gpu->role, PciRole::kGpu);
  EXPECT_EQ(gpu->class_id, 0x0300);
  EXPECT_EQ(audio->role, PciRole::kOther);
  EXPECT_EQ(audio->parent, gpu->parent);
  EXPECT_EQ(host.FindPci(gpu->parent)->vendor_id, 0x1022);
  const NumaNode& node = host.numa_nodes.at(0);
  EXPECT_EQ(node.cores.front().ToString(), "0,16");
  EXPECT_EQ(node.distances, std::vector<int>{10});
  const HugepagePool* pages_2m = Pool(node, kPage2M);
  ASSERT_NE(pages_2m, nullptr);
  EXPECT_EQ(pages_2m->free, 3000u);
  const PciDevice* nic = host.FindPci("0000:05:00.0");
  ASSERT_NE(nic, nullptr);
  EXPECT_EQ(nic->netdevs, std::vector<std::string>{"enp5s0"});
  EXPECT_FALSE(nic->is_rdma());
}

}  // namespace
}  // namespace accel::topology
