// GPU shares and MIG slices in the fleet store, on SQLite and on a real PostgreSQL (a private
// server per test, tests/support/postgres_server.h): shares on one GPU up to 1000 thousandths
// and not beyond, a GPU held whole, in shares or in MIG slices refusing the other two ways, MIG
// geometry by the primary key, release then claim again, RemoveHost and UpdateHost, the schema-5
// migration of a schema-4 store that holds GPU claims, Audit against a hand-corrupted share row,
// and threads racing share claims through the lowest-level claim path (no generation check, no
// usage check), where only the database can stop them.
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "fleet/fleet_store.h"
#include "fleet/fleet_test_util.h"
#include "placement/gpu_fit.h"
#include "placement/placement_json.h"
#include "support/claim_units_schema4.h"
#include "support/postgres_server.h"
#include "support/shared_fixture.h"
#include "topology/sources.h"

namespace accel::fleet {
namespace gpu_share_store_test {

namespace fs = std::filesystem;

const std::string kHost = "gpu-1";

topology::HostTopology Hgx() { return topology::LoadTopology(testing::SourcePath("fixtures/hosts/hgx-h100.json")); }

// The address of the host's GPU `i` (PCI order).
std::string Gpu(int i) {
  static const topology::HostTopology hw = Hgx();
  return placement::AcceleratorsOf(hw).at(static_cast<size_t>(i))->address;
}

placement::GpuPlacement Part(const std::string& address, int milli, int mig_start = -1, int mig_slices = 0) {
  placement::GpuPlacement g;
  g.address = address;
  g.model = "NVIDIA H100 80GB HBM3";
  g.milli = milli;
  if (mig_start >= 0) {
    g.mig_profile = std::to_string(mig_slices) + "g.test";
    g.mig_start = mig_start;
    g.mig_slices = mig_slices;
  }
  return g;
}

placement::Placement Pod(std::vector<placement::GpuPlacement> gpus, const std::string& host = kHost) {
  placement::Placement p;
  p.host = host;
  p.flavor = "pod";
  p.floating_memory_mib = 1024;
  p.floating_cpu_milli = 500;
  p.gpus = std::move(gpus);
  return p;
}

placement::Placement Share(int gpu, int milli) { return Pod({Part(Gpu(gpu), milli)}); }
placement::Placement Mig(int gpu, int start, int slices) {
  return Pod({Part(Gpu(gpu), placement::MigMilli(slices, 8), start, slices)});
}
placement::Placement Whole(int gpu) { return Pod({Part(Gpu(gpu), 1000)}); }
placement::Placement Passthrough(int gpu) {
  placement::Placement p = Pod({});
  p.devices = {{"h100", Gpu(gpu), 0x10de, 0x2330, 0, -1}};
  return p;
}

class GpuShareStore : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgres") {
      ACCEL_REQUIRE_POSTGRES();
      pg_ = std::make_unique<test_support::PostgresServer>();
      pg_->CreateDatabase("fleet");
      url_ = pg_->Url("fleet");
      FleetStore::OpenForMigration(url_)->Migrate();
    } else {
      std::string tmpl = fs::path(::testing::TempDir()) / "gpu-share-store-XXXXXX";
      ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
      dir_ = tmpl;
      url_ = "sqlite:" + dir_ + "/fleet.db";
    }
    store_ = FleetStore::Open(url_);
    HostSpec spec;
    spec.name = kHost;
    spec.topology = Hgx();
    store_->AddHost(spec);
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // A claim as a scheduler makes it: a one-claim batch at the host's current generation. Only
  // the database can refuse it for its GPUs (TryClaim never looks at the host's usage).
  ClaimResult Attempt(const placement::Placement& p, FleetStore* store = nullptr) {
    FleetStore& s = store ? *store : *store_;
    ClaimBatch batch(s, /*one_claim=*/true);
    ClaimResult r = batch.TryClaim(p.host, s.GetHost(p.host)->generation, p);
    if (r.claimed()) batch.Commit();
    return r;
  }
  std::string ClaimId(const placement::Placement& p) {
    ClaimResult r = Attempt(p);
    EXPECT_TRUE(r.claimed()) << r.refused;
    return r.claimed() ? r.claim->id : "";
  }

  // The share row of GPU `gpu` as "mode milli holders", or "" when there is none.
  std::string ShareRow(int gpu) {
    SqlResult r = store_->connection().Exec(
        "SELECT claim_id, milli, holders FROM claim_units WHERE host = $1 AND unit = $2 AND claim_id LIKE '*%'",
        {kHost, "pci:" + Gpu(gpu)});
    if (r.rows.empty()) return "";
    return r.rows[0][0].value_or("?") + " " + r.rows[0][1].value_or("NULL") + " " + r.rows[0][2].value_or("NULL");
  }
  int64_t Count(const std::string& sql, const std::vector<SqlValue>& params = {}) {
    return std::stoll(store_->connection().Exec(sql, params).rows.at(0).at(0).value_or("0"));
  }
  // Runs `sql` on a fresh connection (another client of the same database).
  void Sql(const std::string& sql) { FleetStore::OpenForMigration(url_)->connection().Exec(sql); }

  std::unique_ptr<test_support::PostgresServer> pg_;
  std::string dir_, url_;
  std::unique_ptr<FleetStore> store_;
};

INSTANTIATE_TEST_SUITE_P(Engines, GpuShareStore, ::testing::Values("sqlite", "postgres"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST_P(GpuShareStore, SharesUpToTheWholeGpuAreClaimedAndBeyondRefusedWithTheSums) {
  ClaimId(Share(0, 600));
  ClaimId(Share(0, 210));
  EXPECT_EQ(ShareRow(0), "*shares 810 2");
  const ClaimResult over = Attempt(Share(0, 470));
  EXPECT_FALSE(over.claimed());
  EXPECT_EQ(over.refused, "GPU " + Gpu(0) + " on host " + kHost + ": 810/1000 already shared, 470 more would exceed it");
  EXPECT_EQ(ShareRow(0), "*shares 810 2") << "a refused claim changes nothing";
  EXPECT_EQ(Count("SELECT count(*) FROM claims"), 2);
  ClaimId(Share(0, 190));
  EXPECT_EQ(ShareRow(0), "*shares 1000 3");
  EXPECT_FALSE(Attempt(Share(0, 1)).claimed());
  // Other GPUs are untouched; a share of a placement may be any of 1..1000.
  ClaimId(Share(1, 1));
  EXPECT_EQ(ShareRow(1), "*shares 1 1");
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
  // ClaimOnHost (accel place --claim) checks the usage first and says the same in its words.
  ClaimResult on_host = store_->ClaimOnHost(kHost, [](const placement::HostUsage&) {
    return std::optional<placement::Placement>(Share(0, 5));
  });
  EXPECT_FALSE(on_host.claimed());
  EXPECT_EQ(on_host.refused, "GPU " + Gpu(0) + ": 1000/1000 already shared, 5 more would exceed the GPU");
  on_host = store_->ClaimOnHost(kHost, [](const placement::HostUsage&) {
    return std::optional<placement::Placement>(Share(1, 999));
  });
  EXPECT_TRUE(on_host.claimed()) << on_host.refused;
  EXPECT_EQ(ShareRow(1), "*shares 1000 2");
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
}

TEST_P(GpuShareStore, ABatchKeepsItsClaimsAndFallsBackPastARefusedShare) {
  ClaimId(Share(0, 700));
  {
    ClaimBatch batch(*store_);
    ClaimResult a = batch.TryClaim(kHost, store_->GetHost(kHost)->generation, Share(0, 300));  // first: no savepoint
    ASSERT_TRUE(a.claimed()) << a.refused;
    int64_t gen = store_->GetHost(kHost)->generation;  // this connection sees its own bump
    ClaimResult b = batch.TryClaim(kHost, gen, Share(0, 100));  // in a savepoint, refused
    EXPECT_FALSE(b.claimed());
    EXPECT_NE(b.refused.find("1000/1000 already shared, 100 more"), std::string::npos) << b.refused;
    ClaimResult c = batch.TryClaim(kHost, gen, Share(2, 100));  // the next candidate
    ASSERT_TRUE(c.claimed()) << c.refused;
    batch.Commit();
  }
  EXPECT_EQ(ShareRow(0), "*shares 1000 2");
  EXPECT_EQ(ShareRow(2), "*shares 100 1");
  {
    ClaimBatch batch(*store_);
    ASSERT_TRUE(batch.TryClaim(kHost, store_->GetHost(kHost)->generation, Share(3, 500)).claimed());
    // Destroyed without Commit: nothing of it stays.
  }
  EXPECT_EQ(ShareRow(3), "");
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
}

TEST_P(GpuShareStore, WholeSharedAndMigRefuseEachOtherBothWays) {
  const std::string gpu = "GPU " + Gpu(0) + " on host " + kHost;
  struct Way {
    const char* name;
    placement::Placement placement;
  };
  const std::vector<Way> ways = {{"whole", Whole(0)}, {"passthrough", Passthrough(0)}, {"share", Share(0, 300)},
                                 {"mig", Mig(0, 0, 2)}};
  for (const Way& first : ways) {
    for (const Way& second : ways) {
      SCOPED_TRACE(std::string(first.name) + " then " + second.name);
      const std::string id = ClaimId(first.placement);
      ClaimResult r = Attempt(second.placement);
      const bool both_parts_of_a_kind = first.name == second.name && (first.name == std::string("share") ||
                                                                       first.name == std::string("mig"));
      if (both_parts_of_a_kind && first.name == std::string("share")) {
        EXPECT_TRUE(r.claimed()) << r.refused;  // 300 + 300
      } else {
        EXPECT_FALSE(r.claimed());
      }
      const std::string first_name = first.name, second_name = second.name;
      if (second_name == "share" && (first_name == "whole" || first_name == "passthrough")) {
        EXPECT_EQ(r.refused, gpu + " is held whole by claim " + id);
      }
      if (second_name == "mig" && (first_name == "whole" || first_name == "passthrough")) {
        EXPECT_EQ(r.refused, gpu + " is held whole by claim " + id);
      }
      if (second_name == "whole" && first_name == "share") { EXPECT_EQ(r.refused, gpu + " is shared (300/1000 held), not free whole"); }
      if (second_name == "whole" && first_name == "mig") { EXPECT_EQ(r.refused, gpu + " holds MIG slices, not free whole"); }
      if (second_name == "mig" && first_name == "share") { EXPECT_EQ(r.refused, gpu + " holds time-slicing shares, not MIG slices"); }
      if (second_name == "share" && first_name == "mig") { EXPECT_EQ(r.refused, gpu + " holds MIG slices, not time-slicing shares"); }
      if (second_name == "mig" && first_name == "mig") { EXPECT_EQ(r.refused, gpu + ": MIG memory slice 0 is in claim " + id); }
      if (second_name == "passthrough" && first_name != "whole" && first_name != "passthrough") {
        EXPECT_NE(r.refused.find("a unit is taken"), std::string::npos) << r.refused;
      }
      EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
      for (const Claim& c : store_->ListClaims()) ASSERT_TRUE(store_->Release(c.id));
      EXPECT_EQ(Count("SELECT count(*) FROM claim_units"), 0) << "released: no row left";
    }
  }
}

TEST_P(GpuShareStore, APlacementHoldingOneGpuTwoWaysIsRefusedBeforeTheDatabase) {
  const std::string prefix = "host " + kHost + ": GPU " + Gpu(0);
  EXPECT_EQ(Attempt(Pod({Part(Gpu(0), 1000), Part(Gpu(0), 200)})).refused, prefix + " is held whole and in part by the placement");
  EXPECT_EQ(Attempt(Pod({Part(Gpu(0), 1000), Part(Gpu(0), 1000)})).refused, prefix + " appears twice in the placement");
  EXPECT_EQ(Attempt(Pod({Part(Gpu(0), 200), Part(Gpu(0), 125, 0, 1)})).refused,
            prefix + " holds time-slicing shares and MIG slices in the same placement");
  placement::Placement both = Share(0, 100);
  both.devices = Passthrough(0).devices;
  EXPECT_EQ(Attempt(both).refused, prefix + " is passed through and shared by the placement");
  EXPECT_EQ(Attempt(Pod({Part(Gpu(0), 125, 6, 4)})).refused.find(prefix + ": MIG slices 6+4"), std::string::npos)
      << "6+4 is within the 32 slices a row can name; the database takes it";
  EXPECT_EQ(Attempt(Pod({Part(Gpu(0), 125, 30, 4)})).refused, prefix + ": MIG slices 30+4 are out of range");
  EXPECT_EQ(Attempt(Pod({Part(Gpu(0), 0)})).refused, prefix + ": a part of 0 thousandths is not 1..1000");
  EXPECT_EQ(Attempt(Pod({Part(Gpu(0), 600), Part(Gpu(0), 600)})).refused,
            prefix + ": the placement's parts hold 1200/1000 thousandths");
  for (const Claim& c : store_->ListClaims()) store_->Release(c.id);
  // Two shares of one GPU in one placement are one share row with two holders.
  ClaimId(Pod({Part(Gpu(0), 200), Part(Gpu(0), 300)}));
  EXPECT_EQ(ShareRow(0), "*shares 500 2");
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
}

TEST_P(GpuShareStore, MigSlicesAreExactGeometryByThePrimaryKey) {
  const std::string first = ClaimId(Mig(0, 0, 4));
  const ClaimResult overlap = Attempt(Mig(0, 2, 2));
  EXPECT_FALSE(overlap.claimed());
  EXPECT_EQ(overlap.refused, "GPU " + Gpu(0) + " on host " + kHost + ": MIG memory slice 2 is in claim " + first);
  ClaimId(Mig(0, 4, 2));
  ClaimId(Mig(0, 6, 1));
  EXPECT_FALSE(Attempt(Mig(0, 6, 2)).claimed());
  ClaimId(Mig(0, 7, 1));
  EXPECT_EQ(ShareRow(0), "*mig 1000 4");
  EXPECT_EQ(Count("SELECT count(*) FROM claim_units WHERE unit LIKE 'mig:%'"), 8);
  EXPECT_EQ(Count("SELECT count(*) FROM claim_units WHERE unit = $1 AND claim_id = $2", {"mig:" + Gpu(0) + ":3", first}), 1);
  ASSERT_TRUE(store_->Release(first));
  EXPECT_EQ(ShareRow(0), "*mig 500 3");
  ClaimId(Mig(0, 0, 2));
  ClaimId(Mig(0, 2, 2));
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
}

TEST_P(GpuShareStore, ReleaseSubtractsAndTheLastHolderTakesTheRowThenTheGpuIsFreeAgain) {
  const std::string a = ClaimId(Share(0, 600));
  const std::string b = ClaimId(Share(0, 400));
  EXPECT_FALSE(Attempt(Share(0, 1)).claimed());
  const int64_t gen = store_->GetHost(kHost)->generation;
  ASSERT_TRUE(store_->Release(a));
  EXPECT_EQ(store_->GetHost(kHost)->generation, gen + 1);
  EXPECT_EQ(ShareRow(0), "*shares 400 1");
  EXPECT_FALSE(store_->Release(a)) << "released once";
  EXPECT_EQ(ShareRow(0), "*shares 400 1") << "a second release takes nothing off";
  const std::string c = ClaimId(Share(0, 600));
  EXPECT_EQ(ShareRow(0), "*shares 1000 2");
  ASSERT_TRUE(store_->Release(b));
  ASSERT_TRUE(store_->Release(c));
  EXPECT_EQ(ShareRow(0), "");
  EXPECT_EQ(Count("SELECT count(*) FROM claim_units"), 0);
  // Free again for any way of holding it.
  const std::string whole = ClaimId(Whole(0));
  ASSERT_TRUE(store_->Release(whole));
  ClaimId(Mig(0, 0, 8));
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
}

TEST_P(GpuShareStore, RemoveHostAndATopologyChangeKeepShareRowsConsistent) {
  ClaimId(Share(0, 300));
  ClaimId(Mig(1, 0, 1));
  ClaimId(Whole(2));
  // New hardware without GPU 0: refused, naming the GPU held in part.
  topology::HostTopology smaller = Hgx();
  smaller.pci.erase(std::remove_if(smaller.pci.begin(), smaller.pci.end(),
                                   [](const topology::PciDevice& d) { return d.address == Gpu(0); }),
                    smaller.pci.end());
  HostSpec update;
  update.name = kHost;
  update.topology = smaller;
  try {
    store_->UpdateHost(update);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.problem().find("a part of GPU " + Gpu(0)), std::string::npos) << e.what();
  }
  // The same hardware again: every unit, MIG slice and share row still names a device of it.
  update.topology = Hgx();
  store_->UpdateHost(update);
  EXPECT_THROW(store_->RemoveHost(kHost, false), InputError);
  ASSERT_TRUE(store_->RemoveHost(kHost, true));
  EXPECT_EQ(Count("SELECT count(*) FROM claim_units"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM claims"), 0);
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
}

TEST_P(GpuShareStore, AuditRecomputesShareRowsFromTheClaims) {
  ClaimId(Share(0, 470));
  ClaimId(Share(0, 300));
  ClaimId(Mig(1, 0, 2));
  ASSERT_EQ(store_->Audit(), std::vector<std::string>{});
  const std::string gpu0 = "GPU " + Gpu(0) + " on host " + kHost;
  // A share row changed by hand: its sum no longer what the claims hold.
  Sql("UPDATE claim_units SET milli = 900 WHERE unit = 'pci:" + Gpu(0) + "'");
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{gpu0 + ": the share row says *shares 900/1000 by 2 part(s), the "
                                                              "claims hold *shares 770/1000 by 2 part(s)"});
  Sql("UPDATE claim_units SET milli = 770, claim_id = '*mig' WHERE unit = 'pci:" + Gpu(0) + "'");
  EXPECT_EQ(store_->Audit().size(), 1u);
  // Gone: the claims' parts are unguarded.
  Sql("DELETE FROM claim_units WHERE unit = 'pci:" + Gpu(0) + "'");
  EXPECT_EQ(store_->Audit(),
            std::vector<std::string>{gpu0 + ": claims hold *shares 770/1000 by 2 part(s), but there is no share row"});
  Sql("INSERT INTO claim_units(host, unit, claim_id, milli, holders) VALUES ('" + kHost + "', 'pci:" + Gpu(0) +
      "', '*shares', 770, 2)");
  ASSERT_EQ(store_->Audit(), std::vector<std::string>{});
  // A share row no claim explains.
  Sql("INSERT INTO claim_units(host, unit, claim_id, milli, holders) VALUES ('" + kHost + "', 'pci:" + Gpu(5) +
      "', '*shares', 100, 1)");
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{"GPU " + Gpu(5) + " on host " + kHost +
                                                      ": the share row says *shares 100/1000 by 1 part(s) but no claim "
                                                      "holds a part of it"});
  Sql("DELETE FROM claim_units WHERE unit = 'pci:" + Gpu(5) + "'");
  // A claim written past every guard (its row alone) that takes the GPU over 1000.
  Sql("INSERT INTO claims(id, host, flavor, created_at, placement, created_us) VALUES ('c-ffffffffffff', '" + kHost +
      "', 'evil', '2099-01-01T00:00:00Z', '" + placement::WritePlacementJson(Share(0, 500)) + "', 999999999999999999)");  // applied last
  const std::vector<std::string> problems = store_->Audit();
  auto has = [&](const std::string& text) {
    return std::any_of(problems.begin(), problems.end(),
                       [&](const std::string& line) { return line.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(has("claim c-ffffffffffff double-books: GPU " + Gpu(0) + ": 770/1000 already shared, 500 more"))
      << ::testing::PrintToString(problems);
  EXPECT_TRUE(has(gpu0 + ": claims hold 1270/1000 thousandths of it")) << ::testing::PrintToString(problems);
  EXPECT_TRUE(has(gpu0 + ": the share row says *shares 770/1000 by 2 part(s), the claims hold *shares 1270/1000 by 3"))
      << ::testing::PrintToString(problems);
}

TEST_P(GpuShareStore, TheDatabaseItselfRefusesWhatNoClaimerChecked) {
  // Hand-written rows, as a buggy or foreign writer would send them: the constraints refuse.
  SqlConnection& db = store_->connection();
  const std::string row = "INSERT INTO claim_units(host, unit, claim_id, milli, holders) VALUES ('" + kHost + "', ";
  EXPECT_TRUE(db.TryExec(row + "'pci:" + Gpu(0) + "', '*shares', 1001, 1)").refused.has_value());
  EXPECT_TRUE(db.TryExec(row + "'pci:" + Gpu(0) + "', '*shares', -1, 1)").refused.has_value());
  EXPECT_TRUE(db.TryExec(row + "'pci:" + Gpu(0) + "', '*shares', 10, -1)").refused.has_value());
  EXPECT_EQ(Count("SELECT count(*) FROM claim_units"), 0);
  // The lowest-level path, no generation and no usage check: refused all the same.
  ASSERT_FALSE(InsertClaimRows(db, {"c-000000000001", kHost, "pod", "2024-05-01T12:00:00Z", Share(0, 800)}).has_value());
  for (const placement::Placement& p : {Share(0, 201), Whole(0), Mig(0, 0, 1), Passthrough(0)}) {
    SqlTransaction tx(db, true);
    EXPECT_TRUE(InsertClaimRows(db, {"c-000000000002", kHost, "pod", "2024-05-01T12:00:00Z", p}).has_value())
        << placement::WritePlacementJson(p);
  }
  EXPECT_EQ(ShareRow(0), "*shares 800 1");
}

// --- Migration from schema 4 -----------------------------------------------------------

// Takes the store back to schema 4 (what version 5 added removed, the version rows and SQLite's
// user_version set back), with `claims` stored as a schema-4 accel stored them: the claim rows
// and, as schema 4's UnitsOf had them, a unit row per CPU and passed-through device only.
void MakeSchema4Store(const std::string& url, const std::vector<Claim>& claims) {
  auto store = FleetStore::OpenForMigration(url);
  SqlConnection& db = store->connection();
  db.Exec("DELETE FROM claim_units");
  db.Exec("DELETE FROM claims");
  for (const char* sql : test_support::kUndoSchema5Sql) db.Exec(sql);
  if (db.engine() == SqlEngine::kSqlite) db.Exec("PRAGMA user_version = 4");
  int n = 0;
  for (const Claim& c : claims) {
    db.Exec("INSERT INTO claims(id, host, flavor, created_at, placement, created_us) VALUES ($1, $2, $3, $4, $5, $6)",
            {c.id, c.host, c.flavor, c.created_at, placement::WritePlacementJson(c.placement), std::to_string(++n)});
    for (const placement::DevicePlacement& d : c.placement.devices)
      db.Exec("INSERT INTO claim_units(host, unit, claim_id) VALUES ($1, $2, $3)", {c.host, "pci:" + d.address, c.id});
  }
}

Claim Stored(int n, const placement::Placement& p) {
  return {testing::TestClaimId(n), p.host, p.flavor, "2024-05-01T12:00:0" + std::to_string(n % 10) + "Z", p};
}

TEST_P(GpuShareStore, ASchema4StoreWithGpuClaimsGetsItsRowsOnMigration) {
  placement::Placement whole_and_nic = Whole(3);
  whole_and_nic.devices = {{"cx7", "0000:1c:00.0", 0x15b3, 0x1021, 0, -1}};
  const std::vector<Claim> claims = {Stored(1, Share(0, 600)), Stored(2, Share(0, 300)), Stored(3, Mig(1, 0, 2)),
                                     Stored(4, whole_and_nic), Stored(5, Passthrough(2))};
  store_.reset();
  MakeSchema4Store(url_, claims);
  EXPECT_EQ(FleetStore::OpenForMigration(url_)->SchemaVersion(), 4);
  if (GetParam() == "postgres") {
    EXPECT_THROW(FleetStore::Open(url_), InputError);  // needs `accel fleet store migrate`
    EXPECT_EQ(FleetStore::OpenForMigration(url_)->Migrate(), 4);
  }
  store_ = FleetStore::Open(url_);  // SQLite: migrated here
  EXPECT_EQ(store_->SchemaVersion(), FleetStore::kSchemaVersion);
  EXPECT_EQ(store_->ListClaims().size(), claims.size());
  EXPECT_EQ(ShareRow(0), "*shares 900 2");
  EXPECT_EQ(ShareRow(1), "*mig 250 1");
  EXPECT_EQ(Count("SELECT count(*) FROM claim_units WHERE unit LIKE 'mig:%' AND claim_id = $1", {claims[2].id}), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM claim_units WHERE unit = $1 AND claim_id = $2", {"pci:" + Gpu(3), claims[3].id}), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM claim_units WHERE claim_id = $1", {claims[3].id}), 2) << "the NIC kept its row";
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
  // The migrated claims are guarded now.
  EXPECT_EQ(Attempt(Share(0, 200)).refused, "GPU " + Gpu(0) + " on host " + kHost + ": 900/1000 already shared, 200 more would exceed it");
  EXPECT_FALSE(Attempt(Share(3, 100)).claimed());
  EXPECT_FALSE(Attempt(Mig(1, 1, 1)).claimed());
  ClaimId(Share(0, 100));
  ClaimId(Mig(1, 2, 2));
  ASSERT_TRUE(store_->Release(claims[0].id));
  EXPECT_EQ(ShareRow(0), "*shares 400 2");
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
  EXPECT_EQ(FleetStore::OpenForMigration(url_)->Migrate(), FleetStore::kSchemaVersion);  // nothing left to do
}

TEST_P(GpuShareStore, ASchema4StoreWhoseGpuClaimsDoubleBookIsNotMigrated) {
  const std::vector<Claim> claims = {Stored(1, Share(0, 600)), Stored(2, Share(0, 500))};
  store_.reset();
  MakeSchema4Store(url_, claims);
  try {
    if (GetParam() == "postgres") FleetStore::OpenForMigration(url_)->Migrate();
    else FleetStore::Open(url_);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find(claims[1].id), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find("also held by another claim"), std::string::npos) << e.what();
    if (GetParam() == "sqlite") {
      EXPECT_NE(e.problem().find("600/1000 already shared, 500 more"), std::string::npos) << e.what();
    }
  }
  auto store = FleetStore::OpenForMigration(url_);
  EXPECT_EQ(store->SchemaVersion(), 4) << "left as it was";
  EXPECT_EQ(std::stoll(*store->connection().Exec("SELECT count(*) FROM claims").rows[0][0]), 2);
}

// --- Concurrency -----------------------------------------------------------------------

// Threads, each with its own connection, claim shares of one GPU as fast as they can through the
// paths under every claimer, and release some of theirs. Half the attempts use InsertClaimRows in
// a transaction (no generation check), half a one-claim batch at a generation read just before
// (the generation guards nothing here: the placement never looked at the usage). Only the
// database stands between them and more than the GPU: at the end, and at every look a watcher
// takes meanwhile, the live claims hold at most 1000 and the share row says exactly what they hold.
TEST_P(GpuShareStore, RacingShareClaimsNeverPassTheWholeGpu) {
  constexpr int kThreads = 6, kAttempts = 60;
  std::atomic<int> claimed{0}, refused{0}, released{0}, failures{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        auto store = FleetStore::Open(url_);
        std::mt19937_64 rng(static_cast<uint64_t>(t) * 7919 + 1);
        std::vector<std::string> mine;
        for (int i = 0; i < kAttempts; ++i) {
          const placement::Placement p = Share(0, 50 * testing::Uniform(rng, 1, 6));
          bool ok = false;
          if (testing::Chance(rng, 50)) {
            SqlConnection& db = store->connection();
            SqlTransaction tx(db, true);
            char id[20];
            std::snprintf(id, sizeof id, "c-%06x%06x", t, i);
            if (!InsertClaimRows(db, {id, kHost, "pod", "2024-05-01T12:00:00Z", p})) {
              tx.Commit();
              mine.push_back(id);
              ok = true;
            }
          } else {
            ClaimBatch batch(*store, /*one_claim=*/testing::Chance(rng, 50));
            ClaimResult r = batch.TryClaim(kHost, store->GetHost(kHost)->generation, p);
            if (r.claimed()) {
              batch.Commit();
              mine.push_back(r.claim->id);
              ok = true;
            }
          }
          (ok ? claimed : refused)++;
          if (!mine.empty() && testing::Chance(rng, 20)) {
            const size_t k = static_cast<size_t>(testing::Uniform(rng, 0, static_cast<int>(mine.size()) - 1));
            if (store->Release(mine[k])) released++;
            mine.erase(mine.begin() + static_cast<long>(k));
          }
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "claimer " << t << ": " << e.what();
        failures++;
      }
    });
  }
  std::thread watcher([&] {
    auto store = FleetStore::Open(url_);
    while (!done) {
      // One statement, one snapshot: the live claims' parts and the share row side by side.
      int64_t sum = 0;
      for (const Claim& c : store->ListClaims(kHost))
        for (const placement::GpuPlacement& g : c.placement.gpus) sum += g.milli;
      EXPECT_LE(sum, 1000);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  for (std::thread& t : threads) t.join();
  done = true;
  watcher.join();
  ASSERT_EQ(failures, 0);
  int64_t sum = 0;
  for (const Claim& c : store_->ListClaims(kHost))
    for (const placement::GpuPlacement& g : c.placement.gpus) sum += g.milli;
  EXPECT_LE(sum, 1000);
  EXPECT_GT(sum, 500) << "the GPU filled up";
  EXPECT_EQ(ShareRow(0), sum == 0 ? "" : "*shares " + std::to_string(sum) + " " + std::to_string(store_->ListClaims(kHost).size()));
  EXPECT_GT(claimed, 20);
  EXPECT_GT(refused, 20) << "they raced for the same room";
  EXPECT_GT(released, 5);
  EXPECT_EQ(store_->Audit(), std::vector<std::string>{});
}

}  // namespace gpu_share_store_test
}  // namespace accel::fleet
