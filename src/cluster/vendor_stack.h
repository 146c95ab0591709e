// VendorStack: the accelerator stack of every node group of a cluster template — the vendor
// operators' objects for `stack: operator` groups and accel's node agent for `stack: accel`
// groups — as the files `accel cluster plan --out` writes (stack_part.h).
//
// What each group gets (docs/node-groups.md, "The vendor stack"):
//
//   stack: operator, vendor nvidia  (NVIDIA GPU Operator)
//     stack/nvidia/cluster-policy.yaml        ONE ClusterPolicy (nvidia.com/v1) "cluster-policy"
//                                             for the cluster: driver.useNvidiaDriverCRD (drivers
//                                             come from the NVIDIADrivers below), MIG manager on
//                                             with mig.strategy single when every MIG group asks
//                                             a uniform config (all-disabled, all-<profile>), else
//                                             mixed; devicePlugin.config / migManager.config
//                                             point at the two ConfigMaps below when needed
//     stack/nvidia/device-plugin-config.yaml  ConfigMap: one key per time-slicing/MPS config
//                                             ("time-slicing-4", "mps-4-max1", ...) plus
//                                             "default" (no sharing); only with such a group
//     stack/nvidia/mig-parted-config.yaml     ConfigMap: a mig-parted file (config.yaml) with
//                                             every config a group names plus all-disabled; only
//                                             with a MIG group
//     <group>/stack/nvidia-driver.yaml        NVIDIADriver (nvidia.com/v1alpha1) named after the
//                                             group: nodeSelector accel.io/node-group=<group>,
//                                             version, kernelModuleType, rdma, the group's taints
//     node labels                             nvidia.com/mig.config=<sharing.mig>,
//                                             nvidia.com/device-plugin.config=<its key>
//   stack: operator, vendor amd  (AMD GPU Operator)
//     <group>/stack/amd-device-config.yaml    DeviceConfig (amd.com/v1alpha1) named after the
//                                             group in spec.operators.amd.namespace: selector
//                                             accel.io/node-group=<group>, driver version,
//                                             device plugin + node labeller + metrics exporter
//   stack: operator, vendor habana  (Intel Gaudi Base Operator)
//     stack/habana/cluster-policy.yaml        ONE ClusterPolicy (habanalabs.habana.ai/v1)
//                                             "habana-ai" selecting accel.io/stack=habana-operator.
//                                             No CRD of it is public (shared/crds/README.md): the
//                                             object follows the operator's documentation and is
//                                             NOT schema-validated; its comments mark what the
//                                             documentation does not confirm.
//   stack: accel, any vendor  (accel's node agent, deploy/kubernetes/accel-agent.yaml per group)
//     <group>/stack/agent.yaml                the agent's config (`accel serve --config`):
//                                             vendors, device plugin (MIG strategy, time-slicing
//                                             or MPS of the group's resource), MIG manager
//     <group>/stack/accel-agent.yaml          ConfigMap + DaemonSet (apps/v1) "accel-agent-<group>"
//                                             in spec.operators.accel.namespace: nodeSelector
//                                             accel.io/node-group=<group>, the group's taints
//                                             tolerated, the agent.yaml (and mig-parted.yaml)
//     stack/accel/values.yaml                 the same groups as values of the Helm chart
//                                             deploy/helm/accel-agent (groups whose sharing the
//                                             chart cannot express are listed there, not written)
//
// Node labels (StackPart::node_labels), besides the ones above: every accelerator group gets
// kStackLabel=<vendor>-<stack> ("nvidia-operator", "amd-accel", ...); the Gaudi ClusterPolicy
// selects its nodes with it. NVIDIA groups with `stack: accel` in a cluster that also has NVIDIA
// operator groups get nvidia.com/gpu.deploy.operands=false: the GPU Operator then removes every
// nvidia.com/gpu.deploy.<operand> label from those nodes, and its operand DaemonSets select
// those labels, so NVIDIA's device plugin never runs beside accel's on one node; such a group
// with MIG also gets nvidia.com/mig.config=<sharing.mig> at join (else the operator would label a
// MIG-capable node all-disabled, racing the label accel's agent publishes).
// Groups with `vendor: none` get nothing from this part.
//
// Every object also appears in StackPart::objects (file order: files by path, documents in
// order). Output is deterministic: groups in template order, sets sorted.
//
// Pure function of the loaded template and its plan; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/plan.h"
#include "cluster/stack_part.h"
#include "cluster/template.h"
#include "sharing/mig_geometry.h"

namespace accel::cluster {

/// The node label naming who runs a group's accelerator stack: "<vendor>-<stack>", e.g.
/// "nvidia-operator", "amd-accel", "habana-operator". Set on every group whose vendor is not
/// none; the Gaudi ClusterPolicy's node_selector is accel.io/stack=habana-operator.
inline constexpr const char* kStackLabel = "accel.io/stack";

/// The vendor stack of every group of `t` (`plan` = PlanCluster(t): the guest layouts tell which
/// GPU model a MIG group has). Returns the files, node labels and objects described above.
///
/// Throws InputError (where = t.source, field = the key path) when the template asks for a stack
/// that cannot be written:
///   - spec.nodeGroups[i].sharing.mig names a config accel cannot write for the GPU Operator or
///     its agent: accel writes all-disabled, all-enabled, all-balanced and all-<profile>
///     (NVIDIA's default config names), for the MIG-capable GPU models of accel's catalog
///     (`accel mig profiles`); a group whose GPUs are not in it cannot use anything but
///     all-disabled;
///   - spec.nodeGroups[i].sharing.mps on an NVIDIA operator group while another NVIDIA operator
///     group's MIG config needs mig.strategy mixed (one strategy per ClusterPolicy; NVIDIA's
///     device plugin refuses MPS under mixed);
///   - spec.nodeGroups[i].driver.version: two Gaudi operator groups asking for different driver
///     versions (the Gaudi Base Operator has one ClusterPolicy).
StackPart VendorStack(const ClusterTemplate& t, const ClusterPlan& plan);

/// The MIG strategy NVIDIA's device plugin runs with on the nodes of group `g` of `t`, as the
/// vendor stack configures it: "none" for groups without NVIDIA GPUs; for GPU Operator groups the
/// ClusterPolicy's one strategy, "mixed" when some NVIDIA operator group's MIG config is not
/// served by single (sharing::ServedBySingleStrategy), else "single"; for accel agent groups
/// their own: "none" without MIG (or all-disabled), "single" for all-<profile>, else "mixed".
std::string GroupMigStrategy(const ClusterTemplate& t, const NodeGroup& g);

}  // namespace accel::cluster
