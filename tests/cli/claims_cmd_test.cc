// End to end: `accel claims` and `accel release` against a claim database made by FleetStore.
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "fleet/fleet_store.h"

namespace accel::cli {
namespace claims_cmd_test {

namespace fs = std::filesystem;
using fleet::FleetStore;
using placement::HostUsage;
using placement::Placement;

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

// Runs the accel binary with `args`; `env` ("NAME=value ...") is prefixed to the command line.
CommandResult Accel(const std::string& args, const std::string& env = "") {
  std::string cmd = env + " " + std::string(ACCEL_BINARY) + " " + args + " 2>&1";
  CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class ClaimsCmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = fs::path(::testing::TempDir()) / "claims-cli-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/state.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Claims CPUs 4-5 (+ siblings 116-117) on node 0 and GPU 0000:18:00.0 on `host`.
  std::string ClaimGpuGuest(const std::string& host) {
    auto store = FleetStore::Open("sqlite:" + path_);
    auto r = store->ClaimOnHost(host, [&](const HostUsage&) {
      Placement p;
      p.host = host;
      p.flavor = "gpu-1g";
      placement::CellPlacement c;
      c.pinning = {{0, 4}, {1, 5}};
      c.consumed_cpus = {4, 5, 116, 117};
      c.memory_mib = 8192;
      c.page_size_kib = 1048576;
      c.pages = 8;
      p.cells = {c};
      p.devices = {{"h100", "0000:18:00.0", 0x10de, 0x2330, 0, 0}};
      return std::optional<Placement>(p);
    });
    return r.claim->id;
  }

  std::string dir_;
  std::string path_;
};

TEST_F(ClaimsCmdTest, TableListsEachClaim) {
  std::string a = ClaimGpuGuest("hgx");
  std::string b = ClaimGpuGuest("other");
  CommandResult r = Accel("claims --state " + path_);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ID"), std::string::npos);
  EXPECT_NE(r.out.find(a), std::string::npos);
  EXPECT_NE(r.out.find(b), std::string::npos);
  EXPECT_NE(r.out.find("4-5,116-117"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0000:18:00.0"), std::string::npos) << r.out;

  r = Accel("claims --state " + path_ + " --host hgx");
  EXPECT_NE(r.out.find(a), std::string::npos);
  EXPECT_EQ(r.out.find(b), std::string::npos);
}

TEST_F(ClaimsCmdTest, JsonAndYamlCarryThePlacement) {
  std::string id = ClaimGpuGuest("hgx");
  CommandResult r = Accel("claims --state " + path_ + " -o json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "accel.claims/v1");
  ASSERT_EQ(j["claims"].size(), 1u);
  EXPECT_EQ(j["claims"][0]["id"], id);
  EXPECT_EQ(j["claims"][0]["placement"]["schema"], "accel.placement/v1");
  EXPECT_EQ(j["claims"][0]["placement"]["cells"][0]["pinning"]["1"], 5);

  r = Accel("claims --state " + path_ + " -o yaml");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  YAML::Node y = YAML::Load(r.out);
  EXPECT_EQ(y["claims"][0]["id"].as<std::string>(), id);
  EXPECT_EQ(y["claims"][0]["placement"]["devices"][0]["address"].as<std::string>(),
            "0000:18:00.0");
}

TEST_F(ClaimsCmdTest, ReleaseDropsTheClaimOnce) {
  std::string id = ClaimGpuGuest("hgx");
  CommandResult r = Accel("release " + id + " --state " + path_);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "released " + id + "\n");
  r = Accel("release " + id + " --state " + path_);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no claim " + id), std::string::npos) << r.out;
  EXPECT_TRUE(FleetStore::Open("sqlite:" + path_)->ListClaims().empty());
}

TEST_F(ClaimsCmdTest, MissingDatabaseListsNothingAndCreatesNothing) {
  CommandResult r = Accel("claims --state " + dir_ + "/none/state.db -o json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["claims"].size(), 0u);
  EXPECT_FALSE(fs::exists(dir_ + "/none"));
  EXPECT_EQ(Accel("release c-000000000000 --state " + dir_ + "/none/state.db").exit_code, 1);
}

TEST_F(ClaimsCmdTest, CorruptDatabaseExitsTwoWithOneLine) {
  std::ofstream(path_) << std::string(4096, 'x');
  CommandResult r = Accel("claims --state " + path_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out.rfind("accel claims: " + path_ + ": ", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

TEST_F(ClaimsCmdTest, AccelStateEnvironmentIsTheDefault) {
  std::string id = ClaimGpuGuest("hgx");
  CommandResult r = Accel("claims", "ACCEL_STATE=" + path_);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(id), std::string::npos) << r.out;
}

}  // namespace
}  // namespace accel::cli
