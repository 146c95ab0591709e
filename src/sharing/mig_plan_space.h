// What each GPU of a fleet may become, reduced for the planner's search: GPUs with the same
// model, layout and busy instances form one class; a class's options are "keep" plus, per
// distinct supply vector (instances per demand row), one changed layout: it keeps every busy
// instance, then as many idle instances of undemanded profiles as that supply allows, then has
// the highest free score (then keeps the most instances in place, creates the fewest). Options
// that supply no more than keeping, or that another option matches or beats on every count and
// on free score, are dropped. Internal to mig_planner.cc; not part of the contract.
//
// Layouts are bit masks over a model's (profile, start) items. Tables are built once per model
// and shared (guarded by a mutex); everything else is plain data. Thread-safe.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sharing/mig_plan_internal.h"
#include "sharing/mig_plan_search.h"

namespace accel::sharing::plan_internal {

/// Every layout of one model as item masks, with what the planner asks of each.
struct ModelTable {
  const GpuModel* model = nullptr;
  /// Item index → placement (EnumerateLayouts's items; at most 64).
  std::vector<MigPlacement> items;
  /// Per layout, in EnumerateLayouts order (empty layout included): items, FreeScore, and
  /// profile counts (layouts × profiles).
  std::vector<uint64_t> masks;
  std::vector<int> free;
  std::vector<uint8_t> counts;
  std::unordered_map<uint64_t, int> index;

  /// The item of a placement; -1 when the model has no such placement.
  int ItemOf(const MigPlacement& at) const;
  MigLayout LayoutOf(int layout) const;
};

/// The table of `model`, built on first use; lives as long as the program.
const ModelTable& TableFor(const GpuModel& model);

/// The search problem for a fleet and how to map its answer back to layouts.
struct PlanSpace {
  Problem problem;
  /// Per class: its GPUs (fleet indices, ascending), its table, and the table layout of each
  /// option (option 0, keep, has -1).
  std::vector<std::vector<int>> class_gpus;
  std::vector<const ModelTable*> class_table;
  std::vector<std::vector<int>> option_layout;
  /// Per demand row: the fewest memory slices its profile takes on any model here (1 if none).
  std::vector<int> row_slices;
};

PlanSpace BuildSpace(const Fleet& fleet, const DemandRows& rows);

/// One target per fleet GPU: within a class, the first GPUs (fleet order) take the changed
/// options in option order, the rest keep.
std::vector<MigLayout> Targets(const Fleet& fleet, const PlanSpace& space, const Assignment& a);

}  // namespace accel::sharing::plan_internal
