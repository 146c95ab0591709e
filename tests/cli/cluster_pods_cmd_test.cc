// accel cluster pods, as a user runs it on the example template: a training pod that fits one
// guest cell of the H100 group is admitted with a count per node (exit 0); one asking every GPU of
// the node is rejected with TopologyAffinityError (exit 1); JSON output; the pod on stdin; a
// Deployment, an unknown group or a missing file is bad input (exit 2).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace accel::cli {
namespace cluster_pods_cmd_test {

namespace fs = std::filesystem;
using testing::RunAccel;
using testing::RunResult;
using testing::RunShellCapture;
using testing::Src;
using testing::WriteFile;

class ClusterPodsCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("accel-cluster-pods-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string PodFile(const std::string& name, const std::string& limits) {
    const fs::path p = dir_ / (name + ".yaml");
    WriteFile(p, "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name +
                     "}\nspec:\n  containers:\n  - name: main\n    resources:\n      limits: " + limits + "\n");
    return p.string();
  }
  fs::path dir_;
};

std::string Example() { return Src("examples/cluster/ai-prod.yaml"); }

TEST_F(ClusterPodsCmdTest, AdmitsAPodThatFitsOneCellAndCountsThem) {
  const std::string pod = PodFile("trainer", "{cpu: 8, memory: 32Gi, nvidia.com/gpu: 2}");
  RunResult r = RunAccel("cluster pods " + Example() + " --group h100-train --pod " + pod);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pod trainer (Guaranteed) on node group h100-train"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ADMITTED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("per node: 2 such pods"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Insufficient nvidia.com/gpu"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("where the kubelet's own choice can differ"), std::string::npos) << r.output;

  r = RunAccel("cluster pods " + Example() + " --group h100-train --pod " + pod + " -o json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["schema"], "accel.cluster-pods/v1");
  EXPECT_EQ(j["admitted"], true);
  EXPECT_EQ(j["qos"], "Guaranteed");
  EXPECT_EQ(j["per_node"], 2);
  ASSERT_EQ(j["cells"].size(), 1u);
  EXPECT_EQ(j["cells"][0]["devices"]["nvidia.com/gpu"], 2);
  EXPECT_EQ(j["kubelet"]["topologyManagerPolicy"], "single-numa-node");
}

TEST_F(ClusterPodsCmdTest, RejectsAPodNoGuestCellHolds) {
  const std::string pod = PodFile("all-gpus", "{cpu: 8, memory: 32Gi, nvidia.com/gpu: 4}");
  RunResult r = RunAccel("cluster pods " + Example() + " --group h100-train --pod " + pod);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("REJECTED: TopologyAffinityError"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("4 nvidia.com/gpu does not fit one guest cell"), std::string::npos) << r.output;
  // Time-sliced MI300X replicas: at most one per container.
  const std::string two = PodFile("two", "{cpu: 2, memory: 8Gi, amd.com/gpu: 2}");
  r = RunAccel("cluster pods " + Example() + " --group mi300x-infer --pod " + two);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("UnexpectedAdmissionError"), std::string::npos) << r.output;
  // A resource the group does not advertise.
  r = RunAccel("cluster pods " + Example() + " --group system --pod " + pod);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("Insufficient"), std::string::npos) << r.output;
}

TEST_F(ClusterPodsCmdTest, ReadsThePodFromStdin) {
  const RunResult r = RunShellCapture(
      "printf '{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"web\"}, \"spec\": {\"containers\": "
      "[{\"name\": \"w\", \"resources\": {\"requests\": {\"cpu\": \"250m\", \"memory\": \"256Mi\"}}}]}}' | " +
      std::string(ACCEL_BINARY) + " cluster pods " + Example() + " --group system --pod - -o json 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["qos"], "Burstable");
  EXPECT_EQ(j["per_node"], 12);  // 3 CPUs allocatable / 250m
}

TEST_F(ClusterPodsCmdTest, BadInputExitsTwo) {
  const fs::path deploy = dir_ / "deploy.yaml";
  WriteFile(deploy, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {template: {spec: {containers: [{name: a}]}}}\n");
  RunResult r = RunAccel("cluster pods " + Example() + " --group system --pod " + deploy.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is Deployment"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("spec.template.spec"), std::string::npos) << r.output;
  const std::string pod = PodFile("p", "{cpu: 1, memory: 1Gi}");
  r = RunAccel("cluster pods " + Example() + " --group nope --pod " + pod);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("h100-train"), std::string::npos) << r.output;  // lists the groups
  r = RunAccel("cluster pods " + Example() + " --group system --pod " + (dir_ / "missing.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = RunAccel("cluster pods " + Example() + " --group system");
  EXPECT_NE(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace accel::cli
