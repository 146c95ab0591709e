// ClusterPlan: what `accel cluster plan` derives for each node group of a cluster template —
// the guest layout its flavor gives on a hypervisor, the guest's hugepage pools, and the
// kubelet configuration that uses both — and the files a cluster needs from it.
//
// Pipeline per group: the group's PlacementRequest (template.h) is placed by the engine on the
// group's hypervisor topology (an empty host: the layout a VM of this flavor gets on that
// hardware) → GuestLayoutOf (kubelet/guest_layout.h, devices behind accel's pxb-pcie expanders) →
// GuestHugepagesFor → DeriveKubeletConfig with the template's overrides (kubelet/derive.h) →
// CheckKubeletConfig on the result. Placing the group's VMs on real hypervisors of a fleet
// (`--fleet`) is PlanClusterOnFleet (fleet_plan.h).
//
// Pure functions over a loaded template; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kubelet/guest_layout.h"
#include "kubelet/derive.h"
#include "kubelet/check.h"
#include "cluster/stack_part.h"
#include "cluster/template.h"

namespace accel::cluster {

struct GroupPlan {
  std::string group;        ///< NodeGroup::name
  std::string flavor;       ///< its flavor's name
  std::string hypervisor;   ///< hostname of the topology the layout was placed on
  kubelet::GuestLayout layout;       ///< the guest a VM of the group sees
  std::vector<kubelet::GuestHugepagePool> hugepages;  ///< pools the guest kernel reserves, per guest cell
  kubelet::KubeletPlan kubelet;      ///< the derived KubeletConfiguration and why
  std::vector<kubelet::KubeletFinding> findings;  ///< kubelet::CheckKubeletConfig on kubelet.config; empty = clean
  /// With --fleet: the host of each VM of the group, distinct, in instance order; empty when
  /// planned on a host file.
  std::vector<std::string> fleet_hosts;
  /// With --fleet --claim: the claim id of each VM, parallel to fleet_hosts.
  std::vector<std::string> claim_ids;
};

struct ClusterPlan {
  std::string cluster;             ///< metadata.name
  std::string fleet;               ///< the fleet store planned on ("" = host files)
  std::vector<GroupPlan> groups;   ///< in template order
  /// Findings of every group.
  size_t finding_count() const;
};

/// Plans every group of `t`. Throws InputError (naming spec.nodeGroups[i]) when a group has no
/// hypervisor to plan on, or its flavor does not fit an empty hypervisor (with the engine's
/// reasons).
ClusterPlan PlanCluster(const ClusterTemplate& t);

/// One group's plan for a VM of `g` placed by `placement` on `host` (an empty hypervisor, or a
/// fleet host with its claims): layout, guest hugepages, kubelet configuration and its findings.
GroupPlan PlanGroup(const ClusterTemplate& t, const NodeGroup& g, const topology::HostTopology& host,
                    const placement::Placement& placement);

/// The guest's hugepage pools: on each guest cell backed by host huge pages (2 MiB or 1 GiB),
/// half of the cell's memory as guest pages of the same size (so a pod's hugepages map onto
/// host huge pages without splitting them); none on cells backed by base pages.
std::vector<kubelet::GuestHugepagePool> GuestHugepagesFor(const kubelet::GuestLayout& layout);

/// The files of one group, relative to its directory (the list below, without "<group>/").
std::map<std::string, std::string> GroupFiles(const GroupPlan& group);

/// Every generator's part of the plan, merged: the vendor stack (vendor_stack.h), the network
/// stack and guest NCCL files (network_stack.h), monitoring (monitoring_stack.h), then the
/// Cluster API objects and Magnum lines (cluster_api.h), which carry every part's node labels plus
/// kNodeGroupLabel to the nodes. node_labels holds each group's full set (kNodeGroupLabel, the
/// group's own labels, every part's). Throws InputError when the template asks for a stack that
/// cannot be written (the generators' errors, with the key path); std::logic_error when two parts
/// write one file or give one group one label key with two values (a bug).
StackPart PlanStack(const ClusterTemplate& t, const ClusterPlan& plan);

/// The files of the plan, relative path -> content:
///   plan.json (accel.cluster-plan/v1, with each group's node labels) at the top;
///   per group under "<group>/" the GroupFiles list below;
///   and every file of `stack` (PlanStack: stack/..., <group>/stack/..., <group>/network/...,
///   <group>/nccl/..., <group>/cluster-api.yaml, magnum/nodegroups.sh).
/// Per group (GroupFiles):
///   guest-layout.json                     the layout (accel.guest-layout/v1)
///   kubelet-config.yaml                   the complete KubeletConfiguration
///   kubeadm/patches/kubeletconfiguration+strategic.json   for JoinConfiguration.patches.directory
///   kubelet.conf.d/50-accel.conf          a drop-in for the kubelet's --config-dir
///   hugepages/kernel-cmdline.txt          the guest's boot parameters (when it has pools)
///   hugepages/accel-guest-hugepages.service   per-node pools at boot, before the kubelet
std::map<std::string, std::string> PlanFiles(const ClusterPlan& plan, const StackPart& stack);

/// accel.cluster-plan/v1: {schema, cluster, groups[{name, flavor, hypervisor, layout, hugepages,
/// kubelet: {config, choices[{field, value, reason}]}, findings[{field, problem, fix}]}]}.
/// With `node_labels` (PlanStack's), each group also lists its node_labels.
nlohmann::ordered_json PlanJson(const ClusterPlan& plan, const std::map<std::string, NodeLabels>* node_labels = nullptr);

/// accel.guest-layout/v1 of one layout.
nlohmann::ordered_json GuestLayoutJson(const kubelet::GuestLayout& layout);

}  // namespace accel::cluster
