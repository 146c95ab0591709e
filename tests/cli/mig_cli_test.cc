// `accel mig ...` as an operator runs it: profiles, layouts (-o json), validate's exit codes,
// plan (and its mig-parted output read back by validate), apply --dry-run and apply on the fake
// NVML.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace accel::cli::testing {
namespace {

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
  for (const char* m : {"A100-SXM4-40GB", "A30-24GB", "H100-SXM5-80GB", "H200-SXM5-141GB", "B200-180GB"}) {
    EXPECT_NE(r.output.find(m), std::string::npos) << m;
  }
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
