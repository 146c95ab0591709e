// MIG and the device plugin: a group's sharing.mig against the mig-parted config mig-manager
// will read (NVIDIA's defaults, or the ConfigMap the ClusterPolicy names), and every group's MIG
// shape and sharing against the MIG strategy NVIDIA's device plugin runs with.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster/check_internal.h"
#include "common/error.h"
#include "common/strings.h"
#include "sharing/mig_default_configs.h"
#include "sharing/mig_geometry.h"
#include "sharing/mig_parted_config.h"
#include "topology/classify.h"

namespace accel::cluster::check_internal {

OperatorMigConfig FindOperatorMigConfig(const std::vector<json>& objects, const json* cluster_policy) {
  OperatorMigConfig out;
  if (!cluster_policy) return out;
  const std::string name = StringAt(SpecOf(*cluster_policy), {"migManager", "config", "name"});
  if (name.empty() || name == "default-mig-parted-config") return out;
  out.configmap = name;
  for (const json& o : objects) {
    if (KindOf(o) != "ConfigMap" || StringAt(o, {"metadata", "name"}) != name) continue;
    const json data = o.contains("data") ? o["data"] : json();
    std::string key = data.is_object() && data.contains("config.yaml") ? "config.yaml" : "";
    if (key.empty() && data.is_object() && data.size() == 1) key = data.begin().key();
    if (key.empty() || !data[key].is_string()) {
      out.parse_error = "ConfigMap " + name + " has no data.config.yaml";
      return out;
    }
    try {
      out.config = sharing::ParseMigPartedConfig(data[key].get<std::string>(), "ConfigMap/" + name + " data." + key);
    } catch (const InputError& e) {
      out.parse_error = e.what();
    }
    return out;
  }
  out.parse_error = "ClusterPolicy names mig-parted ConfigMap " + name + ", which is not among the objects";
  return out;
}

void Checker::CheckMig(GroupState& s) {
  const NodeGroup& g = *s.group;
  if (g.vendor != Vendor::kNvidia || g.sharing.mig.empty()) return;
  const std::string key = GroupKey(s.index) + ".sharing.mig";
  const std::string& name = g.sharing.mig;
  std::set<uint16_t> device_ids;
  for (const kubelet::GuestDevice& d : s.plan->layout.devices)
    if (d.vendor_id == topology::kVendorNvidia && d.role == topology::PciRole::kGpu) device_ids.insert(d.device_id);
  if (device_ids.empty()) return;  // the template reader refuses an NVIDIA group without NVIDIA GPUs
  std::set<std::string> profiles;
  bool any_on = false, any_off = false, any_empty = false;
  for (uint16_t id : device_ids) {
    const sharing::GpuModel* model = sharing::FindGpuModelByPciId((uint32_t{id} << 16) | topology::kVendorNvidia);
    if (!model) {
      if (name != "all-disabled")
        Add(Error("mig", g.name, key,
                  "GPU 10de:" + Hex4(id) + " is not in accel's MIG catalog: it is not MIG-capable (L40S, RTX 4090, "
                  "...) or a model accel does not know, and mig-manager cannot apply " + name + " to it",
                  "remove sharing.mig (or use all-disabled), or use a flavor with MIG-capable GPUs (A100, A30, "
                  "H100, H200, GH200, B200, GB200, B300, RTX PRO 6000)"));
      any_off = true;
      continue;
    }
    std::optional<sharing::MigPartedConfig> config;
    std::string source = "NVIDIA's default-mig-parted-config";
    if (g.stack == Stack::kOperator && !operator_mig_.configmap.empty()) {
      // mig-manager reads the ClusterPolicy's ConfigMap, not NVIDIA's defaults.
      source = "ConfigMap " + operator_mig_.configmap;
      if (!operator_mig_.config) {
        Add(Error("mig", g.name, key, "mig-manager's config cannot be read: " + operator_mig_.parse_error,
                  "generate the ConfigMap the ClusterPolicy names (spec.migManager.config.name)"));
        return;
      }
      const sharing::MigConfig* named = operator_mig_.config->Find(name);
      if (!named) {
        Add(Error("mig", g.name, key,
                  source + " has no config " + name + ": mig-manager sets nvidia.com/mig.config.state=failed",
                  "name a config of that ConfigMap, or add " + name + " to it"));
        return;
      }
      sharing::MigPartedConfig one;
      one.configs.push_back(*named);
      const bool applies = std::any_of(named->entries.begin(), named->entries.end(), [&](const sharing::MigConfigEntry& e) {
        return sharing::EntryMatchesModel(e, *model);
      });
      if (!applies) {
        Add(Error("mig", g.name, key,
                  "no entry of " + name + " in " + source + " applies to " + model->name + " (device-filter)",
                  "add an entry for " + model->name + " (device-filter 0x" + Hex4(id) + "10DE) or use another config"));
        return;
      }
      config = std::move(one);
    } else {
      std::string why;
      config = sharing::DefaultMigConfig(name, *model, &why);
      if (!config) {
        Add(Error("mig", g.name, key, why + ": mig-manager sets nvidia.com/mig.config.state=failed and the node keeps its GPUs as they were",
                  "use a config of NVIDIA's defaults for " + model->name + ": all-disabled, all-balanced, all-" +
                      (model->profiles.empty() ? std::string("<profile>") : model->profiles.front().name) +
                      ", ... (accel mig profiles --gpu " + model->name + " lists its profiles)"));
        return;
      }
    }
    for (const sharing::ConfigFinding& f : sharing::ValidateMigPartedConfig(*config, {model})) {
      const std::string text = name + " on " + model->name + ": " + f.message;
      if (f.is_error())
        Add(Error("mig", g.name, key, text + " (" + source + ")", "choose a config that fits " + model->name));
      else
        Add(Warning("mig", g.name, key, text, "check the name the GPU's driver prints (nvidia-smi mig -lgip)"));
    }
    for (const sharing::MigConfig& c : config->configs)
      for (const sharing::MigConfigEntry& e : c.entries) {
        if (!sharing::EntryMatchesModel(e, *model)) continue;
        if (!e.mig_enabled) {
          any_off = true;
          continue;
        }
        any_on = true;
        bool some = false;
        for (const auto& [profile, n] : e.mig_devices)
          if (n > 0) {
            some = true;
            const std::optional<int> idx = sharing::FindProfile(*model, profile);
            profiles.insert(model->name + "/" + (idx ? model->profiles[static_cast<size_t>(*idx)].name : profile));
          }
        if (!some) any_empty = true;
      }
  }
  if (any_on && any_off) s.shape = sharing::NodeMigShape::kSeveral;
  else if (profiles.size() > 1) s.shape = sharing::NodeMigShape::kSeveral;
  else if (any_empty && profiles.empty()) s.shape = sharing::NodeMigShape::kEnabledEmpty;
  else if (any_empty) s.shape = sharing::NodeMigShape::kSeveral;  // some MIG GPUs with devices, some without
  else if (profiles.size() == 1) s.shape = sharing::NodeMigShape::kOneProfile;
  else s.shape = sharing::NodeMigShape::kOff;
  if (s.shape == sharing::NodeMigShape::kEnabledEmpty)
    Add(Warning("mig", g.name, key,
                name + " turns MIG on and creates no MIG device: the device plugin advertises nothing pods can use "
                       "until something creates instances",
                "use a config that creates instances (all-balanced, all-1g.10gb, ...) unless a DRA driver creates them"));
}

// The NVIDIA device plugin's MIG strategy against each group's MIG shape and sharing. Under the
// GPU Operator the strategy is one for all its groups: ClusterPolicy spec.mig.strategy becomes
// the device plugin's MIG_STRATEGY environment variable, which beats a per-node config file
// (the plugin's precedence: flag > environment > file, k8s-device-plugin.md §2.1).
void Checker::CheckStrategies() {
  std::vector<const GroupState*> operator_groups;
  for (const GroupState& s : states_)
    if (s.plan && s.group->vendor == Vendor::kNvidia && s.group->stack == Stack::kOperator)
      operator_groups.push_back(&s);
  if (operator_groups.empty()) return;
  if (cluster_policy_) {
    std::string strategy = StringAt(SpecOf(*cluster_policy_), {"mig", "strategy"});
    const bool defaulted = strategy.empty();
    // The Helm chart's default; the CRD has none, and what the operator does with an unset field
    // is unconfirmed.
    if (defaulted) strategy = "single";
    const std::string key = "ClusterPolicy/" + NameOf(*cluster_policy_) + ".spec.mig.strategy";
    for (const GroupState* s : operator_groups) {
      const bool mps = s->group->sharing.mps.has_value();
      const std::set<std::string> ok = sharing::AcceptedMigStrategies(s->shape, mps);
      if (!ok.count(strategy))
        Add(Error("sharing", s->group->name, key,
                  "the GPU Operator's MIG strategy is " + strategy + (defaulted ? " (unset: the chart's default)" : "") + ": " +
                      sharing::MigStrategyRefusal(strategy, s->shape, mps) + " (this group: " + sharing::NodeMigShapeText(s->shape) +
                      (mps ? ", MPS" : "") + ")",
                  "set spec.mig.strategy to " + JoinStrings(std::vector<std::string>(ok.begin(), ok.end()), " or ") +
                      " if every operator group allows it, or move this group to stack: accel"));
      const std::string& mig = s->group->sharing.mig;
      if (!mig.empty() && mig != "all-disabled" && !BoolAt(SpecOf(*cluster_policy_), {"migManager", "enabled"}, true))
        Add(Error("sharing", s->group->name, "ClusterPolicy/" + NameOf(*cluster_policy_) + ".spec.migManager.enabled",
                  "the ClusterPolicy disables mig-manager: nothing applies " + mig + " to these nodes",
                  "set spec.migManager.enabled: true"));
      if (mps && !BoolAt(SpecOf(*cluster_policy_), {"cdi", "enabled"}, true))  // the CRD's default: true
        Add(Warning("sharing", s->group->name, "ClusterPolicy/" + NameOf(*cluster_policy_) + ".spec.cdi.enabled",
                    "MPS with CDI off: recent device plugins refuse MPS without a CDI device-list strategy (\"using "
                    "MPS requires CDI\"; the version that started refusing is unconfirmed)",
                    "set spec.cdi.enabled: true"));
    }
    return;
  }
  // No ClusterPolicy yet: one strategy must suit every operator group.
  std::set<std::string> common = {"none", "single", "mixed"};
  std::vector<std::string> needs;
  for (const GroupState* s : operator_groups) {
    const bool mps = s->group->sharing.mps.has_value();
    const std::set<std::string> ok = sharing::AcceptedMigStrategies(s->shape, mps);
    std::set<std::string> both;
    std::set_intersection(common.begin(), common.end(), ok.begin(), ok.end(), std::inserter(both, both.begin()));
    common = std::move(both);
    needs.push_back(s->group->name + " (" + sharing::NodeMigShapeText(s->shape) + (mps ? ", MPS" : "") + "): " +
                    JoinStrings(std::vector<std::string>(ok.begin(), ok.end()), " or "));
  }
  if (common.empty())
    Add(Error("sharing", "", "spec.nodeGroups",
              "the GPU Operator runs one MIG strategy (ClusterPolicy spec.mig.strategy) for all its groups, and "
              "no strategy suits them all: " + JoinStrings(needs, "; "),
              "move one of the groups to stack: accel (accel's agent configures each group's device plugin on its "
              "own), or change its sharing"));
}

}  // namespace accel::cluster::check_internal
