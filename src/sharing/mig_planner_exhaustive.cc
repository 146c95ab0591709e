// PlanMigExhaustive: the reference optimum the tests hold PlanMig to. It shares nothing with the
// planner's search: candidates come straight from EnumerateLayouts / CanAdd / FreeScore, and
// every combination of per-GPU choices is scored. Exponential; small fleets only.
#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include "sharing/mig_plan_internal.h"

namespace accel::sharing {
namespace {

EnumerateOptions WithEmpty() {
  EnumerateOptions options;
  options.include_empty = true;
  return options;
}

using plan_internal::DemandRows;

constexpr int kMaxGpusPerModel = 4;
constexpr double kMaxCombinations = 5e7;

// One choice for one GPU: a target and what it contributes to the objective.
struct GpuChoice {
  MigLayout target;
  std::vector<int> supply;  // per demand row
  bool changed = false;
  int free = 0;
};

bool Contains(const MigLayout& layout, const MigPlacement& at) {
  return std::find(layout.begin(), layout.end(), at) != layout.end();
}

std::vector<int> SupplyOf(const MigLayout& layout, const std::vector<int>& row, size_t rows) {
  std::vector<int> supply(rows, 0);
  for (const MigPlacement& at : layout) {
    if (row[static_cast<size_t>(at.profile)] >= 0) supply[static_cast<size_t>(row[at.profile])]++;
  }
  return supply;
}

// Whether `target` keeps every busy instance; *kept counts the idle instances of undemanded
// profiles it keeps (they may go only where the demanded instances need their space).
bool Allowed(const FleetGpu& gpu, const std::vector<int>& row, const MigLayout& target, int* kept) {
  *kept = 0;
  for (const ExistingInstance& e : gpu.instances) {
    const bool in = Contains(target, e.placement);
    if (e.busy && !in) return false;
    if (!e.busy && in && row[static_cast<size_t>(e.placement.profile)] < 0) ++*kept;
  }
  return true;
}

// Every layout of the model (canonical, empty included) with its FreeScore; computed once per
// model because the tests call this thousands of times.
const std::vector<std::pair<MigLayout, int>>& ScoredLayouts(const GpuModel& model) {
  static std::mutex mu;
  static std::map<const GpuModel*, std::vector<std::pair<MigLayout, int>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = cache.try_emplace(&model);
  if (fresh) {
    for (const MigLayout& layout : EnumerateLayouts(model, WithEmpty())) {
      it->second.emplace_back(Canonical(layout), FreeScore(model, layout));
    }
  }
  return it->second;
}

// Keep, plus per distinct supply vector the changed target that keeps the most idle instances
// of undemanded profiles and, among those, has the highest free score (the rest of the
// objective depends on the target only through the supply vector).
std::vector<GpuChoice> ChoicesFor(const FleetGpu& gpu, const DemandRows& rows) {
  const std::vector<int> row = plan_internal::RowOfProfile(*gpu.model, rows);
  std::vector<GpuChoice> choices;
  const MigLayout current = plan_internal::CurrentLayout(gpu);
  choices.push_back({current, SupplyOf(current, row, rows.names.size()), false,
                     plan_internal::GpuFreeScore(gpu, current)});
  if (!plan_internal::Reconfigurable(gpu)) return choices;
  std::map<std::vector<int>, size_t> by_supply;
  std::vector<int> kept_of;
  for (const auto& [target, free] : ScoredLayouts(*gpu.model)) {
    if (target == current || (!gpu.mig_enabled && target.empty())) continue;
    int kept = 0;
    if (!Allowed(gpu, row, target, &kept)) continue;
    GpuChoice c{target, SupplyOf(target, row, rows.names.size()), true, free};
    auto [it, fresh] = by_supply.emplace(c.supply, choices.size());
    if (fresh) {
      choices.push_back(std::move(c));
      kept_of.resize(choices.size());
      kept_of[it->second] = kept;
    } else if (std::pair(kept, c.free) > std::pair(kept_of[it->second], choices[it->second].free)) {
      choices[it->second] = std::move(c);
      kept_of[it->second] = kept;
    }
  }
  return choices;
}

void Refuse(const Fleet& fleet, const std::vector<std::vector<GpuChoice>>& choices) {
  std::map<const GpuModel*, int> per_model;
  for (const FleetGpu& gpu : fleet.gpus) {
    if (++per_model[gpu.model] > kMaxGpusPerModel) {
      throw std::invalid_argument("PlanMigExhaustive: more than " +
                                  std::to_string(kMaxGpusPerModel) + " GPUs of " + gpu.model->name);
    }
  }
  double combinations = 1;
  for (const auto& c : choices) combinations *= static_cast<double>(c.size());
  if (combinations > kMaxCombinations) {
    throw std::invalid_argument("PlanMigExhaustive: too many combinations to try");
  }
}

}  // namespace

Plan PlanMigExhaustive(const Fleet& fleet, const Demand& demand) {
  const DemandRows rows = plan_internal::MakeDemandRows(demand);
  std::vector<std::vector<GpuChoice>> choices;
  for (const FleetGpu& gpu : fleet.gpus) choices.push_back(ChoicesFor(gpu, rows));
  Refuse(fleet, choices);

  const size_t n = fleet.gpus.size();
  std::vector<size_t> pick(n, 0), best_pick(n, 0);
  bool have_best = false;
  int best_sat = 0, best_changed = 0, best_free = 0;
  while (true) {
    std::vector<int> supply(rows.names.size(), 0);
    int changed = 0, free = 0;
    for (size_t g = 0; g < n; ++g) {
      const GpuChoice& c = choices[g][pick[g]];
      for (size_t r = 0; r < supply.size(); ++r) supply[r] += c.supply[r];
      changed += c.changed ? 1 : 0;
      free += c.free;
    }
    int sat = 0;
    for (size_t r = 0; r < supply.size(); ++r) sat += std::min(supply[r], rows.want[r]);
    if (!have_best || std::tuple(sat, -changed, free) > std::tuple(best_sat, -best_changed, best_free)) {
      have_best = true;
      best_sat = sat, best_changed = changed, best_free = free;
      best_pick = pick;
    }
    size_t g = 0;  // odometer step
    while (g < n && ++pick[g] == choices[g].size()) pick[g++] = 0;
    if (g == n) break;
  }
  std::vector<MigLayout> targets;
  for (size_t g = 0; g < n; ++g) targets.push_back(choices[g][best_pick[g]].target);
  return plan_internal::AssemblePlan(fleet, rows, std::move(targets));
}

}  // namespace accel::sharing
