// Shared by the files of `accel cluster check` (check*.cc): the Checker that runs the checks in
// order and the per-group state they pass along, the Kubernetes object accessors several checks
// read objects with, and the helpers that build findings. Not part of the public interface
// (check.h is); do not include elsewhere.
//
// Which file holds what:
//   check.cc          Checker::Run (the order of the checks and of the findings), CheckJson
//   check_group.cc    planning one group, and its labels, kubelet and topology checks
//   check_mig.cc      sharing.mig against mig-parted's configs, the device plugin's MIG strategy
//   check_network.cc  network.rdma against the flavor's devices
//   check_objects.cc  Kubernetes objects: parsing, what selects which nodes, predicted node
//                     labels, the selector and stack-reach checks
//   check_fleet.cc    fits against a fleet
#pragma once

#include <cstddef>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/check.h"
#include "cluster/plan.h"
#include "cluster/stack_part.h"
#include "cluster/template.h"
#include "fleet/fleet_view.h"
#include "placement/placement.h"
#include "placement/request.h"
#include "sharing/mig_default_configs.h"
#include "sharing/mig_parted_config.h"

namespace accel::cluster::check_internal {

using nlohmann::json;
using nlohmann::ordered_json;

/// "spec.nodeGroups[i]": the key path of group i, which most findings' keys start with.
inline std::string GroupKey(size_t i) { return "spec.nodeGroups[" + std::to_string(i) + "]"; }

// --- Findings --------------------------------------------------------------------------------

/// A finding of `kind` on `group` ("" = the cluster as a whole), fixed at template key `key`.
inline CheckFinding Error(std::string kind, std::string group, std::string key, std::string problem, std::string fix) {
  return {CheckSeverity::kError, std::move(kind), std::move(group), std::move(key), std::move(problem), std::move(fix)};
}
inline CheckFinding Warning(std::string kind, std::string group, std::string key, std::string problem,
                            std::string fix) {
  return {CheckSeverity::kWarning, std::move(kind), std::move(group), std::move(key), std::move(problem),
          std::move(fix)};
}

// --- Kubernetes objects (check_objects.cc) ---------------------------------------------------

/// The scalar at `path` as text (a bool as "true"/"false", a number as JSON writes it); "" when
/// a key is missing or the value is not a scalar.
std::string StringAt(const json& j, std::initializer_list<const char*> path);
/// Whether the scalar at `path` is true ("true"); `dflt` when it is missing or not a scalar.
bool BoolAt(const json& j, std::initializer_list<const char*> path, bool dflt);

std::string ApiGroup(const json& o);  ///< "nvidia.com" of "nvidia.com/v1"; "" for the core group
std::string KindOf(const json& o);
std::string NameOf(const json& o);    ///< metadata.name, "(unnamed)" without one
std::string Ref(const json& o);       ///< "Kind/name", as findings and the report name objects

bool IsNvidiaClusterPolicy(const json& o);
bool IsNvidiaDriver(const json& o);
bool IsAmdDeviceConfig(const json& o);
bool IsGaudiClusterPolicy(const json& o);
bool IsNicClusterPolicy(const json& o);
bool IsNicNodePolicy(const json& o);

/// The object's spec; an empty object when it has none (so lookups need no checks).
const json& SpecOf(const json& o);

/// ObjectSelects on the unordered JSON the checks keep.
std::optional<bool> Selects(const json& o, const NodeLabels& labels);

// --- MIG (check_mig.cc) ----------------------------------------------------------------------

/// The mig-parted config a ClusterPolicy's mig-manager reads (spec.migManager.config.name), when
/// the objects hold that ConfigMap: the config parsed, or the InputError's text.
struct OperatorMigConfig {
  std::string configmap;                           ///< ConfigMap name; "" = the operator's default
  std::optional<sharing::MigPartedConfig> config;  ///< set when the ConfigMap was found and parsed
  std::string parse_error;                         ///< why config is unset when configmap is not ""
};

OperatorMigConfig FindOperatorMigConfig(const std::vector<json>& objects, const json* cluster_policy);

// --- Fleet (check_fleet.cc) ------------------------------------------------------------------

/// Where a flavor fits the fleet's hosts when they are empty: hardware and policy only.
struct EmptyFit {
  int hosts = 0;                                  ///< hosts whose empty hardware holds one instance
  const fleet::HostEntry* first = nullptr;        ///< the first such host by name
  std::optional<placement::Placement> placement;  ///< its placement there
  std::string why_not;                            ///< one host's reasons when none fits
};

EmptyFit FitEmpty(const fleet::FleetView& view, const placement::PlacementRequest& request);

// --- The checker -----------------------------------------------------------------------------

/// One group as the checks see it.
struct GroupState {
  const NodeGroup* group = nullptr;  ///< in the template
  size_t index = 0;                  ///< in t.groups
  std::optional<GroupPlan> plan;     ///< unset when the flavor did not fit
  /// The MIG shape of its nodes (CheckMig sets it; CheckStrategies reads it).
  sharing::NodeMigShape shape = sharing::NodeMigShape::kOff;
};

/// CheckCluster's one run. The checks add findings as they go; Run orders them at the end
/// (groups in template order, then the cluster's), so a check's file does not decide the order.
class Checker {
 public:
  Checker(const ClusterTemplate& t, const CheckInputs& in) : t_(t), in_(in) {}

  CheckReport Run();  // check.cc

 private:
  void Add(CheckFinding f) { findings_.push_back(std::move(f)); }

  // check_group.cc
  /// Plans the group's guest on its hypervisor (or a fleet host's hardware) and runs the
  /// per-group checks that need only the template and the layout.
  void PlanAndCheckGroup(GroupState& s);
  void CheckLabels(const GroupState& s);
  void CheckKubelet(const GroupState& s);
  void CheckTopology(const GroupState& s);

  // check_mig.cc
  void CheckMig(GroupState& s);
  void CheckStrategies();

  // check_network.cc
  void CheckNetwork(const GroupState& s);

  // check_objects.cc
  void CheckObjects();

  // check_fleet.cc
  void CheckFleet();

  const ClusterTemplate& t_;
  const CheckInputs& in_;
  CheckReport report_;
  std::vector<GroupState> states_;      ///< one per group, template order
  std::vector<CheckFinding> findings_;  ///< as the checks added them; Run orders them
  std::vector<json> objects_;           ///< given, then generated (a generated one replaces its twin)
  const json* cluster_policy_ = nullptr;  ///< the first NVIDIA ClusterPolicy of objects_
  OperatorMigConfig operator_mig_;        ///< what cluster_policy_'s mig-manager reads
};

}  // namespace accel::cluster::check_internal
