// accel fabric env|pod|topo-xml|netconf end to end: the built binary on the HGX H100 fixture,
// outputs read back (sh, JSON, YAML, libxml2) and errors as one line with exit status 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace accel::cli::testing {
namespace fabric_out_cli_test {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kHgx = "--topology " + Src("fixtures/hosts/hgx-h100.json");
const std::string kDomain = Src("examples/fabric/hgx-8gpu.libvirt.xml");

const char* kComputeHcas =
    "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1";

TEST(FabricEnvCli, ShellOutputSourcesAndPairsRanks) {
  const std::filesystem::path dir = FreshDir("fabric-env");
  RunResult r = RunAccel("fabric env " + kHgx + " --fabric rail", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  WriteFile(dir / "env.sh", r.output);
  RunResult sourced = RunShellCapture(
      "LOCAL_RANK=1 sh -c '. " + (dir / "env.sh").string() +
      " && echo \"$NCCL_IB_HCA|$NCCL_SOCKET_IFNAME|$NCCL_CROSS_NIC|$UCX_NET_DEVICES\"'");
  EXPECT_EQ(sourced.output, std::string(kComputeHcas) + "|=eth0|0|mlx5_3:1\n");
  std::filesystem::remove_all(dir);
}

TEST(FabricEnvCli, JsonOutputAndOptions) {
  RunResult r = RunAccel("fabric env " + kHgx +
                             " -o json --debug --ib-tc 106 --socket-ifname ^docker "
                             "--topo-file /var/run/nvidia-topologyd/virtualTopology.xml",
                         false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json doc = nlohmann::json::parse(r.output);
  EXPECT_EQ(doc["env"]["NCCL_IB_HCA"], kComputeHcas);
  EXPECT_EQ(doc["env"]["NCCL_SOCKET_IFNAME"], "^docker");
  EXPECT_EQ(doc["env"]["NCCL_IB_TC"], "106");
  EXPECT_EQ(doc["env"]["NCCL_DEBUG"], "INFO");
  EXPECT_EQ(doc["env"]["NCCL_TOPO_FILE"], "/var/run/nvidia-topologyd/virtualTopology.xml");
  EXPECT_FALSE(doc["env"].contains("NCCL_CROSS_NIC"));
  ASSERT_EQ(doc["ranks"].size(), 8u);
  const char* want[] = {"mlx5_0:1", "mlx5_3:1", "mlx5_4:1",  "mlx5_5:1",
                        "mlx5_6:1", "mlx5_9:1", "mlx5_10:1", "mlx5_11:1"};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(doc["ranks"][i]["env"]["UCX_NET_DEVICES"], want[i]) << i;
}

TEST(FabricEnvCli, GpuSubset) {
  RunResult r = RunAccel("fabric env " + kHgx + " -o json --gpus 1b:00.0,0000:df:00.0", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json doc = nlohmann::json::parse(r.output);
  EXPECT_EQ(doc["env"]["NCCL_IB_HCA"], "=mlx5_0:1,mlx5_11:1");
  EXPECT_EQ(doc["ranks"].size(), 2u);
}

TEST(FabricEnvCli, BadInputIsOneLineAndExit2) {
  RunResult r = RunAccel("fabric env --topology /nonexistent.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("accel fabric env: "));
  r = RunAccel("fabric env " + kHgx + " --gpus 99:00.0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = RunAccel("fabric env " + kHgx + " --fabric mesh");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = RunAccel("fabric env " + kHgx + " --ib-tc 300");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(FabricPodCli, PyTorchJobWithPerRailResources) {
  RunResult r = RunAccel(
      "fabric pod " + kHgx + " --rdma-resource 'nvidia.com/rdma_rail%d' --job llm --nodes 3",
      false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<YAML::Node> docs = YAML::LoadAll(r.output);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0]["kind"].as<std::string>(), "ConfigMap");
  EXPECT_EQ(docs[1]["kind"].as<std::string>(), "PyTorchJob");
  EXPECT_EQ(docs[1]["metadata"]["name"].as<std::string>(), "llm");
  const YAML::Node worker = docs[1]["spec"]["pytorchReplicaSpecs"]["Worker"];
  EXPECT_EQ(worker["replicas"].as<int>(), 2);
  const YAML::Node limits = worker["template"]["spec"]["containers"][0]["resources"]["limits"];
  EXPECT_EQ(limits["nvidia.com/gpu"].as<int>(), 8);
  EXPECT_EQ(limits["nvidia.com/rdma_rail7"].as<int>(), 1);
}

TEST(FabricTopoXmlCli, WritesFileAtomicallyAndReadsStdin) {
  const std::filesystem::path dir = FreshDir("fabric-topo");
  const std::filesystem::path out = dir / "virtualTopology.xml";
  RunResult r =
      RunAccel("fabric topo-xml " + kHgx + " --domain " + kDomain + " -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "") << "no warnings for accel's own layout";
  RunResult cat = RunShellCapture("cat " + out.string());
  EXPECT_EQ(cat.output.rfind("<system version=\"1\">\n", 0), 0u);
  EXPECT_THAT(cat.output, HasSubstr("<pci busid=\"0000:f8:00.0\" class=\"0x030200\""));
  EXPECT_THAT(cat.output, HasSubstr("<pci busid=\"0000:fc:00.0\" class=\"0x020700\""));
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u) << "no temporary file left";
  // The same from stdin, to stdout.
  RunResult piped = RunShellCapture("cat " + kDomain + " | " + ACCEL_BINARY + " fabric topo-xml " +
                                    kHgx + " --domain - 2>/dev/null");
  EXPECT_EQ(piped.exit_code, 0);
  EXPECT_EQ(piped.output, cat.output);
  std::filesystem::remove_all(dir);
}

TEST(FabricTopoXmlCli, BadDomainOrMapWritesNothing) {
  const std::filesystem::path dir = FreshDir("fabric-topo-bad");
  WriteFile(dir / "bad.xml", "<domain>\n<devices>\n</domain>\n");
  const std::filesystem::path out = dir / "out.xml";
  RunResult r = RunAccel("fabric topo-xml " + kHgx + " --domain " + (dir / "bad.xml").string() +
                         " -o " + out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("accel fabric topo-xml: " + (dir / "bad.xml").string() +
                                  ":4: malformed XML"));
  EXPECT_FALSE(std::filesystem::exists(out));
  r = RunAccel("fabric topo-xml " + kHgx + " --domain " + kDomain + " --guest-map nonsense -o " +
               out.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--guest-map: nonsense"));
  EXPECT_FALSE(std::filesystem::exists(out));
  r = RunAccel("fabric topo-xml " + kHgx);
  EXPECT_EQ(r.exit_code, 2) << "--domain is required";
  // A directory that is not there is the OS refusing the write: SystemError, exit 5.
  r = RunAccel("fabric topo-xml " + kHgx + " --domain " + kDomain + " -o /nonexistent-dir/x.xml");
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot write /nonexistent-dir/x.xml"));
  std::filesystem::remove_all(dir);
}

TEST(FabricTopoXmlCli, GuestMapOverridesAndWarnings) {
  RunResult r = RunAccel("fabric topo-xml " + kHgx + " --domain " + kDomain +
                         " --guest-map 1b:00.0=0000:07:00.0 --gpus 1b:00.0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("<pci busid=\"0000:07:00.0\" class=\"0x030200\""));
}

TEST(FabricNetconfCli, ThreeKinds) {
  RunResult r = RunAccel("fabric netconf " + kHgx + " --kind sriov", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json sriov = nlohmann::json::parse(r.output);
  ASSERT_EQ(sriov["resourceList"].size(), 8u);
  EXPECT_EQ(sriov["resourceList"][0]["selectors"][0]["rootDevices"][0], "0000:18:00.0");

  r = RunAccel("fabric netconf " + kHgx + " --kind rdma-shared --no-per-numa --rdma-hca-max 4",
               false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json rdma = nlohmann::json::parse(r.output);
  ASSERT_EQ(rdma["configList"].size(), 8u);
  EXPECT_EQ(rdma["configList"][7]["selectors"]["ifNames"][0], "ibp220s0");
  EXPECT_EQ(rdma["configList"][7]["rdmaHcaMax"], 4);

  r = RunAccel("fabric netconf " + kHgx, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  YAML::Node policy = YAML::Load(r.output);
  EXPECT_EQ(policy["kind"].as<std::string>(), "NicClusterPolicy");
  EXPECT_EQ(nlohmann::json::parse(policy["spec"]["sriovDevicePlugin"]["config"].as<std::string>()),
            sriov);

  r = RunAccel("fabric netconf " + kHgx + " --kind sriov");  // notes on stderr
  EXPECT_THAT(r.output, HasSubstr("accel fabric netconf: note: no VFs yet"));
  r = RunAccel("fabric netconf " + kHgx + " --kind bogus");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(FabricOutCli, HelpTeachesWithExamples) {
  for (const char* cmd : {"env", "pod", "topo-xml", "netconf"}) {
    RunResult r = RunAccel(std::string("fabric ") + cmd + " --help");
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_THAT(r.output, HasSubstr("Examples:")) << cmd;
    EXPECT_THAT(r.output, HasSubstr("--topology")) << cmd;
  }
}

}  // namespace
}  // namespace accel::cli::testing
