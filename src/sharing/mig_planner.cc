// PlanMig: reduce the fleet to option classes (mig_plan_space.h), build a plan greedily twice
// (ranking changes by instances, then by memory slices, which packs large profiles better),
// improve both by single moves, keep the better, improve it by pairs of moves, and search
// exactly when the fleet is small.
#include "sharing/mig_planner.h"

#include <map>

#include "sharing/mig_plan_internal.h"
#include "sharing/mig_plan_search.h"
#include "sharing/mig_plan_space.h"

namespace accel::sharing {
namespace {

using namespace plan_internal;

// Pair moves cost (moves)² per sweep; above this many single moves only single moves are tried.
constexpr int64_t kPairMoveLimit = 600;

}  // namespace

Plan PlanMig(const Fleet& fleet, const Demand& demand, const PlanOptions& options) {
  const DemandRows rows = MakeDemandRows(demand);
  const PlanSpace space = BuildSpace(fleet, rows);
  const Problem& problem = space.problem;

  const std::vector<int> by_instances(rows.names.size(), 1);
  Assignment best = KeepAll(problem);
  Score best_score = Evaluate(problem, best);
  const int wanted = [&] {
    int total = 0;
    for (int w : rows.want) total += w;
    return total;
  }();
  bool proven = best_score.satisfied == wanted;  // nothing to change: keeping all is optimal
  if (!proven) {
    for (const std::vector<int>* weight : {&by_instances, &space.row_slices}) {
      Assignment a = Improve(problem, Greedy(problem, *weight), options.improvement_rounds, 0);
      const Score s = Evaluate(problem, a);
      if (s > best_score) best = std::move(a), best_score = s;
    }
    best = Improve(problem, std::move(best), options.improvement_rounds, kPairMoveLimit);
    if (static_cast<int>(fleet.gpus.size()) <= options.exact_max_gpus &&
        options.exact_node_limit > 0) {
      best = ExactSearch(problem, space.row_slices, std::move(best), options.exact_node_limit, &proven);
    }
  }
  Plan plan = AssemblePlan(fleet, rows, Targets(fleet, space, best));
  plan.proven_optimal = proven;
  return plan;
}

MigPartedConfig PlanToMigPartedConfig(const Fleet& fleet, const Plan& plan,
                                      const std::string& prefix) {
  MigPartedConfig out;
  std::map<std::string, size_t> config_of;
  for (const GpuPlan& gp : plan.gpus) {
    const FleetGpu& gpu = fleet.gpus[static_cast<size_t>(gp.gpu)];
    const std::string name = prefix + (gpu.node.empty() ? "node" : gpu.node);
    auto [it, fresh] = config_of.emplace(name, out.configs.size());
    if (fresh) out.configs.push_back({name, {}});
    MigConfigEntry entry;
    entry.all_devices = false;
    entry.devices = {gpu.index};
    // The GPU's own model's PCI ids, so the config says which model its profile names mean
    // (1g.10gb is one memory slice on an 80 GB part, two on an A100 40GB) and validates alone.
    for (uint32_t id : gpu.model->pci_ids) entry.device_filter.push_back(DeviceFilter{id, {}});
    entry.mig_enabled = gpu.mig_enabled || gp.changed;
    if (entry.mig_enabled) {
      const std::vector<int> counts = ProfileCounts(*gpu.model, gp.target);
      for (size_t p = 0; p < counts.size(); ++p) {
        if (counts[p] > 0) entry.mig_devices.emplace_back(gpu.model->profiles[p].name, counts[p]);
      }
    }
    out.configs[it->second].entries.push_back(std::move(entry));
  }
  return out;
}

}  // namespace accel::sharing
