// The MPS part of the node agent against a fake nvidia-cuda-mps-control (tests/fakes/mps): the
// per-client limits, finding the binary, the control protocol, and MpsDaemons' start, health
// watch, restart with backoff (driven by an injected clock) and stop.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "kube/mps_control.h"
#include "kube/mps_daemons.h"
#include "kube/mps_paths.h"
#include "kube_fixtures.h"
#include "support/child_process.h"

namespace accel::kube {
namespace mps_daemons_test {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Config;
using testing::Gpu;
using Clock = MpsDaemons::Clock;
using std::chrono::milliseconds;

// build/tests/fakes/mps/nvidia-cuda-mps-control: the fake control daemon.
std::string FakeMpsControl() { return ACCEL_FAKE_MPS_CONTROL; }

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Lines(const fs::path& p) {
  std::vector<std::string> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(MpsPaths, NvidiasLayout) {
  MpsPaths p = MpsPathsFor("/run/nvidia/mps", "nvidia.com/gpu");
  EXPECT_EQ(p.pipe_dir, "/run/nvidia/mps/nvidia.com/gpu/pipe");
  EXPECT_EQ(p.log_dir, "/run/nvidia/mps/nvidia.com/gpu/log");
  EXPECT_EQ(p.container_pipe_dir, "/mps/nvidia.com/gpu/pipe");
  EXPECT_EQ(MpsPathsFor("/run/mps//", "nvidia.com/gpu.shared").pipe_dir,
            "/run/mps/nvidia.com/gpu.shared/pipe");
  EXPECT_EQ(MpsPathsFor("/", "nvidia.com/gpu").log_dir, "/nvidia.com/gpu/log");
}

TEST(MpsLimits, OneNthOfMemoryPerGpuAndOfTheThreads) {
  std::vector<NodeDevice> node = {Gpu(0), Gpu(1)};  // 81559 MiB each
  PluginConfig config = Config("sharing: {mps: {resources: [{name: gpu, replicas: 4}]}}");
  auto resources = BuildResources(node, config);
  EXPECT_THAT(MpsLimitCommands(resources[0], node),
              ElementsAre("set_default_device_pinned_mem_limit GPU-0 20389M",
                          "set_default_device_pinned_mem_limit GPU-1 20389M",
                          "set_default_active_thread_percentage 25"));
  // 100 / 3 rounds down, like NVIDIA's; a GPU whose memory is unknown gets no memory limit.
  node[1].memory_bytes = 0;
  config = Config("sharing: {mps: {resources: [{name: gpu, replicas: 3}]}}");
  resources = BuildResources(node, config);
  EXPECT_THAT(MpsLimitCommands(resources[0], node),
              ElementsAre("set_default_device_pinned_mem_limit GPU-0 27186M",
                          "set_default_active_thread_percentage 33"));
  EXPECT_TRUE(MpsLimitCommands(PluginResource{}, node).empty());
}

TEST(MpsLimits, TheFakeH100NodeGetsOneLimitPerGpu) {
  auto node = testing::WholeGpusOf(testing::NvmlDevices("nvml/examples/h100x8-mig.json"));
  PluginConfig config = Config("sharing: {mps: {resources: [{name: gpu, replicas: 2}]}}");
  auto resources = BuildResources(node, config);
  std::vector<std::string> commands = MpsLimitCommands(resources[0], node);
  ASSERT_EQ(commands.size(), 9u);
  EXPECT_EQ(commands[0], "set_default_device_pinned_mem_limit " + node[0].id + " " +
                             std::to_string(node[0].memory_bytes / 2 >> 20) + "M");
  EXPECT_EQ(commands.back(), "set_default_active_thread_percentage 50");
}

class MpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int n = 0;
    // Short: the fake's socket path (<root>/nvidia.com/gpu/pipe/control) must fit sun_path.
    root_ = fs::path("/tmp") / ("amps-" + std::to_string(getpid()) + "-" + std::to_string(++n));
    fs::remove_all(root_);
    fs::create_directories(root_);
    ASSERT_EQ(access(FakeMpsControl().c_str(), X_OK), 0) << FakeMpsControl();
  }
  void TearDown() override {
    unsetenv("FAKE_MPS_FAIL_START");
    unsetenv("FAKE_MPS_FAIL_COMMAND");
    unsetenv("FAKE_MPS_EXIT_AFTER_START");
    // No daemon may outlive its test, whatever failed.
    for (auto it = fs::recursive_directory_iterator(root_); it != fs::end(it); ++it) {
      if (it->path().filename() != kMpsPidFile) continue;
      pid_t pid = std::atoi(ReadAll(it->path()).c_str());
      std::error_code error;
      if (pid > 0 && fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", error).filename() ==
                         kMpsControlBinary) {
        kill(pid, SIGKILL);
      }
    }
    fs::remove_all(root_);
  }

  PluginConfig MpsConfig(int replicas = 4, const std::string& control = "") {
    return Config("flags: {mpsRoot: " + root_.string() + ", mpsControlPath: " +
                  (control.empty() ? FakeMpsControl() : control) +
                  "}\nsharing: {mps: {resources: [{name: gpu, replicas: " +
                  std::to_string(replicas) + "}]}}");
  }
  MpsControl Control(const std::string& resource = "nvidia.com/gpu") {
    return MpsControl(FakeMpsControl(), MpsPathsFor(root_.string(), resource), milliseconds(5000));
  }
  fs::path Commands(const std::string& resource = "nvidia.com/gpu") {
    return root_ / resource / "log" / "fake-commands.log";
  }
  MpsDaemonOptions Manual() {
    MpsDaemonOptions o;
    o.watch = false;
    o.first_backoff = milliseconds(1000);
    o.max_backoff = milliseconds(4000);
    o.command_timeout = milliseconds(5000);
    return o;
  }
  MpsDaemons::Log Log() {
    return [this](const std::string& line) { log_.push_back(line); };
  }
  bool LogHas(const std::string& text) const {
    for (const std::string& line : log_) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

  fs::path root_;
  std::vector<std::string> log_;
  std::vector<NodeDevice> node_ = {Gpu(0), Gpu(1)};
};

TEST_F(MpsTest, FindsTheBinaryWhereNvidiasPluginWould) {
  MpsSettings settings;
  std::string dir = fs::path(FakeMpsControl()).parent_path().string();
  EXPECT_EQ(FindMpsControl(settings, "/", "/nonexistent:" + dir), FakeMpsControl());
  EXPECT_EQ(FindMpsControl(settings, "/", "/nonexistent"), "");
  // A driver container's root: <root>/usr/bin, then <root>/bin.
  fs::create_directories(root_ / "driver/bin");
  fs::copy_file(FakeMpsControl(), root_ / "driver/bin" / kMpsControlBinary);
  EXPECT_EQ(FindMpsControl(settings, (root_ / "driver").string(), "/nonexistent"),
            (root_ / "driver/bin" / kMpsControlBinary).string());
  // PATH first; a file that cannot be executed does not count.
  fs::create_directories(root_ / "noexec");
  std::ofstream(root_ / "noexec" / kMpsControlBinary) << "#!/bin/sh\n";
  EXPECT_EQ(FindMpsControl(settings, (root_ / "driver").string(), (root_ / "noexec").string()),
            (root_ / "driver/bin" / kMpsControlBinary).string());
  // flags.mpsControlPath is taken as is, or not at all.
  settings.control_path = FakeMpsControl();
  EXPECT_EQ(FindMpsControl(settings, "/", ""), FakeMpsControl());
  settings.control_path = (root_ / "missing").string();
  EXPECT_EQ(FindMpsControl(settings, "/", dir), "");
}

TEST_F(MpsTest, ControlProtocolAgainstTheFake) {
  MpsControl control = Control();
  EXPECT_EQ(control.RunningPid(), 0);
  EXPECT_THROW(control.Send("get_default_active_thread_percentage"), SystemError);
  control.StartDaemon();
  EXPECT_TRUE(fs::is_directory(control.paths().pipe_dir));
  EXPECT_TRUE(fs::is_directory(control.paths().log_dir));
  pid_t pid = control.RunningPid();
  ASSERT_GT(pid, 0);
  control.Send("set_default_active_thread_percentage 25");
  EXPECT_EQ(control.Send("get_default_active_thread_percentage"), "25\n");
  try {
    control.Send("no_such_command");
    FAIL() << "accepted";
  } catch (const SystemError& e) {
    EXPECT_THAT(e.what(), HasSubstr("Unrecognized command"));
  }
  // A second daemon in the same pipe directory is refused, as NVIDIA's refuses it.
  EXPECT_THROW(control.StartDaemon(), SystemError);
  EXPECT_EQ(control.Quit(), "quit");
  EXPECT_EQ(control.RunningPid(), 0);
  EXPECT_THAT(Lines(Commands()), ElementsAre("-d", "set_default_active_thread_percentage 25",
                                             "get_default_active_thread_percentage",
                                             "no_such_command", "-d", "quit"));
  EXPECT_THAT(control.LastLogLine(), HasSubstr("Exit"));
  setenv("FAKE_MPS_FAIL_START", "1", 1);
  try {
    control.StartDaemon();
    FAIL() << "started";
  } catch (const SystemError& e) {
    EXPECT_THAT(e.what(), HasSubstr("exited with status 1"));
    EXPECT_THAT(e.what(), HasSubstr("FAKE_MPS_FAIL_START"));
  }
}

TEST_F(MpsTest, ADeadDaemonIsNotRunningEvenWithItsPidFileLeft) {
  MpsControl control = Control();
  control.StartDaemon();
  pid_t pid = control.RunningPid();
  ASSERT_GT(pid, 0);
  EXPECT_THROW(control.Send("fake_die"), SystemError);  // it dies before it answers
  ASSERT_TRUE(test_support::WaitUntil([&] { return control.RunningPid() == 0; },
                                      std::chrono::seconds(10)));
  EXPECT_TRUE(fs::exists(control.paths().pipe_dir + "/" + kMpsPidFile));  // a crash leaves it
}

TEST_F(MpsTest, StartsConfiguresWatchesRestartsWithBackoffAndStops) {
  PluginConfig config = MpsConfig(4);
  auto resources = BuildResources(node_, config);
  DeviceHealth health(node_, config.health);
  MpsDaemons daemons(resources, node_, config, &health, Log(), Manual());
  ASSERT_EQ(daemons.size(), 1u);
  daemons.Start();

  std::vector<MpsDaemonStatus> s = daemons.status();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].resource, "nvidia.com/gpu");
  EXPECT_EQ(s[0].pipe_dir, (root_ / "nvidia.com/gpu/pipe").string());
  EXPECT_EQ(s[0].binary, FakeMpsControl());
  ASSERT_TRUE(s[0].up) << s[0].error;
  EXPECT_GT(s[0].pid, 0);
  EXPECT_EQ(s[0].restarts, 0);
  const std::vector<std::string> start = {"-d", "set_default_device_pinned_mem_limit GPU-0 20389M",
                                          "set_default_device_pinned_mem_limit GPU-1 20389M",
                                          "set_default_active_thread_percentage 25"};
  EXPECT_EQ(Lines(Commands()), start);
  EXPECT_TRUE(health.healthy(0));
  EXPECT_TRUE(health.healthy(1));

  // A healthy check asks NVIDIA's AssertHealthy question and changes nothing.
  Clock::time_point t0 = Clock::now();
  daemons.Tick(t0);
  EXPECT_TRUE(daemons.status()[0].up);
  EXPECT_EQ(Lines(Commands()).back(), "get_default_active_thread_percentage");

  // The daemon dies: its GPUs go out of service, and it comes back after the backoff.
  kill(s[0].pid, SIGKILL);
  ASSERT_TRUE(test_support::WaitUntil([&] { return Control().RunningPid() == 0; },
                                      std::chrono::seconds(10)));
  Clock::time_point t1 = t0 + milliseconds(100);
  daemons.Tick(t1);
  EXPECT_FALSE(daemons.status()[0].up);
  EXPECT_THAT(daemons.status()[0].error, HasSubstr("is gone"));
  EXPECT_FALSE(health.healthy(0));
  EXPECT_FALSE(health.healthy(1));
  EXPECT_TRUE(LogHas("restarting in 1000 ms"));
  size_t before = Lines(Commands()).size();
  daemons.Tick(t1 + milliseconds(999));
  EXPECT_FALSE(daemons.status()[0].up);
  EXPECT_EQ(Lines(Commands()).size(), before);  // not yet
  daemons.Tick(t1 + milliseconds(1000));
  s = daemons.status();
  ASSERT_TRUE(s[0].up) << s[0].error;
  EXPECT_EQ(s[0].restarts, 1);
  EXPECT_TRUE(health.healthy(0));
  std::vector<std::string> all = Lines(Commands());
  EXPECT_EQ(std::vector<std::string>(all.end() - 4, all.end()), start);  // limits set again

  // Dying again soon after: the backoff doubles.
  kill(s[0].pid, SIGKILL);
  ASSERT_TRUE(test_support::WaitUntil([&] { return Control().RunningPid() == 0; },
                                      std::chrono::seconds(10)));
  Clock::time_point t2 = t1 + milliseconds(1500);
  daemons.Tick(t2);
  EXPECT_TRUE(LogHas("restarting in 2000 ms"));
  daemons.Tick(t2 + milliseconds(1999));
  EXPECT_FALSE(daemons.status()[0].up);
  daemons.Tick(t2 + milliseconds(2000));
  ASSERT_TRUE(daemons.status()[0].up);
  EXPECT_EQ(daemons.status()[0].restarts, 2);
  // Up for max_backoff: the next failure starts from first_backoff again.
  daemons.Tick(t2 + milliseconds(2000 + 4000));
  kill(daemons.status()[0].pid, SIGKILL);
  ASSERT_TRUE(test_support::WaitUntil([&] { return Control().RunningPid() == 0; },
                                      std::chrono::seconds(10)));
  log_.clear();
  daemons.Tick(t2 + milliseconds(7000));
  EXPECT_TRUE(LogHas("restarting in 1000 ms"));
  daemons.Tick(t2 + milliseconds(8000));
  ASSERT_TRUE(daemons.status()[0].up);

  daemons.Stop();
  EXPECT_EQ(Lines(Commands()).back(), "quit");
  EXPECT_EQ(Control().RunningPid(), 0);
  EXPECT_FALSE(fs::exists(root_ / "nvidia.com/gpu/pipe" / kMpsPidFile));
  daemons.Stop();  // idempotent
  daemons.Tick(t2 + milliseconds(20000));  // after Stop: nothing starts again
  EXPECT_EQ(Control().RunningPid(), 0);
}

TEST_F(MpsTest, AMissingBinaryKeepsTheGpusOutUntilItAppears) {
  // A driver container that has not finished installing: the binary comes later.
  std::string later = (root_ / "bin" / kMpsControlBinary).string();
  PluginConfig config = MpsConfig(2, later);
  auto resources = BuildResources(node_, config);
  DeviceHealth health(node_, config.health);
  MpsDaemons daemons(resources, node_, config, &health, Log(), Manual());
  daemons.Start();
  MpsDaemonStatus s = daemons.status()[0];
  EXPECT_FALSE(s.up);
  EXPECT_THAT(s.error, HasSubstr("nvidia-cuda-mps-control not found"));
  EXPECT_THAT(s.error, HasSubstr(later));
  EXPECT_FALSE(health.healthy(0));
  EXPECT_FALSE(health.healthy(1));
  fs::create_directories(root_ / "bin");
  fs::copy_file(FakeMpsControl(), later);
  daemons.Tick(Clock::now() + milliseconds(1000));
  s = daemons.status()[0];
  ASSERT_TRUE(s.up) << s.error;
  EXPECT_EQ(s.restarts, 0);  // the first successful start
  EXPECT_EQ(s.binary, later);
  EXPECT_TRUE(health.healthy(0));
  daemons.Stop();
}

TEST_F(MpsTest, StartFailuresLeaveNoDaemonBehind) {
  PluginConfig config = MpsConfig(2);
  auto resources = BuildResources(node_, config);
  {
    setenv("FAKE_MPS_FAIL_START", "1", 1);
    MpsDaemons daemons(resources, node_, config, nullptr, Log(), Manual());
    daemons.Start();
    EXPECT_FALSE(daemons.status()[0].up);
    EXPECT_THAT(daemons.status()[0].error, HasSubstr("FAKE_MPS_FAIL_START"));
    unsetenv("FAKE_MPS_FAIL_START");
  }
  {
    // A limit the daemon refuses: the half-configured daemon is quit, not left serving.
    setenv("FAKE_MPS_FAIL_COMMAND", "set_default_active_thread_percentage", 1);
    MpsDaemons daemons(resources, node_, config, nullptr, Log(), Manual());
    daemons.Start();
    EXPECT_FALSE(daemons.status()[0].up);
    EXPECT_THAT(daemons.status()[0].error, HasSubstr("set_default_active_thread_percentage"));
    EXPECT_EQ(Control().RunningPid(), 0);
    EXPECT_EQ(Lines(Commands()).back(), "quit");
    unsetenv("FAKE_MPS_FAIL_COMMAND");
  }
  {
    setenv("FAKE_MPS_EXIT_AFTER_START", "1", 1);
    MpsDaemons daemons(resources, node_, config, nullptr, Log(), Manual());
    daemons.Start();
    EXPECT_THAT(daemons.status()[0].error, HasSubstr("exited right after it started"));
    unsetenv("FAKE_MPS_EXIT_AFTER_START");
  }
}

TEST_F(MpsTest, ADaemonThatStopsAnsweringIsReplaced) {
  PluginConfig config = MpsConfig(2);
  auto resources = BuildResources(node_, config);
  // This daemon refuses the health query (its environment is read when it starts).
  setenv("FAKE_MPS_FAIL_COMMAND", "get_default_active_thread_percentage", 1);
  MpsDaemons daemons(resources, node_, config, nullptr, Log(), Manual());
  daemons.Start();
  unsetenv("FAKE_MPS_FAIL_COMMAND");
  pid_t first = daemons.status()[0].pid;
  ASSERT_GT(first, 0);
  Clock::time_point t0 = Clock::now();
  daemons.Tick(t0);
  EXPECT_FALSE(daemons.status()[0].up);
  EXPECT_THAT(daemons.status()[0].error, HasSubstr("does not answer"));
  daemons.Tick(t0 + milliseconds(1000));
  ASSERT_TRUE(daemons.status()[0].up) << daemons.status()[0].error;
  EXPECT_NE(daemons.status()[0].pid, first);
  EXPECT_TRUE(LogHas("a control daemon already runs"));  // the old one was told to quit first
  daemons.Stop();
}

TEST_F(MpsTest, ADaemonLeftByAPreviousAgentIsReplaced) {
  MpsControl stale = Control();
  stale.StartDaemon();
  stale.Send("set_default_active_thread_percentage 10");
  pid_t old = stale.RunningPid();
  PluginConfig config = MpsConfig(2);
  auto resources = BuildResources(node_, config);
  MpsDaemons daemons(resources, node_, config, nullptr, Log(), Manual());
  daemons.Start();
  ASSERT_TRUE(daemons.status()[0].up) << daemons.status()[0].error;
  EXPECT_NE(daemons.status()[0].pid, old);
  EXPECT_EQ(stale.Send("get_default_active_thread_percentage"), "50\n");
  daemons.Stop();
}

TEST_F(MpsTest, TheWatcherThreadRestartsADeadDaemon) {
  PluginConfig config = MpsConfig(2);
  auto resources = BuildResources(node_, config);
  DeviceHealth health(node_, config.health);
  MpsDaemonOptions options;
  options.check_interval = milliseconds(50);
  options.first_backoff = milliseconds(50);
  MpsDaemons daemons(resources, node_, config, &health, Log(), options);
  daemons.Start();
  ASSERT_TRUE(daemons.status()[0].up);
  kill(daemons.status()[0].pid, SIGKILL);
  EXPECT_TRUE(test_support::WaitUntil(
      [&] {
        MpsDaemonStatus s = daemons.status()[0];
        return s.up && s.restarts == 1;
      },
      std::chrono::seconds(20)));
  EXPECT_TRUE(health.healthy(0));
  daemons.Stop();
  EXPECT_EQ(Control().RunningPid(), 0);
}

TEST_F(MpsTest, NoMpsResourceNoDaemon) {
  PluginConfig config = Config("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2}]}}");
  MpsDaemons daemons(BuildResources(node_, config), node_, config, nullptr, Log(), Manual());
  daemons.Start();
  EXPECT_EQ(daemons.size(), 0u);
  EXPECT_TRUE(daemons.status().empty());
  daemons.Stop();
}

}  // namespace
}  // namespace accel::kube
