// The fleet store on a real PostgreSQL 15 (a private server per test, tests/support/
// postgres_server.h): the same schema and behaviour as SQLite, migrations, double booking refused
// by the database under concurrent processes, claimers killed with SIGKILL mid-claim, and a
// server restart that fails requests clearly and needs no accel restart.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "fleet/claimer.h"
#include "fleet/fleet_store.h"
#include "fleet/fleet_view.h"
#include "fleet/scheduler.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"
#include "support/claim_units_schema3.h"
#include "support/claim_units_schema4.h"
#include "support/postgres_server.h"
#include "support/shared_fixture.h"
#include "topology/sources.h"

namespace accel::fleet {
namespace store_postgres_test {


const std::string kSource = ACCEL_SOURCE_DIR;

placement::PlacementRequest Request(const std::string& flavor_file) {
  placement::PciAliasTable aliases = placement::LoadPciAliases(kSource + "/examples/flavors/aliases.json");
  placement::Flavor f = placement::LoadFlavors(kSource + "/examples/flavors/" + flavor_file).at(0);
  return placement::BuildRequest(f, aliases, flavor_file);
}

void AddH100Hosts(FleetStore& store, int n) {
  topology::HostTopology hw = topology::LoadTopology(kSource + "/fixtures/hosts/hgx-h100.json");
  for (int i = 0; i < n; ++i) {
    HostSpec spec;
    spec.name = "gpu-" + std::to_string(100 + i);
    spec.topology = hw;
    spec.set_labels = {{"az", i % 2 ? "b" : "a"}};
    store.AddHost(spec);
  }
}

// One claim through the fleet scheduler; true when claimed.
bool PlaceAndClaim(FleetStore& store, const placement::PlacementRequest& req, const std::string& seed,
                   int* retries = nullptr) {
  FleetView view = FleetView::FromSnapshot(store.Snapshot());
  ScheduleOptions o;
  o.tiebreak_seed = seed;
  ScheduleResult d = Schedule(view, req, o);
  if (!d.all_placed) return false;
  ClaimOutcome c = ClaimDecision(store, d);
  if (retries) *retries += c.retries;
  return c.committed;
}

class FleetStorePostgres : public ::testing::Test {
 protected:
  void SetUp() override {
    ACCEL_REQUIRE_POSTGRES();
    pg_ = std::make_unique<test_support::PostgresServer>();
    pg_->CreateDatabase("fleet");
    url_ = pg_->Url("fleet");
  }

  std::unique_ptr<test_support::PostgresServer> pg_;
  std::string url_;
};

TEST_F(FleetStorePostgres, AnEmptyDatabaseNeedsMigrateThenOpens) {
  try {
    FleetStore::Open(url_);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.hint().find("accel fleet store migrate"), std::string::npos) << e.what();
  }
  auto store = FleetStore::OpenForMigration(url_);
  EXPECT_EQ(store->SchemaVersion(), 0);
  EXPECT_EQ(store->Migrate(), 0);
  EXPECT_EQ(store->Migrate(), FleetStore::kSchemaVersion);  // again: nothing to do
  EXPECT_EQ(FleetStore::Open(url_)->SchemaVersion(), FleetStore::kSchemaVersion);
}

TEST_F(FleetStorePostgres, ANewerSchemaIsRefused) {
  FleetStore::OpenForMigration(url_)->Migrate();
  pg_->Query("INSERT INTO accel_schema(version) VALUES (9)", "fleet");
  try {
    FleetStore::Open(url_);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.problem().find("newer accel"), std::string::npos) << e.what();
  }
}

TEST_F(FleetStorePostgres, HostsAndClaimsBehaveAsOnSqlite) {
  FleetStore::OpenForMigration(url_)->Migrate();
  auto store = FleetStore::Open(url_);
  AddH100Hosts(*store, 3);
  EXPECT_THROW(AddH100Hosts(*store, 1), InputError);  // gpu-100 again
  EXPECT_EQ(pg_->Query("SELECT count(*) FROM topologies", "fleet"), "1");  // one SKU, one row
  EXPECT_EQ(store->ListHosts().size(), 3u);

  placement::PlacementRequest req = Request("gpu-4-2cell.yaml");
  ASSERT_TRUE(PlaceAndClaim(*store, req, ""));
  std::vector<Claim> claims = store->ListClaims();
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_TRUE(store->GetHost(claims[0].host)->generation > 0);
  EXPECT_THROW(store->RemoveHost(claims[0].host, false), InputError);

  // The same units again on the same host: refused by the primary key, whatever the generation.
  {
    ClaimBatch batch(*store);
    const int64_t gen = store->GetHost(claims[0].host)->generation;
    ClaimResult taken = batch.TryClaim(claims[0].host, gen, claims[0].placement);
    EXPECT_FALSE(taken.claimed());
    EXPECT_NE(taken.refused.find("unit is taken"), std::string::npos) << taken.refused;
    // A stale generation is refused before any unit is written.
    ClaimResult stale = batch.TryClaim(claims[0].host, gen - 1, claims[0].placement);
    EXPECT_FALSE(stale.claimed());
    EXPECT_NE(stale.refused.find("changed"), std::string::npos) << stale.refused;
  }
  EXPECT_TRUE(store->Release(claims[0].id));
  EXPECT_TRUE(store->ListClaims().empty());
  EXPECT_EQ(pg_->Query("SELECT count(*) FROM claim_units", "fleet"), "0");
  EXPECT_TRUE(store->Audit().empty());
}

// SQLSTATE class 23 and nothing else is a refusal: TryExec returns it, Exec throws SystemError
// for it, and every other error the server sends stays an exception.
TEST_F(FleetStorePostgres, OnlyIntegrityConstraintViolationsAreRefusals) {
  FleetStore::OpenForMigration(url_)->Migrate();
  auto store = FleetStore::Open(url_);
  AddH100Hosts(*store, 1);
  SqlConnection& db = store->connection();
  const std::string insert = "INSERT INTO claim_units(host, unit, claim_id) VALUES ('gpu-100', 'cpu:0', $1)";
  SqlResult first = db.TryExec(insert, {"c-000000000001"});
  EXPECT_FALSE(first.refused.has_value());
  EXPECT_EQ(first.affected, 1);
  SqlResult again = db.TryExec(insert, {"c-000000000002"});  // 23505, the primary key
  ASSERT_TRUE(again.refused.has_value());
  EXPECT_NE(again.refused->find("claim_units_pkey"), std::string::npos) << *again.refused;
  EXPECT_EQ(again.affected, 0);
  EXPECT_TRUE(db.TryExec("UPDATE hosts SET state = 'gone' WHERE name = 'gpu-100'").refused.has_value());  // 23514
  EXPECT_TRUE(db.TryExec("INSERT INTO claim_units(host, unit, claim_id) VALUES ('gpu-100', NULL, 'c-1')")
                  .refused.has_value());  // 23502, NOT NULL
  EXPECT_EQ(store->GetHost("gpu-100")->state, HostAdminState::kEnabled);
  try {
    db.Exec(insert, {"c-000000000003"});
    FAIL() << "expected SystemError";
  } catch (const SystemError& e) {
    EXPECT_EQ(e.object(), store->url());
    EXPECT_NE(e.reason().find("claim_units_pkey"), std::string::npos) << e.what();
  }
  EXPECT_THROW(db.TryExec("SELECT 1 / (count(*) - count(*)) FROM hosts"), SystemError);  // 22012
  EXPECT_THROW(db.TryExec("SELECT nothing FROM no_such_table"), InputError);              // 42P01
  EXPECT_EQ(pg_->Query("SELECT count(*) FROM claim_units", "fleet"), "1");
}

// A one-claim batch (ClaimDecision's for a one-instance request) runs each candidate as one
// autocommitted statement: a refusal leaves nothing and the next candidate works, a success is
// durable before Commit (no transaction is open: the server sees none), and a second claim is a
// programming error.
TEST_F(FleetStorePostgres, OneClaimBatchAutocommitsEachCandidate) {
  FleetStore::OpenForMigration(url_)->Migrate();
  auto store = FleetStore::Open(url_);
  AddH100Hosts(*store, 2);
  placement::PlacementRequest req = Request("gpu-4-2cell.yaml");
  ASSERT_TRUE(PlaceAndClaim(*store, req, ""));
  const Claim first = store->ListClaims().at(0);
  const int64_t gen = store->GetHost(first.host)->generation;
  {
    ClaimBatch batch(*store, /*one_claim=*/true);
    ClaimResult taken = batch.TryClaim(first.host, gen, first.placement);  // its units are taken
    EXPECT_FALSE(taken.claimed());
    EXPECT_NE(taken.refused.find("unit is taken"), std::string::npos) << taken.refused;
    ClaimResult stale = batch.TryClaim(first.host, gen - 1, first.placement);  // stale generation
    EXPECT_FALSE(stale.claimed());
    EXPECT_NE(stale.refused.find("changed"), std::string::npos) << stale.refused;
    EXPECT_EQ(pg_->Query("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'", "fleet"),
              "0");
    // The same placement on the other host (same hardware, nothing claimed there).
    const std::string other = first.host == "gpu-100" ? "gpu-101" : "gpu-100";
    placement::Placement p = first.placement;
    p.host = other;
    ClaimResult made = batch.TryClaim(other, store->GetHost(other)->generation, p);
    ASSERT_TRUE(made.claimed()) << made.refused;
    const std::string id = made.claim->id;
    // Durable already: another connection sees it before Commit.
    EXPECT_EQ(pg_->Query("SELECT count(*) FROM claims WHERE id = '" + id + "'", "fleet"), "1");
    EXPECT_THROW(batch.TryClaim(other, store->GetHost(other)->generation, p), std::logic_error);
    batch.Commit();
  }
  EXPECT_EQ(store->ListClaims().size(), 2u);
  EXPECT_TRUE(store->Audit().empty());
}

TEST_F(FleetStorePostgres, ConcurrentProcessesNeverDoubleBook) {
  FleetStore::OpenForMigration(url_)->Migrate();
  AddH100Hosts(*FleetStore::Open(url_), 3);  // 3 hosts x 8 GPUs: 24 one-GPU instances at most
  constexpr int kClaimers = 8;
  std::vector<pid_t> pids;
  for (int c = 0; c < kClaimers; ++c) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        auto store = FleetStore::Open(url_);
        placement::PlacementRequest req = Request("gpu-1g.yaml");
        // Every claimer with the same seed ranks hosts the same: they race for the same host and
        // must fall back to alternates.
        for (int i = 0; i < 10; ++i) PlaceAndClaim(*store, req, "");
      } catch (const std::exception& e) {
        fprintf(stderr, "claimer: %s\n", e.what());
        code = 1;
      }
      _exit(code);
    }
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto store = FleetStore::Open(url_);
  EXPECT_EQ(store->ListClaims().size(), 24u);  // the fleet is full, nothing booked twice
  std::vector<std::string> problems = store->Audit();
  EXPECT_TRUE(problems.empty()) << problems.front();
}

TEST_F(FleetStorePostgres, ClaimersKilledMidClaimLeaveNoHalfClaim) {
  FleetStore::OpenForMigration(url_)->Migrate();
  AddH100Hosts(*FleetStore::Open(url_), 4);
  std::mt19937 rng(1234);
  for (int round = 0; round < 20; ++round) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        auto store = FleetStore::Open(url_);
        placement::PlacementRequest req = Request("gpu-1g.yaml");
        for (;;) {
          if (!PlaceAndClaim(*store, req, std::to_string(getpid()))) {
            // Full: free one so the loop keeps claiming until it is killed.
            std::vector<Claim> all = store->ListClaims();
            if (!all.empty()) store->Release(all[rng() % all.size()].id);
          }
        }
      } catch (...) {
      }
      _exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 200));
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  auto store = FleetStore::Open(url_);
  std::vector<std::string> problems = store->Audit();
  EXPECT_TRUE(problems.empty()) << problems.front();
  // Every claim has all its units, and no unit row lacks its claim.
  EXPECT_EQ(pg_->Query("SELECT count(*) FROM claim_units u LEFT JOIN claims c ON c.id = u.claim_id "
                       "WHERE c.id IS NULL",
                       "fleet"),
            "0");
}

TEST_F(FleetStorePostgres, AServerRestartFailsRequestsClearlyAndTheNextOneWorks) {
  FleetStore::OpenForMigration(url_)->Migrate();
  auto store = FleetStore::Open(url_);
  AddH100Hosts(*store, 2);
  placement::PlacementRequest req = Request("gpu-1g.yaml");
  ASSERT_TRUE(PlaceAndClaim(*store, req, ""));
  pg_->Stop();
  try {
    store->ListClaims();
    FAIL() << "expected SystemError";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find("fleet"), std::string::npos) << e.what();  // names the URL
  }
  EXPECT_THROW(PlaceAndClaim(*store, req, ""), SystemError);  // still down: fails, does not hang
  pg_->Start();
  // The same FleetStore object connects again on the next request.
  EXPECT_EQ(store->ListClaims().size(), 1u);
  EXPECT_TRUE(PlaceAndClaim(*store, req, ""));
  EXPECT_EQ(store->ListClaims().size(), 2u);
  EXPECT_TRUE(store->Audit().empty());
}

// A version-2 store (made by migrating to the current version, dropping what version 3 added and
// putting back what version 4 removed, which leaves exactly version 2's tables and rows) needs
// `migrate`, keeps its hosts and claims, and then answers ChangedSince.
TEST_F(FleetStorePostgres, AVersion2StoreIsMigratedToTheChangeFeed) {
  FleetStore::OpenForMigration(url_)->Migrate();
  AddH100Hosts(*FleetStore::Open(url_), 2);
  {
    auto store = FleetStore::Open(url_);
    ASSERT_TRUE(PlaceAndClaim(*store, Request("gpu-1g.yaml"), ""));
  }
  pg_->Query("ALTER TABLE hosts DROP COLUMN change_number", "fleet");
  pg_->Query("DROP TABLE removed_hosts", "fleet");
  for (const char* sql : test_support::kUndoSchema5Sql) pg_->Query(sql, "fleet");
  for (const char* sql : test_support::kSchema3ClaimUnitsSql) pg_->Query(sql, "fleet");
  pg_->Query("DELETE FROM accel_schema WHERE version IN (3, 4)", "fleet");
  EXPECT_EQ(FleetStore::OpenForMigration(url_)->SchemaVersion(), 2);
  EXPECT_THROW(FleetStore::Open(url_), InputError);  // needs `accel fleet store migrate`
  EXPECT_EQ(FleetStore::OpenForMigration(url_)->Migrate(), 2);
  auto store = FleetStore::Open(url_);
  EXPECT_EQ(store->SchemaVersion(), FleetStore::kSchemaVersion);
  const FleetSnapshot snap = store->Snapshot();
  ASSERT_EQ(snap.hosts.size(), 2u);
  ASSERT_EQ(snap.claims.size(), 1u);
  EXPECT_TRUE(store->ChangedSince(snap.change).hosts.empty());
  ASSERT_TRUE(store->Release(snap.claims[0].id));
  FleetChanges changes = store->ChangedSince(snap.change);
  ASSERT_EQ(changes.hosts.size(), 1u);
  EXPECT_EQ(changes.hosts[0].name, snap.claims[0].host);
  EXPECT_TRUE(changes.claims.at(snap.claims[0].host).empty());
  ASSERT_TRUE(store->RemoveHost("gpu-100", false));
  EXPECT_EQ(store->ChangedSince(changes.change).removed, std::vector<std::string>{"gpu-100"});
  EXPECT_TRUE(store->Audit().empty());
}

// A version-3 store (claim_units with its foreign key to claims and its claim_id index) is
// migrated to version 4: both are gone, the unit rows and claims stay, and a release afterwards
// deletes its unit rows (by host and claim id) as the cascade did.
TEST_F(FleetStorePostgres, AVersion3StoreLosesTheUnitForeignKeyAndKeepsItsUnits) {
  FleetStore::OpenForMigration(url_)->Migrate();
  AddH100Hosts(*FleetStore::Open(url_), 2);
  for (const char* sql : test_support::kUndoSchema5Sql) pg_->Query(sql, "fleet");
  for (const char* sql : test_support::kSchema3ClaimUnitsSql) pg_->Query(sql, "fleet");
  pg_->Query("DELETE FROM accel_schema WHERE version = 4", "fleet");
  EXPECT_EQ(FleetStore::OpenForMigration(url_)->SchemaVersion(), 3);
  {
    // A version-3 accel's claims: made here by the same statements, the key in force.
    auto store = FleetStore::OpenForMigration(url_);
    ASSERT_TRUE(PlaceAndClaim(*store, Request("gpu-4-2cell.yaml"), ""));
    ASSERT_TRUE(PlaceAndClaim(*store, Request("gpu-1g.yaml"), ""));
  }
  const std::string units_before = pg_->Query("SELECT count(*) FROM claim_units", "fleet");
  EXPECT_THROW(FleetStore::Open(url_), InputError);  // needs `accel fleet store migrate`
  EXPECT_EQ(FleetStore::OpenForMigration(url_)->Migrate(), 3);
  auto store = FleetStore::Open(url_);
  EXPECT_EQ(store->SchemaVersion(), FleetStore::kSchemaVersion);
  EXPECT_EQ(pg_->Query("SELECT count(*) FROM pg_constraint WHERE conrelid = 'claim_units'::regclass AND contype = 'f'",
                       "fleet"),
            "0");
  EXPECT_EQ(pg_->Query("SELECT count(*) FROM pg_indexes WHERE tablename = 'claim_units'", "fleet"), "1");  // the key
  EXPECT_EQ(pg_->Query("SELECT count(*) FROM claim_units", "fleet"), units_before);
  EXPECT_TRUE(store->Audit().empty());
  const std::vector<Claim> claims = store->ListClaims();
  ASSERT_EQ(claims.size(), 2u);
  ASSERT_TRUE(store->Release(claims[0].id));
  EXPECT_EQ(pg_->Query("SELECT count(*) FROM claim_units WHERE claim_id = '" + claims[0].id + "'", "fleet"), "0");
  EXPECT_EQ(pg_->Query("SELECT count(*) FROM claim_units", "fleet"),
            std::to_string(UnitsOf(claims[1].placement).size()));
  EXPECT_TRUE(store->Audit().empty());
  // The primary key still refuses a unit twice.
  EXPECT_NE(pg_->Psql(pg_->Url("fleet"), "INSERT INTO claim_units VALUES ('" + claims[1].host + "', '" +
                                             UnitsOf(claims[1].placement)[0] + "', 'c-other')"),
            0);
  EXPECT_EQ(FleetStore::OpenForMigration(url_)->Migrate(), FleetStore::kSchemaVersion);  // again: nothing to do
}

// The case a sequence or "largest number seen" gets wrong under READ COMMITTED: a transaction
// takes its change number, another takes a larger one and commits first, a poller reads then.
// The first one's commit must still reach the poller.
TEST_F(FleetStorePostgres, ChangedSinceSeesATransactionThatCommitsAfterALaterOne) {
  FleetStore::OpenForMigration(url_)->Migrate();
  auto slow = FleetStore::Open(url_);
  auto fast = FleetStore::Open(url_);
  auto poller = FleetStore::Open(url_);
  AddH100Hosts(*slow, 2);
  const FleetSnapshot snap = poller->Snapshot();
  placement::PlacementRequest req = Request("gpu-1g.yaml");
  auto decide = [&](FleetStore& store, const std::string& host) {
    FleetView view = FleetView::FromSnapshot(store.Snapshot());
    ScheduleOptions o;
    ScheduleResult d = Schedule(view, req, o);
    EXPECT_TRUE(d.all_placed);
    const int i = view.IndexOf(host);
    EXPECT_GE(i, 0);
    return std::make_pair(view.hosts()[i].record.generation, d.instances.at(0).chosen.placement);
  };
  auto [gen100, p100] = decide(*slow, "gpu-100");
  auto [gen101, p101] = decide(*fast, "gpu-101");
  p100.host = "gpu-100";
  p101.host = "gpu-101";
  ClaimBatch first(*slow);
  ClaimResult on100 = first.TryClaim("gpu-100", gen100, p100);  // number taken
  ASSERT_TRUE(on100.claimed()) << on100.refused;
  {
    ClaimBatch second(*fast);
    ClaimResult on101 = second.TryClaim("gpu-101", gen101, p101);
    ASSERT_TRUE(on101.claimed()) << on101.refused;
    second.Commit();  // a larger number, committed first
  }
  FleetChanges seen = poller->ChangedSince(snap.change);
  ASSERT_EQ(seen.hosts.size(), 1u);
  EXPECT_EQ(seen.hosts[0].name, "gpu-101");
  first.Commit();
  FleetChanges later = poller->ChangedSince(seen.change);
  bool saw100 = false;
  for (const HostRecord& h : later.hosts) saw100 = saw100 || h.name == "gpu-100";
  EXPECT_TRUE(saw100) << "the mark moved past the slower transaction's change";
  EXPECT_EQ(later.claims.at("gpu-100").size(), 1u);
}

// Writers in other processes claim and release while a poller follows them with ChangedSince
// only; when the writers are done, one more poll must leave the poller's picture equal to a
// fresh snapshot.
TEST_F(FleetStorePostgres, APollerFollowingConcurrentWritersMissesNothing) {
  FleetStore::OpenForMigration(url_)->Migrate();
  AddH100Hosts(*FleetStore::Open(url_), 4);
  auto poller = FleetStore::Open(url_);
  const FleetSnapshot snap = poller->Snapshot();
  std::map<std::string, std::pair<int64_t, std::vector<std::string>>> picture;  // host -> (generation, claims)
  for (const HostRecord& h : snap.hosts) picture[h.name].first = h.generation;
  for (const Claim& c : snap.claims) picture[c.host].second.push_back(c.id);
  int64_t mark = snap.change;
  auto poll = [&] {
    FleetChanges ch = poller->ChangedSince(mark);
    for (const std::string& name : ch.removed) picture.erase(name);
    for (const HostRecord& h : ch.hosts) {
      std::vector<std::string> ids;
      for (const Claim& c : ch.claims.at(h.name)) ids.push_back(c.id);
      picture[h.name] = {h.generation, ids};
    }
    mark = ch.change;
  };
  std::vector<pid_t> pids;
  for (int w = 0; w < 4; ++w) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 0;
      try {
        auto store = FleetStore::Open(url_);
        placement::PlacementRequest req = Request("gpu-1g.yaml");
        std::mt19937 rng(w);
        for (int i = 0; i < 25; ++i) {
          if (!PlaceAndClaim(*store, req, std::to_string(w)) || rng() % 3 == 0) {
            std::vector<Claim> all = store->ListClaims();
            if (!all.empty()) store->Release(all[rng() % all.size()].id);
          }
        }
      } catch (const std::exception& e) {
        fprintf(stderr, "writer: %s\n", e.what());
        code = 1;
      }
      _exit(code);
    }
    pids.push_back(pid);
  }
  int polls = 0;
  for (;;) {
    poll();
    ++polls;
    bool running = false;
    for (pid_t pid : pids) running = running || waitpid(pid, nullptr, WNOHANG) == 0;
    if (!running) break;
  }
  poll();
  std::map<std::string, std::pair<int64_t, std::vector<std::string>>> truth;
  const FleetSnapshot end = poller->Snapshot();
  for (const HostRecord& h : end.hosts) truth[h.name].first = h.generation;
  for (const Claim& c : end.claims) truth[c.host].second.push_back(c.id);
  EXPECT_EQ(picture, truth) << "after " << polls << " polls";
  EXPECT_GT(polls, 1);
}

// Statements are prepared once per connection; a server restart drops them with the connection,
// and the next connection prepares them again (no "prepared statement does not exist").
TEST_F(FleetStorePostgres, PreparedStatementsAreMadeAgainAfterARestart) {
  FleetStore::OpenForMigration(url_)->Migrate();
  auto store = FleetStore::Open(url_);
  AddH100Hosts(*store, 2);
  placement::PlacementRequest req = Request("gpu-1g.yaml");
  ASSERT_TRUE(PlaceAndClaim(*store, req, ""));
  ASSERT_TRUE(PlaceAndClaim(*store, req, ""));
  pg_->Restart();
  EXPECT_THROW(store->ListClaims(), SystemError);  // the old connection is gone
  EXPECT_TRUE(PlaceAndClaim(*store, req, ""));      // new connection: prepares again
  EXPECT_TRUE(PlaceAndClaim(*store, req, ""));
  const FleetChanges all = store->ChangedSince(-1);
  EXPECT_EQ(all.hosts.size(), 2u);
  EXPECT_EQ(store->ListClaims().size(), 4u);
  EXPECT_TRUE(store->Audit().empty());
}

TEST_F(FleetStorePostgres, AnUnreachableServerIsASystemErrorNamingTheUrl) {
  const std::string url = url_;
  pg_.reset();  // gone
  try {
    FleetStore::Open(url);
    FAIL() << "expected SystemError";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find("postgresql://"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace accel::fleet
