// HostUsage::Apply/Release with several entries on one node (two cells and the emulator), as a
// stored claim may hold: Apply sums them, Release removes them and drops the emptied node, and
// the checks name the first problem in placement order.
#include <gtest/gtest.h>

#include "placement/usage.h"

namespace accel::placement {
namespace usage_same_node_test {

Placement TwoCellsOnOneNode() {
  Placement p;
  CellPlacement c0;
  c0.guest_cell = 0;
  c0.host_node = 1;
  c0.pinning = {{0, 2}};
  c0.consumed_cpus = {2};
  c0.shared_vcpus = {2, 3};
  c0.page_size_kib = 2048;
  c0.pages = 10;
  CellPlacement c1 = c0;
  c1.guest_cell = 1;
  c1.pinning = {{1, 5}};
  c1.consumed_cpus = {5};
  c1.shared_vcpus = {4};
  c1.pages = 6;
  p.cells = {c0, c1};
  p.emulator_consumed_cpus = {7};
  p.devices = {{"a", "0000:01:00.0", 1, 2, 1, 0}, {"a", "0000:02:00.0", 1, 2, 1, 1}};
  return p;
}

TEST(HostUsageSameNode, ApplySumsAndReleaseEmptiesTheNode) {
  HostUsage usage;
  ASSERT_EQ(usage.Apply(TwoCellsOnOneNode()), "");
  ASSERT_EQ(usage.nodes.size(), 1u);
  const NodeUsage& u = usage.nodes.at(1);
  EXPECT_EQ(u.pinned_cpus, CpuSet({2, 5, 7}));
  EXPECT_EQ(u.shared_vcpus, 3);
  EXPECT_EQ(u.pages_used, (std::map<uint64_t, uint64_t>{{2048, 16}}));
  EXPECT_EQ(usage.devices.size(), 2u);
  usage.Release(TwoCellsOnOneNode());
  EXPECT_TRUE(usage.nodes.empty());
  EXPECT_TRUE(usage.devices.empty());
}

TEST(HostUsageSameNode, ReleaseKeepsWhatOthersHold) {
  HostUsage usage;
  usage.nodes[1].pages_used[2048] = 4;
  usage.nodes[1].pinned_cpus = {9};
  ASSERT_EQ(usage.Apply(TwoCellsOnOneNode()), "");
  usage.Release(TwoCellsOnOneNode());
  ASSERT_EQ(usage.nodes.size(), 1u);
  EXPECT_EQ(usage.nodes.at(1).pinned_cpus, CpuSet({9}));
  EXPECT_EQ(usage.nodes.at(1).shared_vcpus, 0);
  EXPECT_EQ(usage.nodes.at(1).pages_used, (std::map<uint64_t, uint64_t>{{2048, 4}}));
}

TEST(HostUsageSameNode, ErrorsNameTheFirstProblem) {
  Placement p = TwoCellsOnOneNode();
  p.cells[1].consumed_cpus = {2};
  p.cells[1].pinning = {{1, 2}};
  HostUsage usage;
  EXPECT_EQ(usage.Apply(p), "guest cell 1 CPUs 2 are also used elsewhere in the same placement");
  p = TwoCellsOnOneNode();
  p.emulator_consumed_cpus = {5};
  EXPECT_EQ(usage.Apply(p), "emulator CPUs 5 are also used elsewhere in the same placement");
  p = TwoCellsOnOneNode();
  p.devices.push_back(p.devices[0]);
  EXPECT_EQ(usage.Apply(p), "device 0000:01:00.0 appears twice in the same placement");
  usage.devices.insert("0000:02:00.0");
  EXPECT_EQ(usage.Apply(p), "device 0000:02:00.0 is already used by another claim");
  EXPECT_TRUE(usage.nodes.empty()) << "a refused claim changes nothing";
}

}  // namespace
}  // namespace accel::placement
