// Internals shared by the MIG planner (mig_planner.cc) and its exhaustive reference
// (mig_planner_exhaustive.cc): demand rows, the rule for which layouts a GPU may take, and
// assembling a Plan from chosen targets. Not part of the contract; do not include elsewhere.
//
// Free functions over plain data; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "sharing/mig_planner.h"

namespace accel::sharing::plan_internal {

/// The demand with duplicate names merged (counts added, first position kept) and negative
/// counts read as 0.
struct DemandRows {
  /// Profile names, first-appearance order.
  std::vector<std::string> names;
  /// Instances wanted per row.
  std::vector<int> want;
};

DemandRows MakeDemandRows(const Demand& demand);

/// Profile index on `model` → demand row, or -1 when no row names it or its row wants 0.
/// Two names for one profile ("+me" / ".me"): the first row gets it.
std::vector<int> RowOfProfile(const GpuModel& model, const DemandRows& rows);

/// The current layout of a GPU (canonical; empty with MIG off).
MigLayout CurrentLayout(const FleetGpu& gpu);

/// Busy instances of a GPU (canonical).
MigLayout BusyLayout(const FleetGpu& gpu);

/// Whether the GPU may be reconfigured at all (not a busy GPU with MIG off).
bool Reconfigurable(const FleetGpu& gpu);

/// Free score the objective counts for `target` on `gpu`: FreeScore(target), except 0 for a
/// busy GPU with MIG off (it runs whole-GPU work; nothing on it is free).
int GpuFreeScore(const FleetGpu& gpu, const MigLayout& target);

/// Builds the Plan for the chosen targets (one per fleet GPU, any order of placements):
/// changed flags, destroy/create lists, satisfied counts and totals.
Plan AssemblePlan(const Fleet& fleet, const DemandRows& rows, std::vector<MigLayout> targets);

}  // namespace accel::sharing::plan_internal
