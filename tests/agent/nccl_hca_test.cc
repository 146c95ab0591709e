// The agent's map for the device plugin's NCCL_IB_HCA: accel's GPU↔NIC pairing of the node (the
// one dra::ReadNodeHardware made) as a GPU address → "mlx5_N:port" map, from a topology file
// (every port up) or a host root (port states read).
#include "agent/nccl_hca.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "dra/node_hardware.h"
#include "support/fake_sysfs.h"
#include "topology/sources.h"

namespace accel::agent {
namespace nccl_hca_test {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::string Fixture(const std::string& name) {
  return std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/" + name + ".json";
}

// `accel fabric pairs -t fixtures/hosts/hgx-h100.json` (tests/kube/nccl_hca_test.cc serves it).
const kube::NcclHcaMap kHgxPairs = {
    {"0000:1b:00.0", "mlx5_0:1"}, {"0000:43:00.0", "mlx5_3:1"},  {"0000:52:00.0", "mlx5_4:1"},
    {"0000:61:00.0", "mlx5_5:1"}, {"0000:9d:00.0", "mlx5_6:1"},  {"0000:c3:00.0", "mlx5_9:1"},
    {"0000:d1:00.0", "mlx5_10:1"}, {"0000:df:00.0", "mlx5_11:1"}};

/// The node of topology `topology` and host root `host_root`, read without devices.
dra::NodeHardware Node(const std::string& topology, const std::string& host_root = "/") {
  dra::NodeSource source;
  source.topology = topology;
  source.host_root = host_root;
  return dra::ReadNodeHardware(source, {}, nullptr);
}

TEST(NcclHcaMap, HgxH100PairsEveryGpuWithTheNicOnItsSwitch) {
  const dra::NodeHardware node = Node(Fixture("hgx-h100"));
  EXPECT_EQ(NcclHcaMapOf(node.pairing), kHgxPairs);
  // The storage/management NICs are what NCCL must not be given.
  EXPECT_THAT(node.pairing.notes, Contains(HasSubstr("mlx5_1, mlx5_2, mlx5_7, mlx5_8")));
}

TEST(NcclHcaMap, PairsWithoutNicAreLeftOut) {
  fabric::Fabric f;
  f.gpus = {"0000:01:00.0", "0000:02:00.0"};
  fabric::FabricNic nic;
  nic.rdma_device = "mlx5_4";
  nic.port = 2;
  f.nics = {nic};
  f.pairs.resize(2);
  f.pairs[0].gpu_address = "0000:01:00.0";
  f.pairs[0].nic = 0;
  f.pairs[1].gpu_address = "0000:02:00.0";
  f.pairs[1].nic = -1;
  EXPECT_EQ(NcclHcaMapOf(f), (kube::NcclHcaMap{{"0000:01:00.0", "mlx5_4:2"}}));
  f.pairs[0].nic = 7;  // out of range: never trusted
  EXPECT_THAT(NcclHcaMapOf(f), IsEmpty());
}

TEST(NcclHcaMap, HostWithoutAcceleratorsGivesAnEmptyMap) {
  EXPECT_THAT(NcclHcaMapOf(Node(Fixture("devbox")).pairing), IsEmpty());
}

TEST(NcclHcaMap, ForNodeFromATopologyFileCountsEveryPortUp) {
  const dra::NodeHardware node = Node(Fixture("hgx-h100"));
  std::vector<std::string> lines;
  auto map = NcclHcaMapForNode(node, [&](const std::string& line) { lines.push_back(line); });
  EXPECT_EQ(map, kHgxPairs);
  EXPECT_THAT(lines, Contains(HasSubstr("8 accelerator(s) paired with a NIC (no RDMA port")));
  EXPECT_THAT(lines, Contains(HasSubstr("device plugin: pairing: ")));
  EXPECT_EQ(NcclHcaMapForNode(node, nullptr), kHgxPairs);  // no log
}

// The ports of a sysfs-copy topology, and of a host root beside a topology file (the agent
// config's dra.hostRoot): the device plugin read none there before, while the DRA driver did.
TEST(NcclHcaMap, ForNodeWithPortStatesSkipsADownPort) {
  const topology::HostTopology host = topology::LoadTopology(Fixture("hgx-h100"));
  char dir[] = "/tmp/accel-nccl-hca-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  testing::WriteFakeSysfs(host, dir);
  EXPECT_EQ(NcclHcaMapForNode(Node(std::string("sysfs:") + dir), nullptr), kHgxPairs);
  // mlx5_0 (beside GPU 0) loses its link: GPU 0 must not be given it.
  testing::WriteFakeFile(dir, "sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  EXPECT_EQ(NcclHcaMapForNode(Node(std::string("sysfs:") + dir), nullptr),
            NcclHcaMapForNode(Node(Fixture("hgx-h100"), dir), nullptr));
  std::vector<std::string> lines;
  auto map = NcclHcaMapForNode(Node(Fixture("hgx-h100"), dir),
                               [&](const std::string& line) { lines.push_back(line); });
  EXPECT_NE(map.count("0000:1b:00.0") ? map.at("0000:1b:00.0") : "", "mlx5_0:1");
  for (const auto& [gpu, hca] : map) EXPECT_NE(hca, "mlx5_0:1") << gpu;
  EXPECT_EQ(map.at("0000:df:00.0"), "mlx5_11:1");
  EXPECT_THAT(lines, Not(Contains(HasSubstr("no RDMA port states"))));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace accel::agent
