// The node agent: its config file (every key, strict errors) and the Agent on the fake NVML —
// metrics over HTTP, the feature file, the device plugin against an in-test kubelet, MPS with
// the fake control daemon, reload, and a node with no accelerators.
#include "agent/agent.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "support/fake_kubelet_plugins.h"
#include "support/fake_nvml_config.h"
#include "support/fake_nvml_setup.h"

namespace accel::agent {
namespace agent_test {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AgentConfig, EmptyFileGivesTheDefaults) {
  AgentConfig c = ParseAgentConfig("", "agent.yaml");
  EXPECT_EQ(c.vendors, (std::vector<std::string>{"nvidia", "amd", "habana"}));
  EXPECT_TRUE(c.exporter.enabled);
  EXPECT_EQ(c.exporter.listen, ":9400");
  EXPECT_EQ(c.exporter.collect_interval.count(), 5000);
  EXPECT_EQ(c.labels.interval.count(), 60000);
  EXPECT_FALSE(c.mig.enabled);
  EXPECT_EQ(c.device_plugin.config.mig_strategy, kube::MigStrategy::kNone);
  EXPECT_EQ(LoadAgentConfig("").exporter.listen, ":9400");
}

TEST(AgentConfig, ReadsEveryKey) {
  AgentConfig c = ParseAgentConfig(R"(
vendors: [nvidia]
libraries: {nvml: /opt/nvml.so, rocmSmi: /opt/rsmi.so, hlml: /opt/hlml.so}
topology: none
exporter:
  enabled: false
  listen: "127.0.0.1:9500"
  webConfigFile: web.yml
  profile: dcgm
  collectInterval: 500ms
  podResourcesSocket: /run/pr.sock
devicePlugin:
  enabled: true
  config:
    version: v1
    flags: {migStrategy: mixed}
    sharing:
      timeSlicing:
        resources: [{name: nvidia.com/gpu, replicas: 4}]
labels: {enabled: true, file: /tmp/f/accel, interval: 2m}
mig: {enabled: true, configFile: /etc/m.yaml, config: all-1g.10gb, stateFile: /tmp/s}
)", "agent.yaml");
  EXPECT_EQ(c.vendors, (std::vector<std::string>{"nvidia"}));
  EXPECT_EQ(c.nvml_library, "/opt/nvml.so");
  EXPECT_EQ(c.rocm_smi_library, "/opt/rsmi.so");
  EXPECT_EQ(c.hlml_library, "/opt/hlml.so");
  EXPECT_EQ(c.topology, "none");
  EXPECT_FALSE(c.exporter.enabled);
  EXPECT_EQ(c.exporter.listen, "127.0.0.1:9500");
  EXPECT_EQ(c.exporter.web_config_file, "web.yml");
  EXPECT_EQ(c.exporter.profile, "dcgm");
  EXPECT_EQ(c.exporter.collect_interval.count(), 500);
  EXPECT_EQ(c.exporter.pod_resources_socket, "/run/pr.sock");
  EXPECT_EQ(c.device_plugin.config.mig_strategy, kube::MigStrategy::kMixed);
  ASSERT_EQ(c.device_plugin.config.time_slicing.resources.size(), 1u);
  EXPECT_EQ(c.device_plugin.config.time_slicing.resources[0].replicas, 4);
  EXPECT_EQ(c.labels.file, "/tmp/f/accel");
  EXPECT_EQ(c.labels.interval.count(), 120000);
  EXPECT_TRUE(c.mig.enabled);
  EXPECT_EQ(c.mig.config, "all-1g.10gb");
  EXPECT_EQ(c.mig.config_file, "/etc/m.yaml");
  EXPECT_EQ(c.mig.state_file, "/tmp/s");
}

TEST(AgentConfig, RefusesBadInputNamingTheKey) {
  struct Case {
    const char* yaml;
    const char* field;
    const char* problem;
  };
  const Case cases[] = {
      {"exporter: {listn: ':1'}", "exporter.listn", "unknown key"},
      {"vendor: [nvidia]", "vendor", "unknown key"},
      {"vendors: [intel]", "vendors", "unknown vendor 'intel'"},
      {"vendors: nvidia", "vendors", "must be a list"},
      {"exporter: {collectInterval: 5h}", "exporter.collectInterval", "not a positive duration"},
      {"labels: {interval: 0s}", "labels.interval", "not a positive duration"},
      {"labels: {enabled: maybe}", "labels.enabled", "true or false"},
      {"mig: [1, 2]", "mig", "must be a mapping"},
      {"devicePlugin: {config: {flags: {migStrategy: some}}}", "flags.migStrategy", ""},
      {"devicePlugin: {config: {sharing: {mps: {}}}}", "sharing.mps.resources", "no resources"},
      {"devicePlugin: {config: {flags: {migStrategy: mixed}, sharing: {mps: {resources: "
       "[{name: gpu, replicas: 2}]}}}}",
       "flags.migStrategy", "not supported with MPS"},
      {"exporter: [", "", "not valid YAML"},
  };
  for (const Case& c : cases) {
    try {
      ParseAgentConfig(c.yaml, "agent.yaml");
      ADD_FAILURE() << "accepted: " << c.yaml;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("agent.yaml"), std::string::npos) << e.what();
      EXPECT_NE(e.field().find(c.field), std::string::npos) << c.yaml << " -> " << e.what();
      EXPECT_NE(e.problem().find(c.problem), std::string::npos) << c.yaml << " -> " << e.what();
    }
  }
}

TEST(AgentConfig, ReadsThePluginConfigFileNextToTheAgentFile) {
  fs::path dir = fs::temp_directory_path() / ("accel-agentcfg-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "plugin.yaml") << "version: v1\nflags: {migStrategy: single}\n";
  std::ofstream(dir / "agent.yaml") << "devicePlugin: {configFile: plugin.yaml}\n";
  AgentConfig c = LoadAgentConfig((dir / "agent.yaml").string());
  EXPECT_EQ(c.device_plugin.config.mig_strategy, kube::MigStrategy::kSingle);
  std::ofstream(dir / "agent.yaml") << "devicePlugin: {configFile: missing.yaml}\n";
  EXPECT_THROW(LoadAgentConfig((dir / "agent.yaml").string()), InputError);
  EXPECT_THROW(LoadAgentConfig((dir / "nope.yaml").string()), InputError);
  fs::remove_all(dir);
}

TEST(AgentConfig, EveryExampleParses) {
  int examples = 0;
  for (const auto& e : fs::directory_iterator(std::string(ACCEL_SOURCE_DIR) + "/examples/agent")) {
    if (e.path().extension() != ".yaml") continue;
    ++examples;
    AgentConfig c;
    EXPECT_NO_THROW(c = LoadAgentConfig(e.path().string())) << e.path();
    if (e.path().filename() == "mps.yaml") {
      const kube::PluginConfig& p = c.device_plugin.config;
      EXPECT_EQ(p.sharing_strategy(), kube::SharingStrategy::kMps);
      EXPECT_TRUE(p.mps.fail_requests_greater_than_one);
      EXPECT_EQ(p.mps_settings.root, "/run/nvidia/mps");
      ASSERT_EQ(p.mps.resources.size(), 1u);
      EXPECT_EQ(p.mps.resources[0].replicas, 4);
    }
  }
  EXPECT_GE(examples, 4);
}

/// An agent on the fake NVML's 8 × H100 node (4 whole GPUs, 4 with 7 × 1g.10gb each), with a
/// temp dir for the kubelet's plugin dir and the NFD features dir.
class AgentOnFakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path("/tmp") / ("accel-agent-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "dp");
    fs::create_directories(dir_ / "features.d");
    setenv("FAKE_NVML_CONFIG",
           (std::string(ACCEL_SOURCE_DIR) + "/tests/fakes/nvml/examples/h100x8-mig.json").c_str(), 1);
  }
  void TearDown() override {
    // No MPS control daemon (the fake's) may outlive a failed test.
    std::error_code error;
    for (auto it = fs::recursive_directory_iterator(dir_, error); it != fs::end(it); ++it) {
      if (it->path().filename() != "nvidia-cuda-mps-control.pid") continue;
      pid_t pid = std::atoi(ReadAll(it->path()).c_str());
      if (pid > 0 && fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", error).filename() ==
                         "nvidia-cuda-mps-control") {
        kill(pid, SIGKILL);
      }
    }
    fs::remove_all(dir_);
  }

  AgentConfig Config(const std::string& plugin_yaml = "{}") {
    std::ostringstream y;
    y << "vendors: [nvidia]\n"
      << "libraries: {nvml: " << ACCEL_FAKE_NVML << "}\n"
      << "topology: " << ACCEL_SOURCE_DIR << "/fixtures/hosts/hgx-h100.json\n"
      << "exporter: {listen: '127.0.0.1:0', collectInterval: 200ms, podResourcesSocket: "
      << (dir_ / "none.sock").string() << "}\n"
      << "labels: {file: " << (dir_ / "features.d/accel").string() << ", interval: 100ms}\n"
      << "devicePlugin:\n  config: " << plugin_yaml << "\n";
    AgentConfig c = ParseAgentConfig(y.str(), "test.yaml");
    c.device_plugin.config.plugin_dir = (dir_ / "dp").string();
    return c;
  }

  std::string Get(int port, const std::string& path) {
    httplib::Client client("127.0.0.1", port);
    auto res = client.Get(path);
    return res && res->status == 200 ? res->body : "";
  }

  static size_t Count(const AgentStatus& s, const std::string& resource) {
    for (const auto& [name, n] : s.resources) if (name == resource) return n;
    return 0;
  }

  std::vector<std::string> log_;
  Agent::Log Log() {
    return [this](const std::string& line) { log_.push_back(line); };
  }
  fs::path dir_;
};

TEST_F(AgentOnFakeNvml, ServesMetricsLabelsAndDevicePlugins) {
  test_support::FakeDevicePluginKubelet kubelet((dir_ / "dp").string());
  Agent agent;
  agent.Start(Config("{flags: {migStrategy: mixed}}"));
  AgentStatus s = agent.status();
  EXPECT_EQ(s.devices.size(), 8u + 28u);
  EXPECT_EQ(Count(s, "nvidia.com/gpu"), 4u);
  EXPECT_EQ(Count(s, "nvidia.com/mig-1g.10gb"), 28u);
  EXPECT_TRUE(s.device_plugin);
  EXPECT_EQ(s.devices[0].numa_node, 0);  // joined from the host topology

  ASSERT_GT(agent.exporter_port(), 0);
  std::string metrics = Get(agent.exporter_port(), "/metrics");
  EXPECT_NE(metrics.find("DCGM_FI_DEV_GPU_TEMP"), std::string::npos);
  EXPECT_NE(metrics.find("accel_device_up"), std::string::npos);
  std::string topology = Get(agent.exporter_port(), "/topology");
  EXPECT_NE(topology.find("\"accel.host/v1\""), std::string::npos) << topology.substr(0, 200);
  EXPECT_NE(topology.find("\"numa_nodes\""), std::string::npos);

  std::string labels = ReadAll(dir_ / "features.d/accel");
  EXPECT_NE(labels.find("nvidia.com/gpu.product="), std::string::npos) << labels;
  EXPECT_NE(labels.find("nvidia.com/mig.strategy=mixed"), std::string::npos) << labels;

  EXPECT_TRUE(kubelet.WaitForResource(
      "nvidia.com/mig-1g.10gb", [](const auto& p) { return p.devices.size() == 28; },
      std::chrono::seconds(60)));
  EXPECT_TRUE(kubelet.WaitForResource(
      "nvidia.com/gpu", [](const auto& p) { return p.healthy() == 4; }, std::chrono::seconds(60)));
  EXPECT_GE(agent.plugin_registrations(), 2);

  EXPECT_TRUE(agent.Stop());
  EXPECT_EQ(agent.exporter_port(), 0);
  // Graceful: the sockets are gone, the kubelet saw empty lists.
  for (const auto& e : fs::directory_iterator(dir_ / "dp")) {
    EXPECT_EQ(e.path().filename(), "kubelet.sock");
  }
  auto gpu = kubelet.Resource("nvidia.com/gpu");
  ASSERT_TRUE(gpu.has_value());
  EXPECT_TRUE(gpu->devices.empty());
}

TEST_F(AgentOnFakeNvml, ReloadSwitchesTheStrategyAndKeepsTheOldConfigOnError) {
  Agent agent(Log());
  agent.Start(Config());  // strategy none: every GPU is nvidia.com/gpu
  EXPECT_EQ(Count(agent.status(), "nvidia.com/gpu"), 8u);
  EXPECT_TRUE(agent.status().device_plugin);  // the dir exists: registration is retried

  agent.Reload(Config("{sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 3}]}}}"));
  EXPECT_EQ(Count(agent.status(), "nvidia.com/gpu"), 24u);
  EXPECT_GT(agent.exporter_port(), 0);
  EXPECT_NE(ReadAll(dir_ / "features.d/accel").find("nvidia.com/gpu.replicas=3"), std::string::npos);

  // single needs every GPU MIG-enabled with one profile: this node contradicts it.
  EXPECT_THROW(agent.Reload(Config("{flags: {migStrategy: single}}")), InputError);
  EXPECT_EQ(Count(agent.status(), "nvidia.com/gpu"), 24u);  // the previous config is back
  EXPECT_FALSE(Get(agent.exporter_port(), "/metrics").empty());
  EXPECT_TRUE(agent.Stop());
}

TEST_F(AgentOnFakeNvml, NodeWithoutAcceleratorsServesMetricsAndLabels) {
  AgentConfig c = Config();
  c.vendors.clear();
  Agent agent(Log());
  agent.Start(c);
  AgentStatus s = agent.status();
  EXPECT_TRUE(s.devices.empty());
  EXPECT_TRUE(s.resources.empty());
  ASSERT_GT(agent.exporter_port(), 0);
  httplib::Client client("127.0.0.1", agent.exporter_port());
  auto res = client.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_TRUE(fs::exists(dir_ / "features.d/accel"));
  EXPECT_FALSE(s.labels.empty());  // accel.io/numa-nodes etc. from the host topology
  EXPECT_TRUE(agent.Stop());
}

TEST_F(AgentOnFakeNvml, MissingDirectoriesAreOneLogLineNotAnError) {
  AgentConfig c = Config();
  c.device_plugin.config.plugin_dir = (dir_ / "no-kubelet").string();
  c.labels.file = (dir_ / "no-nfd/accel").string();
  c.exporter.enabled = false;
  Agent agent(Log());
  agent.Start(c);
  EXPECT_FALSE(agent.status().device_plugin);
  EXPECT_EQ(agent.exporter_port(), 0);
  EXPECT_FALSE(fs::exists(dir_ / "no-nfd"));
  int mentions = 0;
  for (const auto& line : log_) {
    if (line.find("no-kubelet") != std::string::npos || line.find("no-nfd") != std::string::npos) ++mentions;
  }
  EXPECT_EQ(mentions, 2);
  EXPECT_TRUE(agent.Stop());
}

TEST_F(AgentOnFakeNvml, FailedMigApplyIsReportedAndTheAgentRuns) {
  AgentConfig c = Config();
  c.mig.enabled = true;
  c.mig.config_file = std::string(ACCEL_SOURCE_DIR) + "/examples/mig/default-configs.yaml";
  c.mig.config = "all-balanced";  // GPUs 0-3 of the fake run processes: MIG cannot be enabled
  c.mig.state_file = (dir_ / "features.d/accel-mig").string();
  Agent agent(Log());
  agent.Start(c);
  EXPECT_EQ(ReadAll(dir_ / "features.d/accel-mig"),
            "nvidia.com/mig.config=all-balanced\nnvidia.com/mig.config.state=failed\n");
  EXPECT_EQ(agent.status().devices.size(), 36u);  // the GPUs as they were
  EXPECT_TRUE(agent.Stop());
}

TEST_F(AgentOnFakeNvml, BadListenAddressStartsNothing) {
  AgentConfig c = Config();
  c.exporter.listen = "127.0.0.1:99999";
  Agent agent(Log());
  EXPECT_THROW(agent.Start(c), InputError);
  EXPECT_EQ(agent.exporter_port(), 0);
  EXPECT_TRUE(agent.status().devices.empty());
}

TEST_F(AgentOnFakeNvml, HgxGpusAreAllLinkedThroughNvSwitch) {
  Agent agent(Log());
  agent.Start(Config());
  EXPECT_TRUE(agent.Stop());
  // 8 GPUs with 18 NVSwitch links each (the example config): every one of the 28 pairs.
  EXPECT_NE(std::find(log_.begin(), log_.end(),
                      "interconnect: 28 NVLink-connected GPU pair(s) among 8 GPU(s), through "
                      "NVSwitch"),
            log_.end());
}

/// Four whole H100s (FakeH100) on the fake, with extra keys per GPU; no host topology, so every
/// pair sits at the same PCIe level.
class AgentOnFourGpus : public AgentOnFakeNvml {
 protected:
  static constexpr const char* kBus[4] = {"00000000:1B:00.0", "00000000:43:00.0",
                                          "00000000:52:00.0", "00000000:61:00.0"};
  void UseGpus(const std::vector<nlohmann::json>& extra) {
    nlohmann::json gpus = nlohmann::json::array();
    for (int i = 0; i < 4; ++i) {
      nlohmann::json gpu = test_support::FakeH100(i, kBus[i]);
      gpu.update(extra[i]);
      gpus.push_back(gpu);
    }
    nvml_.Write(test_support::FakeNvmlConfig(gpus));
  }
  AgentConfig FourGpuConfig(const std::string& plugin_yaml = "{}") {
    AgentConfig c = Config(plugin_yaml);
    c.topology = "none";
    return c;
  }
  static std::string Uuid(int i) { return test_support::FakeH100Uuid(i); }
  static std::string Health(const test_support::RegisteredPlugin& p, int gpu) {
    const test_support::ListedDevice* d = p.Find(Uuid(gpu));
    return d ? d->health : "absent";
  }

  test_support::FakeNvmlConfigFile nvml_;
};

TEST_F(AgentOnFourGpus, PreferredAllocationPicksNvlinkedPairs) {
  // Bridges 0↔3 and 1↔2 (two links each, as on 4 × RTX 8000): only NVLink tells the pairs apart,
  // and device order ({0, 1}) would be the wrong answer.
  auto peer = [](int gpu) {
    return nlohmann::json{{"nvlink_peers", std::vector<std::string>(2, kBus[gpu])}};
  };
  UseGpus({peer(3), peer(2), peer(1), peer(0)});
  test_support::FakeDevicePluginKubelet kubelet((dir_ / "dp").string());
  Agent agent(Log());
  agent.Start(FourGpuConfig());
  ASSERT_TRUE(kubelet.WaitForResource(
      "nvidia.com/gpu", [](const auto& p) { return p.healthy() == 4; }, std::chrono::seconds(60)));
  auto preferred = [&](std::vector<int> available, std::vector<int> required) {
    std::vector<std::string> a, r, got;
    for (int i : available) a.push_back(Uuid(i));
    for (int i : required) r.push_back(Uuid(i));
    grpc::Status status = kubelet.GetPreferredAllocation("nvidia.com/gpu", a, r, 2, &got);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<int> picked;
    for (const auto& id : got) {
      for (int i = 0; i < 4; ++i) if (id == Uuid(i)) picked.push_back(i);
    }
    std::sort(picked.begin(), picked.end());
    return picked;
  };
  std::vector<int> pair = preferred({0, 1, 2, 3}, {});
  EXPECT_TRUE(pair == std::vector<int>({0, 3}) || pair == std::vector<int>({1, 2}))
      << ::testing::PrintToString(pair);
  EXPECT_EQ(preferred({2, 0, 1, 3}, {1}), std::vector<int>({1, 2}));
  EXPECT_EQ(preferred({0, 1, 2}, {}), std::vector<int>({1, 2}));
  EXPECT_EQ(preferred({3, 1, 0}, {}), std::vector<int>({0, 3}));
  EXPECT_TRUE(agent.Stop());
  EXPECT_NE(std::find(log_.begin(), log_.end(),
                      "interconnect: 2 NVLink-connected GPU pair(s) among 4 GPU(s)"),
            log_.end());
}

TEST_F(AgentOnFourGpus, CriticalXidTakesOneGpuOutUntilTheQuietPeriodPasses) {
  // GPU 2 first gets XID 13 (an application error: ignored), then GPU 1 falls off the bus (79).
  auto xid = [](int at_ms, int code) {
    nlohmann::json event = {{"at_ms", at_ms}, {"xid", code}};
    return nlohmann::json{{"events", nlohmann::json::array({event})}};
  };
  UseGpus({nlohmann::json::object(), xid(800, 79), xid(300, 13), nlohmann::json::object()});
  test_support::FakeDevicePluginKubelet kubelet((dir_ / "dp").string());
  Agent agent(Log());
  agent.Start(FourGpuConfig("{health: {recoverAfterSeconds: 2}}"));

  bool benign_hurt = false;
  auto watch = [&](const test_support::RegisteredPlugin& p, const char* const want[4]) {
    benign_hurt |= Health(p, 2) == "Unhealthy";
    for (int i = 0; i < 4; ++i) if (Health(p, i) != want[i]) return false;
    return true;
  };
  const char* const one_out[4] = {"Healthy", "Unhealthy", "Healthy", "Healthy"};
  const char* const all_in[4] = {"Healthy", "Healthy", "Healthy", "Healthy"};
  ASSERT_TRUE(kubelet.WaitForResource(
      "nvidia.com/gpu", [&](const auto& p) { return watch(p, one_out); },
      std::chrono::seconds(60)));
  // The ignored XID did arrive (the exporter shows it as GPU 2's last XID).
  std::string metrics = Get(agent.exporter_port(), "/metrics");
  EXPECT_NE(metrics.find(R"(err_code="13")"), std::string::npos) << metrics.substr(0, 2000);
  // Two seconds without a new critical XID while the GPU keeps answering: back in service.
  EXPECT_TRUE(kubelet.WaitForResource(
      "nvidia.com/gpu", [&](const auto& p) { return watch(p, all_in); }, std::chrono::seconds(60)));
  EXPECT_FALSE(benign_hurt);
  EXPECT_TRUE(agent.Stop());
}

TEST_F(AgentOnFourGpus, MpsDaemonServesTheGpusAndIsRestartedWhenItDies) {
  UseGpus(std::vector<nlohmann::json>(4, nlohmann::json::object()));
  // build/tests/fakes/mps/nvidia-cuda-mps-control: the fake control daemon.
  std::string control =
      std::string(ACCEL_FAKE_MPS_CONTROL);
  fs::path mps = dir_ / "mps";
  test_support::FakeDevicePluginKubelet kubelet((dir_ / "dp").string());
  Agent agent(Log());
  agent.Start(FourGpuConfig("{flags: {mpsRoot: " + mps.string() + ", mpsControlPath: " + control +
                            "}, sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}}"));
  AgentStatus s = agent.status();
  EXPECT_EQ(Count(s, "nvidia.com/gpu"), 8u);  // 4 GPUs × 2
  ASSERT_EQ(s.mps.size(), 1u);
  ASSERT_TRUE(s.mps[0].up) << s.mps[0].error;
  EXPECT_EQ(s.mps[0].pipe_dir, (mps / "nvidia.com/gpu/pipe").string());
  // Started before the plugins with NVIDIA's commands: -d, a memory limit per GPU, the threads.
  fs::path commands = mps / "nvidia.com/gpu/log/fake-commands.log";
  std::string log = ReadAll(commands);
  EXPECT_EQ(log.rfind("-d\n", 0), 0u) << log;
  EXPECT_NE(log.find("set_default_active_thread_percentage 50"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 6) << log;  // -d, 4 limits, threads

  ASSERT_TRUE(kubelet.WaitForResource(
      "nvidia.com/gpu", [](const auto& p) { return p.healthy() == 8; }, std::chrono::seconds(60)));
  auto gpu = kubelet.Resource("nvidia.com/gpu");
  v1beta1::AllocateResponse response;
  ASSERT_TRUE(kubelet.Allocate("nvidia.com/gpu", {gpu->devices[3].id}, &response).ok());
  const auto& c = response.container_responses(0);
  EXPECT_EQ(c.envs().at("CUDA_MPS_PIPE_DIRECTORY"), "/mps/nvidia.com/gpu/pipe");
  ASSERT_EQ(c.mounts_size(), 2);
  EXPECT_EQ(c.mounts(0).host_path(), (mps / "nvidia.com/gpu/pipe").string());
  EXPECT_EQ(c.mounts(1).host_path(), "/dev/shm");
  // failRequestsGreaterThanOne is MPS's default.
  EXPECT_FALSE(kubelet.Allocate("nvidia.com/gpu", {gpu->devices[0].id, gpu->devices[2].id},
                                &response).ok());
  std::string labels = ReadAll(dir_ / "features.d/accel");
  EXPECT_NE(labels.find("nvidia.com/gpu.sharing-strategy=mps\n"), std::string::npos) << labels;
  EXPECT_NE(labels.find("nvidia.com/mps.capable=true\n"), std::string::npos) << labels;

  // The daemon dies: every replica turns Unhealthy, then the agent restarts it (checks every
  // 5 s, first restart 1 s later) and they come back.
  kill(s.mps[0].pid, SIGKILL);
  EXPECT_TRUE(kubelet.WaitForResource(
      "nvidia.com/gpu", [](const auto& p) { return p.healthy() == 0; }, std::chrono::seconds(60)));
  EXPECT_TRUE(kubelet.WaitForResource(
      "nvidia.com/gpu", [](const auto& p) { return p.healthy() == 8; }, std::chrono::seconds(60)));
  s = agent.status();
  EXPECT_TRUE(s.mps[0].up);
  EXPECT_EQ(s.mps[0].restarts, 1);

  EXPECT_TRUE(agent.Stop());
  log = ReadAll(commands);
  EXPECT_EQ(log.substr(log.size() - 5), "quit\n");  // after the plugins withdrew
  EXPECT_FALSE(fs::exists(mps / "nvidia.com/gpu/pipe/nvidia-cuda-mps-control.pid"));
  EXPECT_TRUE(kubelet.Resource("nvidia.com/gpu")->devices.empty());
}

}  // namespace
}  // namespace accel::agent
