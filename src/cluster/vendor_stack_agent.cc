// accel's node agent for the `stack: accel` groups of every vendor: the agent's config, a
// ConfigMap + DaemonSet per group (as deploy/kubernetes/accel-agent.yaml), and the same groups
// as values of the Helm chart deploy/helm/accel-agent.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/vendor_stack_internal.h"
#include "common/hash.h"
#include "common/version.h"
#include "common/yaml_out.h"

namespace accel::cluster::vendor_stack_internal {

namespace {

// Where accel's agent keeps things inside its pod (deploy/kubernetes/accel-agent.yaml).
constexpr const char* kAgentConfigDir = "/etc/accel";
constexpr const char* kPluginDir = "/var/lib/kubelet/device-plugins";
constexpr const char* kNfdFeaturesDir = "/etc/kubernetes/node-feature-discovery/features.d";
constexpr const char* kMpsRoot = "/run/nvidia/mps";

}  // namespace

void Builder::Agents() {
  std::vector<const GroupInfo*> agents;
  for (const GroupInfo& g : groups_)
    if (g.group->vendor != Vendor::kNone && g.group->stack == Stack::kAccel) agents.push_back(&g);
  if (agents.empty()) return;
  const std::string ns = t_.operators.accel.namespace_name;
  const std::string image = std::string("accel:") + kVersion;

  ordered_json values;
  values["nodeGroups"] = {{"nvidia", {{"enabled", false}}}, {"amd", {{"enabled", false}}}, {"habana", {{"enabled", false}}}};
  std::string not_in_chart;

  for (const GroupInfo* g : agents) {
    const NodeGroup& n = *g->group;
    const std::string strategy = GroupMigStrategy(t_, *g->group);
    const ReplicaSharing* replicas = ReplicasOf(n);
    const std::vector<std::string> resources = SharedResources(*g, strategy);

    // agent.yaml (src/agent/agent_config.h, docs/node-agent.md).
    ordered_json plugin;
    plugin["version"] = "v1";
    plugin["pluginDir"] = kPluginDir;
    if (n.vendor == Vendor::kNvidia) {
      plugin["flags"]["migStrategy"] = strategy;
      if (n.sharing.mps) plugin["flags"]["mpsRoot"] = kMpsRoot;
    }
    if (replicas != nullptr) plugin["sharing"] = SharingSection(n, resources);
    ordered_json agent;
    agent["vendors"] = ordered_json::array({std::string(VendorName(n.vendor))});
    agent["exporter"] = {{"enabled", true}, {"listen", ":9400"}, {"profile", "auto"}, {"collectInterval", "5s"}};
    agent["devicePlugin"] = {{"enabled", true}, {"config", plugin}};
    agent["labels"] = {{"enabled", true}, {"file", std::string(kNfdFeaturesDir) + "/accel"}, {"interval", "60s"}};
    std::optional<std::string> mig_parted;
    if (g->mig != MigConfigKind::kNone) {
      std::map<std::string, MigUse> uses;
      uses[n.sharing.mig].groups.push_back(g);
      mig_parted = sharing::WriteMigPartedConfig(BuildMigConfig(t_, uses));
      agent["mig"] = {{"enabled", true},
                      {"configFile", std::string(kAgentConfigDir) + "/mig-parted.yaml"},
                      {"config", n.sharing.mig},
                      {"stateFile", std::string(kNfdFeaturesDir) + "/accel-mig"}};
    } else {
      agent["mig"] = {{"enabled", false}};
    }
    const std::string agent_yaml = ToYaml(agent);
    std::string what = "\n  vendor " + std::string(VendorName(n.vendor));
    if (n.vendor == Vendor::kNvidia) what += "\n  MIG strategy " + strategy;
    if (g->mig != MigConfigKind::kNone) what += "\n  MIG config " + n.sharing.mig + ", applied at start (mig-parted.yaml)";
    if (replicas != nullptr) {
      std::string list;
      for (const std::string& r : resources) list += (list.empty() ? "" : ", ") + r;
      what += std::string(n.sharing.mps ? "\n  MPS" : "\n  time-slicing") + " x" +
              std::to_string(replicas->replicas) + " of " + list;
    }
    part_.files[n.name + "/stack/agent.yaml"] =
        Comment(Written() + "\naccel's node agent on node group " + n.name +
                " (accel serve --config; docs/node-agent.md):" + what +
                "\nThe same file is in " + n.name + "/stack/accel-agent.yaml's ConfigMap.") +
        agent_yaml;

    // ConfigMap + DaemonSet, as deploy/kubernetes/accel-agent.yaml with the group's selector.
    const std::string name = "accel-agent-" + n.name;
    ordered_json data;
    data["agent.yaml"] = agent_yaml;
    if (mig_parted) data["mig-parted.yaml"] = *mig_parted;
    const std::string config_hash = Hex(Fnv1a(ordered_json(data).dump()));
    ordered_json labels = {{"app.kubernetes.io/name", "accel-agent"}, {kNodeGroupLabel, n.name}};
    ordered_json env = ordered_json::array();
    env.push_back({{"name", "NODE_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}});
    if (n.vendor == Vendor::kNvidia) {
      // The NVIDIA container toolkit injects NVML and /dev/nvidia* without a GPU request; MPS
      // also needs nvidia-cuda-mps-control, which comes with "compute".
      env.push_back({{"name", "NVIDIA_VISIBLE_DEVICES"}, {"value", "all"}});
      env.push_back({{"name", "NVIDIA_DRIVER_CAPABILITIES"}, {"value", n.sharing.mps ? "compute,utility" : "utility"}});
    }
    ordered_json mounts = ordered_json::array();
    ordered_json volumes = ordered_json::array();
    auto host_path = [&](const std::string& vname, const std::string& path, const std::string& type, bool read_only) {
      ordered_json m = {{"name", vname}, {"mountPath", path}};
      if (read_only) m["readOnly"] = true;
      mounts.push_back(m);
      ordered_json hp = {{"path", path}};
      if (!type.empty()) hp["type"] = type;
      volumes.push_back({{"name", vname}, {"hostPath", hp}});
    };
    mounts.push_back({{"name", "config"}, {"mountPath", kAgentConfigDir}, {"readOnly", true}});
    volumes.push_back({{"name", "config"}, {"configMap", {{"name", name}}}});
    // Directories, not socket files: the kubelet re-creates its sockets when it restarts.
    host_path("device-plugins", kPluginDir, "Directory", false);
    host_path("pod-resources", "/var/lib/kubelet/pod-resources", "Directory", true);
    host_path("nfd-features", kNfdFeaturesDir, "DirectoryOrCreate", false);
    host_path("dev", "/dev", "", false);
    if (n.sharing.mps) {
      host_path("mps-root", kMpsRoot, "DirectoryOrCreate", false);
      host_path("dev-shm", "/dev/shm", "Directory", false);
    }
    mounts.push_back({{"name", "tmp"}, {"mountPath", "/tmp"}});
    volumes.push_back({{"name", "tmp"}, {"emptyDir", {{"sizeLimit", "16Mi"}}}});

    ordered_json container;
    container["name"] = "accel-agent";
    container["image"] = image;
    container["imagePullPolicy"] = "IfNotPresent";
    container["command"] = {"/usr/local/bin/accel", "serve", "--config", std::string(kAgentConfigDir) + "/agent.yaml"};
    container["env"] = env;
    container["ports"] = ordered_json::array({{{"name", "metrics"}, {"containerPort", 9400}, {"protocol", "TCP"}}});
    container["livenessProbe"] = {{"httpGet", {{"path", "/health"}, {"port", "metrics"}}},
                                  {"initialDelaySeconds", 15},
                                  {"periodSeconds", 10},
                                  {"timeoutSeconds", 5}};
    container["resources"] = {{"requests", {{"cpu", "30m"}, {"memory", "48Mi"}}}, {"limits", {{"memory", "128Mi"}}}};
    container["securityContext"] = {{"privileged", true}, {"readOnlyRootFilesystem", true}};
    container["volumeMounts"] = mounts;

    ordered_json pod;
    if (n.sharing.mps) pod["hostPID"] = true;
    pod["automountServiceAccountToken"] = false;
    pod["priorityClassName"] = "system-node-critical";
    pod["nodeSelector"] = GroupSelector(n);
    if (!n.taints.empty()) pod["tolerations"] = Tolerations(TaintsOf(n));
    pod["terminationGracePeriodSeconds"] = 20;
    pod["containers"] = ordered_json::array({container});
    pod["volumes"] = volumes;

    ordered_json ds_meta = Metadata(name, ns, n.name);
    ds_meta["labels"]["app.kubernetes.io/name"] = "accel-agent";
    ordered_json ds = {
        {"apiVersion", "apps/v1"},
        {"kind", "DaemonSet"},
        {"metadata", ds_meta},
        {"spec",
         {{"selector", {{"matchLabels", labels}}},
          {"updateStrategy", {{"type", "RollingUpdate"}, {"rollingUpdate", {{"maxUnavailable", 1}}}}},
          {"template",
           {{"metadata", {{"labels", labels}, {"annotations", {{"accel.io/config-hash", config_hash}}}}},
            {"spec", pod}}}}}};
    ordered_json cm_meta = Metadata(name, ns, n.name);
    cm_meta["labels"]["app.kubernetes.io/name"] = "accel-agent";
    ObjectFile f;
    f.header = Written() +
               "\naccel's node agent on node group " + n.name + " (deploy/kubernetes/accel-agent.yaml, one per group):\n"
               "exporter, device plugin, node-feature-discovery labels" +
               (g->mig != MigConfigKind::kNone ? ", MIG manager" : "") + ".\n  kubectl create namespace " + ns +
               "\n  kubectl apply -f " + n.name + "/stack/accel-agent.yaml";
    f.docs.push_back({"The agent's config (" + n.name + "/stack/agent.yaml)" +
                          (mig_parted ? " and the mig-parted file it applies" : "") + ".",
                      {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", cm_meta}, {"data", data}}});
    f.docs.push_back({"One agent per node of the group (nodeSelector " + std::string(kNodeGroupLabel) + "=" + n.name +
                          (n.taints.empty() ? std::string() : ", its taints tolerated") +
                          ").\naccel.io/config-hash rolls the pods when the ConfigMap changes." +
                          (n.sharing.mps ? "\nMPS: hostPID, the compute capability, the MPS root and /dev/shm "
                                           "(docs/node-agent.md, \"MPS\")."
                                         : std::string()),
                      ds});
    object_files_[n.name + "/stack/accel-agent.yaml"] = std::move(f);

    // Helm values of deploy/helm/accel-agent. Its timeSlicing/mps share nvidia.com/gpu only.
    const bool chart_can = replicas == nullptr || resources == std::vector<std::string>{"nvidia.com/gpu"};
    if (!chart_can) {
      std::string list;
      for (const std::string& r : resources) list += (list.empty() ? "" : ", ") + r;
      not_in_chart += "\n  " + n.name + ": shares " + list;
      continue;
    }
    ordered_json v;
    v["enabled"] = true;
    v["nodeSelector"] = GroupSelector(n);
    v["tolerations"] = Tolerations(TaintsOf(n));
    ordered_json venv = ordered_json::object();
    if (n.vendor == Vendor::kNvidia) {
      venv["NVIDIA_VISIBLE_DEVICES"] = "all";
      venv["NVIDIA_DRIVER_CAPABILITIES"] = "utility";  // the chart adds "compute" for MPS itself
    }
    v["env"] = venv;
    if (n.vendor == Vendor::kNvidia) v["migStrategy"] = strategy;
    auto replica_values = [&](const std::optional<ReplicaSharing>& r, bool mps) {
      return ordered_json{{"replicas", r ? r->replicas : 0},
                          {"renameByDefault", r ? r->rename_by_default : false},
                          {"failRequestsGreaterThanOne", r ? r->fail_requests_greater_than_one : mps}};
    };
    if (n.vendor == Vendor::kNvidia) {
      v["timeSlicing"] = replica_values(n.sharing.time_slicing, false);
      v["mps"] = replica_values(n.sharing.mps, true);
      v["mig"] = {{"enabled", mig_parted.has_value()}};
      if (mig_parted) {
        v["mig"]["config"] = n.sharing.mig;
        v["mig"]["partedConfig"] = *mig_parted;
      }
    }
    v["agent"] = {{"vendors", ordered_json::array({std::string(VendorName(n.vendor))})}};
    values["nodeGroups"][n.name] = v;
  }
  std::string header = Written() +
                       "\nValues for accel's Helm chart deploy/helm/accel-agent: one DaemonSet and agent.yaml per node group\n"
                       "that runs accel's agent (the chart's own nvidia/amd/habana groups are turned off).\n"
                       "  helm install accel-agent deploy/helm/accel-agent -n " + ns +
                       " --create-namespace -f stack/accel/values.yaml\n"
                       "The chart then makes the same DaemonSets as <group>/stack/accel-agent.yaml (use one or the other).";
  if (!not_in_chart.empty())
    header += "\nNot here: groups whose sharing the chart cannot express (its timeSlicing and mps share\n"
              "nvidia.com/gpu only); use their <group>/stack/accel-agent.yaml:" +
              not_in_chart;
  part_.files["stack/accel/values.yaml"] = Comment(header) + ToYaml(values);
}

}  // namespace accel::cluster::vendor_stack_internal
