// accel fabric matrix|pairs end to end: the built binary on fixture hosts and fake sysfs trees.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "support/fake_sysfs.h"
#include "topology/sources.h"

namespace accel::cli {
namespace fabric_cli_test {

using testing::FreshDir;
using testing::RunAccel;
using testing::Src;

const std::string kHgx = Src("fixtures/hosts/hgx-h100.json");

size_t Lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// The whitespace-separated cells of the first line whose first cell is `first`.
std::vector<std::string> Row(const std::string& text, const std::string& first) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cells(line);
    std::vector<std::string> v;
    for (std::string c; cells >> c;) v.push_back(c);
    if (!v.empty() && v[0] == first) return v;
  }
  return {};
}

TEST(FabricCli, PairsTable) {
  auto r = RunAccel("fabric pairs -t " + kHgx);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("GPU  PCI"), std::string::npos) << r.output;
  EXPECT_EQ(Row(r.output, "0"), (std::vector<std::string>{"0", "0000:1b:00.0", "0", "mlx5_0:1",
                                                          "0000:18:00.0", "ibp24s0", "PIX",
                                                          "PIX", "48"}));
  EXPECT_EQ(Row(r.output, "7"), (std::vector<std::string>{"7", "0000:df:00.0", "1", "mlx5_11:1",
                                                          "0000:dc:00.0", "ibp220s0", "PIX",
                                                          "PIX", "48"}));
  EXPECT_NE(r.output.find("Excluded NICs:"), std::string::npos);
  EXPECT_NE(r.output.find("mlx5_7:1  0000:a8:00.0  storage/management NIC"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("Notes:"), std::string::npos);
}

TEST(FabricCli, PairsJsonAndYaml) {
  auto r = RunAccel("fabric pairs -t " + kHgx + " --gpus 43:00.0,0000:1b:00.0 -o json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["pairs"].size(), 2u);
  EXPECT_EQ(j["pairs"][0]["gpu"], "0000:1b:00.0");
  EXPECT_EQ(j["pairs"][0]["nic"]["rdma_device"], "mlx5_0");
  EXPECT_EQ(j["pairs"][1]["nic"]["rdma_device"], "mlx5_3");
  EXPECT_EQ(j["pairs"][1]["index"], 1);
  EXPECT_EQ(j["pairs"][1]["path"]["nccl"], "PIX");
  EXPECT_EQ(j["pairs"][1]["path"]["bandwidth_gbs"], 48.0);

  r = RunAccel("fabric pairs -t " + kHgx + " -o yaml", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pairs:"), std::string::npos);
  EXPECT_NE(r.output.find("gpu: \"0000:1b:00.0\""), std::string::npos) << r.output;
}

TEST(FabricCli, MatrixLikeNvidiaSmi) {
  auto r = RunAccel("fabric matrix -t " + kHgx, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string& out = r.output;
  std::string header = out.substr(0, out.find('\n'));
  EXPECT_NE(header.find("GPU0"), std::string::npos);
  EXPECT_NE(header.find("GPU7"), std::string::npos);
  EXPECT_NE(header.find("NIC11"), std::string::npos);
  EXPECT_NE(header.find("CPU Affinity"), std::string::npos);
  EXPECT_NE(header.find("NUMA Affinity"), std::string::npos);
  EXPECT_NE(out.find("Legend:"), std::string::npos);
  EXPECT_NE(out.find("NODE = Connection traversing PCIe as well as the interconnect"),
            std::string::npos);
  EXPECT_NE(out.find("NIC Legend:"), std::string::npos);
  EXPECT_NE(out.find("  NIC0: mlx5_0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  NIC1: mlx5_1  (not used: storage/management"), std::string::npos) << out;
  // GPU0's row: X to itself, PIX to NIC0, NODE to NIC1 (storage NIC on NUMA 0).
  size_t row = out.find("\nGPU0 ");
  ASSERT_NE(row, std::string::npos);
  std::string line = out.substr(row + 1, out.find('\n', row + 1) - row - 1);
  std::istringstream cells(line);
  std::vector<std::string> v;
  for (std::string c; cells >> c;) v.push_back(c);
  ASSERT_GE(v.size(), 21u) << line;
  EXPECT_EQ(v[1], "X");
  EXPECT_EQ(v[9], "PIX");
  EXPECT_EQ(v[10], "NODE");
  EXPECT_EQ(v[5], "SYS");  // GPU4 on the other socket
  EXPECT_EQ(Lines(out.substr(0, out.find("\nLegend:"))), 21u);  // header + 20 rows

  r = RunAccel("fabric matrix --nccl -t " + kHgx, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("NODE "), std::string::npos);
  EXPECT_NE(r.output.find("PHB  = through a CPU root complex"), std::string::npos);
}

// The cells of the row whose line starts with `name` (not the header, which starts blank).
std::vector<std::string> MatrixRow(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + " ", 0) != 0) continue;
    std::istringstream cells(line);
    std::vector<std::string> v;
    for (std::string c; cells >> c;) v.push_back(c);
    return v;
  }
  return {};
}

// With NVML (here the tests' fake, 18 NVSwitch links per GPU), GPU pairs read NV18 as in
// nvidia-smi, and NVL in NCCL's terms; GPU-NIC cells keep their PCIe path.
TEST(FabricCli, MatrixShowsNvlinkFromNvml) {
  const std::string env = "FAKE_NVML_CONFIG=" + Src("tests/fakes/nvml/examples/h100x8-mig.json") +
                          " ";
  auto r = testing::RunShellCapture(env + ACCEL_BINARY + " fabric matrix -t " + kHgx +
                                    " --nvml-library " + ACCEL_FAKE_NVML + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> gpu0 = MatrixRow(r.output, "GPU0");
  ASSERT_GE(gpu0.size(), 21u) << r.output;
  EXPECT_EQ(gpu0[1], "X");
  for (int g = 2; g <= 8; ++g) EXPECT_EQ(gpu0[g], "NV18") << g;
  EXPECT_EQ(gpu0[9], "PIX");
  EXPECT_NE(r.output.find("NV#  = Connection traversing a bonded set of # NVLinks"),
            std::string::npos);

  r = testing::RunShellCapture(env + ACCEL_BINARY + " fabric matrix --nccl -t " + kHgx +
                               " --nvml-library " + ACCEL_FAKE_NVML + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> gpu3 = MatrixRow(r.output, "GPU3");
  ASSERT_GE(gpu3.size(), 6u) << r.output;
  EXPECT_EQ(gpu3[5], "NVL") << r.output;

  // Without NVML a file topology says where NVLink counts would come from.
  r = RunAccel("fabric matrix -t " + kHgx, false);
  EXPECT_NE(r.output.find("no NVLink reported"), std::string::npos);
}

TEST(FabricCli, PortsFromFakeSysfsRoot) {
  auto dir = FreshDir("fabric-root");
  topology::HostTopology host = topology::LoadTopology(kHgx);
  accel::testing::WriteFakeSysfs(host, dir.string());
  accel::testing::WriteFakeFile(dir.string(), "sys/class/infiniband/mlx5_0/ports/1/state",
                                "1: DOWN\n");
  auto r = RunAccel("fabric pairs -t " + kHgx + " --root " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("mlx5_0:1  0000:18:00.0  port DOWN"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("7 NICs for 8 GPUs"), std::string::npos) << r.output;
  std::filesystem::remove_all(dir);
}

TEST(FabricCli, BadInputExitsTwoWithOneLine) {
  auto r = RunAccel("fabric pairs -t " + kHgx + " --gpus 0000:ee:00.0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(Lines(r.output), 1u) << r.output;
  EXPECT_EQ(r.output.rfind("accel fabric pairs: command line: --gpus:", 0), 0u) << r.output;

  r = RunAccel("fabric pairs -t " + kHgx + " --link-layer FDDI");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--link-layer"), std::string::npos);

  r = RunAccel("fabric matrix -t " + kHgx + " --root /nonexistent/accel-root");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--root"), std::string::npos);

  r = RunAccel("fabric matrix -t /nonexistent/host.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(FabricCli, LinkLayerAndExcludeFlags) {
  auto r = RunAccel("fabric pairs -t " + kHgx + " --exclude mlx5_0,ibp64s0 -o json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["nics"][0]["excluded"], "excluded by --exclude mlx5_0");
  r = RunAccel("fabric pairs -t " + kHgx + " --link-layer IB --keep-unswitched -o json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  j = nlohmann::json::parse(r.output);
  EXPECT_TRUE(j["nics"][1]["excluded"].is_null());
}

TEST(FabricCli, HelpTeachesWithExamples) {
  for (const char* sub : {"matrix", "pairs"}) {
    auto r = RunAccel(std::string("fabric ") + sub + " --help");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("Examples:"), std::string::npos) << sub;
    EXPECT_NE(r.output.find("--root"), std::string::npos) << sub;
    EXPECT_NE(r.output.find("--gpus"), std::string::npos) << sub;
  }
}

TEST(FabricCli, HostWithoutNics) {
  auto r = RunAccel("fabric pairs -t " + Src("fixtures/hosts/devbox.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no RDMA NIC found"), std::string::npos) << r.output;
  r = RunAccel("fabric matrix -t " + Src("fixtures/hosts/devbox.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("NIC Legend"), std::string::npos);
}

}  // namespace
}  // namespace accel::cli
