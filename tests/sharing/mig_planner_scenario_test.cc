// Hand-made MIG planning cases whose right answer is known: what stays, what goes, and why.
#include <gtest/gtest.h>

#include "sharing/mig_planner.h"
#include "sharing/mig_test_util.h"

namespace accel::sharing::test {
namespace mig_planner_scenario_test {

const GpuModel& H100() { return Model("H100-SXM5-80GB"); }

FleetGpu Gpu(const std::vector<std::string>& idle, const std::vector<std::string>& busy = {}) {
  FleetGpu g;
  g.model = &H100();
  for (const MigPlacement& at : Layout(H100(), idle)) g.instances.push_back({at, false});
  for (const MigPlacement& at : Layout(H100(), busy)) g.instances.push_back({at, true});
  return g;
}

std::string Target(const Plan& plan, int gpu) { return Describe(H100(), plan.gpus[static_cast<size_t>(gpu)].target); }

TEST(MigPlannerScenarioTest, NoDemandChangesNothing) {
  const Fleet fleet{{Gpu({"1g.10gb@0"}), Gpu({})}};
  const Plan plan = PlanMig(fleet, {});
  EXPECT_EQ(plan.gpus_changed, 0);
  EXPECT_TRUE(plan.proven_optimal);
  EXPECT_EQ(Target(plan, 0), "1g.10gb@0");
}

TEST(MigPlannerScenarioTest, ExistingInstancesCountAndNothingMoves) {
  const Fleet fleet{{Gpu({"3g.40gb@0", "3g.40gb@4"}), Gpu({})}};
  const Plan plan = PlanMig(fleet, {{"3g.40gb", 2}});
  EXPECT_EQ(plan.satisfied_total, 2);
  EXPECT_EQ(plan.gpus_changed, 0);
}

TEST(MigPlannerScenarioTest, NeverDestroysABusyInstance) {
  const Fleet fleet{{Gpu({"1g.10gb@0"}, {"3g.40gb@4"})}};
  const Plan plan = PlanMig(fleet, {{"7g.80gb", 1}, {"4g.40gb", 1}});
  EXPECT_EQ(plan.satisfied_total, 1);
  EXPECT_EQ(Target(plan, 0), "4g.40gb@0 + 3g.40gb@4");
  EXPECT_EQ(Describe(H100(), plan.gpus[0].destroy), "1g.10gb@0");
  EXPECT_EQ(Describe(H100(), plan.gpus[0].create), "4g.40gb@0");
}

TEST(MigPlannerScenarioTest, KeepsAnUndemandedIdleInstanceWhileItFits) {
  const Fleet fleet{{Gpu({"1g.20gb@6"})}};
  // 3g@4 would leave the larger free space (4g@0), but the idle 1g.20gb does not have to go.
  EXPECT_EQ(Target(PlanMig(fleet, {{"3g.40gb", 1}}), 0), "3g.40gb@0 + 1g.20gb@6");
  EXPECT_EQ(Target(PlanMig(fleet, {{"3g.40gb", 2}}), 0), "3g.40gb@0 + 3g.40gb@4");
}

TEST(MigPlannerScenarioTest, ChangesTheGpuThatLeavesMoreFree) {
  // Either GPU can give two 3g.40gb with one change; turning the idle 1g×7 GPU over keeps the
  // empty one whole (free score 8 + 0 instead of 0 + 0).
  const Fleet fleet{{Gpu({"1g.10gb@0", "1g.10gb@1", "1g.10gb@2", "1g.10gb@3", "1g.10gb@4", "1g.10gb@5",
                          "1g.10gb@6"}),
                     Gpu({})}};
  const Plan plan = PlanMig(fleet, {{"3g.40gb", 2}});
  EXPECT_EQ(plan.gpus_changed, 1);
  EXPECT_EQ(Target(plan, 0), "3g.40gb@0 + 3g.40gb@4");
  EXPECT_EQ(plan.free_score, 8);
}

TEST(MigPlannerScenarioTest, BusyMigOffGpuIsLeftAlone) {
  FleetGpu off = Gpu({});
  off.mig_enabled = false;
  off.busy = true;
  FleetGpu idle_off = off;
  idle_off.busy = false;
  const Plan plan = PlanMig(Fleet{{off, idle_off}}, {{"7g.80gb", 2}});
  EXPECT_FALSE(plan.gpus[0].changed);
  EXPECT_TRUE(plan.gpus[1].changed);
  EXPECT_EQ(plan.satisfied_total, 1);
  EXPECT_EQ(Target(plan, 1), "7g.80gb@0");
}

TEST(MigPlannerScenarioTest, NamesCountOnEveryModelThatHasThem) {
  FleetGpu a100;
  a100.model = &Model("A100-SXM4-40GB");  // 1g.10gb is two memory slices here, one on H100
  const Plan plan = PlanMig(Fleet{{a100, Gpu({})}}, {{"1g.10gb", 11}});
  EXPECT_EQ(plan.satisfied_total, 11);
  EXPECT_EQ(plan.gpus_changed, 2);
}

}  // namespace
}  // namespace accel::sharing::test
