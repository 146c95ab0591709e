// PlaceInFleet: one `place` request end to end — schedule on a view of the fleet, claim on the
// chosen hosts or their ranked alternates, and only when every candidate of an instance was
// taken meanwhile look at the fleet again (a bounded number of rounds). Shared by
// `accel fleet place` (a fresh snapshot per round) and `accel fleet serve` (its live view).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/claimer.h"
#include "fleet/fleet_store.h"
#include "fleet/fleet_view.h"
#include "fleet/scheduler.h"
#include "placement/request.h"

namespace accel::fleet {

struct PlaceOutcome {
  ScheduleResult decision;            ///< the last round's decision
  bool placed = false;                ///< every instance placed (and claimed, when claiming)
  std::vector<Candidate> instances;   ///< where each instance went; empty unless placed
  std::vector<std::string> claim_ids; ///< one per instance when claimed
  int retries = 0;                    ///< candidates refused by the store before one was claimed
  int rounds = 0;                     ///< schedule rounds (1 unless all alternates were taken)
  std::vector<std::string> conflicts; ///< why each refused candidate was refused
  bool lost_race = false;             ///< placed on the view, but every candidate was taken
  /// Why not placed, per cause, most hosts first (scheduler.h's form of "no"); empty when placed.
  /// The last round's decision.why_not, or for a lost race the one cause "taken by other
  /// schedulers": the hosts of the last round's candidates, the last conflict as its example.
  std::vector<CauseCount> why_not;
};

/// Runs the request. `schedule_round` returns the decision of one round on the current view
/// (the CLI reloads a snapshot; the service uses its view). With `store` set, claims the
/// decision (up to `max_rounds` rounds); with nullptr only decides. Throws what the store throws.
PlaceOutcome PlaceInFleet(FleetStore* store, const std::function<ScheduleResult()>& schedule_round,
                          int max_rounds = 3);

/// accel.fleet-placement/v1: {schema, flavor, count, placed, instances[{host, claim?,
/// placement}], retries?, conflicts?, why_not? (outcome.why_not, when not placed), hosts_ranked}.
/// `claimed`: the request claimed.
nlohmann::ordered_json PlaceOutcomeJson(const PlaceOutcome& outcome, const std::string& flavor, int count,
                                        bool claimed);

}  // namespace accel::fleet
