// A key given twice in a file accel reads exits 2 through every command that reads one, and the
// message names the file, the key path and both lines (issue 24): the node agent's YAML, the
// kubeconfig its DRA driver reads, a mig-parted config, the exporter's web config, a host policy,
// and a host JSON.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_test_util.h"

namespace accel::cli::testing {
namespace duplicate_keys_cli_test {

class DuplicateKeysCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshDir("duplicate-keys"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  /// Expects exit 2 and "FILE:LINE:COL: FIELD: key given twice (lines A and B)" in the output.
  static void ExpectRefused(const RunResult& r, const std::string& file, const std::string& position,
                            const std::string& field, const std::string& lines) {
    EXPECT_EQ(r.exit_code, 2) << r.output;
    const std::string message = file + ":" + position + ": " + field + ": key given twice (" + lines + ")";
    EXPECT_NE(r.output.find(message), std::string::npos) << "expected: " << message << "\ngot: " << r.output;
    EXPECT_NE(r.output.find("keep one"), std::string::npos) << r.output;
  }

  static std::string FakeNvml() {
    return "FAKE_NVML_CONFIG=" + Src("tests/fakes/nvml/examples/h100x8-mig.json") + " ";
  }

  std::filesystem::path dir_;
};

TEST_F(DuplicateKeysCli, AgentYaml) {
  // yaml-cpp alone would start the agent with the second labels section and exit 0.
  const std::string config = Path("agent.yaml");
  WriteFile(config,
            "vendors: [nvidia]\n"
            "labels: {file: " + Path("features-a") + "}\n"
            "exporter: {listen: '127.0.0.1:0'}\n"
            "labels: {file: " + Path("features-b") + "}\n");
  RunResult r = RunShellCapture(FakeNvml() + ACCEL_BINARY + " serve --once --config " + config +
                                " --nvml-library " + ACCEL_FAKE_NVML + " 2>&1");
  ExpectRefused(r, config, "4:1", "labels", "lines 2 and 4");
  EXPECT_FALSE(std::filesystem::exists(Path("features-a")));
  EXPECT_FALSE(std::filesystem::exists(Path("features-b")));

  // Nested, in the device plugin's config embedded in the agent's file.
  WriteFile(config,
            "vendors: [nvidia]\n"
            "devicePlugin:\n"
            "  config:\n"
            "    sharing:\n"
            "      timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2}]}\n"
            "      timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}\n");
  r = RunShellCapture(FakeNvml() + ACCEL_BINARY + " serve --once --config " + config + " --nvml-library " +
                      ACCEL_FAKE_NVML + " 2>&1");
  ExpectRefused(r, config, "6:7", "devicePlugin.config.sharing.timeSlicing", "lines 5 and 6");
}

TEST_F(DuplicateKeysCli, KubeconfigOfTheDraDriver) {
  const std::string kubeconfig = Path("kubeconfig");
  WriteFile(kubeconfig,
            "apiVersion: v1\n"
            "kind: Config\n"
            "clusters: [{name: t, cluster: {server: 'https://127.0.0.1:1'}}]\n"
            "users: [{name: u, user: {token: a, token: b}}]\n"
            "contexts: [{name: c, context: {cluster: t, user: u}}]\n"
            "current-context: c\n");
  std::filesystem::create_directories(dir_ / "reg");
  const std::string config = Path("agent.yaml");
  WriteFile(config,
            "vendors: [nvidia]\n"
            "topology: " + Src("fixtures/hosts/hgx-h100.json") + "\n"
            "exporter: {enabled: false}\n"
            "labels: {enabled: false}\n"
            "devicePlugin: {enabled: false}\n"
            "dra:\n"
            "  enabled: true\n"
            "  nodeName: node-a\n"
            "  kubeconfig: " + kubeconfig + "\n"
            "  registryDir: " + Path("reg") + "\n"
            "  pluginDir: " + Path("plugin") + "\n"
            "  cdiDir: " + Path("cdi") + "\n"
            "  stateDir: " + Path("state") + "\n"
            "  hostRoot: " + Path("root") + "\n");
  RunResult r = RunShellCapture(FakeNvml() + "timeout 120 " + ACCEL_BINARY + " serve --once --config " + config +
                                " --nvml-library " + ACCEL_FAKE_NVML + " 2>&1");
  ExpectRefused(r, kubeconfig, "4:36", "users[0].user.token", "both on line 4, columns 26 and 36");
}

TEST_F(DuplicateKeysCli, MigPartedConfig) {
  const std::string file = Path("mig.yaml");
  WriteFile(file,
            "version: v1\n"
            "mig-configs:\n"
            "  all-1g.10gb:\n"
            "    - devices: all\n"
            "      mig-enabled: true\n"
            "      mig-devices:\n"
            "        \"1g.10gb\": 7\n"
            "        \"1g.10gb\": 3\n");
  ExpectRefused(RunAccel("mig validate " + file), file, "8:9", "mig-configs.\"all-1g.10gb\"[0].mig-devices.\"1g.10gb\"",
                "lines 7 and 8");
}

TEST_F(DuplicateKeysCli, ExporterWebConfig) {
  const std::string file = Path("web.yml");
  WriteFile(file,
            "basic_auth_users:\n"
            "  alice: $2y$10$1p6FGH4HsBF1Qj5ulLd6JOe3q8EaxwrCjl6X2bMHmvY1Nk2hMc3Ma\n"
            "  bob: $2y$10$1p6FGH4HsBF1Qj5ulLd6JOe3q8EaxwrCjl6X2bMHmvY1Nk2hMc3Ma\n"
            "  alice: $2y$10$1p6FGH4HsBF1Qj5ulLd6JOe3q8EaxwrCjl6X2bMHmvY1Nk2hMc3Ma\n");
  RunResult r = RunShellCapture("timeout 120 " + std::string(ACCEL_BINARY) +
                                " exporter --web.listen-address 127.0.0.1:0 --web.config.file " + file +
                                " --vendors nvidia --nvml-library " + ACCEL_FAKE_NVML + " 2>&1");
  ExpectRefused(r, file, "4:3", "basic_auth_users.alice", "lines 2 and 4");
}

TEST_F(DuplicateKeysCli, HostPolicy) {
  const std::string policy = Path("policy.yaml");
  WriteFile(policy, "cpu_dedicated_set: \"2-55\"\nreserved_host_memory_mb: 4096\ncpu_dedicated_set: \"2-111\"\n");
  const std::string env = "ACCEL_FLEET_STORE=sqlite:" + Path("default-fleet.db") + " ACCEL_STATE=" +
                          Path("default-state.db") + " HOME=" + dir_.string() + " ";
  RunResult r = RunShellCapture(env + ACCEL_BINARY + " fleet host add --store sqlite:" + Path("fleet.db") +
                                " --topology " + Src("fixtures/hosts/hgx-h100.json") + " --name gpu-001 --policy " +
                                policy + " 2>&1");
  ExpectRefused(r, policy, "3:1", "cpu_dedicated_set", "lines 1 and 3");
}

TEST_F(DuplicateKeysCli, HostJson) {
  std::ifstream in(Src("fixtures/hosts/devbox.json"));
  std::string host((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A second "hostname" on the line after the first.
  const size_t at = host.find("\n", host.find("\"hostname\""));
  host.insert(at + 1, "  \"hostname\": \"other\",\n");
  const std::string file = Path("host.json");
  WriteFile(file, host);
  ExpectRefused(RunAccel("topo --topology " + file), file, "4:3", "hostname", "lines 3 and 4");
}

}  // namespace duplicate_keys_cli_test
}  // namespace accel::cli::testing
