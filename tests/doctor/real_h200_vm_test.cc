// The doctor on the one real accelerator machine a session was lent (docs/hardware-checks.md):
// a Firecracker VM with one H200. The tree is the fixture host (fixtures/hosts/h200-vm.json, its
// PCI functions as read there) with every file that was read on the machine written back
// verbatim: kernel command line, kernel and driver versions, THP, NUMA balancing, the GPU's
// BARs, driver binding and its MSI-X lines in /proc/interrupts. What was not read (cpufreq,
// cpuidle states: the VM has neither) is simply absent, as it was there.
#include <gtest/gtest.h>

#include <iostream>

#include "support/healthy_host_tree.h"
#include "support/fake_nvml_setup.h"
#include "topology/sysfs_source.h"

namespace accel::doctor {
namespace real_h200_vm_test {

using namespace testing;

constexpr char kGpu[] = "0000:00:06.0";

// Read on the machine, 2026-11-30.
constexpr char kCmdline[] =
    "mitigations=auto,no_guest_host,no_guest_guest console=ttyS0 quiet reboot=k panic=1 "
    "random.trust_cpu=1 swiotlb=noforce psi=1 page_reporting.page_reporting_order=11 "
    "deferred_init=lazy nested_pvm=1 rdinit=/process_api pci=realloc=off "
    "driver_async_probe=mlx5_core memhp_default_state=online_kernel "
    "fc_dmapin=0xeebe0000,0x3000,0xeebf0000 -- --firecracker-init --addr 0.0.0.0:2024\n";
constexpr char kNvidiaVersion[] =
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  "
    "(nixbld@)  \nGCC version:  gcc version 15.3.0 (GCC) \n";
constexpr char kGpuResource[] =
    "0x0000104002000000 0x0000104002ffffff 0x000000000014220c\n"
    "0x0000100000000000 0x0000103fffffffff 0x000000000014220c\n"
    "0x0000104000000000 0x0000104001ffffff 0x000000000014220c\n"
    "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";

std::string Interrupts() {
  std::string out = "            CPU0       CPU1       CPU2       CPU3       CPU4       CPU5"
                    "       CPU6       CPU7       CPU8       CPU9       CPU10      CPU11      "
                    "CPU12      CPU13      CPU14      CPU15\n";
  for (int v = 0; v < 8; ++v) {
    out += " " + std::to_string(42 + v) + ":";
    for (int cpu = 0; cpu < 16; ++cpu) out += (cpu == 0 && v == 2) ? "         15" : "          0";
    out += " PCI-MSIX-0000:00:06.0   " + std::to_string(v) + "-edge      nvidia\n";
  }
  return out;
}

class RealH200VmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = Fixture("h200-vm");
    WriteFakeSysfs(host_, root_.path());
    const std::string& r = root_.path();
    WriteFakeFile(r, "proc/cmdline", kCmdline);
    WriteFakeFile(r, "proc/sys/kernel/osrelease", "6.18.44-fc-v657-gpu\n");
    WriteFakeFile(r, "proc/driver/nvidia/version", kNvidiaVersion);
    WriteFakeFile(r, "proc/sys/kernel/numa_balancing", "0\n");
    WriteFakeFile(r, "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
    WriteFakeFile(r, "sys/kernel/mm/transparent_hugepage/defrag",
                  "always defer defer+madvise [madvise] never\n");
    WriteFakeFile(r, "sys/devices/system/cpu/isolated", "\n");
    WriteFakeFile(r, "sys/devices/system/cpu/cpuidle/current_driver", "none\n");
    WriteFakeFile(r, "proc/irq/default_smp_affinity", "ffff\n");
    WriteFakeFile(r, "proc/interrupts", Interrupts());
    WriteBinary(FakePciDir(host_, r, kGpu) + "/resource", kGpuResource);
    for (const topology::PciDevice& d : host_.pci)  // every function of the guest said -1
      if (d.role != topology::PciRole::kHostBridge)
        WriteFakeFile(r, "sys/bus/pci/devices/" + d.address + "/numa_node", "-1\n");
    BindDriver(host_, r, kGpu, "nvidia");
  }
  topology::HostTopology host_;
  TempRoot root_{"real-h200"};
};

TEST_F(RealH200VmTest, SysfsSourceSeesTheGpu) {
  topology::HostTopology seen = topology::LoadSysfsHost(root_.path());
  ASSERT_EQ(seen.numa_nodes.size(), 1u);
  const topology::PciDevice* gpu = seen.FindPci(kGpu);
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->role, topology::PciRole::kGpu);
  // The guest reports -1; with one node there is only one place it can be (hwloc agrees).
  EXPECT_EQ(gpu->numa_node, 0);
}

TEST_F(RealH200VmTest, ReportMatchesWhatTheMachineShowed) {
  DoctorReport report = RunOn(topology::LoadSysfsHost(root_.path()), root_.path());
  ASSERT_EQ(report.findings.size(), 21u);
  SCOPED_TRACE(Problems(report));
  // No peermem, but open kernel modules on a 6.18 kernel: the DMA-BUF path exists.
  EXPECT_LE(Find(report, "GDR-01").severity, Severity::kInfo);
  // 256 GiB BAR1 (nvidia-smi: 262144 MiB) from the second BAR line.
  Finding bar1 = Find(report, "GDR-08");
  EXPECT_EQ(bar1.severity, Severity::kOk) << bar1.summary;
  EXPECT_NE(bar1.summary.find("256"), std::string::npos) << bar1.summary;
  // Gen5 x16 as trained: nothing to report.
  EXPECT_EQ(Find(report, "GDR-05").severity, Severity::kOk);
  // No RDMA NIC in this guest.
  EXPECT_EQ(Find(report, "GDR-06").severity, Severity::kNotApplicable);
  // One node: NUMA node -1 is no placement problem.
  EXPECT_LE(Find(report, "HOST-08").severity, Severity::kInfo);
  // The GPU's MSI-X vectors are found by their "PCI-MSIX-<BDF>" names.
  EXPECT_NE(Find(report, "HOST-07").severity, Severity::kNotApplicable);
  // Neither cpufreq nor cpuidle states exist in the VM: nothing to judge, no failure.
  EXPECT_LE(Find(report, "HOST-05").severity, Severity::kInfo);
  EXPECT_LE(Find(report, "HOST-06").severity, Severity::kInfo);
  EXPECT_NE(report.Worst(), Severity::kFail);
  std::cout << Problems(report);  // the report a user of that machine would read
}

// The machine had no nvidia-persistenced socket but NVML said persistence mode was on
// (nvidia-smi -pm 1): with NVML (here the fake, reporting what the real one did) that is info,
// not the warning sysfs alone would give.
TEST_F(RealH200VmTest, PersistenceModeFromNvml) {
  DoctorReport without = RunOn(host_, root_.path());
  EXPECT_EQ(Find(without, "HOST-09").severity, Severity::kWarn);

  test_support::FakeNvmlConfigFile config;
  config.WriteDevices({{{"uuid", "GPU-d63dc3d7-4c62-b6c6-6582-4429fc64ae4c"},
                        {"name", "NVIDIA H200"},
                        {"pci_bus_id", "00000000:00:06.0"},
                        {"metrics", {{"persistence_mode", 1}}}}});
  DoctorOptions o;
  o.root = root_.path();
  o.nvml_library = ACCEL_FAKE_NVML;
  Finding f = Find(RunDoctor(host_, o), "HOST-09");
  EXPECT_EQ(f.severity, Severity::kInfo) << f.summary;
  EXPECT_TRUE(HasEvidence(f, "nvmlDeviceGetPersistenceMode", "1 of 1 GPUs on"));
}

}  // namespace
}  // namespace accel::doctor
