// accel cluster plan, as a user runs it: the example template plans every group with a clean
// kubelet (exit 0) and writes the files; a broken kubelet override exits 1 and writes nothing
// (unless --force); a bad template exits 2 and writes nothing; a second plan replaces the
// directory as a whole.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "cli/cli_test_util.h"
#include "common/structured_file.h"

namespace accel::cli {
namespace cluster_cmd_test {

namespace fs = std::filesystem;
using testing::RunAccel;
using testing::RunResult;
using testing::Src;
using testing::WriteFile;

class ClusterCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("accel-cluster-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string Example() { return Src("examples/cluster/ai-prod.yaml"); }

TEST_F(ClusterCmdTest, PlansTheExampleAndWritesEveryGroupsFiles) {
  const fs::path out = dir_ / "plan";
  RunResult r = RunAccel("cluster plan " + Example() + " --out " + out.string() + " -o json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json plan = nlohmann::json::parse(r.output);
  EXPECT_EQ(plan["schema"], "accel.cluster-plan/v1");
  ASSERT_EQ(plan["groups"].size(), 4u);
  for (const auto& g : plan["groups"]) {
    const std::string name = g["name"].get<std::string>();
    EXPECT_TRUE(g["findings"].empty()) << name << ": " << g["findings"].dump(2);
    for (const char* file : {"guest-layout.json", "kubelet-config.yaml", "kubelet.conf.d/50-accel.conf",
                             "kubeadm/patches/kubeletconfiguration+strategic.json"})
      EXPECT_TRUE(fs::exists(out / name / file)) << name << "/" << file;
    // The YAML the kubelet reads is the JSON the plan reports.
    const YAML::Node y = YAML::LoadFile((out / name / "kubelet-config.yaml").string());
    EXPECT_EQ(y["kind"].as<std::string>(), "KubeletConfiguration") << name;
    EXPECT_EQ(y["cpuManagerPolicy"].as<std::string>(), g["kubelet"]["config"]["cpuManagerPolicy"].get<std::string>());
    const nlohmann::json patch =
        nlohmann::json::parse(ReadWholeFile((out / name / "kubeadm/patches/kubeletconfiguration+strategic.json").string()));
    EXPECT_EQ(patch, g["kubelet"]["config"]) << name;
  }
  EXPECT_TRUE(fs::exists(out / "plan.json"));
  // The H100 group: two guest cells, each GPU behind its cell, so single-numa-node; 1G-backed
  // cells get guest 1Gi pools and the boot unit that sets them per node.
  const auto& h100 = plan["groups"][0];
  EXPECT_EQ(h100["name"], "h100-train");
  EXPECT_EQ(h100["layout"]["cells"].size(), 2u);
  for (const auto& d : h100["layout"]["devices"]) EXPECT_GE(d["guest_cell"].get<int>(), 0);
  EXPECT_EQ(h100["kubelet"]["config"]["topologyManagerPolicy"], "single-numa-node");
  EXPECT_EQ(h100["kubelet"]["config"]["memoryManagerPolicy"], "Static");
  EXPECT_EQ(h100["kubelet"]["config"]["maxPods"], 64);  // the group's override
  const std::string unit = ReadWholeFile((out / "h100-train/hugepages/accel-guest-hugepages.service").string());
  EXPECT_NE(unit.find("node1/hugepages/hugepages-1048576kB/nr_hugepages"), std::string::npos) << unit;
  EXPECT_NE(ReadWholeFile((out / "h100-train/hugepages/kernel-cmdline.txt").string()).find("hugepagesz=1G"),
            std::string::npos);
  // Every choice says why.
  for (const auto& c : h100["kubelet"]["choices"]) EXPECT_FALSE(c["reason"].get<std::string>().empty()) << c.dump();

  // The table explains the same choices.
  RunResult table = RunAccel("cluster plan " + Example());
  EXPECT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("why: every accelerator and NIC the group offers reports one guest cell"),
            std::string::npos)
      << table.output;

  // A second plan replaces the directory: a file put there is gone.
  WriteFile(out / "stale.txt", "old");
  ASSERT_EQ(RunAccel("cluster plan " + Example() + " --out " + out.string()).exit_code, 0);
  EXPECT_FALSE(fs::exists(out / "stale.txt"));
  EXPECT_TRUE(fs::exists(out / "plan.json"));
}

// A template whose kubelet override breaks a rule: exit 1, the problem and its fix, nothing
// written; --force writes.
TEST_F(ClusterCmdTest, ABrokenKubeletRuleExits1AndWritesNothing) {
  // single-numa-node (derived: every GPU sits behind its guest cell) with align-by-socket: the
  // kubelet refuses the pair.
  const std::string with_option =
      "apiVersion: accel.cluster/v1\nkind: ClusterTemplate\nmetadata: {name: broken}\n"
      "spec:\n  kubernetesVersion: v1.33.2\n  flavors: [" + Src("examples/flavors/gpu-4-2cell.yaml") + "]\n"
      "  aliases: " + Src("examples/flavors/aliases.json") + "\n"
      "  hypervisor: " + Src("fixtures/hosts/hgx-h100.json") + "\n"
      "  nodeGroups:\n  - name: h100\n    flavor: gpu-4-2cell\n    count: 1\n    vendor: nvidia\n"
      "    kubelet:\n      cpuManagerPolicyOptions: {align-by-socket: \"true\"}\n";
  WriteFile(dir_ / "broken.yaml", with_option);
  const fs::path out = dir_ / "plan";
  RunResult r = RunAccel("cluster plan " + (dir_ / "broken.yaml").string() + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("align-by-socket"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fix:"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
  r = RunAccel("cluster plan " + (dir_ / "broken.yaml").string() + " --out " + out.string() + " --force");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(fs::exists(out / "plan.json"));
}

TEST_F(ClusterCmdTest, BadTemplateExits2AndWritesNothing) {
  WriteFile(dir_ / "bad.yaml", "apiVersion: accel.cluster/v1\nkind: ClusterTemplate\nmetadata: {name: x}\n"
                               "spec: {kubernetesVersion: v1.33.2, flavors: [nowhere/], nodeGroups: []}\n");
  const fs::path out = dir_ / "plan";
  RunResult r = RunAccel("cluster plan " + (dir_ / "bad.yaml").string() + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("spec.nodeGroups"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(RunAccel("cluster plan " + (dir_ / "missing.yaml").string()).exit_code, 2);
}


TEST_F(ClusterCmdTest, PlansOnAFleetAndClaimsAllOrNothing) {
  const std::string store = "sqlite:" + (dir_ / "fleet.db").string();
  auto add = [&](const std::string& name, const std::string& fixture) {
    RunResult r = RunAccel("fleet host add --store " + store + " --topology " + Src("fixtures/hosts/" + fixture) +
                               " --name " + name, true);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  };
  for (int i = 1; i <= 4; ++i) add("hgx-" + std::to_string(i), "hgx-h100.json");
  for (int i = 1; i <= 6; ++i) add("mi-" + std::to_string(i), "epyc-nps4-mi300x.json");
  add("gaudi-1", "gaudi2-8hpu.json");
  // One Gaudi host for a group of 2: exit 1, the reason, nothing claimed, nothing written.
  const fs::path out = dir_ / "plan";
  RunResult r = RunAccel("cluster plan " + Example() + " --fleet " + store + " --claim --out " + out.string(), true);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("node group gaudi-train: 1 of 2 VMs fit on distinct hosts"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
  RunResult claims = RunAccel("fleet claims --store " + store + " -o json", false);
  ASSERT_EQ(claims.exit_code, 0) << claims.output;
  EXPECT_EQ(nlohmann::json::parse(claims.output)["claims"].size(), 0u) << claims.output;
  // A second Gaudi host: every group placed and claimed, the VMs in plan.json.
  add("gaudi-2", "gaudi2-8hpu.json");
  r = RunAccel("cluster plan " + Example() + " --fleet " + store + " --claim --out " + out.string() + " -o json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json plan = nlohmann::json::parse(r.output);
  size_t vms = 0;
  for (const auto& g : plan["groups"]) {
    for (const auto& vm : g["vms"]) EXPECT_TRUE(vm.contains("claim")) << vm.dump();
    vms += g["vms"].size();
  }
  EXPECT_EQ(vms, 15u);
  EXPECT_EQ(plan["groups"][0]["vms"][0]["host"].get<std::string>().rfind("hgx-", 0), 0u);
  claims = RunAccel("fleet claims --store " + store + " -o json", false);
  EXPECT_EQ(nlohmann::json::parse(claims.output)["claims"].size(), 15u);
  EXPECT_TRUE(fs::exists(out / "plan.json"));
  // --claim needs --fleet.
  EXPECT_EQ(RunAccel("cluster plan " + Example() + " --claim", true).exit_code, 2);
}

}  // namespace
}  // namespace accel::cli
