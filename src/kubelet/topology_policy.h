// The kubelet's Topology Manager policies, one function each, over one demand being admitted —
// laid out as kubernetes pkg/kubelet/cm/topologymanager is (policy_none.go, policy_best_effort.go,
// policy_restricted.go, policy_single_numa_node.go), with the hint providers' rules (CPU Manager,
// Memory Manager, device manager) in DemandContext. The rules themselves are described in
// kubelet/admission.h; this header is internal to the kubelet layer (NodeAdmission's .cc files).
//
// Not synchronized: a DemandContext lives for one AdmitDemand call.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kubelet/admission.h"
#include "placement/placement.h"

namespace accel::kubelet {

/// One demand (a pod under scope pod, a container under scope container) on a node in a given
/// state: what the policies read, the hint providers' rules, and the outcome.
class DemandContext {
 public:
  /// `node` and `state` must outlive the context; `out` receives the refusal or, when Keep() is
  /// called, what the demand holds.
  DemandContext(const NodeAdmission& node, const AdmissionDemand& demand, NodeAdmission::State* state, Admission* out);

  const AdmissionDemand& demand() const { return demand_; }
  const KubeletNode& node() const { return node_; }
  Admission& out() { return *out_; }
  /// The demand asks for exclusive CPUs (static CPU Manager, Guaranteed, integer CPUs).
  bool cpu_aligned() const { return cpu_aligned_; }
  /// The demand asks the Static Memory Manager for memory or hugepages.
  bool memory_aligned() const { return memory_aligned_; }

  /// Records the refusal in out() (the container named when under scope container); returns false.
  bool Refuse(const std::string& reason, const std::string& message);

  /// The CPU Manager's Allocate under full-pcpus-only: the exclusive CPUs a multiple of the
  /// threads per core and within the node's free whole cores. False (refused) otherwise.
  bool SmtAligned();

  /// The hint merge of single-numa-node (`single`) and restricted: every aligned resource's
  /// narrowest cell width must agree (and be 1 under single-numa-node), and some cell set of that
  /// width must hold it all free now; the placement is kept for Keep(). With the Static Memory
  /// Manager, when no cell set has the memory free it gives no hint: the other resources are
  /// aligned and its Allocate fails (UnexpectedAdmissionError). False (refused) otherwise.
  bool MergeHints(bool single);

  /// What the managers do without alignment (policy none, and best-effort's fallback): the
  /// Memory Manager takes the narrowest cell set with the memory free, the CPUs go anywhere.
  /// False (refused: UnexpectedAdmissionError) when they cannot allocate.
  bool AllocateAnywhere();

  /// Forgets a refusal and any placement (best-effort falls back to AllocateAnywhere).
  void Reset();

  /// Applies what was placed to the node's state and to out() (when the demand is kept).
  void Keep();

 private:
  // MergeHints for `d`, whose memory is Memory-Manager aligned when `memory_aligned`.
  bool MergeHintsFor(bool single, const AdmissionDemand& d, bool memory_aligned);
  // The Memory Manager's hint rules for `d` on `mask` now (memorymanager policy_static.go
  // calculateHints): a cell holding a multi-cell allocation gives no one-cell hint; a cell
  // holding any allocation joins a multi-cell hint only as that same group; the free memory and
  // hugepages of the mask must hold the request.
  bool MemoryMaskOk(const AdmissionDemand& d, const std::vector<int>& mask) const;
  // The engine's placement of `d`'s exclusive CPUs, memory and aligned devices on the guest
  // cells `cells`: as one engine cell on any of them (one_cell), or one engine cell per cell with
  // the demand split over them in cell order. False with *why when it does not fit.
  // `memory_cells`, when not empty, are the cells the memory goes to (a subset of `cells`).
  bool PlaceOnCells(const AdmissionDemand& d, const std::vector<int>& cells, bool one_cell,
                    const std::vector<int>& memory_cells, placement::Placement* placed, std::string* why) const;
  // Free whole-core CPUs of the node (the CPU Manager's GetAvailablePhysicalCPUs).
  int FreePhysicalCpus() const;
  // "cell 0: 14 free CPUs, 120Gi, 2 nvidia.com/gpu; cell 1: ...", what `d` could use now.
  std::string RoomSummary(const AdmissionDemand& d) const;

  const NodeAdmission& admission_;
  const KubeletNode& node_;
  const AdmissionDemand& demand_;
  NodeAdmission::State* state_;
  Admission* out_;
  int cells_ = 0;
  bool cpu_aligned_ = false;
  bool memory_aligned_ = false;
  std::map<std::string, int> devices_aligned_;  ///< aligned extended resources the demand asks
  std::vector<uint64_t> memory_free_;           ///< Memory-Manager memory free per cell now
  // The outcome.
  placement::Placement placed_;
  bool has_placement_ = false;
  std::vector<int> mask_;  ///< the cells the Memory Manager allocated on
};

/// topologyManagerPolicy none: no alignment; each manager allocates anywhere.
bool AdmitUnderNone(DemandContext& c);
/// best-effort: what restricted admits; else, without Memory-Manager memory, anywhere.
bool AdmitUnderBestEffort(DemandContext& c);
/// restricted: a hint every aligned resource prefers, or TopologyAffinityError.
bool AdmitUnderRestricted(DemandContext& c);
/// single-numa-node: one guest cell holds every aligned resource, or TopologyAffinityError.
bool AdmitUnderSingleNumaNode(DemandContext& c);

}  // namespace accel::kubelet
