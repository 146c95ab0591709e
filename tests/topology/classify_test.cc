#include "topology/classify.h"

#include <gtest/gtest.h>

namespace accel::topology {
namespace classify_test {

TEST(ClassifyPci, NvidiaGpusAndNvSwitches) {
  EXPECT_EQ(ClassifyPci(0x10de, 0x2330, 0x0302), PciRole::kGpu);  // H100 SXM (3D controller)
  EXPECT_EQ(ClassifyPci(0x10de, 0x2204, 0x0300), PciRole::kGpu);  // GeForce (VGA)
  EXPECT_EQ(ClassifyPci(0x10de, 0x1ac2, 0x0680), PciRole::kNvSwitch);
  EXPECT_EQ(ClassifyPci(0x10de, 0x10f0, 0x0403), PciRole::kOther);  // GPU's HDMI audio
}

TEST(ClassifyPci, NvSwitchSubtypeWinsOverZeroedConfigSpace) {
  // The DGX-2 export has one NVSwitch whose ids read as zeros; hwloc still tags it.
  EXPECT_EQ(ClassifyPci(0, 0, 0, "NVSwitch"), PciRole::kNvSwitch);
  EXPECT_EQ(ClassifyPci(0, 0, 0), PciRole::kOther);
}

TEST(ClassifyPci, AmdDataCenterGpusButNotBoardVga) {
  EXPECT_EQ(ClassifyPci(0x1002, 0x74a1, 0x1200), PciRole::kGpu);     // MI300X
  EXPECT_EQ(ClassifyPci(0x1002, 0x740c, 0x0380), PciRole::kGpu);     // MI250
  EXPECT_EQ(ClassifyPci(0x1002, 0x6798, 0x0300), PciRole::kGpu);     // Radeon HD 7970
  EXPECT_EQ(ClassifyPci(0x1002, 0x515e, 0x0300), PciRole::kOther);   // ES1000 BMC console
  EXPECT_EQ(ClassifyPci(0x1002, 0x1478, 0x0604), PciRole::kBridge);  // AMD switch port
}

TEST(ClassifyPci, HabanaGaudiIsHpu) {
  EXPECT_EQ(ClassifyPci(0x1da3, 0x1020, 0x1200), PciRole::kHpu);
  EXPECT_EQ(ClassifyPci(0x1da3, 0x1020, 0x0b40), PciRole::kOther);
}

TEST(ClassifyPci, NicsStorageBridges) {
  EXPECT_EQ(ClassifyPci(0x15b3, 0x1021, 0x0207), PciRole::kNic);      // ConnectX-7 (InfiniBand)
  EXPECT_EQ(ClassifyPci(0x8086, 0x1521, 0x0200), PciRole::kNic);      // I350
  EXPECT_EQ(ClassifyPci(0x15b3, 0x6746, 0x0c06), PciRole::kNic);      // ConnectX-2 VPI
  EXPECT_EQ(ClassifyPci(0x144d, 0xa80a, 0x0108), PciRole::kStorage);  // NVMe
  EXPECT_EQ(ClassifyPci(0x10b5, 0x9797, 0x0604), PciRole::kBridge);   // PLX switch port
  EXPECT_EQ(ClassifyPci(0x8086, 0x3a3c, 0x0c03), PciRole::kOther);    // USB
}

TEST(ClassifyPci, RoleNamesRoundTrip) {
  for (PciRole role : {PciRole::kHostBridge, PciRole::kBridge, PciRole::kGpu, PciRole::kHpu,
                       PciRole::kNvSwitch, PciRole::kNic, PciRole::kStorage, PciRole::kOther}) {
    std::optional<PciRole> back = ParsePciRole(PciRoleName(role));
    ASSERT_TRUE(back.has_value()) << PciRoleName(role);
    EXPECT_EQ(*back, role);
  }
  EXPECT_STREQ(PciRoleName(PciRole::kHostBridge), "host_bridge");
  EXPECT_FALSE(ParsePciRole("GPU").has_value());
  EXPECT_FALSE(ParsePciRole("").has_value());
}

TEST(LooksLikeVirtualFunction, ByIdOrName) {
  EXPECT_TRUE(LooksLikeVirtualFunction(0x15b3, 0x101c, ""));  // ConnectX-6 VF
  EXPECT_TRUE(LooksLikeVirtualFunction(0x8086, 0x1889, ""));  // E810 VF
  EXPECT_TRUE(LooksLikeVirtualFunction(0x1137, 0x00cf, "VIC Userspace NIC"));
  EXPECT_TRUE(LooksLikeVirtualFunction(0x1234, 0x5678, "Foo Ethernet Virtual Function 2"));
  EXPECT_FALSE(LooksLikeVirtualFunction(0x8086, 0x1521, "I350 Gigabit Network Connection"));
  EXPECT_FALSE(LooksLikeVirtualFunction(0x1138, 0x00cf, "VIC Userspace NIC"));
}

TEST(ClassifyOsDeviceName, RdmaNetdevAndOthers) {
  for (const char* name : {"mlx5_0", "mlx4_1", "hfi1_0", "usnic_3", "qib0", "efa_0", "irdma1"})
    EXPECT_EQ(ClassifyOsDeviceName(name), OsDeviceKind::kRdma) << name;
  for (const char* name : {"ib0", "ibp24s0", "eth2", "ens1f0", "enp3s0np0", "bond0", "hsn0"})
    EXPECT_EQ(ClassifyOsDeviceName(name), OsDeviceKind::kNetdev) << name;
  for (const char* name :
       {"nvml0", "cuda1", "rsmi0", "card1", "renderD128", "sda", "accel0", "opencl0d1", "ibverbs"})
    EXPECT_EQ(ClassifyOsDeviceName(name), OsDeviceKind::kOther) << name;
}

}  // namespace
}  // namespace accel::topology
