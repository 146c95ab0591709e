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

namespace accel::devices {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json Gpu(int i, json mig = nullptr) {
  char bus[32];
  std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x1b + i);
  json gpu = {{"uuid", "GPU-0000000" + std::to_string(i) + "-aaaa-bbbb-cccc-dddddddddddd"},
              {"name", "NVIDIA H100 80GB HBM3"},
              {"pci_bus_id", bus},
              {"pci_subsystem_id", "0x16C110DE"}};
  if (!mig.is_null()) gpu["mig"] = mig;
  return gpu;
}

// One compute instance of GPU instance `gi` (profile id, first memory slice).
json Ci(unsigned gi, unsigned ci, unsigned profile, unsigned start, int slices = 0,
        int processes = 0) {
  json out = {{"gpu_instance_id", gi},
              {"compute_instance_id", ci},
              {"profile_id", profile},
              {"placement_start", start},
              {"uuid", "MIG-" + std::to_string(gi) + "-" + std::to_string(ci)}};
  if (slices > 0) out["compute_slices"] = slices;
  if (processes > 0) out["processes"] = processes;
  return out;
}

class MigControlTest : public ::testing::Test {
 protected:
  void TearDown() override {
    gpus_.clear();  // nvmlShutdown before the next test's init
    unsetenv("FAKE_NVML_CONFIG");
    unsetenv("FAKE_NVML_STATE_OUT");
    std::remove(config_path_.c_str());
  }
  std::string TempPath(const std::string& suffix) {
    return ::testing::TempDir() + "mig_control_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + suffix;
  }
  void Open(const std::vector<json>& devices) {
    config_path_ = TempPath(".json");
    std::ofstream(config_path_) << json{{"devices", devices}}.dump();
    setenv("FAKE_NVML_CONFIG", config_path_.c_str(), 1);
    gpus_ = OpenNvmlMigControl(ACCEL_FAKE_NVML);
  }
  // "profile@start[ci slices]" per GPU instance, by start.
  std::string Layout(MigControl& gpu) {
    std::string out;
    for (const MigGpuInstanceInfo& gi : gpu.GpuInstances()) {
      out += (out.empty() ? "" : " ") + std::to_string(gi.profile_id) + "@" +
             std::to_string(gi.start) + "[";
      for (const auto& ci : gi.compute_instances) out += std::to_string(ci.slices);
      out += gi.busy ? "]*" : "]";
    }
    return out;
  }

  std::string config_path_;
  MigGpus gpus_;
};

TEST_F(MigControlTest, IdentityModeAndProfiles) {
  json plain = Gpu(1);
  plain["name"] = "NVIDIA A10";
  plain["pci_device_id"] = "0x223610DE";
  Open({Gpu(0, {{"mode", 1}}), plain});
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
  Open({Gpu(0, {{"mode", 1},
                {"instances",
                 {Ci(7, 0, 19, 0), Ci(1, 0, 9, 4, 1), Ci(1, 1, 9, 4, 1, /*processes=*/1),
                  Ci(1, 2, 9, 4, 1)}}})});
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
  EXPECT_EQ(Layout(*gpus_[0]), "19@0[1] 9@4[111]*");
}

TEST_F(MigControlTest, PossiblePlacementsFollowTheH100Geometry) {
  Open({Gpu(0, {{"mode", 0}})});
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
  Open({Gpu(0, {{"mode", 1}})});
  MigControl& gpu = *gpus_[0];
  unsigned three = gpu.CreateGpuInstance(9, 4);
  gpu.CreateComputeInstances(three, 1, 3);
  unsigned one = gpu.CreateGpuInstance(15, 0);  // 1g.20gb: two memory slices, CI profile REV1
  gpu.CreateComputeInstances(one, 1, 1);
  EXPECT_EQ(Layout(gpu), "15@0[1] 9@4[111]");
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
  EXPECT_EQ(Layout(gpu), "15@0[1] 20@2[]");
  EXPECT_THROW(gpu.DestroyGpuInstance(three), BackendError);  // gone: NOT_FOUND
}

TEST_F(MigControlTest, BusyComputeInstanceIsInUse) {
  Open({Gpu(0, {{"mode", 1}, {"instances", {Ci(3, 0, 14, 0, 1), Ci(3, 1, 14, 0, 1, 2)}}})});
  MigControl& gpu = *gpus_[0];
  EXPECT_THAT([&] { gpu.DestroyComputeInstances(3); },
              ::testing::ThrowsMessage<BackendError>(HasSubstr("In use by another client")));
  EXPECT_EQ(Layout(gpu), "14@0[1]*");  // the idle one went first
}

TEST_F(MigControlTest, MigModeChanges) {
  json pending = Gpu(1, {{"mode", 0}, {"activation_status", "RESET_REQUIRED"}});
  Open({Gpu(0, {{"mode", 0}}), pending});
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
  json gpu = Gpu(0, {{"mode", 1}});
  gpu["faults"] = {{{"function", "nvmlDeviceCreateGpuInstanceWithPlacement"},
                    {"error", "UNKNOWN"},
                    {"after_calls", 1}}};
  Open({gpu});
  gpus_[0]->CreateGpuInstance(19, 0);
  EXPECT_THAT([&] { gpus_[0]->CreateGpuInstance(19, 1); },
              ::testing::ThrowsMessage<BackendError>(
                  HasSubstr("GPU 0: nvmlDeviceCreateGpuInstanceWithPlacement failed: Unknown")));
  EXPECT_EQ(Layout(*gpus_[0]), "19@0[]");
}

TEST_F(MigControlTest, FinalStateWrittenAtShutdown) {
  std::string state_path = TempPath(".state.json");
  setenv("FAKE_NVML_STATE_OUT", state_path.c_str(), 1);
  Open({Gpu(0, {{"mode", 1}, {"instances", {Ci(7, 0, 19, 6)}}}), Gpu(1)});
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
