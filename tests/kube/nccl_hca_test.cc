// NCCL_IB_HCA at Allocate (PluginConfig::nccl, PluginNode::nccl_hcas): the device plugin path for
// clusters where the RDMA shared device plugin mounts every HCA into the pod. The fake H100×8
// (fixtures/hosts/hgx-h100.json addresses) through the fake kubelet: off by default, then the
// exact paired HCAs for 1, 2 and 8 GPUs, MIG devices and replicas counted as their GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>

#include "common/error.h"
#include "kube/plugin_server.h"
#include "kube/plugin_service.h"
#include "kube/resources.h"
#include "kube_fixtures.h"
#include "support/fake_kubelet_plugins.h"

namespace accel::kube {
namespace nccl_hca_test {

using ::testing::HasSubstr;
using test_support::FakeDevicePluginKubelet;
using testing::Config;

constexpr std::chrono::seconds kWait{60};  // ends as soon as the answer is there

// `accel fabric pairs -t fixtures/hosts/hgx-h100.json`: each GPU and the NIC on its PCIe switch
// (agent/nccl_hca_test.cc checks that the agent computes exactly this map).
const NcclHcaMap kHgxPairs = {
    {"0000:1b:00.0", "mlx5_0:1"}, {"0000:43:00.0", "mlx5_3:1"},  {"0000:52:00.0", "mlx5_4:1"},
    {"0000:61:00.0", "mlx5_5:1"}, {"0000:9d:00.0", "mlx5_6:1"},  {"0000:c3:00.0", "mlx5_9:1"},
    {"0000:d1:00.0", "mlx5_10:1"}, {"0000:df:00.0", "mlx5_11:1"}};

const char* kAllEight = "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1";

class NcclHcaAllocateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/accel-nccl-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    devices_ = testing::WholeGpusOf(testing::NvmlDevices("nvml/examples/h100x8-mig.json"));
    ASSERT_EQ(devices_.size(), 8u);
    kubelet_ = std::make_unique<FakeDevicePluginKubelet>(dir_);
  }
  void TearDown() override {
    servers_.clear();
    kubelet_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Serves every resource of devices_ under `yaml` (plus pluginDir) with `map`.
  void Serve(const std::string& yaml, const NcclHcaMap* map = &kHgxPairs) {
    config_ = Config(yaml);
    config_.plugin_dir = dir_;
    resources_ = BuildResources(devices_, config_);
    for (const PluginResource& r : resources_) {
      servers_.push_back(std::make_unique<DevicePluginServer>(
          r, PluginNode{&devices_, &config_, nullptr, nullptr, map}));
      servers_.back()->Start();
    }
  }
  // The id of the unit at `address` (a whole GPU's UUID).
  std::string Id(const std::string& address) const {
    for (const NodeDevice& d : devices_)
      if (d.pci_address == address && !d.is_mig()) return d.id;
    ADD_FAILURE() << "no GPU at " << address;
    return "";
  }
  // The envs of one Allocate of `ids` on `resource`.
  std::map<std::string, std::string> Envs(const std::string& resource,
                                          const std::vector<std::string>& ids) {
    v1beta1::AllocateResponse response;
    grpc::Status status = kubelet_->Allocate(resource, ids, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    if (!status.ok() || response.container_responses_size() != 1) return {};
    const auto& envs = response.container_responses(0).envs();
    return {envs.begin(), envs.end()};
  }

  std::string dir_;
  PluginConfig config_;
  std::vector<NodeDevice> devices_;
  std::vector<PluginResource> resources_;
  std::unique_ptr<FakeDevicePluginKubelet> kubelet_;
  std::vector<std::unique_ptr<DevicePluginServer>> servers_;
};

TEST_F(NcclHcaAllocateTest, OffByDefault) {
  Serve("");
  EXPECT_FALSE(config_.nccl.ib_hca);
  auto envs = Envs("nvidia.com/gpu", {Id("0000:1b:00.0"), Id("0000:43:00.0")});
  EXPECT_EQ(envs.count("NVIDIA_VISIBLE_DEVICES"), 1u);
  EXPECT_EQ(envs.count("NCCL_IB_HCA"), 0u);
  EXPECT_EQ(envs.count("NCCL_SOCKET_IFNAME"), 0u);
}

TEST_F(NcclHcaAllocateTest, ExactPairedHcasForOneTwoAndEightGpus) {
  Serve("nccl: {ibHca: true}");
  EXPECT_EQ(Envs("nvidia.com/gpu", {Id("0000:43:00.0")}).at("NCCL_IB_HCA"), "=mlx5_3:1");
  // Pair order (the GPUs' PCI order), whatever order the kubelet names them in.
  EXPECT_EQ(Envs("nvidia.com/gpu", {Id("0000:df:00.0"), Id("0000:1b:00.0")}).at("NCCL_IB_HCA"),
            "=mlx5_0:1,mlx5_11:1");
  std::vector<std::string> all;
  for (auto it = kHgxPairs.rbegin(); it != kHgxPairs.rend(); ++it) all.push_back(Id(it->first));
  auto envs = Envs("nvidia.com/gpu", all);
  EXPECT_EQ(envs.at("NCCL_IB_HCA"), kAllEight);
  EXPECT_EQ(envs.count("NCCL_SOCKET_IFNAME"), 0u);
}

TEST_F(NcclHcaAllocateTest, SocketIfnameIsExactMatchUnlessPrefixed) {
  Serve("nccl: {ibHca: true, socketIfname: eth0}");
  auto envs = Envs("nvidia.com/gpu", {Id("0000:52:00.0")});
  EXPECT_EQ(envs.at("NCCL_SOCKET_IFNAME"), "=eth0");
  EXPECT_EQ(envs.at("NCCL_IB_HCA"), "=mlx5_4:1");
  servers_.clear();
  Serve("nccl: {socketIfname: ^docker}");
  envs = Envs("nvidia.com/gpu", {Id("0000:52:00.0")});
  EXPECT_EQ(envs.at("NCCL_SOCKET_IFNAME"), "^docker");
  EXPECT_EQ(envs.count("NCCL_IB_HCA"), 0u);  // ibHca stays off
}

TEST_F(NcclHcaAllocateTest, NoMapOrUnpairedGpuAddsNothing) {
  Serve("nccl: {ibHca: true}", nullptr);  // the agent could not pair
  EXPECT_EQ(Envs("nvidia.com/gpu", {Id("0000:1b:00.0")}).count("NCCL_IB_HCA"), 0u);
  servers_.clear();
  NcclHcaMap partial = kHgxPairs;
  partial.erase("0000:1b:00.0");  // GPU 0 has no usable NIC
  Serve("nccl: {ibHca: true}", &partial);
  EXPECT_EQ(Envs("nvidia.com/gpu", {Id("0000:1b:00.0")}).count("NCCL_IB_HCA"), 0u);
  EXPECT_EQ(Envs("nvidia.com/gpu", {Id("0000:1b:00.0"), Id("0000:61:00.0")}).at("NCCL_IB_HCA"),
            "=mlx5_5:1");
}

TEST_F(NcclHcaAllocateTest, ReplicasOfOneGpuNameItsNicOnce) {
  Serve(
      "nccl: {ibHca: true}\n"
      "sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}");
  const std::string gpu = Id("0000:c3:00.0");
  EXPECT_EQ(Envs("nvidia.com/gpu", {gpu + "::0", gpu + "::3"}).at("NCCL_IB_HCA"), "=mlx5_9:1");
}

TEST_F(NcclHcaAllocateTest, MigDevicesUseTheirGpusNic) {
  devices_ = testing::NvmlDevices("nvml/examples/h100x8-mig.json");  // 4 GPUs in MIG mode
  Serve("flags: {migStrategy: mixed}\nnccl: {ibHca: true}");
  const PluginResource* mig = nullptr;
  for (const PluginResource& r : resources_)
    if (r.name == "nvidia.com/mig-1g.10gb") mig = &r;
  ASSERT_NE(mig, nullptr);
  ASSERT_TRUE(kubelet_->WaitForResource(
      mig->name, [&](const test_support::RegisteredPlugin& p) { return !p.devices.empty(); },
      kWait));
  // Two MIG devices of one GPU: its NIC once; and one of another GPU: both NICs, pair order.
  const NodeDevice& first = devices_[mig->devices.front().device];
  const NodeDevice& last = devices_[mig->devices.back().device];
  ASSERT_TRUE(first.is_mig());
  ASSERT_NE(first.pci_address, last.pci_address);
  std::vector<std::string> same_gpu;
  for (const AdvertisedDevice& a : mig->devices)
    if (devices_[a.device].pci_address == first.pci_address) same_gpu.push_back(a.id);
  ASSERT_GE(same_gpu.size(), 2u);
  EXPECT_EQ(Envs(mig->name, {same_gpu[0], same_gpu[1]}).at("NCCL_IB_HCA"),
            "=" + kHgxPairs.at(first.pci_address));
  EXPECT_EQ(Envs(mig->name, {mig->devices.back().id, same_gpu[0]}).at("NCCL_IB_HCA"),
            "=" + kHgxPairs.at(first.pci_address) + "," + kHgxPairs.at(last.pci_address));
}

TEST(NcclHcaService, GaudiGetsNoNcclEnv) {
  std::vector<NodeDevice> devices = testing::GaudiDevices();
  ASSERT_FALSE(devices.empty());
  PluginConfig config = Config("nccl: {ibHca: true, socketIfname: eth0}");
  std::vector<PluginResource> resources = BuildResources(devices, config);
  ASSERT_FALSE(resources.empty());
  NcclHcaMap map{{devices[0].pci_address, "mlx5_0:1"}};
  PluginService service(&resources[0], PluginNode{&devices, &config, nullptr, nullptr, &map});
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids(resources[0].devices[0].id);
  v1beta1::AllocateResponse response;
  ASSERT_TRUE(service.Allocate(nullptr, &request, &response).ok());
  EXPECT_EQ(response.container_responses(0).envs().count("NCCL_IB_HCA"), 0u);
  EXPECT_EQ(response.container_responses(0).envs().count("NCCL_SOCKET_IFNAME"), 0u);
}

std::string ConfigError(const std::string& yaml) {
  try {
    Config(yaml);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(NcclHcaConfig, ParsesAndRefusesBadValues) {
  PluginConfig c = Config("version: v1\nnccl:\n  ibHca: yes\n  socketIfname: \"=ens1f0\"\n");
  EXPECT_TRUE(c.nccl.ib_hca);
  EXPECT_EQ(c.nccl.socket_ifname, "=ens1f0");
  EXPECT_FALSE(Config("nccl: {}").nccl.enabled());
  EXPECT_THAT(ConfigError("nccl: {ibHca: maybe}"), HasSubstr("nccl.ibHca"));
  EXPECT_THAT(ConfigError("nccl: {ibHCA: true}"), HasSubstr("nccl.ibHCA"));
  EXPECT_THAT(ConfigError("nccl: {socketIfname: \"eth 0\"}"), HasSubstr("nccl.socketIfname"));
  EXPECT_THAT(ConfigError("nccl: {socketIfname: \"^\"}"), HasSubstr("invalid interface name"));
  EXPECT_THAT(ConfigError("nccl: true"), HasSubstr("nccl"));
}

}  // namespace
}  // namespace accel::kube
