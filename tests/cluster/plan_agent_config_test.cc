// Writer/reader pairs of `accel cluster plan`: the agent.yaml the vendor stack writes for a node
// group is read by the node agent's own reader (agent::ParseAgentConfig, what `accel serve
// --config` runs), and the mig-parted.yaml beside it by the mig-parted reader the agent's MIG
// manager uses, and each means what the template asked for.
#include <gtest/gtest.h>

#include <string>

#include "agent/agent_config.h"
#include "cluster/plan.h"
#include "cluster/template.h"
#include "cluster/vendor_stack.h"
#include "common/structured_file.h"
#include "sharing/mig_parted_config.h"

namespace accel::cluster {
namespace plan_agent_config_test {

using nlohmann::json;

const std::string kExampleDir = std::string(ACCEL_SOURCE_DIR) + "/examples/cluster";

const std::string kTemplate = R"(apiVersion: accel.cluster/v1
kind: ClusterTemplate
metadata: {name: t1}
spec:
  kubernetesVersion: v1.33.2
  flavors: [../flavors/, flavors/]
  aliases: ../flavors/aliases.json
  hypervisor: ../../fixtures/hosts/hgx-h100.json
  nodeGroups:
  - {name: agent-mig, flavor: gpu-1g, count: 2, vendor: nvidia, sharing: {mig: all-1g.10gb, timeSlicing: {replicas: 3}}}
  - {name: agent-mps, flavor: gpu-1g, count: 1, vendor: nvidia, sharing: {mps: {replicas: 4}}}
  - {name: agent-plain, flavor: gpu-1g, count: 1, vendor: nvidia}
)";

StackPart Plan() {
  const ClusterTemplate t = ParseClusterTemplateText(kTemplate, "t.yaml", kExampleDir);
  return VendorStack(t, PlanCluster(t));
}

/// The agent.yaml of `group` as the agent reads it, and as the ConfigMap of its DaemonSet holds
/// it; both must read the same.
agent::AgentConfig AgentOf(const StackPart& part, const std::string& group) {
  const std::string& text = part.files.at(group + "/stack/agent.yaml");
  agent::AgentConfig config = agent::ParseAgentConfig(text, group + "/stack/agent.yaml");
  bool in_config_map = false;
  for (const auto& o : part.objects) {
    if (o.value("kind", "") != "ConfigMap" || o["metadata"]["name"] != "accel-agent-" + group) continue;
    const std::string cm_text = o["data"]["agent.yaml"].get<std::string>();
    EXPECT_EQ(ParseStructuredText(cm_text, "cm"), ParseStructuredText(text, "file")) << group;
    EXPECT_NO_THROW(agent::ParseAgentConfig(cm_text, "accel-agent-" + group + ": data.agent.yaml")) << group;
    in_config_map = true;
  }
  EXPECT_TRUE(in_config_map) << group;
  return config;
}

/// The mig-parted.yaml of the group's ConfigMap, read as the agent's MIG manager reads it.
sharing::MigPartedConfig MigPartedOf(const StackPart& part, const std::string& group) {
  for (const auto& o : part.objects) {
    if (o.value("kind", "") != "ConfigMap" || o["metadata"]["name"] != "accel-agent-" + group) continue;
    return sharing::ParseMigPartedConfig(o["data"]["mig-parted.yaml"].get<std::string>(), "mig-parted.yaml");
  }
  ADD_FAILURE() << "no ConfigMap accel-agent-" << group;
  return {};
}

TEST(PlanAgentConfig, EveryGroupsAgentYamlReadsBackAsPlanned) {
  const StackPart part = Plan();
  for (const char* group : {"agent-mig", "agent-mps", "agent-plain"}) {
    SCOPED_TRACE(group);
    const agent::AgentConfig c = AgentOf(part, group);
    EXPECT_EQ(c.vendors, std::vector<std::string>{"nvidia"});
    EXPECT_TRUE(c.exporter.enabled);
    EXPECT_EQ(c.exporter.listen, ":9400");
    EXPECT_EQ(c.exporter.collect_interval, std::chrono::milliseconds(5000));
    EXPECT_TRUE(c.device_plugin.enabled);
    EXPECT_EQ(c.device_plugin.config.plugin_dir, "/var/lib/kubelet/device-plugins");
    EXPECT_TRUE(c.labels.enabled);
    EXPECT_EQ(c.labels.file, "/etc/kubernetes/node-feature-discovery/features.d/accel");
    EXPECT_EQ(c.labels.interval, std::chrono::milliseconds(60000));
    EXPECT_FALSE(c.dra.enabled);
  }
}

TEST(PlanAgentConfig, MigGroupAppliesItsConfigAndSharesItsSlices) {
  const StackPart part = Plan();
  const agent::AgentConfig c = AgentOf(part, "agent-mig");
  // One profile on every GPU: the single strategy, the MIG manager on with the group's config.
  EXPECT_EQ(c.device_plugin.config.mig_strategy, kube::MigStrategy::kSingle);
  EXPECT_TRUE(c.mig.enabled);
  EXPECT_EQ(c.mig.config, "all-1g.10gb");
  EXPECT_EQ(c.mig.config_file, "/etc/accel/mig-parted.yaml");
  // The mig-parted file written beside it holds that config, with MIG on.
  const sharing::MigPartedConfig parted = MigPartedOf(part, "agent-mig");
  const sharing::MigConfig* config = parted.Find(c.mig.config);
  ASSERT_NE(config, nullptr);
  ASSERT_FALSE(config->entries.empty());
  EXPECT_TRUE(config->entries[0].mig_enabled);
  // Time-slicing x3 of what the plugin advertises.
  EXPECT_EQ(c.device_plugin.config.sharing_strategy(), kube::SharingStrategy::kTimeSlicing);
  ASSERT_FALSE(c.device_plugin.config.time_slicing.resources.empty());
  for (const kube::SharedResource& r : c.device_plugin.config.time_slicing.resources) {
    EXPECT_EQ(r.replicas, 3) << r.name;
  }
  EXPECT_EQ(c.device_plugin.config.time_slicing.resources[0].name, "nvidia.com/gpu");
}

TEST(PlanAgentConfig, MpsGroupRunsMpsWithItsReplicas) {
  const StackPart part = Plan();
  const agent::AgentConfig c = AgentOf(part, "agent-mps");
  EXPECT_EQ(c.device_plugin.config.sharing_strategy(), kube::SharingStrategy::kMps);
  ASSERT_EQ(c.device_plugin.config.mps.resources.size(), 1u);
  EXPECT_EQ(c.device_plugin.config.mps.resources[0].name, "nvidia.com/gpu");
  EXPECT_EQ(c.device_plugin.config.mps.resources[0].replicas, 4);
  EXPECT_EQ(c.device_plugin.config.mps_settings.root, "/run/nvidia/mps");
  EXPECT_FALSE(c.mig.enabled);
}

TEST(PlanAgentConfig, PlainGroupSharesNothing) {
  const agent::AgentConfig c = AgentOf(Plan(), "agent-plain");
  EXPECT_EQ(c.device_plugin.config.sharing_strategy(), kube::SharingStrategy::kNone);
  EXPECT_FALSE(c.mig.enabled);
}

}  // namespace plan_agent_config_test
}  // namespace accel::cluster
