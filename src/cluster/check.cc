// CheckCluster: the order of the checks (check_internal.h says which file holds each) and of
// their findings, and the report as JSON.
#include "cluster/check.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cluster/check_internal.h"
#include "common/error.h"

namespace accel::cluster {

namespace {

using nlohmann::ordered_json;

}  // namespace

std::string_view CheckSeverityName(CheckSeverity severity) {
  return severity == CheckSeverity::kError ? "error" : "warning";
}

size_t CheckReport::error_count() const {
  return static_cast<size_t>(std::count_if(findings.begin(), findings.end(),
                                           [](const CheckFinding& f) { return f.severity == CheckSeverity::kError; }));
}

size_t CheckReport::warning_count() const { return findings.size() - error_count(); }

namespace check_internal {

CheckReport Checker::Run() {
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

}  // namespace check_internal

CheckReport CheckCluster(const ClusterTemplate& t, const CheckInputs& inputs) {
  return check_internal::Checker(t, inputs).Run();
}

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
