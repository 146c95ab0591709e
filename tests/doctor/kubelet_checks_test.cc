// KUBE-01..05 (accel doctor --role k8s-node): the kubelet configuration `accel cluster plan` writes
// for the example's h100-train group, on a fake guest whose sysfs shows exactly the layout the
// plan derived it for, passes; each broken variant gives its finding. The kubelet's files are
// found the ways the kubelet finds them: its command line in /proc, its systemd unit, kubeadm's
// default path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "cluster/plan.h"
#include "cluster/template.h"
#include "common/yaml_out.h"
#include "support/healthy_host_tree.h"
#include "topology/sysfs_source.h"

namespace accel::doctor {
namespace kubelet_checks_test {

using namespace testing;
using nlohmann::ordered_json;

constexpr const char* kConfig = "var/lib/kubelet/config.yaml";
constexpr const char* kDropIns = "etc/kubernetes/kubelet.conf.d";

// How the fake guest numbers its CPUs.
enum class Smt {
  kAsPlanned,    ///< the plan's layout (h100-train: one thread per core)
  kConsecutive,  ///< two threads per core, siblings 2c and 2c+1 (libvirt's numbering)
  kSplit,        ///< two threads per core, siblings c and c+8 inside each node (bare-metal style)
};

// The guest a VM of `g` shows: one NUMA node per guest cell with its vCPUs, memory and hugepage
// pools, every device behind a pxb-pcie expander of its cell (numa_node = its guest cell).
topology::HostTopology GuestOf(const cluster::GroupPlan& g, Smt smt) {
  topology::HostTopology host;
  host.hostname = g.group + "-0";
  topology::Package pkg;
  pkg.id = 0;
  pkg.model = "Intel Xeon Processor (SapphireRapids)";
  const int nodes = static_cast<int>(g.layout.cells.size());
  for (const kubelet::GuestCellLayout& cell : g.layout.cells) {
    topology::NumaNode node;
    node.id = cell.cell;
    node.package = 0;
    node.cpus = cell.vcpus;
    pkg.cpus = pkg.cpus.Union(cell.vcpus);
    const std::vector<int> cpus = cell.vcpus.ToVector();
    const size_t half = cpus.size() / 2;
    for (size_t i = 0; i < cpus.size(); ++i) {
      if (smt == Smt::kAsPlanned) {
        node.cores.push_back(CpuSet{cpus[i]});
      } else if (smt == Smt::kConsecutive && i % 2 == 0) {
        node.cores.push_back(CpuSet{cpus[i], cpus[i + 1]});
      } else if (smt == Smt::kSplit && i < half) {
        node.cores.push_back(CpuSet{cpus[i], cpus[i + half]});
      }
    }
    std::sort(node.cores.begin(), node.cores.end(),
              [](const CpuSet& a, const CpuSet& b) { return a.First() < b.First(); });
    node.memory_kib = cell.memory_mib * 1024;
    uint64_t huge_kib = 0;
    std::vector<topology::HugepagePool> huge;
    for (const kubelet::GuestHugepagePool& p : g.hugepages)
      if (p.cell == cell.cell) {
        huge.push_back({p.page_kib, p.pages, p.pages});
        huge_kib += p.pages * p.page_kib;
      }
    const uint64_t base = (node.memory_kib - huge_kib) / 4;
    node.pages.push_back({4, base, base / 2});
    for (const topology::HugepagePool& p : huge) node.pages.push_back(p);
    for (int other = 0; other < nodes; ++other) node.distances.push_back(other == cell.cell ? 10 : 20);
    host.numa_nodes.push_back(node);
  }
  host.packages.push_back(pkg);
  auto add = [&](const std::string& address, const std::string& parent, topology::PciRole role, uint16_t vendor,
                 uint16_t device, uint16_t class_id, int numa_node) {
    topology::PciDevice d;
    d.address = address;
    d.parent = parent;
    d.role = role;
    d.vendor_id = vendor;
    d.device_id = device;
    d.class_id = class_id;
    d.numa_node = numa_node;
    d.link_gbps = role == topology::PciRole::kHostBridge ? 0 : 63.015;  // Gen5 x16
    host.pci.push_back(d);
  };
  add("pci0000:00", "", topology::PciRole::kHostBridge, 0, 0, 0, -1);
  for (size_t i = 0; i < g.layout.devices.size(); ++i) {
    const kubelet::GuestDevice& d = g.layout.devices[i];
    char bus[16], port[16], dev[16];
    std::snprintf(bus, sizeof bus, "pci0000:%02zx", 0x20 + 0x10 * i);
    std::snprintf(port, sizeof port, "0000:%02zx:00.0", 0x20 + 0x10 * i);
    std::snprintf(dev, sizeof dev, "0000:%02zx:00.0", 0x21 + 0x10 * i);
    add(bus, "", topology::PciRole::kHostBridge, 0, 0, 0, -1);
    add(port, bus, topology::PciRole::kBridge, 0x1b36, 0x000c, 0x0604, d.guest_cell);  // QEMU root port
    add(dev, port, d.role, d.vendor_id, d.device_id, 0x0302, d.guest_cell);
  }
  return host;
}

std::string Argv(const std::vector<std::string>& args) {
  std::string s;
  for (const std::string& a : args) {
    s += a;
    s += '\0';
  }
  return s;
}

class KubeletChecksTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const cluster::ClusterTemplate t =
        cluster::LoadClusterTemplate(std::string(ACCEL_SOURCE_DIR) + "/examples/cluster/ai-prod.yaml");
    cluster::ClusterPlan plan = cluster::PlanCluster(t);
    for (cluster::GroupPlan& g : plan.groups)
      if (g.group == "h100-train") group_ = new cluster::GroupPlan(std::move(g));
  }
  static void TearDownTestSuite() {
    delete group_;
    group_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(group_, nullptr) << "the example template has no h100-train group";
    files_ = cluster::GroupFiles(*group_);
    WriteGuest(Smt::kAsPlanned);
    Write(kConfig, files_.at("kubelet-config.yaml"));
  }

  void WriteGuest(Smt smt) {
    root_ = std::make_unique<TempRoot>("kubelet");
    host_ = GuestOf(*group_, smt);
    FakeSysfsOptions o;
    o.vm_guest = true;
    WriteFakeSysfs(host_, root_->path(), o);
  }
  void Write(const std::string& path, const std::string& text) { WriteFakeFile(root_->path(), path, text); }
  void Remove(const std::string& path) { fs::remove_all(fs::path(root_->path()) / path); }
  // The planned configuration changed by `edit`, as the kubelet's --config file.
  template <typename Edit>
  void EditConfig(Edit edit) {
    ordered_json c = group_->kubelet.config;
    edit(c);
    Write(kConfig, ToYaml(c));
  }
  // A running kubelet with these arguments (argv[1..]).
  void Kubelet(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/kubelet"};
    argv.insert(argv.end(), args.begin(), args.end());
    Write("proc/4242/comm", "kubelet\n");
    Write("proc/4242/cmdline", Argv(argv));
  }
  DoctorReport Run(Role role = Role::kK8sNode) {
    topology::HostTopology host = topology::LoadSysfsHost(root_->path());
    return RunOn(host, root_->path(), role);
  }
  Finding Kube(const std::string& id) { return Find(Run(), id); }
  static std::string Kubes(const DoctorReport& r) {
    std::string s;
    for (const Finding& f : r.findings)
      if (f.id.rfind("KUBE", 0) == 0) s += f.id + "=" + SeverityName(f.severity) + " (" + f.summary + ")\n";
    return s;
  }

  static cluster::GroupPlan* group_;
  std::map<std::string, std::string> files_;
  std::unique_ptr<TempRoot> root_;
  topology::HostTopology host_;
};
cluster::GroupPlan* KubeletChecksTest::group_ = nullptr;

TEST_F(KubeletChecksTest, PlannedConfigOnTheMatchingGuestPasses) {
  // The fixture is what the issue describes: 2 guest cells, 4 GPUs and their 4 RDMA NICs each
  // behind its cell (the example's h100-4-rdma), 1 GiB guest pools on both cells, and the plan's
  // own config clean.
  ASSERT_EQ(group_->layout.cells.size(), 2u);
  ASSERT_EQ(group_->layout.devices.size(), 8u);
  ASSERT_EQ(group_->hugepages.size(), 2u);
  ASSERT_TRUE(group_->findings.empty());
  DoctorReport r = Run();
  const std::vector<std::string> ids = {"KUBE-01", "KUBE-02", "KUBE-03", "KUBE-04", "KUBE-05"};
  for (const std::string& id : ids) EXPECT_EQ(Find(r, id).severity, Severity::kOk) << Kubes(r);
  Finding cpu = Find(r, "KUBE-02");
  EXPECT_EQ(cpu.summary, "cpuManagerPolicy static, reservedSystemCPUs \"0\": online") << cpu.summary;
  EXPECT_TRUE(HasEvidence(cpu, "/var/lib/kubelet/config.yaml", "cpuManagerPolicy: static"));
  EXPECT_TRUE(HasEvidence(cpu, "/sys/devices/system/cpu/online", "0-31"));
  Finding topo = Find(r, "KUBE-03");
  EXPECT_NE(topo.summary.find("single-numa-node (scope pod): every accelerator"), std::string::npos) << topo.summary;
  EXPECT_TRUE(HasEvidence(topo, "/sys/bus/pci/devices/0000:51:00.0/numa_node", "1"));
  EXPECT_NE(Find(r, "KUBE-04").summary.find("memoryManagerPolicy Static"), std::string::npos);
  EXPECT_NE(Find(r, "KUBE-05").summary.find("node0 64 x 1Gi, node1 64 x 1Gi"), std::string::npos)
      << Find(r, "KUBE-05").summary;
  Finding read = Find(r, "KUBE-01");
  EXPECT_NE(read.summary.find("kubeadm's default path"), std::string::npos) << read.summary;
  // The KUBE ids come after the 21 host checks, for this role only.
  EXPECT_EQ(r.findings.size(), 26u);
  for (const Finding& f : Run(Role::kBareMetal).findings) EXPECT_NE(f.id.rfind("KUBE", 0), 0u) << f.id;
  for (const Finding& f : Run(Role::kHypervisor).findings) EXPECT_NE(f.id.rfind("KUBE", 0), 0u) << f.id;
}

TEST_F(KubeletChecksTest, ReservedMemoryOffBy100MiFails) {
  EditConfig([](ordered_json& c) { c["reservedMemory"][0]["limits"]["memory"] = "1948Mi"; });
  DoctorReport r = Run();
  Finding f = Find(r, "KUBE-04");
  EXPECT_EQ(f.severity, Severity::kFail) << Kubes(r);
  EXPECT_NE(f.summary.find("reservedMemory"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("1948Mi"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("(2Gi): the kubelet will not start"), std::string::npos) << f.summary;
  EXPECT_NE(f.fix.find("sum to 2Gi"), std::string::npos) << f.fix;
  EXPECT_TRUE(HasEvidence(f, "/var/lib/kubelet/config.yaml", "evictionHard: {\"memory.available\":\"100Mi\""));
  EXPECT_EQ(Find(r, "KUBE-02").severity, Severity::kOk);
  EXPECT_EQ(DoctorExitCode(r), 4);
}

TEST_F(KubeletChecksTest, HalfACoreReservedWarns) {
  // The guest sees SMT siblings 2c, 2c+1 (libvirt's numbering): "0" is half of core 0.
  WriteGuest(Smt::kConsecutive);
  Write(kConfig, files_.at("kubelet-config.yaml"));
  Finding f = Kube("KUBE-02");
  EXPECT_EQ(f.severity, Severity::kWarn) << f.summary;
  EXPECT_NE(f.summary.find("vCPU 0 is reserved but its SMT sibling(s) 1 are not"), std::string::npos) << f.summary;
  EXPECT_NE(f.fix.find("reserve whole guest cores (0-1)"), std::string::npos) << f.fix;
  EXPECT_TRUE(HasEvidence(f, "/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "0-1"));
  // Whole cores pass.
  EditConfig([](ordered_json& c) { c["reservedSystemCPUs"] = "0-1"; });
  EXPECT_EQ(Kube("KUBE-02").severity, Severity::kOk) << Kube("KUBE-02").summary;

  // Siblings numbered as Linux numbers bare metal (CPU c and c+8 of each node): checked from the
  // sysfs sibling lists, which the layout's model cannot express.
  WriteGuest(Smt::kSplit);
  Write(kConfig, files_.at("kubelet-config.yaml"));
  Finding split = Kube("KUBE-02");
  EXPECT_EQ(split.severity, Severity::kWarn) << split.summary;
  EXPECT_NE(split.summary.find("CPU 0 is reserved but its SMT sibling(s) 8 are not"), std::string::npos)
      << split.summary;
  EXPECT_NE(split.fix.find("reserve whole cores (0,8)"), std::string::npos) << split.fix;
  EditConfig([](ordered_json& c) { c["reservedSystemCPUs"] = "0,8"; });
  EXPECT_EQ(Kube("KUBE-02").severity, Severity::kOk) << Kube("KUBE-02").summary;
}

TEST_F(KubeletChecksTest, ReservedCpusOfflineOrMissingFail) {
  Write("sys/devices/system/cpu/online", "1-31\n");
  Finding offline = Kube("KUBE-02");
  EXPECT_EQ(offline.severity, Severity::kFail) << offline.summary;
  EXPECT_NE(offline.summary.find("CPUs 0 are not online (1-31)"), std::string::npos) << offline.summary;
  Write("sys/devices/system/cpu/online", "0-31\n");
  EditConfig([](ordered_json& c) { c["reservedSystemCPUs"] = "40-41"; });
  Finding beyond = Kube("KUBE-02");
  EXPECT_EQ(beyond.severity, Severity::kFail) << beyond.summary;
  EXPECT_NE(beyond.summary.find("names CPUs the guest does not have (40-41)"), std::string::npos) << beyond.summary;
  EXPECT_EQ(beyond.summary.find("not online"), std::string::npos) << "reported once: " << beyond.summary;
}

TEST_F(KubeletChecksTest, SingleNumaNodeWithAGpuWithoutNumaNodeFails) {
  Write(fs::relative(FakePciDir(host_, root_->path(), "0000:51:00.0"), root_->path()).string() + "/numa_node",
        "-1\n");
  DoctorReport r = Run();
  Finding f = Find(r, "KUBE-03");
  EXPECT_EQ(f.severity, Severity::kFail) << Kubes(r);
  EXPECT_NE(f.summary.find("0000:51:00.0"), std::string::npos) << f.summary;
  EXPECT_NE(f.summary.find("kubernetes#84869"), std::string::npos) << f.summary;
  EXPECT_NE(f.fix.find("prefer-closest-numa-nodes"), std::string::npos) << f.fix;
  EXPECT_TRUE(HasEvidence(f, "/sys/bus/pci/devices/0000:51:00.0/numa_node", "-1"));
  // restricted + prefer-closest-numa-nodes is what the plan derives for such a guest: clean.
  EditConfig([](ordered_json& c) {
    c["topologyManagerPolicy"] = "restricted";
    c["topologyManagerPolicyOptions"] = {{"prefer-closest-numa-nodes", "true"}};
  });
  EXPECT_EQ(Kube("KUBE-03").severity, Severity::kOk) << Kube("KUBE-03").summary;
}

TEST_F(KubeletChecksTest, OptionsThatExcludeEachOtherFail) {
  EditConfig([](ordered_json& c) {
    c["cpuManagerPolicyOptions"] = {{"align-by-socket", "true"}};
    c["featureGates"]["CPUManagerPolicyAlphaOptions"] = true;
  });
  Finding f = Kube("KUBE-03");
  EXPECT_EQ(f.severity, Severity::kFail) << f.summary;
  EXPECT_NE(f.summary.find("cpuManagerPolicyOptions.align-by-socket: cannot be combined"), std::string::npos)
      << f.summary;
}

TEST_F(KubeletChecksTest, HugepagesReservationAboveThePoolFails) {
  EditConfig([](ordered_json& c) { c["reservedMemory"][0]["limits"]["hugepages-1Gi"] = "80Gi"; });
  Finding f = Kube("KUBE-04");
  EXPECT_EQ(f.severity, Severity::kFail) << f.summary;
  EXPECT_NE(f.summary.find("reserves 80Gi of hugepages-1Gi on guest node 0, whose pool holds 64Gi"),
            std::string::npos)
      << f.summary;
}

TEST_F(KubeletChecksTest, HugepagePoolsMissingOnANodeOrShortOfTheUnit) {
  Write("etc/systemd/system/accel-guest-hugepages.service", files_.at("hugepages/accel-guest-hugepages.service"));
  EXPECT_EQ(Kube("KUBE-05").severity, Severity::kOk) << Kube("KUBE-05").summary;
  for (const char* file : {"nr_hugepages", "free_hugepages"})
    Write(std::string("sys/devices/system/node/node1/hugepages/hugepages-1048576kB/") + file, "10\n");
  Finding short_pool = Kube("KUBE-05");
  EXPECT_EQ(short_pool.severity, Severity::kFail) << short_pool.summary;
  EXPECT_NE(short_pool.summary.find("node1 has 10 of the 64 hugepages-1Gi pages accel-guest-hugepages.service asks"),
            std::string::npos)
      << short_pool.summary;
  EXPECT_NE(short_pool.fix.find("kernel-cmdline.txt"), std::string::npos) << short_pool.fix;
  // No pool at all on node 1: pods asking 1 GiB pages align to node 0 only.
  Remove("etc/systemd/system/accel-guest-hugepages.service");
  for (const char* file : {"nr_hugepages", "free_hugepages"})
    Write(std::string("sys/devices/system/node/node1/hugepages/hugepages-1048576kB/") + file, "0\n");
  Finding lopsided = Kube("KUBE-05");
  EXPECT_EQ(lopsided.severity, Severity::kWarn) << lopsided.summary;
  EXPECT_NE(lopsided.summary.find("hugepages-1Gi pools on node0 64 but none on node1"), std::string::npos)
      << lopsided.summary;
}

TEST_F(KubeletChecksTest, DropInOverridingCpuManagerPolicyWarns) {
  Kubelet({"--config=/var/lib/kubelet/config.yaml", "--config-dir", "/etc/kubernetes/kubelet.conf.d",
           "--container-runtime-endpoint=unix:///run/containerd/containerd.sock"});
  Write(std::string(kDropIns) + "/50-accel.conf", files_.at("kubelet.conf.d/50-accel.conf"));
  Write(std::string(kDropIns) + "/99-local.conf",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: none\n");
  DoctorReport r = Run();
  Finding cpu = Find(r, "KUBE-02");
  EXPECT_EQ(cpu.severity, Severity::kWarn) << Kubes(r);
  EXPECT_NE(cpu.summary.find("cpuManagerPolicy none on a node with 2 NUMA nodes, 4 accelerators (a VM guest)"),
            std::string::npos)
      << cpu.summary;
  EXPECT_TRUE(HasEvidence(cpu, "/etc/kubernetes/kubelet.conf.d/99-local.conf", "cpuManagerPolicy: none"));
  Finding read = Find(r, "KUBE-01");
  EXPECT_EQ(read.severity, Severity::kInfo) << read.summary;
  EXPECT_NE(read.summary.find("cpuManagerPolicy static (/etc/kubernetes/kubelet.conf.d/50-accel.conf) -> none "
                              "(/etc/kubernetes/kubelet.conf.d/99-local.conf)"),
            std::string::npos)
      << read.summary;
  EXPECT_TRUE(HasEvidence(read, "/proc/4242/cmdline", "--config-dir /etc/kubernetes/kubelet.conf.d"));
}

TEST_F(KubeletChecksTest, DropInsMergeInLexicalOrderAndOnlyConfFiles) {
  Kubelet({"--config=/var/lib/kubelet/config.yaml", "--config-dir=/etc/kubernetes/kubelet.conf.d"});
  const std::string head = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n";
  // Lexical, as the kubelet's filepath.WalkDir: 10-none.conf, 20/sub.conf, 9-static.conf; the
  // .yaml file and the .conf.bak are not drop-ins.
  Write(std::string(kDropIns) + "/10-none.conf", head + "cpuManagerPolicy: none\n");
  Write(std::string(kDropIns) + "/20/sub.conf", head + "maxPods: 50\n");
  Write(std::string(kDropIns) + "/9-static.conf", head + "cpuManagerPolicy: static\n");
  Write(std::string(kDropIns) + "/99-local.yaml", "cpuManagerPolicy: none\n");
  Write(std::string(kDropIns) + "/99-old.conf.bak", "not: [yaml\n");
  DoctorReport r = Run();
  Finding cpu = Find(r, "KUBE-02");
  EXPECT_EQ(cpu.severity, Severity::kOk) << Kubes(r);
  EXPECT_TRUE(HasEvidence(cpu, "/etc/kubernetes/kubelet.conf.d/9-static.conf", "cpuManagerPolicy: static"));
  Finding read = Find(r, "KUBE-01");
  EXPECT_TRUE(HasEvidence(read, "/etc/kubernetes/kubelet.conf.d",
                          "/etc/kubernetes/kubelet.conf.d/10-none.conf, /etc/kubernetes/kubelet.conf.d/20/sub.conf, "
                          "/etc/kubernetes/kubelet.conf.d/9-static.conf"));
  EXPECT_LE(read.severity, Severity::kInfo) << read.summary;
}

TEST_F(KubeletChecksTest, SystemdUnitNamesTheConfigDir) {
  // kubeadm's packages: the unit, its 10-kubeadm.conf drop-in, and kubeadm-flags.env, here with
  // the --config-dir accel's drop-in needs.
  Write("usr/lib/systemd/system/kubelet.service",
        "[Unit]\nDescription=kubelet\n[Service]\nExecStart=/usr/bin/kubelet\nRestart=always\n");
  Write("usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf",
        "# Note: This dropin only works with kubeadm and kubelet v1.11+\n[Service]\n"
        "Environment=\"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf "
        "--kubeconfig=/etc/kubernetes/kubelet.conf\"\n"
        "Environment=\"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml\"\n"
        "EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n"
        "EnvironmentFile=-/etc/default/kubelet\n"
        "ExecStart=\n"
        "ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS "
        "$KUBELET_EXTRA_ARGS\n");
  Write("var/lib/kubelet/kubeadm-flags.env",
        "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock "
        "--config-dir=/etc/kubernetes/kubelet.conf.d\"\n");
  Write(std::string(kDropIns) + "/99-local.conf",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: none\n");
  DoctorReport r = Run();
  Finding cpu = Find(r, "KUBE-02");
  EXPECT_EQ(cpu.severity, Severity::kWarn) << Kubes(r);
  EXPECT_TRUE(HasEvidence(cpu, "/etc/kubernetes/kubelet.conf.d/99-local.conf", "cpuManagerPolicy: none"));
  Finding read = Find(r, "KUBE-01");
  EXPECT_TRUE(HasEvidence(read, "ExecStart (expanded)",
                          "/usr/bin/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf "
                          "--kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml "
                          "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock "
                          "--config-dir=/etc/kubernetes/kubelet.conf.d"))
      << read.summary;
  EXPECT_TRUE(HasEvidence(read, "/etc/default/kubelet", "(missing)"));
}

TEST_F(KubeletChecksTest, DropInsWithoutConfigDirDoNothing) {
  Write(std::string(kDropIns) + "/50-accel.conf", files_.at("kubelet.conf.d/50-accel.conf"));
  Finding read = Kube("KUBE-01");
  EXPECT_EQ(read.severity, Severity::kWarn) << read.summary;
  EXPECT_NE(read.summary.find("do nothing: the kubelet is not started with --config-dir"), std::string::npos)
      << read.summary;
  EXPECT_NE(read.fix.find("--config-dir=/etc/kubernetes/kubelet.conf.d"), std::string::npos) << read.fix;
}

TEST_F(KubeletChecksTest, FlagsThatOverrideTheFilesWarn) {
  Kubelet({"--config", "/var/lib/kubelet/config.yaml", "--cpu-manager-policy=none", "--reserved_cpus", "0-3"});
  Finding read = Kube("KUBE-01");
  EXPECT_EQ(read.severity, Severity::kWarn) << read.summary;
  EXPECT_NE(read.summary.find("--cpu-manager-policy=none, --reserved-cpus=0-3"), std::string::npos) << read.summary;
}

TEST_F(KubeletChecksTest, MissingConfigIsAFindingNotACrash) {
  Remove(kConfig);
  DoctorReport r = Run();
  Finding read = Find(r, "KUBE-01");
  EXPECT_EQ(read.severity, Severity::kInfo) << read.summary;
  EXPECT_NE(read.summary.find("no kubelet configuration at /var/lib/kubelet/config.yaml"), std::string::npos)
      << read.summary;
  EXPECT_NE(read.fix.find("mount the kubelet's files read-only under --root"), std::string::npos) << read.fix;
  for (const char* id : {"KUBE-02", "KUBE-03", "KUBE-04"}) EXPECT_EQ(Find(r, id).severity, Severity::kNotApplicable);
  EXPECT_EQ(Find(r, "KUBE-05").severity, Severity::kOk) << "sysfs alone";
  // A running kubelet without any configuration: its defaults are checked.
  Kubelet({"--kubeconfig=/etc/kubernetes/kubelet.conf"});
  DoctorReport defaults = Run();
  EXPECT_EQ(Find(defaults, "KUBE-01").severity, Severity::kWarn) << Kubes(defaults);
  EXPECT_EQ(Find(defaults, "KUBE-02").severity, Severity::kWarn) << Kubes(defaults);
  EXPECT_TRUE(HasEvidence(Find(defaults, "KUBE-02"), "(kubelet default)", "cpuManagerPolicy: none"));
}

TEST_F(KubeletChecksTest, MalformedFilesNameTheFileAndTheKeyPath) {
  Write(kConfig, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static: none\n");
  DoctorReport syntax = Run();
  Finding f = Find(syntax, "KUBE-01");
  EXPECT_EQ(f.severity, Severity::kFail) << f.summary;
  EXPECT_EQ(f.summary.rfind("/var/lib/kubelet/config.yaml", 0), 0u) << f.summary;
  EXPECT_NE(f.summary.find("not valid YAML: illegal map value"), std::string::npos) << f.summary;
  EXPECT_EQ(Find(syntax, "KUBE-04").severity, Severity::kNotApplicable);
  EXPECT_EQ(DoctorExitCode(syntax), 4);

  EditConfig([](ordered_json& c) { c["reservedMemory"][0]["limits"]["memory"] = "lots"; });
  Finding type = Kube("KUBE-01");
  EXPECT_EQ(type.severity, Severity::kFail) << type.summary;
  EXPECT_NE(type.summary.find("/var/lib/kubelet/config.yaml line "), std::string::npos) << type.summary;
  EXPECT_NE(type.summary.find(": reservedMemory[0].limits.memory: "), std::string::npos) << type.summary;

  Write(kConfig, files_.at("kubelet-config.yaml"));
  Kubelet({"--config=/var/lib/kubelet/config.yaml", "--config-dir=/etc/kubernetes/kubelet.conf.d"});
  Write(std::string(kDropIns) + "/99-local.conf", "cpuManagerPolicy: none\n");
  Finding bare = Kube("KUBE-01");
  EXPECT_EQ(bare.severity, Severity::kFail) << bare.summary;
  EXPECT_NE(bare.summary.find("/etc/kubernetes/kubelet.conf.d/99-local.conf: has no apiVersion"), std::string::npos)
      << bare.summary;
}

TEST_F(KubeletChecksTest, KubeadmFieldsAreKeptAndMisspeltOnesWarn) {
  // kubeadm's own config.yaml (v1.33) with accel's fields in a drop-in: nothing to report about
  // fields accel does not check.
  Write(kConfig,
        "apiVersion: kubelet.config.k8s.io/v1beta1\nauthentication:\n  anonymous:\n    enabled: false\n"
        "  webhook:\n    cacheTTL: 0s\n    enabled: true\n  x509:\n    clientCAFile: /etc/kubernetes/pki/ca.crt\n"
        "authorization:\n  mode: Webhook\n  webhook:\n    cacheAuthorizedTTL: 0s\n    cacheUnauthorizedTTL: 0s\n"
        "cgroupDriver: systemd\nclusterDNS:\n- 10.96.0.10\nclusterDomain: cluster.local\n"
        "containerRuntimeEndpint: \"\"\ncpuManagerReconcilePeriod: 0s\ncrashLoopBackOff: {}\n"
        "evictionPressureTransitionPeriod: 0s\nfileCheckFrequency: 0s\nhealthzBindAddress: 127.0.0.1\n"
        "healthzPort: 10248\nhttpCheckFrequency: 0s\nimageMaximumGCAge: 0s\nimageMinimumGCAge: 0s\n"
        "kind: KubeletConfiguration\nlogging:\n  flushFrequency: 0\n  options:\n    json:\n      infoBufferSize: \"0\"\n"
        "  verbosity: 0\nmemorySwap: {}\nnodeStatusReportFrequency: 0s\nnodeStatusUpdateFrequency: 0s\n"
        "rotateCertificates: true\nruntimeRequestTimeout: 0s\nshutdownGracePeriod: 0s\n"
        "shutdownGracePeriodCriticalPods: 0s\nstaticPodPath: /etc/kubernetes/manifests\n"
        "streamingConnectionIdleTimeout: 0s\nsyncFrequency: 0s\nvolumeStatsAggPeriod: 0s\n");
  Kubelet({"--config=/var/lib/kubelet/config.yaml", "--config-dir=/etc/kubernetes/kubelet.conf.d"});
  Write(std::string(kDropIns) + "/50-accel.conf", files_.at("kubelet.conf.d/50-accel.conf"));
  DoctorReport r = Run();
  Finding read = Find(r, "KUBE-01");
  // One misspelt field (containerRuntimeEndpint) is the only warning: the kubelet drops it.
  EXPECT_EQ(read.severity, Severity::kWarn) << read.summary;
  EXPECT_NE(read.summary.find("/var/lib/kubelet/config.yaml line 19: 'containerRuntimeEndpint' is not a "
                              "KubeletConfiguration field: the kubelet drops it"),
            std::string::npos)
      << read.summary;
  EXPECT_NE(read.fix.find("did you mean 'containerRuntimeEndpoint'?"), std::string::npos) << read.fix;
  EXPECT_EQ(read.summary.find("authentication"), std::string::npos) << read.summary;
  EXPECT_EQ(read.summary.find("logging"), std::string::npos) << read.summary;
  for (const char* id : {"KUBE-02", "KUBE-03", "KUBE-04", "KUBE-05"})
    EXPECT_EQ(Find(r, id).severity, Severity::kOk) << Kubes(r);
}

// `accel doctor --role k8s-node --root DIR -o json`, as a DaemonSet or the doctor Job runs it.
TEST_F(KubeletChecksTest, CommandLineReportsKubeletFindingsAsJson) {
  auto findings = [](const nlohmann::json& doc) {
    std::map<std::string, std::string> out;
    for (const auto& f : doc["findings"])
      if (f["id"].get<std::string>().rfind("KUBE", 0) == 0) out[f["id"]] = f["severity"];
    return out;
  };
  auto good = cli::testing::RunAccel("doctor --role k8s-node --root " + root_->path() + " -o json", false);
  nlohmann::json doc = nlohmann::json::parse(good.output);
  EXPECT_EQ(doc["role"], "k8s-node");
  EXPECT_EQ(doc["exit_code"], good.exit_code);
  EXPECT_EQ(findings(doc), (std::map<std::string, std::string>{
                               {"KUBE-01", "ok"}, {"KUBE-02", "ok"}, {"KUBE-03", "ok"}, {"KUBE-04", "ok"},
                               {"KUBE-05", "ok"}}))
      << good.output;

  EditConfig([](ordered_json& c) { c["reservedMemory"][0]["limits"]["memory"] = "1948Mi"; });
  auto bad = cli::testing::RunAccel("doctor --role k8s-node --root " + root_->path() + " -o json", false);
  EXPECT_EQ(bad.exit_code, 4) << bad.output;
  nlohmann::json bad_doc = nlohmann::json::parse(bad.output);
  EXPECT_EQ(findings(bad_doc)["KUBE-04"], "fail") << bad.output;
  // Text names the check and its fix.
  auto text = cli::testing::RunAccel("doctor --role k8s-node --root " + root_->path());
  EXPECT_NE(text.output.find("[FAIL] KUBE-04 kubelet Memory Manager"), std::string::npos) << text.output;
}

}  // namespace
}  // namespace accel::doctor
