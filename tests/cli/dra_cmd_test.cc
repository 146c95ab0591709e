// `accel dra slices|claim` as an operator runs it, on the fake HGX H100 (fixtures/hosts/hgx-h100.json
// with eight whole H100s from the fake NVML): the table of published devices with their rails,
// ResourceSlices in YAML (validated against resource.k8s.io/v1 when ../shared is there) and JSON,
// a claim of one GPU and its NIC (NCCL_IB_HCA), and the exit codes of refused and malformed
// claims and bad flags.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "support/crd_validate.h"
#include "support/fake_nvml_config.h"
#include "support/fake_sysfs.h"
#include "topology/sources.h"

namespace accel::cli::testing {
namespace dra_cmd_test {

using nlohmann::json;

class DraCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir("dra");
    json gpus = json::array();
    for (int i = 0; i < 8; ++i) gpus.push_back(test_support::FakeH100(i, test_support::kHgxH100Gpus[i]));
    WriteFile(dir_ / "nvml.json", json{{"devices", gpus}}.dump());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// `accel dra <args>` on the fake HGX H100 as node "node-a".
  RunResult Dra(const std::string& args, bool merge_stderr = false, const std::string& env = "") {
    return RunShellCapture(env + "FAKE_NVML_CONFIG=" + (dir_ / "nvml.json").string() + " " + ACCEL_BINARY +
                           " dra " + args + " --nvml-library " + ACCEL_FAKE_NVML +
                           " --vendors nvidia --topology " + Src("fixtures/hosts/hgx-h100.json") +
                           " --node node-a" + (merge_stderr ? " 2>&1" : " 2>/dev/null"));
  }

  /// A sysfs copy of the fixture host: RDMA ports ACTIVE and a uverbs node per RDMA device, as
  /// Prepare needs to name /dev/infiniband/uverbsN. Returns its path.
  std::string Root() {
    topology::HostTopology host = topology::LoadTopology(Src("fixtures/hosts/hgx-h100.json"));
    std::string root = (dir_ / "root").string();
    accel::testing::WriteFakeSysfs(host, root);
    int n = 0;
    for (const auto& d : host.pci)
      for (const auto& rdma : d.rdma_devices)
        accel::testing::WriteFakeFile(root, "sys/class/infiniband_verbs/uverbs" + std::to_string(n++) + "/ibdev",
                                      rdma);
    return root;
  }

  /// A claim file allocated `devices` (request "gpu" or "nic" by name) from `pool`.
  std::string Claim(const std::vector<std::string>& devices, const std::string& pool = "node-a") {
    std::string yaml =
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
        "metadata: {name: train-0, namespace: team-a, uid: 1b4e28ba-2fa1-11d2-883f-0016d3cca427}\n"
        "spec: {devices: {requests: []}}\n"
        "status:\n  allocation:\n    devices:\n      results:\n";
    for (const std::string& d : devices)
      yaml += "      - {request: " + std::string(d.rfind("gpu", 0) == 0 ? "gpu" : "nic") +
              ", driver: accel.io, pool: " + pool + ", device: " + d + "}\n";
    std::string path = (dir_ / "claim.yaml").string();
    WriteFile(path, yaml);
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(DraCli, HelpTeachesBothSubcommands) {
  RunResult r = RunAccel("dra slices --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* text : {"Examples", "Exit status", "--topology", "--nvml-library", "--node", "--driver",
                           "--root", "--no-vfs", "-o yaml"})
    EXPECT_NE(r.output.find(text), std::string::npos) << text;
  r = RunAccel("dra claim --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* text : {"Examples", "Exit status", "--claim", "--socket-ifname", "--topo-file",
                           "kubectl get resourceclaim"})
    EXPECT_NE(r.output.find(text), std::string::npos) << text;
  r = RunAccel("--help");
  EXPECT_NE(r.output.find("dra"), std::string::npos);
}

TEST_F(DraCli, TableShowsEightGpusOnEightRails) {
  RunResult r = Dra("slices");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"DEVICE", "RAIL", "PCIE SWITCH", "Pool node-a of driver accel.io",
                           "storage/management"})
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;
  // gpu-<i> is on rail i with a PIX path, and so is exactly one NIC.
  for (int i = 0; i < 8; ++i) {
    std::string gpu = "\ngpu-" + std::to_string(i) + " ";
    size_t at = r.output.find(gpu);
    ASSERT_NE(at, std::string::npos) << gpu << r.output;
    std::string line = r.output.substr(at + 1, r.output.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find("  " + std::to_string(i) + "     PIX"), std::string::npos) << line;
  }
  EXPECT_NE(r.output.find("nic-0 "), std::string::npos);
  EXPECT_NE(r.output.find("mlx5_0:1"), std::string::npos);
}

TEST_F(DraCli, YamlIsTheResourceSlicesTheDriverPublishes) {
  RunResult r = Dra("slices -o yaml");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\n", 0), 0u) << r.output;
  for (const char* text : {"name: node-a-accel.io-0", "nodeName: node-a", "generation: 1", "- name: gpu-0",
                           "- name: nic-0", "rail:", "pcieSwitch:", "resource.kubernetes.io/pciBusID:"})
    EXPECT_NE(r.output.find(text), std::string::npos) << text;
  ACCEL_REQUIRE_CRD_VALIDATOR();
  const test_support::CrdResult v = test_support::ValidateObjects(r.output, "dra-slices");
  EXPECT_EQ(v.exit_code, 0) << v.output;
}

TEST_F(DraCli, JsonIsAResourceSliceList) {
  RunResult r = Dra("slices -o json --no-vfs --driver gpu.example.com");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json list = json::parse(r.output);
  EXPECT_EQ(list["kind"], "ResourceSliceList");
  ASSERT_FALSE(list["items"].empty());
  int gpus = 0;
  for (const json& slice : list["items"]) {
    EXPECT_EQ(slice["spec"]["driver"], "gpu.example.com");
    EXPECT_EQ(slice["spec"]["pool"]["generation"], 1);
    for (const json& d : slice["spec"].value("devices", json::array()))
      if (d["attributes"]["type"]["string"] == "gpu") ++gpus;
  }
  EXPECT_EQ(gpus, 8);
}

TEST_F(DraCli, ClaimOfOneGpuAndItsNicGetsNcclIbHca) {
  std::string root = Root();
  RunResult r = Dra("claim --claim " + Claim({"gpu-0", "nic-0"}) + " --root " + root, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* text : {"ResourceClaim team-a/train-0", "2 device(s)", "gpu-0", "nic-0",
                           "k8s.accel.io/claim=1b4e28ba-2fa1-11d2-883f-0016d3cca427-gpu-0",
                           "NCCL_IB_HCA==mlx5_0:1", "NCCL_SOCKET_IFNAME==eth0", "NCCL_NET_GDR_LEVEL=PIX",
                           "\"cdiVersion\"", "/dev/infiniband/uverbs0", "NVIDIA_VISIBLE_DEVICES="})
    EXPECT_NE(r.output.find(text), std::string::npos) << text << "\n" << r.output;

  // TMPDIR of its own, to see that the preparer's private directory is removed.
  std::filesystem::create_directories(dir_ / "tmp");
  r = Dra("claim -o json --socket-ifname net1 --claim " + Claim({"gpu-0", "nic-0"}) + " --root " + root,
          false, "TMPDIR=" + (dir_ / "tmp").string() + " ");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json out = json::parse(r.output);
  EXPECT_EQ(out["ncclEnv"]["NCCL_IB_HCA"], "=mlx5_0:1");
  EXPECT_EQ(out["ncclEnv"]["NCCL_SOCKET_IFNAME"], "=net1");
  ASSERT_EQ(out["devices"].size(), 2u);
  EXPECT_EQ(out["devices"][0]["rail"], 0);
  EXPECT_EQ(out["cdiSpec"]["kind"], "k8s.accel.io/claim");
  EXPECT_TRUE(std::filesystem::is_empty(dir_ / "tmp"));
}

TEST_F(DraCli, RefusedClaimsExitOneWithPreparesMessage) {
  RunResult r = Dra("claim --claim " + Claim({"gpu-99"}), true);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("device gpu-99 is not published by this node (pool node-a)"), std::string::npos)
      << r.output;

  r = Dra("claim --claim " + Claim({"gpu-0"}, "node-b"), true);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("allocated for another node"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--node node-b"), std::string::npos) << r.output;

  WriteFile(dir_ / "pending.yaml",
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\n"
            "metadata: {name: pending, namespace: team-a, uid: u-1}\nspec: {devices: {requests: []}}\n");
  r = Dra("claim --claim " + (dir_ / "pending.yaml").string(), true);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("not allocated"), std::string::npos) << r.output;

  // A NIC without a sysfs copy: its uverbs node cannot be named, as on a host without one.
  r = Dra("claim --claim " + Claim({"gpu-0", "nic-0"}), true);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--root"), std::string::npos) << r.output;
}

TEST_F(DraCli, MalformedClaimsAndBadFlagsExitTwo) {
  WriteFile(dir_ / "bad.yaml", "metadata: {name: x\n");
  RunResult r = Dra("claim --claim " + (dir_ / "bad.yaml").string(), true);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.yaml"), std::string::npos) << r.output;

  WriteFile(dir_ / "types.yaml",
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: x, namespace: y, uid: u}\n"
            "status: {allocation: {devices: {results: [{request: gpu, driver: accel.io, pool: node-a, device: 7}]}}}\n");
  r = Dra("claim --claim " + (dir_ / "types.yaml").string(), true);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("results[0].device"), std::string::npos) << r.output;

  WriteFile(dir_ / "pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n");
  r = Dra("claim --claim " + (dir_ / "pod.yaml").string(), true);
  EXPECT_EQ(r.exit_code, 2) << r.output;

  r = Dra("claim --claim " + (dir_ / "missing.yaml").string(), true);
  EXPECT_EQ(r.exit_code, 2) << r.output;

  EXPECT_EQ(Dra("slices -o xml").exit_code, 2);
  EXPECT_EQ(Dra("slices --bogus").exit_code, 2);
  EXPECT_EQ(Dra("claim").exit_code, 2);  // --claim is required
  EXPECT_EQ(Dra("slices --root " + (dir_ / "nowhere").string()).exit_code, 2);
  EXPECT_EQ(Dra("slices --driver Not_A_Name").exit_code, 2);
  EXPECT_EQ(RunAccel("dra").exit_code, 2);
}

}  // namespace
}  // namespace accel::cli::testing
