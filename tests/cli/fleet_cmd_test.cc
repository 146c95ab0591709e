// End to end: `accel fleet host|place|capacity|claims|release|audit|store` run as a user runs
// them, against a SQLite store in a temporary directory: exit codes as each --help states, JSON
// documents that parse, bad input refused with exit 2 and nothing written, and one store shared
// with `accel place --claim`.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "common/structured_file.h"
#include "fleet/fleet_store.h"

namespace accel::cli {
namespace fleet_cmd_test {

namespace fs = std::filesystem;
using ::accel::cli::testing::FreshDir;
using ::accel::cli::testing::RunResult;
using ::accel::cli::testing::RunShellCapture;
using ::accel::cli::testing::Src;
using ::accel::cli::testing::WriteFile;

class FleetCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = FreshDir(std::string("fleet-") + info->name());
    db_ = (dir_ / "fleet.db").string();
    store_ = "--store sqlite:" + db_;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `accel <args>`; the defaults point into the test's directory, so nothing outside it is
  // ever read or written even when a command ignored --store.
  RunResult Accel(const std::string& args, bool merge_stderr = true) {
    const std::string env = "ACCEL_FLEET_STORE=sqlite:" + (dir_ / "default-fleet.db").string() +
                            " ACCEL_STATE=" + (dir_ / "default-state.db").string() + " HOME=" + dir_.string() + " ";
    return RunShellCapture(env + std::string(ACCEL_BINARY) + " " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null"));
  }

  // `accel ...` that must exit `code` and print JSON on stdout.
  nlohmann::json Json(const std::string& args, int code = 0) {
    RunResult r = Accel(args, false);
    EXPECT_EQ(r.exit_code, code) << args << "\n" << r.output;
    try {
      return nlohmann::json::parse(r.output);
    } catch (const nlohmann::json::exception& e) {
      ADD_FAILURE() << args << ": not JSON (" << e.what() << "):\n" << r.output;
      return nlohmann::json::object();
    }
  }

  void AddHost(const std::string& name, const std::string& fixture, const std::string& extra = "") {
    RunResult r = Accel("fleet host add " + store_ + " --topology " + Src("fixtures/hosts/" + fixture + ".json") +
                        (name.empty() ? "" : " --name " + name) + " " + extra);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  std::string Flavor(const std::string& name) const {
    return "--flavor " + Src("examples/flavors/" + name) + " --aliases " + Src("examples/flavors/aliases.json");
  }

  // A flavor file of `gpus` H100s on one guest cell.
  std::string H100Flavor(int gpus, int cells = 1) {
    const fs::path p = dir_ / ("h100x" + std::to_string(gpus) + "-" + std::to_string(cells) + ".yaml");
    WriteFile(p, "name: h100x" + std::to_string(gpus) + "\nvcpus: 8\nram: 16384\nextra_specs:\n"
                 "  hw:cpu_policy: dedicated\n  hw:numa_nodes: " + std::to_string(cells) + "\n"
                 "  pci_passthrough:alias: h100:" + std::to_string(gpus) + "\n");
    return "--flavor " + p.string() + " --aliases " + Src("examples/flavors/aliases.json");
  }

  std::set<std::string> HostNames() {
    std::set<std::string> names;
    const nlohmann::json list = Json("fleet host list " + store_ + " -o json");
    for (const auto& h : list["hosts"]) names.insert(h["name"].get<std::string>());
    return names;
  }

  size_t ClaimCount(const std::string& store) { return Json("fleet claims " + store + " -o json")["claims"].size(); }

  fs::path dir_;
  std::string db_, store_;
};

TEST_F(FleetCmdTest, HostsAreAddedListedShownUpdatedAndRemoved) {
  RunResult r = Accel("fleet host add " + store_ + " --topology " + Src("fixtures/hosts/hgx-h100.json") +
                      " --name gpu-001 --label az=a --label gpu=h100");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("added host gpu-001"), std::string::npos) << r.output;
  nlohmann::json added = Json("fleet host add " + store_ + " --topology " + Src("fixtures/hosts/devbox.json") +
                              " --name gpu-002 -o json");
  EXPECT_EQ(added["name"], "gpu-002");
  EXPECT_EQ(added["accelerators"]["total"], 1);
  // Without --name: the topology's hostname.
  AddHost("", "hgx-h200");
  EXPECT_EQ(HostNames(), (std::set<std::string>{"gpu-001", "gpu-002", "hgx-h200"}));

  nlohmann::json list = Json("fleet host list " + store_ + " -o json");
  EXPECT_EQ(list["schema"], "accel.fleet-hosts/v1");
  ASSERT_EQ(list["hosts"].size(), 3u);
  const nlohmann::json& h = list["hosts"][0];
  EXPECT_EQ(h["name"], "gpu-001");
  EXPECT_EQ(h["state"], "enabled");
  EXPECT_EQ(h["labels"], (nlohmann::json{{"az", "a"}, {"gpu", "h100"}}));
  EXPECT_EQ(h["accelerators"], (nlohmann::json{{"free", 8}, {"total", 8}}));
  EXPECT_EQ(h["generation"], 0);
  nlohmann::json where = Json("fleet host list " + store_ + " --where gpu=h100 -o json");
  ASSERT_EQ(where["hosts"].size(), 1u);
  EXPECT_EQ(where["hosts"][0]["name"], "gpu-001");
  r = Accel("fleet host list " + store_);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("NAME"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("az=a,gpu=h100"), std::string::npos) << r.output;

  EXPECT_EQ(Json("fleet host show " + store_ + " gpu-001 -o json")["name"], "gpu-001");
  r = Accel("fleet host show " + store_ + " --name gpu-001");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("host gpu-001"), std::string::npos) << r.output;
  EXPECT_EQ(Accel("fleet host show " + store_ + " gpu-404").exit_code, 2);  // --help: 2 no such host

  nlohmann::json updated = Json("fleet host update " + store_ +
                                " --name gpu-001 --state maintenance --label az=b --remove-label gpu -o json");
  EXPECT_EQ(updated["state"], "maintenance");
  EXPECT_EQ(updated["labels"], (nlohmann::json{{"az", "b"}}));
  EXPECT_EQ(updated["generation"], 1);
  r = Accel("fleet host update " + store_ + " --name gpu-001 --state enabled");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("generation 2"), std::string::npos) << r.output;
  EXPECT_EQ(Accel("fleet host update " + store_ + " --name gpu-404 --state disabled").exit_code, 2);
  r = Accel("fleet host update " + store_ + " --name gpu-001 --state drained");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("drained"), std::string::npos) << r.output;

  r = Accel("fleet host remove " + store_ + " gpu-002");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Accel("fleet host remove " + store_ + " gpu-002").exit_code, 1);  // --help: 1 no such host
  EXPECT_EQ(HostNames(), (std::set<std::string>{"gpu-001", "hgx-h200"}));
}

TEST_F(FleetCmdTest, AddingAHostTwiceExits2AndKeepsTheFirst) {
  AddHost("gpu-001", "hgx-h100", "--label az=a");
  RunResult r = Accel("fleet host add " + store_ + " --topology " + Src("fixtures/hosts/devbox.json") +
                      " --name gpu-001 --label az=b");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("already in the fleet"), std::string::npos) << r.output;
  nlohmann::json h = Json("fleet host show " + store_ + " gpu-001 -o json");
  EXPECT_EQ(h["labels"], (nlohmann::json{{"az", "a"}}));
  EXPECT_EQ(h["accelerators"]["total"], 8);
}

TEST_F(FleetCmdTest, PolicyFileIsReadAndAMistakeIsRefusedWithTheClosestKey) {
  WriteFile(dir_ / "policy.yaml", "cpu_dedicated_set: \"2-55,58-111\"\nreserved_host_memory_mb: 4096\n");
  AddHost("gpu-001", "hgx-h100", "--policy " + (dir_ / "policy.yaml").string());
  nlohmann::json h = Json("fleet host show " + store_ + " gpu-001 -o json");
  EXPECT_EQ(h["policy"]["cpu_dedicated_set"], "2-55,58-111");
  EXPECT_EQ(h["pinnable_cpus"]["total"], 108);

  WriteFile(dir_ / "typo.yaml", "cpu_dedicated_sets: \"2-55\"\n");
  RunResult r = Accel("fleet host add " + store_ + " --topology " + Src("fixtures/hosts/hgx-h100.json") +
                      " --name gpu-002 --policy " + (dir_ / "typo.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("did you mean cpu_dedicated_set?"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("typo.yaml"), std::string::npos) << r.output;
  EXPECT_EQ(HostNames(), std::set<std::string>{"gpu-001"});
}

TEST_F(FleetCmdTest, BadLabelExits2AndWritesNothing) {
  AddHost("gpu-001", "hgx-h100", "--label az=a");
  for (const std::string& bad : std::vector<std::string>{"'bad label'", "=x", "az=-a", "Bad.Prefix/x=y"}) {
    RunResult r = Accel("fleet host add " + store_ + " --topology " + Src("fixtures/hosts/hgx-h100.json") +
                        " --name gpu-002 --label " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.output;
    EXPECT_NE(r.output.find("--label"), std::string::npos) << r.output;
    r = Accel("fleet host update " + store_ + " --name gpu-001 --label " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.output;
  }
  EXPECT_EQ(HostNames(), std::set<std::string>{"gpu-001"});
  nlohmann::json h = Json("fleet host show " + store_ + " gpu-001 -o json");
  EXPECT_EQ(h["labels"], (nlohmann::json{{"az", "a"}}));
  EXPECT_EQ(h["generation"], 0);
  RunResult r = Accel("fleet host list " + store_ + " --where 'gpu=='");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--where"), std::string::npos) << r.output;
}

// Was a bug, fixed (issue 13): `accel fleet host add` opens (and so creates) the store
// before it reads --label/--policy/--topology, so a typo in a flag leaves a new empty database
// behind — at the default path when --store is not given. The issue asks for "exit 2, nothing
// written". Fix: in src/cli/fleet_cmd.cc HostAdd (and HostUpdate), build the HostSpec with
// SpecFrom(o, ...) before FleetStore::Open.
TEST_F(FleetCmdTest, BadLabelOnANewStoreCreatesNoStoreFile) {
  const std::string fresh = (dir_ / "new" / "fleet.db").string();
  RunResult r = Accel("fleet host add --store sqlite:" + fresh + " --topology " + Src("fixtures/hosts/hgx-h100.json") +
                      " --name gpu-001 --label 'bad label'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(fs::exists(fresh)) << "a refused `fleet host add` created the store " << fresh;
}

TEST_F(FleetCmdTest, BadStoreUrlExits2) {
  for (const std::string& cmd : {std::string("fleet host list"), std::string("fleet claims"), std::string("fleet audit"),
                                 "fleet place " + Flavor("gpu-1g.yaml"), "fleet capacity " + Flavor("gpu-1g.yaml")}) {
    RunResult r = Accel(cmd + " --store mysql://root@db/fleet");
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("--store"), std::string::npos) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("sqlite:PATH"), std::string::npos) << cmd << "\n" << r.output;
  }
}

TEST_F(FleetCmdTest, PlaceClaimReleaseAndAudit) {
  AddHost("gpu-001", "hgx-h100", "--label az=a");
  AddHost("gpu-002", "hgx-h100", "--label az=b");
  AddHost("dev-001", "devbox");

  // Without --claim: decided, nothing stored.
  nlohmann::json dry = Json("fleet place " + store_ + " " + Flavor("gpu-1g.yaml") + " -o json");
  EXPECT_EQ(dry["placed"], true);
  EXPECT_FALSE(dry["instances"][0].contains("claim"));
  EXPECT_EQ(ClaimCount(store_), 0u);

  nlohmann::json doc = Json("fleet place " + store_ + " " + Flavor("gpu-1g.yaml") + " --where az=b --claim -o json");
  EXPECT_EQ(doc["schema"], "accel.fleet-placement/v1");
  EXPECT_EQ(doc["flavor"], "gpu-1g");
  EXPECT_EQ(doc["placed"], true);
  EXPECT_EQ(doc["retries"], 0);
  ASSERT_EQ(doc["instances"].size(), 1u);
  const nlohmann::json& i = doc["instances"][0];
  EXPECT_EQ(i["host"], "gpu-002");
  const std::string id = i["claim"].get<std::string>();
  EXPECT_EQ(id.rfind("c-", 0), 0u) << id;
  EXPECT_EQ(i["placement"]["schema"], "accel.placement/v1");
  EXPECT_EQ(i["placement"]["host"], "gpu-002");
  EXPECT_EQ(i["placement"]["devices"].size(), 1u);

  nlohmann::json claims = Json("fleet claims " + store_ + " -o json");
  ASSERT_EQ(claims["claims"].size(), 1u);
  EXPECT_EQ(claims["claims"][0]["id"], id);
  EXPECT_EQ(claims["claims"][0]["host"], "gpu-002");
  EXPECT_EQ(Json("fleet claims " + store_ + " --host gpu-001 -o json")["claims"].size(), 0u);
  EXPECT_EQ(Json("fleet host show " + store_ + " gpu-002 -o json")["accelerators"]["free"], 7);

  RunResult audit = Accel("fleet audit " + store_);
  EXPECT_EQ(audit.exit_code, 0) << audit.output;
  EXPECT_NE(audit.output.find("consistent"), std::string::npos) << audit.output;

  // --subset-size picks among the best hosts by the seed's order; it needs a seed.
  RunResult no_seed = Accel("fleet place " + store_ + " " + Flavor("gpu-1g.yaml") + " --subset-size 2");
  EXPECT_EQ(no_seed.exit_code, 2) << no_seed.output;
  EXPECT_NE(no_seed.output.find("--seed"), std::string::npos) << no_seed.output;
  std::set<std::string> seeded_hosts;
  for (const char* seed : {"a", "b", "c", "d", "e", "f"})
    seeded_hosts.insert(Json("fleet place " + store_ + " " + Flavor("gpu-1g.yaml") + " --subset-size 3 --seed " + seed +
                             " -o json")["instances"][0]["host"].get<std::string>());
  EXPECT_GT(seeded_hosts.size(), 1u) << "six seeds over three fitting hosts all chose one";

  // Text output names the host and the claim.
  RunResult text = Accel("fleet place " + store_ + " " + Flavor("gpu-1g.yaml") + " --claim");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("instance 1 of 1: host gpu-002"), std::string::npos) << text.output;  // pack
  EXPECT_EQ(ClaimCount(store_), 2u);

  EXPECT_EQ(Accel("fleet release " + store_ + " " + id).exit_code, 0);
  EXPECT_EQ(Accel("fleet release " + store_ + " " + id).exit_code, 1);  // --help: 1 not found
  EXPECT_EQ(ClaimCount(store_), 1u);

  // A host with a claim is removed only with --force (--help: 2 it has claims).
  const std::string other = Json("fleet claims " + store_ + " -o json")["claims"][0]["host"].get<std::string>();
  RunResult rm = Accel("fleet host remove " + store_ + " " + other);
  EXPECT_EQ(rm.exit_code, 2) << rm.output;
  EXPECT_NE(rm.output.find("--force"), std::string::npos) << rm.output;
  EXPECT_EQ(Accel("fleet host remove " + store_ + " " + other + " --force").exit_code, 0);
  EXPECT_EQ(ClaimCount(store_), 0u);
  EXPECT_EQ(Accel("fleet audit " + store_).exit_code, 0);
}

TEST_F(FleetCmdTest, ImpossibleFlavorExits1WithWhyNotAndClaimsNothing) {
  AddHost("gpu-001", "hgx-h100");
  AddHost("gpu-002", "hgx-h100", "--state disabled");
  AddHost("dev-001", "devbox");
  // Eight H100s on one guest cell: four per node and numa_policy required.
  nlohmann::json doc = Json("fleet place " + store_ + " " + H100Flavor(8) + " --claim -o json", 1);
  EXPECT_EQ(doc["placed"], false);
  EXPECT_TRUE(doc["instances"].empty());
  ASSERT_TRUE(doc["why_not"].is_array());
  int hosts = 0;
  std::set<std::string> causes;
  for (const auto& w : doc["why_not"]) {
    hosts += w["hosts"].get<int>();
    causes.insert(w["cause"].get<std::string>());
  }
  EXPECT_EQ(hosts, 3) << doc.dump(2);
  EXPECT_TRUE(causes.count("disabled")) << doc.dump(2);
  EXPECT_EQ(ClaimCount(store_), 0u);
  RunResult text = Accel("fleet place " + store_ + " " + H100Flavor(8));
  EXPECT_EQ(text.exit_code, 1) << text.output;
  EXPECT_NE(text.output.find("1 host: disabled"), std::string::npos) << text.output;
  // Bad input is 2, not 1.
  EXPECT_EQ(Accel("fleet place " + store_ + " --flavor " + (dir_ / "missing.yaml").string()).exit_code, 2);
}

TEST_F(FleetCmdTest, CountWithDifferentHostsNeverRepeatsAHostAndIsAllOrNothing) {
  AddHost("gpu-001", "hgx-h100");
  AddHost("gpu-002", "hgx-h100");
  AddHost("gpu-003", "hgx-h100");
  nlohmann::json doc = Json("fleet place " + store_ + " " + H100Flavor(1) + " --count 3 --different-hosts --claim -o json");
  ASSERT_EQ(doc["instances"].size(), 3u);
  std::set<std::string> hosts, ids;
  for (const auto& i : doc["instances"]) {
    hosts.insert(i["host"].get<std::string>());
    ids.insert(i["claim"].get<std::string>());
  }
  EXPECT_EQ(hosts.size(), 3u) << doc.dump(2);
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(ClaimCount(store_), 3u);
  // Without --different-hosts pack puts them together.
  doc = Json("fleet place " + store_ + " " + H100Flavor(1) + " --count 2 -o json");
  EXPECT_EQ(doc["instances"][0]["host"], doc["instances"][1]["host"]);
  // Four on three hosts cannot be: exit 1, nothing claimed.
  doc = Json("fleet place " + store_ + " " + H100Flavor(1) + " --count 4 --different-hosts --claim -o json", 1);
  EXPECT_EQ(doc["placed"], false);
  EXPECT_TRUE(doc["instances"].empty());
  EXPECT_EQ(ClaimCount(store_), 3u);
  EXPECT_EQ(Accel("fleet audit " + store_).exit_code, 0);
}

TEST_F(FleetCmdTest, CapacityRowsCarryFlavorAndCountAndFollowClaims) {
  AddHost("gpu-001", "hgx-h100", "--label az=a");
  AddHost("gpu-002", "hgx-h100", "--label az=b");
  AddHost("dev-001", "devbox", "--label az=b");
  const std::string flavors = "--flavor " + Src("examples/flavors/gpu-1g.yaml") + " --flavor " +
                              Src("examples/flavors/gpu-4-2cell.yaml") + " --aliases " + Src("examples/flavors/aliases.json");
  nlohmann::json doc = Json("fleet capacity " + store_ + " " + flavors + " --group-by az -o json");
  EXPECT_EQ(doc["schema"], "accel.fleet-capacity/v1");
  EXPECT_EQ(doc["hosts"], 3);
  ASSERT_EQ(doc["flavors"].size(), 2u);
  EXPECT_EQ(doc["flavors"][0]["flavor"], "gpu-1g");
  EXPECT_EQ(doc["flavors"][1]["flavor"], "gpu-4-2cell");
  const int64_t before = doc["flavors"][0]["count"].get<int64_t>();
  EXPECT_EQ(before, 16);  // four per node (a GPU each), two nodes, two HGX hosts
  EXPECT_EQ(doc["flavors"][1]["count"], 4);
  int64_t sum = 0;
  for (const auto& [group, n] : doc["flavors"][0]["by_az"].items()) sum += n.get<int64_t>();
  EXPECT_EQ(sum, before) << doc.dump(2);
  EXPECT_EQ(doc["flavors"][0]["by_az"]["a"], 8);
  // The devbox's RTX 4090 is free and no flavor asks for one: not wanted by the mix, counted
  // apart from what fragmentation strands.
  EXPECT_EQ(doc["stranded_accelerators"], 0) << doc.dump(2);
  EXPECT_EQ(doc["unwanted_accelerators"], 1) << doc.dump(2);
  ASSERT_EQ(doc["stranded"].size(), 1u);
  EXPECT_EQ(doc["stranded"][0]["host"], "dev-001");
  EXPECT_EQ(doc["stranded"][0]["unwanted"].size(), 1u);
  EXPECT_FALSE(doc["stranded"][0]["reason"].get<std::string>().empty());
  EXPECT_DOUBLE_EQ(doc["fragmentation"]["unwanted_gpus"].get<double>(), 1.0) << doc.dump(2);
  EXPECT_GT(doc["fragmentation"]["free_gpus"].get<double>(), 16.0) << doc.dump(2);

  ASSERT_EQ(Accel("fleet place " + store_ + " " + Flavor("gpu-1g.yaml") + " --claim").exit_code, 0);
  doc = Json("fleet capacity " + store_ + " " + flavors + " -o json");
  EXPECT_EQ(doc["flavors"][0]["count"], before - 1);
  EXPECT_EQ(doc["flavors"][1]["count"], 3);
  RunResult table = Accel("fleet capacity " + store_ + " " + flavors + " --where az=a");
  EXPECT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("MORE INSTANCES"), std::string::npos) << table.output;
  EXPECT_NE(table.output.find("1 hosts counted"), std::string::npos) << table.output;
}

TEST_F(FleetCmdTest, AccelPlaceClaimsLandInTheSameStore) {
  const std::string state = (dir_ / "state.db").string();
  nlohmann::json placed = Json("place --topology " + Src("fixtures/hosts/hgx-h100.json") + " " + Flavor("gpu-1g.yaml") +
                               " --claim --state " + state + " -o json");
  ASSERT_TRUE(placed.contains("claim")) << placed.dump(2);
  const std::string id = placed["claim"].get<std::string>();
  const std::string fleet_store = "--store sqlite:" + state;
  nlohmann::json claims = Json("fleet claims " + fleet_store + " -o json");
  ASSERT_EQ(claims["claims"].size(), 1u) << placed.dump(2);
  EXPECT_EQ(claims["claims"][0]["host"], "hgx-h100");
  EXPECT_EQ(claims["claims"][0]["id"], id);
  // The same file is a fleet store: the host joins the inventory and its claim counts.
  RunResult add = Accel("fleet host add " + fleet_store + " --topology " + Src("fixtures/hosts/hgx-h100.json"));
  ASSERT_EQ(add.exit_code, 0) << add.output;
  nlohmann::json h = Json("fleet host show " + fleet_store + " hgx-h100 -o json");
  EXPECT_EQ(h["accelerators"]["free"], 7);
  EXPECT_EQ(h["claims"].size(), 1u);
  EXPECT_EQ(Accel("fleet audit " + fleet_store).exit_code, 0);
  // A host of the inventory is placed with its stored policy: without policy flags the stored
  // cpu_dedicated_set holds; flags that contradict it, or other hardware, are refused.
  WriteFile(dir_ / "policy.yaml", "cpu_dedicated_set: \"56-111,168-223\"\n");  // node 1 only
  ASSERT_EQ(Accel("fleet host update " + fleet_store + " --name hgx-h100 --policy " + (dir_ / "policy.yaml").string())
                .exit_code,
            0);
  nlohmann::json stored = Json("place --topology " + Src("fixtures/hosts/hgx-h100.json") + " " + Flavor("gpu-1g.yaml") +
                               " --claim --state " + state + " -o json");
  ASSERT_TRUE(stored.contains("claim")) << stored.dump(2);
  for (const auto& cell : stored["placement"]["cells"])
    for (const auto& [vcpu, host_cpu] : cell["pinning"].items()) {
      const int cpu = host_cpu.get<int>();
      EXPECT_TRUE((cpu >= 56 && cpu <= 111) || cpu >= 168) << "vCPU " << vcpu << " pinned outside the stored "
                                                           << "cpu_dedicated_set: " << stored.dump(2);
    }
  RunResult contradict = Accel("place --topology " + Src("fixtures/hosts/hgx-h100.json") + " " + Flavor("gpu-1g.yaml") +
                               " --cpu-dedicated-set 2-20 --claim --state " + state);
  EXPECT_EQ(contradict.exit_code, 2) << contradict.output;
  EXPECT_NE(contradict.output.find("fleet host update"), std::string::npos) << contradict.output;
  nlohmann::json h200 = nlohmann::json::parse(ReadWholeFile(Src("fixtures/hosts/hgx-h200.json")));
  h200["hostname"] = "hgx-h100";
  WriteFile(dir_ / "renamed-h200.json", h200.dump());
  RunResult other_hw = Accel("place --topology " + (dir_ / "renamed-h200.json").string() + " " +
                             Flavor("gpu-1g.yaml") + " --claim --state " + state);
  EXPECT_EQ(other_hw.exit_code, 2) << other_hw.output;
  ASSERT_EQ(Accel("fleet release " + fleet_store + " " + stored["claim"].get<std::string>()).exit_code, 0);
  // And `accel claims --state` sees a fleet claim.
  ASSERT_EQ(Accel("fleet place " + fleet_store + " " + Flavor("gpu-1g.yaml") + " --claim").exit_code, 0);
  RunResult list = Accel("claims --state " + state + " -o json", false);
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(list.output)["claims"].size(), 2u) << list.output;
}

TEST_F(FleetCmdTest, StoreMigrateAndStatus) {
  RunResult r = Accel("fleet store status " + store_);
  EXPECT_EQ(r.exit_code, 1) << r.output;  // --help: 1 needs migrate (an empty database)
  r = Accel("fleet store migrate " + store_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("schema 0 -> " + std::to_string(fleet::FleetStore::kSchemaVersion)), std::string::npos) << r.output;
  r = Accel("fleet store migrate " + store_);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("already current"), std::string::npos) << r.output;
  EXPECT_EQ(Accel("fleet store status " + store_).exit_code, 0);
}

}  // namespace
}  // namespace accel::cli
