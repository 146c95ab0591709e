// accel cluster check, as a user runs it: the example template is clean (exit 0, warnings shown);
// a template with a finding exits 1 and names the key and the fix, in the table and in JSON;
// bad input (the template, an --objects file, the --fleet store) exits 2 and creates nothing;
// --strict turns warnings into exit 1; --objects and --fleet (a SQLite store built here with
// `accel fleet host add`) add their checks.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace accel::cli {
namespace cluster_check_cmd_test {

namespace fs = std::filesystem;
using testing::FreshDir;
using testing::RunResult;
using testing::RunShellCapture;
using testing::Src;
using testing::WriteFile;

class ClusterCheckCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir(std::string("cluster-check-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `accel <args>` with every default store inside the test's directory.
  RunResult Accel(const std::string& args, bool merge_stderr = true) {
    const std::string env = "ACCEL_FLEET_STORE=sqlite:" + (dir_ / "default-fleet.db").string() +
                            " ACCEL_STATE=" + (dir_ / "default-state.db").string() + " HOME=" + dir_.string() + " ";
    return RunShellCapture(env + std::string(ACCEL_BINARY) + " " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null"));
  }

  nlohmann::json Json(const std::string& args, int code) {
    RunResult r = Accel(args, false);
    EXPECT_EQ(r.exit_code, code) << args << "\n" << r.output;
    try {
      return nlohmann::json::parse(r.output);
    } catch (const nlohmann::json::exception& e) {
      ADD_FAILURE() << args << ": not JSON (" << e.what() << "):\n" << r.output;
      return nlohmann::json::object();
    }
  }

  // A template file of `groups` on the example flavors and the HGX H100 fixture.
  std::string TemplateFile(const std::string& groups) {
    const fs::path p = dir_ / "t.yaml";
    WriteFile(p, "apiVersion: accel.cluster/v1\nkind: ClusterTemplate\nmetadata: {name: t1}\nspec:\n"
                 "  kubernetesVersion: v1.33.2\n"
                 "  flavors: [" + Src("examples/flavors/") + "]\n"
                 "  aliases: " + Src("examples/flavors/aliases.json") + "\n"
                 "  hypervisor: " + Src("fixtures/hosts/hgx-h100.json") + "\n"
                 "  nodeGroups:\n" + groups);
    return p.string();
  }

  void AddHosts(const std::string& db, const std::string& fixture, int n) {
    for (int i = 0; i < n; ++i) {
      RunResult r = Accel("fleet host add --store sqlite:" + db + " --topology " + Src("fixtures/hosts/" + fixture + ".json") +
                          " --name " + fixture + "-" + std::to_string(i));
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
  }

  fs::path dir_;
};

std::string Example() { return Src("examples/cluster/ai-prod.yaml"); }

TEST_F(ClusterCheckCmdTest, ExampleIsCleanWithWarnings) {
  RunResult r = Accel("cluster check " + Example());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cluster ai-prod"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("WARNING topology  spec.nodeGroups[0].kubelet.topologyManagerPolicy"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("fix: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\nclean, "), std::string::npos) << r.output;
  const nlohmann::json j = Json("cluster check " + Example() + " -o json", 0);
  EXPECT_EQ(j["schema"], "accel.cluster-check/v1");
  EXPECT_EQ(j["clean"], true);
  EXPECT_EQ(j["groups"].size(), 4u);
  EXPECT_GT(j["warnings"].get<int>(), 0);
  // --strict: warnings fail the check.
  EXPECT_EQ(Accel("cluster check " + Example() + " --strict").exit_code, 1);
}

TEST_F(ClusterCheckCmdTest, FindingExits1WithKeyAndFix) {
  const std::string t = TemplateFile("  - {name: g, flavor: gpu-1g, count: 1, vendor: nvidia, sharing: {mig: all-1g.5gb}}\n");
  RunResult r = Accel("cluster check " + t);
  ASSERT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("ERROR mig  spec.nodeGroups[0].sharing.mig"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 error"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("accel mig profiles --gpu H100-SXM5-80GB"), std::string::npos) << r.output;
  const nlohmann::json j = Json("cluster check " + t + " -o json", 1);
  EXPECT_EQ(j["clean"], false);
  EXPECT_EQ(j["errors"], 1);
  ASSERT_EQ(j["findings"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["findings"][0]["severity"], "error");
  EXPECT_EQ(j["findings"][0]["kind"], "mig");
  EXPECT_EQ(j["findings"][0]["group"], "g");
  EXPECT_FALSE(j["findings"][0]["fix"].get<std::string>().empty());
  // The vendor stack cannot write that config either: its objects are not checked, and it says so.
  EXPECT_EQ(j["findings"][1]["severity"], "warning");
  EXPECT_EQ(j["findings"][1]["group"], "");
  EXPECT_EQ(j["findings"][1]["key"], "spec.nodeGroups[0].sharing.mig");
}

TEST_F(ClusterCheckCmdTest, BadInputExits2AndCreatesNothing) {
  EXPECT_EQ(Accel("cluster check " + (dir_ / "missing.yaml").string()).exit_code, 2);
  WriteFile(dir_ / "bad.yaml", "apiVersion: accel.cluster/v1\nkind: ClusterTemplate\nspec: {nodeGroups: [{name: x}]}\n");
  RunResult r = Accel("cluster check " + (dir_ / "bad.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("spec.nodeGroups[0].flavor: is missing"), std::string::npos) << r.output;
  // An --objects file that holds no Kubernetes object.
  WriteFile(dir_ / "objects.yaml", "just: a mapping\n");
  r = Accel("cluster check " + Example() + " --objects " + (dir_ / "objects.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("document at line 1"), std::string::npos) << r.output;
  // A fleet store that does not exist is not created.
  const fs::path db = dir_ / "no-such-fleet.db";
  r = Accel("cluster check " + Example() + " --fleet sqlite:" + db.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no fleet store"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(db));
  EXPECT_EQ(Accel("cluster check " + Example() + " --fleet ftp://x").exit_code, 2);
  EXPECT_EQ(Accel("cluster check " + Example() + " -o yaml").exit_code, 2);
}

TEST_F(ClusterCheckCmdTest, ObjectsThatSelectOneGroupTwice) {
  WriteFile(dir_ / "drivers.yaml", R"(apiVersion: nvidia.com/v1
kind: ClusterPolicy
metadata: {name: cluster-policy}
spec: {driver: {enabled: true, useNvidiaDriverCRD: true}, mig: {strategy: single}}
---
apiVersion: nvidia.com/v1alpha1
kind: NVIDIADriver
metadata: {name: training}
spec: {driverType: gpu, nodeSelector: {accel.io/pool: training}}
---
apiVersion: nvidia.com/v1alpha1
kind: NVIDIADriver
metadata: {name: h100-train}
spec: {driverType: gpu, nodeSelector: {accel.io/node-group: h100-train}}
)");
  const nlohmann::json j = Json("cluster check " + Example() + " --objects " + (dir_ / "drivers.yaml").string() + " -o json", 1);
  EXPECT_GE(j["objects"].size(), 3u);  // the three given, then what the plan generates
  EXPECT_EQ(j["objects"][1], "NVIDIADriver/training");
  bool overlap = false;
  for (const auto& f : j["findings"])
    if (f["kind"] == "selector" && f["group"] == "h100-train" && f["severity"] == "error")
      overlap = f["problem"].get<std::string>().find("training, h100-train") != std::string::npos;
  EXPECT_TRUE(overlap) << j["findings"].dump(2);
}

TEST_F(ClusterCheckCmdTest, FleetFitsPerGroup) {
  const std::string db = (dir_ / "fleet.db").string();
  AddHosts(db, "hgx-h100", 4);
  AddHosts(db, "epyc-nps4-mi300x", 6);
  AddHosts(db, "gaudi2-8hpu", 2);
  nlohmann::json j = Json("cluster check " + Example() + " --fleet sqlite:" + db + " -o json", 0);
  EXPECT_EQ(j["fleet"]["hosts"], 12);
  for (const auto& g : j["groups"]) {
    EXPECT_EQ(g["fleet"]["fits_alone"], true) << g.dump(2);
    EXPECT_EQ(g["fleet"]["fits_together"], true) << g.dump(2);
  }
  EXPECT_EQ(j["groups"][0]["fleet"]["hardware_fit_hosts"], 4);
  EXPECT_EQ(j["groups"][0]["fleet"]["capacity"], 8);  // two 4-GPU VMs per HGX
  // Without the Gaudi hosts the Gaudi group fits no host.
  const std::string small = (dir_ / "small.db").string();
  AddHosts(small, "hgx-h100", 4);
  AddHosts(small, "epyc-nps4-mi300x", 6);
  j = Json("cluster check " + Example() + " --fleet sqlite:" + small + " -o json", 1);
  bool gaudi = false;
  for (const auto& f : j["findings"])
    gaudi = gaudi || (f["kind"] == "fleet" && f["group"] == "gaudi-train" && f["key"] == "spec.nodeGroups[2].flavor");
  EXPECT_TRUE(gaudi) << j["findings"].dump(2);
  RunResult r = Accel("cluster check " + Example() + " --fleet sqlite:" + small);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("fleet: the hardware of 0 of 10 hosts holds the flavor"), std::string::npos) << r.output;
}

TEST_F(ClusterCheckCmdTest, HelpTeaches) {
  RunResult r = Accel("cluster check --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* part : {"Examples:", "--fleet", "--objects", "--strict", "Exit status", "sum rule", "all-1g.5gb"})
    EXPECT_NE(r.output.find(part), std::string::npos) << part << "\n" << r.output;
}

}  // namespace
}  // namespace accel::cli
