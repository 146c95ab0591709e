// GDR-09 (pod plumbing: memlock, verbs device nodes, /dev/shm, a socket interface) on the shared
// healthy HGX H100 tree seen as a Kubernetes node, one thing broken at a time.
#include <gtest/gtest.h>

#include "doctor/doctor.h"
#include "support/healthy_host_tree.h"

namespace accel::doctor {
namespace pod_checks_test {

using namespace testing;

class PodTest : public HgxTreeTest {
 protected:
  Finding Pod() { return Find(Doctor(Role::kK8sNode), "GDR-09"); }
  void Memlock(const std::string& soft, const std::string& hard) {
    edit_.Set("proc/self/limits",
              "Limit                     Soft Limit           Hard Limit           Units     \n"
              "Max locked memory         " + soft + "              " + hard + "              bytes     \n");
  }
  void Shm(const std::string& line) {
    edit_.Set("proc/mounts", "overlay / overlay rw,relatime 0 0\n" + line);
  }
};

TEST_F(PodTest, HealthyPodPlumbing) {
  Finding f = Pod();
  EXPECT_EQ(f.severity, Severity::kOk) << f.summary;
  EXPECT_EQ(f.summary,
            "memlock unlimited; 12 uverbs nodes and rdma_cm; /dev/shm 16 GiB; socket interface eno1 "
            "for NCCL's bootstrap");
  EXPECT_TRUE(HasEvidence(f, "/proc/self/limits", "Max locked memory unlimited unlimited"));
  EXPECT_TRUE(HasEvidence(f, "/proc/mounts", "shm /dev/shm tmpfs"));
  EXPECT_TRUE(HasEvidence(f, "/sys/class/net", "up, not RDMA: eno1; RDMA netdevs: ens6f0np0"));
}

TEST_F(PodTest, OnlyForKubernetesNodes) {
  EXPECT_EQ(Find(Doctor(), "GDR-09").severity, Severity::kNotApplicable);
  EXPECT_EQ(Find(Doctor(Role::kHypervisor), "GDR-09").severity, Severity::kNotApplicable);
}

TEST_F(PodTest, SmallMemlockWithoutIpcLockWarns) {
  Memlock("8388608", "8388608");
  Finding f = Pod();
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("memlock limit 8 MiB without CAP_IPC_LOCK"), std::string::npos) << f.summary;
  EXPECT_EQ(f.summary.find("uverbs"), std::string::npos) << "only what needs attention";
  EXPECT_NE(f.fix.find("IPC_LOCK"), std::string::npos);
  EXPECT_NE(f.fix.find("ulimit -l unlimited"), std::string::npos);
  EXPECT_TRUE(HasEvidence(f, "/proc/self/status", "CapEff:\t00000000a80425fb"));
  // CAP_IPC_LOCK (bit 14) lifts the limit.
  edit_.Set("proc/self/status", "Name:\taccel\nCapEff:\t00000000a80465fb\n");
  Finding capped = Pod();
  EXPECT_EQ(capped.severity, Severity::kOk) << capped.summary;
  EXPECT_NE(capped.summary.find("CAP_IPC_LOCK lifts it"), std::string::npos) << capped.summary;
}

TEST_F(PodTest, MissingVerbsDevices) {
  edit_.Remove("dev/infiniband/rdma_cm");
  Finding no_cm = Pod();
  EXPECT_EQ(no_cm.severity, Severity::kWarn) << no_cm.summary;
  EXPECT_NE(no_cm.summary.find("no /dev/infiniband/rdma_cm"), std::string::npos);
  EXPECT_NE(no_cm.fix.find("modprobe rdma_ucm"), std::string::npos);
  edit_.Restore();
  // A device plugin mounted only four of the twelve devices.
  for (int i = 4; i < 12; ++i) edit_.Remove("dev/infiniband/uverbs" + std::to_string(i));
  Finding some = Pod();
  EXPECT_EQ(some.severity, Severity::kInfo) << some.summary;
  EXPECT_NE(some.summary.find("4 of 12 RDMA devices have a uverbs node"), std::string::npos)
      << some.summary;
  for (int i = 0; i < 4; ++i) edit_.Remove("dev/infiniband/uverbs" + std::to_string(i));
  Finding none = Pod();
  EXPECT_EQ(none.severity, Severity::kFail) << none.summary;
  EXPECT_NE(none.summary.find("falls back to TCP"), std::string::npos);
  EXPECT_NE(none.fix.find("rdma/<pool>"), std::string::npos) << none.fix;
  EXPECT_TRUE(HasEvidence(none, "/dev/infiniband", "rdma_cm"));
}

TEST_F(PodTest, DockerSizedShmWarnsWithTheEmptyDirFix) {
  Shm("shm /dev/shm tmpfs rw,nosuid,nodev,noexec,relatime,size=65536k,inode64 0 0\n");
  Finding f = Pod();
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("/dev/shm is 64 MiB for 8 accelerators"), std::string::npos) << f.summary;
  EXPECT_NE(f.fix.find("emptyDir: {medium: Memory, sizeLimit: 8Gi}"), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("mountPath: /dev/shm"), std::string::npos);
  // Exactly 1 GiB per GPU is enough; a later mount over the first one is what the pod sees.
  Shm("shm /dev/shm tmpfs rw,size=65536k 0 0\ntmpfs /dev/shm tmpfs rw,size=8g 0 0\n");
  EXPECT_EQ(Pod().severity, Severity::kOk) << Pod().summary;
}

TEST_F(PodTest, ShmWithoutSizeIsHalfOfMemoryAndMissingShmWarns) {
  Shm("tmpfs /dev/shm tmpfs rw,nosuid,nodev,inode64 0 0\n");
  Finding f = Pod();
  EXPECT_EQ(f.severity, Severity::kOk) << f.summary;  // half of the host's memory
  Shm("");
  Finding none = Pod();
  EXPECT_EQ(none.severity, Severity::kWarn) << none.summary;
  EXPECT_NE(none.summary.find("/dev/shm is not a tmpfs mount"), std::string::npos);
  EXPECT_TRUE(HasEvidence(none, "/proc/mounts", "(no /dev/shm mount)"));
}

TEST_F(PodTest, SocketInterfaces) {
  edit_.Set("sys/class/net/eno1/operstate", "down\n");
  Finding f = Pod();
  EXPECT_EQ(f.severity, Severity::kInfo) << f.summary;
  EXPECT_NE(f.summary.find("no IP interface besides the RDMA netdevs (ens6f0np0"), std::string::npos)
      << f.summary;
  EXPECT_NE(f.fix.find("NCCL_SOCKET_IFNAME"), std::string::npos);
  topology::HostTopology host = *host_;
  for (const topology::PciDevice& d : host.pci)
    for (const std::string& n : d.netdevs) edit_.Set("sys/class/net/" + n + "/operstate", "down\n");
  Finding none = Pod();
  EXPECT_EQ(none.severity, Severity::kWarn) << none.summary;
  EXPECT_NE(none.summary.find("No IP interface found"), std::string::npos);
}

TEST(PodNoAcceleratorTest, PlainKubernetesNodeIsNotApplicable) {
  topology::HostTopology host = Fixture("devbox");
  std::erase_if(host.pci, [](const topology::PciDevice& d) { return d.is_accelerator(); });
  TempRoot root("gdr09-plain");
  WriteHealthyHost(host, root.path());
  EXPECT_EQ(Find(RunOn(host, root.path(), Role::kK8sNode), "GDR-09").severity,
            Severity::kNotApplicable);
}

}  // namespace
}  // namespace accel::doctor
