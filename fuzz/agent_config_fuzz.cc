// libFuzzer target: arbitrary bytes as the `accel serve` agent config (which embeds NVIDIA
// k8s-device-plugin's config schema under devicePlugin.config: MIG strategy, time-slicing and
// MPS sharing, renames, flags.mpsRoot / mpsControlPath).
//
// Only accel::InputError may leave ParseAgentConfig. A config that parses is then applied to a
// small fixed node (two whole GPUs, one MIG-enabled GPU with two MIG devices, an AMD GPU): the
// resources (InputError when the node contradicts the config), their labels, one Allocate per
// resource (AllocationError for a refused request) and the MPS limit commands, so the sharing
// and rename logic sees every config the parser lets through. Inputs naming a key that reads
// another file (devicePlugin.configFile, exporter.collectors, exporter.amdMetricsConfig) are
// skipped: the fuzzer must not read /dev/zero.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "agent/agent_config.h"
#include "common/error.h"
#include "kube/allocate.h"
#include "kube/mps_control.h"
#include "kube/node_labels.h"
#include "kube/resources.h"

namespace {

std::vector<accel::kube::NodeDevice> Node() {
  using accel::kube::NodeDevice;
  std::vector<NodeDevice> node;
  for (unsigned i = 0; i < 3; ++i) {
    NodeDevice d;
    d.id = d.physical_id = "GPU-" + std::to_string(i);
    d.index = d.position = i;
    d.minor = static_cast<int>(i);
    d.mig_enabled = i == 2;
    d.model = "NVIDIA H100 80GB HBM3";
    d.memory_bytes = 81559ull << 20;
    node.push_back(d);
  }
  for (unsigned k = 0; k < 2; ++k) {
    NodeDevice m = node[2];
    m.id = "MIG-2-" + std::to_string(k);
    m.mig_profile = "1g.10gb";
    m.gpu_instance_id = 7 + k;
    m.mig_index = k;
    m.memory_bytes = 9856ull << 20;
    node.push_back(m);
  }
  NodeDevice amd;
  amd.vendor = accel::devices::Vendor::kAmd;
  amd.id = amd.physical_id = "0000:c1:00.0";
  amd.minor = 128;
  node.push_back(amd);
  return node;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // Keys that name another file to read (devicePlugin.configFile, mig.configFile,
  // exporter.collectors, exporter.amdMetricsConfig).
  for (const char* reads_a_file : {"onfigFile", "ollectors", "etricsConfig"}) {
    if (text.find(reads_a_file) != std::string::npos) return 0;
  }
  accel::agent::AgentConfig config;
  try {
    config = accel::agent::ParseAgentConfig(text, "agent.yaml");
  } catch (const accel::InputError&) {
    return 0;
  }
  static const std::vector<accel::kube::NodeDevice> node = Node();
  const accel::kube::PluginConfig& plugin = config.device_plugin.config;
  try {
    std::vector<accel::kube::PluginResource> resources = accel::kube::BuildResources(node, plugin);
    (void)accel::kube::NodeLabels(node, plugin, resources, {});
    for (const accel::kube::PluginResource& r : resources) {
      (void)accel::kube::MpsLimitCommands(r, node);
      if (r.devices.empty()) continue;
      try {
        (void)accel::kube::AllocateContainer(r, node, plugin, {r.devices.front().id});
      } catch (const accel::kube::AllocationError&) {
      }
    }
  } catch (const accel::InputError&) {
  }
  return 0;
}
