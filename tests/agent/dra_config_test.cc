// The agent's dra: block: defaults, every key, and refusals that name the key.
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "agent/agent_config.h"
#include "common/error.h"
#include "support/crd_validate.h"

namespace accel::agent {
namespace dra_config_test {

TEST(AgentDraConfig, OffByDefaultWithTheKubeletsPaths) {
  DraSection d = ParseAgentConfig("", "agent.yaml").dra;
  EXPECT_FALSE(d.enabled);
  EXPECT_EQ(d.driver_name, "accel.io");
  EXPECT_EQ(d.registry_dir, "/var/lib/kubelet/plugins_registry");
  EXPECT_EQ(d.cdi_dir, "/var/run/cdi");
  EXPECT_EQ(d.state_dir, "/var/lib/accel/dra");
  EXPECT_EQ(d.host_root, "/");
  EXPECT_TRUE(d.publish_vfs);
  EXPECT_TRUE(d.partitionable_devices);
  EXPECT_EQ(d.nccl_socket_ifname, "eth0");
}

TEST(AgentDraConfig, ParsesTheBlock) {
  DraSection d = ParseAgentConfig(R"(
dra:
  enabled: true
  driverName: gpu.example.com
  nodeName: gpu-node-7
  kubeconfig: kube/config
  registryDir: /k/plugins_registry
  cdiDir: /etc/cdi
  stateDir: /var/lib/x
  publishVfs: false
  partitionableDevices: false
  hostRoot: /host
  resyncInterval: 5m
  nccl: {socketIfname: bond0, topoFile: /etc/accel/nccl-topo.xml}
)", "/etc/accel/agent.yaml").dra;
  EXPECT_TRUE(d.enabled);
  EXPECT_EQ(d.driver_name, "gpu.example.com");
  EXPECT_EQ(d.node_name, "gpu-node-7");
  EXPECT_EQ(d.kubeconfig, "/etc/accel/kube/config");  // relative to the agent file
  EXPECT_EQ(d.plugin_dir, "/var/lib/kubelet/plugins/gpu.example.com");
  EXPECT_EQ(d.registry_dir, "/k/plugins_registry");
  EXPECT_EQ(d.cdi_dir, "/etc/cdi");
  EXPECT_EQ(d.state_dir, "/var/lib/x");
  EXPECT_FALSE(d.publish_vfs);
  EXPECT_FALSE(d.partitionable_devices);
  EXPECT_EQ(d.host_root, "/host");
  EXPECT_EQ(d.resync_interval.count(), 300000);
  EXPECT_EQ(d.nccl_socket_ifname, "bond0");
  EXPECT_EQ(d.nccl_topo_file, "/etc/accel/nccl-topo.xml");
}

TEST(AgentDraConfig, RefusesBadValuesNamingTheKey) {
  struct Case {
    const char* yaml;
    const char* field;
  } cases[] = {
      {"dra: {enabled: true, driverName: Accel_IO}", "dra.driverName"},
      {"dra: {enabled: true, driverName: a-very-long-driver-name-that-is-longer-than-sixty-three.example.com}",
       "dra.driverName"},
      {"dra: {enabled: true, nodeName: 'node 1'}", "dra.nodeName"},
      {"dra: {enabled: true, resyncInterval: 10ms}", "dra.resyncInterval"},
      {"dra: {enabled: true, cdiDir: cdi}", "dra.cdiDir"},
      {"dra: {enabled: true, stateDir: ''}", "dra.stateDir"},
      {"dra: {enabled: true, hostRoot: host}", "dra.hostRoot"},
      {"dra: {enabled: yes-please}", "dra.enabled"},
      {"dra: {enabeld: true}", "dra.enabeld"},
      {"dra: {nccl: {ifname: eth0}}", "dra.nccl.ifname"},
  };
  for (const Case& c : cases) {
    try {
      ParseAgentConfig(c.yaml, "agent.yaml");
      ADD_FAILURE() << "expected InputError for " << c.yaml;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(c.field), std::string::npos) << c.yaml << " -> " << e.what();
    }
  }
}

const std::string kDeploy = std::string(ACCEL_SOURCE_DIR) + "/deploy/kubernetes/accel-dra.yaml";

// The DaemonSet's agent.yaml is one the agent accepts, runs the driver and not the device plugin.
TEST(AgentDraDeploy, TheManifestsAgentYamlStartsTheDriver) {
  bool found = false;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(kDeploy)) {
    if (doc["kind"].as<std::string>() != "ConfigMap") continue;
    AgentConfig c = ParseAgentConfig(doc["data"]["agent.yaml"].as<std::string>(), "accel-dra.yaml");
    EXPECT_TRUE(c.dra.enabled);
    EXPECT_FALSE(c.device_plugin.enabled);
    EXPECT_EQ(c.dra.driver_name, "accel.io");
    found = true;
  }
  EXPECT_TRUE(found);
}

// The ClusterRole grants every verb the driver uses, and the DaemonSet mounts what it serves.
TEST(AgentDraDeploy, RbacAndMountsCoverWhatTheDriverDoes) {
  std::set<std::string> granted;
  std::set<std::string> mounts;
  for (const YAML::Node& doc : YAML::LoadAllFromFile(kDeploy)) {
    const std::string kind = doc["kind"].as<std::string>();
    if (kind == "ClusterRole") {
      for (const YAML::Node& rule : doc["rules"])
        for (const YAML::Node& resource : rule["resources"])
          for (const YAML::Node& verb : rule["verbs"])
            granted.insert(verb.as<std::string>() + " " + resource.as<std::string>());
    }
    if (kind == "DaemonSet") {
      for (const YAML::Node& m : doc["spec"]["template"]["spec"]["containers"][0]["volumeMounts"])
        mounts.insert(m["mountPath"].as<std::string>());
    }
  }
  for (const char* need : {"list resourceslices", "create resourceslices", "update resourceslices",
                           "delete resourceslices", "get resourceclaims", "get nodes"})
    EXPECT_TRUE(granted.count(need)) << need;
  DraSection defaults;
  for (const std::string& dir : {defaults.registry_dir, std::string("/var/lib/kubelet/plugins"),
                                 defaults.cdi_dir, defaults.state_dir, std::string("/dev")})
    EXPECT_TRUE(mounts.count(dir)) << dir;
}

TEST(AgentDraDeploy, ValidatesAgainstTheKubernetesSchemas) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  std::ifstream in(kDeploy);
  std::stringstream text;
  text << in.rdbuf();
  test_support::CrdResult r = test_support::ValidateObjects(text.str(), "accel-dra");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace accel::agent
