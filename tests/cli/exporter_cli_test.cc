// `accel exporter` as a user runs it: flags, bad input (exit 2 with a clear message), --once on
// the fake NVML, a lost GPU and a hung vendor call while serving, and a clean SIGTERM.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "cli/cli_test_util.h"
#include "support/child_process.h"
#include "support/fake_nvml_config.h"
#include "support/shared_fixture.h"

namespace accel::cli::testing {
namespace exporter_cli_test {

using nlohmann::json;

class ExporterCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshDir("exporter"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// Writes a fake NVML config of `gpus` and returns the env prefix for a shell command.
  std::string Config(const json& gpus) {
    std::string path = (dir_ / "nvml.json").string();
    std::ofstream(path) << test_support::FakeNvmlConfig(gpus).dump();
    return "FAKE_NVML_CONFIG=" + path + " ";
  }

  static std::string Fake() { return std::string(" --vendors nvidia --nvml-library ") + ACCEL_FAKE_NVML; }

  static json TwoGpus() {
    return json::array({test_support::FakeH100(0, test_support::kHgxH100Gpus[0]),
                        test_support::FakeH100(1, test_support::kHgxH100Gpus[1])});
  }

  std::filesystem::path dir_;
};

TEST_F(ExporterCli, HelpTeachesTheFlags) {
  RunResult r = RunAccel("exporter --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--web.listen-address", "--web.config.file", "--profile",
                           "--collect-interval", "--nvml-library", "--hostname-label", "--once"}) {
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
  }
}

TEST_F(ExporterCli, BadFlagsExitTwoWithTheFix) {
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"exporter --once --profile nvidia", "unknown profile 'nvidia'"},
      {"exporter --once --vendors intel", "unknown vendor 'intel'"},
      {"exporter --once --collect-interval 5sec", "duration"},
      {"exporter --once --collect-interval 0", "positive duration"},
      {"exporter --once --hostname-label Host", "Hostname"},
      {"exporter --web.listen-address 9400", "9400"},
      {"exporter --web.config.file /nonexistent/web.yml", "/nonexistent/web.yml"},
      {"exporter --once --nvml-library /nonexistent/libnvidia-ml.so.1", "/nonexistent/libnvidia-ml.so.1"},
  };
  for (const Case& c : cases) {
    RunResult r = RunAccel(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST_F(ExporterCli, MalformedFakeConfigIsRefusedAtStart) {
  std::ofstream(dir_ / "bad.json") << R"({"devices": [{"uuid": 7}]})";
  RunResult r = RunShellCapture("FAKE_NVML_CONFIG=" + (dir_ / "bad.json").string() + " " + ACCEL_BINARY +
                         " exporter --once" + Fake() + " 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.json"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nvmlInit"), std::string::npos) << r.output;
}

TEST_F(ExporterCli, OncePrintsEveryProfileForTheFakeGpus) {
  RunResult r = RunShellCapture(Config(TwoGpus()) + ACCEL_BINARY + " exporter --once --topology " +
                         Src("fixtures/hosts/hgx-h100.json") + Fake() + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("# TYPE DCGM_FI_DEV_GPU_TEMP gauge"), std::string::npos);
  EXPECT_NE(r.output.find("DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"" + test_support::FakeH100Uuid(1) +
                          "\",pci_bus_id=\"00000000:43:00.0\",device=\"nvidia1\""),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("DCGM_FI_DEV_POWER_USAGE{"), std::string::npos);
  EXPECT_NE(r.output.find("} 250.500000\n"), std::string::npos);
  // GPM needs two readings; --once takes them.
  EXPECT_NE(r.output.find("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{"), std::string::npos);
  EXPECT_NE(r.output.find("accel_device_up{"), std::string::npos);
  EXPECT_NE(r.output.find("numa_node=\"0\""), std::string::npos);
}

/// Runs `accel exporter --once <args>` on TwoGpus and pipes the exposition to promtool.
int PromtoolCheck(const std::string& env, const std::string& args, std::string* output) {
  RunResult r = RunShellCapture(env + ACCEL_BINARY + " exporter --once --topology none" + args +
                         " 2>/dev/null | /usr/bin/promtool check metrics 2>&1");
  *output = r.output;
  return r.exit_code;
}

TEST_F(ExporterCli, PromtoolAcceptsTheExposition) {
  ACCEL_REQUIRE_TOOL("/usr/bin/promtool", "prometheus");
  json gpus = TwoGpus();
  test_support::MakeMig(&gpus[1], 1, 3);
  std::string env = Config(gpus);
  std::string out;
  // accel_* alone is lint-clean.
  EXPECT_EQ(PromtoolCheck(env, Fake() + " --profile none", &out), 0) << out;
  // dcgm's names are fixed by compatibility (no _total, camelCase labels): only parse errors fail.
  out.clear();
  EXPECT_NE(PromtoolCheck(env, Fake(), &out), 1) << out;
}

/// One GPU lost and one hung while the exporter serves: the others keep flowing and /metrics
/// keeps answering. GPU 2's call hangs forever, so a scrape or a collection pass that waited for
/// it would never end: every check below is an answer that arrives, not a time measured (the
/// waits are generous and end as soon as the answer is there). Scrape latency under a hung GPU
/// is a benchmark: bench/exporter_bench.cc --hang-gpu (docs/benchmarks.md).
TEST_F(ExporterCli, LostAndHungGpusDoNotStopTheOthers) {
  json gpus = json::array();
  for (int i = 0; i < 3; ++i) gpus.push_back(test_support::FakeH100(i, test_support::kHgxH100Gpus[i]));
  gpus[1]["faults"] = {{{"function", "nvmlDeviceGetPowerUsage"}, {"error", "GPU_IS_LOST"}, {"after_ms", 1500}}};
  gpus[2]["faults"] = {{{"function", "nvmlDeviceGetPowerUsage"}, {"hang_ms", "forever"}, {"after_ms", 1500}}};
  std::string path = (dir_ / "nvml.json").string();
  std::ofstream(path) << test_support::FakeNvmlConfig(gpus).dump();
  int port = test_support::FreeLoopbackPort();
  test_support::ChildProcess exporter(
      {ACCEL_BINARY, "exporter", "--vendors", "nvidia", "--nvml-library", ACCEL_FAKE_NVML,
       "--web.listen-address", "127.0.0.1:" + std::to_string(port), "--collect-interval", "200ms",
       // 3 s: GPU 0, read every 200 ms, stays fresh even on a machine that stalls for a while.
       "--stale-after", "3s", "--topology", "none", "--no-kubernetes"},
      {{"FAKE_NVML_CONFIG", path}}, (dir_ / "exporter.log").string());
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(std::chrono::seconds(30));  // a scrape stuck on the hung GPU fails
  auto scrape = [&] {
    auto r = client.Get("/metrics");
    return r && r->status == 200 ? r->body : std::string();
  };
  ASSERT_TRUE(test_support::WaitUntil([&] { return !scrape().empty(); }, std::chrono::seconds(60)))
      << exporter.Log();
  auto has = [](const std::string& body, const std::string& re) {
    return std::regex_search(body, std::regex(re));
  };
  bool settled = test_support::WaitUntil(
      [&] {
        std::string b = scrape();
        return has(b, R"(accel_device_lost\{[^}]*index="1"[^}]*\} 1)") &&
               has(b, R"(accel_device_up\{[^}]*index="2"[^}]*\} 0)");
      },
      std::chrono::seconds(60));
  std::string body = scrape();
  ASSERT_TRUE(settled) << body << exporter.Log();
  EXPECT_TRUE(has(body, R"(accel_device_up\{[^}]*index="0"[^}]*\} 1)"));
  EXPECT_TRUE(has(body, R"(DCGM_FI_DEV_GPU_TEMP\{gpu="0")"));
  EXPECT_FALSE(has(body, R"(DCGM_FI_DEV_GPU_TEMP\{gpu="1")"));  // lost: no values
  EXPECT_FALSE(has(body, R"(DCGM_FI_DEV_GPU_TEMP\{gpu="2")"));  // stale: no values
  // GPU 0 keeps being read while GPU 2's call hangs.
  auto passes = [&] {
    std::smatch m;
    std::string b = scrape();
    return std::regex_search(b, m, std::regex(R"(accel_exporter_collections_total\{[^}]*\} (\d+))"))
               ? std::stol(m[1])
               : -1L;
  };
  long before = passes();
  EXPECT_TRUE(test_support::WaitUntil([&] { return passes() > before; }, std::chrono::seconds(60)))
      << "no collection pass completed while GPU 2 hangs\n" << exporter.Log();
  for (int i = 0; i < 50; ++i) ASSERT_FALSE(scrape().empty()) << "scrape " << i;
  // SIGTERM ends it cleanly even with a call stuck in the vendor library.
  EXPECT_EQ(exporter.Stop(SIGTERM, std::chrono::seconds(10)), 0) << exporter.Log();
}

// A port another process holds is the OS refusing, not bad input: SystemError, exit 5
// (kExitSystem, common/error.h), with the address in the message.
TEST_F(ExporterCli, PortInUseIsASystemErrorExitFive) {
  std::string env = Config(TwoGpus());
  httplib::Server blocker;
  int port = blocker.bind_to_any_port("127.0.0.1");
  std::thread t([&] { blocker.listen_after_bind(); });
  RunResult r = RunShellCapture(env + ACCEL_BINARY + " exporter --topology none --web.listen-address 127.0.0.1:" +
                         std::to_string(port) + Fake() + " 2>&1");
  blocker.stop();
  t.join();
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_NE(r.output.find("cannot listen"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << r.output;
}

}  // namespace
}  // namespace accel::cli::testing
