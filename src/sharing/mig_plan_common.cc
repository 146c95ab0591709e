// Demand rows and plan assembly shared by the heuristic planner and the exhaustive reference, so
// that both are scored by the same code.
#include <algorithm>
#include <map>

#include "sharing/mig_plan_internal.h"

namespace accel::sharing::plan_internal {

DemandRows MakeDemandRows(const Demand& demand) {
  DemandRows rows;
  std::map<std::string, size_t> seen;
  for (const auto& [name, count] : demand) {
    const int want = std::max(count, 0);
    auto [it, fresh] = seen.emplace(name, rows.names.size());
    if (fresh) {
      rows.names.push_back(name);
      rows.want.push_back(want);
    } else {
      rows.want[it->second] += want;
    }
  }
  return rows;
}

std::vector<int> RowOfProfile(const GpuModel& model, const DemandRows& rows) {
  std::vector<int> row(model.profiles.size(), -1);
  for (size_t r = 0; r < rows.names.size(); ++r) {
    if (rows.want[r] <= 0) continue;
    std::optional<int> p = FindProfile(model, rows.names[r]);
    if (p && row[static_cast<size_t>(*p)] < 0) row[static_cast<size_t>(*p)] = static_cast<int>(r);
  }
  return row;
}

MigLayout CurrentLayout(const FleetGpu& gpu) {
  MigLayout layout;
  if (!gpu.mig_enabled) return layout;
  for (const ExistingInstance& e : gpu.instances) layout.push_back(e.placement);
  return Canonical(std::move(layout));
}

MigLayout BusyLayout(const FleetGpu& gpu) {
  MigLayout layout;
  for (const ExistingInstance& e : gpu.instances) {
    if (e.busy) layout.push_back(e.placement);
  }
  return Canonical(std::move(layout));
}

bool Reconfigurable(const FleetGpu& gpu) { return gpu.mig_enabled || !gpu.busy; }

int GpuFreeScore(const FleetGpu& gpu, const MigLayout& target) {
  if (!gpu.mig_enabled && gpu.busy) return 0;
  return FreeScore(*gpu.model, target);
}

namespace {

// a − b for canonical layouts.
MigLayout Minus(const MigLayout& a, const MigLayout& b) {
  MigLayout out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out),
                      [](const MigPlacement& x, const MigPlacement& y) {
                        return x.start != y.start ? x.start < y.start : x.profile < y.profile;
                      });
  return out;
}

}  // namespace

Plan AssemblePlan(const Fleet& fleet, const DemandRows& rows, std::vector<MigLayout> targets) {
  Plan plan;
  std::vector<int> supply(rows.names.size(), 0);
  for (size_t g = 0; g < fleet.gpus.size(); ++g) {
    const FleetGpu& gpu = fleet.gpus[g];
    GpuPlan gp;
    gp.gpu = static_cast<int>(g);
    gp.target = Canonical(std::move(targets[g]));
    const MigLayout current = CurrentLayout(gpu);
    gp.changed = gpu.mig_enabled ? gp.target != current : !gp.target.empty();
    if (gp.changed) {
      gp.destroy = Minus(current, gp.target);
      gp.create = Minus(gp.target, current);
    }
    const std::vector<int> row = RowOfProfile(*gpu.model, rows);
    for (const MigPlacement& at : gp.target) {
      if (row[static_cast<size_t>(at.profile)] >= 0) supply[static_cast<size_t>(row[at.profile])]++;
    }
    plan.gpus_changed += gp.changed ? 1 : 0;
    plan.free_score += GpuFreeScore(gpu, gp.target);
    plan.gpus.push_back(std::move(gp));
  }
  for (size_t r = 0; r < rows.names.size(); ++r) {
    const int got = std::min(supply[r], rows.want[r]);
    plan.satisfied.emplace_back(rows.names[r], got);
    plan.satisfied_total += got;
    plan.demand_total += rows.want[r];
  }
  return plan;
}

}  // namespace accel::sharing::plan_internal
