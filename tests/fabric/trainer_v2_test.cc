// Kubeflow Trainer v2 output (RenderTrainerV2) for the HGX H100 fixture paired by the real
// pairing code: the runtime read back with yaml-cpp in both claim modes, the inline rank wrapper
// run through a real sh, the warnings, and both objects against the Trainer CRDs of
// ../shared/crds (skipped when absent).
#include "fabric/trainer_v2.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fabric/pairing.h"
#include "support/crd_validate.h"
#include "topology/sources.h"

namespace accel::fabric {
namespace trainer_v2_test {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

const char* kAllEight = "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1";

Fabric Hgx(const std::vector<std::string>& gpus = {}) {
  PairingOptions options;
  options.gpus = gpus;
  return PairGpusWithNics(
      topology::LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/hgx-h100.json"), {},
      options);
}

TrainingOptions Training() {
  TrainingOptions t;
  t.job_name = "llm";
  t.image = "nvcr.io/nvidia/pytorch:25.01-py3";
  t.nodes = 4;
  t.rdma_resource = "rdma/rdma_shared_device_a";
  return t;
}

struct Output {
  YAML::Node runtime, job, container, pod;
  std::string text;
};

Output Render(const Fabric& f, const TrainingOptions& t, const TrainerV2Options& o) {
  Output out;
  out.text = RenderTrainerV2(BuildTrainingSettings(f, t), t, o);
  std::vector<YAML::Node> docs = YAML::LoadAll(out.text);
  EXPECT_EQ(docs.size(), 2u);
  if (docs.size() != 2) return out;
  out.runtime = docs[0];
  out.job = docs[1];
  out.pod = out.runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
                       ["template"]["spec"];
  out.container = out.pod["containers"][0];
  return out;
}

std::map<std::string, std::string> Env(const YAML::Node& container) {
  std::map<std::string, std::string> out;
  for (const YAML::Node& e : container["env"])
    out[e["name"].as<std::string>()] = e["value"].as<std::string>();
  return out;
}

// Runs the container's inline wrapper as torchrun would (`sh -c SCRIPT accel-rank-env PROGRAM`)
// with `env` prefixed, PROGRAM printing UCX_NET_DEVICES.
std::string RunWrapper(const YAML::Node& container, const std::string& env) {
  const YAML::Node command = container["command"];
  EXPECT_EQ(command[2].as<std::string>(), "sh");
  EXPECT_EQ(command[3].as<std::string>(), "-c");
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     ("accel-trainer-wrapper-" + std::to_string(::getpid()));
  std::ofstream(file) << command[4].as<std::string>();
  const std::string cmd = "env -i " + env + " sh " + file.string() +
                          " sh -c 'echo \"UCX=${UCX_NET_DEVICES:-unset}\"' 2>/dev/null";
  std::string output;
  if (FILE* pipe = ::popen(cmd.c_str(), "r")) {
    std::array<char, 512> buf{};
    size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) output.append(buf.data(), n);
    ::pclose(pipe);
  }
  std::filesystem::remove(file);
  return output;
}

TEST(TrainerV2, DevicePluginRuntimeCarriesTheFabricSettings) {
  Output o = Render(Hgx(), Training(), {});
  EXPECT_EQ(o.runtime["apiVersion"].as<std::string>(), "trainer.kubeflow.org/v1alpha1");
  EXPECT_EQ(o.runtime["kind"].as<std::string>(), "ClusterTrainingRuntime");
  EXPECT_EQ(o.runtime["metadata"]["name"].as<std::string>(), "accel-torch-distributed");
  EXPECT_EQ(o.runtime["metadata"]["labels"]["trainer.kubeflow.org/framework"].as<std::string>(),
            "torch");
  EXPECT_EQ(o.runtime["spec"]["mlPolicy"]["numNodes"].as<int>(), 4);
  EXPECT_TRUE(o.runtime["spec"]["mlPolicy"]["torch"].IsMap());
  EXPECT_EQ(o.container["name"].as<std::string>(), "node");
  auto env = Env(o.container);
  EXPECT_EQ(env["NCCL_IB_HCA"], kAllEight);
  EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "=eth0");
  EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  EXPECT_EQ(o.container["securityContext"]["capabilities"]["add"][0].as<std::string>(),
            "IPC_LOCK");
  const YAML::Node limits = o.container["resources"]["limits"];
  EXPECT_EQ(limits["nvidia.com/gpu"].as<int>(), 8);
  EXPECT_EQ(limits["rdma/rdma_shared_device_a"].as<int>(), 1);
  EXPECT_FALSE(o.container["resources"]["claims"]);
  EXPECT_FALSE(o.pod["resourceClaims"]);
  EXPECT_EQ(o.container["volumeMounts"][0]["mountPath"].as<std::string>(), "/dev/shm");
  EXPECT_EQ(o.pod["volumes"][0]["emptyDir"]["medium"].as<std::string>(), "Memory");
  EXPECT_EQ(o.container["command"][0].as<std::string>(), "torchrun");

  EXPECT_EQ(o.job["kind"].as<std::string>(), "TrainJob");
  EXPECT_EQ(o.job["metadata"]["name"].as<std::string>(), "llm");
  EXPECT_EQ(o.job["spec"]["runtimeRef"]["name"].as<std::string>(), "accel-torch-distributed");
  EXPECT_EQ(o.job["spec"]["runtimeRef"]["kind"].as<std::string>(), "ClusterTrainingRuntime");
  const YAML::Node trainer = o.job["spec"]["trainer"];
  EXPECT_EQ(trainer["numNodes"].as<int>(), 4);
  EXPECT_EQ(trainer["numProcPerNode"].as<int>(), 8);
  EXPECT_EQ(trainer["image"].as<std::string>(), "nvcr.io/nvidia/pytorch:25.01-py3");
  // args, not command: a TrainJob's command would replace the runtime's wrapper.
  EXPECT_FALSE(trainer["command"]);
  EXPECT_EQ(trainer["args"][0].as<std::string>(), "python");
  EXPECT_THAT(o.text, HasSubstr("kubeflow/trainer#1966"));
}

TEST(TrainerV2, PerRailResourcesAndGpuSubset) {
  TrainingOptions t = Training();
  t.rdma_resource = "nvidia.com/rdma_rail%d";
  Output o = Render(Hgx({"1b:00.0", "df:00.0"}), t, {});
  const YAML::Node limits = o.container["resources"]["limits"];
  EXPECT_EQ(limits["nvidia.com/gpu"].as<int>(), 2);
  EXPECT_EQ(limits["nvidia.com/rdma_rail0"].as<int>(), 1);
  EXPECT_EQ(limits["nvidia.com/rdma_rail1"].as<int>(), 1);
  EXPECT_FALSE(limits["nvidia.com/rdma_rail2"]);
  EXPECT_EQ(Env(o.container)["NCCL_IB_HCA"], "=mlx5_0:1,mlx5_11:1");
  EXPECT_EQ(o.job["spec"]["trainer"]["numProcPerNode"].as<int>(), 2);
}

TEST(TrainerV2, DraRuntimeClaimsATemplateAndLeavesTheHcaListToTheDriver) {
  TrainerV2Options opts;
  opts.claims = ClaimMode::kDra;
  opts.runtime_name = "accel-torch-dra";
  Output o = Render(Hgx(), Training(), opts);
  const YAML::Node claims = o.pod["resourceClaims"];
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0]["name"].as<std::string>(), kTrainerClaimName);
  EXPECT_EQ(claims[0]["resourceClaimTemplateName"].as<std::string>(), "8-gpus-with-nics");
  EXPECT_EQ(o.container["resources"]["claims"][0]["name"].as<std::string>(), kTrainerClaimName);
  EXPECT_FALSE(o.container["resources"]["limits"]);
  auto env = Env(o.container);
  EXPECT_EQ(env.count("NCCL_IB_HCA"), 0u);
  EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "=eth0");
  EXPECT_EQ(o.job["spec"]["runtimeRef"]["name"].as<std::string>(), "accel-torch-dra");
  EXPECT_THAT(TrainerV2Warnings(BuildTrainingSettings(Hgx(), Training()), Training(), opts),
              IsEmpty());
}

TEST(TrainerV2, WrapperSetsEachRanksNic) {
  Output plugin = Render(Hgx(), Training(), {});
  EXPECT_EQ(RunWrapper(plugin.container, "LOCAL_RANK=3"), "UCX=mlx5_5:1\n");
  EXPECT_EQ(RunWrapper(plugin.container, "LOCAL_RANK=7"), "UCX=mlx5_11:1\n");
  EXPECT_EQ(RunWrapper(plugin.container, "LOCAL_RANK=9"), "UCX=unset\n");

  TrainerV2Options dra;
  dra.claims = ClaimMode::kDra;
  Output o = Render(Hgx(), Training(), dra);
  // The driver's per-rank table (claim_preparer.h): ACCEL_UCX_NET_DEVICES_<local rank>.
  EXPECT_EQ(RunWrapper(o.container, "LOCAL_RANK=2 ACCEL_UCX_NET_DEVICES_2=mlx5_4:1"),
            "UCX=mlx5_4:1\n");
  EXPECT_EQ(RunWrapper(o.container, "LOCAL_RANK=5"), "UCX=unset\n");
  EXPECT_EQ(RunWrapper(o.container, ""), "UCX=unset\n");
  // Never evaluated as shell: only digits index the table.
  EXPECT_EQ(RunWrapper(o.container, "'LOCAL_RANK=1}; echo pwned; #'"), "UCX=unset\n");
}

TEST(TrainerV2, WarnsWhenTheTemplateOrResourcesDoNotFit) {
  TrainerV2Options dra;
  dra.claims = ClaimMode::kDra;
  const Fabric two = Hgx({"1b:00.0", "43:00.0"});
  const TrainingSettings s = BuildTrainingSettings(two, Training());
  EXPECT_THAT(TrainerV2Warnings(s, Training(), dra),
              Contains(HasSubstr("8-gpus-with-nics asks for 8 GPU(s) but 2 are paired")));
  dra.claim_template = "gpu-with-nic";
  EXPECT_THAT(TrainerV2Warnings(BuildTrainingSettings(Hgx({"1b:00.0"}), Training()), Training(),
                                dra),
              IsEmpty());
  dra.claim_template = "my-team-claim";  // no count in the name: nothing to compare
  EXPECT_THAT(TrainerV2Warnings(s, Training(), dra), IsEmpty());
  TrainingOptions bare = Training();
  bare.rdma_resource.clear();
  EXPECT_THAT(TrainerV2Warnings(s, bare, {}), Contains(HasSubstr("no --rdma-resource")));
  EXPECT_THAT(RenderTrainerV2(s, bare, {}), HasSubstr("# warning: no --rdma-resource"));
}

TEST(TrainerV2, ObjectsValidateAgainstTheTrainerCrds) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  TrainingOptions t = Training();
  t.rdma_resource = "nvidia.com/rdma_rail%d";
  t.debug = true;
  test_support::CrdResult r =
      test_support::ValidateObjects(Render(Hgx(), t, {}).text, "trainer-v2-device-plugin");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  TrainerV2Options dra;
  dra.claims = ClaimMode::kDra;
  r = test_support::ValidateObjects(Render(Hgx(), Training(), dra).text, "trainer-v2-dra");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace accel::fabric
