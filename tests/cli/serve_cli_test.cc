// `accel serve` as an operator runs it: --help, --once on the fake NVML, bad configs (exit 2,
// nothing registered), and SIGHUP / SIGTERM on a running agent.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/cli_test_util.h"
#include "support/child_process.h"

namespace accel::cli::testing {
namespace serve_cli_test {

class ServeCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshDir("serve"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// Writes agent.yaml (`extra` appended) for the fake NVML's mixed H100 node, port 0, labels
  /// into dir_/features.d, no kubelet.
  std::string Agent(const std::string& extra = "") {
    std::filesystem::create_directories(dir_ / "features.d");
    std::string path = (dir_ / "agent.yaml").string();
    // `extra` replaces a base line of the same top-level key: agent.yaml refuses a key given twice.
    const std::string base[] = {"vendors: [nvidia]\n", "topology: " + Src("fixtures/hosts/hgx-h100.json") + "\n",
                                "exporter: {listen: '127.0.0.1:0', collectInterval: 200ms}\n",
                                "labels: {file: " + (dir_ / "features.d/accel").string() + "}\n"};
    std::ofstream out(path);
    for (const std::string& line : base)
      if (extra.rfind(line.substr(0, line.find(':') + 1), 0) != 0) out << line;
    out << extra;
    return path;
  }
  static std::string Env() {
    return "FAKE_NVML_CONFIG=" + Src("tests/fakes/nvml/examples/h100x8-mig.json") + " ";
  }
  static std::string Lib() { return std::string(" --nvml-library ") + ACCEL_FAKE_NVML; }

  std::filesystem::path dir_;
};

TEST_F(ServeCli, HelpShowsFlagsAndExamples) {
  RunResult r = RunAccel("serve --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* text : {"--config", "--once", "--nvml-library", "SIGHUP", "Examples"}) {
    EXPECT_NE(r.output.find(text), std::string::npos) << text;
  }
}

TEST_F(ServeCli, OncePrintsWhatTheNodeServes) {
  std::string config = Agent(
      "devicePlugin:\n  config:\n    flags: {migStrategy: mixed}\n"
      "    pluginDir: " + (dir_ / "no-kubelet").string() + "\n");
  RunResult r = RunShellCapture(Env() + ACCEL_BINARY + " serve --once --config " + config + Lib() + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("devices: 36"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  nvidia.com/gpu: 4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("  nvidia.com/mig-1g.10gb: 28"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nvidia.com/mig.strategy=mixed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("exporter: port "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("device plugin: off"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("metrics: 0 lines"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir_ / "features.d/accel"));
}

TEST_F(ServeCli, BadConfigExitsTwoAndRegistersNothing) {
  std::filesystem::create_directories(dir_ / "dp");
  struct Case {
    std::string yaml, message;
  };
  const Case cases[] = {
      {"exporter: {listn: ':1'}\n", "exporter.listn: unknown key"},
      {"vendors: [intel]\n", "unknown vendor 'intel'"},
      {"labels: {interval: soon}\n", "labels.interval"},
      {"devicePlugin: {config: {flags: {migStrategy: single}, pluginDir: " +
           (dir_ / "dp").string() + "}}\n",
       "single"},
  };
  for (const Case& c : cases) {
    std::string config = Agent(c.yaml);
    RunResult r = RunShellCapture(Env() + ACCEL_BINARY + " serve --once --config " + config + Lib() + " 2>&1");
    EXPECT_EQ(r.exit_code, 2) << c.yaml << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.yaml << " -> " << r.output;
    EXPECT_TRUE(std::filesystem::is_empty(dir_ / "dp"));
  }
  RunResult missing = RunAccel("serve --once --config " + (dir_ / "nope.yaml").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("nope.yaml"), std::string::npos) << missing.output;
}

TEST_F(ServeCli, SighupReloadsAndSigtermStops) {
  std::string config = Agent();
  test_support::ChildProcess agent(
      {ACCEL_BINARY, "serve", "--config", config, "--nvml-library", ACCEL_FAKE_NVML},
      {{"FAKE_NVML_CONFIG", Src("tests/fakes/nvml/examples/h100x8-mig.json")}},
      (dir_ / "log").string());
  auto logged = [&](const std::string& text) {
    return test_support::WaitUntil(
        // Generous: the wait ends as soon as the line is there.
        [&] { return agent.Log().find(text) != std::string::npos; }, std::chrono::seconds(60));
  };
  ASSERT_TRUE(logged("started:")) << agent.Log();
  std::ofstream(config, std::ios::app) << "bogus: 1\n";
  kill(agent.pid(), SIGHUP);
  EXPECT_TRUE(logged("reload failed, keeping the previous config")) << agent.Log();
  Agent();  // a good file again
  kill(agent.pid(), SIGHUP);
  EXPECT_TRUE(logged("reloaded")) << agent.Log();
  EXPECT_TRUE(agent.Running());
  EXPECT_EQ(agent.Stop(SIGTERM, std::chrono::seconds(30)), 0) << agent.Log();
  EXPECT_NE(agent.Log().find("SIGTERM, stopping"), std::string::npos);
}

}  // namespace
}  // namespace accel::cli::testing
