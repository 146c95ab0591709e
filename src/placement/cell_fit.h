// Fitting one guest cell onto one host node: CPUs by thread policy, the emulator CPU, shared
// vCPUs, and memory in one page size. Cells of a guest land on distinct nodes and only guest
// cell 0 carries the emulator CPU, so the fit of (cell, node) does not depend on other cells;
// the engine asks it once per pair. Pure functions.
//
// Two depths: CountCell answers from the node's counts alone (a few integer compares, no
// allocation) and is asked of every pair; FitCell chooses the CPUs and is asked only of the
// pairs a guest lands on.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/cpuset.h"
#include "placement/node_view.h"
#include "placement/request.h"

namespace accel::placement {

/// The outcome of fitting one cell on one node.
struct CellFit {
  bool ok = false;
  std::string reason;          ///< when !ok: why, naming the node, e.g. "node 1: 6 free whole cores,
                               ///< thread policy isolate needs 8"
  std::map<int, int> pinning;  ///< dedicated vCPU -> host CPU
  CpuSet consumed;             ///< CPUs the pinning takes (with siblings under isolate)
  CpuSet emulator_cpus;        ///< the emulator CPU, when this cell carries it
  CpuSet emulator_consumed;    ///< CPUs the emulator takes (whole core under isolate)
  CpuSet shared_cpus;          ///< CPUs the cell's shared vCPUs float over
  uint64_t page_size_kib = 0;  ///< page size chosen
  uint64_t pages = 0;          ///< pages of that size taken
  int whole_cores_broken = 0;  ///< whole free cores this fit touches
  int free_threads_after = 0;  ///< free dedicated-eligible threads left on the node
};

/// What one guest cell asks of a node, counted once per request.
struct CellDemand {
  int dedicated = 0;        ///< pinned vCPUs
  int shared = 0;           ///< floating vCPUs
  uint64_t memory_mib = 0;  ///< memory of the cell
  bool emulator = false;    ///< the cell also carries the emulator CPU
  bool operator==(const CellDemand&) const = default;
};

/// The demand of `cell`; reserve_emulator for guest cell 0 under emulator policy isolate.
CellDemand DemandOf(const GuestCell& cell, bool reserve_emulator);

/// CountCell's answer: the fields of CellFit that counts determine.
struct CellCount {
  bool ok = false;
  uint64_t page_size_kib = 0;  ///< page size chosen
  uint64_t pages = 0;          ///< pages of that size taken
  int whole_cores_broken = 0;  ///< estimate for non-uniform cores
  int free_threads_after = 0;  ///< estimate for non-uniform cores
};

/// Whether `demand` (a cell of `request`) fits on `node`, from the node's counts alone, without
/// choosing CPUs. Its `ok` is exact for pinned CPUs, the emulator and memory; for shared vCPUs it
/// may say yes where FitCell says no (it cannot know which shared CPUs a pinning takes when the
/// dedicated and shared sets partly overlap), so the engine confirms each chosen pair with
/// FitCell. When it does not fit and `why` is not null, *why gets the reason (as CellFit::reason);
/// nothing is allocated otherwise.
CellCount CountCell(const NodeView& node, const CellDemand& demand, const PlacementRequest& request,
                    std::string* why);

/// CountCell as a CellFit: pinning fields empty, reason filled when it does not fit.
CellFit CheckCell(const NodeView& node, const GuestCell& cell, const PlacementRequest& request,
                  bool reserve_emulator);

/// Fits `cell` of `request` on `node`; reserve_emulator adds the emulator CPU (guest cell 0 with
/// emulator policy isolate). Returns a CellFit with ok=false and a reason when it does not fit.
CellFit FitCell(const NodeView& node, const GuestCell& cell, const PlacementRequest& request,
                bool reserve_emulator);

/// Page sizes `request` may use on `node`, in the order they are tried (largest first for
/// large/any). Empty when the request names a size the node does not have.
std::vector<uint64_t> CandidatePageSizes(const NodeView& node, const PageSizeRequest& request);

/// "1G", "2M", "4K" style name of a page size in KiB, for messages.
std::string PageSizeName(uint64_t size_kib);

}  // namespace accel::placement
