// The node a kubelet manages, as its admission sees it: the guest cells of a GuestLayout as NUMA
// nodes, with the kubelet's reservations taken out (reservedSystemCPUs, reservedMemory per cell,
// the guest's hugepage pools), the policies of its KubeletConfiguration, and the extended
// resources its device plugins advertise on each cell. kubelet/admission.h admits pods on it.
//
// Plain data and pure functions; thread-safe. Bad input throws InputError.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cpuset.h"
#include "kubelet/derive.h"
#include "kubelet/finding.h"
#include "kubelet/guest_layout.h"
#include "kubelet/version.h"
#include "topology/host.h"

namespace accel::kubelet {

/// One extended resource a node advertises, and where its devices sit.
struct NodeResource {
  std::string name;           ///< e.g. "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "rdma/gpu_shared"
  std::vector<int> per_cell;  ///< devices reporting each guest cell, indexed by cell
  int without_cell = 0;       ///< devices reporting no NUMA node
  /// > 0: the plugin refuses a container asking more (failRequestsGreaterThanOne: 1).
  int max_per_container = 0;
  std::string origin;         ///< what advertises it, for people ("2 x mi300x, 4 time-slicing replicas each")

  /// Devices in all.
  int total() const;
  /// True when some device reports a NUMA node: the kubelet then aligns the resource.
  bool aligned() const;
};

/// A group's node as its kubelet sees it.
struct KubeletNode {
  std::string group;          ///< node group name ("" when built from parts)
  GuestLayout layout;         ///< the guest
  std::vector<GuestHugepagePool> hugepages;  ///< the guest's hugepage pools
  // The kubelet's policies, from its configuration.
  bool static_cpu = false;        ///< cpuManagerPolicy static
  bool full_pcpus_only = false;   ///< cpuManagerPolicyOptions full-pcpus-only "true" (static only)
  std::string topology_policy = "none";  ///< none, best-effort, restricted, single-numa-node
  bool pod_scope = false;         ///< topologyManagerScope pod (else container)
  bool static_memory = false;     ///< memoryManagerPolicy Static
  /// CPUs the kubelet keeps from exclusive use: reservedSystemCPUs, or under static without it
  /// ceil(kubeReserved + systemReserved cpu) CPUs, lowest whole guest cores first.
  CpuSet reserved_cpus;
  int max_pods = 110;             ///< maxPods
  // Per guest cell (index = cell), what the Memory Manager hands out to Guaranteed pods.
  std::vector<uint64_t> cell_memory_mib;  ///< RAM - hugepage pools - reservedMemory memory
  /// page KiB -> MiB: the cell's pool - reservedMemory hugepages-<size>.
  std::vector<std::map<uint64_t, uint64_t>> cell_hugepages_mib;
  // Node allocatable (what the scheduler and the kubelet's predicate count requests against).
  int64_t allocatable_cpu_milli = 0;   ///< vCPUs - reservedSystemCPUs (or kube + system cpu)
  uint64_t allocatable_memory_mib = 0; ///< RAM - kube - system - evictionHard - hugepage pools
  std::map<uint64_t, uint64_t> allocatable_hugepages_mib;  ///< page KiB -> MiB
  std::vector<NodeResource> resources;  ///< advertised extended resources
  /// Problems CheckKubeletConfig finds in the configuration (the node is modelled as written).
  std::vector<KubeletFinding> findings;

  /// The guest cells (cells_or_one of the layout).
  int cell_count() const { return static_cast<int>(cell_memory_mib.size()); }
  /// The resource called `name`, or nullptr.
  const NodeResource* FindResource(std::string_view name) const;
  /// "static CPU Manager (full-pcpus-only), topology single-numa-node (scope pod), memory Static".
  std::string PolicySummary() const;
};

/// The node from its parts: `config` is the KubeletConfiguration (JSON) the node runs, read with
/// ReadKubeletSettings. Throws InputError (where "kubelet configuration", the field) for the
/// first problem the reader finds, a policy or scope name the kubelet does not know,
/// reservedMemory of a NUMA node the guest lacks or of a type other than memory and
/// hugepages-<size>, or reservations that leave a cell negative.
KubeletNode KubeletNodeFrom(const GuestLayout& layout, const std::vector<GuestHugepagePool>& hugepages,
                            const nlohmann::json& config, std::vector<NodeResource> resources,
                            const KubernetesVersion& version = kDefaultKubernetesVersion);

/// The guest as a host for the placement engine: one NUMA node per guest cell (id = cell) with the
/// cell's vCPUs, their SMT siblings as cores (in the cell), the cell's Memory Manager memory as
/// its base page pool, the hugepage pools as pools; one package; under a host bridge, one PCI
/// function per advertised device that reports a cell, on that cell (vendor kSyntheticVendorId,
/// device id = the resource's index in node.resources). Passes topology::CheckInvariants.
topology::HostTopology GuestHostTopology(const KubeletNode& node);

/// PCI vendor id of GuestHostTopology's devices (no real vendor uses it).
inline constexpr uint16_t kSyntheticVendorId = 0xacce;

}  // namespace accel::kubelet
