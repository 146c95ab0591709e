// The fleet scheduler's path for requests with GPUs by model and size (shares, MIG slices,
// whole GPUs of a model list) or pod CPU: Schedule (scheduler.h) hands them here.
//
// For each instance: the scheduler's filters (state, staleness, --where, claims in flight,
// --different-hosts); then every host whose free CPU thousandths, memory and GPUs can hold the
// request (GpuChoices over HostSummary::share) is scored per GPU choice by the options' GPU
// policy (gpu_policy.h) — once per interned host state where the score depends on the state
// only; hosts ranked by (partition, cost, the policy's GPU preference, seeded tiebreak, name);
// the engine places the best and the alternates with exactly the chosen GPUs
// (placement::PlaceWithGpuChoice), a host it refuses falling to the next. options.strategy and
// subset_size do not apply here (the policy ranks; a seeded tiebreak spreads replicas over
// equally good hosts).
//
// Thread-safety: reads the view only; the options' scorer (if any) is used by one decision at a
// time.
#pragma once

#include "fleet/scheduler.h"

namespace accel::fleet {

/// Whether Schedule takes `request` down this path: it has a GpuRequest or CPU thousandths.
bool IsShareRequest(const placement::PlacementRequest& request);

/// Schedule (scheduler.h) for a request IsShareRequest says yes to.
ScheduleResult ScheduleShares(const FleetView& view, const placement::PlacementRequest& request,
                              const ScheduleOptions& options);

}  // namespace accel::fleet
