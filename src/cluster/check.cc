#include "cluster/check.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <utility>

#include "common/error.h"
#include "common/quantity.h"
#include "common/strings.h"
#include "common/structured_file.h"
#include "kubelet/derive.h"
#include "kubelet/check.h"
#include "fleet/capacity.h"
#include "fleet/host_policy_file.h"
#include "fleet/scheduler.h"
#include "placement/engine.h"
#include "sharing/mig_default_configs.h"
#include "topology/classify.h"

namespace accel::cluster {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::string GroupKey(size_t i) { return "spec.nodeGroups[" + std::to_string(i) + "]"; }

// The template key a kubelet field is fixed at: the group's own override when it sets the
// field, else the cluster-wide one when that does, else the group's (an override is the fix for
// a derived value too).
std::string KubeletKey(const ClusterTemplate& t, size_t i, const std::string& field) {
  const std::string top = field.substr(0, field.find_first_of(".["));
  const NodeGroup& g = t.groups[i];
  if (!g.kubelet.contains(top) && t.kubelet.is_object() && t.kubelet.contains(top)) return "spec.kubelet." + field;
  return GroupKey(i) + ".kubelet." + field;
}

std::string StringAt(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return "";
    p = &(*p)[k];
  }
  if (p->is_string()) return p->get<std::string>();
  if (p->is_boolean()) return p->get<bool>() ? "true" : "false";
  if (p->is_number()) return p->dump();
  return "";
}

bool BoolAt(const json& j, std::initializer_list<const char*> path, bool dflt) {
  const std::string s = StringAt(j, path);
  return s.empty() ? dflt : s == "true";
}

// --- Kubernetes objects and how they select nodes -------------------------------------------

std::string ApiGroup(const json& o) {
  const std::string v = StringAt(o, {"apiVersion"});
  const size_t slash = v.find('/');
  return slash == std::string::npos ? "" : v.substr(0, slash);
}

std::string KindOf(const json& o) { return StringAt(o, {"kind"}); }
std::string NameOf(const json& o) {
  const std::string n = StringAt(o, {"metadata", "name"});
  return n.empty() ? "(unnamed)" : n;
}
std::string Ref(const json& o) { return KindOf(o) + "/" + NameOf(o); }

bool IsNvidiaClusterPolicy(const json& o) { return ApiGroup(o) == "nvidia.com" && KindOf(o) == "ClusterPolicy"; }
bool IsNvidiaDriver(const json& o) { return ApiGroup(o) == "nvidia.com" && KindOf(o) == "NVIDIADriver"; }
bool IsAmdDeviceConfig(const json& o) { return ApiGroup(o) == "amd.com" && KindOf(o) == "DeviceConfig"; }
bool IsGaudiClusterPolicy(const json& o) {
  return ApiGroup(o) == "habanalabs.habana.ai" && KindOf(o) == "ClusterPolicy";
}
bool IsNicClusterPolicy(const json& o) { return ApiGroup(o) == "mellanox.com" && KindOf(o) == "NicClusterPolicy"; }
bool IsNicNodePolicy(const json& o) { return ApiGroup(o) == "mellanox.com" && KindOf(o) == "NicNodePolicy"; }

const json& SpecOf(const json& o) {
  static const json kEmpty = json::object();
  return o.is_object() && o.contains("spec") && o["spec"].is_object() ? o["spec"] : kEmpty;
}

std::string LabelValue(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// A nodeSelector-style map: every key=value must be on the node. An empty map selects every node.
bool MatchesMap(const json& selector, const NodeLabels& labels) {
  if (!selector.is_object()) return true;
  for (auto it = selector.begin(); it != selector.end(); ++it) {
    auto l = labels.find(it.key());
    if (l == labels.end() || l->second != LabelValue(it.value())) return false;
  }
  return true;
}

// One NodeSelectorRequirement (In, NotIn, Exists, DoesNotExist, Gt, Lt).
bool MatchesRequirement(const json& r, const NodeLabels& labels) {
  const std::string key = StringAt(r, {"key"});
  const std::string op = StringAt(r, {"operator"});
  auto l = labels.find(key);
  std::vector<std::string> values;
  if (r.contains("values") && r["values"].is_array())
    for (const json& v : r["values"]) values.push_back(LabelValue(v));
  const bool in = l != labels.end() && std::find(values.begin(), values.end(), l->second) != values.end();
  if (op == "In") return in;
  if (op == "NotIn") return !in;
  if (op == "Exists") return l != labels.end();
  if (op == "DoesNotExist") return l == labels.end();
  if (op == "Gt" || op == "Lt") {
    if (l == labels.end() || values.size() != 1) return false;
    try {
      const long long have = std::stoll(l->second), want = std::stoll(values[0]);
      return op == "Gt" ? have > want : have < want;
    } catch (...) {
      return false;
    }
  }
  return false;
}

// nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: terms OR'ed, a term's
// matchExpressions AND'ed; an empty term matches nothing (Kubernetes' rule).
bool MatchesNodeAffinity(const json& affinity, const NodeLabels& labels) {
  const json* req = nullptr;
  if (affinity.is_object() && affinity.contains("requiredDuringSchedulingIgnoredDuringExecution"))
    req = &affinity["requiredDuringSchedulingIgnoredDuringExecution"];
  if (!req || !req->is_object() || !req->contains("nodeSelectorTerms") || !(*req)["nodeSelectorTerms"].is_array())
    return true;  // only preferences: every node may run it
  for (const json& term : (*req)["nodeSelectorTerms"]) {
    if (!term.is_object() || !term.contains("matchExpressions") || !term["matchExpressions"].is_array() ||
        term["matchExpressions"].empty())
      continue;
    bool all = true;
    for (const json& r : term["matchExpressions"]) all = all && MatchesRequirement(r, labels);
    if (all) return true;
  }
  return false;
}

bool IsNvidiaGpuNode(const NodeLabels& labels) {
  auto present = labels.find("nvidia.com/gpu.present");
  auto operands = labels.find("nvidia.com/gpu.deploy.operands");
  return present != labels.end() && present->second == "true" &&
         !(operands != labels.end() && operands->second == "false");
}

bool NvidiaDriverIsDefault(const json& o) { return BoolAt(SpecOf(o), {"default"}, false); }

// --- Finding helpers ---------------------------------------------------------------------------

CheckFinding Error(std::string kind, std::string group, std::string key, std::string problem, std::string fix) {
  return {CheckSeverity::kError, std::move(kind), std::move(group), std::move(key), std::move(problem), std::move(fix)};
}
CheckFinding Warning(std::string kind, std::string group, std::string key, std::string problem, std::string fix) {
  return {CheckSeverity::kWarning, std::move(kind), std::move(group), std::move(key), std::move(problem),
          std::move(fix)};
}

std::string DeviceWord(const kubelet::GuestDevice& d) {
  return d.role == topology::PciRole::kHpu ? "HPU" : d.role == topology::PciRole::kGpu ? "GPU" : "device";
}

// --- MIG -----------------------------------------------------------------------------------

// The mig-parted config a ClusterPolicy's mig-manager reads (spec.migManager.config.name), when
// the objects hold that ConfigMap: the config parsed, or the InputError's text.
struct OperatorMigConfig {
  std::string configmap;                     ///< ConfigMap name; "" = the operator's default
  std::optional<sharing::MigPartedConfig> config;
  std::string parse_error;
};

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

// --- Fleet ---------------------------------------------------------------------------------

// Key of (hardware, policy): hosts sharing it give the same answer on an empty host.
std::string HardwareKey(const fleet::HostEntry& e) {
  return e.record.topology_id + "|" + fleet::HostPolicyToJson(e.record.policy).dump();
}

struct EmptyFit {
  int hosts = 0;                  ///< hosts whose empty hardware holds one instance
  const fleet::HostEntry* first = nullptr;  ///< the first such host by name
  std::optional<placement::Placement> placement;  ///< its placement there
  std::string why_not;            ///< one host's reasons when none fits
};

EmptyFit FitEmpty(const fleet::FleetView& view, const placement::PlacementRequest& request) {
  EmptyFit out;
  std::map<std::string, std::optional<placement::Placement>> memo;
  for (const fleet::HostEntry& e : view.hosts()) {
    if (!e.hardware) continue;
    const std::string key = HardwareKey(e);
    auto it = memo.find(key);
    if (it == memo.end()) {
      placement::PlaceResult r = placement::Place(*e.hardware, placement::HostUsage{}, e.record.policy, request);
      if (!r.fits() && out.why_not.empty())
        out.why_not = e.record.name + ": " + JoinStrings(r.no_fit.reasons, "; ");
      it = memo.emplace(key, r.placement).first;
    }
    if (!it->second) continue;
    ++out.hosts;
    if (!out.first) {
      out.first = &e;
      out.placement = it->second;
    }
  }
  return out;
}

std::string CausesText(const std::vector<fleet::CauseCount>& causes) {
  return JoinStrings(fleet::DescribeCauses(causes), "; ");
}

}  // namespace

// ================================================================================================

std::string_view CheckSeverityName(CheckSeverity severity) {
  return severity == CheckSeverity::kError ? "error" : "warning";
}

size_t CheckReport::error_count() const {
  return static_cast<size_t>(std::count_if(findings.begin(), findings.end(),
                                           [](const CheckFinding& f) { return f.severity == CheckSeverity::kError; }));
}

size_t CheckReport::warning_count() const { return findings.size() - error_count(); }

// --- Kubelet options -----------------------------------------------------------------------

// --- Selectors -----------------------------------------------------------------------------

namespace {

std::optional<bool> Selects(const json& o, const NodeLabels& labels) {
  const json& spec = SpecOf(o);
  if (IsNvidiaClusterPolicy(o)) return IsNvidiaGpuNode(labels);
  if (IsNvidiaDriver(o))
    return IsNvidiaGpuNode(labels) && MatchesMap(spec.contains("nodeSelector") ? spec["nodeSelector"] : json(), labels);
  if (IsAmdDeviceConfig(o)) {
    // Without a selector the AMD GPU Operator's own default label (unconfirmed: its Helm chart's
    // default DeviceConfig and NodeFeatureRule use it).
    const json dflt = {{"feature.node.kubernetes.io/amd-gpu", "true"}};
    return MatchesMap(spec.contains("selector") && spec["selector"].is_object() && !spec["selector"].empty()
                          ? spec["selector"]
                          : dflt,
                      labels);
  }
  if (IsGaudiClusterPolicy(o)) return MatchesMap(spec.contains("node_selector") ? spec["node_selector"] : json(), labels);
  if (IsNicClusterPolicy(o)) return spec.contains("nodeAffinity") ? MatchesNodeAffinity(spec["nodeAffinity"], labels) : true;
  if (IsNicNodePolicy(o)) return MatchesMap(spec.contains("nodeSelector") ? spec["nodeSelector"] : json(), labels);
  return std::nullopt;
}

}  // namespace

std::optional<bool> ObjectSelects(const ordered_json& object, const NodeLabels& labels) {
  return Selects(json(object), labels);
}

namespace {

std::vector<CheckFinding> SelectorOverlap(const std::vector<json>& objects,
                                          const std::map<std::string, NodeLabels>& group_labels) {
  std::vector<CheckFinding> out;
  std::vector<json> nvidia_policies, drivers, default_drivers, device_configs, gaudi_policies, ncps, nnps;
  for (const json& o : objects) {
    if (IsNvidiaClusterPolicy(o)) nvidia_policies.push_back(o);
    else if (IsNvidiaDriver(o)) (NvidiaDriverIsDefault(o) ? default_drivers : drivers).push_back(o);
    else if (IsAmdDeviceConfig(o)) device_configs.push_back(o);
    else if (IsGaudiClusterPolicy(o)) gaudi_policies.push_back(o);
    else if (IsNicClusterPolicy(o)) ncps.push_back(o);
    else if (IsNicNodePolicy(o)) nnps.push_back(o);
  }
  auto names = [](const std::vector<const json*>& os) {
    std::vector<std::string> n;
    for (const json* o : os) n.push_back(NameOf(*o));
    return JoinStrings(n, ", ");
  };

  // Cluster-wide singletons and combinations.
  if (nvidia_policies.size() > 1) {
    std::vector<const json*> p;
    for (const json& o : nvidia_policies) p.push_back(&o);
    out.push_back(Error("selector", "", "ClusterPolicy/" + NameOf(nvidia_policies[1]),
                        "there are " + std::to_string(nvidia_policies.size()) + " NVIDIA ClusterPolicies (" + names(p) +
                            "): the GPU Operator reconciles one and ignores the others, and every one selects every "
                            "GPU node",
                        "keep one ClusterPolicy; per-group drivers go in NVIDIADriver objects"));
  }
  if (default_drivers.size() > 1) {
    std::vector<const json*> p;
    for (const json& o : default_drivers) p.push_back(&o);
    out.push_back(Error("selector", "", "NVIDIADriver/" + NameOf(default_drivers[1]) + ".spec.default",
                        "several NVIDIADrivers are the default (" + names(p) +
                            "): the GPU Operator refuses them (\"multiple default NVIDIADrivers found\")",
                        "mark one NVIDIADriver default: true, give the others a nodeSelector"));
  }
  for (const json& d : default_drivers)
    if (SpecOf(d).contains("nodeSelector") && SpecOf(d)["nodeSelector"].is_object() && !SpecOf(d)["nodeSelector"].empty())
      out.push_back(Error("selector", "", "NVIDIADriver/" + NameOf(d) + ".spec.nodeSelector",
                          "the default NVIDIADriver has a nodeSelector: the GPU Operator refuses it (\"default "
                          "NVIDIADriver cannot use nodeSelector\")",
                          "drop its nodeSelector (it covers the GPU nodes no other NVIDIADriver selects), or make it "
                          "default: false"));
  if (!drivers.empty() || !default_drivers.empty())
    for (const json& p : nvidia_policies)
      if (!BoolAt(SpecOf(p), {"driver", "useNvidiaDriverCRD"}, false) ||
          !BoolAt(SpecOf(p), {"driver", "enabled"}, true))
        out.push_back(Error("selector", "", "ClusterPolicy/" + NameOf(p) + ".spec.driver.useNvidiaDriverCRD",
                            "there are NVIDIADriver objects but the ClusterPolicy does not set driver.enabled and "
                            "driver.useNvidiaDriverCRD: the operator ignores them and installs its one driver on "
                            "every GPU node",
                            "set spec.driver.useNvidiaDriverCRD: true in the ClusterPolicy"));
  if (ncps.size() > 1)
    out.push_back(Error("selector", "", "NicClusterPolicy/" + NameOf(ncps[1]),
                        "there are " + std::to_string(ncps.size()) +
                            " NicClusterPolicies: the Network Operator reconciles only nic-cluster-policy",
                        "keep one NicClusterPolicy named nic-cluster-policy; per-group settings go in NicNodePolicies"));
  // A section lives in the NicClusterPolicy or in NicNodePolicies, never both (the Network
  // Operator's webhook; platform.md §3.4).
  for (const char* section : {"ofedDriver", "rdmaSharedDevicePlugin", "sriovDevicePlugin"})
    for (const json& ncp : ncps) {
      const json& s = SpecOf(ncp);
      if (!s.contains(section) || s[section].is_null()) continue;
      for (const json& nnp : nnps)
        if (SpecOf(nnp).contains(section) && !SpecOf(nnp)[section].is_null())
          out.push_back(Error("selector", "", "NicNodePolicy/" + NameOf(nnp) + ".spec." + section,
                              "both NicClusterPolicy " + NameOf(ncp) + " and NicNodePolicy " + NameOf(nnp) + " set " +
                                  section + ": the Network Operator's webhook refuses the NicNodePolicy",
                              "move " + std::string(section) + " out of the NicClusterPolicy into per-group "
                              "NicNodePolicies, or drop it from the NicNodePolicy"));
    }

  // Per group: objects of one kind that may each own a node, two of them on one group.
  struct ExclusiveKind {
    const char* kind;
    const std::vector<json>* objects;
    const char* selector_field;
    const char* refusal;
    const char* fix;
  };
  const ExclusiveKind kinds[] = {
      {"NVIDIADriver", &drivers, "nodeSelector",
       "the GPU Operator installs no driver on them (\"conflicting NVIDIADriver NodeSelectors found for node\")",
       "give each NVIDIADriver a nodeSelector on its group's label (accel.io/node-group: <group>)"},
      {"DeviceConfig", &device_configs, "selector",
       "a node may belong to one DeviceConfig only: the AMD GPU Operator reports the conflict and manages the node "
       "for neither",
       "give each DeviceConfig a selector on its group's label (accel.io/node-group: <group>)"},
      {"ClusterPolicy", &gaudi_policies, "node_selector",
       "the Gaudi Base Operator's ClusterPolicy is one per node: both would deploy a driver and device plugin there",
       "keep one Gaudi ClusterPolicy, or give each a node_selector on its group's label"},
      {"NicNodePolicy", &nnps, "nodeSelector",
       "NicNodePolicies must not select overlapping nodes: the Network Operator sets both to status Error and changes "
       "no DaemonSet",
       "give each NicNodePolicy a nodeSelector on its group's label (accel.io/node-group: <group>)"},
  };
  for (const ExclusiveKind& k : kinds)
    for (const auto& [group, labels] : group_labels) {
      std::vector<const json*> selecting;
      for (const json& o : *k.objects)
        if (Selects(o, labels).value_or(false)) selecting.push_back(&o);
      if (selecting.size() < 2) continue;
      out.push_back(Error("selector", group,
                          std::string(k.kind) + "/" + NameOf(*selecting[1]) + ".spec." + k.selector_field,
                          std::string(k.kind) + "s " + names(selecting) + " all select this group's nodes: " +
                              k.refusal,
                          k.fix));
    }
  return out;
}

}  // namespace

std::vector<CheckFinding> CheckSelectorOverlap(const std::vector<ordered_json>& objects,
                                               const std::map<std::string, NodeLabels>& group_labels) {
  return SelectorOverlap(std::vector<json>(objects.begin(), objects.end()), group_labels);
}

// --- Node labels ---------------------------------------------------------------------------

NodeLabels PredictedNodeLabels(const NodeGroup& group, const kubelet::GuestLayout& layout, const NodeLabels& part_labels) {
  NodeLabels labels;
  // What node feature discovery and the operators set from the devices the guest sees: NFD's
  // pci-<vendor>.present labels (the GPU Operator's and the Network Operator's NFD configurations
  // label by vendor), the GPU Operator's nvidia.com/gpu.present on NVIDIA GPU nodes, the AMD GPU
  // Operator's NodeFeatureRule label (platform.md §3.1-3.4).
  for (const kubelet::GuestDevice& d : layout.devices) {
    if (d.vendor_id == topology::kVendorNvidia && d.role == topology::PciRole::kGpu) {
      labels["feature.node.kubernetes.io/pci-10de.present"] = "true";
      labels["nvidia.com/gpu.present"] = "true";
    } else if (d.vendor_id == topology::kVendorAmd && d.role == topology::PciRole::kGpu) {
      labels["feature.node.kubernetes.io/pci-1002.present"] = "true";
      labels["feature.node.kubernetes.io/amd-gpu"] = "true";
    } else if (d.vendor_id == topology::kVendorHabana) {
      labels["feature.node.kubernetes.io/pci-1da3.present"] = "true";
    } else if (d.vendor_id == topology::kVendorMellanox) {
      labels["feature.node.kubernetes.io/pci-15b3.present"] = "true";
    }
  }
  for (const auto& [k, v] : part_labels) labels[k] = v;
  for (const auto& [k, v] : group.labels) labels[k] = v;
  labels[kNodeGroupLabel] = group.name;
  return labels;
}

// --- Objects from files --------------------------------------------------------------------

std::vector<ordered_json> ParseKubernetesObjects(std::string_view text, const std::string& where) {
  // Split at document markers: "---" at the start of a line, alone or followed by a space and
  // the document's first content or a comment ("--- # second", "--- {kind: ...}"); "..." at the
  // start of a line ends a document. Indented lines are content (a block scalar may hold "---").
  std::vector<std::pair<std::string, int>> docs;  // text, first line
  std::string current;
  int line = 1, start = 1;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t nl = text.find('\n', pos);
    std::string_view l = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    const bool marker = l.substr(0, 3) == "---" && (l.size() == 3 || l[3] == ' ' || l[3] == '\t');
    if (marker) {
      docs.emplace_back(current, start);
      current.clear();
      const std::string_view rest = Trim(l.substr(3));
      start = !rest.empty() && rest.front() != '#' ? line : line + 1;
      if (!rest.empty() && rest.front() != '#') {
        current.append(rest);
        current.push_back('\n');
      }
    } else if (l.substr(0, 3) == "..." && Trim(l.substr(3)).empty()) {
      // end of a document: nothing to keep
    } else {
      current.append(l);
      current.push_back('\n');
    }
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
    ++line;
  }
  docs.emplace_back(current, start);
  std::vector<ordered_json> out;
  auto add = [&](const json& o, const std::string& at) {
    if (!o.is_object() || !o.contains("apiVersion") || !o["apiVersion"].is_string() || !o.contains("kind") ||
        !o["kind"].is_string())
      throw InputError(where, at, "is not a Kubernetes object (it needs apiVersion and kind)",
                       "give Kubernetes objects as YAML documents separated by ---, or a kind: List");
    out.push_back(ordered_json(o));
  };
  for (const auto& [doc, first_line] : docs) {
    if (Trim(doc).empty()) continue;
    const std::string at = "document at line " + std::to_string(first_line);
    json o;
    try {
      // Blank lines in front keep the parser's line numbers those of the file.
      o = ParseStructuredText(std::string(static_cast<size_t>(first_line - 1), '\n') + doc, where);
    } catch (const InputError& e) {
      throw InputError(e.where(), e.field().empty() ? at : at + ": " + e.field(), e.problem(),
                       e.hint().empty() ? "fix the YAML, or give the objects as kubectl get -o yaml writes them" : e.hint());
    }
    if (o.is_null()) continue;
    const std::string kind = o.is_object() && o.contains("kind") && o["kind"].is_string() ? o["kind"].get<std::string>() : "";
    if (kind.size() >= 4 && kind.substr(kind.size() - 4) == "List" && o.contains("items")) {
      if (!o["items"].is_array()) throw InputError(where, at + ".items", "must be a list", "");
      for (size_t i = 0; i < o["items"].size(); ++i) add(o["items"][i], at + ".items[" + std::to_string(i) + "]");
    } else {
      add(o, at);
    }
  }
  return out;
}

// --- The check -----------------------------------------------------------------------------

namespace {

struct GroupState {
  const NodeGroup* group = nullptr;
  size_t index = 0;
  std::optional<GroupPlan> plan;  ///< unset when the flavor did not fit
  sharing::NodeMigShape shape = sharing::NodeMigShape::kOff;
};

class Checker {
 public:
  Checker(const ClusterTemplate& t, const CheckInputs& in) : t_(t), in_(in) {}

  CheckReport Run() {
    report_.cluster = t_.name;
    report_.source = t_.source;
    report_.fleet = in_.fleet ? in_.fleet_name : "";
    report_.fleet_hosts = in_.fleet ? static_cast<int>(in_.fleet->hosts().size()) : 0;
    for (size_t i = 0; i < t_.groups.size(); ++i) {
      GroupState s;
      s.group = &t_.groups[i];
      s.index = i;
      states_.push_back(std::move(s));
    }
    // 1. Plan every group; what needs only the template and the guest layout.
    for (GroupState& s : states_) PlanAndCheckGroup(s);

    // 2. The objects and node labels the cluster will have: given, and generated from the plan.
    for (const ordered_json& o : in_.objects) objects_.push_back(json(o));
    std::map<std::string, NodeLabels> part_labels = in_.part_labels;
    const bool all_planned = std::all_of(states_.begin(), states_.end(), [](const GroupState& s) { return s.plan.has_value(); });
    if (in_.generate && all_planned) {
      ClusterPlan plan;
      plan.cluster = t_.name;
      for (const GroupState& s : states_) plan.groups.push_back(*s.plan);
      try {
        // A generated object with the identity of a given one replaces it: applying the plan
        // would (kubectl apply of the same group, kind, namespace and name).
        auto identity = [](const json& o) {
          return ApiGroup(o) + "/" + KindOf(o) + "/" + StringAt(o, {"metadata", "namespace"}) + "/" + NameOf(o);
        };
        for (const StackPart& part : in_.generate(plan)) {
          for (const ordered_json& og : part.objects) {
            json o(og);
            auto same = std::find_if(objects_.begin(), objects_.end(), [&](const json& x) { return identity(x) == identity(o); });
            if (same != objects_.end()) *same = std::move(o);
            else objects_.push_back(std::move(o));
          }
          for (const auto& [group, labels] : part.node_labels)
            for (const auto& [k, v] : labels) part_labels[group][k] = v;
        }
      } catch (const InputError& e) {
        Add(Warning("selector", "", e.field(),
                    "the plan's Kubernetes objects cannot be generated (" + e.problem() +
                        "), so they were not checked",
                    e.hint().empty() ? "fix the findings above" : e.hint()));
      }
    }
    for (const json& o : objects_) report_.objects.push_back(Ref(o));
    for (const json& o : objects_)
      if (IsNvidiaClusterPolicy(o) && !cluster_policy_) cluster_policy_ = &o;
    operator_mig_ = FindOperatorMigConfig(objects_, cluster_policy_);

    // 3. What needs the objects, the labels or the fleet.
    for (size_t i = 0; i < states_.size(); ++i) {
      GroupState& s = states_[i];
      const NodeGroup& g = *s.group;
      const auto part = part_labels.find(g.name);
      const NodeLabels extra = part == part_labels.end() ? NodeLabels{} : part->second;
      if (s.plan) {
        report_.groups[i].labels = PredictedNodeLabels(g, s.plan->layout, extra);
        CheckMig(s);
      } else {
        NodeLabels labels = extra;
        for (const auto& [k, v] : g.labels) labels[k] = v;
        labels[kNodeGroupLabel] = g.name;
        report_.groups[i].labels = labels;
      }
    }
    CheckStrategies();
    if (!objects_.empty()) CheckObjects();
    if (in_.fleet) CheckFleet();

    // Groups in template order, then the cluster's; stable within each.
    std::vector<CheckFinding> ordered;
    for (const GroupState& s : states_)
      for (const CheckFinding& f : findings_)
        if (f.group == s.group->name) ordered.push_back(f);
    for (const CheckFinding& f : findings_)
      if (f.group.empty()) ordered.push_back(f);
    report_.findings = std::move(ordered);
    return report_;
  }

 private:
  void Add(CheckFinding f) { findings_.push_back(std::move(f)); }

  // Plans the group's guest on its hypervisor (or a fleet host's hardware) and runs the per-group
  // checks that need only the template and the layout.
  void PlanAndCheckGroup(GroupState& s) {
    const NodeGroup& g = *s.group;
    const std::string key = GroupKey(s.index);
    GroupCheck gc;
    gc.name = g.name;
    gc.flavor = g.flavor_name;
    gc.vendor = std::string(VendorName(g.vendor));
    gc.stack = std::string(StackName(g.stack));
    gc.count = g.count;

    CheckLabels(s);
    std::optional<placement::Placement> placed;
    const topology::HostTopology* host = g.hypervisor.get();
    std::string host_name = host ? host->hostname : "";
    if (host) {
      placement::PlaceResult fit = placement::Place(*host, {}, {}, g.request);
      if (fit.fits()) {
        placed = std::move(fit.placement);
      } else {
        Add(Error("fit", g.name, key + ".flavor",
                  "flavor " + g.flavor_name + " does not fit an empty " + host->hostname + ": " +
                      JoinStrings(fit.no_fit.reasons, "; "),
                  "choose a flavor this hardware can hold, or another hypervisor"));
      }
    } else if (in_.fleet) {
      EmptyFit fit = FitEmpty(*in_.fleet, g.request);
      if (fit.first) {
        host = fit.first->hardware.get();
        host_name = fit.first->record.name;
        placed = std::move(fit.placement);
      } else {
        Add(Error("fit", g.name, key + ".flavor",
                  "flavor " + g.flavor_name + " fits no host of the fleet, even empty" +
                      (fit.why_not.empty() ? std::string() : ": " + fit.why_not),
                  "choose a flavor the fleet's hardware can hold, or add hosts that can"));
      }
    } else {
      throw InputError(t_.source, key + ".hypervisor", "node group " + g.name + " has no hypervisor to plan its guest layout on",
                       "set spec.hypervisor or the group's hypervisor to a host topology file (accel topo -o json), "
                       "or check against a fleet (--fleet STORE)");
    }
    if (placed) {
      s.plan = PlanGroup(t_, g, *host, *placed);
      s.plan->hypervisor = host_name;
      gc.planned_on = host_name;
      const kubelet::GuestLayout& layout = s.plan->layout;
      std::set<std::string> models;
      for (const kubelet::GuestDevice& d : layout.devices)
        if (d.vendor_id == topology::kVendorNvidia && d.role == topology::PciRole::kGpu) {
          const sharing::GpuModel* m = sharing::FindGpuModelByPciId((uint32_t{d.device_id} << 16) | topology::kVendorNvidia);
          models.insert(m ? m->name : "10de:" + Hex4(d.device_id));
        }
      gc.gpu_models.assign(models.begin(), models.end());
      CheckKubelet(s);
      CheckTopology(s);
      CheckNetwork(s);
    }
    report_.groups.push_back(std::move(gc));
  }

  void CheckLabels(const GroupState& s) {
    const NodeGroup& g = *s.group;
    const std::string key = GroupKey(s.index) + ".labels";
    auto it = g.labels.find(kNodeGroupLabel);
    if (it != g.labels.end() && it->second != g.name)
      Add(Error("labels", g.name, key + "." + kNodeGroupLabel,
                std::string("sets ") + kNodeGroupLabel + "=" + it->second + ": accel selects this group's nodes with " +
                    kNodeGroupLabel + "=" + g.name + " (every per-group object does), so either the label or every "
                    "object selecting the group is wrong",
                std::string("remove ") + kNodeGroupLabel + " from labels: accel sets it"));
    it = g.labels.find("nvidia.com/mig.config");
    if (it != g.labels.end() && !g.sharing.mig.empty() && it->second != g.sharing.mig)
      Add(Error("labels", g.name, key + ".nvidia.com/mig.config",
                "asks mig-manager for " + it->second + " while sharing.mig is " + g.sharing.mig +
                    ": the nodes get one of them, and the device plugin config the other",
                "remove the label: sharing.mig sets it"));
    it = g.labels.find("nvidia.com/gpu.deploy.operands");
    if (it != g.labels.end() && it->second == "false" && g.vendor == Vendor::kNvidia && g.stack == Stack::kOperator)
      Add(Error("labels", g.name, key + ".nvidia.com/gpu.deploy.operands",
                "is false on a group whose stack is the GPU Operator: the operator removes every operand (driver, "
                "device plugin, ...) from these nodes, so no GPU is advertised",
                "remove the label, or use stack: accel"));
  }

  void CheckKubelet(const GroupState& s) {
    const NodeGroup& g = *s.group;
    const GroupPlan& p = *s.plan;
    for (const kubelet::KubeletFinding& f : p.findings)
      Add(Error("kubelet", g.name, KubeletKey(t_, s.index, f.field), f.problem, f.fix));
    const kubelet::KubeletSettings settings = kubelet::ReadKubeletSettings(json(p.kubelet.config));
    for (const kubelet::KubeletFinding& f : kubelet::CheckKubeletOptions(settings, p.layout))
      Add(CheckFinding{f.severity == kubelet::Severity::kWarning ? CheckSeverity::kWarning : CheckSeverity::kError,
                       "kubelet-options", g.name, KubeletKey(t_, s.index, f.field), f.problem, f.fix});
  }

  // single-numa-node admits a pod only when all it asks for comes from one guest NUMA node
  // (policy_single_numa_node.go: only single-node hints survive the filter), so a pod asking for
  // more accelerators than one guest cell holds is rejected, however many the node has.
  void CheckTopology(const GroupState& s) {
    const NodeGroup& g = *s.group;
    const GroupPlan& p = *s.plan;
    const json c(p.kubelet.config);
    if (!c.contains("topologyManagerPolicy") || c["topologyManagerPolicy"] != "single-numa-node") return;
    const std::vector<kubelet::GuestCellLayout> cells = p.layout.cells_or_one();
    if (cells.size() < 2) return;
    std::map<int, int> per_cell;
    int total = 0;
    std::string word = "accelerator";
    for (const kubelet::GuestDevice& d : p.layout.devices)
      if (d.role == topology::PciRole::kGpu || d.role == topology::PciRole::kHpu) {
        ++total;
        if (d.guest_cell >= 0) ++per_cell[d.guest_cell];
        word = DeviceWord(d);
      }
    int most = 0;
    for (const auto& [cell, n] : per_cell) most = std::max(most, n);
    if (total == 0 || most >= total) return;
    Add(Warning("topology", g.name, KubeletKey(t_, s.index, "topologyManagerPolicy"),
                "single-numa-node rejects a pod asking for more than " + CountOf(static_cast<size_t>(most), word) +
                    " (the most one guest cell holds; a node has " + std::to_string(total) + " on " +
                    CountOf(cells.size(), "cell") + "), or more CPUs or memory than one cell holds: a whole-node pod (" +
                    std::to_string(total) + " " + word + "s) ends in TopologyAffinityError",
                "keep pods within one guest cell; for whole-node pods set kubelet topologyManagerPolicy: restricted "
                "(with topologyManagerPolicyOptions prefer-closest-numa-nodes), or use a flavor with one guest cell"));
  }

  void CheckMig(GroupState& s) {
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

  void CheckNetwork(const GroupState& s) {
    const NodeGroup& g = *s.group;
    if (g.network.rdma == RdmaMode::kNone) return;
    const bool any = std::any_of(s.plan->layout.devices.begin(), s.plan->layout.devices.end(),
                                 [](const kubelet::GuestDevice& d) { return d.rdma; });
    if (any) return;
    Add(Warning("network", g.name, GroupKey(s.index) + ".network.rdma",
                "rdma is " + std::string(RdmaModeName(g.network.rdma)) + " but flavor " + g.flavor_name +
                    " passes through no RDMA device: the " +
                    (g.network.rdma == RdmaMode::kSriov ? "SR-IOV" : "RDMA shared") +
                    " device plugin finds nothing unless the VMs get RDMA NICs another way (Neutron ports with "
                    "vnic_type direct)",
                "add an RDMA NIC or VF alias to the flavor (e.g. pci_passthrough:alias cx7-vf:1), give the nodes "
                "direct ports, or set network.rdma: none"));
  }

  // The NVIDIA device plugin's MIG strategy against each group's MIG shape and sharing. Under the
  // GPU Operator the strategy is one for all its groups: ClusterPolicy spec.mig.strategy becomes
  // the device plugin's MIG_STRATEGY environment variable, which beats a per-node config file
  // (the plugin's precedence: flag > environment > file, k8s-device-plugin.md §2.1).
  void CheckStrategies() {
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

  void CheckObjects() {
    std::map<std::string, NodeLabels> labels;
    for (const GroupCheck& gc : report_.groups) labels[gc.name] = gc.labels;
    for (CheckFinding& f : SelectorOverlap(objects_, labels)) Add(std::move(f));

    const bool nvidia = std::any_of(objects_.begin(), objects_.end(), IsNvidiaClusterPolicy);
    const bool driver_crd = cluster_policy_ && BoolAt(SpecOf(*cluster_policy_), {"driver", "useNvidiaDriverCRD"}, false);
    const bool amd = std::any_of(objects_.begin(), objects_.end(), IsAmdDeviceConfig);
    const bool habana = std::any_of(objects_.begin(), objects_.end(), IsGaudiClusterPolicy);
    const bool network = std::any_of(objects_.begin(), objects_.end(),
                                     [](const json& o) { return IsNicClusterPolicy(o) || IsNicNodePolicy(o); });
    for (size_t i = 0; i < states_.size(); ++i) {
      const GroupState& s = states_[i];
      if (!s.plan) continue;
      const NodeGroup& g = *s.group;
      const NodeLabels& l = report_.groups[i].labels;
      auto selecting = [&](bool (*is)(const json&)) {
        std::vector<std::string> refs;
        for (const json& o : objects_)
          if (is(o) && Selects(o, l).value_or(false)) refs.push_back(Ref(o));
        return refs;
      };
      const std::string key = GroupKey(i) + ".stack";
      std::vector<std::string> reach;
      bool present = false;
      std::string kind, fix;
      if (g.vendor == Vendor::kNvidia) {
        reach = selecting(IsNvidiaClusterPolicy);
        present = nvidia;
        kind = "NVIDIA ClusterPolicy";
        fix = "label the group nvidia.com/gpu.deploy.operands: \"false\" (labels:), so the GPU Operator leaves its "
              "nodes alone";
      } else if (g.vendor == Vendor::kAmd) {
        reach = selecting(IsAmdDeviceConfig);
        present = amd;
        kind = "AMD DeviceConfig";
        fix = "narrow the DeviceConfig's selector to the operator groups' accel.io/node-group labels";
      } else if (g.vendor == Vendor::kHabana) {
        reach = selecting(IsGaudiClusterPolicy);
        present = habana;
        kind = "Gaudi ClusterPolicy";
        fix = "give the Gaudi ClusterPolicy a node_selector on the operator groups' accel.io/node-group labels";
      }
      if (g.vendor != Vendor::kNone && g.stack == Stack::kAccel && !reach.empty())
        Add(Error("selector", g.name, key,
                  "stack is accel, but " + JoinStrings(reach, ", ") + " also reaches these nodes: two device plugins "
                  "advertise the same accelerators and two stacks fight over the driver",
                  fix));
      if (g.vendor != Vendor::kNone && g.stack == Stack::kOperator && reach.empty()) {
        if (present)
          Add(Error("selector", g.name, key,
                    "stack is operator, but no " + kind + " selects these nodes: no driver or device plugin is "
                    "installed on them",
                    "select the group's nodes (accel.io/node-group=" + g.name + ") from a " + kind));
        else
          Add(Warning("selector", g.name, key,
                      "stack is operator, but the objects hold no " + kind + ": nothing checked installs the " +
                          std::string(VendorName(g.vendor)) + " stack on these nodes",
                      "include the " + kind + " among the objects checked"));
      }
      if (g.vendor == Vendor::kNvidia && g.stack == Stack::kOperator && !reach.empty() && driver_crd) {
        bool driver = false;
        for (const json& o : objects_)
          if (IsNvidiaDriver(o) && Selects(o, l).value_or(false)) driver = true;
        if (!driver)
          Add(Error("selector", g.name, key,
                    "the ClusterPolicy delegates drivers to NVIDIADriver objects (driver.useNvidiaDriverCRD) and none "
                    "selects these nodes: no driver is installed",
                    "add an NVIDIADriver with nodeSelector accel.io/node-group: " + g.name +
                        ", or one with default: true"));
      }
      if (network && g.network.rdma != RdmaMode::kNone) {
        const char* section = g.network.rdma == RdmaMode::kSriov ? "sriovDevicePlugin" : "rdmaSharedDevicePlugin";
        bool served = false;
        for (const json& o : objects_)
          if ((IsNicClusterPolicy(o) || IsNicNodePolicy(o)) && SpecOf(o).contains(section) &&
              !SpecOf(o)[section].is_null() && Selects(o, l).value_or(false))
            served = true;
        if (!served)
          Add(Error("selector", g.name, GroupKey(i) + ".network.rdma",
                    "network.rdma is " + std::string(RdmaModeName(g.network.rdma)) +
                        " but no NicClusterPolicy or NicNodePolicy with " + section +
                        " selects these nodes: pods get no RDMA resource",
                    std::string("add ") + section + " to a NicNodePolicy selecting accel.io/node-group=" + g.name));
      }
    }
  }

  void CheckFleet() {
    const fleet::FleetView& view = *in_.fleet;
    fleet::FleetView together = view;  // the groups' VMs, applied in template order
    for (size_t i = 0; i < states_.size(); ++i) {
      const NodeGroup& g = *states_[i].group;
      GroupCheck& gc = report_.groups[i];
      GroupFleetFit fit;
      fit.hosts = static_cast<int>(view.hosts().size());
      fit.count = g.count;
      const EmptyFit empty = FitEmpty(view, g.request);
      fit.hardware_fit_hosts = empty.hosts;
      fleet::CapacityOptions co;
      co.threads = 1;
      co.now_unix = in_.now_unix;
      const fleet::CapacityReport cap = fleet::Capacity(view, {g.request}, co);
      fit.capacity = cap.flavors.empty() ? 0 : cap.flavors.front().count;
      fleet::ScheduleOptions so;
      so.count = std::max(g.count, 1);
      so.different_hosts = true;
      so.alternates = 0;
      so.now_unix = in_.now_unix;
      const fleet::ScheduleResult alone = fleet::Schedule(view, g.request, so);
      fit.distinct_placed = std::min(static_cast<int>(alone.instances.size()), g.count);
      fit.fits_alone = fit.distinct_placed >= g.count;
      const fleet::ScheduleResult with_others = fleet::Schedule(together, g.request, so);
      fit.fits_together = static_cast<int>(with_others.instances.size()) >= g.count;
      for (size_t k = 0; k < with_others.instances.size() && static_cast<int>(k) < g.count; ++k) {
        const fleet::Candidate& c = with_others.instances[k].chosen;
        together.Apply(c.host_index, c.placement);
      }
      const std::string key = GroupKey(i) + ".flavor";
      const std::string fleet_name = in_.fleet_name.empty() ? std::string("the fleet") : in_.fleet_name;
      if (empty.hosts == 0) {
        // The "fit" finding of planning says so when the group had no hypervisor of its own.
        if (g.hypervisor)
          Add(Error("fleet", g.name, key,
                    "flavor " + g.flavor_name + " fits no host of " + fleet_name + " (" + CountOf(view.hosts().size(), "host") +
                        "), even empty" + (empty.why_not.empty() ? std::string() : ": " + empty.why_not),
                    "choose a flavor the fleet's hardware can hold, or add hosts that can"));
      } else if (fit.capacity == 0) {
        Add(Error("fleet", g.name, key,
                  "flavor " + g.flavor_name + " fits the hardware of " + CountOf(static_cast<size_t>(empty.hosts), "host") +
                      " of " + fleet_name + ", but none has room now" +
                      (alone.why_not.empty() ? std::string() : ": " + CausesText(alone.why_not)),
                  "release claims or add hosts (accel fleet capacity shows what is left)"));
      } else if (!fit.fits_alone) {
        Add(Error("fleet", g.name, GroupKey(i) + ".count",
                  "only " + std::to_string(fit.distinct_placed) + " of " + std::to_string(g.count) + " VMs fit on distinct hosts of " +
                      fleet_name + (alone.why_not.empty() ? std::string() : ": " + CausesText(alone.why_not)),
                  "lower count, or add hosts that can take flavor " + g.flavor_name));
      } else if (!fit.fits_together) {
        Add(Error("fleet", g.name, GroupKey(i) + ".count",
                  "the group fits alone, but after the groups before it in the template only " +
                      std::to_string(std::min<size_t>(with_others.instances.size(), static_cast<size_t>(g.count))) +
                      " of " + std::to_string(g.count) + " VMs fit on distinct hosts" +
                      (with_others.why_not.empty() ? std::string() : ": " + CausesText(with_others.why_not)),
                  "lower the counts, or add hosts"));
      }
      gc.fleet = fit;
    }
  }

  const ClusterTemplate& t_;
  const CheckInputs& in_;
  CheckReport report_;
  std::vector<GroupState> states_;
  std::vector<CheckFinding> findings_;
  std::vector<json> objects_;
  const json* cluster_policy_ = nullptr;
  OperatorMigConfig operator_mig_;
};

}  // namespace

CheckReport CheckCluster(const ClusterTemplate& t, const CheckInputs& inputs) { return Checker(t, inputs).Run(); }

ordered_json CheckJson(const CheckReport& r) {
  ordered_json j;
  j["schema"] = "accel.cluster-check/v1";
  j["cluster"] = r.cluster;
  j["template"] = r.source;
  j["clean"] = r.error_count() == 0;
  j["errors"] = r.error_count();
  j["warnings"] = r.warning_count();
  j["objects"] = r.objects;
  j["fleet"] = r.fleet.empty() ? ordered_json(nullptr) : ordered_json{{"name", r.fleet}, {"hosts", r.fleet_hosts}};
  j["groups"] = ordered_json::array();
  for (const GroupCheck& g : r.groups) {
    ordered_json gj;
    gj["name"] = g.name;
    gj["flavor"] = g.flavor;
    gj["vendor"] = g.vendor;
    gj["stack"] = g.stack;
    gj["count"] = g.count;
    gj["planned_on"] = g.planned_on;
    gj["gpu_models"] = g.gpu_models;
    gj["labels"] = ordered_json::object();
    for (const auto& [k, v] : g.labels) gj["labels"][k] = v;
    if (g.fleet)
      gj["fleet"] = {{"hosts", g.fleet->hosts},
                     {"hardware_fit_hosts", g.fleet->hardware_fit_hosts},
                     {"capacity", g.fleet->capacity},
                     {"count", g.fleet->count},
                     {"distinct_placed", g.fleet->distinct_placed},
                     {"fits_alone", g.fleet->fits_alone},
                     {"fits_together", g.fleet->fits_together}};
    else
      gj["fleet"] = nullptr;
    j["groups"].push_back(gj);
  }
  j["findings"] = ordered_json::array();
  for (const CheckFinding& f : r.findings)
    j["findings"].push_back({{"severity", std::string(CheckSeverityName(f.severity))},
                             {"kind", f.kind},
                             {"group", f.group},
                             {"key", f.key},
                             {"problem", f.problem},
                             {"fix", f.fix}});
  return j;
}

}  // namespace accel::cluster
