#include "fabric/nic_ports.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fabric/fabric_test_hosts.h"
#include "support/fake_sysfs.h"
#include "topology/sources.h"

namespace accel::fabric {
namespace nic_ports_test {

namespace fs = std::filesystem;

class NicPortsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("accel-nic-ports-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const fs::path& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  void Link(const fs::path& target, const fs::path& rel) {
    fs::create_directories((root_ / rel).parent_path());
    fs::create_directory_symlink(target, root_ / rel);
  }

  // A device the way Linux lays it out: the PCI function directory, its infiniband/DEV
  // directory, and the class symlink.
  fs::path AddDevice(const std::string& bdf, const std::string& dev) {
    fs::path pci = fs::path("sys/devices/pci0000:00/0000:00:01.0") / bdf;
    fs::create_directories(root_ / pci / "infiniband" / dev / "ports");
    Link("../../../" + bdf, pci / "infiniband" / dev / "device");
    Link(fs::path("../../devices/pci0000:00/0000:00:01.0") / bdf / "infiniband" / dev,
         fs::path("sys/class/infiniband") / dev);
    return pci;
  }

  fs::path root_;
};

TEST_F(NicPortsTest, MissingDirectoryIsNoRdma) {
  EXPECT_TRUE(ReadNicPorts(root_.string()).empty());
  EXPECT_TRUE(ReadNicPorts((root_ / "nowhere").string()).empty());
}

TEST_F(NicPortsTest, ReadsEveryAttribute) {
  fs::path pci = AddDevice("0000:18:00.0", "mlx5_0");
  fs::path port = pci / "infiniband/mlx5_0/ports/1";
  Write(port / "state", "4: ACTIVE\n");
  Write(port / "phys_state", "5: LinkUp\n");
  Write(port / "link_layer", "InfiniBand\n");
  Write(port / "rate", "400 Gb/sec (4X NDR)\n");
  Write(pci / "net/ibp24s0/dev_port", "0\n");

  std::vector<NicPort> ports = ReadNicPorts(root_.string());
  ASSERT_EQ(ports.size(), 1u);
  const NicPort& p = ports[0];
  EXPECT_EQ(p.rdma_device, "mlx5_0");
  EXPECT_EQ(p.port, 1);
  EXPECT_EQ(p.pci_address, "0000:18:00.0");
  EXPECT_EQ(p.state, "ACTIVE");
  EXPECT_TRUE(p.active());
  EXPECT_EQ(p.phys_state, "LinkUp");
  EXPECT_EQ(p.link_layer, "InfiniBand");
  EXPECT_DOUBLE_EQ(p.rate_gbps, 400);
  EXPECT_EQ(p.netdev, "ibp24s0");
  EXPECT_FALSE(p.roce_v2_gid);
  EXPECT_EQ(p.physfn, "");
}

TEST_F(NicPortsTest, RocePortsTakeNetdevAndGidTypeFromGidAttrs) {
  fs::path pci = AddDevice("0000:27:00.0", "mlx5_1");
  fs::path port = pci / "infiniband/mlx5_1/ports/1";
  Write(port / "state", "4: ACTIVE\n");
  Write(port / "link_layer", "Ethernet\n");
  Write(port / "rate", "200 Gb/sec (4X HDR)\n");
  Write(port / "gid_attrs/types/0", "IB/RoCE v1\n");
  Write(port / "gid_attrs/types/1", "RoCE v2\n");
  Write(port / "gid_attrs/ndevs/0", "\n");  // unset entries read as empty
  Write(port / "gid_attrs/ndevs/1", "ens6f0np0\n");
  Write(pci / "net/ens6f0np0/dev_port", "0\n");
  Write(pci / "net/other/dev_port", "1\n");
  std::vector<NicPort> ports = ReadNicPorts(root_.string());
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(ports[0].netdev, "ens6f0np0");
  EXPECT_TRUE(ports[0].roce_v2_gid);
  EXPECT_DOUBLE_EQ(ports[0].rate_gbps, 200);
}

TEST_F(NicPortsTest, MissingAttributesStayEmptyAndPortsSortNaturally) {
  fs::path a = AddDevice("0000:dc:00.0", "mlx5_10");
  fs::path b = AddDevice("0000:4f:00.0", "mlx5_2");
  fs::create_directories(root_ / a / "infiniband/mlx5_10/ports/1");
  fs::create_directories(root_ / b / "infiniband/mlx5_2/ports/2");
  fs::create_directories(root_ / b / "infiniband/mlx5_2/ports/1");
  Write(b / "infiniband/mlx5_2/ports/2/state", "1: DOWN\n");
  fs::create_directories(root_ / b / "infiniband/mlx5_2/ports/not-a-port");
  std::vector<NicPort> ports = ReadNicPorts(root_.string());
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(ports[0].rdma_device, "mlx5_2");
  EXPECT_EQ(ports[0].port, 1);
  EXPECT_EQ(ports[1].port, 2);
  EXPECT_EQ(ports[1].state, "DOWN");
  EXPECT_FALSE(ports[1].active());
  EXPECT_EQ(ports[2].rdma_device, "mlx5_10");
  EXPECT_EQ(ports[2].state, "");
  EXPECT_EQ(ports[2].link_layer, "");
  EXPECT_DOUBLE_EQ(ports[2].rate_gbps, 0);
  EXPECT_EQ(ports[2].netdev, "");
  EXPECT_EQ(ports[2].pci_address, "0000:dc:00.0");
}

TEST_F(NicPortsTest, VirtualFunctionsNameTheirPf) {
  AddDevice("0000:18:00.0", "mlx5_0");
  fs::path vf = AddDevice("0000:18:00.2", "mlx5_12");
  fs::create_directories(root_ / vf / "infiniband/mlx5_12/ports/1");
  Link("../0000:18:00.0", vf / "physfn");
  std::vector<NicPort> ports = ReadNicPorts(root_.string());
  ASSERT_EQ(ports.size(), 1u);  // the PF has no ports directory entries
  EXPECT_EQ(ports[0].rdma_device, "mlx5_12");
  EXPECT_EQ(ports[0].physfn, "0000:18:00.0");
}

TEST_F(NicPortsTest, FakeSysfsOfHgx) {
  topology::HostTopology host =
      topology::LoadTopology(testing::Fixture("fixtures/hosts/hgx-h100.json"));
  accel::testing::WriteFakeSysfs(host, root_.string());
  std::vector<NicPort> ports = ReadNicPorts(root_.string());
  ASSERT_EQ(ports.size(), 12u);
  EXPECT_EQ(ports[0].rdma_device, "mlx5_0");
  EXPECT_EQ(ports[0].pci_address, "0000:18:00.0");
  EXPECT_EQ(ports[0].netdev, "ibp24s0");
  EXPECT_EQ(ports[0].state, "ACTIVE");
  EXPECT_EQ(ports[0].link_layer, "InfiniBand");
  EXPECT_DOUBLE_EQ(ports[0].rate_gbps, 400);
  EXPECT_EQ(ports[11].rdma_device, "mlx5_11");
  EXPECT_EQ(ports[11].pci_address, "0000:dc:00.0");
}

}  // namespace
}  // namespace accel::fabric
