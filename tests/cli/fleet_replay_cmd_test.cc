// End to end: `accel fleet replay` as a script runs it — the JSON document the issue names (131
// points per run and their mean), the assignments CSV, the table, several policies side by side,
// departures, and bad files refused with exit 2 naming file, line and column.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace accel::cli {
namespace fleet_replay_cmd_test {

namespace fs = std::filesystem;
using ::accel::cli::testing::FreshDir;
using ::accel::cli::testing::RunResult;
using ::accel::cli::testing::RunShellCapture;
using ::accel::cli::testing::WriteFile;

class FleetReplayCmd : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir(std::string("replay-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    nodes_ = (dir_ / "nodes.csv").string();
    pods_ = (dir_ / "pods.csv").string();
    WriteFile(nodes_,
              "sn,cpu_milli,memory_mib,gpu,model\n"
              "n0,32000,131072,4,T4\n"
              "n1,16000,65536,2,V100M16\n"
              "n2,96000,393216,8,G2\n");
    WriteFile(pods_,
              "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
              "p0,4000,8192,1,1000,,LS,Running,0,100,0\n"
              "p1,2000,4096,1,470,,LS,Running,10,50,10\n"
              "p2,2000,4096,1,470,,LS,Running,20,200,20\n"
              "p3,8000,16384,2,1000,T4|G2,LS,Running,30,90,30\n"
              "p4,6000,8192,0,0,,LS,Running,40,300,40\n"
              "p5,3000,4096,1,810,,LS,Running,50,60,50\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult Accel(const std::string& args) { return RunShellCapture(std::string(ACCEL_BINARY) + " " + args + " 2>&1"); }
  std::string Files() const { return "--nodes " + nodes_ + " --pods " + pods_; }

  fs::path dir_;
  std::string nodes_, pods_;
};

TEST_F(FleetReplayCmd, JsonHasTheDocumentedShape) {
  const RunResult r = RunShellCapture(std::string(ACCEL_BINARY) + " fleet replay " + Files() + " --seeds 42-44 -o json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["workload"], "pods.csv");
  EXPECT_EQ(j["strategy"], "accel");
  EXPECT_EQ(j["nodes"], 3);
  EXPECT_EQ(j["gpus"], 14);
  EXPECT_DOUBLE_EQ(j["tune"].get<double>(), 1.3);
  EXPECT_TRUE(j["seconds"].is_number());
  ASSERT_EQ(j["runs"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const nlohmann::json& run = j["runs"][i];
    EXPECT_EQ(run["seed"], 42 + i);
    EXPECT_GE(run["pods"].get<int>(), 6);
    EXPECT_LE(run["placed"].get<int>(), run["pods"].get<int>());
    ASSERT_EQ(run["allocated_pct"].size(), 131u);
    EXPECT_EQ(run["allocated_pct"][0], 0);
  }
  ASSERT_EQ(j["mean_allocated_pct"].size(), 131u);
}

TEST_F(FleetReplayCmd, AssignmentsCsvHasOneRowPerArrivingPod) {
  const std::string out = (dir_ / "a.csv").string();
  const RunResult r = Accel("fleet replay " + Files() + " --seeds 7 --strategy fgd --assignments " + out + " -o json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "seed,seq,pod,node,gpus,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec");
  int rows = 0, placed = 0;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    if (line.back() == ',') f.push_back("");
    ASSERT_EQ(f.size(), 10u) << line;
    EXPECT_EQ(f[0], "7");
    EXPECT_EQ(f[1], std::to_string(rows)) << "seq counts arrivals from 0";
    if (!f[3].empty()) ++placed;
    if (f[2] == "p3" && !f[3].empty()) EXPECT_EQ(f[4].find(":1000;"), 1u) << "two whole GPUs: " << line;
    if (f[2] == "p4") EXPECT_EQ(f[4], "") << "CPU-only pods get no GPUs";
    ++rows;
  }
  EXPECT_EQ(rows, j["runs"][0]["pods"].get<int>());
  EXPECT_EQ(placed, j["runs"][0]["placed"].get<int>());
}

TEST_F(FleetReplayCmd, TableShowsEveryPolicySideBySide) {
  const RunResult r = Accel("fleet replay " + Files() + " --seeds 1-2 --strategy all");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* p : {"accel", "fgd", "best-fit", "packing", "clustering", "dot-product", "random"})
    EXPECT_NE(r.output.find(std::string("\n") + p + " "), std::string::npos) << p << "\n" << r.output;
  EXPECT_NE(r.output.find("90% ARRIVED"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("UNALLOCATED@130%"), std::string::npos) << r.output;
  const RunResult json = Accel("fleet replay " + Files() + " --seeds 1 --strategy accel,fgd -o json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_EQ(nlohmann::json::parse(json.output).size(), 2u) << "several policies: an array of documents";
}

TEST_F(FleetReplayCmd, DeparturesFollowTheTraceTimes) {
  const RunResult r = Accel("fleet replay " + Files() + " --departures --seeds 1 --strategy accel,fgd");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("with departures"), std::string::npos) << r.output;
}

TEST_F(FleetReplayCmd, BadInputIsExitTwoWithFileLineAndColumn) {
  WriteFile((dir_ / "bad.csv").string(), "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,10,10,1,2000\n");
  RunResult r = Accel("fleet replay --nodes " + nodes_ + " --pods " + (dir_ / "bad.csv").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.csv:2:11"), std::string::npos) << r.output;
  r = Accel("fleet replay " + Files() + " --strategy bogus");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("best-fit"), std::string::npos) << "names the policies: " << r.output;
  r = Accel("fleet replay " + Files() + " --seeds 9-3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = Accel("fleet replay --nodes " + (dir_ / "missing.csv").string() + " --pods " + pods_);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("missing.csv"), std::string::npos) << r.output;
  WriteFile((dir_ / "short.csv").string(), "name,cpu_milli,memory_mib,num_gpu,gpu_milli\nx,10,10,1,200\n");
  r = Accel("fleet replay --nodes " + nodes_ + " --pods " + (dir_ / "short.csv").string() + " --departures");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("creation"), std::string::npos) << r.output;
}

}  // namespace fleet_replay_cmd_test
}  // namespace accel::cli
