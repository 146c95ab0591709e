// Node devices for the kube tests: the fake vendor libraries opened on their example configs
// (as production opens the real ones), joined to the matching host fixtures; plus hand-made
// devices for tests that need a shape the examples do not have.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "devices/backend.h"
#include "kube/node_devices.h"
#include "kube/plugin_config.h"
#include "topology/sources.h"

namespace accel::kube::testing {

inline std::string Example(const std::string& relative) {
  return std::string(ACCEL_SOURCE_DIR) + "/tests/fakes/" + relative;
}

inline topology::HostTopology Host(const std::string& name) {
  return topology::LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/" + name + ".json");
}

/// NVIDIA devices of a fake NVML config (e.g. "nvml/examples/h100x8-mig.json"), joined to
/// hgx-h100 (the examples use its GPU addresses).
inline std::vector<NodeDevice> NvmlDevices(const std::string& config) {
  setenv("FAKE_NVML_CONFIG", Example(config).c_str(), 1);
  auto backend = devices::OpenNvml(ACCEL_FAKE_NVML);
  auto out = DiscoverNodeDevices({backend.get()});
  JoinNodeTopology(&out, Host("hgx-h100"));
  unsetenv("FAKE_NVML_CONFIG");
  return out;
}

/// The eight MI300X of the ROCm SMI example, joined to epyc-nps4-mi300x.
inline std::vector<NodeDevice> AmdDevices() {
  // An empty sysfs root: the backend's clock tables must not come from this machine.
  std::string sysfs = (std::filesystem::temp_directory_path() / "accel-kube-empty-sysfs").string();
  std::filesystem::create_directories(sysfs);
  setenv("ACCEL_SYSFS_ROOT", sysfs.c_str(), 1);
  setenv("FAKE_ROCM_SMI_CONFIG", Example("rocm_smi/examples/mi300x-8.json").c_str(), 1);
  auto backend = devices::OpenRocmSmi(ACCEL_FAKE_ROCM_SMI);
  auto out = DiscoverNodeDevices({backend.get()});
  JoinNodeTopology(&out, Host("epyc-nps4-mi300x"));
  unsetenv("FAKE_ROCM_SMI_CONFIG");
  unsetenv("ACCEL_SYSFS_ROOT");
  return out;
}

/// The eight Gaudi 2 of the HLML example, joined to gaudi2-8hpu.
inline std::vector<NodeDevice> GaudiDevices() {
  setenv("FAKE_HLML_CONFIG", Example("hlml/examples/gaudi2-8.json").c_str(), 1);
  auto backend = devices::OpenHlml(ACCEL_FAKE_HLML);
  auto out = DiscoverNodeDevices({backend.get()});
  JoinNodeTopology(&out, Host("gaudi2-8hpu"));
  unsetenv("FAKE_HLML_CONFIG");
  return out;
}

inline PluginConfig Config(const std::string& yaml) {
  return ParsePluginConfig(YAML::Load(yaml), "test.yaml");
}

/// The physical GPUs of `node` with MIG mode off and no MIG devices (the fake H100×8 as a node
/// that never enabled MIG).
inline std::vector<NodeDevice> WholeGpusOf(const std::vector<NodeDevice>& node) {
  std::vector<NodeDevice> out;
  for (NodeDevice d : node) {
    if (d.is_mig()) continue;
    d.mig_enabled = false;
    out.push_back(d);
  }
  return out;
}

/// A whole NVIDIA GPU with index i.
inline NodeDevice Gpu(unsigned i, bool mig_enabled = false) {
  NodeDevice d;
  d.vendor = devices::Vendor::kNvidia;
  d.id = d.physical_id = "GPU-" + std::to_string(i);
  d.index = i;
  d.position = i;
  d.minor = static_cast<int>(i);
  d.mig_enabled = mig_enabled;
  d.model = "NVIDIA H100 80GB HBM3";
  d.memory_bytes = 81559ull << 20;
  d.driver_version = "580.95.05";
  return d;
}

/// MIG device k (GPU instance gi) of `gpu`.
inline NodeDevice Mig(const NodeDevice& gpu, unsigned k, unsigned gi, const std::string& profile) {
  NodeDevice d = gpu;
  d.id = "MIG-" + std::to_string(gpu.index) + "-" + std::to_string(k);
  d.mig_profile = profile;
  d.gpu_instance_id = gi;
  d.mig_index = k;
  d.memory_bytes = 9856ull << 20;
  return d;
}

}  // namespace accel::kube::testing
