// The KubeletConfiguration (kubelet.config.k8s.io/v1beta1) a node-group VM needs so that the
// kubelet inside it uses what the flavor pinned, aligned and backed — and the checker that says
// whether a kubelet configuration will work on a guest layout.
//
// Derivation (every choice is recorded in KubeletPlan::choices with its reason; the facts come from
// shared/reference/platform.md §2 and the Kubernetes docs it cites):
//   - CPU Manager `static`, with `reservedSystemCPUs` = whole guest cores of guest cell 0: the
//     cell's shared vCPUs when they form whole cores (they float over the host's housekeeping
//     CPUs, as the emulator threads do), else its first core(s); `full-pcpus-only` when the guest
//     sees SMT siblings; `strict-cpu-reservation` from Kubernetes 1.35 (stable there).
//   - Topology Manager `single-numa-node` (scope pod) when every accelerator and NIC the group
//     offers reports one guest cell (or the guest has one cell); else `restricted` with
//     `prefer-closest-numa-nodes` — single-numa-node would reject, in a loop, every pod asking for
//     a device that is local to no cell (kubernetes#84869). `max-allowable-numa-nodes` past 8 cells.
//   - Memory Manager `Static` with `reservedMemory` per guest cell whose sum per memory type is
//     exactly kubeReserved + systemReserved + the hard eviction threshold (the kubelet refuses to
//     start otherwise); reservations go to cell 0 first, then the next cells, never more than a
//     cell has; no hugepages reservation exceeds its cell's guest pool.
//   - kubeReserved/systemReserved memory by guest size (the tiered rule GKE and AKS use: 25 % of
//     the first 4 GiB, 20 % of the next 4, 10 % of the next 8, 6 % of the next 112, 2 % above),
//     evictionHard memory.available 100Mi (the kubelet's default).
//   - Overrides (the template's kubelet: maps) are merged last, key by key; the result is checked
//     with CheckKubeletConfig, so an override that breaks a rule is a finding, never silent.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/guest_layout.h"
#include "cluster/template.h"

namespace accel::cluster {

/// Hugepages the guest kernel reserves on one guest cell (inside the VM, from its RAM).
struct GuestHugepagePool {
  int cell = 0;                ///< guest NUMA node
  uint64_t page_kib = 0;       ///< 2048 or 1048576
  uint64_t pages = 0;          ///< pages of that size
};

/// What the kubelet derivation needs besides the layout.
struct KubeletInputs {
  KubernetesVersion version{1, 33, 0};  ///< the cluster's (spec.kubernetesVersion)
  /// Guest hugepage pools (GuestHugepagePlan in the plan); empty = none.
  std::vector<GuestHugepagePool> hugepages;
  /// KubeletConfiguration fields merged over the derived ones (NodeGroup::kubelet_merged: the
  /// cluster's, then the group's) as a JSON merge patch (MergeKubeletOverrides).
  nlohmann::json overrides = nlohmann::json::object();
};

/// One decision, for people: the field, its value, and why.
struct KubeletChoice {
  std::string field;   ///< e.g. "topologyManagerPolicy"
  std::string value;   ///< as written in the config
  std::string reason;  ///< e.g. "every GPU and NIC reports one guest cell"
};

struct KubeletPlan {
  nlohmann::ordered_json config;       ///< the complete KubeletConfiguration document
  std::vector<KubeletChoice> choices;  ///< in config order
};

/// Derives the kubelet configuration of a node of `layout` (see the header comment).
/// Throws InputError when an override has the wrong type for a field the derivation reads.
KubeletPlan DeriveKubeletConfig(const GuestLayout& layout, const KubeletInputs& inputs);

/// One problem a kubelet configuration has on a guest layout, with the fix.
struct KubeletFinding {
  std::string field;     ///< the field at fault, e.g. "reservedMemory"
  std::string problem;   ///< what will go wrong, e.g. "the kubelet will not start: ..."
  std::string fix;       ///< how to fix it
};

/// Checks `config` (a KubeletConfiguration as JSON) against `layout` and the guest's hugepage
/// pools: the Memory Manager sum rule per memory type, reservedMemory entries (known NUMA nodes,
/// no duplicates, non-zero, hugepages within the pools), reservedSystemCPUs (inside the guest,
/// whole cores when full-pcpus-only or SMT), policy names and option compatibility
/// (align-by-socket with single-numa-node, a static CPU manager without any reservation,
/// max-allowable-numa-nodes past 8 nodes, single-numa-node with a device local to no cell),
/// and option maturity for `version` (alpha options need their feature gate). Returns the
/// findings; empty when the kubelet will start and admit aligned pods.
std::vector<KubeletFinding> CheckKubeletConfig(const nlohmann::json& config, const GuestLayout& layout,
                                               const std::vector<GuestHugepagePool>& hugepages,
                                               const KubernetesVersion& version);

/// "1536Mi"-style text of `mib` mebibytes ("2Gi" when whole GiB).
std::string MiQuantity(uint64_t mib);

}  // namespace accel::cluster
