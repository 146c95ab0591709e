// One check at a time, on the shared healthy HGX H100 tree with one thing changed: both sides of
// each rule not already covered by machines_test.cc.
#include <gtest/gtest.h>

#include "doctor/doctor.h"
#include "support/healthy_host_tree.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"

namespace accel::doctor {
namespace checks_test {

using namespace testing;

class CheckTest : public HgxTreeTest {
 protected:
  // A hypervisor checked against gpu-1g (1 H100 + 128 x 1G pages per guest).
  DoctorOptions Gpu1g() {
    DoctorOptions o;
    o.role = Role::kHypervisor;
    o.aliases = placement::LoadPciAliases(std::string(ACCEL_SOURCE_DIR) + "/examples/flavors/aliases.json");
    o.flavors = placement::LoadFlavors(std::string(ACCEL_SOURCE_DIR) + "/examples/flavors/gpu-1g.yaml");
    return o;
  }
};

// ---- HOST-01 ----

TEST_F(CheckTest, Host01EnoughOneGigPagesForTheFlavors) {
  Finding f = Find(Doctor(Gpu1g()), "HOST-01");
  EXPECT_EQ(f.severity, Severity::kOk) << f.summary;
  EXPECT_NE(f.summary.find("node 0 1G: 768 free"), std::string::npos) << f.summary;
}

TEST_F(CheckTest, Host01ShortNodeFailsWithBootAndRuntimeFix) {
  edit_.Set("sys/devices/system/node/node1/hugepages/hugepages-1048576kB/free_hugepages", "8\n");
  Finding f = Find(Doctor(Gpu1g()), "HOST-01");
  EXPECT_EQ(f.severity, Severity::kFail);
  EXPECT_NE(f.summary.find("node 1 1G: 8 free, flavors need"), std::string::npos) << f.summary;
  EXPECT_EQ(f.summary.find("node 0"), std::string::npos) << f.summary;
  EXPECT_NE(f.fix.find("hugepagesz=1G hugepages=0:"), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("/sys/devices/system/node/node1/hugepages/hugepages-1048576kB/nr_hugepages"),
            std::string::npos);
  EXPECT_TRUE(f.needs_reboot);
  EXPECT_TRUE(HasEvidence(f, "/sys/devices/system/node/node1/hugepages/hugepages-1048576kB/free_hugepages", "8"));
}

TEST_F(CheckTest, Host01WithoutFlavors) {
  EXPECT_EQ(Find(Doctor(), "HOST-01").severity, Severity::kNotApplicable);
  Finding f = Find(Doctor(Role::kHypervisor), "HOST-01");
  EXPECT_EQ(f.severity, Severity::kInfo);
  EXPECT_NE(f.summary.find("node 0: 768, node 1: 768"), std::string::npos) << f.summary;
}

// ---- HOST-02 ----

TEST_F(CheckTest, Host02NohzFullOutsideIsolcpusWarns) {
  Boot("ro isolcpus=2-5 nohz_full=2-7 rcu_nocbs=2-7", "2-5");
  edit_.Set("sys/devices/system/cpu/nohz_full", "2-7\n");
  Finding f = Find(Doctor(), "HOST-02");
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_NE(f.summary.find("nohz_full CPUs 6-7 are not in isolcpus"), std::string::npos) << f.summary;
  EXPECT_TRUE(f.needs_reboot);
}

TEST_F(CheckTest, Host02IrqaffinityOnIsolatedCpusWarns) {
  Boot("ro isolcpus=domain,managed_irq,2-5 irqaffinity=0-3", "2-5");
  Finding f = Find(Doctor(), "HOST-02");
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_NE(f.summary.find("irqaffinity includes isolated CPUs 2-3"), std::string::npos) << f.summary;
}

TEST_F(CheckTest, Host02KernelStateDisagreesWithTheCommandLine) {
  Boot("ro isolcpus=2-5", "2-9");
  Finding f = Find(Doctor(), "HOST-02");
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_NE(f.summary.find("the kernel isolated 2-9 but the command line asks for 2-5"),
            std::string::npos) << f.summary;
  // Without the domain flag the kernel isolates nothing from the scheduler: empty is right.
  Boot("ro isolcpus=nohz,managed_irq,2-5", "");
  EXPECT_EQ(Find(Doctor(), "HOST-02").severity, Severity::kOk) << Find(Doctor(), "HOST-02").summary;
}

TEST_F(CheckTest, Host02ListBeyondTheHostIsIgnoredByTheKernel) {
  Boot("ro isolcpus=2-300", "");
  Finding f = Find(Doctor(), "HOST-02");
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_NE(f.summary.find("isolcpus=2-300 is ignored by the kernel"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("beyond the last CPU 223"), std::string::npos) << f.summary;
}

TEST_F(CheckTest, Host02RcuNocbsMissingNohzCpusIsOnlyInfo) {
  Boot("ro isolcpus=2-7 nohz_full=2-7 rcu_nocbs=2-5", "2-7");
  edit_.Set("sys/devices/system/cpu/nohz_full", "2-7\n");
  Finding f = Find(Doctor(), "HOST-02");
  EXPECT_EQ(f.severity, Severity::kInfo) << f.summary;
  EXPECT_NE(f.summary.find("rcu_nocbs lacks nohz_full CPUs 6-7"), std::string::npos) << f.summary;
}

TEST_F(CheckTest, Host02HypervisorAgainstThePlan) {
  DoctorOptions o = Gpu1g();
  Finding none = Find(Doctor(o), "HOST-02");
  EXPECT_EQ(none.severity, Severity::kWarn);
  EXPECT_NE(none.summary.find("no isolated CPUs: node 0, node 1"), std::string::npos) << none.summary;
  EXPECT_NE(none.fix.find("kernel command line from the plan: isolcpus=managed_irq,domain,"),
            std::string::npos) << none.fix;
  // Booted exactly as planned: nothing to say.
  Boot("ro isolcpus=managed_irq,domain,1-55,57-111,113-167,169-223 irqaffinity=0,56,112,168",
       "1-55,57-111,113-167,169-223");
  Finding planned = Find(Doctor(o), "HOST-02");
  EXPECT_EQ(planned.severity, Severity::kOk) << planned.summary;
}

// ---- HOST-04 ----

TEST_F(CheckTest, Host04DefragAlwaysWarnsAndNeverIsInfo) {
  edit_.Set("sys/kernel/mm/transparent_hugepage/defrag", "[always] defer defer+madvise madvise never\n");
  Finding f = Find(Doctor(), "HOST-04");
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_NE(f.fix.find("echo madvise > /sys/kernel/mm/transparent_hugepage/defrag"), std::string::npos);
  edit_.Restore();
  edit_.Set("sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n");
  EXPECT_EQ(Find(Doctor(), "HOST-04").severity, Severity::kInfo);
}

// ---- HOST-11 ----

TEST_F(CheckTest, Host11PerRole) {
  EXPECT_EQ(Find(Doctor(), "HOST-11").severity, Severity::kOk);
  EXPECT_EQ(Find(Doctor(Role::kK8sNode), "HOST-11").severity, Severity::kInfo);
  // gpu-1g asks for no VF: a hypervisor without VFs is only worth knowing.
  EXPECT_EQ(Find(Doctor(Gpu1g()), "HOST-11").severity, Severity::kInfo);
  for (const char* nic : {"0000:18:00.0", "0000:40:00.0", "0000:4f:00.0", "0000:5e:00.0",
                          "0000:9a:00.0", "0000:c0:00.0", "0000:ce:00.0", "0000:dc:00.0"})
    edit_.Set(Pci(nic) + "/sriov_numvfs", "8\n");
  Finding f = Find(Doctor(Role::kHypervisor), "HOST-11");
  EXPECT_EQ(f.severity, Severity::kOk);
  EXPECT_NE(f.summary.find("mlx5_0) 8/16"), std::string::npos) << f.summary;
}

// ---- HOST-08 ----

TEST_F(CheckTest, Host08GpuAndItsNicOnDifferentNodes) {
  edit_.Set(Pci("0000:18:00.0") + "/numa_node", "1\n");
  Finding f = Find(Doctor(), "HOST-08");
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_NE(f.summary.find("0000:1b:00.0 (node 0) - mlx5_0 (node 1)"), std::string::npos) << f.summary;
}

// ---- GDR-03 / GDR-10 on a hypervisor ----

TEST_F(CheckTest, Gdr03HypervisorWithoutPassthroughWarns) {
  Boot("ro intel_iommu=on", "");
  edit_.Set("sys/class/iommu/dmar0/uevent", "");
  edit_.Set("sys/kernel/iommu_groups/40/type", "DMA\n");
  edit_.SetLink(Pci("0000:18:00.0") + "/iommu_group", "../../../../../../kernel/iommu_groups/40");
  Finding f = Find(Doctor(Role::kHypervisor), "GDR-03");
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.fix.find("iommu=pt"), std::string::npos);
  Boot("ro intel_iommu=on iommu=pt", "");
  EXPECT_EQ(Find(Doctor(Role::kHypervisor), "GDR-03").severity, Severity::kOk);
  Boot("ro intel_iommu=off", "");
  EXPECT_EQ(Find(Doctor(Role::kHypervisor), "GDR-03").severity, Severity::kFail);
}

TEST_F(CheckTest, Gdr10NvSwitchesOnVfio) {
  for (const char* sw : {"0000:03:00.0", "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"})
    Bind(sw, "vfio-pci");
  Finding f = Find(Doctor(Role::kHypervisor), "GDR-10");
  EXPECT_EQ(f.severity, Severity::kInfo);
  EXPECT_NE(f.summary.find("4 NVSwitches bound to vfio-pci"), std::string::npos) << f.summary;
}

// ---- GDR-02 on edited topologies ----

// Only the topology changes: pairing works from it, so the shared trees serve as they are.
TEST(Gdr02Test, MissingNearNicWithNvSwitchIsAWarningAboutPxn) {
  topology::HostTopology host = Fixture("hgx-h100");
  std::erase_if(host.pci, [](const topology::PciDevice& d) { return d.address == "0000:18:00.0"; });
  Finding f = Find(RunOn(host, SharedHgxRoot()), "GDR-02");
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("0000:1b:00.0 (PHB)"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("PXN"), std::string::npos) << f.summary;
}

TEST(Gdr02Test, OnlySysNicsFail) {
  topology::HostTopology host = Fixture("epyc-nps4-mi300x");
  std::erase_if(host.pci, [](const topology::PciDevice& d) { return d.address == "0000:03:00.0"; });
  Finding f = Find(RunOn(host, SharedRoot("epyc-nps4-mi300x")), "GDR-02");
  EXPECT_EQ(f.severity, Severity::kFail) << f.summary;
  EXPECT_NE(f.summary.find("1 of 8"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("0000:04:00.0 (SYS)"), std::string::npos) << f.summary;
}

// ---- rendering ----

TEST_F(CheckTest, TextShowsProblemsWithEvidenceAndFix) {
  edit_.Remove("sys/module/nvidia_peermem/version");
  DoctorReport r = Doctor();
  std::string text = RenderDoctorText(r, false);
  EXPECT_NE(text.find("accel doctor: hgx-h100 (role bare-metal): 1 fail, "), std::string::npos) << text;
  EXPECT_NE(text.find("[FAIL] GDR-01 peer memory for GPUDirect RDMA\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    /sys/module/nvidia_peermem/version = (missing)\n"), std::string::npos);
  EXPECT_NE(text.find("  fix:\n    modprobe nvidia-peermem\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("[OK]"), std::string::npos) << "ok checks only with --verbose";
  EXPECT_NE(RenderDoctorText(r, true).find("[OK] GDR-02"), std::string::npos);
}

TEST(DoctorNamesTest, RolesSeveritiesExitCodes) {
  Role role;
  EXPECT_TRUE(ParseRole("hypervisor", &role));
  EXPECT_EQ(role, Role::kHypervisor);
  EXPECT_TRUE(ParseRole("k8s-node", &role));
  EXPECT_FALSE(ParseRole("vm", &role));
  for (Role r : {Role::kBareMetal, Role::kHypervisor, Role::kK8sNode}) {
    ASSERT_TRUE(ParseRole(RoleName(r), &role));
    EXPECT_EQ(role, r);
  }
  EXPECT_STREQ(SeverityName(Severity::kNotApplicable), "n/a");
  DoctorReport report;
  EXPECT_EQ(report.Worst(), Severity::kOk);
  EXPECT_EQ(DoctorExitCode(report), 0);
  report.findings.push_back({"X", "x", Severity::kInfo, "", {}, "", false, false});
  EXPECT_EQ(DoctorExitCode(report), 0);
  report.findings.push_back({"Y", "y", Severity::kWarn, "", {}, "", false, false});
  EXPECT_EQ(DoctorExitCode(report), 1);
  report.findings.push_back({"Z", "z", Severity::kFail, "", {}, "", false, false});
  EXPECT_EQ(DoctorExitCode(report), 4);
}

}  // namespace
}  // namespace accel::doctor
