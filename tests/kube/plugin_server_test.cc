// The device plugin gRPC server and manager against an in-test kubelet (real gRPC on unix sockets
// in a temp dir): registration, ListAndWatch with NUMA topology and health, Allocate,
// GetPreferredAllocation, kubelet restarts and shutdown. Plus PreferredAllocation directly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "kube/device_health.h"
#include "kube/plugin_server.h"
#include "kube/preferred_allocation.h"
#include "kube/resources.h"
#include "kube_fixtures.h"
#include "support/fake_kubelet_plugins.h"

namespace accel::kube {
namespace plugin_server_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using test_support::FakeDevicePluginKubelet;
using test_support::RegisteredPlugin;
using testing::Gpu;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kWait{60};  // ends as soon as the answer is there

// Four whole GPUs, two per NUMA node, on distinct PCI addresses.
std::vector<NodeDevice> FourGpus() {
  std::vector<NodeDevice> out;
  for (unsigned i = 0; i < 4; ++i) {
    NodeDevice d = Gpu(i);
    d.numa_node = i < 2 ? 0 : 1;
    d.pci_address = "0000:0" + std::to_string(i + 1) + ":00.0";
    out.push_back(d);
  }
  return out;
}

// An interconnect of `devices` on one NUMA node's PCIe with no NVLink; Link adds some.
devices::Interconnect PcieOnly(const std::vector<NodeDevice>& devices) {
  devices::Interconnect ic;
  for (const NodeDevice& d : devices) ic.devices.push_back(d.pci_address);
  ic.pcie.assign(ic.size() * ic.size(), devices::PcieLink::kSameNuma);
  ic.links.assign(ic.size() * ic.size(), 0);
  return ic;
}
void Link(devices::Interconnect* ic, size_t i, size_t j, int links) {
  ic->links[i * ic->size() + j] = ic->links[j * ic->size() + i] = links;
}

devices::HealthEvent Xid(unsigned gpu, uint64_t xid) {
  devices::HealthEvent e;
  e.device_index = gpu;
  e.vendor = devices::Vendor::kNvidia;
  e.code = xid;
  return e;
}

std::vector<std::string> Ids(const RegisteredPlugin& p) {
  std::vector<std::string> out;
  for (const auto& d : p.devices) out.push_back(d.id);
  return out;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The manager counts a registration once Register returned, a moment after the kubelet saw it.
bool WaitRegistrations(const DevicePluginManager& manager, int count) {
  auto deadline = Clock::now() + kWait;
  while (manager.registrations() < count && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return manager.registrations() == count;
}

class DevicePluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/accel-dp-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    config_.plugin_dir = dir_;
    devices_ = FourGpus();
    kubelet_ = std::make_unique<FakeDevicePluginKubelet>(dir_);
  }
  void TearDown() override {
    kubelet_.reset();
    std::filesystem::remove_all(dir_);
  }

  PluginNode Node(DeviceHealth* health = nullptr) {
    return PluginNode{&devices_, &config_, interconnect_.get(), health};
  }
  PluginResource Resource(const std::string& name) {
    for (PluginResource& r : BuildResources(devices_, config_)) {
      if (r.name == name) return r;
    }
    ADD_FAILURE() << "no resource " << name;
    return {};
  }
  bool WaitListed(const std::string& resource, size_t count) {
    return kubelet_->WaitForResource(
        resource, [&](const RegisteredPlugin& p) { return p.devices.size() == count; }, kWait);
  }

  std::string dir_;
  PluginConfig config_;
  std::vector<NodeDevice> devices_;
  std::unique_ptr<devices::Interconnect> interconnect_;
  std::unique_ptr<FakeDevicePluginKubelet> kubelet_;
};

TEST_F(DevicePluginTest, RegistersAndListsDevicesWithNumaTopology) {
  devices_[3].numa_node = -1;  // unknown: no topology at all
  DevicePluginServer server(Resource("nvidia.com/gpu"), Node());
  auto start = Clock::now();
  server.Start();
  std::printf("[ timing ] Start (serve + Register + kubelet dial-back): %.1f ms\n",
              Ms(Clock::now() - start));
  EXPECT_EQ(kubelet_->registrations(), 1);  // Start returns once registered
  EXPECT_EQ(server.socket_path(), dir_ + "/accel-nvidia.com-gpu.sock");
  EXPECT_TRUE(std::filesystem::is_socket(server.socket_path()));
  ASSERT_TRUE(WaitListed("nvidia.com/gpu", 4));
  RegisteredPlugin p = *kubelet_->Resource("nvidia.com/gpu");
  EXPECT_EQ(p.endpoint, "accel-nvidia.com-gpu.sock");
  EXPECT_TRUE(p.preferred_allocation);
  EXPECT_THAT(Ids(p), ElementsAre("GPU-0", "GPU-1", "GPU-2", "GPU-3"));
  EXPECT_EQ(p.healthy(), 4);
  EXPECT_THAT(p.devices[0].numa_nodes, ElementsAre(0));
  EXPECT_THAT(p.devices[2].numa_nodes, ElementsAre(1));
  EXPECT_TRUE(p.devices[3].numa_nodes.empty());
}

TEST_F(DevicePluginTest, ServesEveryResourceOfTheFakeNvmlMixedNode) {
  devices_ = testing::NvmlDevices("nvml/examples/h100x8-mig.json");
  config_.mig_strategy = MigStrategy::kMixed;
  DevicePluginManager manager(Node());
  manager.Start(BuildResources(devices_, config_));
  EXPECT_EQ(manager.registrations(), 2);
  ASSERT_TRUE(WaitListed("nvidia.com/gpu", 4));
  ASSERT_TRUE(WaitListed("nvidia.com/mig-1g.10gb", 28));
  RegisteredPlugin mig = *kubelet_->Resource("nvidia.com/mig-1g.10gb");
  EXPECT_EQ(mig.healthy(), 28);
  for (const auto& d : mig.devices) EXPECT_THAT(d.numa_nodes, ElementsAre(1)) << d.id;

  v1beta1::AllocateResponse response;
  ASSERT_TRUE(kubelet_->Allocate("nvidia.com/mig-1g.10gb", {mig.devices[0].id}, &response).ok());
  EXPECT_EQ(response.container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"),
            mig.devices[0].id);
  // MIG devices cannot be ranked by links: two from one NUMA node, in device order.
  std::vector<std::string> preferred;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation("nvidia.com/mig-1g.10gb", Ids(mig), {}, 2,
                                               &preferred).ok());
  EXPECT_THAT(preferred, ElementsAre(mig.devices[0].id, mig.devices[1].id));
}

TEST_F(DevicePluginTest, AllocateAnswersNvidiaEnvs) {
  DevicePluginServer server(Resource("nvidia.com/gpu"), Node());
  server.Start();
  v1beta1::AllocateResponse response;
  grpc::Status status = kubelet_->Allocate("nvidia.com/gpu", {"GPU-1", "GPU-3"}, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.container_responses_size(), 1);
  EXPECT_EQ(response.container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"), "GPU-1,GPU-3");
}

TEST_F(DevicePluginTest, UnknownDeviceIsInvalidArgumentNotACrash) {
  DevicePluginServer server(Resource("nvidia.com/gpu"), Node());
  server.Start();
  v1beta1::AllocateResponse response;
  grpc::Status status = kubelet_->Allocate("nvidia.com/gpu", {"GPU-0", "GPU-9"}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("unknown device: GPU-9"));
  response.Clear();
  EXPECT_TRUE(kubelet_->Allocate("nvidia.com/gpu", {"GPU-0"}, &response).ok());
}

TEST_F(DevicePluginTest, TimeSlicedReplicasSpreadOverGpus) {
  config_.time_slicing.resources = {{"nvidia.com/gpu", 4, ""}};
  DevicePluginServer server(Resource("nvidia.com/gpu"), Node());
  server.Start();
  ASSERT_TRUE(WaitListed("nvidia.com/gpu", 16));
  RegisteredPlugin p = *kubelet_->Resource("nvidia.com/gpu");
  EXPECT_EQ(p.devices[0].id, "GPU-0::0");
  EXPECT_EQ(p.devices[15].id, "GPU-3::3");
  EXPECT_THAT(p.devices[5].numa_nodes, ElementsAre(0));

  std::vector<std::string> preferred;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation("nvidia.com/gpu", Ids(p), {}, 2, &preferred).ok());
  ASSERT_EQ(preferred.size(), 2u);
  EXPECT_NE(preferred[0].substr(0, 5), preferred[1].substr(0, 5));
  // GPU-0 fully in use and one replica of GPU-1 taken: the next one goes to GPU-2 or GPU-3.
  std::vector<std::string> available;
  for (const std::string& id : Ids(p)) {
    if (id.rfind("GPU-0", 0) != 0 && id != "GPU-1::0") available.push_back(id);
  }
  ASSERT_TRUE(
      kubelet_->GetPreferredAllocation("nvidia.com/gpu", available, {}, 1, &preferred).ok());
  ASSERT_EQ(preferred.size(), 1u);
  EXPECT_THAT(preferred[0], ::testing::AnyOf(HasSubstr("GPU-2"), HasSubstr("GPU-3")));
  // must_include comes first; the size is honoured.
  ASSERT_TRUE(kubelet_->GetPreferredAllocation("nvidia.com/gpu", Ids(p), {"GPU-1::2"}, 3,
                                               &preferred).ok());
  ASSERT_EQ(preferred.size(), 3u);
  EXPECT_EQ(preferred[0], "GPU-1::2");
  for (const std::string& id : preferred) EXPECT_NE(p.Find(id), nullptr) << id;
}

TEST_F(DevicePluginTest, FailRequestsGreaterThanOneRefusesTwoReplicas) {
  config_.time_slicing.resources = {{"nvidia.com/gpu", 4, ""}};
  config_.time_slicing.fail_requests_greater_than_one = true;
  DevicePluginServer server(Resource("nvidia.com/gpu"), Node());
  server.Start();
  v1beta1::AllocateResponse response;
  grpc::Status status = kubelet_->Allocate("nvidia.com/gpu", {"GPU-0::0", "GPU-1::0"}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("maximum request size for shared resources is 1"));
  response.Clear();
  ASSERT_TRUE(kubelet_->Allocate("nvidia.com/gpu", {"GPU-2::3"}, &response).ok());
  EXPECT_EQ(response.container_responses(0).envs().at("NVIDIA_VISIBLE_DEVICES"), "GPU-2");
}

TEST_F(DevicePluginTest, PreferredAllocationFollowsNvLinkThenNuma) {
  interconnect_ = std::make_unique<devices::Interconnect>(PcieOnly(devices_));
  Link(interconnect_.get(), 1, 2, 4);  // GPU-1 ↔ GPU-2 over NVLink, across NUMA nodes
  DevicePluginServer server(Resource("nvidia.com/gpu"), Node());
  server.Start();
  std::vector<std::string> all = {"GPU-0", "GPU-1", "GPU-2", "GPU-3"}, preferred;
  ASSERT_TRUE(kubelet_->GetPreferredAllocation("nvidia.com/gpu", all, {}, 2, &preferred).ok());
  EXPECT_THAT(preferred, UnorderedElementsAre("GPU-1", "GPU-2"));
  // A device the interconnect does not know: NUMA grouping instead of an error.
  devices_[3].pci_address = "0000:99:00.0";
  ASSERT_TRUE(kubelet_->GetPreferredAllocation("nvidia.com/gpu", all, {}, 2, &preferred).ok());
  EXPECT_THAT(preferred, ElementsAre("GPU-0", "GPU-1"));
  ASSERT_TRUE(
      kubelet_->GetPreferredAllocation("nvidia.com/gpu", all, {"GPU-3"}, 2, &preferred).ok());
  EXPECT_THAT(preferred, ElementsAre("GPU-3", "GPU-2"));
}

TEST_F(DevicePluginTest, XidMakesOneGpuUnhealthyThenItRecovers) {
  config_.health.recover_after_seconds = 60;
  DeviceHealth health(devices_, config_.health);
  DevicePluginServer server(Resource("nvidia.com/gpu"), Node(&health));
  server.Start();
  ASSERT_TRUE(WaitListed("nvidia.com/gpu", 4));
  auto t0 = Clock::now();
  ASSERT_TRUE(health.OnEvent(Xid(1, 79), t0));
  server.NotifyHealthChanged();
  ASSERT_TRUE(kubelet_->WaitForResource(
      "nvidia.com/gpu", [](const RegisteredPlugin& p) { return p.healthy() == 3; }, kWait));
  RegisteredPlugin p = *kubelet_->Resource("nvidia.com/gpu");
  EXPECT_EQ(p.Find("GPU-1")->health, "Unhealthy");
  EXPECT_EQ(p.Find("GPU-0")->health, "Healthy");
  EXPECT_EQ(p.devices.size(), 4u);  // still listed: capacity stays, allocatable drops

  ASSERT_FALSE(health.Tick(t0 + std::chrono::seconds(59)));
  ASSERT_TRUE(health.Tick(t0 + std::chrono::seconds(61)));
  server.NotifyHealthChanged();
  EXPECT_TRUE(kubelet_->WaitForResource(
      "nvidia.com/gpu", [](const RegisteredPlugin& p) { return p.healthy() == 4; }, kWait));
}

TEST_F(DevicePluginTest, ManagerPollsHealthWithoutBeingTold) {
  DeviceHealth health(devices_, config_.health);
  DevicePluginManager manager(Node(&health));
  manager.Start(BuildResources(devices_, config_));
  ASSERT_TRUE(WaitListed("nvidia.com/gpu", 4));
  health.OnEvent(Xid(2, 48), Clock::now());
  EXPECT_TRUE(kubelet_->WaitForResource(
      "nvidia.com/gpu",
      [](const RegisteredPlugin& p) { return p.Find("GPU-2")->health == "Unhealthy"; }, kWait));
}

TEST_F(DevicePluginTest, KubeletRestartLeadsToReRegistration) {
  DevicePluginManager manager(Node());
  manager.Start(BuildResources(devices_, config_));
  ASSERT_TRUE(WaitListed("nvidia.com/gpu", 4));
  ASSERT_EQ(manager.registrations(), 1);
  auto restart = Clock::now();
  kubelet_->Restart();
  EXPECT_FALSE(kubelet_->Resource("nvidia.com/gpu").has_value());
  ASSERT_TRUE(kubelet_->WaitForResource(
      "nvidia.com/gpu", [](const RegisteredPlugin& p) { return p.devices.size() == 4; },
      kWait));
  std::printf("[ timing ] re-registered and listed %.1f ms after the kubelet restart\n",
              Ms(Clock::now() - restart));
  EXPECT_TRUE(WaitRegistrations(manager, 2));
  EXPECT_EQ(kubelet_->registrations(), 2);
  EXPECT_TRUE(std::filesystem::is_socket(dir_ + "/accel-nvidia.com-gpu.sock"));
  v1beta1::AllocateResponse response;
  EXPECT_TRUE(kubelet_->Allocate("nvidia.com/gpu", {"GPU-0"}, &response).ok());
}

TEST_F(DevicePluginTest, ManagerReRegistersWhenItsSocketIsDeleted) {
  DevicePluginManager manager(Node());
  manager.Start(BuildResources(devices_, config_));
  ASSERT_TRUE(WaitListed("nvidia.com/gpu", 4));
  std::filesystem::remove(dir_ + "/accel-nvidia.com-gpu.sock");
  EXPECT_TRUE(WaitRegistrations(manager, 2));
  EXPECT_TRUE(WaitListed("nvidia.com/gpu", 4));
  EXPECT_TRUE(std::filesystem::is_socket(dir_ + "/accel-nvidia.com-gpu.sock"));
  // Our own restart deleted and re-created the socket: that must not loop.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(manager.registrations(), 2);
}

TEST_F(DevicePluginTest, ManagerRegistersWhenTheKubeletComesUpLater) {
  kubelet_->Stop();
  std::filesystem::remove(dir_ + "/kubelet.sock");
  std::mutex log_mu;
  std::vector<std::string> log;
  DevicePluginManager manager(Node());
  manager.Start(BuildResources(devices_, config_), [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mu);
    log.push_back(line);
  });
  EXPECT_EQ(manager.registrations(), 0);
  {
    std::lock_guard<std::mutex> lock(log_mu);
    ASSERT_FALSE(log.empty());
    EXPECT_THAT(log[0], HasSubstr("kubelet.sock"));
  }
  kubelet_ = std::make_unique<FakeDevicePluginKubelet>(dir_);  // creates kubelet.sock
  EXPECT_TRUE(WaitListed("nvidia.com/gpu", 4));
  EXPECT_TRUE(WaitRegistrations(manager, 1));
}

TEST_F(DevicePluginTest, ServerStartThrowsWithTheKubeletsAnswer) {
  kubelet_->SetRegisterStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no thanks"));
  DevicePluginServer server(Resource("nvidia.com/gpu"), Node());
  try {
    server.Start();
    FAIL() << "Start succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("no thanks"));
    EXPECT_THAT(e.what(), HasSubstr("nvidia.com/gpu"));
  }
  EXPECT_FALSE(std::filesystem::exists(server.socket_path()));  // no half-started server
}

TEST_F(DevicePluginTest, StopSendsAnEmptyListAndRemovesTheSocket) {
  DevicePluginServer server(Resource("nvidia.com/gpu"), Node());
  server.Start();
  ASSERT_TRUE(WaitListed("nvidia.com/gpu", 4));
  server.Stop();
  EXPECT_TRUE(kubelet_->WaitForResource(
      "nvidia.com/gpu",
      [](const RegisteredPlugin& p) { return p.devices.empty() && p.stream_ended; }, kWait));
  EXPECT_FALSE(std::filesystem::exists(server.socket_path()));
  server.Stop();  // idempotent
  server.Start();  // and startable again
  EXPECT_TRUE(WaitListed("nvidia.com/gpu", 4));
}

// PreferredAllocation without gRPC: the fallbacks the server relies on.
TEST(DevicePluginPreferred, NumaFallbackWithoutInterconnect) {
  std::vector<NodeDevice> devices = FourGpus();
  PluginConfig config;
  PluginResource gpu = BuildResources(devices, config)[0];
  PluginNode node{&devices, &config, nullptr, nullptr};
  std::vector<std::string> all = {"GPU-0", "GPU-1", "GPU-2", "GPU-3"};
  // Tightest NUMA node that fits: GPU-0 is taken, so node 0 has one left and node 1 two.
  EXPECT_THAT(PreferredAllocation(gpu, node, {"GPU-1", "GPU-2", "GPU-3"}, {}, 1),
              ElementsAre("GPU-1"));
  EXPECT_THAT(PreferredAllocation(gpu, node, {"GPU-1", "GPU-2", "GPU-3"}, {}, 2),
              ElementsAre("GPU-2", "GPU-3"));
  EXPECT_THAT(PreferredAllocation(gpu, node, all, {"GPU-2"}, 3),
              ElementsAre("GPU-2", "GPU-3", "GPU-0"));
  // Unknown IDs ignored; short answer when too few are available; never throws.
  EXPECT_THAT(PreferredAllocation(gpu, node, {"GPU-7", "GPU-1"}, {}, 2), ElementsAre("GPU-1"));
  EXPECT_TRUE(PreferredAllocation(gpu, node, all, {}, 0).empty());
}

TEST(DevicePluginPreferred, InterconnectPicksTheLinkedPair) {
  std::vector<NodeDevice> devices = FourGpus();
  devices::Interconnect ic = PcieOnly(devices);
  Link(&ic, 0, 3, 2);
  Link(&ic, 1, 2, 6);
  PluginConfig config;
  PluginResource gpu = BuildResources(devices, config)[0];
  PluginNode node{&devices, &config, &ic, nullptr};
  std::vector<std::string> all = {"GPU-0", "GPU-1", "GPU-2", "GPU-3"};
  EXPECT_THAT(PreferredAllocation(gpu, node, all, {}, 2), ElementsAre("GPU-1", "GPU-2"));
  EXPECT_THAT(PreferredAllocation(gpu, node, all, {"GPU-3"}, 2), ElementsAre("GPU-3", "GPU-0"));
}

}  // namespace
}  // namespace accel::kube
