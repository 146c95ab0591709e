// Fleet and demand files, the mig-parted form of a plan, and hand-made planning scenarios.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "sharing/mig_planner.h"
#include "sharing/mig_test_util.h"

namespace accel::sharing::test {
namespace mig_planner_fleet_test {

const std::string kExamples = ACCEL_SOURCE_DIR "/examples/mig/";

TEST(MigPlannerFleetTest, ReadsYamlAndJsonAlike) {
  const Fleet yaml = ParseFleet(
      "gpus:\n"
      "  - {node: a, index: 2, model: H100-SXM5-80GB,\n"
      "     instances: [{profile: 3g.40gb, start: 4, busy: true}, {profile: 1g.10gb, start: 0}]}\n"
      "  - {node: a, model: NVIDIA A100-SXM4-40GB, count: 3}\n"
      "  - {node: b, model: h100-80gb, mig-enabled: false, busy: true}\n",
      "fleet.yaml");
  const Fleet json = ParseFleet(
      R"({"gpus": [{"node": "a", "index": 2, "model": "H100-SXM5-80GB", "instances":
          [{"profile": "3g.40gb", "start": 4, "busy": true}, {"profile": "1g.10gb", "start": 0}]},
          {"node": "a", "model": "NVIDIA A100-SXM4-40GB", "count": 3},
          {"node": "b", "model": "h100-80gb", "mig-enabled": false, "busy": true}]})",
      "fleet.json");
  for (const Fleet* f : {&yaml, &json}) {
    ASSERT_EQ(f->gpus.size(), 5u);
    EXPECT_EQ(f->gpus[0].model->name, "H100-SXM5-80GB");
    ASSERT_EQ(f->gpus[0].instances.size(), 2u);
    EXPECT_TRUE(f->gpus[0].instances[0].busy);
    EXPECT_FALSE(f->gpus[0].instances[1].busy);
    EXPECT_EQ(f->gpus[0].instances[0].placement, (MigPlacement{*FindProfile(*f->gpus[0].model, "3g.40gb"), 4}));
    // Indices after an explicit one continue on the same node.
    EXPECT_EQ(f->gpus[1].index, 3);
    EXPECT_EQ(f->gpus[3].index, 5);
    EXPECT_EQ(f->gpus[1].model->name, "A100-SXM4-40GB");
    EXPECT_EQ(f->gpus[4].node, "b");
    EXPECT_EQ(f->gpus[4].index, 0);
    EXPECT_FALSE(f->gpus[4].mig_enabled);
    EXPECT_TRUE(f->gpus[4].busy);
  }
}

struct BadFleet {
  const char* text;
  const char* field;
  const char* problem;  // substring
};

TEST(MigPlannerFleetTest, RefusesBadFleetsNamingTheField) {
  const BadFleet cases[] = {
      {"", "", "empty"},
      {"hosts: []", "hosts", "not a known key"},
      {"gpus: 3", "gpus", "must be a list"},
      {"gpus: [{index: 0}]", "gpus[0].model", "required"},
      {"gpus: [{model: X9000}]", "gpus[0].model", "unknown GPU model"},
      {"gpus: [{model: H100-SXM5-80GB, colour: red}]", "gpus[0].colour", "not a known key"},
      {"gpus: [{model: H100-SXM5-80GB, index: -1}]", "gpus[0].index", "whole number"},
      {"gpus: [{model: H100-SXM5-80GB, count: 0}]", "gpus[0].count", "whole number"},
      {"gpus: [{model: H100-SXM5-80GB, mig-enabled: yes}]", "gpus[0].mig-enabled", "true or false"},
      {"gpus: [{model: H100-SXM5-80GB, busy: true}]", "gpus[0].busy", "MIG off"},
      {"gpus: [{model: H100-SXM5-80GB, mig-enabled: false, instances: [{profile: 7g.80gb, start: 0}]}]",
       "gpus[0].instances", "MIG off"},
      {"gpus: [{model: H100-SXM5-80GB}, {model: H100-SXM5-80GB, index: 0}]", "gpus[1].index", "twice"},
      {"gpus: [{model: H100-SXM5-80GB, instances: [{profile: 1g.5gb, start: 0}]}]",
       "gpus[0].instances[0].profile", "has no profile"},
      {"gpus: [{model: H100-SXM5-80GB, instances: [{profile: 1g.10gb}]}]", "gpus[0].instances[0].start",
       "required"},
      {"gpus: [{model: H100-SXM5-80GB, instances: [{profile: 1g.10gb, start: 8}]}]",
       "gpus[0].instances[0].start", "whole number"},
      {"gpus: [{model: H100-SXM5-80GB, instances: [{profile: 1g.10gb, start: 0, busy: 1}]}]",
       "gpus[0].instances[0].busy", "true or false"},
      {"gpus: [{model: H100-SXM5-80GB, instances: [{profile: 1g.10gb, start: 0}, {profile: 3g.40gb, start: 4},"
       " {profile: 2g.20gb, start: 2}, {profile: 4g.40gb, start: 0}]}]",
       "gpus[0].instances[0]", "impossible on H100-SXM5-80GB"},
      {"gpus: [{model: H100-SXM5-80GB, instances: [{profile: 2g.20gb, start: 6}]}]", "gpus[0].instances[0]",
       "impossible"},
  };
  for (const BadFleet& c : cases) {
    SCOPED_TRACE(c.text);
    try {
      ParseFleet(c.text, "fleet.yaml");
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "fleet.yaml");
      EXPECT_EQ(e.field(), c.field);
      EXPECT_NE(e.problem().find(c.problem), std::string::npos) << e.what();
    }
  }
}

TEST(MigPlannerFleetTest, ReadsDemandsAndRefusesBadOnes) {
  const Demand d = ParseDemand("demand:\n  3g.40gb: 2\n  1g.10gb: 7\n  2g.20gb: 0\n", "d.yaml");
  EXPECT_EQ(d, (Demand{{"1g.10gb", 7}, {"2g.20gb", 0}, {"3g.40gb", 2}}));  // name order
  EXPECT_EQ(ParseDemand(R"({"7g.80gb": 1})", "d.json"), (Demand{{"7g.80gb", 1}}));
  EXPECT_TRUE(ParseDemand("{}", "d.yaml").empty());
  const std::pair<const char*, const char*> bad[] = {
      {"", ""}, {"[1, 2]", ""}, {"1g.10gb: -1", "1g.10gb"}, {"1g.10gb: 2.5", "1g.10gb"},
      {"1g.10gb: many", "1g.10gb"}, {"9g.99gb: 1", "9g.99gb"}, {"banana: 1", "banana"},
      {"1c.3g.40gb: 1", "1c.3g.40gb"}, {"demand: {1g.10gb: 1}\nextra: 2", "extra"},
      {"demand: {1g.10gb: x}", "demand.1g.10gb"},
  };
  for (const auto& [text, field] : bad) {
    SCOPED_TRACE(text);
    try {
      ParseDemand(text, "d.yaml");
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "d.yaml");
      EXPECT_EQ(e.field(), field) << e.what();
    }
  }
}

TEST(MigPlannerFleetTest, LoadsTheExamplesAndPlansThem) {
  const Fleet fleet = LoadFleet(kExamples + "fleet.yaml");
  const Demand demand = LoadDemand(kExamples + "demand.yaml");
  ASSERT_EQ(fleet.gpus.size(), 12u);
  const Plan plan = PlanMig(fleet, demand);
  EXPECT_EQ(plan.satisfied_total, plan.demand_total);
  EXPECT_FALSE(plan.gpus[3].changed);  // the busy MIG-off GPU
  const MigPartedConfig config = PlanToMigPartedConfig(fleet, plan);
  ASSERT_EQ(config.configs.size(), 2u);
  EXPECT_EQ(config.configs[0].name, "accel-gpu-node-a");
  EXPECT_EQ(config.configs[1].name, "accel-gpu-node-b");
  ASSERT_EQ(config.configs[0].entries.size(), 8u);
  const MigConfigEntry& busy_off = config.configs[0].entries[3];
  EXPECT_FALSE(busy_off.all_devices);
  EXPECT_EQ(busy_off.devices, std::vector<int>{3});
  EXPECT_FALSE(busy_off.mig_enabled);
  EXPECT_TRUE(busy_off.mig_devices.empty());
  EXPECT_EQ(config.configs[0].entries[1].mig_devices, (std::vector<std::pair<std::string, int>>{{"7g.80gb", 1}}));
  // What mig-parted would be handed is a valid file for these models.
  const MigPartedConfig reread = ParseMigPartedConfig(WriteMigPartedConfig(config), "plan.yaml");
  EXPECT_TRUE(ValidateMigPartedConfig(reread, {fleet.gpus[0].model, fleet.gpus[8].model}).empty());
}

TEST(MigPlannerFleetTest, UnreadableFileNamesThePath) {
  try {
    LoadFleet(kExamples + "no-such-fleet.yaml");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), kExamples + "no-such-fleet.yaml");
  }
}

}  // namespace
}  // namespace accel::sharing::test
