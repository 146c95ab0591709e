#include "cluster/vendor_stack.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "cluster/check.h"
#include "common/error.h"
#include "common/hash.h"
#include "common/version.h"
#include "common/yaml_out.h"
#include "fleet/fleet_view.h"
#include "sharing/mig_default_configs.h"
#include "sharing/mig_geometry.h"
#include "sharing/mig_parted_config.h"
#include "topology/classify.h"

namespace accel::cluster {

using MigConfigKind = sharing::DefaultMigConfigKind;
using sharing::MigDevices;

namespace {

using nlohmann::ordered_json;
using sharing::GpuModel;

constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
// Names of the cluster-wide objects.
constexpr const char* kNvidiaClusterPolicy = "cluster-policy";  // the name NVIDIA's chart gives it
constexpr const char* kDevicePluginConfigMap = "accel-device-plugin-config";
constexpr const char* kMigPartedConfigMap = "accel-mig-parted-config";
constexpr const char* kDevicePluginDefaultKey = "default";
constexpr const char* kMigDefaultConfig = "all-disabled";  // NVIDIA's chart default (migManager.config.default)
constexpr const char* kHabanaClusterPolicy = "habana-ai";   // the name in Intel's sample (see below)

// Where accel's agent keeps things inside its pod (deploy/kubernetes/accel-agent.yaml).
constexpr const char* kAgentConfigDir = "/etc/accel";
constexpr const char* kPluginDir = "/var/lib/kubelet/device-plugins";
constexpr const char* kNfdFeaturesDir = "/etc/kubernetes/node-feature-discovery/features.d";
constexpr const char* kMpsRoot = "/run/nvidia/mps";

// ---------------------------------------------------------------------------------------------
// YAML text

// `text` as YAML comment lines ("# ..."); "" stays "".
std::string Comment(const std::string& text) {
  if (text.empty()) return "";
  std::string out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    out += line.empty() ? "#\n" : "# " + line + "\n";
    if (end == text.size()) break;
    start = end + 1;
  }
  return out;
}

// One Kubernetes object and the comment above it.
struct ObjectDocument {
  std::string comment;
  ordered_json object;
};

// A file of Kubernetes objects.
struct ObjectFile {
  std::string header;
  std::vector<ObjectDocument> docs;
};

std::string Render(const ObjectFile& f) {
  std::string text = Comment(f.header);
  for (size_t i = 0; i < f.docs.size(); ++i) {
    if (i > 0) text += "---\n";
    if (i == 0 && !text.empty() && !f.docs[i].comment.empty()) text += "\n";
    text += Comment(f.docs[i].comment) + ToYaml(f.docs[i].object);
  }
  return text;
}

std::string Hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Small Kubernetes pieces

ordered_json Metadata(const std::string& name, const std::string& namespace_name, const std::string& group) {
  ordered_json m;
  m["name"] = name;
  if (!namespace_name.empty()) m["namespace"] = namespace_name;
  m["labels"][kManagedByLabel] = "accel";
  if (!group.empty()) m["labels"][kNodeGroupLabel] = group;
  return m;
}

ordered_json GroupSelector(const NodeGroup& g) {
  ordered_json s;
  s[kNodeGroupLabel] = g.name;
  return s;
}

// Tolerations for a set of (key, effect): `operator: Exists`, so a changed taint value does not
// strand the stack.
ordered_json Tolerations(const std::set<std::pair<std::string, std::string>>& taints) {
  ordered_json list = ordered_json::array();
  for (const auto& [key, effect] : taints)
    list.push_back({{"key", key}, {"operator", "Exists"}, {"effect", effect}});
  return list;
}

std::set<std::pair<std::string, std::string>> TaintsOf(const NodeGroup& g) {
  std::set<std::pair<std::string, std::string>> set;
  for (const Taint& t : g.taints) set.emplace(t.key, std::string(TaintEffectName(t.effect)));
  return set;
}

std::string FieldOf(size_t index, const std::string& key) {
  return "spec.nodeGroups[" + std::to_string(index) + "]." + key;
}

// ---------------------------------------------------------------------------------------------
// MIG: the mig-parted configs accel can write

// The MIG-capable GPU models among a group's passed-through NVIDIA GPUs (catalog order), and the
// PCI ids of NVIDIA GPUs the catalog does not know.
struct GroupGpus {
  std::vector<const GpuModel*> models;
  std::vector<std::string> unknown;  ///< "10de:2684"
};

GroupGpus GpusOf(const GroupPlan* plan) {
  GroupGpus out;
  if (plan == nullptr) return out;
  std::set<const GpuModel*> seen;
  for (const kubelet::GuestDevice& d : plan->layout.devices) {
    if (d.role != topology::PciRole::kGpu || d.vendor_id != topology::kVendorNvidia) continue;
    const uint32_t pci_id = (static_cast<uint32_t>(d.device_id) << 16) | d.vendor_id;
    const GpuModel* model = sharing::FindGpuModelByPciId(pci_id);
    if (model != nullptr) {
      seen.insert(model);
      continue;
    }
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04x:%04x", d.vendor_id, d.device_id);
    if (std::find(out.unknown.begin(), out.unknown.end(), buf) == out.unknown.end()) out.unknown.push_back(buf);
  }
  for (const GpuModel& m : sharing::MigCatalog())
    if (seen.count(&m)) out.models.push_back(&m);
  return out;
}

// What one group is, as this part sees it.
struct GroupInfo {
  const NodeGroup* group = nullptr;
  size_t index = 0;          ///< in t.groups
  GroupGpus gpus;            ///< NVIDIA GPUs of its flavor
  MigConfigKind mig = MigConfigKind::kNone;  ///< its sharing.mig
};

// One mig-parted config name and every group that asks for it.
struct MigUse {
  std::vector<const GroupInfo*> groups;
};

// Builds the mig-parted config with every name of `uses` (plus all-disabled), each config with
// one entry per distinct layout over the models of the groups that use it. Throws InputError
// for a name accel cannot write.
sharing::MigPartedConfig BuildMigConfig(const ClusterTemplate& t, const std::map<std::string, MigUse>& uses) {
  sharing::MigPartedConfig config;
  std::vector<const GpuModel*> all_models;
  auto add_simple = [&](const std::string& name, bool enabled) {
    sharing::MigConfig c;
    c.name = name;
    sharing::MigConfigEntry e;
    e.mig_enabled = enabled;
    c.entries.push_back(e);
    config.configs.push_back(std::move(c));
  };
  add_simple(kMigDefaultConfig, false);
  for (const auto& [name, use] : uses) {
    const GroupInfo& first = *use.groups.front();
    const std::string field = FieldOf(first.index, "sharing.mig");
    const MigConfigKind kind = sharing::DefaultMigConfigKindOf(name);
    if (kind == MigConfigKind::kDisabled) continue;  // written above
    if (kind == MigConfigKind::kUnknown)
      throw InputError(t.source, field, "accel cannot write mig-parted config '" + name + "' for this group",
                       "use all-disabled, all-enabled, all-balanced or all-<profile> (NVIDIA's default config names, "
                       "e.g. all-1g.10gb; `accel mig profiles` lists the profiles)");
    // The models of every group using the name; a group without a known MIG GPU cannot.
    std::vector<const GpuModel*> models;
    for (const GroupInfo* g : use.groups) {
      if (g->gpus.models.empty()) {
        std::string gpus;
        for (const std::string& u : g->gpus.unknown) gpus += (gpus.empty() ? "" : ", ") + u;
        throw InputError(t.source, FieldOf(g->index, "sharing.mig"),
                         "group " + g->group->name + " has no MIG-capable NVIDIA GPU accel knows" +
                             (gpus.empty() ? std::string(" (its flavor passes through no NVIDIA GPU)")
                                           : " (its GPUs: " + gpus + ")"),
                         "MIG needs a GPU of accel's MIG catalog (`accel mig profiles`); remove sharing.mig or use "
                         "all-disabled");
      }
      for (const GpuModel* m : g->gpus.models)
        if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
    }
    for (const GpuModel* m : models)
      if (std::find(all_models.begin(), all_models.end(), m) == all_models.end()) all_models.push_back(m);
    if (kind == MigConfigKind::kEnabledEmpty) {
      add_simple(name, true);
      continue;
    }
    sharing::MigConfig c;
    c.name = name;
    for (const GpuModel* m : models) {
      std::string why;
      const std::optional<MigDevices> devices = sharing::DefaultMigDevices(name, *m, &why);
      if (!devices) {
        const GroupInfo* user = use.groups.front();
        for (const GroupInfo* g : use.groups)
          if (std::find(g->gpus.models.begin(), g->gpus.models.end(), m) != g->gpus.models.end()) {
            user = g;
            break;
          }
        throw InputError(t.source, FieldOf(user->index, "sharing.mig"),
                         "mig-parted config '" + name + "' cannot be laid out on this group's GPUs: " + why,
                         "pick a profile of that model (`accel mig profiles`)");
      }
      // Models with the same layout share one entry (one device-filter list), as in NVIDIA's file.
      bool merged = false;
      for (sharing::MigConfigEntry& e : c.entries) {
        if (e.mig_devices != *devices) continue;
        for (uint32_t id : m->pci_ids) e.device_filter.push_back({id, std::nullopt});
        merged = true;
        break;
      }
      if (merged) continue;
      sharing::MigConfigEntry e;
      e.mig_enabled = true;
      e.mig_devices = *devices;
      for (uint32_t id : m->pci_ids) e.device_filter.push_back({id, std::nullopt});
      c.entries.push_back(std::move(e));
    }
    config.configs.push_back(std::move(c));
  }
  // Every entry is checked like `accel mig validate` checks a file (geometry, media engines).
  for (const sharing::ConfigFinding& f : sharing::ValidateMigPartedConfig(config, all_models)) {
    if (!f.is_error()) continue;
    size_t index = uses.begin()->second.groups.front()->index;
    if (auto it = uses.find(f.config); it != uses.end()) index = it->second.groups.front()->index;
    throw InputError(t.source, FieldOf(index, "sharing.mig"),
                     "mig-parted config '" + f.config + "' is invalid on " + f.model + ": " + f.message,
                     "pick another config (`accel mig profiles`)");
  }
  return config;
}

// The MIG devices `name` makes on the group's GPUs, as resource names under the mixed strategy
// ("nvidia.com/mig-1g.10gb"; '+' becomes '.', as NVIDIA's device plugin names them).
std::vector<std::string> MixedResources(const std::string& name, const GroupInfo& g) {
  std::set<std::string> names;
  const MigConfigKind kind = sharing::DefaultMigConfigKindOf(name);
  if (kind != MigConfigKind::kBalanced && kind != MigConfigKind::kSingleProfile) return {};
  for (const GpuModel* m : g.gpus.models) {
    std::string why;
    const std::optional<MigDevices> devices = sharing::DefaultMigDevices(name, *m, &why);
    if (!devices) continue;
    for (const auto& [profile, count] : *devices) names.insert(sharing::MixedStrategyResource(profile));
  }
  return {names.begin(), names.end()};
}

// ---------------------------------------------------------------------------------------------
// Device plugin sharing

const ReplicaSharing* ReplicasOf(const NodeGroup& g) {
  if (g.sharing.mps) return &*g.sharing.mps;
  if (g.sharing.time_slicing) return &*g.sharing.time_slicing;
  return nullptr;
}

// The resources a group's device plugin shares: the vendor's resource, or under the mixed MIG
// strategy the group's MIG device resources.
std::vector<std::string> SharedResources(const GroupInfo& g, const std::string& mig_strategy) {
  switch (g.group->vendor) {
    case Vendor::kAmd: return {"amd.com/gpu"};
    case Vendor::kHabana: return {"habana.ai/gaudi"};
    case Vendor::kNone: return {};
    case Vendor::kNvidia: break;
  }
  if (mig_strategy == "mixed") {
    std::vector<std::string> mig = MixedResources(g.group->sharing.mig, g);
    if (!mig.empty()) return mig;
  }
  return {"nvidia.com/gpu"};
}

// sharing.timeSlicing or sharing.mps of NVIDIA's device plugin config (version v1).
ordered_json SharingSection(const NodeGroup& g, const std::vector<std::string>& resources) {
  const ReplicaSharing& r = *ReplicasOf(g);
  ordered_json section;
  section["renameByDefault"] = r.rename_by_default;
  section["failRequestsGreaterThanOne"] = r.fail_requests_greater_than_one;
  section["resources"] = ordered_json::array();
  for (const std::string& name : resources) section["resources"].push_back({{"name", name}, {"replicas", r.replicas}});
  ordered_json sharing;
  sharing[g.sharing.mps ? "mps" : "timeSlicing"] = section;
  return sharing;
}

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

// ---------------------------------------------------------------------------------------------
// The generator

class Builder {
 public:
  Builder(const ClusterTemplate& t, const ClusterPlan& plan) : t_(t) {
    for (size_t i = 0; i < t.groups.size(); ++i) {
      GroupInfo g;
      g.group = &t.groups[i];
      g.index = i;
      const GroupPlan* gp = nullptr;
      for (const GroupPlan& p : plan.groups)
        if (p.group == g.group->name) gp = &p;
      g.gpus = GpusOf(gp);
      g.mig = sharing::DefaultMigConfigKindOf(g.group->sharing.mig);
      groups_.push_back(std::move(g));
    }
  }

  StackPart Build() {
    for (const GroupInfo& g : groups_) {
      if (g.group->vendor == Vendor::kNone) continue;
      part_.node_labels[g.group->name][kStackLabel] =
          std::string(VendorName(g.group->vendor)) + "-" + std::string(StackName(g.group->stack));
    }
    Nvidia();
    Amd();
    Habana();
    Agents();
    for (const auto& [path, file] : object_files_) {
      part_.files[path] = Render(file);
      for (const ObjectDocument& d : file.docs) part_.objects.push_back(d.object);
    }
    return std::move(part_);
  }

 private:
  std::vector<const GroupInfo*> Select(Vendor vendor, Stack stack) const {
    std::vector<const GroupInfo*> out;
    for (const GroupInfo& g : groups_)
      if (g.group->vendor == vendor && g.group->stack == stack) out.push_back(&g);
    return out;
  }

  std::string Written() const { return "Written by accel cluster plan from cluster template " + t_.name + "."; }

  // The container runtime the kubelet talks to, as the operators name it.
  std::string ContainerEngine() const {
    for (const GroupInfo& g : groups_) {
      const auto it = g.group->kubelet_merged.find("containerRuntimeEndpoint");
      if (it != g.group->kubelet_merged.end() && it->is_string() &&
          it->get<std::string>().find("crio") != std::string::npos)
        return "crio";
    }
    return "containerd";
  }

  // ---- NVIDIA GPU Operator -------------------------------------------------------------------

  void Nvidia() {
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

  // ---- AMD GPU Operator ----------------------------------------------------------------------

  void Amd() {
    for (const GroupInfo* g : Select(Vendor::kAmd, Stack::kOperator)) {
      const NodeGroup& n = *g->group;
      const ordered_json tolerations = Tolerations(TaintsOf(n));
      ordered_json s;
      s["selector"] = GroupSelector(n);
      s["driver"] = {{"enable", true}};
      const std::string version = t_.DriverVersionOf(n);
      if (!version.empty()) s["driver"]["version"] = version;
      if (!n.taints.empty()) s["driver"]["tolerations"] = tolerations;
      s["devicePlugin"] = {{"enableDevicePlugin", true}, {"enableNodeLabeller", true}};
      if (!n.taints.empty()) {
        s["devicePlugin"]["devicePluginTolerations"] = tolerations;
        s["devicePlugin"]["nodeLabellerTolerations"] = tolerations;
      }
      s["metricsExporter"] = {{"enable", true}};
      if (!n.taints.empty()) s["metricsExporter"]["tolerations"] = tolerations;
      ObjectFile f;
      f.header = Written() +
                 "\nInstall the AMD GPU Operator's chart without its default DeviceConfig (Helm value\n"
                 "crds.defaultCR.install=false): it selects every AMD GPU node (feature.node.kubernetes.io/amd-gpu),\n"
                 "and a node may belong to one DeviceConfig only.";
      f.docs.push_back({"The AMD stack of node group " + n.name + ": amdgpu driver " +
                            (version.empty() ? std::string("(the operator's default)") : version) +
                            ", device plugin, node labeller and metrics exporter on the group's nodes (selector " +
                            kNodeGroupLabel + ").",
                        {{"apiVersion", "amd.com/v1alpha1"},
                         {"kind", "DeviceConfig"},
                         {"metadata", Metadata(n.name, t_.operators.amd.namespace_name, n.name)},
                         {"spec", s}}});
      object_files_[n.name + "/stack/amd-device-config.yaml"] = std::move(f);
    }
  }

  // ---- Intel Gaudi Base Operator -------------------------------------------------------------

  // The Gaudi driver installer's OS key for a Glance image name ("ubuntu-2404-kube-v1.33.2" ->
  // "ubuntu_24.04"); "" when the name does not say.
  static std::string GaudiOsKey(const std::string& image) {
    for (size_t i = 0; i + 11 <= image.size(); ++i) {
      if (image.compare(i, 7, "ubuntu-") != 0) continue;
      const std::string d = image.substr(i + 7, 4);
      if (std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return "ubuntu_" + d.substr(0, 2) + "." + d.substr(2, 2);
    }
    return "";
  }

  void Habana() {
    const std::vector<const GroupInfo*> ops = Select(Vendor::kHabana, Stack::kOperator);
    if (ops.empty()) return;
    // One ClusterPolicy: one driver version.
    std::string version;
    const GroupInfo* version_by = nullptr;
    for (const GroupInfo* g : ops) {
      const std::string v = t_.DriverVersionOf(*g->group);
      if (version_by == nullptr) {
        version = v;
        version_by = g;
      } else if (v != version) {
        throw InputError(t_.source, FieldOf(g->index, "driver.version"),
                         "the Gaudi Base Operator has one ClusterPolicy, so one driver version, but group " +
                             g->group->name + " asks for " + (v.empty() ? "the default" : v) + " and group " +
                             version_by->group->name + " for " + (version.empty() ? "the default" : version),
                         "give every Gaudi operator group the same driver.version (or set "
                         "spec.operators.habana.driverVersion once)");
      }
    }
    std::map<std::string, std::string> os_keys;  // OS key -> group that needs it
    std::string unknown_os;
    for (const GroupInfo* g : ops) {
      const std::string image = t_.ImageOf(*g->group);
      const std::string key = GaudiOsKey(image);
      if (key.empty())
        unknown_os += "\n  group " + g->group->name + ": image " + image;
      else
        os_keys.emplace(key, g->group->name);
    }

    // Image names and tags follow the documentation's ClusterPolicy for release 1.19.1-26
    // (vault.habana.ai/...; the device plugin tagged without the build number): unconfirmed for
    // other releases.
    auto image = [&](const std::string& repository, const std::string& tag) {
      return ordered_json{{"repository", "vault.habana.ai/" + repository}, {"tag", tag}};
    };
    const std::string plugin_tag = version.substr(0, version.find('-'));
    ordered_json s;
    s["image_registry"] = "vault.habana.ai";
    if (!version.empty()) {
      ordered_json loader;
      ordered_json images = ordered_json::object();
      for (const auto& [key, group] : os_keys) {
        std::string dir = key;
        dir.erase(std::remove(dir.begin(), dir.end(), '_'), dir.end());
        images[key] = image("habana-ai-operator/driver/" + dir + "/driver-installer", version);
      }
      loader["images"] = images;
      loader["repo_server"] = "vault.habana.ai";
      loader["repo_path"] = "artifactory/gaudi-installer/repos";
      s["driver"]["driver_loader"] = loader;
      if (!os_keys.empty())
        s["driver"]["driver_runner"]["image"] = images[os_keys.begin()->first];
      s["device_plugin"]["image"] = image("docker-k8s-device-plugin/docker-k8s-device-plugin", plugin_tag);
      s["runtime"]["runner"]["image"] = image("habana-ai-operator/habana-container-runtime", version);
    }
    s["runtime"]["configuration"]["container_engine"] = ContainerEngine();
    if (!version.empty()) s["metric_exporter"]["runner"]["image"] = image("gaudi-metric-exporter/metric-exporter", version);
    s["metric_exporter"]["port"] = 41611;
    s["metric_exporter"]["interval"] = 20;
    if (!version.empty()) {
      s["feature_discovery"]["runner"]["image"] =
          image("habana-ai-operator/habanalabs-feature-discovery", version);
      s["bmc_monitoring"]["image"] = image("habana-bmc-exporter/bmc-exporter", version);
    }
    s["node_selector"][kStackLabel] = "habana-operator";

    std::string groups;
    for (const GroupInfo* g : ops) groups += (groups.empty() ? "" : ", ") + g->group->name;
    ObjectFile f;
    f.header =
        Written() +
        "\nThe Intel Gaudi Base Operator's one ClusterPolicy (habanalabs.habana.ai/v1), for node groups " + groups +
        ".\nUNVALIDATED: no CRD of this kind is public (shared/crds/README.md), so this object follows the\n"
        "operator's documentation and is not checked against a schema. Sources:\n"
        "  https://docs.habana.ai/en/latest/Installation_Guide/Additional_Installation/Kubernetes_Installation/Kubernetes_Operator.html\n"
        "  (its ClusterPolicy, as adapted in intel/intel-technology-enabling-for-openshift gaudi/gaudi_cluster_policy.yaml)\n"
        "  https://docs.habana.ai/en/latest/Installation_Guide/Additional_Installation/Kubernetes_Installation/Deamonsets_Kubernetes_Operator.html\n"
        "Confirmed there: the field names; node_selector is what the feature-discovery DaemonSet selects, and\n"
        "the other DaemonSets follow feature discovery's labels; metric_exporter port 41611.\n"
        "NOT confirmed: the image repositories and tags for releases other than the documented 1.19.1-26\n"
        "(built here as vault.habana.ai/<component>:<driverVersion>, the device plugin without the build\n"
        "number); whether the operator fills in images left out (no driverVersion given); the driver_loader\n"
        "OS keys beyond the documented ubuntu_22.04 (derived from the image name); the ClusterPolicy's name\n"
        "(habana-ai, as in Intel's sample); and how the operator's DaemonSets tolerate node taints (the\n"
        "documentation shows no tolerations field, so tainted Gaudi nodes may need the operator's defaults).\n"
        "The chart (gaudi-helm/habana-ai-operator) creates a basic ClusterPolicy of its own: replace it with this one.";
    std::string comment = "Selects the nodes of every Gaudi operator group by " + std::string(kStackLabel) +
                          "=habana-operator (set on those groups' nodes).";
    if (!version.empty()) comment += "\nDriver and operand images at " + version + ".";
    if (!unknown_os.empty())
      comment += "\nNo driver_loader image for these groups: their image name does not say which OS they run; add\n"
                 "spec.driver.driver_loader.images.<os> for it:" + unknown_os;
    f.docs.push_back({comment,
                      {{"apiVersion", "habanalabs.habana.ai/v1"},
                       {"kind", "ClusterPolicy"},
                       {"metadata", Metadata(kHabanaClusterPolicy, "", "")},
                       {"spec", s}}});
    object_files_["stack/habana/cluster-policy.yaml"] = std::move(f);
  }

  // ---- accel's node agent --------------------------------------------------------------------

  // The MIG strategy of one agent group (the agent's config is per group).

  void Agents() {
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

  const ClusterTemplate& t_;
  std::vector<GroupInfo> groups_;
  std::string mig_strategy_ = "single";
  std::map<std::string, ObjectFile> object_files_;
  StackPart part_;
};

}  // namespace

std::string GroupMigStrategy(const ClusterTemplate& t, const NodeGroup& g) {
  if (g.vendor != Vendor::kNvidia) return "none";
  if (g.stack == Stack::kOperator) {
    for (const NodeGroup& other : t.groups)
      if (other.vendor == Vendor::kNvidia && other.stack == Stack::kOperator &&
          !sharing::ServedBySingleStrategy(sharing::DefaultMigConfigKindOf(other.sharing.mig)))
        return "mixed";
    return "single";
  }
  switch (sharing::DefaultMigConfigKindOf(g.sharing.mig)) {
    case MigConfigKind::kNone:
    case MigConfigKind::kDisabled: return "none";
    case MigConfigKind::kSingleProfile: return "single";
    default: return "mixed";
  }
}

StackPart VendorStack(const ClusterTemplate& t, const ClusterPlan& plan) { return Builder(t, plan).Build(); }

}  // namespace accel::cluster
