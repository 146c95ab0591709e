// HOST-10 (tuned profile) on the shared healthy HGX H100 tree: profiles per role, profiles that
// include the right one, missing tuned, and cpu-partitioning whose isolated cores are not booted.
#include <gtest/gtest.h>

#include "doctor/doctor.h"
#include "support/healthy_host_tree.h"

namespace accel::doctor {
namespace tuned_checks_test {

using namespace testing;

class TunedTest : public HgxTreeTest {
 protected:
  Finding Tuned(Role role = Role::kBareMetal) { return Find(Doctor(role), "HOST-10"); }
  void Profile(const std::string& name) { edit_.Set("etc/tuned/active_profile", name + "\n"); }
  // cpu-partitioning with `cores`, booted with nohz_full=`booted` (as its command line sets).
  void CpuPartitioning(const std::string& cores, const std::string& booted) {
    Profile("cpu-partitioning");
    edit_.Set("etc/tuned/cpu-partitioning-variables.conf",
              "# Examples:\n# isolated_cores=2,4-7\nisolated_cores=" + cores + "\n");
    Boot("ro nohz=on nohz_full=" + booted + " tuned.non_isolcpus=00000001", "");
    edit_.Set("sys/devices/system/cpu/nohz_full", booted + "\n");
  }
};

TEST_F(TunedTest, AcceleratorPerformanceOnATrainingNode) {
  Finding f = Tuned();
  EXPECT_EQ(f.severity, Severity::kOk) << f.summary;
  EXPECT_EQ(f.summary, "profile accelerator-performance");
  EXPECT_TRUE(HasEvidence(f, "/etc/tuned/active_profile", "accelerator-performance"));
  EXPECT_EQ(Tuned(Role::kK8sNode).severity, Severity::kOk);
}

TEST_F(TunedTest, NoTunedIsInfoWithTheProfileToSet) {
  edit_.Remove("etc/tuned/active_profile");
  Finding f = Tuned();
  EXPECT_EQ(f.severity, Severity::kInfo) << f.summary;
  EXPECT_NE(f.summary.find("tuned is not installed"), std::string::npos) << f.summary;
  EXPECT_NE(f.fix.find("tuned-adm profile accelerator-performance"), std::string::npos) << f.fix;
  Finding hyp = Tuned(Role::kHypervisor);
  EXPECT_NE(hyp.fix.find("tuned-adm profile cpu-partitioning"), std::string::npos) << hyp.fix;
  EXPECT_NE(hyp.fix.find("/etc/tuned/cpu-partitioning-variables.conf"), std::string::npos);
  // tuned-adm off leaves the file empty.
  Profile("");
  Finding off = Tuned();
  EXPECT_EQ(off.severity, Severity::kInfo);
  EXPECT_NE(off.summary.find("tuned is off"), std::string::npos) << off.summary;
}

TEST_F(TunedTest, PowerSavingProfilesWarnOthersAreInfo) {
  Profile("balanced");
  Finding f = Tuned();
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("profile balanced saves power"), std::string::npos) << f.summary;
  EXPECT_NE(f.fix.find("tuned-adm profile accelerator-performance"), std::string::npos);
  Profile("desktop");  // includes balanced
  EXPECT_EQ(Tuned().severity, Severity::kWarn);
  Profile("site-special");  // unknown, no profile directory
  EXPECT_EQ(Tuned().severity, Severity::kInfo);
  // A hypervisor on a training profile: works, but pinned guests want cpu-partitioning.
  Profile("accelerator-performance");
  Finding hyp = Tuned(Role::kHypervisor);
  EXPECT_EQ(hyp.severity, Severity::kInfo) << hyp.summary;
  EXPECT_NE(hyp.summary.find("wants cpu-partitioning or virtual-host"), std::string::npos);
}

TEST_F(TunedTest, ProfilesThatIncludeTheRightOneFit) {
  // tuned's own: virtual-host and hpc-compute include throughput-performance.
  Profile("virtual-host");
  EXPECT_EQ(Tuned().severity, Severity::kOk) << Tuned().summary;
  EXPECT_EQ(Tuned(Role::kHypervisor).severity, Severity::kOk);
  Profile("hpc-compute");
  EXPECT_EQ(Tuned().severity, Severity::kOk);
  // A site profile in /etc/tuned that includes accelerator-performance.
  Profile("site-gpu");
  edit_.Set("etc/tuned/site-gpu/tuned.conf",
            "[main]\nsummary=GPU nodes\ninclude=accelerator-performance\n\n[sysctl]\nvm.swappiness=1\n");
  Finding f = Tuned();
  EXPECT_EQ(f.severity, Severity::kOk) << f.summary;
  EXPECT_TRUE(HasEvidence(f, "tuned include= chain", "site-gpu, accelerator-performance"));
  // Merged profiles: one of them is enough.
  Profile("balanced site-gpu");
  EXPECT_EQ(Tuned().severity, Severity::kOk) << Tuned().summary;
}

TEST_F(TunedTest, CpuPartitioningBootedAsConfigured) {
  CpuPartitioning("1-55,57-111", "1-55,57-111");
  Finding f = Tuned(Role::kHypervisor);
  EXPECT_EQ(f.severity, Severity::kOk) << f.summary;
  EXPECT_EQ(f.summary, "profile cpu-partitioning, isolated cores booted");
  EXPECT_FALSE(f.needs_reboot);
  // It includes network-latency: fine for a training node as well.
  EXPECT_EQ(Tuned().severity, Severity::kOk) << Tuned().summary;
}

TEST_F(TunedTest, CpuPartitioningWithANewCoreListNeedsAReboot) {
  CpuPartitioning("1-55,57-111,113-167,169-223", "1-55,57-111");
  Finding f = Tuned(Role::kHypervisor);
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("cpu-partitioning isolates 1-55,57-111,113-167,169-223 but the running "
                           "kernel's nohz_full CPUs are 1-55,57-111: a reboot is pending"),
            std::string::npos)
      << f.summary;
  EXPECT_TRUE(f.needs_reboot);
  EXPECT_TRUE(HasEvidence(f, "/etc/tuned/cpu-partitioning-variables.conf", "isolated_cores=1-55"));
  // Never booted with the profile: no nohz_full, nothing isolated.
  Boot("ro", "");
  edit_.Set("sys/devices/system/cpu/nohz_full", "(null)\n");
  Finding never = Tuned(Role::kHypervisor);
  EXPECT_EQ(never.severity, Severity::kWarn) << never.summary;
  EXPECT_NE(never.summary.find("isolated CPUs are (none)"), std::string::npos) << never.summary;
  // Booted with isolcpus instead of nohz_full: the isolated set counts.
  Boot("ro isolcpus=1-55,57-111,113-167,169-223", "1-55,57-111,113-167,169-223");
  EXPECT_EQ(Tuned(Role::kHypervisor).severity, Severity::kOk) << Tuned(Role::kHypervisor).summary;
}

TEST_F(TunedTest, CpuPartitioningVariablesMissingOrComputed) {
  CpuPartitioning("", "1-55");
  Finding f = Tuned(Role::kHypervisor);
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("without isolated_cores"), std::string::npos) << f.summary;
  edit_.Set("etc/tuned/cpu-partitioning-variables.conf", "isolated_cores=${f:calc_isolated_cores:1}\n");
  Finding computed = Tuned(Role::kHypervisor);
  EXPECT_EQ(computed.severity, Severity::kInfo) << computed.summary;
  EXPECT_NE(computed.summary.find("computed by tuned"), std::string::npos) << computed.summary;
}

TEST_F(TunedTest, DaemonNotRunningIsInfo) {
  edit_.Remove("run/tuned/tuned.pid");
  Finding f = Tuned();
  EXPECT_EQ(f.severity, Severity::kInfo) << f.summary;
  EXPECT_NE(f.summary.find("not running"), std::string::npos) << f.summary;
  EXPECT_NE(f.fix.find("systemctl enable --now tuned"), std::string::npos);
}

}  // namespace
}  // namespace accel::doctor
