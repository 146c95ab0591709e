// `accel mig ...` as an operator runs it: profiles, layouts (-o json), validate's exit codes,
// plan (and its mig-parted output read back by validate), apply --dry-run and apply on the fake
// NVML.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "support/shared_fixture.h"

namespace accel::cli::testing {
namespace mig_cli_test {

class MigCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshDir("mig"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// `accel mig apply ...` on the fake NVML: 8 × H100, GPUs 4-7 in MIG mode with 7 × 1g.10gb.
  RunResult Apply(const std::string& args) {
    return RunAccel("mig apply --nvml-library " + std::string(ACCEL_FAKE_NVML) + " " + args);
  }
  std::string FakeEnv() const {
    return "FAKE_NVML_CONFIG=" + Src("tests/fakes/nvml/examples/h100x8-mig.json") + " ";
  }

  std::filesystem::path dir_;
};

TEST_F(MigCli, ProfilesListEveryModel) {
  RunResult r = RunAccel("mig profiles");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* m : {"A100-SXM4-40GB", "A30-24GB", "H100-SXM5-80GB", "H200-SXM5-141GB", "B200-180GB",
                        "GB200-186GB", "B300-269GB", "GB300-278GB", "RTX-PRO-6000-96GB"}) {
    EXPECT_NE(r.output.find(m), std::string::npos) << m;
  }
  // Blackwell's attributes, explained; GB200's other board names, noted.
  r = RunAccel("mig profiles --gpu 0x2BB5 --gpu GB200");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ATTRIBUTES"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("+me.all (every media engine; only -me beside it)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("+gfx (graphics APIs)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("-me (no media engine)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("also named 7g.189gb"), std::string::npos) << r.output;
  r = RunAccel("mig profiles --gpu RTX-PRO-6000-96GB -o json", /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto rtx = nlohmann::json::parse(r.output);
  ASSERT_EQ(rtx.size(), 1u);
  EXPECT_EQ(rtx[0]["profiles"][3]["name"], "1g.24gb+me.all");
  EXPECT_EQ(rtx[0]["profiles"][3]["attributes"], "+me.all");
  EXPECT_EQ(rtx[0]["profiles"][3]["all_media"], true);
  r = RunAccel("mig profiles --gpu 'NVIDIA H100 80GB HBM3' -o json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["model"], "H100-SXM5-80GB");

  r = RunAccel("mig profiles --gpu V100");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("unknown GPU model"), std::string::npos) << r.output;
}

TEST_F(MigCli, LayoutsJsonIsOneArrayOfNvidiasNineteen) {
  RunResult r = RunAccel(
      "mig layouts --gpu A100-SXM4-40GB --maximal "
      "--profiles 1g.5gb,2g.10gb,3g.20gb,4g.20gb,7g.40gb -o json",
      /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j.size(), 19u);
  EXPECT_TRUE(j[0].contains("slots"));
  EXPECT_TRUE(j[0].contains("instances"));

  r = RunAccel("mig layouts --gpu A100-SXM4-40GB --profiles 9g.99gb");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST_F(MigCli, ValidateExitCodes) {
  EXPECT_EQ(RunAccel("mig validate " + Src("examples/mig/h100-mixed.yaml")).exit_code, 0);
  EXPECT_EQ(RunAccel("mig validate " + Src("examples/mig/default-configs.yaml")).exit_code, 0);
  RunResult bad = RunAccel("mig validate " + Src("examples/mig/invalid.yaml"));
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("invalid.yaml:"), std::string::npos) << bad.output;

  EXPECT_EQ(RunAccel("mig validate " + (dir_ / "missing.yaml").string()).exit_code, 2);
  WriteFile(dir_ / "typo.yaml", "version: v1\nmig-configs:\n  x:\n    - devices: all\n"
                                "      mig-enabled: true\n      mig-devicez: {}\n");
  RunResult typo = RunAccel("mig validate " + (dir_ / "typo.yaml").string());
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.output.find("typo.yaml:"), std::string::npos) << typo.output;
}

TEST_F(MigCli, ValidateNvidiasDefaultConfigAndItsConfigMap) {
  for (const char* file : {"config-default.yaml", "0400_configmap.yaml"}) {
    const std::string path = test_support::SharedPath(std::string("peers/mig/") + file);
    ACCEL_REQUIRE_SHARED(path);
    RunResult r = RunAccel("mig validate " + path);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("81 configs, all valid (3 warnings)"), std::string::npos) << r.output;
    RunResult j = RunAccel("mig validate " + path + " -o json", /*merge_stderr=*/false);
    ASSERT_EQ(j.exit_code, 0) << j.output;
    auto json = nlohmann::json::parse(j.output);
    EXPECT_EQ(json["valid"], true);
    EXPECT_EQ(json["problems"].size(), 0u);
    EXPECT_EQ(json["warnings"].size(), 3u);
    EXPECT_EQ(json["warnings"][0]["severity"], "warning");
    EXPECT_EQ(json.contains("configmap"), std::string(file) == "0400_configmap.yaml");
  }
}

TEST_F(MigCli, ValidateConfigMapsAndTheirKeys) {
  RunResult ok = RunAccel("mig validate " + Src("examples/mig/configmap.yaml"));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("ConfigMap custom-mig-config, key \"config.yaml\""), std::string::npos) << ok.output;
  WriteFile(dir_ / "two.yaml",
            "kind: ConfigMap\nmetadata:\n  name: two\ndata:\n  a.yaml: |\n    version: v1\n"
            "    mig-configs:\n      off:\n        - devices: all\n          mig-enabled: false\n"
            "  b.yaml: |\n    version: v1\n    mig-configs:\n      bad:\n        - devices: all\n"
            "          mig-enabled: true\n          mig-devices: {\"3g.30gb\": 1}\n");
  RunResult which = RunAccel("mig validate " + (dir_ / "two.yaml").string());
  EXPECT_EQ(which.exit_code, 2) << which.output;
  EXPECT_NE(which.output.find("has 2 keys (\"a.yaml\", \"b.yaml\")"), std::string::npos) << which.output;
  EXPECT_EQ(RunAccel("mig validate " + (dir_ / "two.yaml").string() + " --key a.yaml").exit_code, 0);
  RunResult bad = RunAccel("mig validate " + (dir_ / "two.yaml").string() + " --key b.yaml");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("two.yaml:15: config 'bad'"), std::string::npos) << bad.output;
  RunResult plain = RunAccel("mig validate " + Src("examples/mig/h100-mixed.yaml") + " --key config.yaml");
  EXPECT_EQ(plain.exit_code, 2) << plain.output;
  EXPECT_NE(plain.output.find("not a Kubernetes ConfigMap"), std::string::npos) << plain.output;
}

TEST_F(MigCli, UnknownDeviceFilterWarnsAndPasses) {
  WriteFile(dir_ / "future.yaml",
            "version: v1\nmig-configs:\n  next-gen:\n    - device-filter: [\"0x999910DE\"]\n"
            "      devices: all\n      mig-enabled: true\n      mig-devices: {\"1g.40gb\": 7}\n");
  RunResult r = RunAccel("mig validate " + (dir_ / "future.yaml").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: config 'next-gen' entry 0: device-filter 0x999910DE is no GPU model"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("1 configs, all valid (1 warning)"), std::string::npos) << r.output;
}

TEST_F(MigCli, PlanAndItsMigPartedOutputValidate) {
  std::string files = "--fleet " + Src("examples/mig/fleet.yaml") + " --demand " +
                      Src("examples/mig/demand.yaml");
  RunResult table = RunAccel("mig plan " + files);
  EXPECT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("satisfied"), std::string::npos);

  RunResult json = RunAccel("mig plan " + files + " -o json", false);
  ASSERT_EQ(json.exit_code, 0);
  auto j = nlohmann::json::parse(json.output);
  EXPECT_EQ(j["summary"]["satisfied"], j["summary"]["demand"]);

  RunResult parted = RunAccel("mig plan " + files + " -o mig-parted", false);
  ASSERT_EQ(parted.exit_code, 0);
  WriteFile(dir_ / "plan.yaml", parted.output);
  RunResult check = RunAccel("mig validate " + (dir_ / "plan.yaml").string());
  EXPECT_EQ(check.exit_code, 0) << check.output << parted.output;
}

TEST_F(MigCli, ApplyDryRunThenApplyOnTheFakeNvml) {
  // GPU 4 is in MIG mode with 7 idle 1g.10gb: make it 3g.40gb + 4 × 1g.10gb.
  WriteFile(dir_ / "mig.yaml",
            "version: v1\nmig-configs:\n  split:\n    - devices: [4]\n      mig-enabled: true\n"
            "      mig-devices: {\"3g.40gb\": 1, \"1g.10gb\": 4}\n");
  std::filesystem::create_directories(dir_ / "features.d");
  std::string state = (dir_ / "features.d" / "accel-mig").string();
  std::string args = "--config " + (dir_ / "mig.yaml").string() + " --name split --state-file " + state;

  int dry_rc = Shell(FakeEnv() + ACCEL_BINARY + " mig apply --nvml-library " + ACCEL_FAKE_NVML +
                      " " + args + " --dry-run > " + (dir_ / "dry.txt").string() + " 2>&1");
  std::ifstream in(dir_ / "dry.txt");
  std::string out((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(dry_rc, 0) << out;
  EXPECT_NE(out.find("dry run"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(state)) << "a dry run writes no state";

  int rc = Shell(FakeEnv() + ACCEL_BINARY + " mig apply --nvml-library " + ACCEL_FAKE_NVML + " " +
                 args + " > " + (dir_ / "apply.txt").string() + " 2>&1");
  std::ifstream in2(dir_ / "apply.txt");
  std::string applied((std::istreambuf_iterator<char>(in2)), {});
  EXPECT_EQ(rc, 0) << applied;
  std::ifstream st(state);
  std::string labels((std::istreambuf_iterator<char>(st)), {});
  EXPECT_NE(labels.find("nvidia.com/mig.config=split"), std::string::npos) << labels;
  EXPECT_NE(labels.find("nvidia.com/mig.config.state=success"), std::string::npos) << labels;

  RunResult unknown = Apply("--config " + (dir_ / "mig.yaml").string() + " --name nope --no-state");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
}

}  // namespace
}  // namespace accel::cli::testing
