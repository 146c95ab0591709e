// NVIDIA's own device plugin configs, read in place from ../shared/peers/k8s-device-plugin/:
// the GPU Operator's time-slicing test config, the Helm chart's values.yaml (its documented
// `config.map` example and its MPS root) and the chart's ConfigMap template. Each must mean in
// accel what NVIDIA's plugin documents: the same resources, replicas, IDs and labels.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "common/error.h"
#include "common/structured_file.h"
#include "common/yaml_config.h"
#include "kube/node_labels.h"
#include "kube/resources.h"
#include "kube_fixtures.h"
#include "support/shared_fixture.h"

namespace accel::kube {
namespace nvidia_peer_configs_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kPeers = "peers/k8s-device-plugin/";

std::vector<std::string> Names(const std::vector<PluginResource>& resources) {
  std::vector<std::string> out;
  for (const PluginResource& r : resources) out.push_back(r.name + " x" + std::to_string(r.devices.size()));
  return out;
}

std::map<std::string, std::string> LabelMap(const std::vector<NodeDevice>& node,
                                            const PluginConfig& config) {
  Labels labels = NodeLabels(node, config, BuildResources(node, config), {});
  return {labels.begin(), labels.end()};
}

// The example the values.yaml comment documents ("An example of setting "map" might be:"),
// uncommented: the lines after that sentence, each without its "# ".
YAML::Node DocumentedMapExample(const std::string& values_text) {
  std::istringstream in(values_text);
  std::string line, example;
  bool inside = false;
  while (std::getline(in, line)) {
    if (inside) {
      if (line.rfind("#", 0) != 0) break;
      example += (line.size() > 2 ? line.substr(2) : "") + "\n";
    } else if (line.find("An example of setting \"map\" might be:") != std::string::npos) {
      inside = true;
    }
  }
  return LoadYamlText(example, "values.yaml (commented example)");
}

class NvidiaPeerConfigs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    mixed_node_ = new std::vector<NodeDevice>(testing::NvmlDevices("nvml/examples/h100x8-mig.json"));
    all_mig_ = new std::vector<NodeDevice>(testing::NvmlDevices("nvml/examples/h100x8-all-mig.json"));
  }
  static void TearDownTestSuite() {
    delete mixed_node_;
    delete all_mig_;
  }
  static std::vector<NodeDevice>* mixed_node_;  // 8 × H100: GPUs 0-3 whole, 4-7 7 × 1g.10gb
  static std::vector<NodeDevice>* all_mig_;     // 8 × H100, every one 7 × 1g.10gb
};
std::vector<NodeDevice>* NvidiaPeerConfigs::mixed_node_ = nullptr;
std::vector<NodeDevice>* NvidiaPeerConfigs::all_mig_ = nullptr;

TEST_F(NvidiaPeerConfigs, GpuOperatorTimeSlicingConfig) {
  const std::string path = test_support::SharedPath(kPeers + "plugin-config.yaml");
  ACCEL_REQUIRE_SHARED(path);
  PluginConfig config = ParsePluginConfig(LoadYamlText(ReadWholeFile(path), path), path);
  EXPECT_EQ(config.sharing_strategy(), SharingStrategy::kTimeSlicing);
  ASSERT_EQ(config.time_slicing.resources.size(), 1u);
  EXPECT_EQ(config.time_slicing.resources[0].name, "nvidia.com/gpu");
  EXPECT_EQ(config.time_slicing.resources[0].replicas, 10);
  EXPECT_FALSE(config.time_slicing.rename_by_default);
  EXPECT_FALSE(config.time_slicing.fail_requests_greater_than_one);  // time-slicing's default
  // NVIDIA's README: 8 GPUs × 10 replicas advertise nvidia.com/gpu: 80, IDs <uuid>::<n>.
  auto resources = BuildResources(*mixed_node_, config);
  ASSERT_THAT(Names(resources), ElementsAre("nvidia.com/gpu x80"));
  EXPECT_EQ(resources[0].devices[11].id, (*mixed_node_)[resources[0].devices[11].device].id + "::1");
  // GFD: count stays physical, replicas carry the factor, the product says SHARED (not renamed).
  auto labels = LabelMap(*mixed_node_, config);
  EXPECT_EQ(labels["nvidia.com/gpu.count"], "8");
  EXPECT_EQ(labels["nvidia.com/gpu.replicas"], "10");
  EXPECT_EQ(labels["nvidia.com/gpu.sharing-strategy"], "time-slicing");
  EXPECT_EQ(labels["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3-SHARED");
  EXPECT_EQ(labels["nvidia.com/mps.capable"], "false");
}

TEST_F(NvidiaPeerConfigs, HelmValuesDocumentedConfigMapAndMpsRoot) {
  const std::string path = test_support::SharedPath(kPeers + "values.yaml");
  ACCEL_REQUIRE_SHARED(path);
  std::string text = ReadWholeFile(path);
  YAML::Node values = LoadYamlText(text, path);
  // The chart's MPS root is the default of flags.mpsRoot (NVIDIA passes it as --mps-root).
  EXPECT_EQ(values["mps"]["root"].as<std::string>(), PluginConfig().mps_settings.root);
  // The shipped map is empty: the chart then runs the plugin with its command-line defaults,
  // which are accel's defaults too.
  EXPECT_EQ(values["config"]["map"].size(), 0u);
  PluginConfig defaults = ParsePluginConfig(YAML::Node(), path);
  EXPECT_EQ(defaults.mig_strategy, MigStrategy::kNone);
  EXPECT_EQ(defaults.sharing_strategy(), SharingStrategy::kNone);

  YAML::Node map = DocumentedMapExample(text)["config"]["map"];
  ASSERT_TRUE(map.IsMap());
  std::map<std::string, PluginConfig> configs;
  for (const auto& entry : map) {
    std::string name = entry.first.as<std::string>();
    configs[name] = ParsePluginConfig(LoadYamlText(entry.second.as<std::string>(), name), name);
  }
  ASSERT_EQ(configs.size(), 3u);
  EXPECT_EQ(configs["default"].mig_strategy, MigStrategy::kNone);
  EXPECT_EQ(configs["mig-single"].mig_strategy, MigStrategy::kSingle);
  EXPECT_EQ(configs["mig-mixed"].mig_strategy, MigStrategy::kMixed);

  // What each one serves, as NVIDIA documents the strategies.
  EXPECT_THAT(Names(BuildResources(*mixed_node_, configs["default"])),
              ElementsAre("nvidia.com/gpu x8"));
  EXPECT_THAT(Names(BuildResources(*mixed_node_, configs["mig-mixed"])),
              ElementsAre("nvidia.com/gpu x4", "nvidia.com/mig-1g.10gb x28"));
  EXPECT_THAT(Names(BuildResources(*all_mig_, configs["mig-single"])),
              ElementsAre("nvidia.com/gpu x56"));
  // single on a node with mixed MIG modes: NVIDIA's plugin refuses to start, so does accel.
  try {
    BuildResources(*mixed_node_, configs["mig-single"]);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.problem(), HasSubstr("same migEnabled value"));
  }
}

TEST_F(NvidiaPeerConfigs, ConfigMapTemplateRendersConfigsAccelReads) {
  const std::string template_path = test_support::SharedPath(kPeers + "configmap.yml");
  const std::string values_path = test_support::SharedPath(kPeers + "values.yaml");
  ACCEL_REQUIRE_SHARED(template_path);
  ACCEL_REQUIRE_SHARED(values_path);
  std::string tpl = ReadWholeFile(template_path);
  // The template's data section: one key per config.map entry, its text as a `|-` block
  // indented by 4 (so the plugin's mounted file holds the config without a final newline).
  ASSERT_THAT(tpl, HasSubstr("{{- range $name, $contents := $.Values.config.map }}"));
  ASSERT_THAT(tpl, HasSubstr("  {{ $name }}: |-"));
  ASSERT_THAT(tpl, HasSubstr("{{ $contents | indent 4 }}"));
  // Render it as Helm would for the documented example (plus an MPS config, the case the
  // issue is about) and read the result back as a ConfigMap.
  YAML::Node map = DocumentedMapExample(ReadWholeFile(values_path))["config"]["map"];
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& entry : map) {
    entries.emplace_back(entry.first.as<std::string>(), entry.second.as<std::string>());
  }
  entries.emplace_back("mps-4", "version: v1\nsharing:\n  mps:\n    resources:\n"
                                "    - name: nvidia.com/gpu\n      replicas: 4");
  std::string rendered = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nvdp-configs\ndata:\n";
  for (const auto& [name, contents] : entries) {
    rendered += "  " + name + ": |-\n";
    std::istringstream lines(contents);
    for (std::string line; std::getline(lines, line);) rendered += "    " + line + "\n";
  }
  YAML::Node configmap = LoadYamlText(rendered, "rendered configmap.yml");
  ASSERT_EQ(configmap["data"].size(), entries.size());
  for (const auto& [name, contents] : entries) {
    std::string data = configmap["data"][name].as<std::string>();
    EXPECT_EQ(data, contents) << name;
    EXPECT_NO_THROW(ParsePluginConfig(LoadYamlText(data, name), name)) << name;
  }
  PluginConfig mps = ParsePluginConfig(LoadYamlText(configmap["data"]["mps-4"].as<std::string>(), "mps-4"),
                                       "mps-4");
  EXPECT_EQ(mps.sharing_strategy(), SharingStrategy::kMps);
  EXPECT_TRUE(mps.mps.fail_requests_greater_than_one);
  // MPS shares GPUs that never enabled MIG (on this node as shipped, GPUs 4-7 have MIG on).
  auto whole = testing::WholeGpusOf(*mixed_node_);
  EXPECT_THROW(BuildResources(*mixed_node_, mps), InputError);
  auto resources = BuildResources(whole, mps);
  EXPECT_THAT(Names(resources), ElementsAre("nvidia.com/gpu x32"));
  auto labels = LabelMap(whole, mps);
  EXPECT_EQ(labels["nvidia.com/gpu.sharing-strategy"], "mps");
  EXPECT_EQ(labels["nvidia.com/mps.capable"], "true");
}

}  // namespace
}  // namespace accel::kube
