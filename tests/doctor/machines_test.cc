// The doctor end to end on whole machines written as fake sysfs trees: a healthy HGX H100 and the
// same box with one thing broken at a time, an EPYC NPS4 MI300X box, a VM guest, a host without
// accelerators, and files that cannot be read.
#include <gtest/gtest.h>

#include "doctor/doctor.h"
#include "support/healthy_host_tree.h"

namespace accel::doctor {
namespace machines_test {

using namespace testing;

using HgxTest = HgxTreeTest;

TEST_F(HgxTest, HealthyHostHasNothingToReport) {
  DoctorReport r = Doctor();
  EXPECT_LE(r.Worst(), Severity::kNotApplicable) << Problems(r);
  EXPECT_EQ(DoctorExitCode(r), 0);
  EXPECT_EQ(r.hostname, "hgx-h100");
  EXPECT_EQ(r.role, "bare-metal");
  // Every implemented check reports, in id order.
  std::vector<std::string> ids;
  for (const Finding& f : r.findings) ids.push_back(f.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"GDR-01", "GDR-02", "GDR-03", "GDR-04", "GDR-05",
                                           "GDR-06", "GDR-07", "GDR-08", "GDR-09", "GDR-10",
                                           "HOST-01", "HOST-02", "HOST-03", "HOST-04", "HOST-05",
                                           "HOST-06", "HOST-07", "HOST-08", "HOST-09", "HOST-10",
                                           "HOST-11"}));
  EXPECT_EQ(Find(r, "GDR-01").severity, Severity::kOk);
  EXPECT_EQ(Find(r, "GDR-02").severity, Severity::kOk);
  EXPECT_NE(Find(r, "GDR-02").summary.find("8 of 8"), std::string::npos);
  EXPECT_EQ(Find(r, "GDR-04").severity, Severity::kOk) << Find(r, "GDR-04").summary;
  EXPECT_EQ(Find(r, "GDR-07").severity, Severity::kOk) << Find(r, "GDR-07").summary;
  EXPECT_EQ(Find(r, "GDR-09").severity, Severity::kNotApplicable);  // bare metal: no pods
  EXPECT_EQ(Find(r, "GDR-10").severity, Severity::kOk);
  EXPECT_EQ(Find(r, "HOST-01").severity, Severity::kNotApplicable);
  EXPECT_EQ(Find(r, "HOST-10").severity, Severity::kOk) << Find(r, "HOST-10").summary;
  for (const Finding& f : r.findings) EXPECT_FALSE(f.needs_root) << f.id;
}

TEST_F(HgxTest, PeermemMissingFailsGdr01) {
  edit_.Remove("sys/module/nvidia_peermem/version");
  DoctorReport r = Doctor();
  Finding f = Find(r, "GDR-01");
  EXPECT_EQ(f.severity, Severity::kFail);
  EXPECT_NE(f.fix.find("modprobe nvidia-peermem"), std::string::npos);
  EXPECT_TRUE(HasEvidence(f, "/sys/module/nvidia_peermem/version", "(missing)"));
  EXPECT_TRUE(HasEvidence(f, "/proc/driver/nvidia/version", "550.54.15"));
  EXPECT_EQ(DoctorExitCode(r), 4);
  // Everything else stays healthy.
  for (const Finding& other : r.findings) {
    if (other.id != "GDR-01") {
      EXPECT_LE(other.severity, Severity::kNotApplicable) << other.id;
    }
  }
}

TEST_F(HgxTest, OpenKernelModulesOnNewKernelAreEnoughWithoutPeermem) {
  edit_.Remove("sys/module/nvidia_peermem/version");
  edit_.Set("proc/driver/nvidia/version",
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build\n");
  EXPECT_EQ(Find(Doctor(), "GDR-01").severity, Severity::kOk);
  edit_.Set("proc/sys/kernel/osrelease", "5.4.0-150-generic\n");
  Finding f = Find(Doctor(), "GDR-01");
  EXPECT_EQ(f.severity, Severity::kFail);
  EXPECT_NE(f.summary.find("older than 5.12"), std::string::npos) << f.summary;
}

TEST_F(HgxTest, LegacyNvPeerMemCounts) {
  edit_.Remove("sys/module/nvidia_peermem/version");
  edit_.Set("sys/kernel/mm/memory_peers/nv_mem/version", "1.3-0\n");
  EXPECT_EQ(Find(Doctor(), "GDR-01").severity, Severity::kOk);
}

TEST_F(HgxTest, AcsRedirectOnTheGpuSwitchPortFailsGdr04) {
  // 0000:17:03.0 is the downstream port above GPU 1b:00.0 (its NIC 18:00.0 is under 17:00.0).
  edit_.Set(Pci("0000:17:03.0") + "/config", ConfigSpace(uint16_t{kAcsSv | kAcsRr | kAcsCr | kAcsUf}));
  DoctorReport r = Doctor();
  Finding f = Find(r, "GDR-04");
  EXPECT_EQ(f.severity, Severity::kFail) << f.summary;
  EXPECT_NE(f.summary.find("0000:17:03.0"), std::string::npos);
  EXPECT_NE(f.fix.find("setpci -s 0000:17:03.0 ECAP_ACS+0x6.w=0000"), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("pci=disable_acs_redir=0000:17:03.0"), std::string::npos) << f.fix;
  EXPECT_TRUE(HasEvidence(f, "/sys/bus/pci/devices/0000:17:03.0/config", "0x001d (SV RR CR UF)"));
  EXPECT_EQ(DoctorExitCode(r), 4);
}

TEST_F(HgxTest, AcsRedirectOnAHypervisorIsExpectedAndGetsAtsAdvice) {
  edit_.Set(Pci("0000:17:03.0") + "/config", ConfigSpace(uint16_t{kAcsSv | kAcsRr | kAcsCr | kAcsUf}));
  Finding f = Find(Doctor(Role::kHypervisor), "GDR-04");
  EXPECT_EQ(f.severity, Severity::kInfo);
  EXPECT_NE(f.fix.find("ATS_ENABLED=true"), std::string::npos);
  EXPECT_NE(f.fix.find("setpci -s 0000:17:03.0 ECAP_ACS+0x6.w=005d"), std::string::npos) << f.fix;
}

TEST_F(HgxTest, AcsUnreadableWithoutRootSaysSo) {
  DoctorOptions o;
  o.root = root_;
  o.assume_unprivileged = true;
  Finding f = Find(RunDoctor(*host_, o), "GDR-04");
  EXPECT_EQ(f.severity, Severity::kInfo);
  EXPECT_TRUE(f.needs_root);
  EXPECT_TRUE(HasEvidence(f, "/sys/bus/pci/devices/0000:17:03.0/config", "64 bytes"));
}

TEST_F(HgxTest, DowntrainedNicLinkWarnsGdr05) {
  edit_.Set(Pci("0000:18:00.0") + "/" + "current_link_width", "8\n");
  Finding f = Find(Doctor(), "GDR-05");
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_NE(f.summary.find("0000:18:00.0 (mlx5_0) Gen5 x8 (can Gen5 x16)"), std::string::npos)
      << f.summary;
  EXPECT_TRUE(HasEvidence(f, "/sys/bus/pci/devices/0000:18:00.0/current_link_width", "8"));
}

TEST_F(HgxTest, DowntrainedSwitchUplinkWarnsGdr05) {
  edit_.Set(Pci("0000:16:00.0") + "/" + "current_link_speed", "16.0 GT/s PCIe\n");
  Finding f = Find(Doctor(), "GDR-05");
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_NE(f.summary.find("0000:16:00.0 Gen4 x16 (can Gen5 x16)"), std::string::npos) << f.summary;
}

TEST_F(HgxTest, IdleGpuLinkSpeedIsOnlyInfo) {
  edit_.Set(Pci("0000:1b:00.0") + "/" + "current_link_speed", "2.5 GT/s PCIe\n");
  Finding f = Find(Doctor(), "GDR-05");
  EXPECT_EQ(f.severity, Severity::kInfo) << f.summary;
  EXPECT_NE(f.summary.find("idle"), std::string::npos);
}

TEST_F(HgxTest, ComputePortDownFailsGdr06) {
  std::string port = "sys/class/infiniband/mlx5_0/ports/1/";
  edit_.Set(port + "state", "1: DOWN\n");
  edit_.Set(port + "phys_state", "3: Disabled\n");
  DoctorReport r = Doctor();
  Finding f = Find(r, "GDR-06");
  EXPECT_EQ(f.severity, Severity::kFail);
  EXPECT_NE(f.summary.find("mlx5_0:1 DOWN"), std::string::npos) << f.summary;
  EXPECT_TRUE(HasEvidence(f, "/sys/class/infiniband/mlx5_0/ports/1/state", "DOWN"));
  // Pairing is by distance, so GDR-02 still sees mlx5_0 beside GPU 1b.
  EXPECT_EQ(Find(r, "GDR-02").severity, Severity::kOk);
}

TEST_F(HgxTest, StorageNicPortDownIsNotAFailure) {
  edit_.Set("sys/class/infiniband/mlx5_1/ports/1/state", "1: DOWN\n");
  Finding f = Find(Doctor(), "GDR-06");
  EXPECT_EQ(f.severity, Severity::kOk);
  EXPECT_NE(f.summary.find("mlx5_1:1"), std::string::npos) << f.summary;
}

TEST_F(HgxTest, SlowPortAndRoceWithoutGidWarnGdr06) {
  // Turn every compute port into RoCE with a v2 GID, then drop mlx5_4's GID and slow mlx5_3.
  for (const char* dev : {"mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"}) {
    std::string port = std::string("sys/class/infiniband/") + dev + "/ports/1/";
    edit_.Set(port + "link_layer", "Ethernet\n");
    if (std::string(dev) != "mlx5_4") edit_.Set(port + "gid_attrs/types/1", "RoCE v2\n");
  }
  edit_.Set("sys/class/infiniband/mlx5_3/ports/1/rate", "200 Gb/sec (4X HDR)\n");
  Finding f = Find(Doctor(), "GDR-06");
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("different rates"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("RoCE v2 GID"), std::string::npos) << f.summary;
}

TEST_F(HgxTest, MissingFabricManagerFailsOnBareMetalOnly) {
  edit_.Remove("run/systemd/units/invocation:nvidia-fabricmanager.service");
  EXPECT_EQ(Find(Doctor(), "GDR-10").severity, Severity::kFail);
  EXPECT_EQ(Find(Doctor(Role::kK8sNode), "GDR-10").severity, Severity::kInfo);
}

TEST_F(HgxTest, SmallBar1Warns) {
  std::string res;
  res += "0x0000020000000000 0x0000020000ffffff 0x0000000000040200\n";
  res += "0x0000020400000000 0x000002040fffffff 0x000000000014220c\n";  // 256 MiB
  for (int i = 2; i < 13; ++i) res += "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
  edit_.Set(Pci("0000:43:00.0") + "/" + "resource", res);
  DoctorReport r = Doctor();
  Finding f = Find(r, "GDR-08");
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_NE(f.summary.find("0000:43:00.0 256 MiB"), std::string::npos) << f.summary;
  EXPECT_TRUE(f.needs_reboot);
}

TEST_F(HgxTest, PersistencedAndDriverBinding) {
  edit_.Remove("run/nvidia-persistenced/socket");
  EXPECT_EQ(Find(Doctor(), "HOST-09").severity, Severity::kWarn);
  Bind("0000:1b:00.0", "vfio-pci");
  Finding f = Find(Doctor(), "HOST-09");
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_NE(f.summary.find("0000:1b:00.0 on vfio-pci"), std::string::npos) << f.summary;
  Bind("0000:43:00.0", "nouveau");
  EXPECT_EQ(Find(Doctor(), "HOST-09").severity, Severity::kFail);
}

TEST_F(HgxTest, HypervisorWithGpusOnVfio) {
  BindAllGpus("vfio-pci");
  Boot("BOOT_IMAGE=/vmlinuz ro intel_iommu=on iommu=pt isolcpus=managed_irq,domain,4-55,60-111,116-167,172-223",
       "4-55,60-111,116-167,172-223");
  edit_.Set("sys/class/iommu/dmar0/uevent", "");
  DoctorReport r = Doctor(Role::kHypervisor);
  EXPECT_EQ(Find(r, "HOST-09").severity, Severity::kOk);
  EXPECT_EQ(Find(r, "GDR-01").severity, Severity::kNotApplicable);
  EXPECT_EQ(Find(r, "GDR-03").severity, Severity::kOk) << Find(r, "GDR-03").summary;
  EXPECT_EQ(Find(r, "HOST-02").severity, Severity::kOk) << Find(r, "HOST-02").summary;
  // Compute NICs have SR-IOV but no VFs: guests cannot get RDMA NICs.
  Finding sriov = Find(r, "HOST-11");
  EXPECT_EQ(sriov.severity, Severity::kWarn);
  EXPECT_NE(sriov.summary.find("mlx5_0"), std::string::npos);
  EXPECT_EQ(sriov.summary.find("mlx5_1"), std::string::npos) << "storage NICs are not SR-IOV capable";
}

TEST_F(HgxTest, HypervisorWithoutIommuFails) {
  BindAllGpus("vfio-pci");
  Finding f = Find(Doctor(Role::kHypervisor), "GDR-03");
  EXPECT_EQ(f.severity, Severity::kFail);
  EXPECT_NE(f.fix.find("intel_iommu=on iommu=pt"), std::string::npos) << f.fix;
  EXPECT_TRUE(f.needs_reboot);
}

TEST_F(HgxTest, TranslatedIommuDomainsWarnOnBareMetal) {
  edit_.Set("sys/class/iommu/dmar0/uevent", "");
  edit_.Set("sys/kernel/iommu_groups/17/type", "DMA-FQ\n");
  edit_.Set("sys/kernel/iommu_groups/18/type", "identity\n");
  edit_.SetLink(Pci("0000:1b:00.0") + "/iommu_group", "../../../../../../kernel/iommu_groups/17");
  edit_.SetLink(Pci("0000:18:00.0") + "/iommu_group", "../../../../../../kernel/iommu_groups/18");
  Finding f = Find(Doctor(), "GDR-03");
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("0000:1b:00.0 (DMA-FQ)"), std::string::npos) << f.summary;
  EXPECT_TRUE(HasEvidence(f, "/sys/kernel/iommu_groups/18/type", "identity"));
}

TEST_F(HgxTest, UnreadableFilesBecomeEvidenceNotCrashes) {
  // A directory where a file is expected, and a dangling symlink.
  edit_.MakeDir("proc/sys/kernel/numa_balancing");
  edit_.SetLink("proc/cmdline", root_ + "/nowhere");
  edit_.MakeDir(Pci("0000:18:00.0") + "/numa_node");
  DoctorReport r = Doctor();
  Finding numa = Find(r, "HOST-03");
  EXPECT_EQ(numa.severity, Severity::kInfo);
  EXPECT_TRUE(HasEvidence(numa, "/proc/sys/kernel/numa_balancing", "(unreadable: Is a directory)"));
  Finding cmd = Find(r, "HOST-02");
  EXPECT_TRUE(HasEvidence(cmd, "/proc/cmdline", "(unreadable: dangling symlink)"));
  Finding loc = Find(r, "HOST-08");
  EXPECT_TRUE(HasEvidence(loc, "/sys/bus/pci/devices/0000:18:00.0/numa_node", "(unreadable"));
  EXPECT_FALSE(RenderDoctorText(r, true).empty());
  EXPECT_FALSE(RenderDoctorJson(r).empty());
}

TEST_F(HgxTest, DeepCStatesAndPowersaveWarn) {
  for (int c : {0, 1, 2, 3})
    edit_.Set("sys/devices/system/cpu/cpu" + std::to_string(c) + "/cpuidle/state2/disable", "0\n");
  edit_.Set("sys/devices/system/cpu/cpu7/cpufreq/scaling_governor", "powersave\n");
  DoctorReport r = Doctor();
  Finding c = Find(r, "HOST-06");
  EXPECT_EQ(c.severity, Severity::kWarn);
  EXPECT_NE(c.summary.find("C6 (170 us) on 4 CPUs"), std::string::npos) << c.summary;
  EXPECT_NE(c.fix.find("cpupower idle-set -D 10"), std::string::npos);
  Finding g = Find(r, "HOST-05");
  EXPECT_EQ(g.severity, Severity::kWarn);
  EXPECT_NE(g.summary.find("1 of 224 CPUs"), std::string::npos) << g.summary;
  EXPECT_NE(g.summary.find("performance x223, powersave x1"), std::string::npos) << g.summary;
}

TEST_F(HgxTest, IrqsOnIsolatedCpusWarn) {
  Boot("ro isolcpus=managed_irq,domain,1-55 nohz_full=1-55 rcu_nocbs=1-55 irqaffinity=0", "1-55");
  edit_.Set("sys/devices/system/cpu/nohz_full", "1-55\n");
  // The first IRQ (mlx5_0, node 0) fires on CPU 0, the housekeeping CPU: fine. Move it.
  edit_.Set("proc/irq/100/effective_affinity_list", "5\n");
  Finding f = Find(Doctor(), "HOST-07");
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("isolated CPUs 5"), std::string::npos) << f.summary;
  EXPECT_TRUE(HasEvidence(f, "/proc/irq/100/effective_affinity_list", "5"));
  EXPECT_NE(f.fix.find("IRQBALANCE_BANNED_CPULIST=1-55"), std::string::npos);
}

TEST_F(HgxTest, RemoteIrqsOnATrainingNodeWarn) {
  // mlx5_0 is on node 0; move its only IRQ to a node-1 CPU.
  edit_.Set("proc/irq/100/effective_affinity_list", "60\n");
  Finding f = Find(Doctor(), "HOST-07");
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("NIC 0000:18:00.0 (mlx5_0) 1/1"), std::string::npos) << f.summary;
}

TEST_F(HgxTest, GdrLevelOptionChangesTheVerdict) {
  DoctorOptions o;
  o.root = root_;
  o.gdr_level = "LOC";
  Finding f = Find(RunDoctor(*host_, o), "GDR-02");
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("LOC (NCCL_NET_GDR_LEVEL)"), std::string::npos) << f.summary;
}

TEST_F(HgxTest, NumaNodeUnknownOnATwoNodeHostWarns) {
  edit_.Set(Pci("0000:c3:00.0") + "/" + "numa_node", "-1\n");
  Finding f = Find(Doctor(), "HOST-08");
  EXPECT_EQ(f.severity, Severity::kWarn);
  EXPECT_NE(f.summary.find("GPU 0000:c3:00.0"), std::string::npos) << f.summary;
}

// ------------------------------------------------------------------------------------------------

TEST(Nps4Test, EpycMi300xIsHealthyAndIrqsFollowTheirNode) {
  topology::HostTopology host = Fixture("epyc-nps4-mi300x");
  const std::string& root = SharedRoot("epyc-nps4-mi300x");
  TreeEditor edit(root);
  DoctorReport r = RunOn(host, root);
  EXPECT_LE(r.Worst(), Severity::kNotApplicable) << Problems(r);
  EXPECT_EQ(Find(r, "GDR-01").severity, Severity::kNotApplicable);  // AMD: no peermem
  EXPECT_EQ(Find(r, "GDR-02").severity, Severity::kOk);
  EXPECT_EQ(Find(r, "GDR-06").severity, Severity::kOk);
  EXPECT_NE(Find(r, "GDR-06").summary.find("Ethernet"), std::string::npos);
  EXPECT_EQ(Find(r, "HOST-03").severity, Severity::kOk);
  EXPECT_EQ(Find(r, "HOST-08").severity, Severity::kOk);
  // An accelerator IRQ on node 5 instead of node 0.
  edit.Set("proc/irq/100/effective_affinity_list", "120\n");
  EXPECT_EQ(Find(RunOn(host, root), "HOST-07").severity, Severity::kWarn);
  // NUMA balancing on an 8-node host.
  edit.Set("proc/sys/kernel/numa_balancing", "1\n");
  EXPECT_EQ(Find(RunOn(host, root), "HOST-03").severity, Severity::kWarn);
}

TEST(VmGuestTest, FlatTreeGetsTopologyFileAdvice) {
  topology::HostTopology host = Fixture("vm-guest-h100x8");
  TempRoot root("vm");
  HealthyOptions o;
  o.cpu_files = false;
  o.sysfs.vm_guest = true;
  WriteHealthyHost(host, root.path(), o);
  DoctorReport r = RunOn(host, root.path(), Role::kK8sNode);
  Finding loc = Find(r, "HOST-08");
  EXPECT_EQ(loc.severity, Severity::kInfo) << loc.summary;
  EXPECT_NE(loc.fix.find("accel fabric topo-xml"), std::string::npos);
  EXPECT_TRUE(HasEvidence(loc, "/proc/cpuinfo", "hypervisor")) << "why we think it is a VM";
  EXPECT_TRUE(HasEvidence(loc, "/sys/bus/pci/devices/0000:01:00.0/numa_node", "-1"));
  Finding dist = Find(r, "GDR-02");
  EXPECT_EQ(dist.severity, Severity::kWarn) << dist.summary;
  EXPECT_NE(dist.summary.find("VM"), std::string::npos) << dist.summary;
  EXPECT_NE(dist.fix.find("virtualTopology.xml"), std::string::npos);
  EXPECT_EQ(Find(r, "GDR-04").severity, Severity::kNotApplicable);
  // With NCCL's default topology file in place, the distance is only worth knowing.
  WriteFakeFile(root.path(), "var/run/nvidia-topologyd/virtualTopology.xml", "<system version=\"1\"/>\n");
  EXPECT_EQ(Find(RunOn(host, root.path(), Role::kK8sNode), "GDR-02").severity, Severity::kInfo);
}

TEST(NoAcceleratorTest, AcceleratorChecksAreNotApplicable) {
  topology::HostTopology host = Fixture("devbox");
  std::erase_if(host.pci, [](const topology::PciDevice& d) { return d.is_accelerator(); });
  TempRoot root("plain");
  WriteHealthyHost(host, root.path());
  DoctorReport r = RunOn(host, root.path());
  for (const char* id : {"GDR-01", "GDR-02", "GDR-03", "GDR-04", "GDR-05", "GDR-06", "GDR-07",
                         "GDR-08", "GDR-09", "GDR-10", "HOST-01", "HOST-07", "HOST-08", "HOST-09",
                         "HOST-11"})
    EXPECT_EQ(Find(r, id).severity, Severity::kNotApplicable) << id;
  EXPECT_EQ(DoctorExitCode(r), 0) << Problems(r);
}

TEST(EmptyRootTest, NothingReadableIsNotACrash) {
  topology::HostTopology host = Fixture("hgx-h100");
  TempRoot root("empty");
  DoctorReport r = RunOn(host, root.path());
  EXPECT_EQ(r.findings.size(), 21u);
  EXPECT_TRUE(HasEvidence(Find(r, "HOST-02"), "/proc/cmdline", "(missing)"));
  EXPECT_FALSE(RenderDoctorText(r, false).empty());
}

}  // namespace
}  // namespace accel::doctor
