// BuildResources per MIG strategy × sharing (time-slicing, MPS, renames), on the fake H100×8
// examples and hand-made nodes for the single strategy's violations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/error.h"
#include "kube/resources.h"
#include "kube_fixtures.h"

namespace accel::kube {
namespace kube_resources_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Config;

std::vector<std::string> Names(const std::vector<PluginResource>& resources) {
  std::vector<std::string> out;
  for (const PluginResource& r : resources) out.push_back(r.name);
  return out;
}

class KubeResourcesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    mixed_node_ = new std::vector<NodeDevice>(testing::NvmlDevices("nvml/examples/h100x8-mig.json"));
    all_mig_node_ =
        new std::vector<NodeDevice>(testing::NvmlDevices("nvml/examples/h100x8-all-mig.json"));
  }
  static void TearDownTestSuite() {
    delete mixed_node_;
    delete all_mig_node_;
  }
  static std::vector<NodeDevice>* mixed_node_;    // GPUs 0-3 whole, 4-7 with 7× 1g.10gb
  static std::vector<NodeDevice>* all_mig_node_;  // every GPU MIG
};
std::vector<NodeDevice>* KubeResourcesTest::mixed_node_ = nullptr;
std::vector<NodeDevice>* KubeResourcesTest::all_mig_node_ = nullptr;

TEST_F(KubeResourcesTest, NoneStrategyAdvertisesEveryGpu) {
  auto resources = BuildResources(*mixed_node_, Config(""));
  ASSERT_THAT(Names(resources), ElementsAre("nvidia.com/gpu"));
  const PluginResource& gpu = resources[0];
  EXPECT_EQ(gpu.vendor, devices::Vendor::kNvidia);
  EXPECT_EQ(gpu.replicas, 1);
  EXPECT_EQ(gpu.socket_name, "accel-nvidia.com-gpu.sock");
  ASSERT_EQ(gpu.devices.size(), 8u);
  EXPECT_EQ(gpu.devices[0].id, "GPU-5f2e3c10-8b4d-4e6f-9a00-1c2d3e4f5000");
  EXPECT_EQ(gpu.devices[0].replica, -1);
  for (const AdvertisedDevice& a : gpu.devices) EXPECT_FALSE((*mixed_node_)[a.device].is_mig());
}

TEST_F(KubeResourcesTest, TimeSlicingEightGpusTimesTenIsEighty) {
  auto resources = BuildResources(
      *mixed_node_, Config("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 10}]}}"));
  ASSERT_THAT(Names(resources), ElementsAre("nvidia.com/gpu"));
  const PluginResource& gpu = resources[0];
  EXPECT_EQ(gpu.replicas, 10);
  ASSERT_EQ(gpu.devices.size(), 80u);
  EXPECT_EQ(gpu.devices[0].id, "GPU-5f2e3c10-8b4d-4e6f-9a00-1c2d3e4f5000::0");
  EXPECT_EQ(gpu.devices[9].id, "GPU-5f2e3c10-8b4d-4e6f-9a00-1c2d3e4f5000::9");
  EXPECT_EQ(gpu.devices[10].id, "GPU-5f2e3c11-8b4d-4e6f-9a00-1c2d3e4f5010::0");
  EXPECT_EQ(gpu.devices[79].replica, 9);
  std::set<std::string> unique;
  for (const AdvertisedDevice& a : gpu.devices) unique.insert(a.id);
  EXPECT_EQ(unique.size(), 80u);
}

TEST_F(KubeResourcesTest, RenameByDefaultAddsShared) {
  auto resources = BuildResources(*mixed_node_, Config(R"(
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources: [{name: gpu, replicas: 4}]
)"));
  ASSERT_THAT(Names(resources), ElementsAre("nvidia.com/gpu.shared"));
  EXPECT_EQ(resources[0].base_name, "nvidia.com/gpu");
  EXPECT_TRUE(resources[0].renamed());
  EXPECT_EQ(resources[0].socket_name, "accel-nvidia.com-gpu.shared.sock");
  EXPECT_TRUE(resources[0].fail_requests_greater_than_one);
  EXPECT_EQ(resources[0].devices.size(), 32u);
}

TEST_F(KubeResourcesTest, MixedStrategySplitsWholeGpusAndProfiles) {
  auto resources = BuildResources(*mixed_node_, Config("flags: {migStrategy: mixed}"));
  ASSERT_THAT(Names(resources), ElementsAre("nvidia.com/gpu", "nvidia.com/mig-1g.10gb"));
  EXPECT_EQ(resources[0].devices.size(), 4u);  // the MIG-enabled GPUs 4-7 are not whole units
  const PluginResource& mig = resources[1];
  EXPECT_EQ(mig.socket_name, "accel-nvidia.com-mig-1g.10gb.sock");
  ASSERT_EQ(mig.devices.size(), 28u);
  const NodeDevice& first = (*mixed_node_)[mig.devices[0].device];
  EXPECT_TRUE(first.is_mig());
  EXPECT_EQ(first.id, mig.devices[0].id);
  EXPECT_EQ(first.physical_id, "GPU-5f2e3c14-8b4d-4e6f-9a00-1c2d3e4f5040");
}

TEST_F(KubeResourcesTest, MixedWithTimeSlicedMigProfile) {
  auto resources = BuildResources(*mixed_node_, Config(R"(
flags: {migStrategy: mixed}
sharing: {timeSlicing: {renameByDefault: true, resources: [{name: mig-1g.10gb, replicas: 4}]}}
)"));
  ASSERT_THAT(Names(resources), ElementsAre("nvidia.com/gpu", "nvidia.com/mig-1g.10gb.shared"));
  EXPECT_EQ(resources[0].replicas, 1);
  EXPECT_EQ(resources[1].devices.size(), 112u);  // 28 MIG devices × 4
  EXPECT_THAT(resources[1].devices[5].id, ::testing::StartsWith("MIG-"));
  EXPECT_THAT(resources[1].devices[5].id, ::testing::EndsWith("::1"));
}

TEST_F(KubeResourcesTest, SingleStrategyAllMig) {
  auto resources = BuildResources(*all_mig_node_, Config("flags: {migStrategy: single}"));
  ASSERT_THAT(Names(resources), ElementsAre("nvidia.com/gpu"));
  ASSERT_EQ(resources[0].devices.size(), 56u);
  for (const AdvertisedDevice& a : resources[0].devices) {
    EXPECT_EQ((*all_mig_node_)[a.device].mig_profile, "1g.10gb");
  }
}

TEST_F(KubeResourcesTest, SingleStrategyRefusesMixedMigModes) {
  try {
    BuildResources(*mixed_node_, Config("flags: {migStrategy: single}"));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "flags.migStrategy");
    EXPECT_THAT(e.problem(), HasSubstr("same migEnabled value"));
  }
}

TEST(KubeResources, SingleStrategyRefusesTwoProfilesAndEmptyMigGpus) {
  using testing::Gpu;
  using testing::Mig;
  NodeDevice a = Gpu(0, true), b = Gpu(1, true);
  std::vector<NodeDevice> two_profiles = {a, Mig(a, 0, 1, "3g.40gb"), b, Mig(b, 0, 7, "1g.10gb")};
  EXPECT_THROW(
      {
        try {
          BuildResources(two_profiles, Config("flags: {migStrategy: single}"));
        } catch (const InputError& e) {
          EXPECT_THAT(e.problem(), HasSubstr("more than one MIG device type"));
          throw;
        }
      },
      InputError);
  std::vector<NodeDevice> empty_gpu = {a, Mig(a, 0, 1, "3g.40gb"), b};
  EXPECT_THROW(BuildResources(empty_gpu, Config("flags: {migStrategy: single}")), InputError);
  // No GPU in MIG mode: single behaves like none.
  std::vector<NodeDevice> plain = {Gpu(0), Gpu(1)};
  EXPECT_EQ(BuildResources(plain, Config("flags: {migStrategy: single}"))[0].devices.size(), 2u);
}

TEST(KubeResources, MeProfilesAndSocketNamesAreSafe) {
  using testing::Gpu;
  using testing::Mig;
  NodeDevice g = Gpu(0, true);
  std::vector<NodeDevice> node = {g, Mig(g, 0, 1, "1g.10gb+me"), Mig(g, 1, 2, "1g.10gb")};
  auto resources = BuildResources(node, Config("flags: {migStrategy: mixed}"));
  ASSERT_THAT(Names(resources), ElementsAre("nvidia.com/mig-1g.10gb", "nvidia.com/mig-1g.10gb.me"));
  EXPECT_EQ(resources[1].socket_name, "accel-nvidia.com-mig-1g.10gb.me.sock");
  for (const PluginResource& r : resources) {
    EXPECT_EQ(r.socket_name.find('/'), std::string::npos);
  }
}

TEST_F(KubeResourcesTest, TimeSlicingOfAResourceNotOnTheNodeIsAnError) {
  try {
    BuildResources(*mixed_node_,
                   Config("sharing: {timeSlicing: {resources: [{name: mig-1g.10gb, replicas: 2}]}}"));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "sharing.timeSlicing.resources[0].name");
    EXPECT_THAT(e.problem(), HasSubstr("nvidia.com/mig-1g.10gb"));
  }
}

TEST_F(KubeResourcesTest, MpsReplicasUseTheAnnotatedIdScheme) {
  auto node = testing::WholeGpusOf(*mixed_node_);
  auto resources = BuildResources(
      node, Config("sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}"));
  ASSERT_THAT(Names(resources), ElementsAre("nvidia.com/gpu"));
  const PluginResource& gpu = resources[0];
  EXPECT_EQ(gpu.sharing, SharingStrategy::kMps);
  EXPECT_EQ(gpu.replicas, 4);
  EXPECT_TRUE(gpu.fail_requests_greater_than_one);  // MPS's default
  ASSERT_EQ(gpu.devices.size(), 32u);
  EXPECT_EQ(gpu.devices[0].id, "GPU-5f2e3c10-8b4d-4e6f-9a00-1c2d3e4f5000::0");
  EXPECT_EQ(gpu.devices[3].replica, 3);
  EXPECT_EQ(gpu.devices[4].device, gpu.devices[7].device);
  // Under single with no GPU in MIG mode, nvidia.com/gpu is whole GPUs: MPS is fine.
  std::vector<NodeDevice> plain = {testing::Gpu(0), testing::Gpu(1)};
  auto single = BuildResources(
      plain, Config("flags: {migStrategy: single}\nsharing: {mps: {resources: [{name: gpu, replicas: 2}]}}"));
  EXPECT_EQ(single[0].sharing, SharingStrategy::kMps);
  EXPECT_EQ(single[0].devices.size(), 4u);
}

TEST_F(KubeResourcesTest, RenamedMpsAndTimeSlicedResources) {
  auto mps = BuildResources(testing::WholeGpusOf(*mixed_node_), Config(
      "sharing: {mps: {resources: [{name: gpu, rename: gpu-mps, replicas: 2}]}}"));
  ASSERT_THAT(Names(mps), ElementsAre("nvidia.com/gpu-mps"));
  EXPECT_EQ(mps[0].base_name, "nvidia.com/gpu");
  EXPECT_EQ(mps[0].socket_name, "accel-nvidia.com-gpu-mps.sock");
  auto ts = BuildResources(*mixed_node_, Config(R"(
flags: {migStrategy: mixed}
sharing:
  timeSlicing:
    resources:
    - {name: mig-1g.10gb, rename: mig-small, replicas: 2}
)"));
  ASSERT_THAT(Names(ts), ElementsAre("nvidia.com/gpu", "nvidia.com/mig-small"));
  EXPECT_EQ(ts[1].devices.size(), 56u);
  // A rename onto a name another resource of the node has is refused.
  try {
    BuildResources(*mixed_node_, Config(R"(
flags: {migStrategy: mixed}
sharing: {timeSlicing: {resources: [{name: mig-1g.10gb, rename: nvidia.com/gpu, replicas: 2}]}}
)"));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "sharing.timeSlicing");
    EXPECT_THAT(e.problem(), HasSubstr("both be advertised as nvidia.com/gpu"));
  }
}

TEST_F(KubeResourcesTest, MpsIsRefusedForMigDevicesAndOtherVendors) {
  try {  // NVIDIA: "sharing using MPS is not supported for MIG devices"
    BuildResources(*all_mig_node_, Config(
        "flags: {migStrategy: single}\nsharing: {mps: {resources: [{name: gpu, replicas: 2}]}}"));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "sharing.mps.resources[0].name");
    EXPECT_THAT(e.problem(), HasSubstr("not supported for MIG devices"));
  }
  try {  // GFD: a MIG-enabled GPU is not MPS-capable even as a whole GPU (strategy none)
    BuildResources(*mixed_node_, Config("sharing: {mps: {resources: [{name: gpu, replicas: 2}]}}"));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.problem(), HasSubstr("has MIG mode enabled"));
    auto first_mig_gpu = std::find_if(mixed_node_->begin(), mixed_node_->end(),
                                      [](const NodeDevice& d) { return d.mig_enabled; });
    EXPECT_THAT(e.problem(), HasSubstr("GPU " + first_mig_gpu->id));
  }
  try {
    BuildResources(testing::AmdDevices(),
                   Config("sharing: {mps: {resources: [{name: amd.com/gpu, replicas: 2}]}}"));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.problem(), HasSubstr("NVIDIA GPUs only"));
  }
  try {
    BuildResources(testing::WholeGpusOf(*mixed_node_),
                   Config("sharing: {mps: {resources: [{name: gpu-x, replicas: 2}]}}"));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "sharing.mps.resources[0].name");
    EXPECT_THAT(e.problem(), HasSubstr("names no device"));
  }
}

TEST(KubeResources, OtherVendors) {
  auto amd = testing::AmdDevices();
  auto gaudi = testing::GaudiDevices();
  std::vector<NodeDevice> node = amd;
  node.insert(node.end(), gaudi.begin(), gaudi.end());
  auto resources = BuildResources(node, Config(""));
  ASSERT_THAT(Names(resources), ElementsAre("amd.com/gpu", "habana.ai/gaudi"));
  EXPECT_EQ(resources[0].vendor, devices::Vendor::kAmd);
  EXPECT_EQ(resources[0].socket_name, "accel-amd.com-gpu.sock");
  ASSERT_EQ(resources[0].devices.size(), 8u);
  EXPECT_EQ(resources[0].devices[0].id, "0000:04:00.0");
  EXPECT_EQ(resources[1].vendor, devices::Vendor::kHabana);
  ASSERT_EQ(resources[1].devices.size(), 8u);
  EXPECT_EQ(resources[1].devices[0].id, "AN45160010");
  EXPECT_EQ(resources[1].devices[0].device, 8u);
  // Time-slicing by full name works for any vendor.
  auto shared = BuildResources(amd, Config("sharing: {timeSlicing: {resources: [{name: amd.com/gpu, replicas: 2}]}}"));
  EXPECT_EQ(shared[0].devices.size(), 16u);
  EXPECT_TRUE(BuildResources({}, Config("")).empty());
}

}  // namespace
}  // namespace accel::kube
