// accel cluster plan --fleet (cluster/fleet_plan.h): each group's VMs on distinct hosts of a
// real SQLite fleet store, the layout derived from where they landed, claims all or nothing.
#include "cluster/fleet_plan.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <set>

#include "common/error.h"
#include "topology/sources.h"

namespace accel::cluster {
namespace fleet_plan_test {

namespace fs = std::filesystem;

const std::string kSource = ACCEL_SOURCE_DIR;
const std::string kExample = kSource + "/examples/cluster/ai-prod.yaml";

class FleetPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = fs::path(::testing::TempDir()) / "fleet-plan-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    store_ = fleet::FleetStore::Open("sqlite:" + (fs::path(dir_) / "fleet.db").string());
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }

  // `n` hosts "<prefix>-1".. of the fixture host file `fixture`.
  void AddHosts(const std::string& prefix, const std::string& fixture, int n) {
    const topology::HostTopology hw = topology::LoadTopology(kSource + "/fixtures/hosts/" + fixture);
    for (int i = 1; i <= n; ++i) {
      fleet::HostSpec spec;
      spec.name = prefix + "-" + std::to_string(i);
      spec.topology = hw;
      store_->AddHost(spec);
    }
  }

  // The example's fleet: 4 HGX H100, 6 MI300X, 2 Gaudi2 hosts.
  void AddExampleFleet(int gaudi_hosts = 2) {
    AddHosts("hgx", "hgx-h100.json", 4);
    AddHosts("mi300x", "epyc-nps4-mi300x.json", 6);
    AddHosts("gaudi", "gaudi2-8hpu.json", gaudi_hosts);
  }

  std::string dir_;
  std::unique_ptr<fleet::FleetStore> store_;
};

TEST_F(FleetPlanTest, DecidesEveryGroupOnDistinctHostsWithoutWriting) {
  AddExampleFleet();
  const ClusterTemplate t = LoadClusterTemplate(kExample);
  const FleetPlanResult r = PlanClusterOnFleet(t, *store_, {});
  ASSERT_TRUE(r.placed());
  ASSERT_EQ(r.plan.groups.size(), t.groups.size());
  const ClusterPlan on_files = PlanCluster(t);
  std::map<std::string, int> vms_per_host;
  for (size_t i = 0; i < t.groups.size(); ++i) {
    const GroupPlan& g = r.plan.groups[i];
    EXPECT_EQ(g.group, t.groups[i].name);
    ASSERT_EQ(g.fleet_hosts.size(), static_cast<size_t>(t.groups[i].count)) << g.group;
    EXPECT_EQ(std::set<std::string>(g.fleet_hosts.begin(), g.fleet_hosts.end()).size(), g.fleet_hosts.size()) << g.group;
    EXPECT_TRUE(g.claim_ids.empty());
    EXPECT_EQ(g.hypervisor, g.fleet_hosts[0]);
    for (const std::string& h : g.fleet_hosts) ++vms_per_host[h];
    // Same hardware as the template's host files: the same guest and the same kubelet.
    EXPECT_EQ(g.kubelet.config, on_files.groups[i].kubelet.config) << g.group;
    EXPECT_TRUE(g.findings.empty()) << g.group;
  }
  // The accelerator groups went to their own hardware.
  for (const std::string& h : r.plan.groups[0].fleet_hosts) EXPECT_EQ(h.rfind("hgx-", 0), 0u) << h;
  for (const std::string& h : r.plan.groups[1].fleet_hosts) EXPECT_EQ(h.rfind("mi300x-", 0), 0u) << h;
  for (const std::string& h : r.plan.groups[2].fleet_hosts) EXPECT_EQ(h.rfind("gaudi-", 0), 0u) << h;
  EXPECT_TRUE(store_->ListClaims().empty());
}

TEST_F(FleetPlanTest, ClaimsEveryVmOnce) {
  AddExampleFleet();
  const ClusterTemplate t = LoadClusterTemplate(kExample);
  FleetPlanOptions o;
  o.claim = true;
  const FleetPlanResult r = PlanClusterOnFleet(t, *store_, o);
  ASSERT_TRUE(r.placed());
  size_t vms = 0;
  for (size_t i = 0; i < r.plan.groups.size(); ++i) {
    const GroupPlan& g = r.plan.groups[i];
    ASSERT_EQ(g.claim_ids.size(), g.fleet_hosts.size());
    vms += g.claim_ids.size();
    for (size_t k = 0; k < g.claim_ids.size(); ++k) {
      const std::optional<fleet::Claim> c = store_->GetClaim(g.claim_ids[k]);
      ASSERT_TRUE(c.has_value());
      EXPECT_EQ(c->host, g.fleet_hosts[k]);
      EXPECT_EQ(c->flavor, t.groups[i].flavor_name);
    }
  }
  EXPECT_EQ(vms, 4u + 6u + 2u + 3u);
  EXPECT_EQ(store_->ListClaims().size(), vms);
}

TEST_F(FleetPlanTest, AGroupThatDoesNotFitLeavesNoClaims) {
  AddExampleFleet(/*gaudi_hosts=*/1);  // gaudi-train wants 2 VMs on distinct hosts
  const ClusterTemplate t = LoadClusterTemplate(kExample);
  for (bool claim : {false, true}) {
    FleetPlanOptions o;
    o.claim = claim;
    const FleetPlanResult r = PlanClusterOnFleet(t, *store_, o);
    ASSERT_FALSE(r.placed());
    ASSERT_EQ(r.unplaced.size(), 1u);
    EXPECT_EQ(r.unplaced[0].group, "gaudi-train");
    EXPECT_EQ(r.unplaced[0].wanted, 2);
    EXPECT_EQ(r.unplaced[0].fitted, 1);
    EXPECT_FALSE(r.unplaced[0].why.empty());
    // The earlier groups' claims were given back.
    EXPECT_TRUE(store_->ListClaims().empty()) << "claim=" << claim;
  }
}

TEST_F(FleetPlanTest, LaterGroupsSeeWhatEarlierGroupsTook) {
  // Two H100 hosts hold two gpu-4-2cell VMs each. Groups a and b want 2 each on distinct hosts:
  // that fits only if b sees a's VMs (and then takes the second half of each host).
  AddHosts("hgx", "hgx-h100.json", 2);
  const std::string text = R"(apiVersion: accel.cluster/v1
kind: ClusterTemplate
metadata: {name: two}
spec:
  kubernetesVersion: v1.33.2
  flavors: [../flavors/]
  aliases: ../flavors/aliases.json
  nodeGroups:
  - {name: a, flavor: gpu-4-2cell, count: 2, vendor: nvidia}
  - {name: b, flavor: gpu-4-2cell, count: 2, vendor: nvidia}
  - {name: c, flavor: gpu-4-2cell, count: 1, vendor: nvidia}
)";
  const ClusterTemplate t = ParseClusterTemplateText(text, "two.yaml", kSource + "/examples/cluster");
  for (bool claim : {false, true}) {
    FleetPlanOptions o;
    o.claim = claim;
    const FleetPlanResult r = PlanClusterOnFleet(t, *store_, o);
    // a and b fill both hosts; c finds no GPUs left, decided or claimed alike.
    ASSERT_FALSE(r.placed()) << "claim=" << claim;
    EXPECT_EQ(r.unplaced[0].group, "c");
    EXPECT_TRUE(store_->ListClaims().empty());
  }
  // Without c, both fit, and every host holds one VM of a and one of b.
  const ClusterTemplate ab =
      ParseClusterTemplateText(text.substr(0, text.find("  - {name: c")), "two.yaml", kSource + "/examples/cluster");
  const FleetPlanResult r = PlanClusterOnFleet(ab, *store_, {});
  ASSERT_TRUE(r.placed());
  std::set<std::string> a(r.plan.groups[0].fleet_hosts.begin(), r.plan.groups[0].fleet_hosts.end());
  std::set<std::string> b(r.plan.groups[1].fleet_hosts.begin(), r.plan.groups[1].fleet_hosts.end());
  EXPECT_EQ(a, (std::set<std::string>{"hgx-1", "hgx-2"}));
  EXPECT_EQ(b, a);
}

TEST_F(FleetPlanTest, AnEmptyFleetIsBadInput) {
  const ClusterTemplate t = LoadClusterTemplate(kExample);
  EXPECT_THROW(PlanClusterOnFleet(t, *store_, {}), InputError);
}

}  // namespace
}  // namespace accel::cluster
