// BuildTrainingSettings and its renderings against hand-built Fabric values (no pairing code):
// the NCCL/UCX rules of fabric-doctor.md §2.4, the shell output run through a real sh, the
// PyTorchJob read back with yaml-cpp, and invariants over thousands of random fabrics.
#include "fabric/training_env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

namespace accel::fabric {
namespace training_env_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// The HGX H100 of fixtures/hosts/hgx-h100.json, paired by hand: each GPU with the compute NIC
// behind its switch (PIX); the dual-port storage NICs mlx5_1/2/7/8 excluded.
Fabric HgxFabric() {
  struct NicRow {
    const char* address;
    const char* rdma;
    const char* netdev;
    int numa;
    bool storage;
  };
  const NicRow nics[] = {{"0000:18:00.0", "mlx5_0", "ibp24s0", 0, false},
                         {"0000:27:00.0", "mlx5_1", "ens6f0np0", 0, true},
                         {"0000:27:00.1", "mlx5_2", "ens6f1np1", 0, true},
                         {"0000:40:00.0", "mlx5_3", "ibp64s0", 0, false},
                         {"0000:4f:00.0", "mlx5_4", "ibp79s0", 0, false},
                         {"0000:5e:00.0", "mlx5_5", "ibp94s0", 0, false},
                         {"0000:9a:00.0", "mlx5_6", "ibp154s0", 1, false},
                         {"0000:a8:00.0", "mlx5_7", "ens7f0np0", 1, true},
                         {"0000:a8:00.1", "mlx5_8", "ens7f1np1", 1, true},
                         {"0000:c0:00.0", "mlx5_9", "ibp192s0", 1, false},
                         {"0000:ce:00.0", "mlx5_10", "ibp206s0", 1, false},
                         {"0000:dc:00.0", "mlx5_11", "ibp220s0", 1, false}};
  Fabric f;
  for (const NicRow& r : nics) {
    FabricNic n;
    n.pci_address = r.address;
    n.rdma_device = r.rdma;
    n.netdev = r.netdev;
    n.numa_node = r.numa;
    n.link_layer = r.storage ? "Ethernet" : "InfiniBand";
    n.state = "ACTIVE";
    n.rate_gbps = r.storage ? 200 : 400;
    if (r.storage) n.excluded = "storage/management NIC: shares no PCIe switch with an accelerator";
    f.nics.push_back(n);
  }
  const char* gpus[] = {"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
                        "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"};
  const int nic_of[] = {0, 3, 4, 5, 6, 9, 10, 11};
  for (int i = 0; i < 8; ++i) {
    GpuNicPair p;
    p.gpu_address = gpus[i];
    p.gpu_index = i;
    p.numa_node = i < 4 ? 0 : 1;
    p.nic = nic_of[i];
    p.path.type = PathType::kPix;
    p.path.smi = "PIX";
    p.path.bandwidth_gbs = 48;
    f.gpus.push_back(gpus[i]);
    f.pairs.push_back(p);
  }
  return f;
}

const EnvVar* Find(const std::vector<EnvVar>& env, const std::string& name) {
  for (const EnvVar& v : env)
    if (v.name == name) return &v;
  return nullptr;
}

std::string Value(const std::vector<EnvVar>& env, const std::string& name) {
  const EnvVar* v = Find(env, name);
  return v ? v->value : "<unset>";
}

struct ShellRun {
  int status = -1;
  std::string output;
};

ShellRun Shell(const std::string& cmd) {
  ShellRun r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string TempFile(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("accel-training-env-" + std::to_string(getpid()) + "-" + name))
                               .string();
  std::ofstream(path) << text;
  return path;
}

// ---------------------------------------------------------------------------------------------
// NCCL's pod-wide settings.

TEST(TrainingEnv, ExactHcaListOfPairedNicsInPciOrder) {
  TrainingSettings s = BuildTrainingSettings(HgxFabric(), {});
  EXPECT_EQ(Value(s.env, "NCCL_IB_HCA"),
            "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1");
  EXPECT_THAT(s.hcas, ElementsAre("mlx5_0:1", "mlx5_3:1", "mlx5_4:1", "mlx5_5:1", "mlx5_6:1",
                                  "mlx5_9:1", "mlx5_10:1", "mlx5_11:1"));
  EXPECT_THAT(Find(s.env, "NCCL_IB_HCA")->why, HasSubstr("8 NICs"));
  EXPECT_TRUE(s.warnings.empty()) << s.warnings.front();
}

TEST(TrainingEnv, SharedNicListedOnceAndPortKept) {
  Fabric f = HgxFabric();
  for (GpuNicPair& p : f.pairs) p.nic = p.gpu_index < 4 ? 0 : 6;  // 2 NICs for 8 GPUs
  f.nics[6].port = 2;
  TrainingSettings s = BuildTrainingSettings(f, {});
  EXPECT_EQ(Value(s.env, "NCCL_IB_HCA"), "=mlx5_0:1,mlx5_6:2");
  EXPECT_EQ(Value(s.ranks[5].env, "UCX_NET_DEVICES"), "mlx5_6:2");
}

TEST(TrainingEnv, SocketIfnameGetsExactPrefixUnlessGivenOne) {
  TrainingOptions o;
  EXPECT_EQ(Value(BuildTrainingSettings(HgxFabric(), o).env, "NCCL_SOCKET_IFNAME"), "=eth0");
  o.socket_ifname = "^docker,lo";
  EXPECT_EQ(Value(BuildTrainingSettings(HgxFabric(), o).env, "NCCL_SOCKET_IFNAME"), "^docker,lo");
  o.socket_ifname = "=net1";
  EXPECT_EQ(Value(BuildTrainingSettings(HgxFabric(), o).env, "NCCL_SOCKET_IFNAME"), "=net1");
  o.socket_ifname = "";
  EXPECT_EQ(Find(BuildTrainingSettings(HgxFabric(), o).env, "NCCL_SOCKET_IFNAME"), nullptr);
}

TEST(TrainingEnv, CrossNicFollowsFabricDesign) {
  TrainingOptions o;
  EXPECT_EQ(Find(BuildTrainingSettings(HgxFabric(), o).env, "NCCL_CROSS_NIC"), nullptr);
  o.fabric_design = "rail";
  EXPECT_EQ(Value(BuildTrainingSettings(HgxFabric(), o).env, "NCCL_CROSS_NIC"), "0");
  o.fabric_design = "any";
  EXPECT_EQ(Value(BuildTrainingSettings(HgxFabric(), o).env, "NCCL_CROSS_NIC"), "1");
  o.fabric_design = "dragonfly";
  TrainingSettings s = BuildTrainingSettings(HgxFabric(), o);
  EXPECT_EQ(Find(s.env, "NCCL_CROSS_NIC"), nullptr);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0], HasSubstr("dragonfly"));
}

TEST(TrainingEnv, OptionalVariables) {
  TrainingOptions o;
  TrainingSettings plain = BuildTrainingSettings(HgxFabric(), o);
  for (const char* name :
       {"NCCL_TOPO_FILE", "NCCL_IB_TC", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_IB_GID_INDEX",
        "NCCL_NET_GDR_LEVEL", "NCCL_P2P_DISABLE", "NCCL_IB_DISABLE"})
    EXPECT_EQ(Find(plain.env, name), nullptr) << name;
  EXPECT_EQ(Value(plain.env, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
  EXPECT_EQ(Value(plain.env, "UCX_TLS"), "rc,sm,self,cuda_copy,cuda_ipc");
  o.topo_file = "/var/run/nvidia-topologyd/virtualTopology.xml";
  o.ib_tc = 106;
  o.debug = true;
  TrainingSettings s = BuildTrainingSettings(HgxFabric(), o);
  EXPECT_EQ(Value(s.env, "NCCL_TOPO_FILE"), o.topo_file);
  EXPECT_EQ(Value(s.env, "NCCL_IB_TC"), "106");
  EXPECT_EQ(Value(s.env, "NCCL_DEBUG"), "INFO");
  EXPECT_EQ(Value(s.env, "NCCL_DEBUG_SUBSYS"), "INIT,ENV,GRAPH,NET");
}

TEST(TrainingEnv, AmdUsesRocmTransportsAndNoCudaOrder) {
  TrainingOptions o;
  o.accelerator_vendor = "amd";
  TrainingSettings s = BuildTrainingSettings(HgxFabric(), o);
  EXPECT_EQ(Value(s.env, "UCX_TLS"), "rc,sm,self,rocm_copy,rocm_ipc");
  EXPECT_EQ(Find(s.env, "CUDA_DEVICE_ORDER"), nullptr);
}

// ---------------------------------------------------------------------------------------------
// RoCE.

Fabric RoceFabric() {
  Fabric f = HgxFabric();
  for (FabricNic& n : f.nics) n.link_layer = "Ethernet";
  return f;
}

TEST(TrainingEnv, RoceLeavesGidIndexToNcclAndWarnsWithoutV2Gid) {
  TrainingOptions o;
  o.ib_tc = 106;
  for (const FabricNic& n : RoceFabric().nics) {
    NicPort p;
    p.rdma_device = n.rdma_device;
    p.port = n.port;
    p.link_layer = "Ethernet";
    p.state = "ACTIVE";
    p.netdev = n.netdev;
    p.roce_v2_gid = n.rdma_device != "mlx5_4";
    o.ports.push_back(p);
  }
  TrainingSettings s = BuildTrainingSettings(RoceFabric(), o);
  EXPECT_EQ(Find(s.env, "NCCL_IB_GID_INDEX"), nullptr);
  EXPECT_EQ(Find(s.env, "UCX_IB_GID_INDEX"), nullptr);
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0], HasSubstr("mlx5_4:1 has no RoCE v2 GID"));
  EXPECT_THAT(s.warnings[0], HasSubstr("ibp79s0"));
}

TEST(TrainingEnv, RoceWithoutTrafficClassWarns) {
  TrainingSettings s = BuildTrainingSettings(RoceFabric(), {});
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0], HasSubstr("--ib-tc"));
  // InfiniBand needs neither.
  EXPECT_TRUE(BuildTrainingSettings(HgxFabric(), {}).warnings.empty());
}

TEST(TrainingEnv, MixedLinkLayersWarn) {
  Fabric f = HgxFabric();
  f.nics[0].link_layer = "Ethernet";
  TrainingOptions o;
  o.ib_tc = 3;
  TrainingSettings s = BuildTrainingSettings(f, o);
  EXPECT_THAT(s.warnings, ::testing::Contains(HasSubstr("mix link layers")));
}

// ---------------------------------------------------------------------------------------------
// Per rank.

TEST(TrainingEnv, EveryRankGetsItsPairedNic) {
  TrainingSettings s = BuildTrainingSettings(HgxFabric(), {});
  ASSERT_EQ(s.ranks.size(), 8u);
  const char* want[] = {"mlx5_0:1", "mlx5_3:1", "mlx5_4:1",  "mlx5_5:1",
                        "mlx5_6:1", "mlx5_9:1", "mlx5_10:1", "mlx5_11:1"};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(s.ranks[i].local_rank, i);
    EXPECT_EQ(s.ranks[i].gpu_address, HgxFabric().pairs[i].gpu_address);
    EXPECT_EQ(Value(s.ranks[i].env, "UCX_NET_DEVICES"), want[i]);
  }
}

TEST(TrainingEnv, GpuWithoutNicOrFarNicWarns) {
  Fabric f = HgxFabric();
  f.pairs[2].nic = -1;
  f.pairs[3].path.type = PathType::kSys;
  f.notes.push_back("GPU 0000:52:00.0: no usable NIC");
  TrainingSettings s = BuildTrainingSettings(f, {});
  EXPECT_TRUE(s.ranks[2].env.empty());
  EXPECT_THAT(Value(s.env, "NCCL_IB_HCA"), Not(HasSubstr("mlx5_4")));
  EXPECT_THAT(s.warnings, ::testing::Contains(HasSubstr("0000:52:00.0 has no usable NIC")));
  EXPECT_THAT(s.warnings, ::testing::Contains(HasSubstr("through SYS")));
  EXPECT_THAT(s.notes, ElementsAre("GPU 0000:52:00.0: no usable NIC"));
  EXPECT_THAT(RenderEnvShell(s), HasSubstr("# note: GPU 0000:52:00.0: no usable NIC\n"));
}

TEST(TrainingEnv, NoNicsAtAll) {
  Fabric f = HgxFabric();
  for (GpuNicPair& p : f.pairs) p.nic = -1;
  TrainingSettings s = BuildTrainingSettings(f, {});
  EXPECT_EQ(Find(s.env, "NCCL_IB_HCA"), nullptr);
  EXPECT_EQ(Find(s.env, "UCX_TLS"), nullptr);
  EXPECT_THAT(s.warnings, ::testing::Contains(HasSubstr("TCP sockets")));
}

// ---------------------------------------------------------------------------------------------
// Renderings.

TEST(TrainingEnv, ShellOutputSourcesInRealShell) {
  TrainingOptions o;
  o.socket_ifname = "it's";  // a quote must survive
  o.fabric_design = "rail";
  const std::string path =
      TempFile("env.sh", RenderEnvShell(BuildTrainingSettings(HgxFabric(), o)));
  ShellRun r = Shell("LOCAL_RANK=6 sh -c '. \"" + path +
                     "\" && printf \"%s|%s|%s|%s\" \"$NCCL_IB_HCA\" \"$NCCL_SOCKET_IFNAME\" "
                     "\"$NCCL_CROSS_NIC\" \"$UCX_NET_DEVICES\"'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output,
            "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1|"
            "=it's|0|mlx5_10:1");
  // Without LOCAL_RANK only the pod-wide part applies, silently.
  r = Shell("env -u LOCAL_RANK sh -c '. \"" + path + "\" 2>&1; echo \"[$UCX_NET_DEVICES]\"'");
  EXPECT_EQ(r.output, "[]\n");
  std::remove(path.c_str());
}

TEST(TrainingEnv, ShellOutputHasWhyComments) {
  TrainingSettings s = BuildTrainingSettings(HgxFabric(), {});
  s.warnings.push_back("line one\nexport EVIL=1");
  const std::string text = RenderEnvShell(s);
  EXPECT_THAT(text, HasSubstr("# exact HCA list"));
  EXPECT_THAT(text, HasSubstr("# warning: line one export EVIL=1\n"));
  EXPECT_THAT(text, HasSubstr("case \"${LOCAL_RANK:-}\" in"));
}

TEST(TrainingEnv, WrapperExportsRankNicAndExecs) {
  const std::string path =
      TempFile("wrapper.sh", RenderRankWrapper(BuildTrainingSettings(HgxFabric(), {})));
  ShellRun r = Shell("LOCAL_RANK=3 sh '" + path + "' sh -c 'echo \"$UCX_NET_DEVICES $0 $1\"' a b");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.output, "mlx5_5:1 a b\n");
  r = Shell("LOCAL_RANK=9 sh '" + path + "' sh -c 'echo \"[$UCX_NET_DEVICES]\"' 2>&1");
  EXPECT_THAT(r.output, HasSubstr("LOCAL_RANK '9' is not one of 0..7"));
  EXPECT_THAT(r.output, HasSubstr("[]"));
  std::remove(path.c_str());
}

TEST(TrainingEnv, JsonReadsBack) {
  TrainingOptions o;
  o.debug = true;
  Fabric f = HgxFabric();
  f.pairs[1].nic = -1;
  const nlohmann::json doc = nlohmann::json::parse(RenderEnvJson(BuildTrainingSettings(f, o)));
  EXPECT_EQ(doc["env"]["NCCL_IB_HCA"],
            "=mlx5_0:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1");
  EXPECT_EQ(doc["env"]["NCCL_DEBUG"], "INFO");
  EXPECT_TRUE(doc["why"]["NCCL_IB_HCA"].is_string());
  ASSERT_EQ(doc["ranks"].size(), 8u);
  EXPECT_EQ(doc["ranks"][0]["local_rank"], 0);
  EXPECT_EQ(doc["ranks"][0]["gpu"], "0000:1b:00.0");
  EXPECT_EQ(doc["ranks"][0]["env"]["UCX_NET_DEVICES"], "mlx5_0:1");
  EXPECT_TRUE(doc["ranks"][1]["env"].empty());
  EXPECT_EQ(doc["warnings"].size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// PyTorchJob.

std::vector<YAML::Node> LoadJob(const TrainingOptions& o, const Fabric& f = HgxFabric()) {
  const std::string text = RenderPyTorchJob(BuildTrainingSettings(f, o), f, o);
  return YAML::LoadAll(text);
}

TEST(PyTorchJob, ConfigMapCarriesTheWrapper) {
  TrainingOptions o;
  o.job_name = "llm";
  std::vector<YAML::Node> docs = LoadJob(o);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0]["apiVersion"].as<std::string>(), "v1");
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "ConfigMap");
  EXPECT_EQ(docs[0]["metadata"]["name"].as<std::string>(), "llm-rank-env");
  EXPECT_EQ(docs[0]["data"]["rank-env.sh"].as<std::string>(),
            RenderRankWrapper(BuildTrainingSettings(HgxFabric(), o)));
}

TEST(PyTorchJob, PodTemplateHasEnvIpcLockShmAndResources) {
  TrainingOptions o;
  o.job_name = "llm";
  o.rdma_resource = "rdma/rdma_shared_device_a";
  o.nodes = 4;
  o.image = "nvcr.io/nvidia/pytorch:25.01-py3";
  std::vector<YAML::Node> docs = LoadJob(o);
  const YAML::Node job = docs[1];
  EXPECT_EQ(job["apiVersion"].as<std::string>(), "kubeflow.org/v1");
  EXPECT_EQ(job["kind"].as<std::string>(), "PyTorchJob");
  EXPECT_EQ(job["metadata"]["name"].as<std::string>(), "llm");
  EXPECT_EQ(job["spec"]["nprocPerNode"].as<std::string>(), "8");
  const YAML::Node replicas = job["spec"]["pytorchReplicaSpecs"];
  EXPECT_EQ(replicas["Master"]["replicas"].as<int>(), 1);
  EXPECT_EQ(replicas["Worker"]["replicas"].as<int>(), 3);
  for (const char* role : {"Master", "Worker"}) {
    SCOPED_TRACE(role);
    const YAML::Node spec = replicas[role]["template"]["spec"];
    const YAML::Node c = spec["containers"][0];
    EXPECT_EQ(c["name"].as<std::string>(), "pytorch");
    EXPECT_EQ(c["image"].as<std::string>(), o.image);
    std::map<std::string, std::string> env;
    for (const YAML::Node& e : c["env"])
      env[e["name"].as<std::string>()] = e["value"].as<std::string>();
    EXPECT_EQ(env["NCCL_IB_HCA"],
              "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1");
    EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "=eth0");
    EXPECT_EQ(env.count("UCX_NET_DEVICES"), 0u) << "per rank, not pod-wide";
    EXPECT_EQ(c["securityContext"]["capabilities"]["add"][0].as<std::string>(), "IPC_LOCK");
    EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"].as<int>(), 8);
    EXPECT_EQ(c["resources"]["limits"]["rdma/rdma_shared_device_a"].as<int>(), 1);
    std::map<std::string, std::string> mounts;
    for (const YAML::Node& m : c["volumeMounts"])
      mounts[m["name"].as<std::string>()] = m["mountPath"].as<std::string>();
    EXPECT_EQ(mounts["dshm"], "/dev/shm");
    EXPECT_EQ(mounts["rank-env"], "/etc/accel");
    EXPECT_EQ(spec["volumes"][0]["name"].as<std::string>(), "dshm");
    EXPECT_EQ(spec["volumes"][0]["emptyDir"]["medium"].as<std::string>(), "Memory");
    EXPECT_EQ(spec["volumes"][1]["configMap"]["name"].as<std::string>(), "llm-rank-env");
    EXPECT_EQ(spec["volumes"][1]["configMap"]["defaultMode"].as<int>(), 0755);
    std::vector<std::string> cmd = c["command"].as<std::vector<std::string>>();
    EXPECT_THAT(cmd, ::testing::IsSupersetOf({"torchrun", "--nproc-per-node=8", "--no-python",
                                            "/etc/accel/rank-env.sh"}));
  }
}

TEST(PyTorchJob, PerRailResourcePatternExpands) {
  TrainingOptions o;
  o.rdma_resource = "nvidia.com/rdma_rail%d";
  o.nodes = 1;
  std::vector<YAML::Node> docs = LoadJob(o);
  const YAML::Node replicas = docs[1]["spec"]["pytorchReplicaSpecs"];
  EXPECT_FALSE(replicas["Worker"]) << "one node: Master only";
  const YAML::Node limits =
      replicas["Master"]["template"]["spec"]["containers"][0]["resources"]["limits"];
  EXPECT_EQ(limits.size(), 9u);
  for (int k = 0; k < 8; ++k)
    EXPECT_EQ(limits["nvidia.com/rdma_rail" + std::to_string(k)].as<int>(), 1) << k;
}

TEST(PyTorchJob, HeaderExplainsAndWarns) {
  Fabric f = HgxFabric();
  f.pairs[0].nic = -1;
  TrainingOptions o;
  const std::string text = RenderPyTorchJob(BuildTrainingSettings(f, o), f, o);
  EXPECT_EQ(text.rfind("# Generated by accel fabric pod", 0), 0u);
  EXPECT_THAT(text, HasSubstr("No --rdma-resource given"));
  EXPECT_THAT(text, HasSubstr("# warning: GPU 0000:1b:00.0 has no usable NIC"));
  EXPECT_THAT(text, HasSubstr("rank-env.sh: |\n"));  // the script is a readable block
}

TEST(PyTorchJob, GpuResourceFollowsVendor) {
  TrainingOptions o;
  o.accelerator_vendor = "amd";
  std::vector<YAML::Node> docs = LoadJob(o);
  const YAML::Node limits = docs[1]["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
                                ["containers"][0]["resources"]["limits"];
  EXPECT_EQ(limits["amd.com/gpu"].as<int>(), 8);
  o.gpu_resource = "example.com/gpu";
  docs = LoadJob(o);
  EXPECT_EQ(docs[1]["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
                ["resources"]["limits"]["example.com/gpu"]
                    .as<int>(),
            8);
}

// ---------------------------------------------------------------------------------------------
// Invariants over random fabrics.

Fabric RandomFabric(std::mt19937& rng) {
  Fabric f;
  const int nics = std::uniform_int_distribution<int>(0, 12)(rng);
  const int gpus = std::uniform_int_distribution<int>(0, 16)(rng);
  for (int i = 0; i < nics; ++i) {
    FabricNic n;
    char addr[32];
    std::snprintf(addr, sizeof addr, "0000:%02x:00.%d", 0x10 + i / 2, i % 2);
    n.pci_address = addr;
    n.rdma_device = "mlx5_" + std::to_string(i);
    n.port = std::uniform_int_distribution<int>(1, 2)(rng);
    n.netdev = "ib" + std::to_string(i);
    n.link_layer = rng() % 4 == 0 ? "Ethernet" : "InfiniBand";
    f.nics.push_back(n);
  }
  for (int g = 0; g < gpus; ++g) {
    GpuNicPair p;
    char addr[32];
    std::snprintf(addr, sizeof addr, "0000:%02x:00.0", 0x80 + g);
    p.gpu_address = addr;
    p.gpu_index = g;
    p.nic = nics == 0 || rng() % 5 == 0 ? -1 : std::uniform_int_distribution<int>(0, nics - 1)(rng);
    p.path.type = static_cast<PathType>(std::uniform_int_distribution<int>(4, 9)(rng));
    f.gpus.push_back(addr);
    f.pairs.push_back(p);
  }
  return f;
}

TEST(TrainingEnvProperty, HcaListIsTheSortedSetOfUsedNicsAndRanksMatchPairs) {
  std::mt19937 rng(20260601);
  for (int iter = 0; iter < 3000; ++iter) {
    SCOPED_TRACE(iter);
    const Fabric f = RandomFabric(rng);
    TrainingOptions o;
    o.fabric_design = iter % 3 == 0 ? "rail" : "auto";
    const TrainingSettings s = BuildTrainingSettings(f, o);
    std::set<int> used;
    for (const GpuNicPair& p : f.pairs)
      if (p.nic >= 0) used.insert(p.nic);
    std::vector<std::string> want;
    for (int i : used) want.push_back(f.nics[i].rdma_device + ":" + std::to_string(f.nics[i].port));
    ASSERT_EQ(s.hcas, want);
    if (want.empty()) {
      ASSERT_EQ(Find(s.env, "NCCL_IB_HCA"), nullptr);
    } else {
      std::string joined;
      for (const std::string& h : want) joined += (joined.empty() ? "=" : ",") + h;
      ASSERT_EQ(Value(s.env, "NCCL_IB_HCA"), joined);
    }
    ASSERT_EQ(s.ranks.size(), f.pairs.size());
    for (size_t r = 0; r < s.ranks.size(); ++r) {
      const GpuNicPair& p = f.pairs[r];
      ASSERT_EQ(s.ranks[r].local_rank, static_cast<int>(r));
      if (p.nic < 0) {
        ASSERT_TRUE(s.ranks[r].env.empty());
      } else {
        ASSERT_EQ(Value(s.ranks[r].env, "UCX_NET_DEVICES"),
                  f.nics[p.nic].rdma_device + ":" + std::to_string(f.nics[p.nic].port));
      }
    }
    std::set<std::string> names;
    for (const EnvVar& v : s.env) ASSERT_TRUE(names.insert(v.name).second) << v.name;
    // The renderings never fail and the structured ones read back.
    ASSERT_NO_THROW(nlohmann::json::parse(RenderEnvJson(s)));
    ASSERT_NO_THROW(YAML::LoadAll(RenderPyTorchJob(s, f, o)));
    ASSERT_FALSE(RenderEnvShell(s).empty());
  }
}

// Shell quoting: any socket interface text comes back from sh unchanged.
TEST(TrainingEnvProperty, ShellQuotingRoundTrips) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab=^,'\"$`\\ !*?;&|<>(){}#~\t";
  std::string script;
  std::vector<std::string> values;
  for (int i = 0; i < 200; ++i) {
    std::string v = "x";
    const int len = std::uniform_int_distribution<int>(0, 12)(rng);
    for (int k = 0; k < len; ++k) v += alphabet[rng() % alphabet.size()];
    TrainingOptions o;
    o.socket_ifname = v;
    TrainingSettings s = BuildTrainingSettings(HgxFabric(), o);
    s.ranks.clear();
    script += RenderEnvShell(s) + "printf '%s\\n' \"$NCCL_SOCKET_IFNAME\"\n";
    values.push_back(v);
  }
  const std::string path = TempFile("quote.sh", script);
  ShellRun r = Shell("sh '" + path + "'");
  std::remove(path.c_str());
  ASSERT_EQ(r.status, 0) << r.output;
  std::string want;
  for (const std::string& v : values) want += "=" + v + "\n";
  EXPECT_EQ(r.output, want);
}

}  // namespace
}  // namespace accel::fabric
