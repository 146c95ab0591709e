#include "fabric/path.h"

#include <gtest/gtest.h>

#include <random>

#include "common/error.h"
#include "fabric/fabric_test_hosts.h"

namespace accel::fabric {
namespace path_test {

using testing::Fixture;
using testing::kGen4x16;
using testing::kGen5x16;
using testing::TreeBuilder;
using topology::PciRole;

TEST(PathBandwidth, HwlocValuesBecomeNcclValues) {
  EXPECT_DOUBLE_EQ(NcclPcieBandwidth(63.015), 48);
  EXPECT_DOUBLE_EQ(NcclPcieBandwidth(31.5), 24);
  EXPECT_DOUBLE_EQ(NcclPcieBandwidth(31.508), 24);
  EXPECT_DOUBLE_EQ(NcclPcieBandwidth(15.75), 12);
  EXPECT_DOUBLE_EQ(NcclPcieBandwidth(7.877), 6);   // Gen3 x8 = Gen4 x4: both 6
  EXPECT_DOUBLE_EQ(NcclPcieBandwidth(3.938), 3);   // Gen3 x4
  EXPECT_DOUBLE_EQ(NcclPcieBandwidth(8), 6);       // Gen2 x16
  EXPECT_DOUBLE_EQ(NcclPcieBandwidth(4), 3);       // Gen1 x16 = Gen2 x8
  EXPECT_DOUBLE_EQ(NcclPcieBandwidth(0.5), 0.375); // Gen2 x1
  EXPECT_DOUBLE_EQ(NcclPcieBandwidth(0), 0);
  EXPECT_NEAR(NcclPcieBandwidth(10), 10 * 0.75 * 130 / 128, 1e-9);  // no standard link
}

TEST(PathBandwidth, LinkFromHwloc) {
  auto l = PcieLinkFromHwloc(63.015);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->gen, 5);
  EXPECT_EQ(l->width, 16);
  l = PcieLinkFromHwloc(31.5);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->gen, 4);
  EXPECT_EQ(l->width, 16);
  l = PcieLinkFromHwloc(15.75);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->gen, 3);
  EXPECT_EQ(l->width, 16);
  EXPECT_FALSE(PcieLinkFromHwloc(0));
  EXPECT_FALSE(PcieLinkFromHwloc(10));
  EXPECT_DOUBLE_EQ(NcclPcieBandwidth(PcieLink{6, 16}), 96);
  EXPECT_DOUBLE_EQ(NcclPcieBandwidth(PcieLink{0, 16}), 0);
}

TEST(PathType, NamesAndParsing) {
  EXPECT_STREQ(PathTypeName(PathType::kPix), "PIX");
  EXPECT_STREQ(PathTypeName(PathType::kDis), "DIS");
  EXPECT_EQ(ParsePathType("pxb"), PathType::kPxb);
  EXPECT_EQ(ParsePathType(" PHB "), PathType::kPhb);
  EXPECT_EQ(ParsePathType("P2C"), PathType::kP2c);
  EXPECT_EQ(ParsePathType("0"), PathType::kLoc);
  EXPECT_EQ(ParsePathType("1"), PathType::kPix);
  EXPECT_EQ(ParsePathType("2"), PathType::kPxb);
  EXPECT_EQ(ParsePathType("3"), PathType::kPhb);
  EXPECT_EQ(ParsePathType("4"), PathType::kSys);
  EXPECT_EQ(ParsePathType("5"), PathType::kSys);
  EXPECT_FALSE(ParsePathType("6"));
  EXPECT_FALSE(ParsePathType("NODE"));  // nvidia-smi's word, not NCCL's
  EXPECT_FALSE(ParsePathType("NET"));   // NCCL's level parser stops at SYS
  EXPECT_FALSE(ParsePathType(""));
  EXPECT_FALSE(ParsePathType("-1"));
  for (int v = 0; v <= static_cast<int>(PathType::kSys); ++v) {
    EXPECT_EQ(ParsePathType(PathTypeName(static_cast<PathType>(v))), static_cast<PathType>(v));
  }
}

TEST(PathAddress, Canonical) {
  EXPECT_EQ(CanonicalPciAddress("1b:00.0"), "0000:1b:00.0");
  EXPECT_EQ(CanonicalPciAddress("0000:1B:00.0"), "0000:1b:00.0");
  EXPECT_EQ(CanonicalPciAddress("PCI0000:00"), "pci0000:00");
  EXPECT_EQ(CanonicalPciAddress("mlx5_0"), "mlx5_0");
}

class HgxPaths : public ::testing::Test {
 protected:
  void SetUp() override { host_ = topology::LoadTopology(Fixture("fixtures/hosts/hgx-h100.json")); }
  topology::HostTopology host_;
};

TEST_F(HgxPaths, OwnSwitchIsPix) {
  PathInfo p = ClassifyPath(host_, "0000:1b:00.0", "0000:18:00.0");
  EXPECT_EQ(p.type, PathType::kPix);
  EXPECT_EQ(p.smi, "PIX");
  EXPECT_DOUBLE_EQ(p.bandwidth_gbs, 48);
  EXPECT_EQ(p.hops, 2);
  EXPECT_FALSE(p.numa_unknown);
  // Short addresses work too.
  EXPECT_EQ(ClassifyPath(host_, "1b:00.0", "18:00.0").type, PathType::kPix);
}

TEST_F(HgxPaths, OtherRootComplexSameNumaIsPhbNode) {
  PathInfo p = ClassifyPath(host_, "0000:1b:00.0", "0000:40:00.0");  // GPU0 ↔ mlx5_3
  EXPECT_EQ(p.type, PathType::kPhb);
  EXPECT_EQ(p.smi, "NODE");
  EXPECT_EQ(p.hops, 4);
  EXPECT_DOUBLE_EQ(p.bandwidth_gbs, 48);
  // Storage NIC on its own root port, same NUMA node.
  p = ClassifyPath(host_, "0000:1b:00.0", "0000:27:00.0");
  EXPECT_EQ(p.type, PathType::kPhb);
  EXPECT_EQ(p.smi, "NODE");
}

TEST_F(HgxPaths, OtherSocketIsSys) {
  PathInfo p = ClassifyPath(host_, "0000:1b:00.0", "0000:9a:00.0");
  EXPECT_EQ(p.type, PathType::kSys);
  EXPECT_EQ(p.smi, "SYS");
  EXPECT_EQ(p.hops, 5);
}

TEST_F(HgxPaths, SelfIsLoc) {
  PathInfo p = ClassifyPath(host_, "0000:1b:00.0", "1b:00.0");
  EXPECT_EQ(p.type, PathType::kLoc);
  EXPECT_EQ(p.smi, "X");
}

TEST_F(HgxPaths, FunctionsUnderOneRootPort) {
  // NCCL: both hang off the CPU (root ports are invisible) → PHB; nvidia-smi: one bridge.
  PathInfo p = ClassifyPath(host_, "0000:27:00.0", "0000:27:00.1");
  EXPECT_EQ(p.type, PathType::kPhb);
  EXPECT_EQ(p.smi, "PIX");
}

TEST_F(HgxPaths, UnknownAddressThrows) {
  EXPECT_THROW(ClassifyPath(host_, "0000:1b:00.0", "0000:ee:00.0"), InputError);
  EXPECT_THROW(ClassifyPath(host_, "nonsense", "0000:18:00.0"), InputError);
  PathClassifier paths(host_);
  EXPECT_EQ(paths.Find("0000:ee:00.0"), -1);
  EXPECT_GE(paths.Find("1B:00.0"), 0);
}

TEST(PathCollapse, BroadcomTwoLevelSwitchIsFlattened) {
  for (bool broadcom : {true, false}) {
    TreeBuilder b;
    uint16_t vendor = broadcom ? 0x1000 : 0x10b5, device = broadcom ? 0xc030 : 0x9797;
    std::string rp = b.RootPort(0);
    std::vector<std::string> top = b.Switch(rp, 0, 2, vendor, device);
    std::string gpu = b.Gpu(b.Switch(top[0], 0, 1, vendor, device)[0], 0);
    std::string nic = b.Nic(b.Switch(top[1], 0, 1, vendor, device)[0], 0, "mlx5_0");
    PathInfo p = ClassifyPath(b.host(), gpu, nic);
    EXPECT_EQ(p.type, broadcom ? PathType::kPix : PathType::kPxb) << broadcom;
    EXPECT_EQ(p.smi, "PXB") << broadcom;  // nvidia-smi sees both levels
    EXPECT_EQ(p.hops, broadcom ? 2 : 4);
  }
}

TEST(PathCollapse, BroadcomFlattensOneLevelOnly) {
  TreeBuilder b;
  std::string rp = b.RootPort(0);
  std::vector<std::string> l1 = b.Switch(rp, 0, 2, 0x1000, 0xc030);
  std::vector<std::string> l2 = b.Switch(l1[0], 0, 2, 0x1000, 0xc030);  // merged into l1
  std::vector<std::string> l3 = b.Switch(l2[0], 0, 1, 0x1000, 0xc030);  // stays separate
  std::string gpu = b.Gpu(l3[0], 0);
  std::string nic = b.Nic(l1[1], 0, "mlx5_0");
  EXPECT_EQ(ClassifyPath(b.host(), gpu, nic).type, PathType::kPxb);
  std::string nic2 = b.Nic(l2[1], 0, "mlx5_1");
  EXPECT_EQ(ClassifyPath(b.host(), nic, nic2).type, PathType::kPix);
}

TEST(PathCollapse, SwitchesWithCommonAncestorArePxb) {
  TreeBuilder b;
  std::vector<std::string> top = b.Switch(b.RootPort(0), 0, 2);
  std::string gpu = b.Gpu(b.Switch(top[0], 0, 1)[0], 0);
  std::string nic = b.Nic(top[1], 0, "mlx5_0");  // directly on the upper switch
  PathInfo p = ClassifyPath(b.host(), gpu, nic);
  EXPECT_EQ(p.type, PathType::kPxb);
  EXPECT_EQ(p.smi, "PXB");
  EXPECT_EQ(p.hops, 3);
}

TEST(PathCollapse, RootPortsAreInvisible) {
  TreeBuilder b;
  std::string hb = b.HostBridge(0);
  std::string gpu = b.Gpu(b.Bridge(hb, 0), 0);
  std::string nic = b.Nic(b.Bridge(hb, 0), 0, "mlx5_0");
  PathInfo p = ClassifyPath(b.host(), gpu, nic);
  EXPECT_EQ(p.type, PathType::kPhb);
  EXPECT_EQ(p.smi, "PHB");  // one host bridge
  EXPECT_EQ(p.hops, 2);
}

TEST(PathNuma, RootComplexesMergePerNode) {
  TreeBuilder b;
  std::string gpu = b.Gpu(b.RootPort(1), 1);
  std::string nic = b.Nic(b.RootPort(1), 1, "mlx5_0");
  std::string far = b.Nic(b.RootPort(0), 0, "mlx5_1");
  EXPECT_EQ(ClassifyPath(b.host(), gpu, nic).type, PathType::kPhb);
  EXPECT_EQ(ClassifyPath(b.host(), gpu, nic).smi, "NODE");
  EXPECT_EQ(ClassifyPath(b.host(), gpu, far).type, PathType::kSys);
  EXPECT_EQ(ClassifyPath(b.host(), gpu, far).smi, "SYS");
}

TEST(PathNuma, NumaFromAncestorWhenDeviceLacksIt) {
  TreeBuilder b;
  std::string hb = b.HostBridge(1);
  std::string gpu = b.Gpu(b.Bridge(hb, 1), -1);  // device without numa_node, its port has it
  std::string nic = b.Nic(b.RootPort(1), 1, "mlx5_0");
  EXPECT_EQ(ClassifyPath(b.host(), gpu, nic).type, PathType::kPhb);
}

TEST(PathNuma, UnknownNodeIsSysOnMultiNodeHosts) {
  for (int nodes : {1, 2}) {
    TreeBuilder b(nodes);
    std::string hb = b.HostBridge(-1);
    b.host().pci.back().numa_node = -1;
    std::string port = b.Bridge(hb, -1);
    std::string gpu = b.Gpu(port, -1);
    std::string nic = b.Nic(b.RootPort(0), 0, "mlx5_0");
    PathInfo p = ClassifyPath(b.host(), gpu, nic);
    EXPECT_EQ(p.type, nodes == 2 ? PathType::kSys : PathType::kPhb) << nodes;
    EXPECT_EQ(p.numa_unknown, nodes == 2) << nodes;
  }
}

TEST(PathBandwidth, NarrowestLinkOnThePath) {
  TreeBuilder b;
  std::string hb = b.HostBridge(0);
  // GPU Gen5 behind a switch whose uplink trained at Gen4; NIC on a Gen5 root port.
  std::vector<std::string> sw = b.Switch(b.Bridge(hb, 0), 0, 1, 0x10b5, 0x9797, kGen4x16);
  std::string gpu = b.Gpu(sw[0], 0, kGen5x16);
  std::string nic = b.Nic(b.Bridge(hb, 0), 0, "mlx5_0", kGen5x16);
  std::string near = b.Nic(sw[0], 0, "mlx5_1", kGen5x16);
  EXPECT_DOUBLE_EQ(ClassifyPath(b.host(), gpu, nic).bandwidth_gbs, 24);
  EXPECT_DOUBLE_EQ(ClassifyPath(b.host(), gpu, near).bandwidth_gbs, 48);  // uplink not used
  b.host().pci.back().link_gbps = 0;  // unknown links are skipped
  EXPECT_DOUBLE_EQ(ClassifyPath(b.host(), gpu, near).bandwidth_gbs, 48);
}

TEST(PathProperty, SymmetricAndConsistentOnRandomTrees) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 2000; ++iter) {
    topology::HostTopology host = testing::RandomHost(rng, 4, 4);
    PathClassifier paths(host);
    std::vector<int> ends;
    for (size_t i = 0; i < host.pci.size(); ++i) {
      if (host.pci[i].is_accelerator() || host.pci[i].is_rdma()) ends.push_back(static_cast<int>(i));
    }
    for (int a : ends) {
      for (int b : ends) {
        PathInfo ab = paths.Classify(a, b), ba = paths.Classify(b, a);
        ASSERT_EQ(ab.type, ba.type);
        ASSERT_EQ(ab.smi, ba.smi);
        ASSERT_EQ(ab.hops, ba.hops);
        ASSERT_DOUBLE_EQ(ab.bandwidth_gbs, ba.bandwidth_gbs);
        if (a == b) {
          ASSERT_EQ(ab.type, PathType::kLoc);
          continue;
        }
        // nvidia-smi never sees a closer path than NCCL's flattened one, except under one
        // root port (where NCCL's root ports vanish).
        bool switch_path = ab.type == PathType::kPix || ab.type == PathType::kPxb;
        if (switch_path) {
          ASSERT_TRUE(ab.smi == "PIX" || ab.smi == "PXB") << ab.smi;
        }
        if (ab.type == PathType::kSys) {
          ASSERT_EQ(ab.smi, "SYS");
        }
        if (ab.smi == "NODE" || ab.smi == "SYS") {
          ASSERT_GE(ab.type, PathType::kPhb);
        }
        ASSERT_GE(ab.hops, 2);
        ASSERT_EQ(ab.type, ClassifyPath(host, host.pci[a].address, host.pci[b].address).type);
      }
    }
  }
}

}  // namespace
}  // namespace accel::fabric
