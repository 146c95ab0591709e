// End-to-end: `accel tune plan` as an operator runs it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace accel::cli::testing {
namespace tune_cli_test {

using ::testing::HasSubstr;

const std::string kHgx = " --topology " + Src("fixtures/hosts/hgx-h100.json");

TEST(TuneCli, PlansTheExampleFlavors) {
  RunResult r = RunAccel("tune plan --flavors " + Src("examples/flavors/gpu-1g.yaml") + " --aliases " +
                         Src("examples/flavors/aliases.json") + kHgx);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("Tuning plan for hgx-h100: 8 instances"));
  EXPECT_THAT(r.output, HasSubstr("hugepages=0:512,1:512"));
  EXPECT_THAT(r.output, HasSubstr("cpu_dedicated_set = 1-55,57-111,113-167,169-223"));
  EXPECT_THAT(r.output, HasSubstr("grubby --update-kernel=ALL"));
}

TEST(TuneCli, DirectoryCountsAndJson) {
  RunResult r = RunAccel("tune plan --flavors " + Src("examples/flavors") + kHgx +
                             " --count gpu-1g=2 --count numa2=1 --count gpu.h100.2x=0"
                             " --housekeeping-cores 2 -o json",
                         false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["schema"], "accel.tune-plan/v1");
  EXPECT_EQ(j["nodes"][0]["housekeeping"], "0-1,112-113");
  int gpu = 0;
  for (const auto& p : j["planned"]) gpu += p.get<std::string>().rfind("gpu-1g #", 0) == 0;
  EXPECT_EQ(gpu, 2);
}

TEST(TuneCli, ShortfallExitsOne) {
  RunResult r = RunAccel("tune plan --flavors " + Src("examples/flavors") + kHgx + " --count gpu-1g=9");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("gpu-1g: 1 of 9 instances does not fit"));
}

TEST(TuneCli, BadInputExitsTwo) {
  std::string flavors = " --flavors " + Src("examples/flavors");
  for (const std::string& args :
       {flavors + kHgx + " --count nope=1", flavors + kHgx + " --count gpu-1g",
        flavors + kHgx + " --count gpu-1g=-1", flavors + kHgx + " --housekeeping-cores 0",
        " --flavors /nonexistent.yaml" + kHgx, flavors + " --topology /nonexistent.json",
        " --flavors " + Src("examples/flavors/gpu-1g.yaml") + kHgx /* alias h100 unknown */,
        flavors + kHgx + " -o yaml", std::string(kHgx) /* --flavors missing */}) {
    RunResult r = RunAccel("tune plan" + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
  }
  RunResult r = RunAccel("tune plan" + flavors + kHgx + " --count nope=1");
  EXPECT_THAT(r.output, HasSubstr("accel tune plan: --count: nope: names no flavor"));
}

TEST(TuneCli, HelpTeachesWithExamples) {
  RunResult r = RunAccel("tune plan --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("Examples:"));
  EXPECT_THAT(r.output, HasSubstr("--count"));
  EXPECT_THAT(r.output, HasSubstr("--housekeeping-cores"));
}

}  // namespace
}  // namespace accel::cli::testing
