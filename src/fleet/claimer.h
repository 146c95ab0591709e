// Claiming a scheduler's decision: each instance on its chosen host, or — when another
// scheduler got there first — on its next-best ranked alternate, without re-scanning the fleet.
// All instances of one request are claimed in one transaction (a ClaimBatch): all or nothing.
#pragma once

#include <string>
#include <vector>

#include "fleet/fleet_store.h"
#include "fleet/scheduler.h"

namespace accel::fleet {

struct ClaimedInstance {
  std::string claim_id;            ///< the stored claim
  Candidate where;                 ///< the candidate that was claimed (chosen or an alternate)
  int rank = 0;                    ///< 0 = the chosen host, k = the k-th alternate
};

struct ClaimOutcome {
  std::vector<ClaimedInstance> instances;  ///< every instance when committed; empty otherwise
  bool committed = false;
  int retries = 0;                         ///< candidates refused before one was claimed
  std::vector<std::string> conflicts;      ///< why each refused candidate was refused (ClaimResult::refused)
};

/// Claims every instance of `decision` in one transaction. An instance whose chosen host
/// changed (another claim, a release, an update) or whose units are taken falls back to its
/// alternates in rank order; a candidate that assumed other instances of this request on its
/// host than were actually claimed there is skipped (its placement may not hold). When an
/// instance runs out of candidates, nothing is claimed (committed = false). Throws SystemError
/// when the store fails.
ClaimOutcome ClaimDecision(FleetStore& store, const ScheduleResult& decision);

}  // namespace accel::fleet
