// accel serve with dra.enabled, end to end on the fake HGX H100 (8 GPUs through the fake NVML,
// the host fixture's RDMA NICs on a fake sysfs): ResourceSlices on an in-test API server, the
// kubelet's registration and NodePrepareResources through an in-test kubelet, CDI specs with
// NCCL wired, a bad claim beside a good one, an agent restart with a prepared claim, and a GPU
// that falls off the bus leaving the pool and reported unhealthy.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "agent/agent_config.h"
#include "support/fake_apiserver.h"
#include "support/fake_dra_kubelet.h"
#include "support/fake_kubelet_plugins.h"
#include "support/fake_nvml_config.h"
#include "support/fake_nvml_setup.h"
#include "support/fake_sysfs.h"
#include "topology/sources.h"

namespace accel::agent {
namespace dra_driver_test {

namespace fs = std::filesystem;
using nlohmann::json;

const char kSlices[] = "/apis/resource.k8s.io/v1/resourceslices";
const char kClaims[] = "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/";

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Polls `done` every 20 ms for up to `limit`.
template <typename F>
bool WaitFor(F done, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

/// Each slice's spec without its pool generation (the agent counts up from 1, `accel dra slices`
/// prints generation 1), in a fixed order: what must be equal between the two.
std::vector<json> SliceSpecs(const std::vector<json>& slices) {
  std::vector<json> out;
  for (json slice : slices) {
    json spec = slice.at("spec");
    spec["pool"].erase("generation");
    out.push_back(std::move(spec));
  }
  std::sort(out.begin(), out.end(), [](const json& a, const json& b) { return a.dump() < b.dump(); });
  return out;
}

/// Runs `command` through the shell; its stdout, and its exit status in *status.
std::string RunCapture(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int raw = pclose(pipe);
  *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

class AgentDra : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("accel-dra-agent-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "reg");
    UseHost("hgx-h100");
    api_.Put("/api/v1/nodes/node-a", {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "node-a"}}}});
    std::ofstream(dir_ / "kubeconfig") << "apiVersion: v1\nkind: Config\n"
                                       << "clusters: [{name: t, cluster: {server: '" << api_.url() << "'}}]\n"
                                       << "users: [{name: u, user: {token: secret}}]\n"
                                       << "contexts: [{name: c, context: {cluster: t, user: u}}]\n"
                                       << "current-context: c\n";
    api_.RequireToken("secret");
  }

  /// The machine: fixtures/hosts/<name>.json, and its sysfs with RDMA ports ACTIVE and a uverbs
  /// node per RDMA device (the CDI spec hands /dev/infiniband/uverbsN to the container).
  void UseHost(const std::string& name) {
    host_name_ = name;
    fs::remove_all(dir_ / "root");
    host_ = topology::LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/" + name + ".json");
    accel::testing::WriteFakeSysfs(host_, (dir_ / "root").string());
    int n = 0;
    for (const auto& d : host_.pci)
      for (const auto& rdma : d.rdma_devices)
        accel::testing::WriteFakeFile((dir_ / "root").string(),
                                      "sys/class/infiniband_verbs/uverbs" + std::to_string(n++) + "/ibdev", rdma);
  }

  void TearDown() override { fs::remove_all(dir_); }

  /// Eight whole H100s at the fixture's addresses; `extra[i]` merged into GPU i.
  void UseGpus(const std::map<int, json>& extra = {}) {
    json gpus = json::array();
    for (int i = 0; i < 8; ++i) {
      json gpu = test_support::FakeH100(i, test_support::kHgxH100Gpus[i]);
      if (extra.count(i)) gpu.update(extra.at(i));
      gpus.push_back(gpu);
    }
    nvml_.Write(test_support::FakeNvmlConfig(gpus));
  }

  AgentConfig Config() { return ParseAgentConfig(ConfigYaml(), "test.yaml"); }

  /// The agent file of Config(), also what `accel dra --config` reads.
  std::string ConfigYaml() {
    std::ostringstream y;
    y << "vendors: [nvidia]\n"
      << "libraries: {nvml: " << ACCEL_FAKE_NVML << "}\n"
      << "topology: " << ACCEL_SOURCE_DIR << "/fixtures/hosts/" << host_name_ << ".json\n"
      << "exporter: {enabled: false, collectInterval: 200ms, pods: never}\n"
      << "devicePlugin: {enabled: false, config: {health: {recoverAfterSeconds: 3600}}}\n"
      << "labels: {enabled: false}\n"
      << "dra:\n  enabled: true\n  nodeName: node-a\n"
      << "  kubeconfig: " << (dir_ / "kubeconfig").string() << "\n"
      << "  registryDir: " << (dir_ / "reg").string() << "\n"
      << "  pluginDir: " << (dir_ / "plugin").string() << "\n"
      << "  cdiDir: " << (dir_ / "cdi").string() << "\n"
      << "  stateDir: " << (dir_ / "state").string() << "\n"
      << "  hostRoot: " << (dir_ / "root").string() << "\n"
      << "  resyncInterval: 1s\n";
    return y.str();
  }

  /// Every published device by name, with its slice's pool generation.
  std::map<std::string, json> Published(long long* generation = nullptr) {
    std::map<std::string, json> out;
    for (const json& slice : api_.List(kSlices)) {
      if (generation) *generation = slice["spec"]["pool"]["generation"].get<long long>();
      for (const json& d : slice["spec"].value("devices", json::array())) out[d["name"]] = d;
    }
    return out;
  }

  /// The device's rail; -1 when it has none (a storage NIC pairing left out).
  static int Rail(const json& device) {
    const json& a = device.at("attributes");
    return a.contains("rail") ? a.at("rail").at("int").get<int>() : -1;
  }

  /// A claim allocated `devices` (request "gpu" for GPUs, "nic" for NICs) on node-a's pool.
  json Claim(const std::string& name, const std::string& uid, const std::vector<std::string>& devices) {
    json results = json::array();
    for (const auto& d : devices)
      results.push_back({{"request", d.rfind("gpu", 0) == 0 ? "gpu" : "nic"},
                         {"driver", "accel.io"},
                         {"pool", "node-a"},
                         {"device", d}});
    json claim = {{"apiVersion", "resource.k8s.io/v1"},
                  {"kind", "ResourceClaim"},
                  {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", uid}}},
                  {"spec", {{"devices", {{"requests", json::array()}}}}},
                  {"status", {{"allocation", {{"devices", {{"results", results}}}}}}}};
    return api_.Put(kClaims + name, claim);
  }

  std::vector<std::string> log_;
  Agent::Log Log() {
    return [this](const std::string& line) { log_.push_back(line); };
  }
  std::string Logged() const {
    std::string all;
    for (const auto& l : log_) all += l + "\n";
    return all;
  }

  fs::path dir_;
  std::string host_name_;
  topology::HostTopology host_;
  test_support::FakeApiServer api_;
  test_support::FakeNvmlConfigFile nvml_;
};

TEST_F(AgentDra, PublishesRegistersAndPreparesAnAlignedClaim) {
  UseGpus();
  Agent agent(Log());
  agent.Start(Config());
  AgentStatus status = agent.status();
  EXPECT_TRUE(status.dra);
  EXPECT_EQ(status.dra_driver, "accel.io");

  // Slices: 8 GPUs and the NICs, each GPU on the rail of the NIC pairing chose for it.
  std::map<std::string, json> devices = Published();
  std::vector<std::string> gpus, nics;
  for (const auto& [name, d] : devices) (name.rfind("gpu-", 0) == 0 ? gpus : nics).push_back(name);
  ASSERT_EQ(gpus.size(), 8u) << Logged();
  ASSERT_GE(nics.size(), 8u);
  std::set<int> rails;
  for (const auto& g : gpus) rails.insert(Rail(devices[g]));
  EXPECT_EQ(rails.size(), 8u) << "one rail per GPU on the HGX";
  for (const json& slice : api_.List(kSlices)) {
    EXPECT_EQ(slice["spec"]["nodeName"], "node-a");
    EXPECT_EQ(slice["spec"]["driver"], "accel.io");
    ASSERT_TRUE(slice["metadata"].contains("ownerReferences"));
    EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["kind"], "Node");
  }

  // The kubelet finds the registration socket and registers the driver.
  test_support::FakeDraKubelet kubelet((dir_ / "reg").string());
  EXPECT_EQ(kubelet.Scan(), 1);
  ASSERT_TRUE(kubelet.plugin().has_value()) << kubelet.last_error();
  EXPECT_EQ(kubelet.plugin()->type, "DRAPlugin");
  EXPECT_EQ(kubelet.plugin()->name, "accel.io");
  ASSERT_TRUE(WaitFor([&] { return kubelet.registrations() >= 1; }));

  // 8 GPUs each with its NIC (the devices a rail-matched claim gets), and a claim naming a
  // device this node does not publish, in one call: the bad one fails alone.
  std::vector<std::string> aligned = gpus;
  for (const auto& n : nics) {
    const int rail = Rail(devices[n]);
    if (rail >= 0 && devices[n]["attributes"].value("sriovVf", json{{"bool", false}})["bool"] == false &&
        std::any_of(gpus.begin(), gpus.end(), [&](const std::string& g) { return Rail(devices[g]) == rail; }))
      aligned.push_back(n);
  }
  ASSERT_EQ(aligned.size(), 16u);
  Claim("train", "uid-train", aligned);
  Claim("bad", "uid-bad", {"gpu-0", "gpu-99"});
  std::map<std::string, dra::PrepareResult> answers;
  grpc::Status st = kubelet.Prepare({{"team-a", "uid-train", "train"}, {"team-a", "uid-bad", "bad"}},
                                    test_support::DraVersion::kV1, &answers);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers["uid-train"].error, "");
  EXPECT_EQ(answers["uid-train"].devices.size(), 16u);
  EXPECT_NE(answers["uid-bad"].error.find("gpu-99"), std::string::npos) << answers["uid-bad"].error;

  // The CDI spec: every device, and NCCL told the claim's 8 HCAs.
  std::vector<fs::path> specs;
  for (const auto& e : fs::directory_iterator(dir_ / "cdi")) specs.push_back(e.path());
  ASSERT_EQ(specs.size(), 1u) << "only the good claim has a spec";
  json spec = json::parse(ReadAll(specs[0]));
  EXPECT_EQ(spec["devices"].size(), 16u);
  std::string env;
  for (const auto& e : spec["containerEdits"]["env"]) env += e.get<std::string>() + "\n";
  auto at = env.find("NCCL_IB_HCA==");
  ASSERT_NE(at, std::string::npos) << env;
  std::string hcas = env.substr(at, env.find('\n', at) - at);
  EXPECT_EQ(std::count(hcas.begin(), hcas.end(), ','), 7) << hcas;
  EXPECT_NE(env.find("NCCL_SOCKET_IFNAME==eth0"), std::string::npos) << env;
  EXPECT_NE(env.find("NCCL_NET_GDR_LEVEL="), std::string::npos) << env;
  EXPECT_NE(env.find("ACCEL_UCX_NET_DEVICES_7="), std::string::npos) << env;
  const std::string cdi_id = answers["uid-train"].devices[0].cdi_device_ids.at(0);
  EXPECT_EQ(cdi_id.rfind("k8s.accel.io/claim=uid-train-", 0), 0u) << cdi_id;

  // A restart: the prepared claim is answered from the checkpoint, without reading the API.
  EXPECT_TRUE(agent.Stop());
  api_.ClearRequests();
  Agent again(Log());
  again.Start(Config());
  test_support::FakeDraKubelet kubelet2((dir_ / "reg").string());
  EXPECT_EQ(kubelet2.Scan(), 1);
  std::map<std::string, dra::PrepareResult> replay;
  ASSERT_TRUE(kubelet2.Prepare({{"team-a", "uid-train", "train"}}, test_support::DraVersion::kV1beta1, &replay).ok());
  EXPECT_EQ(replay["uid-train"].error, "");
  EXPECT_EQ(replay["uid-train"].devices.size(), 16u);
  EXPECT_TRUE(api_.requests("GET", kClaims).empty()) << "a prepared claim is not read again";
  EXPECT_TRUE(api_.writes().empty()) << "unchanged slices are not written again";

  // Unprepare removes the spec; twice is fine.
  std::map<std::string, std::string> un;
  ASSERT_TRUE(kubelet2.Unprepare({{"team-a", "uid-train", "train"}}, test_support::DraVersion::kV1, &un).ok());
  EXPECT_EQ(un["uid-train"], "");
  ASSERT_TRUE(kubelet2.Unprepare({{"team-a", "uid-train", "train"}}, test_support::DraVersion::kV1, &un).ok());
  EXPECT_EQ(un["uid-train"], "");
  EXPECT_TRUE(fs::is_empty(dir_ / "cdi"));
  EXPECT_TRUE(again.Stop());
  EXPECT_FALSE(fs::exists(dir_ / "reg" / "accel.io-reg.sock")) << "deregistered on stop";
}

TEST_F(AgentDra, MigSlicesShareTheirGpusCountersAndArePrepared) {
  // GPU 4 in MIG mode with 7 × 1g.10gb.
  json gpu4 = test_support::FakeH100(4, test_support::kHgxH100Gpus[4]);
  test_support::MakeMig(&gpu4, 4, 7);
  UseGpus({{4, gpu4}});
  Agent agent(Log());
  agent.Start(Config());
  std::map<std::string, json> devices = Published();
  const std::string mig = "gpu-4-mig-1g-10gb-0";
  ASSERT_EQ(devices.count(mig), 1u) << Logged();
  EXPECT_EQ(devices[mig]["attributes"]["type"]["string"], "mig");
  EXPECT_EQ(Rail(devices[mig]), Rail(devices["gpu-4"])) << "a MIG device rides its GPU's rail";
  // One counter set for GPU 4, consumed by the whole GPU and by each of its MIG devices.
  std::string counter_set;
  for (const json& slice : api_.List(kSlices))
    for (const json& set : slice["spec"].value("sharedCounters", json::array())) counter_set = set["name"];
  ASSERT_FALSE(counter_set.empty());
  EXPECT_EQ(devices["gpu-4"]["consumesCounters"][0]["counterSet"], counter_set);
  EXPECT_EQ(devices[mig]["consumesCounters"][0]["counterSet"], counter_set);
  EXPECT_FALSE(devices["gpu-0"].contains("consumesCounters"));

  test_support::FakeDraKubelet kubelet((dir_ / "reg").string());
  ASSERT_EQ(kubelet.Scan(), 1);
  Claim("mig", "uid-mig", {mig});
  std::map<std::string, dra::PrepareResult> answers;
  ASSERT_TRUE(kubelet.Prepare({{"team-a", "uid-mig", "mig"}}, test_support::DraVersion::kV1, &answers).ok());
  ASSERT_EQ(answers["uid-mig"].error, "");
  std::string spec;
  for (const auto& e : fs::directory_iterator(dir_ / "cdi")) spec = ReadAll(e.path());
  EXPECT_NE(spec.find(test_support::FakeMigUuid(4, 0)), std::string::npos) << spec;
  EXPECT_EQ(spec.find("NCCL_IB_HCA"), std::string::npos) << "a claim without NICs gets no NCCL env";
  EXPECT_TRUE(agent.Stop());
}

// The fake AMD (8 × MI300X, fake ROCm SMI) and Gaudi 2 (8 HPUs, fake HLML) nodes: every
// accelerator published on a rail, and a claim of one accelerator with its NIC prepared with the
// vendor's device nodes; NCCL is wired for AMD (RCCL reads it) and not for Gaudi (HCCL does not).
TEST_F(AgentDra, AmdAndGaudiNodesPublishAndPrepare) {
  struct Case {
    const char* host;
    const char* vendor;
    const char* library_key;
    const char* library;
    const char* env;
    const char* config;
    const char* device_node;
    bool nccl;
  } cases[] = {
      {"epyc-nps4-mi300x", "amd", "rocmSmi", ACCEL_FAKE_ROCM_SMI, "FAKE_ROCM_SMI_CONFIG",
       "rocm_smi/examples/mi300x-8.json", "/dev/kfd", true},
      {"gaudi2-8hpu", "habana", "hlml", ACCEL_FAKE_HLML, "FAKE_HLML_CONFIG", "hlml/examples/gaudi2-8.json",
       "/dev/accel/accel", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.host);
    UseHost(c.host);
    fs::remove_all(dir_ / "cdi");
    fs::remove_all(dir_ / "state");
    setenv(c.env, (std::string(ACCEL_SOURCE_DIR) + "/tests/fakes/" + c.config).c_str(), 1);
    AgentConfig config = Config();
    config.vendors = {c.vendor};
    if (std::string(c.library_key) == "rocmSmi") config.rocm_smi_library = c.library;
    else config.hlml_library = c.library;
    Agent agent(Log());
    agent.Start(config);
    std::map<std::string, json> devices = Published();
    std::vector<std::string> gpus;
    for (const auto& [name, d] : devices)
      if (name.rfind("gpu-", 0) == 0) gpus.push_back(name);
    ASSERT_EQ(gpus.size(), 8u) << Logged();
    std::string nic;
    for (const auto& [name, d] : devices)
      if (name.rfind("nic-", 0) == 0 && Rail(d) == Rail(devices["gpu-0"]) && nic.empty()) nic = name;
    ASSERT_GE(Rail(devices["gpu-0"]), 0);
    ASSERT_FALSE(nic.empty());
    EXPECT_EQ(devices["gpu-0"]["attributes"]["vendor"]["string"], c.vendor);

    test_support::FakeDraKubelet kubelet((dir_ / "reg").string());
    ASSERT_EQ(kubelet.Scan(), 1);
    const std::string uid = std::string("uid-") + c.vendor;
    Claim(c.vendor, uid, {"gpu-0", nic});
    std::map<std::string, dra::PrepareResult> answers;
    ASSERT_TRUE(kubelet.Prepare({{"team-a", uid, c.vendor}}, test_support::DraVersion::kV1, &answers).ok());
    EXPECT_EQ(answers[uid].error, "");
    std::string spec;
    for (const auto& e : fs::directory_iterator(dir_ / "cdi")) spec = ReadAll(e.path());
    EXPECT_NE(spec.find(c.device_node), std::string::npos) << spec;
    EXPECT_NE(spec.find("/dev/infiniband/uverbs"), std::string::npos) << spec;
    EXPECT_EQ(spec.find("NCCL_IB_HCA") != std::string::npos, c.nccl) << spec;
    EXPECT_TRUE(agent.Stop());
    unsetenv(c.env);
    api_.Remove(kClaims + std::string(c.vendor));
  }
}

// The fake's HGX config reports every GPU's NVLinks into NVSwitch: one clique of 8, carried by
// the GPUs and their MIG devices (claims can keep GPUs on one NVLink domain with it).
TEST_F(AgentDra, NvswitchGpusShareOneNvlinkClique) {
  setenv("FAKE_NVML_CONFIG", (std::string(ACCEL_SOURCE_DIR) + "/tests/fakes/nvml/examples/h100x8-mig.json").c_str(), 1);
  Agent agent(Log());
  agent.Start(Config());
  std::map<std::string, json> devices = Published();
  int gpus = 0;
  for (const auto& [name, d] : devices) {
    if (name.rfind("nic-", 0) == 0) {
      EXPECT_FALSE(d["attributes"].contains("nvlinkClique")) << name;
      continue;
    }
    ++gpus;
    ASSERT_TRUE(d["attributes"].contains("nvlinkClique")) << name << " " << Logged();
    EXPECT_EQ(d["attributes"]["nvlinkClique"]["int"], 0) << name;
  }
  EXPECT_GE(gpus, 8);
  EXPECT_TRUE(agent.Stop());
  unsetenv("FAKE_NVML_CONFIG");
}

// One node, read twice: by the agent (published to the API server) and by `accel dra slices
// --config` with the agent's own file. NVSwitch-linked GPUs with MIG devices (counters) and an
// RDMA port down in the host root beside a topology file (the rails depend on the port states):
// the slices must be equal, device by device, attribute by attribute (rail, nvlinkClique
// included), with the same capacities and counters.
TEST_F(AgentDra, DraSlicesPrintsWhatTheAgentPublishes) {
  setenv("FAKE_NVML_CONFIG", (std::string(ACCEL_SOURCE_DIR) + "/tests/fakes/nvml/examples/h100x8-mig.json").c_str(), 1);
  accel::testing::WriteFakeFile((dir_ / "root").string(), "sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  std::ofstream(dir_ / "agent.yaml") << ConfigYaml();
  Agent agent(Log());
  agent.Start(Config());
  const std::vector<json> published = api_.List(kSlices);
  EXPECT_TRUE(agent.Stop());

  int status = -1;
  const std::string out = RunCapture(std::string(ACCEL_BINARY) + " dra slices -o json --config " +
                                         (dir_ / "agent.yaml").string() + " 2>" + (dir_ / "stderr").string(),
                                     &status);
  unsetenv("FAKE_NVML_CONFIG");
  ASSERT_EQ(status, 0) << out << ReadAll(dir_ / "stderr");
  const json list = json::parse(out);
  ASSERT_FALSE(published.empty()) << Logged();
  EXPECT_EQ(SliceSpecs(list.at("items").get<std::vector<json>>()), SliceSpecs(published));

  // What the equality covers: cliques on every accelerator, MIG counters, and the rail of GPU 0
  // moved off its switch's NIC (mlx5_0, down) onto another.
  std::map<std::string, json> devices = Published();
  ASSERT_EQ(devices.count("gpu-0"), 1u);
  EXPECT_EQ(devices["gpu-0"]["attributes"]["nvlinkClique"]["int"], 0);
  EXPECT_TRUE(devices["gpu-4"].contains("consumesCounters"));
  const int rail0 = Rail(devices["gpu-0"]);
  ASSERT_GE(rail0, 0);
  for (const auto& [name, d] : devices) {
    if (name.rfind("nic-", 0) == 0 && Rail(d) == rail0) {
      EXPECT_NE(d["attributes"]["rdmaDevice"]["string"], "mlx5_0") << name;
    }
  }
}

// The device plugin (NCCL_IB_HCA at Allocate) and the DRA driver (rails) on one agent with an
// RDMA port down: each GPU's NCCL_IB_HCA is the NIC on its DRA rail. (Before one reader, the
// device plugin read no port states beside a topology file and gave GPU 0 the down mlx5_0.)
TEST_F(AgentDra, DevicePluginNcclIbHcaIsTheNicOnTheGpusDraRail) {
  UseGpus();
  accel::testing::WriteFakeFile((dir_ / "root").string(), "sys/class/infiniband/mlx5_0/ports/1/state", "1: DOWN\n");
  fs::create_directories(dir_ / "dp");
  test_support::FakeDevicePluginKubelet kubelet((dir_ / "dp").string());
  AgentConfig config = Config();
  config.device_plugin.enabled = true;
  config.device_plugin.config.plugin_dir = (dir_ / "dp").string();
  config.device_plugin.config.nccl.ib_hca = true;
  Agent agent(Log());
  agent.Start(config);
  ASSERT_TRUE(kubelet.WaitForResource(
      "nvidia.com/gpu", [](const auto& p) { return p.healthy() == 8; }, std::chrono::seconds(60)))
      << Logged();

  std::map<std::string, json> devices = Published();
  std::map<int, std::string> hca_of_rail;  // rail → "mlx5_N:port" of its physical NIC
  for (const auto& [name, d] : devices) {
    if (name.rfind("nic-", 0) != 0 || Rail(d) < 0) continue;
    if (d["attributes"].value("sriovVf", json{{"bool", false}})["bool"] == true) continue;
    hca_of_rail[Rail(d)] = d["attributes"]["rdmaDevice"]["string"].get<std::string>() + ":" +
                           std::to_string(d["attributes"]["port"]["int"].get<int>());
  }
  int checked = 0;
  for (int i = 0; i < 8; ++i) {
    const json& gpu = devices["gpu-" + std::to_string(i)];
    const int rail = Rail(gpu);
    ASSERT_GE(rail, 0) << i;
    ASSERT_EQ(hca_of_rail.count(rail), 1u) << i;
    v1beta1::AllocateResponse response;
    grpc::Status st = kubelet.Allocate("nvidia.com/gpu", {gpu["attributes"]["uuid"]["string"].get<std::string>()},
                                       &response);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(response.container_responses_size(), 1);
    const auto& envs = response.container_responses(0).envs();
    ASSERT_EQ(envs.count("NCCL_IB_HCA"), 1u) << i;
    EXPECT_EQ(envs.at("NCCL_IB_HCA"), "=" + hca_of_rail[rail]) << "gpu-" << i;
    EXPECT_NE(envs.at("NCCL_IB_HCA"), "=mlx5_0:1") << "gpu-" << i;
    ++checked;
  }
  EXPECT_EQ(checked, 8);
  EXPECT_TRUE(agent.Stop());
}

TEST_F(AgentDra, ALostGpuLeavesThePoolAndIsReportedUnhealthy) {
  // GPU 1 falls off the bus (XID 79) 1.5 s after start.
  UseGpus({{1, {{"events", json::array({{{"at_ms", 1500}, {"xid", 79}}})}}}});
  Agent agent(Log());
  AgentConfig config = Config();
  config.exporter.collect_interval = std::chrono::milliseconds(100);
  agent.Start(config);
  long long first = 0;
  ASSERT_EQ(Published(&first).count("gpu-1"), 1u) << Logged();
  test_support::FakeDraKubelet kubelet((dir_ / "reg").string());
  ASSERT_EQ(kubelet.Scan(), 1);
  ASSERT_TRUE(kubelet.WatchHealth(test_support::DraHealthVersion::kV1));
  ASSERT_TRUE(kubelet.WaitForHealthMessages(1, std::chrono::seconds(10)));

  // Withdrawn from the pool at a new generation, and streamed as unhealthy.
  long long now = 0;
  ASSERT_TRUE(WaitFor([&] { return Published(&now).count("gpu-1") == 0; })) << Logged();
  EXPECT_GT(now, first);
  EXPECT_EQ(Published().count("gpu-0"), 1u);
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& m : kubelet.health_messages()) {
      const dra::DeviceHealthEntry* e = m.Find("node-a", "gpu-1");
      if (e && e->health == dra::DeviceHealthState::kUnhealthy) return true;
    }
    return false;
  }));
  const auto messages = kubelet.health_messages();
  const dra::DeviceHealthEntry* gpu0 = messages.back().Find("node-a", "gpu-0");
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ(gpu0->health, dra::DeviceHealthState::kHealthy);
  EXPECT_NE(Logged().find("gpu-1 unhealthy"), std::string::npos) << Logged();
  kubelet.StopWatchingHealth();
  EXPECT_TRUE(agent.Stop());
}

TEST_F(AgentDra, AnApiServerThatRefusesIsLoggedAndRetriedWhileTheKubeletIsServed) {
  UseGpus();
  api_.Forbid("create", "resourceslices.resource.k8s.io");
  Agent agent(Log());
  agent.Start(Config());
  EXPECT_TRUE(api_.List(kSlices).empty());
  EXPECT_NE(Logged().find("cannot publish ResourceSlices"), std::string::npos) << Logged();
  EXPECT_NE(Logged().find("create"), std::string::npos);
  // The kubelet side runs regardless.
  test_support::FakeDraKubelet kubelet((dir_ / "reg").string());
  EXPECT_EQ(kubelet.Scan(), 1);
  EXPECT_TRUE(agent.Stop());
}

TEST_F(AgentDra, ABadKubeconfigStartsNothing) {
  UseGpus();
  std::ofstream(dir_ / "kubeconfig") << "apiVersion: v1\nkind: Config\nclusters: []\n";
  Agent agent(Log());
  EXPECT_THROW(agent.Start(Config()), std::exception);
  EXPECT_FALSE(agent.running());
  EXPECT_FALSE(fs::exists(dir_ / "reg" / "accel.io-reg.sock"));
}

}  // namespace
}  // namespace accel::agent
