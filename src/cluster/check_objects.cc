// Kubernetes objects: read from files, which nodes an operator object selects, the labels a
// group's nodes will carry, and the checks over them — two objects of one kind selecting one
// group, and a group's stack against the operator objects that reach (or miss) its nodes.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster/check_internal.h"
#include "common/error.h"
#include "common/strings.h"
#include "common/structured_file.h"
#include "topology/classify.h"

namespace accel::cluster {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

}  // namespace

namespace check_internal {

// --- JSON fields ---------------------------------------------------------------------------

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

namespace {

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

}  // namespace

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

// --- Selectors -----------------------------------------------------------------------------

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

// --- The stack checks ----------------------------------------------------------------------

void Checker::CheckObjects() {
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

}  // namespace check_internal

std::optional<bool> ObjectSelects(const ordered_json& object, const NodeLabels& labels) {
  return check_internal::Selects(json(object), labels);
}

std::vector<CheckFinding> CheckSelectorOverlap(const std::vector<ordered_json>& objects,
                                               const std::map<std::string, NodeLabels>& group_labels) {
  return check_internal::SelectorOverlap(std::vector<json>(objects.begin(), objects.end()), group_labels);
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

}  // namespace accel::cluster
