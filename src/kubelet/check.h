// Whether a KubeletConfiguration will work on a node: the rules the kubelet enforces at start
// (or silently applies) that accel knows, checked against the node's guest layout. The same
// checks serve `accel cluster plan` (on the configuration it derives), `accel cluster check`
// and `accel doctor --role k8s-node` (on the configuration a node runs).
//
// Sources: kubernetes pkg/kubelet/cm (cpumanager policy_options.go, topologymanager
// policy_options.go, memorymanager policy_static.go), pkg/kubelet/apis/config/validation
// (validation.go), cmd/kubelet/app/server.go; shared/reference/platform.md §2.
//
// Pure functions; thread-safe.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "kubelet/derive.h"
#include "kubelet/finding.h"
#include "kubelet/guest_layout.h"
#include "kubelet/settings.h"
#include "kubelet/version.h"

namespace accel::kubelet {

/// The problems of `config` (a KubeletConfiguration as JSON) on `layout` and the guest's
/// hugepage pools: first what ReadKubeletSettings refuses, then the rules below; every finding
/// an error. Rules: policy and scope names; the Memory Manager sum rule per memory type
/// (reservedMemory summed over NUMA nodes equals kubeReserved + systemReserved + evictionHard
/// memory.available, evictionHard's default counting when it is unset); reservedMemory entries
/// (known NUMA nodes, no type twice on a node, non-zero, memory and hugepages-<size> only,
/// hugepages within the pools, memory within the node); reservedSystemCPUs (inside the guest,
/// not every CPU, whole cores when full-pcpus-only or SMT) and the static CPU Manager's need of
/// a CPU reservation; CPU Manager options (known, alpha ones behind their gate for `version`,
/// none on a policy other than static); align-by-socket with single-numa-node;
/// single-numa-node with a device local to no guest cell; max-allowable-numa-nodes past 8 nodes.
/// Empty when the kubelet will start and admit aligned pods.
std::vector<KubeletFinding> CheckKubeletConfig(const nlohmann::json& config, const GuestLayout& layout,
                                               const std::vector<GuestHugepagePool>& hugepages,
                                               const KubernetesVersion& version);

/// Kubelet options that exclude each other and are not covered by CheckKubeletConfig, for a node
/// of `layout` (errors unless said otherwise):
///   - cpuManagerPolicyOptions distribute-cpus-across-cores with full-pcpus-only or with
///     distribute-cpus-across-numa; prefer-align-cpus-by-uncorecache with either distribute option;
///     align-by-socket on a guest with more sockets than NUMA nodes (kubelet policy_options.go);
///   - topologyManagerPolicyOptions other than prefer-closest-numa-nodes and
///     max-allowable-numa-nodes, or values that are not a boolean / a number;
///   - reservedSystemCPUs with systemReservedCgroup or kubeReservedCgroup; enforceNodeAllocatable
///     system-reserved / kube-reserved without their cgroup, "none" with others, unknown values;
///     shutdownGracePeriodCriticalPods above shutdownGracePeriod; shutdownGracePeriodByPodPriority
///     with shutdownGracePeriod (kubelet validation.go);
///   - warnings: reservedSystemCPUs makes kubeReserved.cpu / systemReserved.cpu void;
///     reservedMemory is set under a Memory Manager policy other than Static (ignored).
std::vector<KubeletFinding> CheckKubeletOptions(const KubeletSettings& settings, const GuestLayout& layout);

}  // namespace accel::kubelet
