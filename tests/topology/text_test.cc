#include "topology/text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "support/shared_fixture.h"
#include "topology/hwloc_source.h"
#include "topology/sample_host.h"

namespace accel::topology {
namespace text_test {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(TopoText, SummarizesNodesDevicesAndDistances) {
  std::string text = ToText(testing::SampleHost());
  EXPECT_THAT(text, HasSubstr("Host sample-1"));
  EXPECT_THAT(text, HasSubstr("1 accelerator, 1 NIC (1 with RDMA)"));
  EXPECT_THAT(text, HasSubstr("package 0: Intel(R) Xeon(R) Platinum 8480+"));
  EXPECT_THAT(text, HasSubstr("NUMA node 0 (package 0): 4 CPUs 0-3 (2 cores x 2 threads)"));
  EXPECT_THAT(text, HasSubstr("hugepages 2M: 100 of 512 free, 1G: 2 of 2 free"));
  EXPECT_THAT(text, HasSubstr("0000:18:00.0  gpu      [10de:2330] NVIDIA H100 80GB HBM3"));
  EXPECT_THAT(text, HasSubstr("rdma mlx5_0; net ibp25s0; PF with 1 of 16 VFs enabled"));
  EXPECT_THAT(text, Not(HasSubstr("0000:19:00.1")));  // the VF folds into its PF
  EXPECT_THAT(text, HasSubstr("NUMA distances"));
  EXPECT_THAT(text, HasSubstr("\n  node  0  1\n     0 10 21\n     1 21 10\n"));
  EXPECT_THAT(text, HasSubstr("PCI devices not local to a single NUMA node\n"
                              "    other PCI functions: 1 storage\n"));
}

TEST(TopoText, OneNodeHasNoDistanceMatrix) {
  HostTopology h = testing::SampleHost();
  h.numa_nodes.pop_back();
  h.numa_nodes[0].distances.clear();
  h.packages.pop_back();
  EXPECT_THAT(ToText(h), Not(HasSubstr("distances")));
}

TEST(TopoText, Dgx2FoldsNvSwitches) {
  std::string path = test_support::SharedPath("fixtures/hwloc/nvidiaDGX2.xml");
  ACCEL_REQUIRE_SHARED(path);
  std::string text = ToText(LoadHwlocXml(path));
  EXPECT_THAT(text, HasSubstr("16 accelerators"));
  EXPECT_THAT(text, HasSubstr("6 NVSwitches: 0000:61:00.0, "));
  EXPECT_THAT(text, HasSubstr("0000:e7:00.0  gpu      [10de:1db8] Tesla V100-SXM3-32GB-H"));
}

}  // namespace
}  // namespace accel::topology
