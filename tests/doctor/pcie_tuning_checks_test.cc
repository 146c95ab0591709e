// GDR-07 (MaxReadReq, MaxPayload, relaxed ordering) on the shared healthy HGX H100 tree with one
// device's config space changed at a time.
#include <gtest/gtest.h>

#include "doctor/doctor.h"
#include "support/healthy_host_tree.h"

namespace accel::doctor {
namespace pcie_tuning_checks_test {

using namespace testing;

using PcieTuningTest = HgxTreeTest;

constexpr const char* kNic0 = "0000:18:00.0";        // mlx5_0, beside GPU 1b:00.0
constexpr const char* kGpuPort = "0000:17:03.0";     // the switch port above GPU 1b:00.0

TEST_F(PcieTuningTest, HealthyNicsAndPaths) {
  Finding f = Find(Doctor(), "GDR-07");
  EXPECT_EQ(f.severity, Severity::kOk) << f.summary;
  EXPECT_NE(f.summary.find("MaxReadReq 4096 bytes on 12 RDMA NICs"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("MaxPayload equal along 8 GPU-NIC paths (256 bytes)"), std::string::npos)
      << f.summary;
  EXPECT_TRUE(HasEvidence(f, "/sys/bus/pci/devices/0000:18:00.0/config",
                          "CAP_EXP at 0x60, DevCtl 0x583f: MaxPayload 256 bytes, MaxReadReq 4096 "
                          "bytes, RlxdOrd+ (MaxPayload supported 512 bytes) [mlx5_0]"));
  // The path GPU - its switch port - the NIC's switch port - NIC, below the common switch.
  EXPECT_TRUE(HasEvidence(f, "/sys/bus/pci/devices/0000:1b:00.0/config",
                          "0000:1b:00.0 256, 0000:17:03.0 256, 0000:17:00.0 256, 0000:18:00.0 256"));
  EXPECT_FALSE(f.needs_root);
}

TEST_F(PcieTuningTest, SmallReadRequestWarnsWithSetpciFromTheCurrentValue) {
  // lspci: DevCtl ... RlxdOrd+ ExtTag- PhantFunc- AuxPwr- NoSnoop+, MaxPayload 256, MaxReadReq 512
  edit_.Set(Pci(kNic0) + "/config", ConfigSpace(std::nullopt, 0x2937));
  DoctorReport r = Doctor();
  Finding f = Find(r, "GDR-07");
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("0000:18:00.0 (mlx5_0) 512"), std::string::npos) << f.summary;
  EXPECT_NE(f.fix.find("setpci -s 0000:18:00.0 CAP_EXP+8.w=5937   # was 2937"), std::string::npos)
      << f.fix;
  EXPECT_NE(f.fix.find("Max Read Request Size"), std::string::npos) << f.fix;
  EXPECT_EQ(f.fix.find("0000:40:00.0"), std::string::npos) << "only the NIC that needs it";
  EXPECT_EQ(DoctorExitCode(r), 1);
}

TEST_F(PcieTuningTest, StorageNicsCountToo) {
  edit_.Set(Pci("0000:27:00.1") + "/config", ConfigSpace(std::nullopt, 0x183f));  // 256 B
  Finding f = Find(Doctor(), "GDR-07");
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_NE(f.summary.find("0000:27:00.1 (mlx5_2) 256"), std::string::npos) << f.summary;
}

TEST_F(PcieTuningTest, MaxPayloadMismatchOnThePathWarns) {
  edit_.Set(Pci(kGpuPort) + "/config", ConfigSpace(uint16_t{0}, 0x581f));  // MPS 128
  Finding f = Find(Doctor(), "GDR-07");
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("MaxPayload differs along 1 GPU-NIC path: GPU 0000:1b:00.0 - "
                           "0000:18:00.0 (mlx5_0) (0000:1b:00.0 256, 0000:17:03.0 128"),
            std::string::npos)
      << f.summary;
  EXPECT_NE(f.fix.find("pci=pcie_bus_safe"), std::string::npos) << f.fix;
  // A bridge's ACS is still read from the same file.
  EXPECT_EQ(Find(Doctor(), "GDR-04").severity, Severity::kOk);
}

TEST_F(PcieTuningTest, GpuMaxPayloadCountsAndPcieBusPerfExplainsIt) {
  edit_.Set(Pci("0000:1b:00.0") + "/config", ConfigSpace(std::nullopt, 0x585f));  // MPS 512
  EXPECT_EQ(Find(Doctor(), "GDR-07").severity, Severity::kWarn);
  // pci=pcie_bus_perf sizes MPS per link on purpose: only worth knowing.
  Boot("ro pci=pcie_bus_perf", "");
  Finding f = Find(Doctor(), "GDR-07");
  EXPECT_EQ(f.severity, Severity::kInfo) << f.summary;
  EXPECT_NE(f.summary.find("expected with pci=pcie_bus_perf"), std::string::npos) << f.summary;
}

TEST_F(PcieTuningTest, RelaxedOrderingOffIsInfo) {
  edit_.Set(Pci(kNic0) + "/config", ConfigSpace(std::nullopt, 0x582f));
  Finding f = Find(Doctor(), "GDR-07");
  EXPECT_EQ(f.severity, Severity::kInfo) << f.summary;
  EXPECT_NE(f.summary.find("relaxed ordering off on 0000:18:00.0 (mlx5_0)"), std::string::npos)
      << f.summary;
  EXPECT_NE(f.summary.find("NCCL_IB_PCI_RELAXED_ORDERING"), std::string::npos);
  EXPECT_NE(f.fix.find("setpci -s 0000:18:00.0 CAP_EXP+8.w=583f"), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("PCI_WR_ORDERING"), std::string::npos);
  // Both fixes on one NIC: the second setpci line starts from what the first leaves.
  edit_.Set(Pci(kNic0) + "/config", ConfigSpace(std::nullopt, 0x2927));
  Finding both = Find(Doctor(), "GDR-07");
  EXPECT_EQ(both.severity, Severity::kWarn);
  size_t mrrs = both.fix.find("setpci -s 0000:18:00.0 CAP_EXP+8.w=5927   # was 2927");
  size_t ro = both.fix.find("setpci -s 0000:18:00.0 CAP_EXP+8.w=5937   # was 5927");
  EXPECT_NE(mrrs, std::string::npos) << both.fix;
  EXPECT_NE(ro, std::string::npos) << both.fix;
  EXPECT_LT(mrrs, ro);
}

TEST_F(PcieTuningTest, UnprivilegedReadsNeedRoot) {
  DoctorOptions o;
  o.assume_unprivileged = true;
  Finding f = Find(Doctor(o), "GDR-07");
  EXPECT_EQ(f.severity, Severity::kInfo) << f.summary;
  EXPECT_TRUE(f.needs_root);
  EXPECT_TRUE(HasEvidence(f, "/sys/bus/pci/devices/0000:18:00.0/config", "64 bytes"));
  EXPECT_NE(f.fix.find("sudo accel doctor"), std::string::npos);
  // A copied tree that only holds what a user could read looks the same to root.
  edit_.Set(Pci(kNic0) + "/config", ConfigSpace(std::nullopt).substr(0, 64));
  Finding copied = Find(Doctor(), "GDR-07");
  EXPECT_EQ(copied.severity, Severity::kInfo);
  EXPECT_TRUE(copied.needs_root);
}

TEST_F(PcieTuningTest, MissingConfigIsInfoAndAVmGuestIsAtMostInfo) {
  edit_.Remove(Pci(kNic0) + "/config");
  Finding f = Find(Doctor(), "GDR-07");
  EXPECT_EQ(f.severity, Severity::kInfo) << f.summary;
  EXPECT_NE(f.summary.find("could not read the config space of 0000:18:00.0"), std::string::npos)
      << f.summary;
  EXPECT_TRUE(HasEvidence(f, "/sys/bus/pci/devices/0000:18:00.0/config", "(missing)"));
  edit_.Restore();
  edit_.Set(Pci(kNic0) + "/config", ConfigSpace(std::nullopt, 0x2937));
  edit_.Set("sys/class/dmi/id/sys_vendor", "QEMU\n");
  Finding vm = Find(Doctor(Role::kK8sNode), "GDR-07");
  EXPECT_EQ(vm.severity, Severity::kInfo) << vm.summary;
  EXPECT_NE(vm.summary.find("check on the hypervisor"), std::string::npos) << vm.summary;
}

TEST(PcieTuningNoNicTest, NoRdmaNicIsNotApplicable) {
  topology::HostTopology host = Fixture("devbox");
  TempRoot root("gdr07-devbox");
  WriteHealthyHost(host, root.path());
  EXPECT_EQ(Find(RunOn(host, root.path()), "GDR-07").severity, Severity::kNotApplicable);
}

}  // namespace
}  // namespace accel::doctor
