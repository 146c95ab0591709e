// The host tuning a hypervisor needs before it can host a set of accelerator flavors: kernel
// command line (isolcpus/nohz_full/rcu_nocbs/irqaffinity, IOMMU passthrough, hugepages per NUMA
// node), Nova's cpu_dedicated_set / cpu_shared_set and reserved_huge_pages, and the commands that
// apply it. Computed from the shared topology model and the flavors (placement::PlacementRequest);
// pure functions, thread-safe. `accel doctor` checks a running host against the same plan.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/cpuset.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"
#include "placement/placement.h"
#include "placement/usage.h"
#include "topology/host.h"

namespace accel::tuning {

/// How many of each flavor the host should be able to run at once, and what it keeps.
struct TuneOptions {
  /// Flavor name → instances to fit. Flavors not named: as many as the host's accelerators
  /// allow for flavors that request PCI devices (spread over the nodes holding them), else 1.
  std::map<std::string, int> counts;
  /// Physical cores per NUMA node kept for the host (housekeeping: IRQs, QEMU emulator
  /// threads of shared guests, the OS): the node's first cores. Their CPUs form
  /// cpu_shared_set and irqaffinity, and shared vCPUs float over them.
  int housekeeping_cores_per_node = 1;
  /// PCI aliases the flavors' pci_passthrough:alias names refer to; empty = aliases by
  /// accelerator kind ("gpu", "hpu", "nic") resolved against the host (DefaultAliases).
  placement::PciAliasTable aliases;
  /// Extra 1 GiB pages per node on top of what the flavors need (headroom); 0 = none. They
  /// are booted with the rest and kept from Nova in reserved_huge_pages (for the host: OVS-DPDK,
  /// a resize's second copy).
  int spare_pages_per_node = 0;
  /// Memory per NUMA node left in base pages for the host OS, QEMU overhead and guests on base
  /// pages, in MiB; 0 = automatic: 1/32 of the node, at least 4 GiB (never more than the node).
  /// Hugepages are planned only out of the rest.
  uint64_t host_memory_mib_per_node = 0;
};

/// What one NUMA node reserves.
struct NodePlan {
  int node = 0;                    ///< host NUMA node OS id
  uint64_t pages_1g = 0;           ///< 1 GiB pages to reserve at boot on this node
  uint64_t pages_2m = 0;           ///< 2 MiB pages to reserve on this node
  CpuSet dedicated;                ///< CPUs for pinned vCPUs (isolated)
  CpuSet housekeeping;             ///< CPUs kept for the host (shared set, IRQs)
  std::vector<std::string> guests; ///< "gpu-1g #1", ... the instances planned on this node
  uint64_t host_memory_mib = 0;    ///< memory kept out of hugepages for the host (see TuneOptions)
};

/// The whole plan.
struct TunePlan {
  std::string host;                  ///< hostname of the planned host
  std::vector<NodePlan> nodes;       ///< ascending by node
  CpuSet dedicated;                  ///< union of nodes' dedicated CPUs (isolcpus, nohz_full, rcu_nocbs)
  CpuSet housekeeping;               ///< union of housekeeping CPUs (irqaffinity, cpu_shared_set)
  /// Kernel parameters to add, in order, e.g. "intel_iommu=on", "iommu=pt",
  /// "default_hugepagesz=1G", "hugepagesz=1G", "hugepages=0:16,1:16", "isolcpus=managed_irq,domain,2-55,58-111", ...
  std::vector<std::string> kernel_args;
  /// nova.conf lines: [compute] cpu_dedicated_set, cpu_shared_set, reserved_huge_pages.
  std::vector<std::string> nova_conf;
  /// Shell commands that apply the plan (grubby/update-grub, sysctl, tuned), in order.
  std::vector<std::string> commands;
  /// Flavors or instances that do not fit, and other facts ("node 1 has no accelerators: no
  /// GPU flavors planned there").
  std::vector<std::string> notes;
  /// The instances planned ("gpu-1g #1", ...), in the order they were placed; placements[i] is
  /// where planned[i] landed on the tuned host (TunedHost, TunedPolicy).
  std::vector<std::string> planned;
  std::vector<placement::Placement> placements;
};

/// Plans the host for `flavors`. Instances are placed one at a time with the placement engine
/// (placement/engine.h, strategy spread) on the host as it will be once tuned: housekeeping
/// cores out of the dedicated set, hugepage pools as large as the node's memory less the host's
/// share allows. Named counts go first, largest requests first; then the unnamed flavors that
/// request PCI devices, one instance of each in turn until none fits; then one instance of each
/// other unnamed flavor. The pages the placed guests take, per node and size, are what the plan
/// reserves. Dedicated CPUs are every node's CPUs but its housekeeping cores when any flavor pins
/// vCPUs, else none (no isolation; every CPU is shared).
/// Throws accel::InputError when a flavor's extra specs are invalid (as placement::BuildRequest
/// does), two flavors share a name, a count names an unknown flavor or is negative, or
/// housekeeping_cores_per_node < 1 or spare_pages_per_node < 0. Instances that do not fit are
/// left out and listed in notes (never an error).
TunePlan PlanTuning(const topology::HostTopology& host,
                    const std::vector<placement::Flavor>& flavors, const TuneOptions& options);

/// The PCI aliases used when TuneOptions::aliases is empty: "gpu" (every GPU model on the host),
/// "hpu" (HPUs), "nic" (NICs with an RDMA device), each with a spec per (vendor, device) found
/// and numa_policy legacy; kinds the host lacks are absent.
placement::PciAliasTable DefaultAliases(const topology::HostTopology& host);

/// `host` as guests find it after the plan is applied: each planned node's 2 MiB and 1 GiB
/// pools hold exactly the planned pages, and its base pool what guests may take in base pages
/// (memory less the hugepages and less host_memory_mib), all free. Other pools are dropped;
/// nodes the plan does not list keep only base pages. Placing plan.planned in order on it
/// under TunedPolicy(plan) gives plan.placements (spare pages aside).
topology::HostTopology TunedHost(const topology::HostTopology& host, const TunePlan& plan);

/// Nova's view of the tuned host: cpu_dedicated_set = plan.dedicated (empty when the plan
/// isolates nothing), cpu_shared_set = plan.housekeeping, strategy spread (as planned), other
/// fields default.
placement::HostPolicy TunedPolicy(const TunePlan& plan);

/// The plan as text (table per node, kernel args, nova.conf, commands, notes) or JSON (schema
/// "accel.tune-plan/v1": every field of TunePlan but placements).
std::string RenderTunePlanText(const TunePlan& plan);
std::string RenderTunePlanJson(const TunePlan& plan);

}  // namespace accel::tuning
