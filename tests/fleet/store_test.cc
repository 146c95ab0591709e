// The fleet store on SQLite (temporary directories): inventory, shared topologies, ClaimBatch's
// generation and unit guards, all-or-nothing batches, ClaimDecision's fallback to ranked
// alternates, Release, Audit, the version-1 migration, and the parsers of what operators type
// (labels, --where terms, policy files, store URLs). PostgreSQL: store_postgres_test.cc.
#include "fleet/fleet_store.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "common/error.h"
#include "fleet/claimer.h"
#include "fleet/fleet_test_util.h"
#include "fleet/fleet_view.h"
#include "fleet/host_policy_file.h"
#include "fleet/labels.h"
#include "fleet/placing.h"
#include "fleet/scheduler.h"
#include "fleet/store_url.h"
#include "placement/placement_json.h"
#include "topology/host_json.h"

namespace accel::fleet {
namespace store_test {

namespace fs = std::filesystem;
using testing::FlavorShape;
using testing::RequestOf;
using testing::SourcePath;

topology::HostTopology Fixture(const std::string& name) {
  return topology::LoadTopology(SourcePath("fixtures/hosts/" + name + ".json"));
}

HostSpec Spec(const std::string& name, const std::string& fixture, Labels labels = {}) {
  HostSpec s;
  s.name = name;
  s.topology = Fixture(fixture);
  s.set_labels = std::move(labels);
  return s;
}

FlavorShape OneGpu(const std::string& alias = "h100") {
  FlavorShape s;
  s.alias = alias;
  s.gpus = 1;
  s.vcpus_per_cell = 4;
  s.gib_per_cell = 16;
  return s;
}

int64_t QueryInt(FleetStore& store, const std::string& sql, const std::vector<SqlValue>& params = {}) {
  SqlResult r = store.connection().Exec(sql, params);
  return std::stoll(r.rows.at(0).at(0).value_or("0"));
}

void Sqlite(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string message = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << sql << ": " << message;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

class FleetStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = fs::path(::testing::TempDir()) / "fleet-store-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/fleet.db";
    url_ = "sqlite:" + path_;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The engine's placement of `shape` on `host` over `usage` (nullopt when it does not fit).
  std::optional<placement::Placement> EnginePlacement(FleetStore& store, const std::string& host,
                                                      const placement::HostUsage& usage, const FlavorShape& shape) {
    const HostRecord record = *store.GetHost(host);
    placement::PlaceResult r = placement::Place(*store.Topology(record.topology_id), usage, record.policy, RequestOf(shape));
    if (!r.fits()) return std::nullopt;
    r.placement->host = host;
    return r.placement;
  }

  // Claims `shape` on `host` as `accel place --claim` does; returns the claim id ("" if none).
  std::string ClaimWithEngine(FleetStore& store, const std::string& host, const FlavorShape& shape = OneGpu()) {
    ClaimResult r = store.ClaimOnHost(host, [&](const placement::HostUsage& usage) {
      return EnginePlacement(store, host, usage, shape);
    });
    return r.claimed() ? r.claim->id : "";
  }

  std::string dir_, path_, url_;
};

// --- Inventory -------------------------------------------------------------------------

TEST_F(FleetStoreTest, HostsAreAddedListedUpdatedAndRemoved) {
  {
    auto store = FleetStore::Open(url_);
    HostRecord added = store->AddHost(Spec("gpu-002", "hgx-h100", {{"az", "a"}, {"gpu", "h100"}}));
    EXPECT_EQ(added.name, "gpu-002");
    EXPECT_EQ(added.generation, 0);
    EXPECT_EQ(added.state, HostAdminState::kEnabled);
    EXPECT_EQ(added.topology_id, TopologyId(Fixture("hgx-h100")));
    EXPECT_FALSE(added.heartbeat_at.has_value());
    EXPECT_FALSE(added.updated_at.empty());
    HostSpec dev = Spec("gpu-001", "devbox");
    dev.state = HostAdminState::kMaintenance;
    placement::HostPolicy policy;
    policy.cpu_dedicated_set = CpuSet{4, 5, 6, 7};
    policy.reserved_host_memory_mib_per_node = 2048;
    dev.policy = policy;
    store->AddHost(dev);

    std::vector<HostRecord> hosts = store->ListHosts();
    ASSERT_EQ(hosts.size(), 2u);
    EXPECT_EQ(hosts[0].name, "gpu-001");  // by name
    EXPECT_EQ(hosts[0].state, HostAdminState::kMaintenance);
    EXPECT_EQ(HostPolicyToJson(hosts[0].policy), HostPolicyToJson(policy));
    EXPECT_EQ(hosts[1].labels, (Labels{{"az", "a"}, {"gpu", "h100"}}));
    // The hardware is stored once, without the host's name.
    auto hw = store->Topology(hosts[1].topology_id);
    EXPECT_EQ(hw->hostname, kSharedHostname);
    EXPECT_EQ(hw->numa_nodes.size(), 2u);
    EXPECT_THROW(store->Topology("sha256:nope"), InputError);
  }
  auto store = FleetStore::Open(url_);  // persisted
  HostSpec change;
  change.name = "gpu-002";
  change.set_labels = {{"gpu", "h100-sxm"}, {"rack", "r7"}};
  change.remove_labels = {"az"};
  change.state = HostAdminState::kDisabled;
  HostRecord updated = store->UpdateHost(change);
  EXPECT_EQ(updated.generation, 1);
  EXPECT_EQ(updated.labels, (Labels{{"gpu", "h100-sxm"}, {"rack", "r7"}}));
  EXPECT_EQ(updated.state, HostAdminState::kDisabled);
  EXPECT_EQ(updated.topology_id, TopologyId(Fixture("hgx-h100")));  // kept
  EXPECT_EQ(store->GetHost("gpu-002")->labels, updated.labels);

  HostSpec missing;
  missing.name = "gpu-404";
  try {
    store->UpdateHost(missing);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--name");
    EXPECT_NE(e.problem().find("gpu-404"), std::string::npos) << e.what();
  }

  EXPECT_TRUE(store->RemoveHost("gpu-001", false));
  EXPECT_FALSE(store->GetHost("gpu-001").has_value());
  EXPECT_FALSE(store->RemoveHost("gpu-001", false));
  ASSERT_EQ(store->HostVersions().size(), 1u);
  EXPECT_EQ(store->HostVersions()[0].name, "gpu-002");
  EXPECT_EQ(store->HostVersions()[0].generation, 1);
}

TEST_F(FleetStoreTest, AddingAHostTwiceIsRefusedAndWritesNothing) {
  auto store = FleetStore::Open(url_);
  store->AddHost(Spec("gpu-1", "hgx-h100", {{"az", "a"}}));
  // Same name, other hardware and labels: refused before anything of it is stored.
  try {
    store->AddHost(Spec("gpu-1", "devbox", {{"az", "b"}}));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--name");
    EXPECT_NE(e.problem().find("already in the fleet"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("accel fleet host update"), std::string::npos) << e.what();
  }
  const HostRecord kept = *store->GetHost("gpu-1");
  EXPECT_EQ(kept.labels, (Labels{{"az", "a"}}));
  EXPECT_EQ(kept.topology_id, TopologyId(Fixture("hgx-h100")));
  EXPECT_EQ(kept.generation, 0);
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM topologies"), 1) << "the refused host's hardware was stored";
  EXPECT_EQ(store->ListHosts().size(), 1u);

  HostSpec no_topology;
  no_topology.name = "gpu-2";
  EXPECT_THROW(store->AddHost(no_topology), InputError);
  EXPECT_FALSE(store->GetHost("gpu-2").has_value());
}

// A write a constraint refuses is TryExec's answer (`refused`), for the statements that expect
// one; Exec, for every other statement, reports it as a SystemError. Nothing else is a refusal.
TEST_F(FleetStoreTest, AConstraintRefusalIsTryExecsAnswerAndExecsSystemError) {
  auto store = FleetStore::Open(url_);
  store->AddHost(Spec("gpu-1", "hgx-h100"));
  SqlConnection& db = store->connection();
  const std::string insert = "INSERT INTO claim_units(host, unit, claim_id) VALUES ('gpu-1', 'cpu:0', $1)";
  SqlResult first = db.TryExec(insert, {"c-000000000001"});
  EXPECT_FALSE(first.refused.has_value());
  EXPECT_EQ(first.affected, 1);
  SqlResult again = db.TryExec(insert, {"c-000000000002"});  // PRIMARY KEY (host, unit)
  ASSERT_TRUE(again.refused.has_value());
  EXPECT_NE(again.refused->find("UNIQUE constraint failed"), std::string::npos) << *again.refused;
  EXPECT_EQ(again.affected, 0);
  EXPECT_TRUE(again.rows.empty());
  // CHECK (state IN (...)): refused, and the row is as it was.
  EXPECT_TRUE(db.TryExec("UPDATE hosts SET state = 'gone' WHERE name = 'gpu-1'").refused.has_value());
  EXPECT_EQ(store->GetHost("gpu-1")->state, HostAdminState::kEnabled);
  try {
    db.Exec(insert, {"c-000000000003"});
    FAIL() << "expected SystemError";
  } catch (const SystemError& e) {
    EXPECT_EQ(e.object(), store->url());
    EXPECT_NE(e.reason().find("UNIQUE constraint failed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(db.TryExec("SELECT nothing FROM no_such_table"), InputError);  // a failure, not a refusal
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM claim_units"), 1);
}

TEST_F(FleetStoreTest, RemovingAHostWithClaimsNeedsForce) {
  auto store = FleetStore::Open(url_);
  store->AddHost(Spec("gpu-1", "hgx-h100"));
  store->AddHost(Spec("gpu-2", "hgx-h100"));
  const std::string id = ClaimWithEngine(*store, "gpu-1");
  ASSERT_FALSE(id.empty());
  ASSERT_FALSE(ClaimWithEngine(*store, "gpu-2").empty());
  try {
    store->RemoveHost("gpu-1", false);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.problem().find("1 live claim"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("--force"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(store->GetHost("gpu-1").has_value());
  EXPECT_TRUE(store->GetClaim(id).has_value());

  EXPECT_TRUE(store->RemoveHost("gpu-1", true));
  EXPECT_FALSE(store->GetHost("gpu-1").has_value());
  EXPECT_FALSE(store->GetClaim(id).has_value());
  EXPECT_EQ(store->ListClaims().size(), 1u);  // gpu-2's stays
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM claim_units WHERE host = 'gpu-1'"), 0);
  EXPECT_EQ(store->Audit(), std::vector<std::string>{});
}

TEST_F(FleetStoreTest, HostsOfOneSkuShareOneTopologyRow) {
  auto store = FleetStore::Open(url_);
  topology::HostTopology renamed = Fixture("hgx-h100");
  renamed.hostname = "some-other-name";
  renamed.source = "live";
  HostSpec b;
  b.name = "gpu-b";
  b.topology = renamed;
  store->AddHost(Spec("gpu-a", "hgx-h100"));
  store->AddHost(b);
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM topologies"), 1);
  EXPECT_EQ(store->GetHost("gpu-a")->topology_id, store->GetHost("gpu-b")->topology_id);
  store->AddHost(Spec("gpu-c", "hgx-h200"));
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM topologies"), 2);
  EXPECT_NE(store->GetHost("gpu-a")->topology_id, store->GetHost("gpu-c")->topology_id);
  // Stored anonymized: no host's name in the shared row.
  SqlResult bodies = store->connection().Exec("SELECT body FROM topologies");
  for (const SqlRow& row : bodies.rows) {
    EXPECT_EQ(row[0]->find("some-other-name"), std::string::npos);
    EXPECT_NE(row[0]->find(kSharedHostname), std::string::npos);
  }
  // One HostTopology object in memory for the two hosts of one SKU.
  const FleetSnapshot snap = store->Snapshot();
  EXPECT_EQ(snap.topologies.size(), 2u);
  const FleetView view = FleetView::FromSnapshot(snap);
  EXPECT_EQ(view.Find("gpu-a")->hardware.get(), view.Find("gpu-b")->hardware.get());
}

TEST_F(FleetStoreTest, AgentUpsertKeepsTheOperatorsStateAndMergesLabels) {
  auto store = FleetStore::Open(url_);
  HostSpec agent = Spec("gpu-1", "hgx-h100", {{"gpu", "h100"}});
  agent.stale_after_s = 60;
  HostRecord first = store->UpsertFromAgent(agent);
  EXPECT_TRUE(first.heartbeat_at.has_value());
  EXPECT_EQ(first.stale_after_s, 60);
  HostSpec disable;
  disable.name = "gpu-1";
  disable.state = HostAdminState::kDisabled;
  store->UpdateHost(disable);
  HostSpec again = Spec("gpu-1", "hgx-h100", {{"az", "b"}});
  HostRecord second = store->UpsertFromAgent(again);
  EXPECT_EQ(second.state, HostAdminState::kDisabled);
  EXPECT_EQ(second.labels, (Labels{{"az", "b"}, {"gpu", "h100"}}));
  EXPECT_TRUE(store->Heartbeat("gpu-1"));
  EXPECT_FALSE(store->Heartbeat("gpu-404"));
  EXPECT_FALSE(IsStale(second, *second.heartbeat_at + 60));
  EXPECT_TRUE(IsStale(second, *second.heartbeat_at + 61));
}

// A host's hardware may change under its claims only while every claim still holds on it.
TEST_F(FleetStoreTest, TopologyChangeThatDropsAClaimedDeviceIsRefused) {
  auto store = FleetStore::Open(url_);
  store->AddHost(Spec("gpu-1", "hgx-h100"));
  const std::string id = ClaimWithEngine(*store, "gpu-1");
  ASSERT_FALSE(id.empty());
  const std::string device = store->GetClaim(id)->placement.devices.at(0).address;
  topology::HostTopology lacking = Fixture("hgx-h100");
  lacking.pci.erase(std::remove_if(lacking.pci.begin(), lacking.pci.end(),
                                   [&](const topology::PciDevice& d) { return d.address == device; }),
                    lacking.pci.end());
  HostSpec change;
  change.name = "gpu-1";
  change.topology = lacking;
  const int64_t generation = store->GetHost("gpu-1")->generation;
  try {
    store->UpdateHost(change);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.problem().find(id), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find(device), std::string::npos) << e.what();
  }
  EXPECT_EQ(store->GetHost("gpu-1")->generation, generation);
  EXPECT_EQ(store->GetHost("gpu-1")->topology_id, TopologyId(Fixture("hgx-h100")));
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM topologies"), 1);
}

// Was a bug, fixed (issue 13): fleet_store.h says UpdateHost refuses a new topology
// "unless every claim still validates against the new hardware", but CheckClaimsFit
// (src/fleet/fleet_store.cc) only checks that each claimed CPU and PCI device exists: a claim
// holding 1 GiB pages on a node whose new hardware has none is accepted, and the host's usage
// then exceeds its pools (Audit reports it only afterwards). Fix: in CheckClaimsFit, also apply
// every claim of the host (UsageOf) and, per node of the usage, check the node exists on `hw` and
// pages_used <= the new pool's total for each size above 4 KiB (the same test Audit makes).
TEST_F(FleetStoreTest, TopologyChangeThatDropsClaimedPagesIsRefused) {
  auto store = FleetStore::Open(url_);
  store->AddHost(Spec("gpu-1", "hgx-h100"));
  FlavorShape paged = OneGpu();
  paged.pages_1g = true;
  paged.gib_per_cell = 64;
  const std::string id = ClaimWithEngine(*store, "gpu-1", paged);
  ASSERT_FALSE(id.empty());
  const placement::CellPlacement cell = store->GetClaim(id)->placement.cells.at(0);
  ASSERT_EQ(cell.page_size_kib, 1048576u);
  topology::HostTopology fewer = Fixture("hgx-h100");
  for (topology::NumaNode& n : fewer.numa_nodes)
    if (n.id == cell.host_node)
      for (topology::HugepagePool& pool : n.pages)
        if (pool.size_kib == 1048576) pool.total = pool.free = 8;  // the claim holds 64
  HostSpec change;
  change.name = "gpu-1";
  change.topology = fewer;
  EXPECT_THROW(store->UpdateHost(change), InputError);
  EXPECT_EQ(store->Audit(), std::vector<std::string>{});
}

// Was a bug, fixed (issue 13): host_record.h says a disabled host (or one in
// maintenance) "keeps its claims, takes no new placements", and ClaimBatch refuses it, but
// FleetStore::ClaimOnHost — what `accel place --claim --store URL` uses — claims on it anyway
// (`accel fleet host add ... --state disabled` then `accel place --topology ... --claim` stores a
// claim). Fix: in FleetStore::ClaimOnHost (src/fleet/fleet_store.cc), make the generation bump
// `UPDATE hosts SET generation = generation + 1 WHERE name = $1` report the state (e.g. a
// following `SELECT state FROM hosts WHERE name = $1`) and, for a host in the inventory that is
// not enabled, return a ClaimResult with refused = "host NAME is disabled" before calling place.
TEST_F(FleetStoreTest, ClaimOnHostRefusesADisabledHost) {
  auto store = FleetStore::Open(url_);
  HostSpec spec = Spec("gpu-1", "hgx-h100");
  spec.state = HostAdminState::kDisabled;
  store->AddHost(spec);
  ClaimResult r = store->ClaimOnHost("gpu-1", [&](const placement::HostUsage& usage) {
    return EnginePlacement(*store, "gpu-1", usage, OneGpu());
  });
  EXPECT_FALSE(r.claimed()) << "claimed " << r.claim->id << " on a disabled host";
  EXPECT_NE(r.refused.find("disabled"), std::string::npos) << r.refused;
  EXPECT_TRUE(store->ListClaims().empty());
}

// --- ClaimBatch ------------------------------------------------------------------------

TEST_F(FleetStoreTest, BatchRefusesAMovedGenerationADisabledHostAndAnUnknownHost) {
  auto store = FleetStore::Open(url_);
  store->AddHost(Spec("gpu-1", "hgx-h100"));
  const std::optional<placement::Placement> p = EnginePlacement(*store, "gpu-1", {}, OneGpu());
  ASSERT_TRUE(p);
  {
    ClaimBatch batch(*store);
    ClaimResult moved = batch.TryClaim("gpu-1", 7, *p);
    EXPECT_FALSE(moved.claimed());
    EXPECT_NE(moved.refused.find("gpu-1"), std::string::npos) << moved.refused;
    EXPECT_NE(moved.refused.find("generation"), std::string::npos) << moved.refused;
    ClaimResult unknown = batch.TryClaim("gpu-404", 0, *p);
    EXPECT_FALSE(unknown.claimed());
    EXPECT_NE(unknown.refused.find("gpu-404"), std::string::npos) << unknown.refused;
    ClaimResult made = batch.TryClaim("gpu-1", 0, *p);
    EXPECT_TRUE(made.claimed()) << made.refused;
    EXPECT_EQ(made.refused, "");
    batch.Commit();
  }
  EXPECT_EQ(store->GetHost("gpu-1")->generation, 1);
  ASSERT_EQ(store->ListClaims().size(), 1u);
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM claim_units"), static_cast<int64_t>(UnitsOf(*p).size()));

  HostSpec disable;
  disable.name = "gpu-1";
  disable.state = HostAdminState::kDisabled;
  EXPECT_EQ(store->UpdateHost(disable).generation, 2);
  placement::HostUsage usage = store->UsageOf("gpu-1");
  const std::optional<placement::Placement> q = EnginePlacement(*store, "gpu-1", usage, OneGpu());
  ASSERT_TRUE(q);
  ClaimBatch batch(*store);
  ClaimResult disabled = batch.TryClaim("gpu-1", 2, *q);
  EXPECT_FALSE(disabled.claimed());
  EXPECT_NE(disabled.refused.find("disabled"), std::string::npos) << disabled.refused;
}

TEST_F(FleetStoreTest, BatchRefusesATakenUnitAndGoesOn) {
  auto store = FleetStore::Open(url_);
  store->AddHost(Spec("gpu-1", "hgx-h100"));
  const std::string first = ClaimWithEngine(*store, "gpu-1");
  ASSERT_FALSE(first.empty());
  const int64_t generation = store->GetHost("gpu-1")->generation;
  const placement::Placement held = store->GetClaim(first)->placement;
  ASSERT_FALSE(held.cells.empty());

  // At the right generation, but booking a CPU the first claim holds (and nothing else of it):
  // only the database's unique key on (host, unit) can refuse it.
  placement::Placement overlap = *EnginePlacement(*store, "gpu-1", store->UsageOf("gpu-1"), OneGpu());
  const int taken_cpu = held.cells[0].consumed_cpus.First();
  overlap.cells[0].consumed_cpus.Add(taken_cpu);
  ClaimBatch batch(*store);
  ClaimResult taken = batch.TryClaim("gpu-1", generation, overlap);
  EXPECT_FALSE(taken.claimed());
  EXPECT_NE(taken.refused.find("taken"), std::string::npos) << taken.refused;
  // The refused candidate cost nothing: the generation is as it was and the batch goes on.
  const placement::Placement fine = *EnginePlacement(*store, "gpu-1", store->UsageOf("gpu-1"), OneGpu());
  ClaimResult second = batch.TryClaim("gpu-1", generation, fine);
  EXPECT_TRUE(second.claimed()) << second.refused;
  batch.Commit();
  EXPECT_EQ(store->GetHost("gpu-1")->generation, generation + 1);
  EXPECT_EQ(store->ListClaims().size(), 2u);
  EXPECT_EQ(store->Audit(), std::vector<std::string>{});
}

TEST_F(FleetStoreTest, BatchWithoutCommitLeavesNothing) {
  auto store = FleetStore::Open(url_);
  store->AddHost(Spec("gpu-1", "hgx-h100"));
  store->AddHost(Spec("gpu-2", "hgx-h100"));
  const placement::Placement p = *EnginePlacement(*store, "gpu-1", {}, OneGpu());
  placement::Placement q = p;
  q.host = "gpu-2";
  {
    ClaimBatch batch(*store);
    ClaimResult on1 = batch.TryClaim("gpu-1", 0, p);
    EXPECT_TRUE(on1.claimed()) << on1.refused;
    ClaimResult on2 = batch.TryClaim("gpu-2", 0, q);
    EXPECT_TRUE(on2.claimed()) << on2.refused;
  }  // destroyed uncommitted
  EXPECT_TRUE(store->ListClaims().empty());
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM claim_units"), 0);
  EXPECT_EQ(store->GetHost("gpu-1")->generation, 0);
  EXPECT_EQ(store->GetHost("gpu-2")->generation, 0);
  // And the store is usable afterwards.
  EXPECT_FALSE(ClaimWithEngine(*store, "gpu-1").empty());
}

// --- ClaimDecision ---------------------------------------------------------------------

class ClaimDecisionTest : public FleetStoreTest {
 protected:
  void SetUp() override {
    FleetStoreTest::SetUp();
    store_ = FleetStore::Open(url_);
    for (const char* name : {"gpu-a", "gpu-b", "gpu-c"}) store_->AddHost(Spec(name, "hgx-h100"));
  }
  ScheduleResult Decide(int count, bool different_hosts, int alternates) {
    ScheduleOptions o;
    o.count = count;
    o.different_hosts = different_hosts;
    o.alternates = alternates;
    return Schedule(FleetView::FromSnapshot(store_->Snapshot()), RequestOf(OneGpu()), o);
  }
  std::unique_ptr<FleetStore> store_;
};

TEST_F(ClaimDecisionTest, ClaimsTheChosenHostsWhenNothingChanged) {
  const ScheduleResult d = Decide(3, false, 2);
  ASSERT_TRUE(d.all_placed);
  // Pack: all three on the first host, each placement assuming the earlier ones.
  for (const InstanceDecision& i : d.instances) EXPECT_EQ(i.chosen.host, "gpu-a");
  const ClaimOutcome out = ClaimDecision(*store_, d);
  ASSERT_TRUE(out.committed);
  EXPECT_EQ(out.retries, 0);
  ASSERT_EQ(out.instances.size(), 3u);
  for (const ClaimedInstance& c : out.instances) EXPECT_EQ(c.rank, 0);
  EXPECT_EQ(store_->GetHost("gpu-a")->generation, 3);
  EXPECT_EQ(store_->ListClaims("gpu-a").size(), 3u);
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
}

TEST_F(ClaimDecisionTest, FallsBackToTheNextRankedHostWhenAnotherSchedulerWasFirst) {
  const ScheduleResult d = Decide(1, false, 2);
  ASSERT_TRUE(d.all_placed);
  ASSERT_EQ(d.instances[0].chosen.host, "gpu-a");
  ASSERT_EQ(d.instances[0].alternates.size(), 2u);
  // Another scheduler claims on gpu-a between our Schedule and our claim.
  ASSERT_FALSE(ClaimWithEngine(*store_, "gpu-a").empty());
  const ClaimOutcome out = ClaimDecision(*store_, d);
  ASSERT_TRUE(out.committed);
  EXPECT_EQ(out.retries, 1);
  ASSERT_EQ(out.conflicts.size(), 1u);
  EXPECT_NE(out.conflicts[0].find("gpu-a"), std::string::npos) << out.conflicts[0];
  ASSERT_EQ(out.instances.size(), 1u);
  EXPECT_EQ(out.instances[0].rank, 1);
  EXPECT_EQ(out.instances[0].where.host, "gpu-b");
  EXPECT_EQ(store_->GetClaim(out.instances[0].claim_id)->host, "gpu-b");
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
}

TEST_F(ClaimDecisionTest, SecondInstanceFallsBackWithDifferentHosts) {
  const ScheduleResult d = Decide(2, true, 2);
  ASSERT_TRUE(d.all_placed);
  ASSERT_EQ(d.instances[0].chosen.host, "gpu-a");
  ASSERT_EQ(d.instances[1].chosen.host, "gpu-b");
  ASSERT_FALSE(ClaimWithEngine(*store_, "gpu-b").empty());
  const ClaimOutcome out = ClaimDecision(*store_, d);
  ASSERT_TRUE(out.committed);
  EXPECT_EQ(out.retries, 1);
  ASSERT_EQ(out.instances.size(), 2u);
  EXPECT_EQ(out.instances[0].where.host, "gpu-a");
  EXPECT_EQ(out.instances[1].where.host, "gpu-c");
  EXPECT_EQ(out.instances[1].rank, 1);
  EXPECT_EQ(store_->ListClaims().size(), 3u);
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
}

TEST_F(ClaimDecisionTest, PackedInstancesSurviveTheirHostBeingTaken) {
  // Both instances on gpu-a; another scheduler takes gpu-a first: each instance moves to an
  // alternate whose placement still holds, or nothing is claimed. Never a double booking.
  const ScheduleResult d = Decide(2, false, 2);
  ASSERT_TRUE(d.all_placed);
  ASSERT_EQ(d.instances[1].chosen.host, "gpu-a");
  ASSERT_FALSE(ClaimWithEngine(*store_, "gpu-a").empty());
  const ClaimOutcome out = ClaimDecision(*store_, d);
  EXPECT_GE(out.retries, 2);
  if (out.committed) {
    for (const ClaimedInstance& c : out.instances) EXPECT_NE(c.where.host, "gpu-a");
    EXPECT_EQ(store_->ListClaims().size(), 3u);
  } else {
    EXPECT_EQ(store_->ListClaims().size(), 1u);
  }
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
}

TEST_F(ClaimDecisionTest, NothingIsClaimedWhenAnInstanceRunsOutOfCandidates) {
  const ScheduleResult d = Decide(2, true, 0);
  ASSERT_TRUE(d.all_placed);
  ASSERT_FALSE(ClaimWithEngine(*store_, d.instances[1].chosen.host).empty());
  const int64_t generation_a = store_->GetHost("gpu-a")->generation;
  const ClaimOutcome out = ClaimDecision(*store_, d);
  EXPECT_FALSE(out.committed);
  EXPECT_TRUE(out.instances.empty());
  EXPECT_EQ(out.retries, 1);
  EXPECT_EQ(store_->ListClaims().size(), 1u);  // only the other scheduler's
  EXPECT_EQ(store_->GetHost("gpu-a")->generation, generation_a);  // instance 0's claim rolled back
}

// PlaceInFleet's "no" is one list of causes, whatever stopped it: the scheduler's causes when
// not every instance fits; the one cause "taken by other schedulers" when every round's
// candidates were taken. The JSON's why_not is that list.
TEST_F(ClaimDecisionTest, PlaceOutcomeSaysWhyNotInOneForm) {
  // Every round decides on the same (stale) view: gpu-a, then gpu-b, both taken meanwhile.
  const ScheduleResult stale = Decide(1, false, 1);
  ASSERT_TRUE(stale.all_placed);
  ASSERT_FALSE(ClaimWithEngine(*store_, "gpu-a").empty());
  ASSERT_FALSE(ClaimWithEngine(*store_, "gpu-b").empty());
  const PlaceOutcome lost = PlaceInFleet(store_.get(), [&] { return stale; }, 2);
  EXPECT_FALSE(lost.placed);
  EXPECT_TRUE(lost.lost_race);
  EXPECT_EQ(lost.rounds, 2);
  EXPECT_EQ(lost.retries, 4);
  ASSERT_EQ(lost.why_not.size(), 1u);
  EXPECT_EQ(lost.why_not[0].cause, "taken by other schedulers");
  EXPECT_EQ(lost.why_not[0].hosts, 2);  // gpu-a and gpu-b, once each however many rounds
  EXPECT_EQ(lost.why_not[0].example, lost.conflicts.back());
  const nlohmann::ordered_json lost_json = PlaceOutcomeJson(lost, "one-gpu", 1, true);
  ASSERT_EQ(lost_json["why_not"].size(), 1u) << lost_json.dump(1);
  EXPECT_EQ(lost_json["why_not"][0]["cause"], "taken by other schedulers");
  EXPECT_EQ(lost_json["why_not"][0]["hosts"], 2);

  // More instances on distinct hosts than there are hosts: the scheduler's causes.
  const PlaceOutcome no_fit = PlaceInFleet(nullptr, [&] { return Decide(4, true, 0); });
  EXPECT_FALSE(no_fit.placed);
  EXPECT_FALSE(no_fit.lost_race);
  EXPECT_EQ(no_fit.rounds, 1);
  ASSERT_FALSE(no_fit.why_not.empty());
  ASSERT_EQ(no_fit.why_not.size(), no_fit.decision.why_not.size());
  for (size_t i = 0; i < no_fit.why_not.size(); ++i) {
    EXPECT_EQ(no_fit.why_not[i].cause, no_fit.decision.why_not[i].cause);
    EXPECT_EQ(no_fit.why_not[i].hosts, no_fit.decision.why_not[i].hosts);
  }
  EXPECT_EQ(PlaceOutcomeJson(no_fit, "one-gpu", 4, false)["why_not"].size(), no_fit.why_not.size());

  const PlaceOutcome placed = PlaceInFleet(store_.get(), [&] { return Decide(1, false, 1); });
  EXPECT_TRUE(placed.placed);
  EXPECT_TRUE(placed.why_not.empty());
  EXPECT_FALSE(PlaceOutcomeJson(placed, "one-gpu", 1, true).contains("why_not"));
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
}

// --- Release and Audit -----------------------------------------------------------------

TEST_F(FleetStoreTest, ReleaseDeletesTheUnitsAndBumpsTheGeneration) {
  auto store = FleetStore::Open(url_);
  store->AddHost(Spec("gpu-1", "hgx-h100"));
  const std::string id = ClaimWithEngine(*store, "gpu-1");
  ASSERT_FALSE(id.empty());
  const int64_t before = store->GetHost("gpu-1")->generation;
  EXPECT_GT(QueryInt(*store, "SELECT count(*) FROM claim_units WHERE claim_id = $1", {id}), 0);
  EXPECT_TRUE(store->Release(id));
  EXPECT_EQ(store->GetHost("gpu-1")->generation, before + 1);
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM claim_units"), 0);
  EXPECT_FALSE(store->Release(id));
  EXPECT_EQ(store->GetHost("gpu-1")->generation, before + 1);
}

TEST_F(FleetStoreTest, AuditIsCleanAfterRandomClaimsAndReleasesAndFindsCorruption) {
  auto store = FleetStore::Open(url_);
  for (const char* name : {"h100-1", "h100-2"}) store->AddHost(Spec(name, "hgx-h100"));
  store->AddHost(Spec("mi-1", "epyc-nps4-mi300x"));
  std::mt19937_64 rng(2024);
  std::vector<std::string> live;
  int claimed = 0, released = 0;
  for (int op = 0; op < 160; ++op) {
    if (!live.empty() && testing::Chance(rng, 35)) {
      const size_t k = static_cast<size_t>(testing::Uniform(rng, 0, static_cast<int>(live.size()) - 1));
      ASSERT_TRUE(store->Release(live[k]));
      live.erase(live.begin() + static_cast<long>(k));
      ++released;
    } else {
      static const char* const kHosts[] = {"h100-1", "h100-2", "mi-1"};
      const std::string host = kHosts[testing::Uniform(rng, 0, 2)];
      const testing::Sku& sku = testing::SkuNamed(host == "mi-1" ? "epyc-nps4-mi300x" : "hgx-h100");
      const std::string id = ClaimWithEngine(*store, host, testing::RandomFillerShape(rng, sku));
      if (!id.empty()) {
        live.push_back(id);
        ++claimed;
      }
    }
    if (op % 20 == 19) {
      ASSERT_EQ(store->Audit(), std::vector<std::string>{}) << "after op " << op;
    }
  }
  EXPECT_GT(claimed, 50);
  EXPECT_GT(released, 20);
  EXPECT_EQ(store->ListClaims().size(), live.size());
  store.reset();

  // A unit row moved to a CPU no claim holds.
  Sqlite(path_, "UPDATE claim_units SET unit = 'cpu:100000' WHERE rowid = (SELECT min(rowid) FROM claim_units)");
  store = FleetStore::Open(url_);
  std::vector<std::string> problems = store->Audit();
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems[0].find("cpu:100000"), std::string::npos) << problems[0];
  store.reset();

  // A unit row missing.
  Sqlite(path_, "DELETE FROM claim_units WHERE unit = 'cpu:100000'");
  store = FleetStore::Open(url_);
  problems = store->Audit();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("rows in claim_units"), std::string::npos) << problems[0];
  store.reset();

  // A claim row written past the unit guard that double-books another claim's units.
  const fleet::Claim victim = [&] {
    auto s = FleetStore::Open(url_);
    std::vector<Claim> all = s->ListClaims();
    auto it = std::find_if(all.rbegin(), all.rend(), [](const Claim& c) { return !UnitsOf(c.placement).empty(); });
    EXPECT_NE(it, all.rend());
    return *it;
  }();
  Sqlite(path_, "INSERT INTO claims(id, host, flavor, created_at, placement) VALUES ('c-ffffffffffff', " +
                    Quote(victim.host) + ", 'evil', '2099-01-01T00:00:00Z', " +
                    Quote(placement::WritePlacementJson(victim.placement)) + ")");
  store = FleetStore::Open(url_);
  problems = store->Audit();
  // Which of the two is named depends on which the audit applies first; one of them must be.
  bool named = false;
  for (const std::string& line : problems)
    named |= line.find("double-books") != std::string::npos &&
             (line.find("c-ffffffffffff") != std::string::npos || line.find(victim.id) != std::string::npos);
  EXPECT_TRUE(named) << ::testing::PrintToString(problems);
}

// --- Migration and schema versions -----------------------------------------------------

// A store as accel's first claim store wrote it: the claims table, user_version 1.
void WriteVersion1Store(const std::string& path, const std::vector<Claim>& claims) {
  std::string sql =
      "CREATE TABLE claims(id TEXT PRIMARY KEY, host TEXT NOT NULL, flavor TEXT NOT NULL, "
      "created_at TEXT NOT NULL, placement TEXT NOT NULL);"
      "CREATE INDEX claims_by_host ON claims(host);"
      "PRAGMA user_version = 1;";
  for (const Claim& c : claims)
    sql += "INSERT INTO claims VALUES (" + Quote(c.id) + ", " + Quote(c.host) + ", " + Quote(c.flavor) + ", " +
           Quote(c.created_at) + ", " + Quote(placement::WritePlacementJson(c.placement)) + ");";
  Sqlite(path, sql);
}

std::vector<Claim> TwoGpuClaimsOn(const std::string& host, bool overlapping) {
  const topology::HostTopology hw = Fixture("hgx-h100");
  placement::HostUsage usage;
  std::vector<Claim> claims;
  for (int i = 0; i < 2; ++i) {
    placement::PlaceResult r = placement::Place(hw, usage, {}, RequestOf(OneGpu()));
    EXPECT_TRUE(r.fits());
    r.placement->host = host;
    if (!overlapping) usage.Apply(*r.placement);
    claims.push_back({testing::TestClaimId(i + 1), host, r.placement->flavor, "2024-05-01T12:00:0" + std::to_string(i) + "Z",
                      *r.placement});
  }
  return claims;
}

TEST_F(FleetStoreTest, Version1StoreIsMigratedOnOpenAndItsUnitsGuarded) {
  const std::vector<Claim> claims = TwoGpuClaimsOn("hgx", false);
  WriteVersion1Store(path_, claims);
  {
    auto store = FleetStore::OpenForMigration(url_);
    EXPECT_EQ(store->SchemaVersion(), 1);
  }
  auto store = FleetStore::Open(url_);
  EXPECT_EQ(store->SchemaVersion(), FleetStore::kSchemaVersion);
  EXPECT_EQ(QueryInt(*store, "PRAGMA user_version"), FleetStore::kSchemaVersion);
  const std::vector<Claim> listed = store->ListClaims();
  ASSERT_EQ(listed.size(), 2u);
  for (size_t i = 0; i < claims.size(); ++i) {
    EXPECT_EQ(listed[i].id, claims[i].id);
    EXPECT_EQ(placement::WritePlacementJson(listed[i].placement), placement::WritePlacementJson(claims[i].placement));
    std::vector<std::string> units;
    for (const SqlRow& row :
         store->connection().Exec("SELECT unit FROM claim_units WHERE claim_id = $1 AND host = 'hgx' ORDER BY unit", {claims[i].id}).rows)
      units.push_back(*row[0]);
    std::vector<std::string> expected = UnitsOf(claims[i].placement);
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(units, expected) << claims[i].id;
  }
  EXPECT_EQ(store->Audit(), std::vector<std::string>{});
  // The migrated claims now guard their units in the database, and claims see their usage.
  EXPECT_TRUE(store->connection()
                  .TryExec("INSERT INTO claim_units(host, unit, claim_id) VALUES ('hgx', $1, $2)",
                           {UnitsOf(claims[0].placement).at(0), claims[1].id})
                  .refused.has_value());
  ClaimResult again = store->ClaimOnHost("hgx", [&](const placement::HostUsage&) {
    return std::optional<placement::Placement>(claims[0].placement);
  });
  EXPECT_FALSE(again.claimed());
  store.reset();
  EXPECT_EQ(FleetStore::Open(url_)->ListClaims().size(), 2u);  // opening again changes nothing
  EXPECT_EQ(FleetStore::OpenForMigration(url_)->Migrate(), FleetStore::kSchemaVersion);
}

TEST_F(FleetStoreTest, Version1StoreThatDoubleBooksIsNotMigrated) {
  const std::vector<Claim> claims = TwoGpuClaimsOn("hgx", true);
  WriteVersion1Store(path_, claims);
  try {
    FleetStore::Open(url_);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find(claims[1].id), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find("also held by another claim"), std::string::npos) << e.what();
  }
  // Left as it was: version 1, no fleet tables.
  auto store = FleetStore::OpenForMigration(url_);
  EXPECT_EQ(store->SchemaVersion(), 1);
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM sqlite_master WHERE name = 'claim_units'"), 0);
}

// A store as schema version 2 left it (hosts without change numbers, no removed_hosts), with one
// host and one claim: what the v3 migration starts from.
void WriteVersion2Store(const std::string& path, const std::string& host_json, const Claim& claim) {
  Sqlite(path,
         "CREATE TABLE claims(id TEXT PRIMARY KEY, host TEXT NOT NULL, flavor TEXT NOT NULL, created_at TEXT NOT NULL,"
         " placement TEXT NOT NULL);"
         "CREATE INDEX claims_by_host ON claims(host);"
         "CREATE TABLE accel_schema(version INTEGER NOT NULL);"
         "CREATE TABLE topologies(id TEXT PRIMARY KEY, body TEXT NOT NULL);"
         "CREATE TABLE hosts(name TEXT PRIMARY KEY, topology_id TEXT NOT NULL REFERENCES topologies(id),"
         " policy TEXT NOT NULL, labels TEXT NOT NULL,"
         " state TEXT NOT NULL CHECK (state IN ('enabled', 'disabled', 'maintenance')),"
         " generation BIGINT NOT NULL DEFAULT 0, heartbeat_at BIGINT, stale_after_s BIGINT NOT NULL DEFAULT 0,"
         " updated_at TEXT NOT NULL);"
         "CREATE TABLE claim_units(host TEXT NOT NULL, unit TEXT NOT NULL,"
         " claim_id TEXT NOT NULL REFERENCES claims(id) ON DELETE CASCADE, PRIMARY KEY (host, unit));"
         "CREATE INDEX claim_units_by_claim ON claim_units(claim_id);"
         "ALTER TABLE claims ADD COLUMN created_us BIGINT NOT NULL DEFAULT 0;"
         "INSERT INTO accel_schema(version) VALUES (2);"
         "INSERT INTO topologies VALUES ('t1', " + Quote(host_json) + ");"
         "INSERT INTO hosts VALUES (" + Quote(claim.host) + ", 't1', '{}', '{}', 'enabled', 1, NULL, 0,"
         " '2024-05-01T12:00:00Z');"
         "INSERT INTO claims VALUES (" + Quote(claim.id) + ", " + Quote(claim.host) + ", " + Quote(claim.flavor) +
         ", " + Quote(claim.created_at) + ", " + Quote(placement::WritePlacementJson(claim.placement)) + ", 1);"
         "PRAGMA user_version = 2;");
  for (const std::string& unit : UnitsOf(claim.placement))
    Sqlite(path, "INSERT INTO claim_units VALUES (" + Quote(claim.host) + ", " + Quote(unit) + ", " + Quote(claim.id) + ")");
}

TEST_F(FleetStoreTest, Version2StoreGetsTheChangeFeedOnOpen) {
  const Claim claim = TwoGpuClaimsOn("hgx", false).at(0);
  WriteVersion2Store(path_, topology::ToJson(Anonymized(Fixture("hgx-h100"))), claim);
  EXPECT_EQ(FleetStore::OpenForMigration(url_)->SchemaVersion(), 2);
  auto store = FleetStore::Open(url_);
  EXPECT_EQ(store->SchemaVersion(), FleetStore::kSchemaVersion);
  EXPECT_EQ(QueryInt(*store, "PRAGMA user_version"), FleetStore::kSchemaVersion);
  // Version 4: claim_units rebuilt without the foreign key and the claim_id index, rows kept.
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM pragma_foreign_key_list('claim_units')"), 0);
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM sqlite_master WHERE name = 'claim_units_by_claim'"), 0);
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM claim_units WHERE claim_id = $1", {claim.id}),
            static_cast<int64_t>(UnitsOf(claim.placement).size()));
  // Old rows carry change number 0: a snapshot's mark covers them, and changes come after it.
  const FleetSnapshot snap = store->Snapshot();
  ASSERT_EQ(snap.hosts.size(), 1u);
  ASSERT_EQ(snap.claims.size(), 1u);
  EXPECT_TRUE(store->ChangedSince(snap.change).hosts.empty());
  EXPECT_EQ(store->ChangedSince(-1).hosts.size(), 1u);
  EXPECT_TRUE(store->Release(claim.id));
  FleetChanges changes = store->ChangedSince(snap.change);
  ASSERT_EQ(changes.hosts.size(), 1u);
  EXPECT_EQ(changes.hosts[0].generation, 2);
  EXPECT_TRUE(changes.claims.at("hgx").empty());
  EXPECT_EQ(store->Audit(), std::vector<std::string>{});
  EXPECT_EQ(QueryInt(*store, "SELECT count(*) FROM claim_units"), 0);  // the release took its units
  EXPECT_EQ(FleetStore::OpenForMigration(url_)->Migrate(), FleetStore::kSchemaVersion);  // again: nothing to do
}

TEST_F(FleetStoreTest, NewerSchemaVersionIsRefused) {
  {
    auto store = FleetStore::Open(url_);
    store->connection().Exec("INSERT INTO accel_schema(version) VALUES ($1)",
                             {std::to_string(FleetStore::kSchemaVersion + 1)});
  }
  try {
    FleetStore::Open(url_);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.problem().find("newer accel"), std::string::npos) << e.what();
    EXPECT_NE(e.where().find(path_), std::string::npos) << e.what();
  }
  EXPECT_THROW(FleetStore::OpenForMigration(url_)->Migrate(), InputError);
}

// --- The change feed -------------------------------------------------------------------

// Applies ChangedSince answers to a map of name -> (generation, heartbeat, claim ids), as a
// scheduler's view would be; compared with a fresh Snapshot after every step.
struct PolledFleet {
  struct Host {
    int64_t generation = 0;
    std::optional<int64_t> heartbeat_at;
    std::vector<std::string> claims;
    bool operator==(const Host& o) const {
      return generation == o.generation && heartbeat_at == o.heartbeat_at && claims == o.claims;
    }
  };
  std::map<std::string, Host> hosts;
  int64_t mark = 0;
  int polls_with_claims = 0;

  static PolledFleet Of(const FleetSnapshot& snap) {
    PolledFleet f;
    f.mark = snap.change;
    for (const HostRecord& h : snap.hosts) f.hosts[h.name] = {h.generation, h.heartbeat_at, {}};
    for (const Claim& c : snap.claims) f.hosts[c.host].claims.push_back(c.id);
    return f;
  }
  void Poll(FleetStore& store) {
    FleetChanges ch = store.ChangedSince(mark, [&](const HostRecord& r) {
      auto it = hosts.find(r.name);
      return it == hosts.end() || it->second.generation != r.generation;
    });
    for (const std::string& name : ch.removed) hosts.erase(name);
    for (const HostRecord& r : ch.hosts) {
      auto c = ch.claims.find(r.name);
      if (c == ch.claims.end()) {
        hosts.at(r.name).heartbeat_at = r.heartbeat_at;  // same generation: the record only
        continue;
      }
      ++polls_with_claims;
      Host h{r.generation, r.heartbeat_at, {}};
      for (const Claim& claim : c->second) h.claims.push_back(claim.id);
      hosts[r.name] = h;
    }
    EXPECT_GE(ch.change, mark);
    mark = ch.change;
  }
};

TEST_F(FleetStoreTest, ChangedSinceFollowsClaimsReleasesHostsHeartbeatsAndRemovals) {
  auto store = FleetStore::Open(url_);
  store->AddHost(Spec("a", "hgx-h100"));
  store->AddHost(Spec("b", "hgx-h100"));
  PolledFleet polled = PolledFleet::Of(store->Snapshot());
  auto expect_current = [&](const std::string& step) {
    polled.Poll(*store);
    EXPECT_EQ(polled.hosts, PolledFleet::Of(store->Snapshot()).hosts) << step;
  };
  EXPECT_TRUE(store->ChangedSince(polled.mark).hosts.empty());
  const std::string c1 = ClaimWithEngine(*store, "a");
  ASSERT_FALSE(c1.empty());
  expect_current("claim on a");
  {
    ClaimBatch batch(*store);
    const HostRecord b = *store->GetHost("b");
    placement::HostUsage none;
    ClaimResult on_b = batch.TryClaim("b", b.generation, *EnginePlacement(*store, "b", none, OneGpu()));
    ASSERT_TRUE(on_b.claimed()) << on_b.refused;
    batch.Commit();
  }
  expect_current("batch claim on b");
  store->Release(c1);
  expect_current("release on a");
  HostSpec label = Spec("b", "hgx-h100", {{"az", "x"}});
  label.topology.reset();
  store->UpdateHost(label);
  expect_current("update b");
  store->AddHost(Spec("c", "hgx-h100"));
  expect_current("add c");
  const int with_claims = polled.polls_with_claims;
  ASSERT_TRUE(store->Heartbeat("c"));
  // A heartbeat moves the change number, not the generation: the row comes back, not its claims.
  FleetChanges hb = store->ChangedSince(polled.mark, [](const HostRecord&) { return false; });
  ASSERT_EQ(hb.hosts.size(), 1u);
  EXPECT_EQ(hb.hosts[0].name, "c");
  EXPECT_TRUE(hb.hosts[0].heartbeat_at.has_value());
  EXPECT_TRUE(hb.claims.empty());
  expect_current("heartbeat c");
  EXPECT_EQ(polled.polls_with_claims, with_claims);
  ASSERT_TRUE(store->RemoveHost("b", true));
  FleetChanges rm = store->ChangedSince(polled.mark);
  EXPECT_EQ(rm.removed, std::vector<std::string>{"b"});
  EXPECT_TRUE(rm.hosts.empty());
  expect_current("remove b with its claim");
  store->AddHost(Spec("b", "hgx-h100"));  // the same name again: a host, no tombstone
  FleetChanges back = store->ChangedSince(-1);
  EXPECT_TRUE(back.removed.empty());
  EXPECT_EQ(back.hosts.size(), 3u);
  expect_current("b added again");
  HostSpec agent = Spec("d", "hgx-h100");
  store->UpsertFromAgent(agent);
  expect_current("agent d joins");
  store->UpsertFromAgent(agent);  // unchanged: heartbeat only
  expect_current("agent d heartbeats through upsert");
  EXPECT_TRUE(store->ChangedSince(polled.mark).hosts.empty());
  EXPECT_TRUE(store->ChangedSince(polled.mark).removed.empty());
}

TEST_F(FleetStoreTest, ChangeFeedStaysCurrentOverRandomWrites) {
  auto store = FleetStore::Open(url_);
  for (const char* n : {"h1", "h2", "h3", "h4"}) store->AddHost(Spec(n, "hgx-h100"));
  PolledFleet polled = PolledFleet::Of(store->Snapshot());
  std::mt19937 rng(7);
  const std::vector<std::string> names = {"h1", "h2", "h3", "h4", "h5"};
  for (int step = 0; step < 120; ++step) {
    const std::string name = names[rng() % names.size()];
    const bool present = store->GetHost(name).has_value();
    switch (rng() % 6) {
      case 0:
      case 1:
        if (present) ClaimWithEngine(*store, name);
        break;
      case 2: {
        std::vector<Claim> claims = store->ListClaims(name);
        if (!claims.empty()) store->Release(claims[rng() % claims.size()].id);
        break;
      }
      case 3:
        if (present) store->Heartbeat(name);
        break;
      case 4:
        if (present) store->RemoveHost(name, true);
        else store->AddHost(Spec(name, "hgx-h100"));
        break;
      default:
        break;
    }
    if (rng() % 3 == 0) {  // poll now and then: several writes between polls
      polled.Poll(*store);
      ASSERT_EQ(polled.hosts, PolledFleet::Of(store->Snapshot()).hosts) << "step " << step;
    }
  }
}

TEST_F(FleetStoreTest, TheFirstClaimOfABatchNeedsNoSavepointAndARefusalStartsAfresh) {
  auto store = FleetStore::Open(url_);
  store->AddHost(Spec("a", "hgx-h100"));
  store->AddHost(Spec("b", "hgx-h100"));
  const std::string held = ClaimWithEngine(*store, "a");
  const Claim taken = *store->GetClaim(held);
  placement::HostUsage none;
  const placement::Placement on_b = *EnginePlacement(*store, "b", none, OneGpu());
  {
    ClaimBatch batch(*store);
    // First claim refused by claim_units: the transaction starts again, nothing is lost.
    ClaimResult first = batch.TryClaim("a", store->GetHost("a")->generation, taken.placement);
    EXPECT_FALSE(first.claimed());
    EXPECT_NE(first.refused.find("unit is taken"), std::string::npos) << first.refused;
    ClaimResult second = batch.TryClaim("b", store->GetHost("b")->generation, on_b);
    EXPECT_TRUE(second.claimed()) << second.refused;
    // Second claim (a savepoint now) refused: the first stays.
    EXPECT_FALSE(batch.TryClaim("a", store->GetHost("a")->generation, taken.placement).claimed());
    batch.Commit();
  }
  EXPECT_EQ(store->ListClaims("b").size(), 1u);
  EXPECT_EQ(store->ListClaims("a").size(), 1u);
  EXPECT_EQ(store->GetHost("a")->generation, 1);  // the refused claims bumped nothing
  EXPECT_EQ(store->Audit(), std::vector<std::string>{});
}

// --- What operators type ---------------------------------------------------------------

template <typename F>
InputError CatchInputError(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected InputError";
  return InputError("", "", "");
}

TEST(FleetLabels, LabelsFollowKubernetesSyntax) {
  EXPECT_EQ(ParseLabel("az=rack-3", "--label"), (std::pair<std::string, std::string>{"az", "rack-3"}));
  EXPECT_EQ(ParseLabel("example.com/gpu=h100", "--label").first, "example.com/gpu");
  EXPECT_EQ(ParseLabel("empty=", "--label").second, "");
  EXPECT_EQ(ParseLabel("a.b_c-d=X.y_z-1", "--label").second, "X.y_z-1");
  for (const std::string& bad : std::vector<std::string>{"noequals", "=value", "-az=a", "az-=a", "az=-a", "a z=b", "az=b c",
                                "Example.com/gpu=x", "ex..com/gpu=x", "/gpu=x", "ex.com/=x",
                                std::string(64, 'k') + "=v", "k=" + std::string(64, 'v'), "az=a=b"}) {
    const InputError e = CatchInputError([&] { ParseLabel(bad, "--label"); });
    EXPECT_EQ(e.where(), "--label") << bad;
    EXPECT_NE(e.hint().find("az=rack-3"), std::string::npos) << bad << ": " << e.what();
  }
  EXPECT_NO_THROW(ParseLabel(std::string(63, 'k') + "=" + std::string(63, 'v'), "--label"));
}

TEST(FleetLabels, WhereTermsParseMatchAndPrint) {
  const Labels h100 = {{"gpu", "h100"}, {"az", "a"}};
  const Labels bare = {};
  struct Case {
    std::string text;
    LabelRequirement::Op op;
    bool on_h100, on_bare;
  };
  for (const Case& c : {Case{"gpu=h100", LabelRequirement::kEquals, true, false},
                        Case{"gpu!=h100", LabelRequirement::kNotEquals, false, true},
                        Case{"gpu!=a100", LabelRequirement::kNotEquals, true, true},
                        Case{"az", LabelRequirement::kExists, true, false},
                        Case{"!az", LabelRequirement::kNotExists, false, true},
                        Case{"az=", LabelRequirement::kEquals, false, false}}) {
    const LabelRequirement r = ParseRequirement(c.text, "--where");
    EXPECT_EQ(r.op, c.op) << c.text;
    EXPECT_EQ(r.ToString(), c.text);
    EXPECT_EQ(r.Matches(h100), c.on_h100) << c.text;
    EXPECT_EQ(r.Matches(bare), c.on_bare) << c.text;
  }
  EXPECT_TRUE(MatchesAll({}, bare));
  EXPECT_FALSE(MatchesAll({ParseRequirement("az", "--where"), ParseRequirement("gpu=a100", "--where")}, h100));
  for (const std::string& bad : std::vector<std::string>{"", "!", "!=x", "=x", "gpu==h100", "gpu=h 100", "!!gpu", "-gpu"}) {
    const InputError e = CatchInputError([&] { ParseRequirement(bad, "--where"); });
    EXPECT_EQ(e.where(), "--where") << "'" << bad << "'";
  }
}

class PolicyFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = fs::path(::testing::TempDir()) / "policy-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir_;
};

TEST_F(PolicyFileTest, NovaOptionNamesAreRead) {
  const std::string path = Write("policy.yaml",
                                 "cpu_dedicated_set: \"2-31,34-63\"\n"
                                 "cpu_shared_set: \"0-1,32-33\"\n"
                                 "cpu_allocation_ratio: 2.5\n"
                                 "reserved_host_memory_mb: 4096\n"
                                 "packing_host_numa_cells_allocation_strategy: false\n");
  const placement::HostPolicy p = LoadHostPolicy(path);
  ASSERT_TRUE(p.cpu_dedicated_set);
  EXPECT_EQ(p.cpu_dedicated_set->ToString(), "2-31,34-63");
  EXPECT_EQ(p.cpu_shared_set->ToString(), "0-1,32-33");
  EXPECT_EQ(p.cpu_allocation_ratio, 2.5);
  EXPECT_EQ(p.reserved_host_memory_mib_per_node, 4096u);
  EXPECT_EQ(p.strategy, placement::Strategy::kSpread);
  // The stored JSON form reads back to the same policy.
  EXPECT_EQ(HostPolicyToJson(HostPolicyFromJson(HostPolicyToJson(p), "x")), HostPolicyToJson(p));
  EXPECT_EQ(HostPolicyToJson(placement::HostPolicy{}), nlohmann::json::object());
  EXPECT_EQ(HostPolicyToJson(LoadHostPolicy(Write("empty.yaml", ""))), nlohmann::json::object());
}

TEST_F(PolicyFileTest, MistakesNameTheFileAndKey) {
  const std::string typo = Write("typo.yaml", "cpu_dedicated_sett: \"2-31\"\n");
  InputError e = CatchInputError([&] { LoadHostPolicy(typo); });
  EXPECT_EQ(e.where(), typo);
  EXPECT_EQ(e.field(), "cpu_dedicated_sett");
  EXPECT_NE(e.hint().find("did you mean cpu_dedicated_set?"), std::string::npos) << e.what();

  e = CatchInputError([&] { LoadHostPolicy(Write("far.yaml", "gpus: 8\n")); });
  EXPECT_EQ(e.field(), "gpus");
  EXPECT_NE(e.hint().find("known: cpu_dedicated_set"), std::string::npos) << e.what();

  struct Bad {
    std::string text, field;
  };
  for (const Bad& b : {Bad{"cpu_dedicated_set: \"2-x\"\n", "cpu_dedicated_set"},
                       Bad{"cpu_shared_set: 3\n", "cpu_shared_set"},
                       Bad{"cpu_allocation_ratio: 0\n", "cpu_allocation_ratio"},
                       Bad{"cpu_allocation_ratio: \"four\"\n", "cpu_allocation_ratio"},
                       Bad{"reserved_host_memory_mb: -1\n", "reserved_host_memory_mb"},
                       Bad{"reserved_host_memory_mb: 1.5\n", "reserved_host_memory_mb"},
                       Bad{"packing_host_numa_cells_allocation_strategy: 3\n",
                           "packing_host_numa_cells_allocation_strategy"}}) {
    const std::string path = Write("bad.yaml", b.text);
    e = CatchInputError([&] { LoadHostPolicy(path); });
    EXPECT_EQ(e.where(), path) << b.text;
    EXPECT_EQ(e.field(), b.field) << b.text << ": " << e.what();
  }
  e = CatchInputError([&] { LoadHostPolicy(Write("list.yaml", "- 1\n- 2\n")); });
  EXPECT_NE(e.problem().find("mapping"), std::string::npos) << e.what();
  EXPECT_THROW(LoadHostPolicy(dir_ + "/missing.yaml"), InputError);
}

TEST(FleetStoreUrl, AcceptsSqliteAndPostgresFormsAndHidesPasswords) {
  StoreUrl u = ParseStoreUrl("sqlite:/var/lib/accel/state.db");
  EXPECT_EQ(u.engine, StoreUrl::kSqlite);
  EXPECT_EQ(u.target, "/var/lib/accel/state.db");
  EXPECT_EQ(ParseStoreUrl("sqlite://relative/x.db").target, "relative/x.db");
  EXPECT_EQ(ParseStoreUrl("state.db").engine, StoreUrl::kSqlite);
  EXPECT_EQ(ParseStoreUrl("dir/fleet.sqlite").target, "dir/fleet.sqlite");
  u = ParseStoreUrl("postgresql://accel:s3cret@db.example/fleet");
  EXPECT_EQ(u.engine, StoreUrl::kPostgres);
  EXPECT_EQ(u.target, "postgresql://accel:s3cret@db.example/fleet");
  EXPECT_EQ(u.display, "postgresql://accel:***@db.example/fleet");
  EXPECT_EQ(ParseStoreUrl("postgres://db/fleet").engine, StoreUrl::kPostgres);
  for (const std::string& bad : std::vector<std::string>{"mysql://db/fleet", "fleet", "sqlite:", "", "http://x.db"}) {
    const InputError e = CatchInputError([&] { ParseStoreUrl(bad, "--store"); });
    EXPECT_EQ(e.where(), "--store") << bad;
    EXPECT_NE(e.hint().find("sqlite:PATH"), std::string::npos) << bad;
  }
  const InputError e = CatchInputError([&] { ParseStoreUrl("mysql://root:pw@db/x"); });
  EXPECT_EQ(std::string(e.what()).find("pw@"), std::string::npos) << "password shown: " << e.what();
}

TEST(FleetHostState, NamesParseAndUnknownIsAnInputError) {
  for (HostAdminState s : {HostAdminState::kEnabled, HostAdminState::kDisabled, HostAdminState::kMaintenance})
    EXPECT_EQ(ParseHostAdminState(HostAdminStateName(s), "--state"), s);
  const InputError e = CatchInputError([] { ParseHostAdminState("drained", "--state"); });
  EXPECT_EQ(e.where(), "--state");
  EXPECT_NE(e.hint().find("maintenance"), std::string::npos);
}

}  // namespace
}  // namespace accel::fleet
