// What fits on a node: whether a kubelet admits a pod (kubelet/pod.h) on its node
// (kubelet/node.h: the guest cells, the reservations, the advertised devices), and how many such
// pods one node takes (`accel cluster pods`).
//
// The decision follows the kubelet's admission (the topology manager's hint rules, then each
// manager's Allocate), laid out as the kubelet's own topologymanager is: one function per
// Topology Manager policy (kubelet/topology_policy.h; policy_none.cc, policy_best_effort.cc,
// policy_restricted.cc, policy_single_numa_node.cc) over the hints of the CPU, Memory and device
// managers (topology_hints.cc). Sources (kubernetes pkg/kubelet/cm, read for these files: topologymanager policy.go
// mergePermutation and the single-numa-node filter, cpumanager policy_static.go
// generateCPUTopologyHints and the full-pcpus-only check, memorymanager policy_static.go
// calculateHints, devicemanager topology_hints.go):
//   1. Node allocatable (the scheduler's and the kubelet's predicate check): the pod's requests of
//      cpu, memory, each hugepage size and each extended resource, summed with the pods already
//      there, within what the node offers, and fewer pods than maxPods. Else "Insufficient <r>"
//      (the scheduler never binds it; a pod bound by nodeName is rejected OutOf<r>).
//   2. Which resources ask the topology manager for alignment (get hints): exclusive CPUs (static
//      CPU Manager, Guaranteed pod, integer CPU requests), memory and hugepages (Static Memory
//      Manager, Guaranteed pod), and every extended resource whose devices report a NUMA node
//      (for every QoS class: the device manager does not look at QoS). Shared-pool CPUs, the
//      memory of Burstable pods, and devices with no NUMA node (a plain Nova guest's GPUs, the
//      RDMA shared device plugin) are node-wide only.
//   3. The cells they must come from. The kubelet's hint for a resource is preferred only on the
//      narrowest cell sets that could hold the request on an empty node (CPUs counted with the
//      reserved ones, memory with its allocatable), and a merged hint is preferred only when every
//      resource's hint is the same set. So:
//        single-numa-node: every aligned resource must fit one cell of the node's capacity, and
//          one cell must hold all of it free now;
//        restricted: the narrowest width k must be the same for every aligned resource (else no
//          cell set is preferred for all: TopologyAffinityError however empty the node), and some
//          k cells must hold all of it free now (the Memory Manager's groups: a cell that holds a
//          pod's memory alone never joins a multi-cell allocation, and cells holding a multi-cell
//          allocation are used only as that same group);
//        none: anywhere on the node; the Memory Manager takes the narrowest cell set with the
//          memory free (its default hint, group rules kept);
//        best-effort: what restricted admits (the merge picks the same best hint); else, for a pod
//          without Memory-Manager memory, anywhere; a pod with it is refused (see below).
//      This is where accel runs its placement engine (placement/engine.h): the guest becomes a
//      topology::HostTopology (GuestHostTopology: guest cells as NUMA nodes, vCPUs with their SMT
//      siblings, each cell's allocatable memory as its base page pool, each advertised device on
//      its cell) and the pod a PlacementRequest: one cell (single-numa-node, or restricted with
//      k = 1) whose dedicated vCPUs are the pod's exclusive CPUs (thread policy require under
//      full-pcpus-only: whole guest cores), whose memory is the pod's memory, with each device
//      resource a PCI request of numa_policy required; for k > 1 (and for best-effort/none over
//      all cells) one engine cell per guest cell of each candidate set, the pod's CPUs and memory
//      split over them in cell order. Hugepages are checked per cell by accel before the engine
//      runs (the engine gives a cell one page pool; the pod's memory takes the base pool).
//      No fit: TopologyAffinityError (single-numa-node, restricted), UnexpectedAdmissionError
//      (best-effort, none: the managers' Allocate fails). When no cell set has the pod's memory
//      free at all, the Memory Manager gives no hint, the topology manager admits on the other
//      resources and the Memory Manager's Allocate fails: UnexpectedAdmissionError.
//   4. Allocate: SMTAlignmentError under full-pcpus-only when the exclusive CPU count is not a
//      multiple of the threads per core, or exceeds the free whole cores of the node;
//      UnexpectedAdmissionError when a container asks more than one replica of a resource whose
//      plugin has failRequestsGreaterThanOne.
// Under topologyManagerScope container (the kubelet's default; accel derives pod) steps 2-4 run
// per container in spec order: init containers are tried and let go, sidecars (init containers
// with restartPolicy Always) and app containers are kept for the next container's hints.
//
// "How many such pods one node takes": copies of the pod are admitted one after another on an
// empty node, each where the engine puts it, until the next one is refused; the refusal says what
// ran out.
//
// Where the kubelet's own choice can differ (the predicted admission of a pod on a node in a given
// state follows the rules above; which CPUs and cells the kubelet then takes does not have to be
// the engine's, and later pods see the kubelet's choice):
//   - CPUs: the kubelet's CPU Manager takes CPUs by its own packing order (takeByTopology: whole
//     sockets, NUMA nodes and cores first, lowest ids), not the engine's; with reservedSystemCPUs
//     unset it reserves ceil(kubeReserved + systemReserved cpu) CPUs the same way (accel takes the
//     lowest whole cores first). Only the count per cell matters for later admissions while free
//     CPUs are whole cores (accel's derived config reserves whole cores), so counts agree there.
//   - Cells: among cells that fit, the kubelet takes the lowest-numbered set (with
//     prefer-closest-numa-nodes the closest); the engine takes the one its score prefers (pack:
//     the fullest). For one-cell pods the count per node is the same either way; for multi-cell
//     pods under restricted the split of CPUs and memory over the cells is the kubelet's
//     (takeByTopology; the Memory Manager fills the cells in order), which accel approximates by
//     filling the cells in order.
//   - Memory: the Memory Manager's group-of-NUMA-nodes rule is kept per node (above); when every
//     cell set is blocked by it the real Memory Manager gives no hint at all and may then admit
//     into a blocked group (its Allocate checks only the free memory) — accel says no there.
//     Memory capacity is the guest's RAM; the kubelet reads MemTotal, a little less (the guest
//     kernel's own reservation), so a pod sized to the byte can be refused by the real node.
//   - Hints across containers: with scope container each container is aligned on its own, and
//     CPUs an init container released are reused first by the next containers, which can pin
//     their hint (kubernetes#123816); accel re-admits each container on the node as left by the
//     ones before it, without that reuse preference.
//   - Devices: which device of a cell the kubelet gives (GetPreferredAllocation of the plugin) is
//     the plugin's choice; only counts per cell matter here. Devices whose plugin reports no NUMA
//     node never constrain a pod (so they never give TopologyAffinityError), which is also why a
//     plain Nova guest's GPUs are never aligned with its CPUs.
//   - best-effort with the Static Memory Manager: the memory goes to the topology manager's merged
//     hint of every resource (narrowest, preferred or not), which accel does not compute; a
//     Guaranteed pod that restricted would refuse is answered no (UnexpectedAdmissionError, saying
//     the kubelet may still admit it). Under best-effort and none the CPUs and devices the kubelet
//     takes are its choice (accel fills the cells in order).
//
// Pure functions and plain data, except NodeAdmission (a node with pods on it: not synchronized,
// copyable). Everything throws InputError for bad input; nothing else escapes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cpuset.h"
#include "kubelet/node.h"
#include "kubelet/pod.h"
#include "placement/placement.h"
#include "placement/usage.h"
#include "topology/host.h"

namespace accel::kubelet {

/// What a pod (or, under scope container, one of its containers) asks the kubelet's managers for.
struct AdmissionDemand {
  std::string container;       ///< the container, under scope container; "" for the whole pod
  int exclusive_cpus = 0;      ///< CPUs the static CPU Manager pins (Guaranteed, integer CPUs)
  bool aligned_memory = false; ///< the Static Memory Manager pins its memory (Guaranteed)
  uint64_t memory_mib = 0;     ///< memory request, rounded up to MiB (Guaranteed: memory-managed)
  std::map<uint64_t, uint64_t> hugepages_mib;  ///< page KiB -> MiB (Guaranteed: memory-managed)
  std::map<std::string, int> devices;          ///< extended resource -> count (limits)
};

/// What an admitted pod holds on one guest cell.
struct CellShare {
  int cell = 0;                ///< guest cell
  CpuSet cpus;                 ///< its exclusive guest vCPUs there
  uint64_t memory_mib = 0;     ///< Memory-Manager memory there
  std::map<uint64_t, uint64_t> hugepages_mib;  ///< page KiB -> MiB there
  std::map<std::string, int> devices;          ///< aligned devices there, by resource
};

/// The kubelet's answer for one pod on a node in a given state.
struct Admission {
  bool admitted = false;
  /// "" when admitted; else "TopologyAffinityError", "SMTAlignmentError",
  /// "UnexpectedAdmissionError" (the kubelet's pod status reasons) or "Insufficient <resource>"
  /// (the scheduler's word: the node does not have it).
  std::string reason;
  std::string message;  ///< why, for people: what was short where
  /// Where the pod's aligned resources went (admitted): one entry per cell used, ascending.
  std::vector<CellShare> cells;
  /// The demands the managers saw (one for scope pod; per container for scope container).
  std::vector<AdmissionDemand> demands;
  // What Commit applies (admitted only).
  std::vector<placement::Placement> placements;  ///< the engine's placements on GuestHostTopology
  int64_t cpu_milli = 0;       ///< node allocatable cpu taken (requests + overhead)
  uint64_t memory_mib = 0;     ///< node allocatable memory taken
  std::map<uint64_t, uint64_t> hugepages_mib;  ///< node allocatable hugepages taken
  std::map<std::string, int> devices;          ///< extended resources taken (all, aligned or not)
  /// Cell sets the Memory Manager allocated Guaranteed memory on (its groups).
  std::vector<std::vector<int>> memory_masks;
};

/// A node and the pods admitted to it. Copyable (a copy is an independent node); not synchronized.
class NodeAdmission {
 public:
  explicit NodeAdmission(KubeletNode node);

  /// Whether the kubelet admits `pod` on the node as it is now (see the header comment). Does not
  /// change the node. Throws InputError only for a pod the node cannot even be asked about
  /// (hugepages of a size the node's kernel has no pool of are "Insufficient", not an error).
  Admission Try(const PodResources& pod) const;

  /// Adds an admitted pod's resources (an Admission that Try returned on this node as it is
  /// now). Throws std::logic_error for a refused or stale admission (a caller's bug).
  void Commit(const Admission& admitted);

  const KubeletNode& node() const { return *node_; }
  /// GuestHostTopology(node()).
  const topology::HostTopology& guest_topology() const { return *host_; }
  /// Pods committed so far.
  int pods() const { return state_.pods; }
  /// Exclusive CPUs held per cell, Memory-Manager memory held per cell, aligned devices held per
  /// cell and resource: the node's state for callers that check the kubelet's rules themselves.
  std::vector<CellShare> HeldPerCell() const;
  /// The Memory Manager's group of `cell` (the cells of the multi-cell allocation it holds, or
  /// the cell alone) and how many Guaranteed allocations hold memory there.
  const std::vector<int>& MemoryGroup(int cell) const { return state_.group[static_cast<size_t>(cell)]; }
  int MemoryAssignments(int cell) const { return state_.assignments[static_cast<size_t>(cell)]; }

 private:
  friend class DemandContext;  // the Topology Manager policies (kubelet/topology_policy.h)

  /// What the pods on the node hold.
  struct State {
    placement::HostUsage usage;   ///< what pods hold on the guest host (exclusive CPUs, memory, devices)
    int64_t cpu_milli = 0;        ///< node allocatable taken
    uint64_t memory_mib = 0;
    std::map<uint64_t, uint64_t> hugepages_mib;                ///< node-wide
    std::vector<std::map<uint64_t, uint64_t>> cell_hugepages;  ///< per cell (Memory Manager)
    std::map<std::string, int> devices;                        ///< node-wide, by resource
    std::vector<std::vector<int>> group;  ///< per cell: the Memory Manager's group
    std::vector<int> assignments;          ///< per cell: Guaranteed allocations there
    int pods = 0;
  };
  // One demand on `state` (steps 2-4) under the node's Topology Manager policy; fills *out's
  // cells/placements/masks and commits into *state when `keep`. Returns false with
  // out->reason/message set when refused.
  bool AdmitDemand(const AdmissionDemand& d, State* state, bool keep, Admission* out) const;

  std::shared_ptr<const KubeletNode> node_;
  std::shared_ptr<const topology::HostTopology> host_;
  State state_;
};

/// The answer `accel cluster pods` prints.
struct PodFit {
  std::string group;            ///< node group
  std::string pod;              ///< pod name
  QosClass qos = QosClass::kBestEffort;
  Admission first;              ///< the pod on an empty node
  int per_node = 0;             ///< copies an empty node admits (0 when `first` is refused)
  /// Why the copy after the last admitted one is refused ("" when the count stopped at the cap
  /// below): reason and message.
  std::string stopped_reason;
  std::string stopped_message;
  /// Where the kubelet's own choice can differ for this pod (the header comment, as it applies).
  std::vector<std::string> notes;
};

/// The most copies FitPod tries (maxPods caps it earlier on real nodes).
inline constexpr int kMaxPodsCounted = 1000;

/// `pod` on an empty `node`, then as many copies as fit.
PodFit FitPod(const KubeletNode& node, const PodResources& pod);

/// accel.cluster-pods/v1: {schema, group, pod, qos, kubelet: {policies}, admitted, reason,
/// message, demands[...], cells[{cell, cpus, memory_mib, hugepages_mib{}, devices{}}],
/// per_node, stopped_by{reason, message}, notes[]}.
nlohmann::ordered_json PodFitJson(const PodFit& fit, const KubeletNode& node);

}  // namespace accel::kubelet
