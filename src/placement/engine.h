// The placement engine: (host topology + current usage + host policy) x request -> a placement,
// or the reasons it cannot fit.
//
// It is complete (finds a placement whenever one exists under the rules in docs/placement.md),
// deterministic (same inputs, same answer) and bounded: per (guest cell, host node) feasibility
// from counts, then a min-cost assignment of cells to distinct nodes, with PCI affinity handled
// as a joint constraint over the few nodes that hold matching devices; CPUs are chosen only on
// the nodes the guest lands on. Thread-safe: Place() only reads its arguments.
#pragma once

#include <optional>
#include <string>

#include "placement/gpu_fit.h"
#include "placement/host_state.h"
#include "placement/placement.h"
#include "placement/request.h"
#include "placement/usage.h"
#include "topology/host.h"

namespace accel::placement {

struct PlaceResult {
  std::optional<Placement> placement;  ///< set when the request fits
  NoFit no_fit;                        ///< reasons, filled when it does not
  bool fits() const { return placement.has_value(); }
};

/// Places `request` on the prepared host `state`. Never throws for a request that passed flavor
/// validation; a request that cannot fit returns reasons in no_fit. The state is not changed:
/// apply the placement to it (HostState::Apply) to claim it.
PlaceResult Place(const HostState& state, const PlacementRequest& request);

/// Places `request` on `host` given what `usage` already holds, for callers that place once per
/// host view: the same answer as Place(HostState(host, usage, policy), request), from views of
/// the nodes built for this call (counts only; cores only for the nodes a guest lands on).
PlaceResult Place(const topology::HostTopology& host, const HostUsage& usage,
                  const HostPolicy& policy, const PlacementRequest& request);

/// Place(host, usage, policy, request) for a request with a GpuRequest, giving it exactly the
/// GPUs of `choice` (one of GpuChoices' answers for this host and usage): a fleet scheduler
/// chooses the GPUs by its policy, the engine checks them and everything else. A choice
/// GpuChoices would not offer is a no-fit ("the chosen GPUs cannot take the request"). Without a
/// GpuRequest, `choice` is ignored.
PlaceResult PlaceWithGpuChoice(const topology::HostTopology& host, const HostUsage& usage,
                               const HostPolicy& policy, const PlacementRequest& request,
                               const GpuChoice& choice);

/// Checks that `p` is a valid placement of `request` on `host` over `usage`: every CPU, page and
/// device free and used once, thread/emulator/PCI policies exactly held, memory in one page size
/// per cell. Returns "" when valid, else the first violation. Used by tests and by claims.
std::string Validate(const topology::HostTopology& host, const HostUsage& usage,
                     const HostPolicy& policy, const PlacementRequest& request,
                     const Placement& p);

}  // namespace accel::placement
