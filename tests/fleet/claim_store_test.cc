#include "fleet/fleet_store.h"

#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "common/error.h"
#include "placement/placement_json.h"

namespace accel::fleet {
using namespace accel::placement;
namespace claim_store_test {

namespace fs = std::filesystem;

constexpr int kPoolCpus = 64;
constexpr int kPoolDevices = 80;  // more devices than CPUs: the CPU pool runs out first

std::string DeviceAddress(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0000:%02x:00.0", i);
  return buf;
}

// A toy engine: one vCPU pinned to the lowest free CPU of 0..63 (node = cpu / 32), plus the
// lowest free device, on host "h". Returns nullopt when the pool is exhausted.
std::optional<Placement> LowestFree(const HostUsage& usage) {
  CpuSet taken;
  for (const auto& [id, node] : usage.nodes) taken = taken.Union(node.pinned_cpus);
  int cpu = 0;
  while (cpu < kPoolCpus && taken.Contains(cpu)) ++cpu;
  int dev = 0;
  while (dev < kPoolDevices && usage.devices.count(DeviceAddress(dev))) ++dev;
  if (cpu == kPoolCpus || dev == kPoolDevices) return std::nullopt;
  Placement p;
  p.host = "h";
  p.flavor = "toy";
  CellPlacement cell;
  cell.host_node = cpu / 32;
  cell.pinning = {{0, cpu}};
  cell.consumed_cpus = {cpu};
  cell.memory_mib = 1024;
  cell.page_size_kib = 2048;
  cell.pages = 512;
  p.cells = {cell};
  p.devices = {{"toy", DeviceAddress(dev), 0x10de, 0x2330, cell.host_node, 0}};
  return p;
}

class ClaimStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = fs::path(::testing::TempDir()) / "claims-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = (fs::path(dir_) / "state" / "claims.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_;
  std::string path_;
};

// Runs `body` in a child process; returns its wait status. The child never returns into gtest.
template <typename Body>
pid_t Spawn(Body body) {
  pid_t pid = fork();
  if (pid == 0) {
    int rc = 1;
    try {
      rc = body();
    } catch (const std::exception& e) {
      std::cerr << "child " << getpid() << ": " << e.what() << "\n";
    }
    std::fflush(nullptr);
    _exit(rc);
  }
  return pid;
}

int Wait(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST_F(ClaimStoreTest, OpenCreatesDirectoryAndStartsEmpty) {
  auto store = FleetStore::Open("sqlite:" + std::string(path_));
  EXPECT_TRUE(fs::exists(path_));
  EXPECT_TRUE(store->ListClaims().empty());
  EXPECT_TRUE(store->UsageOf("h").nodes.empty());
  EXPECT_FALSE(store->GetClaim("c-000000000000").has_value());
  EXPECT_FALSE(store->Release("c-000000000000"));
}

TEST_F(ClaimStoreTest, ClaimStoresAndPersistsAcrossReopen) {
  std::string id, json;
  {
    auto store = FleetStore::Open("sqlite:" + std::string(path_));
    ClaimResult r = store->ClaimOnHost("h", LowestFree);
    ASSERT_TRUE(r.claimed()) << r.refused;
    id = r.claim->id;
    json = WritePlacementJson(r.claim->placement);
    EXPECT_EQ(id.size(), 14u);
    EXPECT_EQ(id.rfind("c-", 0), 0u);
    EXPECT_EQ(r.claim->host, "h");
    EXPECT_EQ(r.claim->flavor, "toy");
    EXPECT_EQ(r.claim->created_at.size(), 20u);  // 2024-05-01T12:34:56Z
    EXPECT_EQ(r.claim->created_at.back(), 'Z');
  }
  auto store = FleetStore::Open("sqlite:" + std::string(path_));
  std::optional<Claim> got = store->GetClaim(id);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(WritePlacementJson(got->placement), json);
  HostUsage usage = store->UsageOf("h");
  EXPECT_EQ(usage.nodes[0].pinned_cpus, CpuSet({0}));
  EXPECT_EQ(usage.nodes[0].pages_used[2048], 512u);
  EXPECT_EQ(usage.devices.count(DeviceAddress(0)), 1u);

  // The next claim sees the first: CPU 1 and the second device.
  ClaimResult second = store->ClaimOnHost("h", LowestFree);
  ASSERT_TRUE(second.claimed());
  EXPECT_EQ(second.claim->placement.cells[0].pinning.at(0), 1);
  EXPECT_EQ(second.claim->placement.devices[0].address, DeviceAddress(1));
  EXPECT_NE(second.claim->id, id);
}

TEST_F(ClaimStoreTest, ReleaseFreesResourcesAndListFiltersByHost) {
  auto store = FleetStore::Open("sqlite:" + std::string(path_));
  std::string a = store->ClaimOnHost("h", LowestFree).claim->id;
  std::string b = store->ClaimOnHost("h", LowestFree).claim->id;
  ClaimResult other = store->ClaimOnHost("g", [](const HostUsage& u) {
    std::optional<Placement> p = LowestFree(u);
    p->host = "g";
    return p;
  });
  ASSERT_TRUE(other.claimed());
  // Host g has its own usage: it got CPU 0 too.
  EXPECT_EQ(other.claim->placement.cells[0].pinning.at(0), 0);

  std::vector<Claim> all = store->ListClaims();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, a);  // oldest first
  EXPECT_EQ(all[1].id, b);
  EXPECT_EQ(store->ListClaims("g").size(), 1u);
  EXPECT_EQ(store->ListClaims("nope").size(), 0u);

  EXPECT_TRUE(store->Release(a));
  EXPECT_FALSE(store->Release(a));
  EXPECT_FALSE(store->GetClaim(a).has_value());
  EXPECT_EQ(store->UsageOf("h").nodes[0].pinned_cpus, CpuSet({1}));
  // The freed CPU 0 is handed out again.
  EXPECT_EQ(store->ClaimOnHost("h", LowestFree).claim->placement.cells[0].pinning.at(0), 0);
}

TEST_F(ClaimStoreTest, NulloptStoresNothing) {
  auto store = FleetStore::Open("sqlite:" + std::string(path_));
  ClaimResult r = store->ClaimOnHost("h", [](const HostUsage&) { return std::optional<Placement>(); });
  EXPECT_FALSE(r.claimed());
  EXPECT_EQ(r.refused, "");
  EXPECT_TRUE(store->ListClaims().empty());
}

TEST_F(ClaimStoreTest, DoubleBookingFromTheCallbackIsRefused) {
  auto store = FleetStore::Open("sqlite:" + std::string(path_));
  ASSERT_TRUE(store->ClaimOnHost("h", LowestFree).claimed());
  // A buggy engine that ignores usage hands out CPU 0 again.
  ClaimResult r = store->ClaimOnHost("h", [](const HostUsage&) { return LowestFree(HostUsage{}); });
  EXPECT_FALSE(r.claimed());
  EXPECT_NE(r.refused.find("already"), std::string::npos) << r.refused;

  ClaimResult wrong_host = store->ClaimOnHost("g", LowestFree);  // placement says host "h"
  EXPECT_FALSE(wrong_host.claimed());
  EXPECT_NE(wrong_host.refused.find("host"), std::string::npos);
  EXPECT_EQ(store->ListClaims().size(), 1u);
}

TEST_F(ClaimStoreTest, ExceptionInCallbackRollsBack) {
  auto store = FleetStore::Open("sqlite:" + std::string(path_));
  EXPECT_THROW(store->ClaimOnHost("h",
                           [](const HostUsage&) -> std::optional<Placement> {
                             throw std::runtime_error("engine failed");
                           }),
               std::runtime_error);
  EXPECT_TRUE(store->ListClaims().empty());
  EXPECT_TRUE(store->ClaimOnHost("h", LowestFree).claimed());  // no transaction was left open
}

// Eight processes race to claim a 64-CPU pool through the same file: every CPU and device is
// handed out exactly once and the pool is used up exactly.
TEST_F(ClaimStoreTest, ConcurrentProcessesNeverDoubleBook) {
  constexpr int kChildren = 8;
  std::vector<pid_t> children;
  for (int i = 0; i < kChildren; ++i) {
    children.push_back(Spawn([this] {
      auto store = FleetStore::Open("sqlite:" + std::string(path_));  // the children also race to create it
      while (store->ClaimOnHost("h", LowestFree).claimed()) {
      }
      return 0;
    }));
  }
  std::vector<int> statuses;
  for (pid_t pid : children) statuses.push_back(Wait(pid));  // all, before any ASSERT returns
  for (int status : statuses) {
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  }
  auto store = FleetStore::Open("sqlite:" + std::string(path_));
  std::vector<Claim> claims = store->ListClaims("h");
  ASSERT_EQ(claims.size(), static_cast<size_t>(kPoolCpus));
  CpuSet cpus;
  std::set<std::string> devices, ids;
  for (const Claim& c : claims) {
    int cpu = c.placement.cells.at(0).pinning.at(0);
    EXPECT_FALSE(cpus.Contains(cpu)) << "CPU " << cpu << " claimed twice";
    cpus.Add(cpu);
    EXPECT_TRUE(devices.insert(c.placement.devices.at(0).address).second)
        << c.placement.devices[0].address << " claimed twice";
    EXPECT_TRUE(ids.insert(c.id).second);
  }
  EXPECT_EQ(cpus.ToString(), "0-63");
  EXPECT_EQ(devices.size(), static_cast<size_t>(kPoolCpus));
  EXPECT_FALSE(store->ClaimOnHost("h", LowestFree).claimed());
}

// A process killed inside the engine callback, holding the write lock, leaves no trace.
TEST_F(ClaimStoreTest, KilledInsideClaimLeavesNoPartialClaim) {
  pid_t pid = Spawn([this] {
    auto store = FleetStore::Open("sqlite:" + std::string(path_));
    if (!store->ClaimOnHost("h", LowestFree).claimed()) return 1;
    store->ClaimOnHost("h", [](const HostUsage& u) {
      raise(SIGKILL);
      return LowestFree(u);
    });
    return 2;  // not reached
  });
  int status = Wait(pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "status " << status;

  auto store = FleetStore::Open("sqlite:" + std::string(path_));
  ASSERT_EQ(store->ListClaims().size(), 1u);
  ClaimResult next = store->ClaimOnHost("h", LowestFree);  // the lock died with the process
  ASSERT_TRUE(next.claimed());
  EXPECT_EQ(next.claim->placement.cells[0].pinning.at(0), 1);
  EXPECT_EQ(store->ListClaims().size(), 2u);
}

// Killed at arbitrary moments (in the middle of commits too), the store stays consistent:
// every row reads back and no two claims overlap.
TEST_F(ClaimStoreTest, KilledAtRandomMomentsStaysConsistent) {
  for (int round = 0; round < 4; ++round) {
    pid_t pid = Spawn([this] {
      auto store = FleetStore::Open("sqlite:" + std::string(path_));
      for (int n = 0;; ++n) {
        ClaimResult r = store->ClaimOnHost("h", LowestFree);
        if (!r.claimed()) return 0;
        if (n % 3 == 0) store->Release(r.claim->id);  // churn: writes of both kinds
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + 15 * round));
    kill(pid, SIGKILL);
    Wait(pid);
    auto store = FleetStore::Open("sqlite:" + std::string(path_));
    HostUsage usage;
    ASSERT_NO_THROW(usage = store->UsageOf("h"));  // throws on an unreadable or overlapping row
    size_t cpus = 0;
    for (const auto& [id, node] : usage.nodes) cpus += node.pinned_cpus.Count();
    EXPECT_EQ(cpus, store->ListClaims().size());
  }
}

TEST_F(ClaimStoreTest, CorruptFileIsAnInputErrorNamingThePath) {
  fs::create_directories(fs::path(path_).parent_path());
  {
    std::ofstream f(path_);
    for (int i = 0; i < 200; ++i) f << "this is not an SQLite database\n";
  }
  try {
    FleetStore::Open("sqlite:" + std::string(path_));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find(path_), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("move the file aside"), std::string::npos) << e.what();
  }
}

TEST_F(ClaimStoreTest, OtherProgramsDatabaseIsRefused) {
  fs::create_directories(fs::path(path_).parent_path());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE claims(x INTEGER)", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_THROW(FleetStore::Open("sqlite:" + std::string(path_)), InputError);
}

TEST_F(ClaimStoreTest, NewerSchemaIsRefused) {
  FleetStore::Open("sqlite:" + std::string(path_));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 9", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  try {
    FleetStore::Open("sqlite:" + std::string(path_));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.problem().find("newer accel"), std::string::npos) << e.what();
  }
}

TEST_F(ClaimStoreTest, UnreadableStoredPlacementNamesTheClaim) {
  auto store = FleetStore::Open("sqlite:" + std::string(path_));
  ASSERT_TRUE(store->ClaimOnHost("h", LowestFree).claimed());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO claims(id, host, flavor, created_at, placement) VALUES('c-bad000000000', 'h', 'f', "
                         "'2024-01-01T00:00:00Z', '{\"schema\": 1}')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  try {
    store->ListClaims();
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find("c-bad000000000"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("accel release c-bad000000000"), std::string::npos) << e.what();
  }
  EXPECT_THROW(store->ClaimOnHost("h", LowestFree), InputError);  // never place over unknown usage
  EXPECT_TRUE(store->Release("c-bad000000000"));
  EXPECT_EQ(store->ListClaims().size(), 1u);
}

TEST_F(ClaimStoreTest, UncreatableDirectoryIsAnInputError) {
  std::string file = (fs::path(dir_) / "plain-file").string();
  std::ofstream(file) << "x";
  EXPECT_THROW(FleetStore::Open("sqlite:" + std::string(file + "/sub/state.db")), InputError);
}

TEST(DefaultStatePath, FollowsAccelStateThenRootThenXdg) {
  const char* saved_state = getenv("ACCEL_STATE");
  const char* saved_xdg = getenv("XDG_STATE_HOME");
  std::string keep_state = saved_state ? saved_state : "";
  std::string keep_xdg = saved_xdg ? saved_xdg : "";

  setenv("ACCEL_STATE", "/tmp/x/state.db", 1);
  EXPECT_EQ(DefaultStatePath(), "/tmp/x/state.db");
  unsetenv("ACCEL_STATE");
  setenv("XDG_STATE_HOME", "/xdg", 1);
  if (geteuid() == 0) {
    EXPECT_EQ(DefaultStatePath(), "/var/lib/accel/state.db");
  } else {
    EXPECT_EQ(DefaultStatePath(), "/xdg/accel/state.db");
    unsetenv("XDG_STATE_HOME");
    EXPECT_NE(DefaultStatePath().find("/.local/state/accel/state.db"), std::string::npos);
  }

  if (saved_state) setenv("ACCEL_STATE", keep_state.c_str(), 1); else unsetenv("ACCEL_STATE");
  if (saved_xdg) setenv("XDG_STATE_HOME", keep_xdg.c_str(), 1); else unsetenv("XDG_STATE_HOME");
}

}  // namespace
}  // namespace accel::fleet
