// End to end with the real thing: a real Prometheus server on loopback scrapes `accel exporter`
// running on the fake NVML, with a fake kubelet handing out the GPUs to pods. Checks that every
// panel query of NVIDIA's dashboard 12239 returns the fake's values, that dcgm's labels and
// pod attribution arrive intact, and that the accel_* family and MIG series are queryable.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "support/child_process.h"
#include "support/fake_kubelet.h"
#include "support/fake_nvml_config.h"
#include "support/prometheus_server.h"
#include "support/shared_fixture.h"

namespace accel::telemetry {
namespace prometheus_integration_test {

using nlohmann::json;
using test_support::ChildProcess;

double Value(const json& sample) { return std::stod(sample["value"][1].get<std::string>()); }

class PrometheusIntegration : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(test_support::kPrometheusBinary)) return;
    dir_ = std::filesystem::temp_directory_path() / ("accel-prom-" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);

    json gpus = json::array();
    for (int i = 0; i < 3; ++i) gpus.push_back(test_support::FakeH100(i, test_support::kHgxH100Gpus[i]));
    gpus[1]["not_supported"] = {"memory_temperature_c"};
    test_support::MakeMig(&gpus[2], 2, 2);
    std::ofstream(dir_ / "nvml.json") << test_support::FakeNvmlConfig(gpus).dump(2);

    kubelet_ = new test_support::FakeKubelet((dir_ / "kubelet.sock").string());
    kubelet_->SetPods({
        {"ml", "trainer-0", "main", "nvidia.com/gpu", {test_support::FakeH100Uuid(0)}},
        {"ml", "share-a", "main", "nvidia.com/gpu", {test_support::FakeH100Uuid(1) + "::0"}},
        {"ml", "share-b", "main", "nvidia.com/gpu", {test_support::FakeH100Uuid(1) + "::1"}},
        {"infer", "mig-a", "server", "nvidia.com/mig-1g.10gb", {test_support::FakeMigUuid(2, 1)}},
    });

    exporter_port_ = test_support::FreeLoopbackPort();
    exporter_ = new ChildProcess(
        {ACCEL_BINARY, "exporter", "--vendors", "nvidia", "--nvml-library", ACCEL_FAKE_NVML,
         "--web.listen-address", "127.0.0.1:" + std::to_string(exporter_port_),
         "--collect-interval", "500ms", "--pod-resources-socket", (dir_ / "kubelet.sock").string(),
         "--pod-refresh-interval", "500ms", "--topology",
         std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/hgx-h100.json"},
        {{"FAKE_NVML_CONFIG", (dir_ / "nvml.json").string()}, {"NODE_NAME", "gpu-node-1"}},
        (dir_ / "exporter.log").string());
    prometheus_ = new test_support::PrometheusServer(
        dir_.string(), "accel-exporter", {"127.0.0.1:" + std::to_string(exporter_port_)},
        std::chrono::milliseconds(1000));
  }

  static void TearDownTestSuite() {
    delete prometheus_;
    if (exporter_) exporter_->Stop(SIGTERM, std::chrono::seconds(10));
    delete exporter_;
    delete kubelet_;
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  void SetUp() override { ACCEL_REQUIRE_TOOL(test_support::kPrometheusBinary, "prometheus"); }

  /// The query's result once Prometheus has scraped something for it. The wait is generous (a
  /// loaded machine starts Prometheus slowly); it ends as soon as there is data.
  static json Data(const std::string& promql) {
    json r = prometheus_->QueryUntilData(promql, std::chrono::seconds(120));
    EXPECT_FALSE(r.empty()) << promql << " returned nothing\nexporter log:\n"
                            << exporter_->Log() << "\nprometheus log:\n" << prometheus_->Log();
    return r;
  }

  static inline std::filesystem::path dir_;
  static inline int exporter_port_ = 0;
  static inline test_support::FakeKubelet* kubelet_ = nullptr;
  static inline ChildProcess* exporter_ = nullptr;
  static inline test_support::PrometheusServer* prometheus_ = nullptr;
};

// Every panel of grafana.com dashboard 12239 ("NVIDIA DCGM Exporter Dashboard"), with its
// template variables set to All, as Grafana sends them.
TEST_F(PrometheusIntegration, EveryPanelOfDashboard12239ReturnsData) {
  const std::string panels[] = {
      R"(DCGM_FI_DEV_GPU_TEMP{instance=~"$instance", gpu=~"$gpu"})",
      R"(avg(DCGM_FI_DEV_GPU_TEMP{instance=~"$instance", gpu=~"$gpu"}))",
      R"(DCGM_FI_DEV_POWER_USAGE{instance=~"$instance", gpu=~"$gpu"})",
      R"(sum(DCGM_FI_DEV_POWER_USAGE{instance=~"$instance", gpu=~"$gpu"}))",
      R"(DCGM_FI_DEV_SM_CLOCK{instance=~"$instance", gpu=~"$gpu"} * 1000000)",
      R"(DCGM_FI_DEV_GPU_UTIL{instance=~"$instance", gpu=~"$gpu"})",
      R"(DCGM_FI_DEV_FB_USED{instance=~"$instance", gpu=~"$gpu"})",
      R"(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{instance=~"$instance", gpu=~"$gpu"})",
  };
  for (std::string expr : panels) {
    // Grafana sends "All" of a multi-value variable as ".*".
    for (const char* var : {"$instance", "$gpu"}) expr.replace(expr.find(var), strlen(var), ".*");
    SCOPED_TRACE(expr);
    EXPECT_FALSE(Data(expr).empty());
  }
  // The template variables' own queries.
  EXPECT_FALSE(Data("group by (instance) (DCGM_FI_DEV_GPU_TEMP)").empty());
  EXPECT_EQ(Data("group by (gpu) (DCGM_FI_DEV_GPU_TEMP)").size(), 3u);
}

TEST_F(PrometheusIntegration, ValuesAreTheFakesInDcgmUnits) {
  EXPECT_EQ(Value(Data(R"(DCGM_FI_DEV_GPU_TEMP{gpu="0"})")[0]), 40);
  EXPECT_DOUBLE_EQ(Value(Data(R"(DCGM_FI_DEV_POWER_USAGE{gpu="1"})")[0]), 251.5);
  EXPECT_EQ(Value(Data(R"(DCGM_FI_DEV_SM_CLOCK{gpu="0"} * 1000000)")[0]), 1755e6);
  EXPECT_EQ(Value(Data(R"(DCGM_FI_DEV_GPU_UTIL{gpu="1"})")[0]), 71);
  EXPECT_EQ(Value(Data(R"(DCGM_FI_DEV_FB_USED{gpu="0"})")[0]), 20480);  // MiB
  EXPECT_DOUBLE_EQ(Value(Data(R"(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu="0"})")[0]), 0.30);
  EXPECT_EQ(Value(Data(R"(DCGM_FI_DEV_XID_ERRORS{gpu="0"})")[0]), 0);
}

TEST_F(PrometheusIntegration, DcgmLabelsAndPodsAsDashboardsExpect) {
  json r = Data(R"(DCGM_FI_DEV_GPU_TEMP{gpu="0"})");
  ASSERT_EQ(r.size(), 1u);
  const json& m = r[0]["metric"];
  EXPECT_EQ(m["UUID"], test_support::FakeH100Uuid(0));
  EXPECT_EQ(m["pci_bus_id"], "00000000:1B:00.0");
  EXPECT_EQ(m["device"], "nvidia0");
  EXPECT_EQ(m["modelName"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m["Hostname"], "gpu-node-1");
  EXPECT_EQ(m["DCGM_FI_DRIVER_VERSION"], "580.95.05");
  EXPECT_EQ(m["pod"], "trainer-0");
  EXPECT_EQ(m["namespace"], "ml");
  EXPECT_EQ(m["container"], "main");
  // A time-sliced GPU shows every pod that shares it.
  EXPECT_EQ(Data(R"(DCGM_FI_DEV_GPU_UTIL{gpu="1"})").size(), 2u);
  EXPECT_EQ(Data(R"(DCGM_FI_DEV_GPU_UTIL{gpu="1", pod="share-b"})").size(), 1u);
}

TEST_F(PrometheusIntegration, UnsupportedFieldsAreAbsentNotZero) {
  Data(R"(DCGM_FI_DEV_MEMORY_TEMP{gpu="0"})");
  EXPECT_TRUE(prometheus_->Query(R"(DCGM_FI_DEV_MEMORY_TEMP{gpu="1"})").empty());
}

TEST_F(PrometheusIntegration, MigInstancesHaveTheirOwnSeries) {
  json fb = Data(R"(DCGM_FI_DEV_FB_USED{gpu="2", GPU_I_PROFILE="1g.10gb"})");
  ASSERT_EQ(fb.size(), 2u);
  json second = Data(R"(DCGM_FI_DEV_FB_USED{gpu="2", GPU_I_ID="8"})");
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(Value(second[0]), 2048);
  EXPECT_EQ(second[0]["metric"]["pod"], "mig-a");
  EXPECT_EQ(Data("accel_mig_info").size(), 2u);
}

TEST_F(PrometheusIntegration, AccelFamilyCoversTheFleetWithOneLabelSet) {
  json used = Data(R"(accel_memory_used_bytes{vendor="nvidia", index="0"})");
  ASSERT_EQ(used.size(), 1u);
  EXPECT_EQ(Value(used[0]), 20480.0 * 1048576);
  EXPECT_EQ(used[0]["metric"]["numa_node"], "0");  // joined from the topology fixture
  EXPECT_EQ(used[0]["metric"]["pci_address"], "0000:1b:00.0");
  EXPECT_EQ(Value(Data(R"(accel_devices{vendor="nvidia"})")[0]), 3);
  EXPECT_EQ(Data("accel_device_up == 1").size(), 3u);
  // Pods join through accel_pod_device_info.
  json joined = Data(
      R"(accel_utilization_ratio * on(uuid) group_left(pod) accel_pod_device_info{pod="trainer-0"})");
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_DOUBLE_EQ(Value(joined[0]), 0.70);
  EXPECT_EQ(Data(R"(accel_pod_device_info{pod="share-a", replica="0"})").size(), 1u);
}

// Healthy: up, and the scrape carried samples. How long a scrape takes is speed, not a contract:
// bench/exporter_bench.cc measures it (docs/benchmarks.md, "Exporter").
TEST_F(PrometheusIntegration, ScrapesAreHealthy) {
  json up = Data(R"(up{job="accel-exporter"})");
  EXPECT_EQ(Value(up[0]), 1);
  json samples = Data(R"(scrape_samples_scraped{job="accel-exporter"})");
  EXPECT_GT(Value(samples[0]), 0);
}

}  // namespace
}  // namespace accel::telemetry
