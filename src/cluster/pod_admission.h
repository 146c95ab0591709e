// What fits on a node: whether the kubelet of a node group's VM admits a pod, and how many such
// pods one node takes (`accel cluster pods`).
//
// A pod file (Kubernetes v1 Pod, YAML or JSON) is read as the API server stores it: requests
// default to limits, extended resources and hugepages need requests == limits, and the pod's QoS
// class is computed exactly as Kubernetes does (pkg/apis/core/helper/qos ComputePodQOS: only cpu
// and memory count; Guaranteed when every container — init containers too — has cpu and memory
// limits and the summed requests equal the summed limits; BestEffort when nothing is requested).
//
// The node is the group's guest as its kubelet sees it (KubeletNode): the guest cells of the
// GuestLayout as NUMA nodes, with the kubelet's reservations taken out (reservedSystemCPUs,
// reservedMemory per cell, the guest's hugepage pools) and the extended resources the group's
// device plugins advertise on each cell (AdvertisedResources).
//
// The decision follows the kubelet's admission (the topology manager's hint rules, then each
// manager's Allocate; kubernetes pkg/kubelet/cm, read for this file: topologymanager policy.go
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
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/guest_layout.h"
#include "cluster/kubelet_config.h"
#include "cluster/plan.h"
#include "cluster/template.h"
#include "common/cpuset.h"
#include "placement/placement.h"
#include "placement/usage.h"
#include "topology/host.h"

namespace accel::cluster {

// ---------------------------------------------------------------------------------------------
// The pod

/// One container's resources as the API server stores them.
struct ContainerResources {
  std::string name;     ///< container name ("containers[1]" when the file gives none)
  bool init = false;    ///< from spec.initContainers
  bool sidecar = false; ///< an init container with restartPolicy: Always (runs beside the app)
  /// Requests in milli-units (1 CPU = 1000, 1 byte = 1000, 1 device = 1000), after defaulting:
  /// a resource with a limit and no request requests its limit. Zero quantities are dropped.
  std::map<std::string, int64_t> requests;
  std::map<std::string, int64_t> limits;  ///< limits, milli-units
};

/// A pod's resources: what `accel cluster pods` reads of a Pod.
struct PodResources {
  std::string name;    ///< metadata.name; "" when absent
  std::string source;  ///< the file (or `where`), for messages
  /// Init containers in spec order, then app containers in spec order.
  std::vector<ContainerResources> containers;
  /// spec.overhead (RuntimeClass): counted in node allocatable, not by the kubelet's managers.
  std::map<std::string, int64_t> overhead;
};

/// Reads a Kubernetes Pod (apiVersion v1, kind Pod) from YAML or JSON text; `where` names it in
/// errors. Throws InputError (where, key path, problem, fix) for: text that does not parse, a
/// document that is not a Pod (the error names its kind: a Deployment, Job, ... is refused with
/// how to extract its pod template), no containers, a quantity that does not parse or is
/// negative, a request above its limit, an extended resource or hugepages whose request differs
/// from its limit or that has no limit, a fractional extended resource, an unknown resource name
/// without a domain, hugepages without a cpu or memory request, pod-level spec.resources (not
/// modelled), or an unknown key under a container's resources.
PodResources ParsePodText(std::string_view text, const std::string& where);

/// ParsePodText of the file at `path`. Throws InputError naming the file.
PodResources LoadPod(const std::string& path);

/// Kubernetes' QoS classes.
enum class QosClass { kBestEffort, kBurstable, kGuaranteed };

/// "BestEffort", "Burstable", "Guaranteed".
const char* QosClassName(QosClass qos);

/// The pod's QoS class, exactly as ComputePodQOS (see the header comment).
QosClass QosOf(const PodResources& pod);

/// The pod's effective request of `resource` in milli-units, as the kubelet's managers and the
/// scheduler accumulate it (KEP-753): the larger of (any init container, plus the sidecars
/// started before it) and (every app container plus every sidecar). `limits` reads the limits
/// instead (the device manager counts limits). Overhead is not included.
int64_t PodRequestMilli(const PodResources& pod, const std::string& resource, bool limits = false);

// ---------------------------------------------------------------------------------------------
// The node

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

/// The extended resources the device plugins of `group` advertise on one of its nodes, whose guest
/// is `layout` (`t` decides the GPU Operator's cluster-wide MIG strategy). The names and rules are
/// those the vendor and network stacks of `accel cluster plan` configure (vendor_stack.h,
/// network_stack.h):
///   - GPUs/HPUs of the group's vendor: nvidia.com/gpu, amd.com/gpu, habana.ai/gaudi; NVIDIA MIG
///     (NVIDIA's default mig-parted configs all-disabled, all-enabled, all-balanced, all-<profile>,
///     laid out per GPU model by check.h's DefaultMigConfig) as nvidia.com/gpu under MIG strategy
///     single (GPU Operator groups when every NVIDIA operator group's config is uniform; accel agent
///     groups with all-<profile>) or nvidia.com/mig-<profile> under mixed; time-slicing or MPS
///     replicas multiply the shared resource (renamed <name>.shared with renameByDefault;
///     failRequestsGreaterThanOne caps a container at 1). Every device and replica reports its
///     GPU's guest cell (NVIDIA's plugin copies the parent's topology to MIG devices and replicas;
///     that AMD's and Habana's plugins report the NUMA node is assumed, unconfirmed — if they do
///     not, the kubelet admits more than accel predicts, never less).
///   - RDMA NICs (network_stack.h's RdmaNicsOf; vendor not habana) under RdmaResourceName: rdma
///     sriov, one per NIC on its cell (the SR-IOV device plugin reports the NUMA node); rdma
///     shared, rdmaHcaMax (63) for the node without a NUMA node (the RDMA shared device plugin
///     reports none, shared/reference/fabric-doctor.md §3.2).
/// Throws InputError (template, spec.nodeGroups[i].sharing.mig) for a MIG config other than those
/// names, or a MIG config on GPUs accel's MIG catalog does not know.
std::vector<NodeResource> AdvertisedResources(const ClusterTemplate& t, const NodeGroup& group,
                                              const GuestLayout& layout);

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

/// The node from its parts: `config` is the KubeletConfiguration (JSON) the node runs. Throws
/// InputError (where "kubelet configuration", the field) when a field the decision reads does not
/// parse (a policy name the kubelet does not know, a CPU list, a quantity, reservedMemory of a
/// NUMA node the guest lacks), or when reservations leave a cell negative.
KubeletNode KubeletNodeFrom(const GuestLayout& layout, const std::vector<GuestHugepagePool>& hugepages,
                            const nlohmann::json& config, std::vector<NodeResource> resources,
                            const KubernetesVersion& version = KubernetesVersion{1, 33, 0});

/// The node of `plan` (PlanCluster's plan of `group`) with the group's advertised resources.
KubeletNode KubeletNodeOf(const ClusterTemplate& t, const NodeGroup& group, const GroupPlan& plan);

/// The guest as a host for the placement engine: one NUMA node per guest cell (id = cell) with the
/// cell's vCPUs, their SMT siblings as cores (in the cell), the cell's Memory Manager memory as
/// its base page pool, the hugepage pools as pools; one package; under a host bridge, one PCI
/// function per advertised device that reports a cell, on that cell (vendor kSyntheticVendorId,
/// device id = the resource's index in node.resources). Passes topology::CheckInvariants.
topology::HostTopology GuestHostTopology(const KubeletNode& node);

/// PCI vendor id of GuestHostTopology's devices (no real vendor uses it).
inline constexpr uint16_t kSyntheticVendorId = 0xacce;

// ---------------------------------------------------------------------------------------------
// Admission

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
  // One demand on `state` (steps 2-4); fills *out's cells/placements/masks and commits into *state
  // when `keep`. Returns false with out->reason/message set when refused.
  bool AdmitDemand(const AdmissionDemand& d, State* state, bool keep, Admission* out) const;
  // The engine's placement of `d`'s exclusive CPUs, memory and aligned devices on the guest
  // cells `cells`: as one engine cell on any of them (one_cell), or one engine cell per cell with
  // the demand split over them in cell order. False with *why when it does not fit.
  // `memory_cells`, when not empty, are the cells the memory goes to (a subset of `cells`).
  bool PlaceOnCells(const AdmissionDemand& d, const std::vector<int>& cells, bool one_cell,
                    const std::vector<int>& memory_cells, const State& state, placement::Placement* placed,
                    std::string* why) const;
  // Records what an admitted demand takes on `mask` into *state and *out.
  void Apply(const placement::Placement* p, const AdmissionDemand& d, const std::vector<int>& mask, bool memory_group,
             State* state, Admission* out) const;
  // Free whole-core CPUs of the node (the CPU Manager's GetAvailablePhysicalCPUs).
  int FreePhysicalCpus(const State& state) const;
  // "cell 0: 14 free CPUs, 120Gi, 2 nvidia.com/gpu; cell 1: ...", what `d` could use now.
  std::string RoomSummary(const AdmissionDemand& d, const State& state) const;

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

}  // namespace accel::cluster
