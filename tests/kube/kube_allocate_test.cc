// AllocateContainer per vendor and device-list strategy (shapes after NVIDIA's
// internal/plugin/server_test.go, internal/plugin/mps.go and internal/rm/rm_test.go
// ValidateRequest).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/allocate.h"
#include "kube_fixtures.h"

namespace accel::kube {
namespace kube_allocate_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using testing::Config;
using testing::Gpu;
using testing::Mig;

// "container<-host:permissions" per device node, so expectations read as one list.
std::vector<std::string> Nodes(const ContainerAllocation& a) {
  std::vector<std::string> out;
  for (const DeviceNodeSpec& d : a.devices) {
    out.push_back(d.container_path + "<-" + d.host_path + ":" + d.permissions);
  }
  return out;
}
std::string Node(const std::string& path, const std::string& host = "") {
  return path + "<-" + (host.empty() ? path : host) + ":rw";
}

// Two whole GPUs and a MIG-enabled GPU 2 with two MIG devices.
std::vector<NodeDevice> SmallNode() {
  NodeDevice g2 = Gpu(2, true);
  return {Gpu(0), Gpu(1), g2, Mig(g2, 0, 3, "3g.40gb"), Mig(g2, 1, 5, "3g.40gb")};
}

std::string AllocationMessage(const PluginResource& r, const std::vector<NodeDevice>& d,
                              const PluginConfig& c, const std::vector<std::string>& ids) {
  try {
    AllocateContainer(r, d, c, ids);
  } catch (const AllocationError& e) {
    return e.what();
  }
  return "no error";
}

TEST(KubeAllocate, EnvvarWithUuidsAndIndices) {
  auto node = SmallNode();
  PluginConfig config = Config("flags: {migStrategy: mixed}");
  auto resources = BuildResources(node, config);
  ContainerAllocation a = AllocateContainer(resources[0], node, config, {"GPU-1", "GPU-0"});
  EXPECT_THAT(a.envs, ElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", "GPU-1,GPU-0")));
  EXPECT_THAT(a.devices, IsEmpty());
  EXPECT_THAT(a.annotations, IsEmpty());
  EXPECT_THAT(a.cdi_devices, IsEmpty());

  config.device_id_index = true;
  a = AllocateContainer(resources[1], node, config, {"MIG-2-1", "MIG-2-0"});
  EXPECT_THAT(a.envs, ElementsAre(Pair("NVIDIA_VISIBLE_DEVICES", "2:1,2:0")));
  a = AllocateContainer(resources[0], node, config, {"GPU-1"});
  EXPECT_EQ(a.envs["NVIDIA_VISIBLE_DEVICES"], "1");
}

TEST(KubeAllocate, ReplicasAreReducedAndDeduplicated) {
  auto node = SmallNode();
  PluginConfig config = Config("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 4}]}}");
  auto resources = BuildResources(node, config);
  ContainerAllocation a =
      AllocateContainer(resources[0], node, config, {"GPU-0::3", "GPU-0::1", "GPU-2::0"});
  EXPECT_EQ(a.envs["NVIDIA_VISIBLE_DEVICES"], "GPU-0,GPU-2");
}

TEST(KubeAllocate, UnknownIdAndEmptyRequestAreRefused) {
  auto node = SmallNode();
  PluginConfig config = Config("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 4}]}}");
  auto resources = BuildResources(node, config);
  EXPECT_THAT(AllocationMessage(resources[0], node, config, {"GPU-0::1", "GPU-9::0"}),
              HasSubstr("unknown device: GPU-9::0"));
  // A unit ID is not a replica ID of a shared resource.
  EXPECT_THAT(AllocationMessage(resources[0], node, config, {"GPU-0"}),
              HasSubstr("unknown device: GPU-0"));
  EXPECT_THAT(AllocationMessage(resources[0], node, config, {}), HasSubstr("no devices"));
}

TEST(KubeAllocate, FailRequestsGreaterThanOne) {
  auto node = SmallNode();
  PluginConfig config = Config(
      "sharing: {timeSlicing: {failRequestsGreaterThanOne: true, resources: [{name: gpu, replicas: 2}]}}");
  auto resources = BuildResources(node, config);
  EXPECT_NO_THROW(AllocateContainer(resources[0], node, config, {"GPU-1::1"}));
  EXPECT_THAT(AllocationMessage(resources[0], node, config, {"GPU-0::0", "GPU-1::0"}),
              HasSubstr("maximum request size for shared resources is 1"));
  // Without the flag two replicas (even of one GPU) are fine.
  config.time_slicing.fail_requests_greater_than_one = false;
  resources = BuildResources(node, config);
  EXPECT_NO_THROW(AllocateContainer(resources[0], node, config, {"GPU-0::0", "GPU-0::1"}));
}

// "container<-host:ro|rw" per mount.
std::vector<std::string> Mounts(const ContainerAllocation& a) {
  std::vector<std::string> out;
  for (const MountSpec& m : a.mounts) {
    out.push_back(m.container_path + "<-" + m.host_path + (m.read_only ? ":ro" : ":rw"));
  }
  return out;
}

TEST(KubeAllocate, MpsGivesThePipeDirectoryAndSharedMemory) {
  std::vector<NodeDevice> node = {Gpu(0), Gpu(1)};
  PluginConfig config = Config("sharing: {mps: {resources: [{name: gpu, replicas: 4}]}}");
  auto resources = BuildResources(node, config);
  ContainerAllocation a = AllocateContainer(resources[0], node, config, {"GPU-1::2"});
  EXPECT_THAT(a.envs, ElementsAre(Pair("CUDA_MPS_PIPE_DIRECTORY", "/mps/nvidia.com/gpu/pipe"),
                                  Pair("NVIDIA_VISIBLE_DEVICES", "GPU-1")));
  EXPECT_THAT(Mounts(a),
              ElementsAre("/mps/nvidia.com/gpu/pipe<-/run/nvidia/mps/nvidia.com/gpu/pipe:rw",
                          "/dev/shm<-/dev/shm:rw"));
  // failRequestsGreaterThanOne is MPS's default: one replica per container.
  EXPECT_THAT(AllocationMessage(resources[0], node, config, {"GPU-0::0", "GPU-1::0"}),
              HasSubstr("maximum request size for shared resources is 1"));

  // Renamed, another root, relaxed: the renamed resource's own pipe directory.
  config = Config(R"(
flags: {mpsRoot: /var/run/mps/}
sharing: {mps: {renameByDefault: true, failRequestsGreaterThanOne: false,
                resources: [{name: gpu, replicas: 2}]}}
)");
  resources = BuildResources(node, config);
  a = AllocateContainer(resources[0], node, config, {"GPU-0::0", "GPU-1::1"});
  EXPECT_EQ(a.envs["CUDA_MPS_PIPE_DIRECTORY"], "/mps/nvidia.com/gpu.shared/pipe");
  EXPECT_EQ(a.envs["NVIDIA_VISIBLE_DEVICES"], "GPU-0,GPU-1");
  EXPECT_THAT(Mounts(a),
              ElementsAre("/mps/nvidia.com/gpu.shared/pipe<-/var/run/mps/nvidia.com/gpu.shared/pipe:rw",
                          "/dev/shm<-/dev/shm:rw"));
  // Time-slicing gets none of it.
  config = Config("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 4}]}}");
  resources = BuildResources(node, config);
  a = AllocateContainer(resources[0], node, config, {"GPU-1::2"});
  EXPECT_THAT(a.mounts, IsEmpty());
  EXPECT_EQ(a.envs.count("CUDA_MPS_PIPE_DIRECTORY"), 0u);
}

TEST(KubeAllocate, CdiAnnotationsAndCri) {
  auto node = SmallNode();
  PluginConfig config = Config(R"(
flags:
  migStrategy: mixed
  plugin: {deviceListStrategy: [cdi-annotations, cdi-cri], passDeviceSpecs: true}
)");
  auto resources = BuildResources(node, config);
  ContainerAllocation a = AllocateContainer(resources[0], node, config, {"GPU-0", "GPU-1"});
  ASSERT_EQ(a.annotations.size(), 1u);
  const auto& [key, value] = *a.annotations.begin();
  EXPECT_THAT(key, ::testing::MatchesRegex("cdi\\.k8s\\.io/accel-device-plugin_[0-9a-f]{16}"));
  EXPECT_EQ(value, "k8s.device-plugin.nvidia.com/gpu=GPU-0,k8s.device-plugin.nvidia.com/gpu=GPU-1");
  EXPECT_THAT(a.cdi_devices, ElementsAre("k8s.device-plugin.nvidia.com/gpu=GPU-0",
                                         "k8s.device-plugin.nvidia.com/gpu=GPU-1"));
  // CDI only: no env, no device specs even with passDeviceSpecs.
  EXPECT_THAT(a.envs, IsEmpty());
  EXPECT_THAT(a.devices, IsEmpty());
  // The key is stable (checkpoint replays) and differs per device set.
  EXPECT_EQ(AllocateContainer(resources[0], node, config, {"GPU-0", "GPU-1"}).annotations, a.annotations);
  EXPECT_NE(AllocateContainer(resources[0], node, config, {"GPU-0"}).annotations.begin()->first, key);
}

TEST(KubeAllocate, PassDeviceSpecsUnderDevRoot) {
  auto node = SmallNode();
  PluginConfig config = Config(R"(
flags:
  migStrategy: mixed
  nvidiaDevRoot: /run/nvidia/driver/
  plugin: {passDeviceSpecs: true, deviceListStrategy: [envvar, cdi-cri]}
)");
  auto resources = BuildResources(node, config);
  ContainerAllocation a = AllocateContainer(resources[0], node, config, {"GPU-1", "GPU-0"});
  EXPECT_THAT(Nodes(a), ElementsAre(Node("/dev/nvidia1", "/run/nvidia/driver/dev/nvidia1"),
                                     Node("/dev/nvidia0", "/run/nvidia/driver/dev/nvidia0"),
                                     Node("/dev/nvidiactl", "/run/nvidia/driver/dev/nvidiactl"),
                                     Node("/dev/nvidia-uvm", "/run/nvidia/driver/dev/nvidia-uvm"),
                                     Node("/dev/nvidia-uvm-tools",
                                          "/run/nvidia/driver/dev/nvidia-uvm-tools")));
  EXPECT_EQ(a.cdi_devices.size(), 2u);
  // Two MIG devices of one GPU: its /dev/nvidiaN once (capability nodes are not probed).
  a = AllocateContainer(resources[1], node, config, {"MIG-2-0", "MIG-2-1"});
  EXPECT_EQ(a.devices.size(), 4u);
  EXPECT_EQ(a.devices[0].container_path, "/dev/nvidia2");
}

TEST(KubeAllocate, VolumeMounts) {
  auto node = SmallNode();
  PluginConfig config = Config("flags: {plugin: {deviceListStrategy: volume-mounts}}");
  auto resources = BuildResources(node, config);
  ContainerAllocation a = AllocateContainer(resources[0], node, config, {"GPU-0"});
  EXPECT_EQ(a.envs["NVIDIA_VISIBLE_DEVICES"], "/var/run/nvidia-container-devices");
  ASSERT_EQ(a.mounts.size(), 1u);
  EXPECT_EQ(a.mounts[0].container_path, "/var/run/nvidia-container-devices/GPU-0");
  EXPECT_EQ(a.mounts[0].host_path, "/dev/null");
}

TEST(KubeAllocate, AmdKfdCardAndRenderNodes) {
  auto node = testing::AmdDevices();
  PluginConfig config = Config("");
  auto resources = BuildResources(node, config);
  ContainerAllocation a =
      AllocateContainer(resources[0], node, config, {"0000:24:00.0", "0000:04:00.0"});
  EXPECT_THAT(a.envs, IsEmpty());
  EXPECT_THAT(Nodes(a), ElementsAre(Node("/dev/kfd"), Node("/dev/dri/card1"),
                                     Node("/dev/dri/renderD129"), Node("/dev/dri/card0"),
                                     Node("/dev/dri/renderD128")));
  node[0].minor = -1;
  EXPECT_THAT(AllocationMessage(resources[0], node, config, {"0000:04:00.0"}),
              HasSubstr("device node is unknown"));
}

TEST(KubeAllocate, GaudiVisibleDevicesAndAccelNodes) {
  auto node = testing::GaudiDevices();
  PluginConfig config = Config("");
  auto resources = BuildResources(node, config);
  ContainerAllocation a = AllocateContainer(resources[0], node, config, {"AN45160013", "AN45160010"});
  EXPECT_THAT(a.envs, ElementsAre(Pair("HABANA_VISIBLE_DEVICES", "3,0")));
  EXPECT_THAT(Nodes(a), ElementsAre(Node("/dev/accel/accel3"), Node("/dev/accel/accel_controlD3"),
                                     Node("/dev/accel/accel0"), Node("/dev/accel/accel_controlD0")));
  EXPECT_THAT(AllocationMessage(resources[0], node, config, {"GPU-0"}), HasSubstr("unknown device"));
}

}  // namespace
}  // namespace accel::kube
