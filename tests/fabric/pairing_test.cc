#include "fabric/pairing.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <tuple>

#include "common/error.h"
#include "fabric/fabric_json.h"
#include "fabric/fabric_test_hosts.h"
#include "support/fake_sysfs.h"
#include "support/shared_fixture.h"
#include "topology/sources.h"

namespace accel::fabric {
namespace pairing_test {

namespace fs = std::filesystem;
using testing::Fixture;
using testing::TreeBuilder;

// GPU address → the RDMA device it got ("" when none).
std::map<std::string, std::string> PairMap(const Fabric& f) {
  std::map<std::string, std::string> out;
  for (const GpuNicPair& p : f.pairs) out[p.gpu_address] = p.nic >= 0 ? f.nics[p.nic].rdma_device : "";
  return out;
}

const FabricNic* NicNamed(const Fabric& f, const std::string& rdma) {
  for (const FabricNic& n : f.nics) {
    if (n.rdma_device == rdma) return &n;
  }
  return nullptr;
}

const std::map<std::string, std::string> kHgxPairs = {
    {"0000:1b:00.0", "mlx5_0"}, {"0000:43:00.0", "mlx5_3"},  {"0000:52:00.0", "mlx5_4"},
    {"0000:61:00.0", "mlx5_5"}, {"0000:9d:00.0", "mlx5_6"},  {"0000:c3:00.0", "mlx5_9"},
    {"0000:d1:00.0", "mlx5_10"}, {"0000:df:00.0", "mlx5_11"}};

class HgxPairing : public ::testing::Test {
 protected:
  // Writing the fake sysfs of a 224-CPU host takes seconds: once per suite.
  static void SetUpTestSuite() {
    root_ = new fs::path(fs::temp_directory_path() /
                         ("accel-pairing-" + std::to_string(::getpid())));
    fs::remove_all(*root_);
    topology::HostTopology host = topology::LoadTopology(Fixture("fixtures/hosts/hgx-h100.json"));
    accel::testing::WriteFakeSysfs(host, root_->string());
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
  }
  void SetUp() override { host_ = topology::LoadTopology(Fixture("fixtures/hosts/hgx-h100.json")); }

  std::vector<NicPort> FakePorts() { return ReadNicPorts(root_->string()); }
  void SetPort(const std::string& rdma, const std::string& file, const std::string& text) {
    accel::testing::WriteFakeFile(root_->string(),
                                  "sys/class/infiniband/" + rdma + "/ports/1/" + file, text);
  }

  topology::HostTopology host_;
  static fs::path* root_;
};

fs::path* HgxPairing::root_ = nullptr;

TEST_F(HgxPairing, EachGpuGetsTheNicBehindItsSwitch) {
  Fabric f = PairGpusWithNics(host_, {});
  ASSERT_EQ(f.gpus.size(), 8u);
  ASSERT_EQ(f.nics.size(), 12u);
  EXPECT_EQ(PairMap(f), kHgxPairs);
  for (size_t g = 0; g < f.pairs.size(); ++g) {
    const GpuNicPair& p = f.pairs[g];
    EXPECT_EQ(p.gpu_index, static_cast<int>(g));
    EXPECT_EQ(p.path.type, PathType::kPix);
    EXPECT_EQ(p.path.smi, "PIX");
    EXPECT_DOUBLE_EQ(p.path.bandwidth_gbs, 48);
    EXPECT_EQ(p.numa_node, g < 4 ? 0 : 1);
  }
  for (const char* storage : {"mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"}) {
    ASSERT_NE(NicNamed(f, storage), nullptr);
    EXPECT_NE(NicNamed(f, storage)->excluded.find("storage/management"), std::string::npos);
  }
  std::vector<const FabricNic*> used = f.UsedNics();
  ASSERT_EQ(used.size(), 8u);
  EXPECT_EQ(used[0]->rdma_device, "mlx5_0");
  EXPECT_EQ(used[7]->rdma_device, "mlx5_11");
  EXPECT_EQ(used[0]->netdev, "ibp24s0");
  EXPECT_EQ(f.matrix.size(), 20u * 20u);
  EXPECT_EQ(f.matrix[0].type, PathType::kLoc);
  // Row GPU0, column NIC0 (mlx5_0, first in PCI order).
  EXPECT_EQ(f.matrix[0 * 20 + 8].type, PathType::kPix);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("mlx5_1, mlx5_2, mlx5_7, mlx5_8"), std::string::npos);
}

TEST_F(HgxPairing, SameAnswerFromFakeSysfsPorts) {
  Fabric f = PairGpusWithNics(host_, FakePorts());
  EXPECT_EQ(PairMap(f), kHgxPairs);
  EXPECT_EQ(NicNamed(f, "mlx5_0")->state, "ACTIVE");
  EXPECT_EQ(NicNamed(f, "mlx5_0")->link_layer, "InfiniBand");
  EXPECT_DOUBLE_EQ(NicNamed(f, "mlx5_0")->rate_gbps, 400);
}

TEST_F(HgxPairing, KeepUnswitchedStillPrefersTheOwnSwitch) {
  PairingOptions options;
  options.keep_unswitched = true;
  Fabric f = PairGpusWithNics(host_, {}, options);
  EXPECT_EQ(PairMap(f), kHgxPairs);
  EXPECT_EQ(NicNamed(f, "mlx5_1")->excluded, "");
}

TEST_F(HgxPairing, DownPortIsExcludedAndItsGpuSharesANeighbour) {
  std::vector<NicPort> ports = FakePorts();
  for (NicPort& p : ports) {
    if (p.rdma_device == "mlx5_3") p.state = "DOWN";
  }
  Fabric f = PairGpusWithNics(host_, ports);
  EXPECT_EQ(NicNamed(f, "mlx5_3")->excluded, "port DOWN");
  std::map<std::string, std::string> pairs = PairMap(f);
  EXPECT_EQ(pairs["0000:1b:00.0"], "mlx5_0");
  // GPU 43's best remaining NIC is on its own NUMA node (PHB); 7 NICs for 8 GPUs.
  const GpuNicPair& p43 = f.pairs[1];
  EXPECT_EQ(p43.path.type, PathType::kPhb);
  EXPECT_EQ(f.nics[p43.nic].numa_node, 0);
  bool note = false;
  for (const std::string& n : f.notes) note |= n.find("7 NICs for 8 GPUs") != std::string::npos;
  EXPECT_TRUE(note);
}

TEST_F(HgxPairing, DownPortReadFromSysfs) {
  SetPort("mlx5_4", "state", "1: DOWN\n");
  Fabric f = PairGpusWithNics(host_, FakePorts());
  SetPort("mlx5_4", "state", "4: ACTIVE\n");  // the tree is shared by the suite
  EXPECT_EQ(NicNamed(f, "mlx5_4")->excluded, "port DOWN");
}

TEST_F(HgxPairing, LinkLayersAreNotMixed) {
  std::vector<NicPort> ports = FakePorts();
  for (NicPort& p : ports) {
    if (p.rdma_device == "mlx5_0") p.link_layer = "Ethernet";
  }
  Fabric f = PairGpusWithNics(host_, ports);
  EXPECT_EQ(NicNamed(f, "mlx5_0")->excluded, "link layer Ethernet (want InfiniBand)");
  EXPECT_NE(PairMap(f)["0000:1b:00.0"], "mlx5_0");

  PairingOptions eth;
  eth.link_layer = "Ethernet";
  f = PairGpusWithNics(host_, ports, eth);
  for (const GpuNicPair& p : f.pairs) EXPECT_EQ(f.nics[p.nic].rdma_device, "mlx5_0");
  EXPECT_EQ(NicNamed(f, "mlx5_3")->excluded, "link layer InfiniBand (want Ethernet)");

  PairingOptions bad;
  bad.link_layer = "token-ring";
  EXPECT_THROW(PairGpusWithNics(host_, ports, bad), InputError);
}

TEST_F(HgxPairing, ExcludeByNameNetdevOrAddress) {
  PairingOptions options;
  options.exclude = {"mlx5_0", "ibp64s0", "4f:00.0"};
  Fabric f = PairGpusWithNics(host_, {}, options);
  EXPECT_EQ(NicNamed(f, "mlx5_0")->excluded, "excluded by --exclude mlx5_0");
  EXPECT_EQ(NicNamed(f, "mlx5_3")->excluded, "excluded by --exclude ibp64s0");
  EXPECT_EQ(NicNamed(f, "mlx5_4")->excluded, "excluded by --exclude 4f:00.0");
  for (const GpuNicPair& p : f.pairs) {
    ASSERT_GE(p.nic, 0);
    EXPECT_EQ(f.nics[p.nic].excluded, "");
  }
}

TEST_F(HgxPairing, SubsetOfGpus) {
  PairingOptions options;
  options.gpus = {"0000:df:00.0", "43:00.0", "0000:43:00.0"};
  Fabric f = PairGpusWithNics(host_, {}, options);
  ASSERT_EQ(f.gpus, (std::vector<std::string>{"0000:43:00.0", "0000:df:00.0"}));
  EXPECT_EQ(f.pairs[0].gpu_index, 1);
  EXPECT_EQ(f.pairs[1].gpu_index, 7);
  EXPECT_EQ(f.nics[f.pairs[0].nic].rdma_device, "mlx5_3");
  EXPECT_EQ(f.nics[f.pairs[1].nic].rdma_device, "mlx5_11");
  EXPECT_EQ(f.UsedNics().size(), 2u);
  EXPECT_EQ(f.matrix.size(), 14u * 14u);
}

TEST_F(HgxPairing, UnknownGpuIsInputError) {
  PairingOptions options;
  options.gpus = {"0000:ee:00.0"};
  EXPECT_THROW(PairGpusWithNics(host_, {}, options), InputError);
  options.gpus = {"0000:18:00.0"};  // a NIC, not an accelerator
  try {
    PairGpusWithNics(host_, {}, options);
    FAIL() << "no throw";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "--gpus");
    EXPECT_NE(e.hint().find("1b:00.0"), std::string::npos);
  }
}

TEST_F(HgxPairing, PortsOutsideTheTopologyAreNoted) {
  std::vector<NicPort> ports = FakePorts();
  NicPort stray;
  stray.rdma_device = "mlx5_99";
  stray.pci_address = "0000:ee:00.0";
  stray.state = "ACTIVE";
  ports.push_back(stray);
  Fabric f = PairGpusWithNics(host_, ports);
  EXPECT_EQ(NicNamed(f, "mlx5_99"), nullptr);
  bool note = false;
  for (const std::string& n : f.notes) note |= n.find("mlx5_99") != std::string::npos;
  EXPECT_TRUE(note);
  EXPECT_EQ(PairMap(f), kHgxPairs);
}

TEST_F(HgxPairing, JsonShape) {
  nlohmann::ordered_json j = FabricToJson(PairGpusWithNics(host_, {}));
  ASSERT_EQ(j["pairs"].size(), 8u);
  EXPECT_EQ(j["pairs"][0]["gpu"], "0000:1b:00.0");
  EXPECT_EQ(j["pairs"][0]["nic"]["rdma_device"], "mlx5_0");
  EXPECT_EQ(j["pairs"][0]["path"]["nccl"], "PIX");
  EXPECT_EQ(j["nics"].size(), 12u);
  EXPECT_EQ(j["nics"][1]["rdma_device"], "mlx5_1");
  EXPECT_FALSE(j["nics"][1]["used"].get<bool>());
  EXPECT_TRUE(j["nics"][1]["excluded"].is_string());
  EXPECT_TRUE(j["nics"][0]["excluded"].is_null());
}

TEST(Pairing, NoNicsGivesUnpairedGpusAndANote) {
  topology::HostTopology host = topology::LoadTopology(Fixture("fixtures/hosts/devbox.json"));
  Fabric f = PairGpusWithNics(host, {});
  ASSERT_FALSE(f.pairs.empty());
  for (const GpuNicPair& p : f.pairs) {
    EXPECT_EQ(p.nic, -1);
    EXPECT_EQ(p.path.type, PathType::kSys);
  }
  EXPECT_TRUE(f.UsedNics().empty());
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("no RDMA NIC"), std::string::npos);
}

TEST(Pairing, AllNicsExcludedGivesANote) {
  TreeBuilder b;
  b.Gpu(b.RootPort(0), 0);
  b.Nic(b.RootPort(0), 0, "mlx5_0");
  PairingOptions options;
  options.exclude = {"mlx5_0"};
  Fabric f = PairGpusWithNics(b.host(), {}, options);
  EXPECT_EQ(f.pairs[0].nic, -1);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("no usable RDMA NIC"), std::string::npos);
}

TEST(Pairing, NoAcceleratorsIsNotAnError) {
  TreeBuilder b;
  b.Nic(b.RootPort(0), 0, "mlx5_0");
  Fabric f = PairGpusWithNics(b.host(), {});
  EXPECT_TRUE(f.gpus.empty());
  EXPECT_TRUE(f.pairs.empty());
  EXPECT_EQ(f.nics.size(), 1u);
  EXPECT_EQ(f.matrix.size(), 1u);
  ASSERT_EQ(f.notes.size(), 1u);
  EXPECT_NE(f.notes[0].find("no accelerators"), std::string::npos);
}

TEST(Pairing, ProliantHwlocExport) {
  std::string xml = testing::SharedHwloc("24em64t-2n6c2t-pci.xml");
  ACCEL_REQUIRE_SHARED(xml);
  topology::HostTopology host = topology::LoadTopology(xml);
  Fabric f = PairGpusWithNics(host, {});
  ASSERT_EQ(f.pairs.size(), 3u);
  std::map<std::string, PathType> types;
  for (const GpuNicPair& p : f.pairs) {
    ASSERT_GE(p.nic, 0);
    EXPECT_EQ(f.nics[p.nic].rdma_device, "mlx4_0");
    types[p.gpu_address] = p.path.type;
  }
  EXPECT_EQ(types["0000:06:00.0"], PathType::kPhb);  // NUMA 0, another root port
  EXPECT_EQ(types["0000:11:00.0"], PathType::kSys);
  EXPECT_EQ(types["0000:14:00.0"], PathType::kSys);
  EXPECT_EQ(f.pairs[0].path.smi, "PHB");
}

TEST(Pairing, FourNicsForEightGpusServeTwoEach) {
  TreeBuilder b;
  for (int s = 0; s < 4; ++s) {
    int numa = s / 2;
    std::vector<std::string> down = b.Switch(b.RootPort(numa), numa, 3);
    b.Gpu(down[0], numa);
    b.Gpu(down[1], numa);
    b.Nic(down[2], numa, "mlx5_" + std::to_string(s));
  }
  Fabric f = PairGpusWithNics(b.host(), {});
  ASSERT_EQ(f.pairs.size(), 8u);
  for (size_t g = 0; g < 8; ++g) {
    ASSERT_GE(f.pairs[g].nic, 0);
    EXPECT_EQ(f.nics[f.pairs[g].nic].rdma_device, "mlx5_" + std::to_string(g / 2));
    EXPECT_EQ(f.pairs[g].path.type, PathType::kPix);
  }
  ASSERT_FALSE(f.notes.empty());
  EXPECT_NE(f.notes[0].find("4 NICs for 8 GPUs: each NIC serves up to 2 GPUs"), std::string::npos);
}

TEST(Pairing, CapacityForcesSharingAcrossSwitches) {
  // Two GPUs behind NIC A's switch, none behind B's: capacity 1 sends one GPU to B.
  TreeBuilder b;
  std::vector<std::string> down = b.Switch(b.RootPort(0), 0, 3);
  b.Gpu(down[0], 0);
  b.Gpu(down[1], 0);
  b.Nic(down[2], 0, "mlx5_0");
  b.Nic(b.Switch(b.RootPort(0), 0, 1)[0], 0, "mlx5_1");
  PairingOptions options;
  options.keep_unswitched = true;
  Fabric f = PairGpusWithNics(b.host(), {}, options);
  EXPECT_NE(f.pairs[0].nic, f.pairs[1].nic);
  // Without --keep-unswitched mlx5_1 counts as a storage NIC and both share mlx5_0.
  f = PairGpusWithNics(b.host(), {});
  EXPECT_EQ(f.pairs[0].nic, f.pairs[1].nic);
}

TEST(Pairing, VirtualFunctionsOnlyWhenAsked) {
  TreeBuilder b;
  std::vector<std::string> down = b.Switch(b.RootPort(0), 0, 2);
  b.Gpu(down[0], 0);
  std::string pf = b.Nic(down[1], 0, "mlx5_0");
  b.Nic(down[1], 0, "mlx5_2");
  b.Last().physfn = pf;
  PairingOptions options;
  options.exclude = {"mlx5_0"};
  Fabric f = PairGpusWithNics(b.host(), {}, options);
  EXPECT_EQ(NicNamed(f, "mlx5_2")->excluded, "virtual function of mlx5_0 (--include-vfs uses VFs)");
  EXPECT_TRUE(NicNamed(f, "mlx5_2")->is_vf);
  EXPECT_EQ(f.pairs[0].nic, -1);
  options.include_vfs = true;
  f = PairGpusWithNics(b.host(), {}, options);
  ASSERT_GE(f.pairs[0].nic, 0);
  EXPECT_EQ(f.nics[f.pairs[0].nic].rdma_device, "mlx5_2");
}

TEST(Pairing, UnknownNumaNodeIsNoted) {
  TreeBuilder b;
  b.Gpu(b.Bridge(b.HostBridge(-1), -1), -1);
  b.Nic(b.RootPort(1), 1, "mlx5_0");
  Fabric f = PairGpusWithNics(b.host(), {});
  EXPECT_EQ(f.pairs[0].path.type, PathType::kSys);
  EXPECT_TRUE(f.pairs[0].path.numa_unknown);
  bool note = false;
  for (const std::string& n : f.notes) note |= n.find("NUMA node unknown") != std::string::npos;
  EXPECT_TRUE(note);
}

// Σ over GPUs of (type, −bandwidth, hops, NIC rank among usable), compared in order.
using Total = std::tuple<long long, double, long long, long long>;

TEST(PairingProperty, EqualsBruteForceOnRandomTrees) {
  std::mt19937 rng(11);
  int checked = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    topology::HostTopology host = testing::RandomHost(rng, 5, 4);
    PairingOptions options;
    options.keep_unswitched = iter % 2 == 0;
    Fabric f = PairGpusWithNics(host, {}, options);
    ASSERT_EQ(f.pairs.size(), f.gpus.size());
    std::vector<int> usable;
    for (size_t n = 0; n < f.nics.size(); ++n) {
      if (f.nics[n].excluded.empty()) usable.push_back(static_cast<int>(n));
    }
    ASSERT_FALSE(usable.empty());  // the storage rule never removes every NIC
    size_t G = f.gpus.size(), N = usable.size(), cap = (G + N - 1) / N;
    std::vector<Total> cost(G * N);
    for (size_t g = 0; g < G; ++g) {
      for (size_t n = 0; n < N; ++n) {
        PathInfo p = ClassifyPath(host, f.gpus[g], f.nics[usable[n]].pci_address);
        cost[g * N + n] = {static_cast<int>(p.type), -p.bandwidth_gbs, p.hops, n};
      }
    }
    auto total = [&](const std::vector<int>& a) {
      Total t{0, 0, 0, 0};
      for (size_t g = 0; g < G; ++g) {
        const Total& c = cost[g * N + a[g]];
        std::get<0>(t) += std::get<0>(c);
        std::get<1>(t) += std::get<1>(c);
        std::get<2>(t) += std::get<2>(c);
        std::get<3>(t) += std::get<3>(c);
      }
      return t;
    };
    // The pairing's assignment, as positions among usable NICs; capacity respected.
    std::vector<int> got(G), load(N, 0);
    for (size_t g = 0; g < G; ++g) {
      auto it = std::find(usable.begin(), usable.end(), f.pairs[g].nic);
      ASSERT_NE(it, usable.end());
      got[g] = static_cast<int>(it - usable.begin());
      ASSERT_LE(++load[got[g]], static_cast<int>(cap));
      ASSERT_EQ(f.pairs[g].path.type, PathType(std::get<0>(cost[g * N + got[g]])));
    }
    // Brute force.
    std::vector<int> a(G, 0), l(N, 0);
    bool have = false;
    Total best{};
    auto rec = [&](auto&& self, size_t g) -> void {
      if (g == G) {
        Total t = total(a);
        if (!have || t < best) best = t;
        have = true;
        return;
      }
      for (size_t n = 0; n < N; ++n) {
        if (l[n] >= static_cast<int>(cap)) continue;
        ++l[n];
        a[g] = static_cast<int>(n);
        self(self, g + 1);
        --l[n];
      }
    };
    rec(rec, 0);
    ASSERT_EQ(total(got), best) << "iteration " << iter;
    // Deterministic.
    ASSERT_EQ(PairMap(f), PairMap(PairGpusWithNics(host, {}, options)));
    ++checked;
  }
  EXPECT_EQ(checked, 3000);
}

}  // namespace
}  // namespace accel::fabric
