// `accel cluster check`: what will go wrong in a cluster template's node groups, before it does —
// each finding with the group, the template key to change, the problem and the fix.
//
// CheckCluster plans every group as `accel cluster plan` does (its flavor placed on its
// hypervisor, or on a fleet host's hardware when it has none) and then checks, per group:
//   kubelet   every rule CheckKubeletConfig knows (the Memory Manager sum rule, reservedMemory,
//             reservedSystemCPUs, policy names, single-numa-node with a device local to no guest
//             cell, ...) on the derived-and-overridden KubeletConfiguration (GroupPlan::findings);
//   kubelet-options
//             options the kubelet refuses together that CheckKubeletConfig does not cover
//             (kubelet::CheckKubeletOptions);
//   topology  single-numa-node on a guest whose accelerators span several cells: a pod asking for
//             more than one cell holds is rejected (TopologyAffinityError) — a warning;
//   mig       sharing.mig: the named mig-parted config, as NVIDIA's default-mig-parted-config
//             defines it (sharing/mig_default_configs.h) or as a generated mig-parted ConfigMap holds it, on
//             the GPU model of the group's devices (sharing::ValidateMigPartedConfig);
//   sharing   MIG, time-slicing and MPS against the device plugin's MIG strategy: the GPU
//             Operator runs ONE strategy for every operator group (ClusterPolicy spec.mig.strategy),
//             `single` refuses nodes with several MIG profiles, MPS refuses `mixed`;
//   network   network.rdma on a flavor that passes through no RDMA device — a warning;
//   labels    group labels that fight the labels accel sets (accel.io/node-group,
//             nvidia.com/mig.config);
//   fit       the flavor does not fit its (empty) hypervisor;
//   selector  two operator objects of one kind selecting one group's nodes, a stack: accel group
//             an operator still reaches, a stack: operator group no operator object reaches
//             (CheckSelectorOverlap and the stack checks; only when objects are given);
//   fleet     with a fleet: whether the flavor fits any host's hardware at all, how many more
//             instances the fleet takes now, whether `count` VMs fit on distinct hosts, and
//             whether all groups fit together.
//
// Facts, with their sources, are in the .cc beside each rule; facts not confirmed against the
// upstream source are marked "unconfirmed" there and in docs/node-groups.md.
//
// Pure functions over a loaded template (and a fleet view the caller read); thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kubelet/guest_layout.h"
#include "cluster/plan.h"
#include "cluster/stack_part.h"
#include "cluster/template.h"
#include "fleet/fleet_view.h"
#include "sharing/mig_geometry.h"
#include "sharing/mig_parted_config.h"

namespace accel::cluster {

/// How bad a finding is.
enum class CheckSeverity {
  kError,    ///< will go wrong: the kubelet will not start, pods will be rejected, nothing fits
  kWarning,  ///< may go wrong, or was not checked: a limit the user should know about
};

/// One problem `accel cluster check` found.
struct CheckFinding {
  CheckSeverity severity = CheckSeverity::kError;  ///< error or warning
  /// What was checked: "kubelet", "kubelet-options", "topology", "mig", "sharing",
  /// "network", "labels", "fit", "selector", "fleet" (stable words; the JSON carries them).
  std::string kind;
  std::string group;    ///< node group name; "" = the cluster as a whole
  /// Where to fix it: a template key path ("spec.nodeGroups[0].sharing.mig",
  /// "spec.kubelet.reservedMemory"), or for generated objects "<Kind>/<name>[.field]".
  std::string key;
  std::string problem;  ///< what will go wrong
  std::string fix;      ///< how to fix it
};

/// With a fleet: how a group's flavor fits it.
struct GroupFleetFit {
  int hosts = 0;                 ///< hosts in the fleet
  /// Hosts whose hardware and policy hold one instance when empty (whatever their state).
  int hardware_fit_hosts = 0;
  int64_t capacity = 0;          ///< instances the eligible hosts still take now (fleet::Capacity)
  int count = 0;                 ///< NodeGroup::count
  int distinct_placed = 0;       ///< of `count`, VMs placed on distinct hosts, this group alone
  bool fits_alone = false;       ///< distinct_placed == count
  /// `count` VMs still fit on distinct hosts after the groups before it in the template took
  /// theirs (every group on a working copy of the fleet).
  bool fits_together = false;
};

/// What the check learned of one group (for the report; the findings say what is wrong).
struct GroupCheck {
  std::string name;        ///< NodeGroup::name
  std::string flavor;      ///< its flavor
  std::string vendor;      ///< VendorName
  std::string stack;       ///< StackName
  int count = 0;           ///< NodeGroup::count
  /// Host the guest layout was planned on: the hypervisor's hostname, or the fleet host whose
  /// hardware was used; "" when the flavor did not fit (a "fit" finding says why).
  std::string planned_on;
  /// GPU models of the group's devices as the MIG catalog names them ("H100-SXM5-80GB"), or
  /// "10de:26b5" for an NVIDIA GPU the catalog does not know. Empty without NVIDIA GPUs.
  std::vector<std::string> gpu_models;
  /// The node labels the group's nodes will carry (PredictedNodeLabels).
  NodeLabels labels;
  std::optional<GroupFleetFit> fleet;  ///< set when a fleet was given
};

/// Everything CheckCluster returns.
struct CheckReport {
  std::string cluster;                 ///< metadata.name
  std::string source;                  ///< the template file
  std::vector<GroupCheck> groups;      ///< in template order
  std::vector<CheckFinding> findings;  ///< groups in template order, then the cluster's
  /// The Kubernetes objects the selector checks read, as "Kind/name" (given, then generated).
  std::vector<std::string> objects;
  std::string fleet;                   ///< the fleet's name ("" = no fleet)
  int fleet_hosts = 0;                 ///< hosts in it

  size_t error_count() const;
  size_t warning_count() const;
};

/// What CheckCluster checks besides the template.
struct CheckInputs {
  /// Kubernetes objects the cluster will run (the plan's generated objects, objects read with
  /// `--objects`): the selector checks read NVIDIA ClusterPolicy/NVIDIADriver, AMD DeviceConfig,
  /// the Gaudi ClusterPolicy, NicClusterPolicy/NicNodePolicy and ConfigMaps; other kinds are
  /// ignored. Empty: the selector and stack-reach checks are skipped.
  std::vector<nlohmann::ordered_json> objects;
  /// Node labels the plan's generators put on each group's nodes (StackPart::node_labels).
  std::map<std::string, NodeLabels> part_labels;
  /// Generates the cluster's parts from the plan CheckCluster made (the CLI passes the vendor and
  /// network stack generators); their objects join `objects` (one with the API group, kind,
  /// namespace and name of a given object replaces it, as applying the plan would) and their node
  /// labels join `part_labels`. Called once, and only when every group's flavor fit; an InputError it throws
  /// (a stack that cannot be written) becomes a warning, and the checks go on without its parts.
  /// Empty = nothing generated.
  std::function<std::vector<StackPart>(const ClusterPlan&)> generate;
  /// The fleet to check fits against; nullptr = no fleet checks. Not owned; must outlive the call.
  const fleet::FleetView* fleet = nullptr;
  std::string fleet_name;   ///< for messages (the store's display name)
  int64_t now_unix = 0;     ///< for staleness of fleet hosts; 0 = the view's taken_at
};

/// Checks `t` (see the header comment). Throws InputError when a group has no hypervisor and no
/// fleet host to plan on, or when a kubelet override has a type the derivation cannot read
/// (as `accel cluster plan` does); every other problem is a finding.
CheckReport CheckCluster(const ClusterTemplate& t, const CheckInputs& inputs);

/// Operator objects of one kind selecting the same nodes. `objects` are Kubernetes objects
/// (others are ignored); `group_labels` holds each group's full node labels (PredictedNodeLabels).
/// Selection, per kind (platform.md §3):
///   nvidia.com ClusterPolicy        every GPU node: nvidia.com/gpu.present=true, unless
///                                    nvidia.com/gpu.deploy.operands=false; one per cluster
///   nvidia.com NVIDIADriver         spec.nodeSelector (absent = every GPU node); one per node
///   amd.com DeviceConfig            spec.selector (absent = feature.node.kubernetes.io/amd-gpu=true,
///                                    unconfirmed); one per node
///   habanalabs.habana.ai ClusterPolicy  spec.node_selector (absent = every node); one per node
///   mellanox.com NicClusterPolicy   every node (spec.nodeAffinity when given); one per cluster
///   mellanox.com NicNodePolicy      spec.nodeSelector; one per node, and a section (ofedDriver,
///                                    rdmaSharedDevicePlugin, sriovDevicePlugin) in either the
///                                    NicClusterPolicy or NicNodePolicies, never both
/// Also: NVIDIADriver objects while the ClusterPolicy does not set driver.useNvidiaDriverCRD.
/// Returns findings of kind "selector" (group "" for cluster-wide ones), groups in name order.
std::vector<CheckFinding> CheckSelectorOverlap(const std::vector<nlohmann::ordered_json>& objects,
                                               const std::map<std::string, NodeLabels>& group_labels);

/// Whether `object` (one of the kinds above) selects a node with `labels`; nullopt for a kind
/// CheckSelectorOverlap does not read.
std::optional<bool> ObjectSelects(const nlohmann::ordered_json& object, const NodeLabels& labels);

/// The labels a group's nodes will carry: the template's labels, accel.io/node-group=<group>,
/// the generators' labels (`part_labels`), and what node feature discovery and the operators set
/// from the devices the guest sees — predictions, as NFD's and the operators' defaults give them:
///   NVIDIA GPU  feature.node.kubernetes.io/pci-10de.present=true, nvidia.com/gpu.present=true
///   AMD GPU     feature.node.kubernetes.io/pci-1002.present=true, feature.node.kubernetes.io/amd-gpu=true
///   Gaudi       feature.node.kubernetes.io/pci-1da3.present=true
///   Mellanox    feature.node.kubernetes.io/pci-15b3.present=true
/// A label the template or a generator sets wins over a predicted one.
NodeLabels PredictedNodeLabels(const NodeGroup& group, const kubelet::GuestLayout& layout, const NodeLabels& part_labels);

/// Kubernetes objects from `text`: one or more YAML documents separated by `---` lines, a JSON
/// document, or a `kind: List` / `kind: ...List` with `items`; empty documents are skipped.
/// Every object must be a mapping with apiVersion and kind. Throws InputError naming `where`,
/// the document and the problem. For `accel cluster check --objects FILE`.
std::vector<nlohmann::ordered_json> ParseKubernetesObjects(std::string_view text, const std::string& where);

/// accel.cluster-check/v1: {schema, cluster, template, clean, errors, warnings, objects ["Kind/name"],
/// fleet: null | {name, hosts}, groups[{name, flavor, vendor, stack, count, planned_on,
/// gpu_models, labels, fleet: null | {hosts, hardware_fit_hosts, capacity, count,
/// distinct_placed, fits_alone, fits_together}}], findings[{severity, kind, group, key, problem,
/// fix}]}. `clean` is true when there is no error (warnings allowed).
nlohmann::ordered_json CheckJson(const CheckReport& report);

/// "error" / "warning".
std::string_view CheckSeverityName(CheckSeverity severity);

}  // namespace accel::cluster
