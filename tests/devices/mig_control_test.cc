// MigControl over the fake libnvidia-ml.so.1 (tests/fakes/nvml), loaded with dlopen as in
// production. Each test writes its own fake config; the fake re-reads it at the next init, so
// every test closes its GPUs before the next one opens.
#include "devices/mig_control.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/fake_nvml_setup.h"

namespace accel::devices {
namespace mig_control_test {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using test_support::FakeCi;
using test_support::FakeGpu;
using test_support::MigLayout;

using MigControlTest = test_support::FakeNvmlMigTest;

TEST_F(MigControlTest, IdentityModeAndProfiles) {
  json plain = FakeGpu(1);
  plain["name"] = "NVIDIA A10";
  plain["pci_device_id"] = "0x223610DE";
  Open({FakeGpu(0, {{"mode", 1}}), plain});
  ASSERT_EQ(gpus_.size(), 2u);
  MigControl& h100 = *gpus_[0];
  EXPECT_EQ(h100.index(), 0u);
  EXPECT_EQ(h100.product_name(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100.pci_id(), 0x233010DEu);
  EXPECT_EQ(h100.pci_subsystem_id(), 0x16C110DEu);
  EXPECT_TRUE(h100.mig_capable());
  EXPECT_TRUE(h100.Mode().current);
  std::vector<std::string> names;
  for (const MigDriverProfile& p : h100.Profiles())
    names.push_back(p.name + "=" + std::to_string(p.id));
  EXPECT_THAT(names, ElementsAre("1g.10gb=19", "2g.20gb=14", "3g.40gb=9", "4g.40gb=5", "7g.80gb=0",
                                 "1g.10gb+me=20", "1g.20gb=15"));
  EXPECT_EQ(h100.Profiles()[6].index, 9u);

  MigControl& a10 = *gpus_[1];
  EXPECT_FALSE(a10.mig_capable());
  EXPECT_FALSE(a10.Mode().current);
  EXPECT_TRUE(a10.Profiles().empty());
  EXPECT_TRUE(a10.GpuInstances().empty());
  EXPECT_THROW(a10.SetMigEnabled(true), BackendError);
}

TEST_F(MigControlTest, InstancesComputeInstancesAndBusy) {
  Open({FakeGpu(0, {{"mode", 1},
                    {"instances",
                     {FakeCi(7, 0, 19, 0), FakeCi(1, 0, 9, 4, 1),
                      FakeCi(1, 1, 9, 4, 1, /*processes=*/1), FakeCi(1, 2, 9, 4, 1)}}})});
  std::vector<MigGpuInstanceInfo> gis = gpus_[0]->GpuInstances();
  ASSERT_EQ(gis.size(), 2u);
  EXPECT_EQ(gis[0].id, 7u);
  EXPECT_EQ(gis[0].size, 1);
  EXPECT_FALSE(gis[0].busy);
  EXPECT_EQ(gis[1].id, 1u);
  EXPECT_EQ(gis[1].profile_id, 9u);
  EXPECT_EQ(gis[1].start, 4);
  EXPECT_EQ(gis[1].size, 4);
  EXPECT_TRUE(gis[1].busy);
  ASSERT_EQ(gis[1].compute_instances.size(), 3u);
  EXPECT_EQ(gis[1].compute_instances[2].start, 2);
  EXPECT_EQ(gis[1].compute_instances[2].slices, 1);
  EXPECT_TRUE(gpus_[0]->HasProcesses());
  EXPECT_EQ(MigLayout(*gpus_[0], /*mark_busy=*/true), "19@0[1] 9@4[111]*");
}

TEST_F(MigControlTest, PossiblePlacementsFollowTheH100Geometry) {
  Open({FakeGpu(0, {{"mode", 0}})});
  auto starts = [&](unsigned id) {
    std::string out;
    for (const MigSlotRange& r : gpus_[0]->PossiblePlacements(id))
      out += std::to_string(r.start) + ":" + std::to_string(r.size) + " ";
    return out;
  };
  EXPECT_EQ(starts(9), "0:4 4:4 ");
  EXPECT_EQ(starts(15), "0:2 2:2 4:2 6:2 ");
  EXPECT_EQ(starts(0), "0:8 ");
  EXPECT_EQ(starts(19), "0:1 1:1 2:1 3:1 4:1 5:1 6:1 ");
  EXPECT_THROW(gpus_[0]->PossiblePlacements(42), BackendError);
}

TEST_F(MigControlTest, CreateAndDestroyWithDriverRules) {
  Open({FakeGpu(0, {{"mode", 1}})});
  MigControl& gpu = *gpus_[0];
  unsigned three = gpu.CreateGpuInstance(9, 4);
  gpu.CreateComputeInstances(three, 1, 3);
  unsigned one = gpu.CreateGpuInstance(15, 0);  // 1g.20gb: two memory slices, CI profile REV1
  gpu.CreateComputeInstances(one, 1, 1);
  EXPECT_EQ(MigLayout(gpu, /*mark_busy=*/true), "15@0[1] 9@4[111]");
  EXPECT_EQ(gpu.GpuInstances()[0].compute_instances[0].profile_id, 7u);

  // Overlap and over-count are INSUFFICIENT_RESOURCES; a start the profile lacks never reaches it.
  EXPECT_THAT([&] { gpu.CreateGpuInstance(19, 1); },
              ::testing::ThrowsMessage<BackendError>(HasSubstr("Insufficient resources")));
  gpu.CreateGpuInstance(20, 2);  // 1g.10gb+me, at most one
  EXPECT_THAT([&] { gpu.CreateGpuInstance(20, 3); },
              ::testing::ThrowsMessage<BackendError>(HasSubstr("Insufficient resources")));
  EXPECT_THAT([&] { gpu.CreateGpuInstance(9, 2); },
              ::testing::ThrowsMessage<BackendError>(HasSubstr("cannot start at memory slice 2")));
  EXPECT_THAT([&] { gpu.CreateComputeInstances(three, 1, 1); },
              ::testing::ThrowsMessage<BackendError>(HasSubstr("Insufficient resources")));

  // A GPU instance with compute instances is in use; without them it goes.
  EXPECT_THAT([&] { gpu.DestroyGpuInstance(three); },
              ::testing::ThrowsMessage<BackendError>(HasSubstr("In use by another client")));
  gpu.DestroyComputeInstances(three);
  gpu.DestroyGpuInstance(three);
  EXPECT_EQ(MigLayout(gpu, /*mark_busy=*/true), "15@0[1] 20@2[]");
  EXPECT_THROW(gpu.DestroyGpuInstance(three), BackendError);  // gone: NOT_FOUND
}

TEST_F(MigControlTest, BusyComputeInstanceIsInUse) {
  Open({FakeGpu(0, {{"mode", 1},
                    {"instances", {FakeCi(3, 0, 14, 0, 1), FakeCi(3, 1, 14, 0, 1, 2)}}})});
  MigControl& gpu = *gpus_[0];
  EXPECT_THAT([&] { gpu.DestroyComputeInstances(3); },
              ::testing::ThrowsMessage<BackendError>(HasSubstr("In use by another client")));
  EXPECT_EQ(MigLayout(gpu, /*mark_busy=*/true), "14@0[1]*");  // the idle one went first
}

TEST_F(MigControlTest, MigModeChanges) {
  json pending = FakeGpu(1, {{"mode", 0}, {"activation_status", "RESET_REQUIRED"}});
  Open({FakeGpu(0, {{"mode", 0}}), pending});
  MigControl& gpu = *gpus_[0];
  EXPECT_TRUE(gpu.SetMigEnabled(true));
  EXPECT_TRUE(gpu.Mode().current);
  unsigned gi = gpu.CreateGpuInstance(0, 0);
  EXPECT_THAT([&] { gpu.SetMigEnabled(false); },
              ::testing::ThrowsMessage<BackendError>(HasSubstr("In use by another client")));
  gpu.DestroyGpuInstance(gi);
  EXPECT_TRUE(gpu.SetMigEnabled(false));

  EXPECT_FALSE(gpus_[1]->SetMigEnabled(true));  // needs a reset: only pending
  MigModeState mode = gpus_[1]->Mode();
  EXPECT_FALSE(mode.current);
  EXPECT_TRUE(mode.pending);
}

TEST_F(MigControlTest, InjectedFaultOnCreation) {
  json gpu = FakeGpu(0, {{"mode", 1}});
  gpu["faults"] = {{{"function", "nvmlDeviceCreateGpuInstanceWithPlacement"},
                    {"error", "UNKNOWN"},
                    {"after_calls", 1}}};
  Open({gpu});
  gpus_[0]->CreateGpuInstance(19, 0);
  EXPECT_THAT([&] { gpus_[0]->CreateGpuInstance(19, 1); },
              ::testing::ThrowsMessage<BackendError>(
                  HasSubstr("GPU 0: nvmlDeviceCreateGpuInstanceWithPlacement failed: Unknown")));
  EXPECT_EQ(MigLayout(*gpus_[0], /*mark_busy=*/true), "19@0[]");
}

TEST_F(MigControlTest, FinalStateWrittenAtShutdown) {
  std::string state_path = test_support::PerTestTempPath(".state.json");
  setenv("FAKE_NVML_STATE_OUT", state_path.c_str(), 1);
  Open({FakeGpu(0, {{"mode", 1}, {"instances", {FakeCi(7, 0, 19, 6)}}}), FakeGpu(1)});
  unsigned gi = gpus_[0]->CreateGpuInstance(9, 0);
  gpus_[0]->CreateComputeInstances(gi, 3, 1);
  gpus_.clear();
  std::ifstream in(state_path);
  ASSERT_TRUE(in.good());
  json state = json::parse(in);
  std::remove(state_path.c_str());
  ASSERT_EQ(state["devices"].size(), 2u);
  const json& gis = state["devices"][0]["gpu_instances"];
  ASSERT_EQ(gis.size(), 2u);
  EXPECT_EQ(gis[0]["profile_id"], 9);
  EXPECT_EQ(gis[0]["start"], 0);
  EXPECT_EQ(gis[0]["size"], 4);
  EXPECT_EQ(gis[0]["compute_instances"][0]["slices"], 3);
  EXPECT_EQ(gis[1]["id"], 7);
  EXPECT_EQ(state["devices"][1]["mig_mode"], 0);
}

TEST_F(MigControlTest, NamedLibraryThatDoesNotExist) {
  EXPECT_THROW(OpenNvmlMigControl("/nonexistent/libnvidia-ml.so.1"), BackendError);
}

}  // namespace
}  // namespace accel::devices
