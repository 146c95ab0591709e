// libFuzzer target: arbitrary bytes as an `accel mig plan` fleet file and as a demand file; a
// fleet that reads is planned (heuristic only, small fleets) and the plan's promises checked.
//
// Only accel::InputError may leave ParseFleet / ParseDemand; anything else is a bug, and so is a
// plan that destroys a busy instance or holds an invalid layout.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "common/error.h"
#include "sharing/mig_layout.h"
#include "sharing/mig_planner.h"

namespace {

using namespace accel::sharing;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckPlan(const Fleet& fleet, const Plan& plan) {
  Check(plan.gpus.size() == fleet.gpus.size());
  Check(plan.satisfied_total <= plan.demand_total);
  for (const GpuPlan& g : plan.gpus) {
    const FleetGpu& gpu = fleet.gpus.at(g.gpu);
    Check(ValidateLayout(*gpu.model, g.target).empty());
    for (const ExistingInstance& i : gpu.instances) {
      if (!i.busy) continue;
      bool kept = false;
      for (const MigPlacement& p : g.target) kept = kept || p == i.placement;
      Check(kept);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Demand demand;
  try {
    demand = ParseDemand(text, "demand.yaml");
  } catch (const accel::InputError&) {
    demand = {{"1g.10gb", 3}, {"3g.40gb", 1}};
  }
  try {
    Fleet fleet = ParseFleet(text, "fleet.yaml");
    if (fleet.gpus.size() <= 8) {
      PlanOptions options;
      options.exact_max_gpus = 0;
      CheckPlan(fleet, PlanMig(fleet, demand, options));
    }
  } catch (const accel::InputError&) {
  }
  return 0;
}
