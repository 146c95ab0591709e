// VendorStack: the Builder's frame — what it knows of each group, the kStackLabel every
// accelerator group gets, the object files rendered at the end — and the YAML and Kubernetes
// pieces every vendor's part is made of. Each vendor's part is in its own file
// (vendor_stack_internal.h lists them).
#include "cluster/vendor_stack.h"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cluster/vendor_stack_internal.h"
#include "common/yaml_out.h"

namespace accel::cluster {

namespace vendor_stack_internal {

namespace {

constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";

}  // namespace

// ---------------------------------------------------------------------------------------------
// YAML text

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

std::string Hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

namespace {

std::string Render(const ObjectFile& f) {
  std::string text = Comment(f.header);
  for (size_t i = 0; i < f.docs.size(); ++i) {
    if (i > 0) text += "---\n";
    if (i == 0 && !text.empty() && !f.docs[i].comment.empty()) text += "\n";
    text += Comment(f.docs[i].comment) + ToYaml(f.docs[i].object);
  }
  return text;
}

}  // namespace

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
// The generator

Builder::Builder(const ClusterTemplate& t, const ClusterPlan& plan) : t_(t) {
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

StackPart Builder::Build() {
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

std::vector<const GroupInfo*> Builder::Select(Vendor vendor, Stack stack) const {
  std::vector<const GroupInfo*> out;
  for (const GroupInfo& g : groups_)
    if (g.group->vendor == vendor && g.group->stack == stack) out.push_back(&g);
  return out;
}

std::string Builder::Written() const { return "Written by accel cluster plan from cluster template " + t_.name + "."; }

std::string Builder::ContainerEngine() const {
  for (const GroupInfo& g : groups_) {
    const auto it = g.group->kubelet_merged.find("containerRuntimeEndpoint");
    if (it != g.group->kubelet_merged.end() && it->is_string() &&
        it->get<std::string>().find("crio") != std::string::npos)
      return "crio";
  }
  return "containerd";
}

}  // namespace vendor_stack_internal

std::string GroupMigStrategy(const ClusterTemplate& t, const NodeGroup& g) {
  using vendor_stack_internal::MigConfigKind;
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

StackPart VendorStack(const ClusterTemplate& t, const ClusterPlan& plan) {
  return vendor_stack_internal::Builder(t, plan).Build();
}

}  // namespace accel::cluster
