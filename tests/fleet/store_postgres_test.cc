// The fleet store on a real PostgreSQL 15 (a private server per test, tests/support/
// postgres_server.h): the same schema and behaviour as SQLite, migrations, double booking refused
// by the database under concurrent processes, claimers killed with SIGKILL mid-claim, and a
// server restart that fails requests clearly and needs no accel restart.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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
#include "support/postgres_server.h"
#include "support/shared_fixture.h"
#include "topology/sources.h"

namespace accel::fleet {
namespace {

#define REQUIRE_POSTGRES() ACCEL_REQUIRE_TOOL(test_support::PostgresBinary("initdb"), "postgresql")

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
    REQUIRE_POSTGRES();
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
    std::string conflict;
    const int64_t gen = store->GetHost(claims[0].host)->generation;
    EXPECT_EQ(batch.TryClaim(claims[0].host, gen, claims[0].placement, &conflict), "");
    EXPECT_NE(conflict.find("unit is taken"), std::string::npos) << conflict;
    // A stale generation is refused before any unit is written.
    EXPECT_EQ(batch.TryClaim(claims[0].host, gen - 1, claims[0].placement, &conflict), "");
    EXPECT_NE(conflict.find("changed"), std::string::npos) << conflict;
  }
  EXPECT_TRUE(store->Release(claims[0].id));
  EXPECT_TRUE(store->ListClaims().empty());
  EXPECT_EQ(pg_->Query("SELECT count(*) FROM claim_units", "fleet"), "0");
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
