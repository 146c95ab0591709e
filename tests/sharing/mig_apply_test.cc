// `accel mig apply` as a library: PlanApply / ExecuteApply on a fleet of fake H100s (the fake
// libnvidia-ml.so.1, dlopened as in production) and the node-label state file.
#include "sharing/mig_apply.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.h"
#include "support/fake_nvml_setup.h"

namespace accel::sharing {
namespace mig_apply_test {

using nlohmann::json;
using ::testing::HasSubstr;
using Status = MigApplyGpu::Status;
using test_support::FakeCi;
using test_support::FakeGpu;

json Mig(std::vector<json> instances, int mode = 1) {
  return {{"mode", mode}, {"instances", instances}};
}

// Seven idle 1g.10gb (profile id 19) at slices 0..6, GI ids 10..16.
json SevenOnes() {
  std::vector<json> cis;
  for (unsigned s = 0; s < 7; ++s) cis.push_back(FakeCi(10 + s, 0, 19, s));
  return Mig(cis);
}

constexpr const char* kConfig = R"(version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-1g.10gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
  balanced:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    - devices: [1]
      mig-enabled: true
      mig-devices: {"1c.3g.40gb": 6}
    - device-filter: "0x233110DE"
      devices: all
      mig-enabled: true
      mig-devices: {"7g.80gb": 1}
  busy-friendly:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.40gb": 1, "1g.10gb": 4}
  two-threes:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.40gb": 2}
  all-enabled:
    - devices: all
      mig-enabled: true
      mig-devices: {}
  index-three:
    - devices: [3]
      mig-enabled: true
      mig-devices: {"7g.80gb": 1}
)";

class MigApplyTest : public test_support::FakeNvmlMigTest {
 protected:
  void SetUp() override { config_ = ParseMigPartedConfig(kConfig, "test.yaml"); }
  // MigLayout of GPU `gpu`; "off" with MIG off.
  std::string Layout(size_t gpu) {
    return gpus_[gpu]->Mode().current ? test_support::MigLayout(*gpus_[gpu]) : "off";
  }
  std::vector<std::string> Layouts() {
    std::vector<std::string> out;
    for (size_t i = 0; i < gpus_.size(); ++i) out.push_back(Layout(i));
    return out;
  }
  std::string Plan(const std::string& name) {
    plan_ = PlanApply(config_, name, gpus_);
    std::string out;
    for (const std::string& line : plan_.Describe()) out += line + "\n";
    return out;
  }

  MigPartedConfig config_;
  MigApplyPlan plan_;
};

TEST_F(MigApplyTest, FleetFromConfig) {
  json a10 = FakeGpu(3);
  a10["name"] = "NVIDIA A10";
  a10["pci_device_id"] = "0x223610DE";
  Open({FakeGpu(0, Mig({}, 0)), FakeGpu(1, Mig({})), FakeGpu(2, SevenOnes()), a10});
  std::string text = Plan("balanced");
  ASSERT_TRUE(plan_.ok()) << text;
  EXPECT_EQ(plan_.gpus[0].status, Status::kChange);
  EXPECT_EQ(plan_.gpus[0].steps.front().kind, MigApplyStep::Kind::kEnableMig);
  EXPECT_EQ(plan_.gpus[3].status, Status::kSkipped) << text;
  // GPU 2 keeps two of its seven 1g.10gb and destroys five.
  int destroyed = 0;
  for (const MigApplyStep& s : plan_.gpus[2].steps)
    destroyed += s.kind == MigApplyStep::Kind::kDestroyGpuInstance;
  EXPECT_EQ(destroyed, 5) << text;
  // GPU instances are created largest first.
  std::vector<int> sizes;
  for (const MigApplyStep& s : plan_.gpus[0].steps) {
    if (s.kind == MigApplyStep::Kind::kCreateGpuInstance) sizes.push_back(s.size);
  }
  EXPECT_THAT(sizes, ::testing::ElementsAre(4, 2, 1, 1)) << text;

  MigApplyResult result = ExecuteApply(plan_, gpus_);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(result.done.size(), plan_.StepCount());
  EXPECT_THAT(Layout(0),
              ::testing::AnyOf("14@0[2] 19@2[1] 19@3[1] 9@4[3]", "19@0[1] 19@1[1] 14@2[2] 9@4[3]"));
  EXPECT_EQ(Layout(1), "9@0[111] 9@4[111]");  // the later `devices: [1]` entry wins
  EXPECT_EQ(Layout(2), "19@0[1] 19@1[1] 14@2[2] 9@4[3]");
  EXPECT_EQ(Layout(3), "off");
  EXPECT_EQ(gpus_[2]->GpuInstances()[0].id, 10u);  // kept, not recreated
}

// An RTX PRO 6000 Blackwell as its driver lists it (`nvidia-smi mig -lgip`, IDs of the catalog;
// NVML profile indices 0xA-0x10 are Blackwell's +gfx, -me and +me.all), placements as the
// catalog infers them.
json FakeRtxPro6000() {
  auto profile = [](unsigned index, unsigned id, unsigned slices, unsigned count, const char* name,
                    std::vector<unsigned> starts) {
    return json{{"index", index},           {"id", id},
                {"slices", slices},         {"instance_count", count},
                {"memory_mb", 24186 * slices}, {"multiprocessors", 46 * slices},
                {"name", std::string("MIG ") + name},
                {"placements", {{"size", slices}, {"starts", starts}}}};
  };
  json gpu = FakeGpu(0);
  gpu["name"] = "NVIDIA RTX PRO 6000 Blackwell Server Edition";
  gpu["pci_device_id"] = "0x2BB510DE";
  gpu["mig"] = {{"mode", 1},
                {"max_devices", 4},
                {"instances", json::array()},
                {"profiles",
                 {profile(0x0, 14, 1, 4, "1g.24gb", {0, 1, 2, 3}),
                  profile(0x7, 21, 1, 1, "1g.24gb+me", {0, 1, 2, 3}),
                  profile(0xA, 47, 1, 4, "1g.24gb+gfx", {0, 1, 2, 3}),
                  profile(0xF, 65, 1, 1, "1g.24gb+me.all", {0, 1, 2, 3}),
                  profile(0xD, 67, 1, 4, "1g.24gb-me", {0, 1, 2, 3}),
                  profile(0x1, 5, 2, 2, "2g.48gb", {0, 2}),
                  profile(0xB, 35, 2, 2, "2g.48gb+gfx", {0, 2}),
                  profile(0x10, 64, 2, 1, "2g.48gb+me.all", {0, 2}),
                  profile(0xE, 66, 2, 2, "2g.48gb-me", {0, 2}),
                  profile(0x3, 0, 4, 1, "4g.96gb", {0}),
                  profile(0xC, 32, 4, 1, "4g.96gb+gfx", {0})}}};
  return gpu;
}

TEST_F(MigApplyTest, BlackwellAttributeProfilesApplyWithExplicitPlacements) {
  config_ = ParseMigPartedConfig(R"(version: v1
mig-configs:
  rtx-video:
    - device-filter: ["0x2BB510DE"]
      devices: all
      mig-enabled: true
      mig-devices: {"2g.48gb+me.all": 1, "1g.24gb-me": 2}
  rtx-graphics:
    - devices: all
      mig-enabled: true
      mig-devices: {"2g.48gb+gfx": 1, "1g.24gb+gfx": 2}
  rtx-bad:
    - devices: all
      mig-enabled: true
      mig-devices: {"2g.48gb+me.all": 1, "1g.24gb": 1}
)",
                                 "rtx.yaml");
  Open({FakeRtxPro6000()});
  std::string text = Plan("rtx-video");
  ASSERT_TRUE(plan_.ok()) << text;
  EXPECT_THAT(text, HasSubstr("RTX-PRO-6000-96GB")) << text;
  ASSERT_TRUE(ExecuteApply(plan_, gpus_).success);
  EXPECT_EQ(Layout(0), "64@0[2] 67@2[1] 67@3[1]");
  // Switching to graphics replaces every instance (no profile in common).
  text = Plan("rtx-graphics");
  ASSERT_TRUE(plan_.ok()) << text;
  ASSERT_TRUE(ExecuteApply(plan_, gpus_).success);
  EXPECT_EQ(Layout(0), "35@0[2] 47@2[1] 47@3[1]");
  // +me.all beside a plain 1g is refused before anything changes.
  text = Plan("rtx-bad");
  EXPECT_FALSE(plan_.ok()) << text;
  EXPECT_THAT(text, HasSubstr("+me.all")) << text;
  EXPECT_EQ(Layout(0), "35@0[2] 47@2[1] 47@3[1]");
}

TEST_F(MigApplyTest, DryRunChangesNothing) {
  Open({FakeGpu(0, Mig({}, 0)), FakeGpu(1, SevenOnes())});
  std::vector<std::string> before = Layouts();
  Plan("balanced");
  EXPECT_GT(plan_.StepCount(), 0u);
  EXPECT_EQ(Layouts(), before);
  EXPECT_FALSE(gpus_[0]->Mode().current);
}

TEST_F(MigApplyTest, SecondApplyHasNoSteps) {
  Open({FakeGpu(0, Mig({}, 0)), FakeGpu(1, SevenOnes()), FakeGpu(2, Mig({FakeCi(1, 0, 0, 0)}))});
  Plan("balanced");
  ASSERT_TRUE(ExecuteApply(plan_, gpus_).success);
  std::string text = Plan("balanced");
  EXPECT_EQ(plan_.StepCount(), 0u) << text;
  for (const MigApplyGpu& g : plan_.gpus) EXPECT_EQ(g.status, Status::kAlreadyApplied) << text;
  EXPECT_THAT(text, HasSubstr("GPU 0 (H100-SXM5-80GB): already applied"));
}

TEST_F(MigApplyTest, BusyInstanceIsKept) {
  // 2g@2 goes; the busy 3g@4 and its compute instances stay untouched.
  Open({FakeGpu(0, Mig({FakeCi(1, 0, 9, 4, 0, /*processes=*/1), FakeCi(7, 0, 19, 0),
                        FakeCi(8, 0, 19, 1), FakeCi(5, 0, 14, 2)}))});
  std::string text = Plan("busy-friendly");
  ASSERT_TRUE(plan_.ok()) << text;
  for (const MigApplyStep& s : plan_.gpus[0].steps) EXPECT_NE(s.gpu_instance_id, 1u) << text;
  MigApplyResult result = ExecuteApply(plan_, gpus_);
  ASSERT_TRUE(result.success) << result.error;
  EXPECT_EQ(Layout(0), "19@0[1] 19@1[1] 19@2[1] 19@3[1] 9@4[3]");
  EXPECT_EQ(gpus_[0]->GpuInstances()[4].id, 1u);
  EXPECT_TRUE(gpus_[0]->GpuInstances()[4].busy);
}

TEST_F(MigApplyTest, ConflictingBusyInstanceIsAnErrorAndNothingChanges) {
  Open({FakeGpu(0, Mig({FakeCi(1, 0, 9, 4, 0, /*processes=*/1)})), FakeGpu(1, Mig({}, 0))});
  std::vector<std::string> before = Layouts();
  std::string text = Plan("all-1g.10gb");
  EXPECT_FALSE(plan_.ok());
  EXPECT_EQ(plan_.gpus[0].status, Status::kError);
  EXPECT_THAT(plan_.gpus[0].reason, HasSubstr("busy GPU instance 1 (3g.40gb@4)"));
  EXPECT_EQ(plan_.gpus[1].status, Status::kChange);  // would change, but must not
  MigApplyResult result = ExecuteApply(plan_, gpus_);
  EXPECT_FALSE(result.success);
  EXPECT_TRUE(result.done.empty());
  EXPECT_EQ(Layouts(), before);
}

TEST_F(MigApplyTest, FailureMidApplyRollsBackExactly) {
  // GPU 0 applies fine; GPU 1 fails on its third GPU-instance creation. Both end as they began.
  std::vector<json> mixed = {FakeCi(2, 0, 14, 0),   FakeCi(3, 0, 19, 2),   FakeCi(4, 0, 19, 3),
                             FakeCi(1, 0, 9, 4, 1), FakeCi(1, 1, 9, 4, 1), FakeCi(1, 2, 9, 4, 1)};
  json failing = FakeGpu(1, Mig(mixed));
  failing["faults"] = {{{"function", "nvmlDeviceCreateGpuInstanceWithPlacement"},
                        {"error", "UNKNOWN"},
                        {"after_calls", 2},
                        {"times", 1}}};  // the rollback's own creations succeed
  Open({FakeGpu(0, Mig(mixed)), failing});
  std::vector<std::string> before = Layouts();
  EXPECT_EQ(before[1], "14@0[2] 19@2[1] 19@3[1] 9@4[111]");
  std::string text = Plan("all-1g.10gb");
  ASSERT_TRUE(plan_.ok()) << text;
  MigApplyResult result = ExecuteApply(plan_, gpus_);
  EXPECT_FALSE(result.success);
  EXPECT_THAT(result.error, HasSubstr("nvmlDeviceCreateGpuInstanceWithPlacement failed"));
  EXPECT_TRUE(result.rollback_errors.empty()) << result.rollback_errors.front();
  EXPECT_FALSE(result.rolled_back.empty());
  EXPECT_EQ(Layouts(), before);
}

TEST_F(MigApplyTest, FailureCreatingComputeInstancesRollsBack) {
  json gpu = FakeGpu(0, SevenOnes());
  gpu["faults"] = {{{"function", "nvmlGpuInstanceCreateComputeInstance"},
                    {"error", "INSUFFICIENT_RESOURCES"},
                    {"after_calls", 1},
                    {"times", 1}}};
  Open({gpu});
  std::vector<std::string> before = Layouts();
  Plan("balanced");
  MigApplyResult result = ExecuteApply(plan_, gpus_);
  EXPECT_FALSE(result.success);
  EXPECT_TRUE(result.rollback_errors.empty());
  EXPECT_EQ(Layouts(), before);
}

TEST_F(MigApplyTest, PendingModeChangeFailsAndIsUndone) {
  Open({FakeGpu(0, {{"mode", 0}, {"activation_status", "RESET_REQUIRED"}})});
  Plan("all-1g.10gb");
  MigApplyResult result = ExecuteApply(plan_, gpus_);
  EXPECT_FALSE(result.success);
  EXPECT_THAT(result.error, HasSubstr("pending until the GPU is reset"));
  EXPECT_FALSE(gpus_[0]->Mode().pending);
}

TEST_F(MigApplyTest, DisableMigDestroysIdleInstances) {
  Open({FakeGpu(0, SevenOnes()), FakeGpu(1, Mig({FakeCi(1, 0, 0, 0, 0, 1)}))});
  std::string text = Plan("all-disabled");
  EXPECT_EQ(plan_.gpus[1].status, Status::kError) << text;
  plan_.gpus.pop_back();  // apply only GPU 0
  ASSERT_TRUE(ExecuteApply(plan_, gpus_).success);
  EXPECT_EQ(Layout(0), "off");
}

TEST_F(MigApplyTest, PlacementTheDriverDoesNotOfferIsAnError) {
  // A driver whose 3g.40gb only starts at 0 (the catalog says 0 and 4).
  json profiles = json::array();
  profiles.push_back({{"index", 2},
                      {"id", 9},
                      {"slices", 3},
                      {"instance_count", 2},
                      {"memory_mb", 40448},
                      {"name", "MIG 3g.40gb"},
                      {"placements", {{"starts", {0}}, {"size", 4}}}});
  Open({FakeGpu(0, {{"mode", 1}, {"profiles", profiles}})});
  Plan("two-threes");
  EXPECT_FALSE(plan_.ok());
  EXPECT_THAT(plan_.gpus[0].reason, HasSubstr("does not offer 3g.40gb at memory slices 4-7"));
}

TEST_F(MigApplyTest, MatchingRules) {
  json a10 = FakeGpu(3);
  a10["pci_device_id"] = "0x223610DE";
  a10["name"] = "NVIDIA A10";
  Open({FakeGpu(0, Mig({})), FakeGpu(1, Mig({})), FakeGpu(2, Mig({})), a10});
  Plan("index-three");  // a non-MIG-capable GPU named explicitly with mig-enabled: true
  EXPECT_EQ(plan_.gpus[0].status, Status::kUntouched);
  EXPECT_EQ(plan_.gpus[3].status, Status::kError);
  EXPECT_THAT(plan_.gpus[3].reason, HasSubstr("not MIG-capable"));
  EXPECT_THROW(Plan("no-such-config"), InputError);
}

TEST_F(MigApplyTest, DeviceFilterAndEmptyMigDevices) {
  json pcie = FakeGpu(1, SevenOnes());
  pcie["pci_device_id"] = "0x233110DE";  // H100 PCIe: the third entry of "balanced" wins
  pcie["name"] = "NVIDIA H100 PCIe";
  Open({FakeGpu(0, SevenOnes()), pcie});
  Plan("balanced");
  ASSERT_TRUE(ExecuteApply(plan_, gpus_).success);
  EXPECT_EQ(Layout(0), "19@0[1] 19@1[1] 14@2[2] 9@4[3]");
  EXPECT_EQ(Layout(1), "0@0[7]");
  Plan("all-enabled");  // MIG on, no instances
  ASSERT_TRUE(ExecuteApply(plan_, gpus_).success);
  EXPECT_EQ(Layouts(), (std::vector<std::string>{"", ""}));
}

TEST_F(MigApplyTest, StateFile) {
  std::string dir = test_support::PerTestTempPath("_dir");
  ::mkdir(dir.c_str(), 0755);
  std::string path = dir + "/accel-mig";
  WriteMigConfigState(path, "all-1g.10gb", MigConfigState::kPending);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "nvidia.com/mig.config=all-1g.10gb\nnvidia.com/mig.config.state=pending\n");
  WriteMigConfigState(path, "all-1g.10gb", MigConfigState::kSuccess);
  auto labels = ReadMigConfigState(path);
  ASSERT_TRUE(labels);
  EXPECT_EQ(labels->config, "all-1g.10gb");
  EXPECT_EQ(labels->state, "success");
  WriteMigConfigState(path, "all-1g.10gb", MigConfigState::kFailed);
  EXPECT_EQ(ReadMigConfigState(path)->state, "failed");
  EXPECT_THROW(WriteMigConfigState(path, "bad name!", MigConfigState::kPending), InputError);
  // The OS refusing the write is a SystemError (common/error.h), not bad input.
  EXPECT_THROW(WriteMigConfigState(dir + "/missing/accel-mig", "x", MigConfigState::kPending),
               SystemError);
  EXPECT_FALSE(ReadMigConfigState(dir + "/none"));
  std::remove(path.c_str());
  EXPECT_EQ(::rmdir(dir.c_str()), 0);  // no temporary file left behind
}

}  // namespace
}  // namespace accel::sharing

namespace accel::sharing {
namespace mig_apply_test {

TEST_F(MigApplyTest, DescribeNamesEveryStep) {
  Open({FakeGpu(0, SevenOnes()), FakeGpu(1, Mig({FakeCi(1, 0, 9, 4, 1), FakeCi(1, 1, 9, 4, 2)}))});
  EXPECT_EQ(Plan("two-threes"),
            "GPU 0 (H100-SXM5-80GB): change: 1g.10gb@0 + 1g.10gb@1 + 1g.10gb@2 + 1g.10gb@3 + "
            "1g.10gb@4 + 1g.10gb@5 + 1g.10gb@6 -> 3g.40gb@0 + 3g.40gb@4\n"
            "  - destroy the compute instance (1c) of GPU instance 10 (1g.10gb@0)\n"
            "  - destroy the compute instance (1c) of GPU instance 11 (1g.10gb@1)\n"
            "  - destroy the compute instance (1c) of GPU instance 12 (1g.10gb@2)\n"
            "  - destroy the compute instance (1c) of GPU instance 13 (1g.10gb@3)\n"
            "  - destroy the compute instance (1c) of GPU instance 14 (1g.10gb@4)\n"
            "  - destroy the compute instance (1c) of GPU instance 15 (1g.10gb@5)\n"
            "  - destroy the compute instance (1c) of GPU instance 16 (1g.10gb@6)\n"
            "  - destroy GPU instance 10 (1g.10gb@0)\n"
            "  - destroy GPU instance 11 (1g.10gb@1)\n"
            "  - destroy GPU instance 12 (1g.10gb@2)\n"
            "  - destroy GPU instance 13 (1g.10gb@3)\n"
            "  - destroy GPU instance 14 (1g.10gb@4)\n"
            "  - destroy GPU instance 15 (1g.10gb@5)\n"
            "  - destroy GPU instance 16 (1g.10gb@6)\n"
            "  - create GPU instance 3g.40gb at memory slices 0-3 (profile id 9)\n"
            "  - create GPU instance 3g.40gb at memory slices 4-7 (profile id 9)\n"
            "  - create compute instance (3c) in the new 3g.40gb@0\n"
            "  - create compute instance (3c) in the new 3g.40gb@4\n"
            // An idle GPU instance that stays but whose compute instances change.
            "GPU 1 (H100-SXM5-80GB): change: 3g.40gb@4 -> 3g.40gb@0 + 3g.40gb@4\n"
            "  - destroy the 2 compute instances (2c+1c) of GPU instance 1 (3g.40gb@4)\n"
            "  - create GPU instance 3g.40gb at memory slices 0-3 (profile id 9)\n"
            "  - create compute instance (3c) in the new 3g.40gb@0\n"
            "  - create compute instance (3c) in GPU instance 1 (3g.40gb@4)\n");
}

}  // namespace
}  // namespace accel::sharing
