// The KubeletConfiguration (kubelet.config.k8s.io/v1beta1) a node-group VM needs so that the
// kubelet inside it uses what the flavor pinned, aligned and backed. Whether a configuration
// will work on a guest layout is kubelet/check.h's.
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

#include "kubelet/guest_layout.h"
#include "kubelet/version.h"

namespace accel::kubelet {

/// Hugepages the guest kernel reserves on one guest cell (inside the VM, from its RAM).
struct GuestHugepagePool {
  int cell = 0;                ///< guest NUMA node
  uint64_t page_kib = 0;       ///< 2048 or 1048576
  uint64_t pages = 0;          ///< pages of that size
};

/// What the kubelet derivation needs besides the layout.
struct KubeletInputs {
  KubernetesVersion version = kDefaultKubernetesVersion;  ///< the cluster's (spec.kubernetesVersion)
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

/// "1536Mi"-style text of `mib` mebibytes ("2Gi" when whole GiB).
std::string MiQuantity(uint64_t mib);

}  // namespace accel::kubelet
