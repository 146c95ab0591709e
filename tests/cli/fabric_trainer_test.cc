// accel fabric pod -o trainjob end to end: the built binary on the HGX H100 fixture writes a
// Kubeflow Trainer v2 ClusterTrainingRuntime + TrainJob (device plugin resources or a DRA
// claim template) that the Trainer CRDs accept; the PyTorchJob stays the default; bad flags are
// one line and exit status 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "cli/cli_test_util.h"
#include "support/crd_validate.h"

namespace accel::cli::testing {
namespace fabric_trainer_test {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kHgx = "--topology " + Src("fixtures/hosts/hgx-h100.json");

YAML::Node Container(const YAML::Node& runtime) {
  return runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
                ["template"]["spec"]["containers"][0];
}

TEST(FabricTrainerCli, DevicePluginTrainJob) {
  RunResult r = RunAccel("fabric pod " + kHgx +
                             " -o trainjob --rdma-resource rdma/rdma_shared_device_a --nodes 4 "
                             "--image nvcr.io/nvidia/pytorch:25.01-py3 --job llm-ft",
                         false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<YAML::Node> docs = YAML::LoadAll(r.output);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "ClusterTrainingRuntime");
  EXPECT_EQ(docs[1]["kind"].as<std::string>(), "TrainJob");
  EXPECT_EQ(docs[1]["metadata"]["name"].as<std::string>(), "llm-ft");
  EXPECT_EQ(docs[1]["spec"]["trainer"]["numNodes"].as<int>(), 4);
  const YAML::Node limits = Container(docs[0])["resources"]["limits"];
  EXPECT_EQ(limits["nvidia.com/gpu"].as<int>(), 8);
  EXPECT_EQ(limits["rdma/rdma_shared_device_a"].as<int>(), 1);
  EXPECT_THAT(r.output, HasSubstr("NCCL_IB_HCA"));

  ACCEL_REQUIRE_CRD_VALIDATOR();
  const test_support::CrdResult v = test_support::ValidateObjects(r.output, "cli-trainjob");
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

TEST(FabricTrainerCli, DraTrainJobWithTemplateAndRuntimeNames) {
  RunResult r = RunAccel("fabric pod " + kHgx +
                             " -o trainjob --claims dra --claim-template team-8-gpus "
                             "--runtime accel-torch-dra --nodes 2",
                         false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<YAML::Node> docs = YAML::LoadAll(r.output);
  ASSERT_EQ(docs.size(), 2u);
  const YAML::Node pod = docs[0]["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]
                             ["spec"]["template"]["spec"];
  EXPECT_EQ(pod["resourceClaims"][0]["resourceClaimTemplateName"].as<std::string>(),
            "team-8-gpus");
  EXPECT_EQ(docs[0]["metadata"]["name"].as<std::string>(), "accel-torch-dra");
  EXPECT_EQ(docs[1]["spec"]["runtimeRef"]["name"].as<std::string>(), "accel-torch-dra");
  EXPECT_THAT(r.output, Not(HasSubstr("- name: NCCL_IB_HCA")));

  // Two GPUs against the default 8-GPU template: said on stderr, the output still written.
  RunResult subset = RunShellCapture(std::string(ACCEL_BINARY) + " fabric pod " + kHgx +
                                     " -o trainjob --claims dra --gpus 1b:00.0,43:00.0 "
                                     "2>&1 >/dev/null");
  EXPECT_EQ(subset.exit_code, 0) << subset.output;
  EXPECT_THAT(subset.output,
              HasSubstr("accel fabric pod: warning: claim template 8-gpus-with-nics asks for 8"));

  ACCEL_REQUIRE_CRD_VALIDATOR();
  const test_support::CrdResult v = test_support::ValidateObjects(r.output, "cli-trainjob-dra");
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

TEST(FabricTrainerCli, PyTorchJobStaysTheDefault) {
  RunResult r = RunAccel("fabric pod " + kHgx + " --rdma-resource rdma/a", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<YAML::Node> docs = YAML::LoadAll(r.output);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[1]["kind"].as<std::string>(), "PyTorchJob");
  RunResult explicit_out = RunAccel("fabric pod " + kHgx + " --rdma-resource rdma/a -o pytorchjob",
                                    false);
  EXPECT_EQ(explicit_out.output, r.output);
}

TEST(FabricTrainerCli, BadFlagsAreOneLineAndExit2) {
  RunResult r = RunAccel("fabric pod " + kHgx + " --claims dra");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("accel fabric pod: "));
  EXPECT_THAT(r.output, HasSubstr("-o trainjob"));
  r = RunAccel("fabric pod " + kHgx + " -o trainjob --job Bad_Name");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--job"));
  r = RunAccel("fabric pod " + kHgx + " -o trainjob --job 9lives");
  EXPECT_EQ(r.exit_code, 2) << "a TrainJob name starts with a letter";
  r = RunAccel("fabric pod " + kHgx + " -o trainjob --claims dra --claim-template 'a b'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--claim-template"));
  r = RunAccel("fabric pod " + kHgx + " -o trainjob --runtime UPPER");
  EXPECT_EQ(r.exit_code, 2);
  r = RunAccel("fabric pod " + kHgx + " -o yaml");
  EXPECT_EQ(r.exit_code, 2);
  r = RunAccel("fabric pod " + kHgx + " -o trainjob --claims both");
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace accel::cli::testing
