// NodeLabels on the fake H100×8 (none / mixed / single, with and without time-slicing), the
// MI300X and Gaudi 2 fakes, and the feature file writer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "kube/node_labels.h"
#include "kube_fixtures.h"

namespace accel::kube {
namespace kube_labels_test {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::Config;

std::map<std::string, std::string> LabelsFor(const std::vector<NodeDevice>& devices,
                                             const std::string& yaml,
                                             const topology::HostTopology& host) {
  PluginConfig config = Config(yaml);
  Labels labels = NodeLabels(devices, config, BuildResources(devices, config), host);
  std::map<std::string, std::string> out(labels.begin(), labels.end());
  EXPECT_EQ(out.size(), labels.size()) << "duplicate keys";
  // Every key and value is a valid Kubernetes label.
  std::regex value_re("^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$");
  std::regex name_re("^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$");
  for (const auto& [key, value] : labels) {
    EXPECT_TRUE(std::regex_match(value, value_re)) << key << "=" << value;
    std::string name = key.substr(key.find('/') + 1);
    EXPECT_TRUE(std::regex_match(name, name_re)) << key;
  }
  return out;
}

class KubeLabelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    mixed_node_ = new std::vector<NodeDevice>(testing::NvmlDevices("nvml/examples/h100x8-mig.json"));
    all_mig_ = new std::vector<NodeDevice>(testing::NvmlDevices("nvml/examples/h100x8-all-mig.json"));
    hgx_ = new topology::HostTopology(testing::Host("hgx-h100"));
  }
  static void TearDownTestSuite() {
    delete mixed_node_;
    delete all_mig_;
    delete hgx_;
  }
  static std::vector<NodeDevice>* mixed_node_;
  static std::vector<NodeDevice>* all_mig_;
  static topology::HostTopology* hgx_;
};
std::vector<NodeDevice>* KubeLabelsTest::mixed_node_ = nullptr;
std::vector<NodeDevice>* KubeLabelsTest::all_mig_ = nullptr;
topology::HostTopology* KubeLabelsTest::hgx_ = nullptr;

// MiB of the first MIG device of a node.
std::string MigMiB(const std::vector<NodeDevice>& node) {
  for (const NodeDevice& d : node) {
    if (d.is_mig()) return std::to_string(d.memory_bytes >> 20);
  }
  return "";
}

TEST_F(KubeLabelsTest, NoneStrategy) {
  auto l = LabelsFor(*mixed_node_, "", *hgx_);
  std::map<std::string, std::string> expected = {
      {"nvidia.com/gpu.present", "true"},
      {"nvidia.com/gpu.count", "8"},
      {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
      {"nvidia.com/gpu.memory", "81559"},
      {"nvidia.com/gpu.replicas", "1"},
      {"nvidia.com/gpu.sharing-strategy", "none"},
      {"nvidia.com/gpu.family", "hopper"},
      {"nvidia.com/mig.capable", "true"},
      {"nvidia.com/mig.strategy", "none"},
      {"nvidia.com/mps.capable", "false"},
      {"nvidia.com/cuda.driver-version.major", "580"},
      {"nvidia.com/cuda.driver-version.minor", "95"},
      {"nvidia.com/cuda.driver-version.revision", "05"},
      {"nvidia.com/cuda.driver-version.full", "580.95.05"},
      {"accel.io/numa-nodes", "2"},
      {"accel.io/hugepages-2Mi", "32768"},
      {"accel.io/hugepages-1Gi", "1536"},
      {"accel.io/rdma-nics", "12"},
      {"accel.io/gpu-numa-nodes", "0.1"},
  };
  EXPECT_EQ(l, expected);
}

TEST_F(KubeLabelsTest, NoneWithTimeSlicing) {
  auto l = LabelsFor(*mixed_node_, "sharing: {timeSlicing: {resources: [{name: gpu, replicas: 10}]}}",
                     *hgx_);
  EXPECT_EQ(l["nvidia.com/gpu.count"], "8");  // physical, the factor is in replicas
  EXPECT_EQ(l["nvidia.com/gpu.replicas"], "10");
  EXPECT_EQ(l["nvidia.com/gpu.sharing-strategy"], "time-slicing");
  EXPECT_EQ(l["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3-SHARED");
  auto renamed = LabelsFor(
      *mixed_node_,
      "sharing: {timeSlicing: {renameByDefault: true, resources: [{name: gpu, replicas: 10}]}}", *hgx_);
  EXPECT_EQ(renamed["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(renamed["nvidia.com/gpu.replicas"], "10");
}

TEST_F(KubeLabelsTest, MpsAsGfdLabelsIt) {
  auto whole = testing::WholeGpusOf(*mixed_node_);
  auto l = LabelsFor(whole, "sharing: {mps: {resources: [{name: gpu, replicas: 4}]}}", *hgx_);
  EXPECT_EQ(l["nvidia.com/gpu.sharing-strategy"], "mps");
  EXPECT_EQ(l["nvidia.com/mps.capable"], "true");
  EXPECT_EQ(l["nvidia.com/gpu.replicas"], "4");
  EXPECT_EQ(l["nvidia.com/gpu.count"], "8");
  EXPECT_EQ(l["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3-SHARED");
  // Renamed (by default or per resource): the name says it, the product does not.
  auto renamed = LabelsFor(
      whole, "sharing: {mps: {resources: [{name: gpu, rename: gpu-quarter, replicas: 4}]}}", *hgx_);
  EXPECT_EQ(renamed["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(renamed["nvidia.com/gpu.sharing-strategy"], "mps");
  // Time-slicing says so and is not MPS-capable.
  auto ts = LabelsFor(*mixed_node_, "sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2}]}}",
                      *hgx_);
  EXPECT_EQ(ts["nvidia.com/mps.capable"], "false");
  EXPECT_EQ(ts["nvidia.com/gpu.sharing-strategy"], "time-slicing");
}

TEST_F(KubeLabelsTest, MixedStrategy) {
  auto l = LabelsFor(*mixed_node_, "flags: {migStrategy: mixed}", *hgx_);
  EXPECT_EQ(l["nvidia.com/mig.strategy"], "mixed");
  EXPECT_EQ(l["nvidia.com/gpu.count"], "4");  // the whole GPUs nvidia.com/gpu advertises
  EXPECT_EQ(l["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(l["nvidia.com/mig-1g.10gb.count"], "28");
  EXPECT_EQ(l["nvidia.com/mig-1g.10gb.product"], "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb");
  EXPECT_EQ(l["nvidia.com/mig-1g.10gb.memory"], MigMiB(*mixed_node_));
  EXPECT_EQ(l["nvidia.com/mig-1g.10gb.replicas"], "1");
  EXPECT_EQ(l["nvidia.com/mig-1g.10gb.sharing-strategy"], "none");
  EXPECT_NE(MigMiB(*mixed_node_), "0");

  auto shared = LabelsFor(*mixed_node_, R"(
flags: {migStrategy: mixed}
sharing: {timeSlicing: {resources: [{name: mig-1g.10gb, replicas: 4}]}}
)", *hgx_);
  EXPECT_EQ(shared["nvidia.com/mig-1g.10gb.replicas"], "4");
  EXPECT_EQ(shared["nvidia.com/mig-1g.10gb.count"], "28");
  EXPECT_EQ(shared["nvidia.com/mig-1g.10gb.product"], "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb-SHARED");
  EXPECT_EQ(shared["nvidia.com/mig-1g.10gb.sharing-strategy"], "time-slicing");
  EXPECT_EQ(shared["nvidia.com/gpu.sharing-strategy"], "none");
}

TEST_F(KubeLabelsTest, SingleStrategy) {
  auto l = LabelsFor(*all_mig_, "flags: {migStrategy: single}", *hgx_);
  EXPECT_EQ(l["nvidia.com/mig.strategy"], "single");
  EXPECT_EQ(l["nvidia.com/gpu.count"], "56");
  EXPECT_EQ(l["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb");
  EXPECT_EQ(l["nvidia.com/gpu.memory"], MigMiB(*all_mig_));
  EXPECT_EQ(l.count("nvidia.com/mig-1g.10gb.count"), 0u);
  auto shared = LabelsFor(
      *all_mig_, "flags: {migStrategy: single}\nsharing: {timeSlicing: {resources: [{name: gpu, replicas: 2}]}}",
      *hgx_);
  EXPECT_EQ(shared["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb-SHARED");
  EXPECT_EQ(shared["nvidia.com/gpu.replicas"], "2");
}

TEST(KubeLabels, AmdHomogeneousAndHeterogeneous) {
  auto node = testing::AmdDevices();
  auto host = testing::Host("epyc-nps4-mi300x");
  auto l = LabelsFor(node, "", host);
  EXPECT_EQ(l["amd.com/gpu.count"], "8");
  EXPECT_EQ(l["amd.com/gpu.product-name"], "AMD-Instinct-MI300X");
  EXPECT_EQ(l["amd.com/gpu.vram"], "192G");
  EXPECT_EQ(l["amd.com/gpu.device-id"], "74a1");
  EXPECT_EQ(l["amd.com/gpu.driver-version"], "6.8.5");
  EXPECT_EQ(l["accel.io/numa-nodes"], "8");
  EXPECT_EQ(l["accel.io/gpu-numa-nodes"], "0.1.2.3.4.5.6.7");
  EXPECT_EQ(l["accel.io/hugepages-1Gi"], "1280");
  EXPECT_EQ(l["accel.io/rdma-nics"], "8");
  EXPECT_EQ(l.count("nvidia.com/gpu.present"), 0u);

  node[7].model = "AMD Instinct MI308X";
  auto mixed = LabelsFor(node, "", host);
  EXPECT_EQ(mixed.count("amd.com/gpu.product-name"), 0u);
  EXPECT_EQ(mixed["amd.com/gpu.product-name.AMD-Instinct-MI300X"], "7");
  EXPECT_EQ(mixed["amd.com/gpu.product-name.AMD-Instinct-MI308X"], "1");
  EXPECT_EQ(mixed["amd.com/gpu.vram"], "192G");
}

TEST(KubeLabels, Gaudi) {
  auto node = testing::GaudiDevices();
  auto l = LabelsFor(node, "", testing::Host("gaudi2-8hpu"));
  EXPECT_EQ(l["habana.ai/device.count"], "8");
  EXPECT_EQ(l["habana.ai/device.family"], "gaudi");
  EXPECT_EQ(l["habana.ai/device.name"], "gaudi2");
  EXPECT_EQ(l["habana.ai/device.type"], "GAUDI2");
  EXPECT_EQ(l["habana.ai/device.id"], "1020");
  EXPECT_EQ(l["habana.ai/driver.version"], "1.17.0-495f4a1");
  EXPECT_EQ(l["habana.ai/product.name"], "HL-225");
  EXPECT_EQ(l["accel.io/rdma-nics"], "2");
  EXPECT_EQ(l["accel.io/hugepages-1Gi"], "512");
  // Without the topology model the generation comes from the model name.
  auto bare = LabelsFor(node, "", topology::HostTopology{});
  EXPECT_EQ(bare["habana.ai/device.name"], "gaudi2");
  EXPECT_EQ(bare.count("habana.ai/device.id"), 0u);
  EXPECT_EQ(bare.count("accel.io/numa-nodes"), 0u);
}

TEST(KubeLabels, LongAndOddModelNamesStayValid) {
  NodeDevice g = testing::Gpu(0);
  g.model = "NVIDIA  GeForce RTX (TM) 4090 / with an absurdly long marketing name that goes on and on";
  g.driver_version = "550.54";
  auto l = LabelsFor({g}, "", topology::HostTopology{});
  EXPECT_EQ(l["nvidia.com/gpu.product"].substr(0, 29), "NVIDIA-GeForce-RTX-TM-4090-wi");
  EXPECT_EQ(l.count("nvidia.com/cuda.driver-version.revision"), 0u);
  EXPECT_EQ(l["nvidia.com/cuda.driver-version.full"], "550.54");
  EXPECT_EQ(l.count("nvidia.com/gpu.family"), 0u);
  EXPECT_EQ(l["nvidia.com/mig.capable"], "false");
}

TEST(KubeLabels, FeatureFileFormat) {
  EXPECT_EQ(FormatFeatureFile({{"a/b", "1"}, {"c/d", "x"}}), "a/b=1\nc/d=x\n");
  EXPECT_EQ(FormatFeatureFile({}), "");
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(KubeLabels, WriteFeatureFileIsAtomic) {
  fs::path dir = fs::path(::testing::TempDir()) / ("kube-labels-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::path file = dir / "features.d" / "accel";
  WriteFeatureFile(file.string(), {{"accel.io/numa-nodes", "2"}});  // creates the directories
  EXPECT_EQ(ReadAll(file), "accel.io/numa-nodes=2\n");

  // A reader that opened the old file keeps seeing it whole: the new one is renamed over it.
  std::ifstream old_reader(file);
  WriteFeatureFile(file.string(), {{"accel.io/numa-nodes", "4"}, {"accel.io/rdma-nics", "1"}});
  std::stringstream old_content;
  old_content << old_reader.rdbuf();
  EXPECT_EQ(old_content.str(), "accel.io/numa-nodes=2\n");
  EXPECT_EQ(ReadAll(file), "accel.io/numa-nodes=4\naccel.io/rdma-nics=1\n");
  // No temporary left behind.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(file.parent_path())) entries += e.exists() ? 1 : 0;
  EXPECT_EQ(entries, 1);

  // A path under a regular file cannot be written; the error names the directory that cannot
  // be made (common/atomic_file.h creates the directories first).
  try {
    WriteFeatureFile((file / "x").string(), {});
    FAIL() << "wrote under a file";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr(file.string()));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace accel::kube
