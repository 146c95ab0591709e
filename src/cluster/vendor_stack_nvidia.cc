// The NVIDIA GPU Operator's objects for the `stack: operator` NVIDIA groups: one ClusterPolicy for
// the cluster (one MIG strategy for every group), the device plugin and mig-parted ConfigMaps
// the groups' node labels pick their configs from, and an NVIDIADriver per group; and the labels
// that keep the operator off the NVIDIA groups accel's agent serves.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster/vendor_stack_internal.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/yaml_out.h"

namespace accel::cluster::vendor_stack_internal {

namespace {

// Names of the cluster-wide objects.
constexpr const char* kNvidiaClusterPolicy = "cluster-policy";  // the name NVIDIA's chart gives it
constexpr const char* kDevicePluginConfigMap = "accel-device-plugin-config";
constexpr const char* kMigPartedConfigMap = "accel-mig-parted-config";
constexpr const char* kDevicePluginDefaultKey = "default";

// The device-plugin ConfigMap key of a group's sharing: what it does, so equal configs share a
// key — "time-slicing-4", "mps-4-max1", "time-slicing-2-renamed-all-balanced". It is also the
// nvidia.com/device-plugin.config label value, so at most 63 characters (a longer one is cut
// and given a hash of the whole).
std::string DevicePluginKey(const NodeGroup& g, bool mig_resources) {
  const ReplicaSharing& r = *ReplicasOf(g);
  std::string key = std::string(g.sharing.mps ? "mps-" : "time-slicing-") + std::to_string(r.replicas);
  if (r.rename_by_default) key += "-renamed";
  if (r.fail_requests_greater_than_one) key += "-max1";
  if (mig_resources) key += "-" + g.sharing.mig;
  if (key.size() > 63) key = key.substr(0, 46) + "-" + Hex(Fnv1a(key));
  return key;
}

}  // namespace

void Builder::Nvidia() {
  const std::vector<const GroupInfo*> ops = Select(Vendor::kNvidia, Stack::kOperator);
  if (ops.empty()) return;
  const std::string ns = t_.operators.nvidia.namespace_name;

  // mig.strategy: one per ClusterPolicy (GroupMigStrategy).
  std::map<std::string, MigUse> mig_uses;
  const GroupInfo* mixed_by = nullptr;
  for (const GroupInfo* g : ops) {
    if (g->mig != MigConfigKind::kNone) mig_uses[g->group->sharing.mig].groups.push_back(g);
    if (!sharing::ServedBySingleStrategy(g->mig) && mixed_by == nullptr) mixed_by = g;
  }
  mig_strategy_ = GroupMigStrategy(t_, *ops.front()->group);
  if (mixed_by != nullptr)
    for (const GroupInfo* g : ops)
      if (g->group->sharing.mps)
        throw InputError(t_.source, FieldOf(g->index, "sharing.mps"),
                         "MPS needs the GPU Operator's mig.strategy single, but group " + mixed_by->group->name +
                             "'s MIG config " + mixed_by->group->sharing.mig +
                             " needs mixed (one strategy per ClusterPolicy; NVIDIA's device plugin refuses MPS under "
                             "mixed)",
                         "use time-slicing here, a uniform MIG config (all-<profile>) there, or run one of the two "
                         "groups with stack: accel");

  std::optional<sharing::MigPartedConfig> mig_config;
  if (!mig_uses.empty()) mig_config = BuildMigConfig(t_, mig_uses);

  // Device plugin configs, one key per distinct sharing.
  std::map<std::string, ordered_json> plugin_configs;
  std::map<std::string, std::vector<std::string>> plugin_users;
  for (const GroupInfo* g : ops) {
    if (ReplicasOf(*g->group) == nullptr) continue;
    const std::vector<std::string> resources = SharedResources(*g, mig_strategy_);
    const bool mig_resources = resources.size() != 1 || resources.front() != "nvidia.com/gpu";
    const std::string key = DevicePluginKey(*g->group, mig_resources);
    ordered_json config;
    config["version"] = "v1";
    config["sharing"] = SharingSection(*g->group, resources);
    plugin_configs[key] = config;
    plugin_users[key].push_back(g->group->name);
    part_.node_labels[g->group->name]["nvidia.com/device-plugin.config"] = key;
  }
  for (const GroupInfo* g : ops)
    if (g->mig != MigConfigKind::kNone) part_.node_labels[g->group->name]["nvidia.com/mig.config"] = g->group->sharing.mig;

  // Tolerations of the operands: NVIDIA's chart default plus every operator group's taints.
  std::set<std::pair<std::string, std::string>> taints = {{"nvidia.com/gpu", "NoSchedule"}};
  for (const GroupInfo* g : ops)
    for (const auto& taint : TaintsOf(*g->group)) taints.insert(taint);

  ordered_json spec;
  spec["operator"] = {{"defaultRuntime", ContainerEngine()}, {"runtimeClass", "nvidia"}};
  spec["daemonsets"] = {{"priorityClassName", "system-node-critical"},
                        {"updateStrategy", "RollingUpdate"},
                        {"rollingUpdate", {{"maxUnavailable", "1"}}},
                        {"tolerations", Tolerations(taints)}};
  spec["driver"] = {{"enabled", true}, {"useNvidiaDriverCRD", true}};
  spec["toolkit"] = {{"enabled", true}};
  spec["devicePlugin"] = {{"enabled", true}};
  if (!plugin_configs.empty())
    spec["devicePlugin"]["config"] = {{"name", kDevicePluginConfigMap}, {"default", kDevicePluginDefaultKey}};
  spec["dcgm"] = {{"enabled", false}};
  spec["dcgmExporter"] = {{"enabled", true}};
  spec["gfd"] = {{"enabled", true}};
  spec["nodeStatusExporter"] = {{"enabled", false}};
  spec["mig"] = {{"strategy", mig_strategy_}};
  spec["migManager"] = {{"enabled", true}, {"config", {{"default", kMigDefaultConfig}}}};
  if (mig_config) spec["migManager"]["config"] = {{"name", kMigPartedConfigMap}, {"default", kMigDefaultConfig}};

  std::string why_strategy;
  if (mixed_by != nullptr)
    why_strategy = "mig.strategy mixed: group " + mixed_by->group->name + "'s MIG config " +
                   mixed_by->group->sharing.mig +
                   " makes more than one kind of MIG device (or none), which single refuses; MIG devices are\n"
                   "then nvidia.com/mig-<profile> resources.";
  else
    why_strategy = "mig.strategy single: every NVIDIA operator group is whole GPUs or one MIG profile on every GPU,\n"
                   "so MIG devices are advertised as nvidia.com/gpu.";
  std::string operands_note;
  for (const GroupInfo* g : Select(Vendor::kNvidia, Stack::kAccel))
    operands_note += (operands_note.empty() ? "" : ", ") + g->group->name;
  ObjectFile cp;
  cp.header = Written() +
              "\nThe NVIDIA GPU Operator's one ClusterPolicy for the cluster. Install the operator's chart without its\n"
              "own policy and default driver (Helm values clusterPolicy.deployCR=false, driver.nvidiaDriverCRD.enabled=true,\n"
              "driver.nvidiaDriverCRD.deployDefaultCR=false: the chart's values.yaml; charts without clusterPolicy.deployCR\n"
              "create a cluster-policy of their own, which this one then replaces), then apply the stack/nvidia and\n"
              "<group>/stack/nvidia-driver.yaml files.";
  cp.docs.push_back(
      {"driver.useNvidiaDriverCRD: each NVIDIA operator group's driver comes from its own NVIDIADriver\n"
       "(<group>/stack/nvidia-driver.yaml), so groups may run different driver branches.\n" +
           why_strategy +
           "\nEvery other section is at the chart's default as far as the CRD requires it." +
           (operands_note.empty()
                ? std::string()
                : "\nNodes of the stack: accel groups (" + operands_note +
                      ") carry nvidia.com/gpu.deploy.operands=false: the operator removes every\n"
                      "nvidia.com/gpu.deploy.<operand> label from them, and its DaemonSets select those labels, so\n"
                      "NVIDIA's device plugin never runs beside accel's on one node (gpu-operator\n"
                      "controllers/state_manager.go, hasOperandsDisabled)."),
       {{"apiVersion", "nvidia.com/v1"},
        {"kind", "ClusterPolicy"},
        {"metadata", Metadata(kNvidiaClusterPolicy, "", "")},
        {"spec", spec}}});
  object_files_["stack/nvidia/cluster-policy.yaml"] = std::move(cp);

  if (!plugin_configs.empty()) {
    ordered_json data;
    ordered_json defaults;
    defaults["version"] = "v1";
    data[kDevicePluginDefaultKey] = ToYaml(defaults);
    std::string keys;
    for (const auto& [key, config] : plugin_configs) {
      data[key] = ToYaml(config);
      std::string users;
      for (const std::string& u : plugin_users[key]) users += (users.empty() ? "" : ", ") + u;
      keys += "\n  " + key + ": " + users;
    }
    ObjectFile f;
    f.header = Written() +
               "\nNVIDIA device plugin configs (k8s-device-plugin config v1), one key per sharing config; a node\n"
               "picks its key with the label nvidia.com/device-plugin.config=<key>, nodes without it get \"default\"\n"
               "(ClusterPolicy devicePlugin.config). Keys and the groups whose nodes carry them:" + keys;
    f.docs.push_back({"", {{"apiVersion", "v1"},
                           {"kind", "ConfigMap"},
                           {"metadata", Metadata(kDevicePluginConfigMap, ns, "")},
                           {"data", data}}});
    object_files_["stack/nvidia/device-plugin-config.yaml"] = std::move(f);
  }

  if (mig_config) {
    std::string users;
    for (const auto& [name, use] : mig_uses) {
      users += "\n  " + name + ":";
      for (const GroupInfo* g : use.groups) users += " " + g->group->name;
    }
    ObjectFile f;
    f.header = Written() +
               "\nmig-parted configs for the GPU Operator's mig-manager (ClusterPolicy migManager.config), the same\n"
               "shape as the operator's default-mig-parted-config: the file under data.\"config.yaml\". A node picks\n"
               "its config with nvidia.com/mig.config=<name>; nodes without the label get all-disabled. Configs\n"
               "and the groups whose nodes carry them:" + users;
    f.docs.push_back({"", {{"apiVersion", "v1"},
                           {"kind", "ConfigMap"},
                           {"metadata", Metadata(kMigPartedConfigMap, ns, "")},
                           {"data", {{"config.yaml", sharing::WriteMigPartedConfig(*mig_config)}}}}});
    object_files_["stack/nvidia/mig-parted-config.yaml"] = std::move(f);
  }

  for (const GroupInfo* g : ops) {
    const NodeGroup& n = *g->group;
    ordered_json s;
    s["driverType"] = "gpu";
    s["default"] = false;
    s["repository"] = "nvcr.io/nvidia";
    s["image"] = "driver";
    const std::string version = t_.DriverVersionOf(n);
    if (!version.empty()) s["version"] = version;
    s["kernelModuleType"] = n.driver.kernel_module_type;
    s["nodeSelector"] = GroupSelector(n);
    if (!n.taints.empty()) s["tolerations"] = Tolerations(TaintsOf(n));
    // GPUDirect RDMA (nvidia-peermem) for the group's RDMA NICs; the MOFED/DOCA driver comes
    // from the Network Operator's container, not the host.
    if (n.network.rdma != RdmaMode::kNone) s["rdma"] = {{"enabled", true}, {"useHostMofed", false}};
    ObjectFile f;
    f.header = Written();
    f.docs.push_back(
        {"The driver of node group " + n.name + ": NVIDIADriver selects the group's nodes by " + kNodeGroupLabel +
             ".\nversion: " + (version.empty() ? "the operator's default" : version) +
             "; kernelModuleType: " + n.driver.kernel_module_type +
             (n.network.rdma != RdmaMode::kNone ? "; rdma on for the group's RDMA NICs (network.rdma " +
                                                      std::string(RdmaModeName(n.network.rdma)) + ")"
                                                : std::string()),
         {{"apiVersion", "nvidia.com/v1alpha1"},
          {"kind", "NVIDIADriver"},
          {"metadata", Metadata(n.name, "", n.name)},
          {"spec", s}}});
    object_files_[n.name + "/stack/nvidia-driver.yaml"] = std::move(f);
  }

  // Keep the operator off the NVIDIA groups accel's agent serves. Their MIG config label is set
  // at join too: the operator labels a MIG-capable node that has none with migManager's default
  // (all-disabled) even when its operands are off (state_manager.go), which would race the
  // label accel's agent publishes for its own config (mig.stateFile).
  for (const GroupInfo* g : Select(Vendor::kNvidia, Stack::kAccel)) {
    part_.node_labels[g->group->name]["nvidia.com/gpu.deploy.operands"] = "false";
    if (g->mig != MigConfigKind::kNone) part_.node_labels[g->group->name]["nvidia.com/mig.config"] = g->group->sharing.mig;
  }
}

}  // namespace accel::cluster::vendor_stack_internal
