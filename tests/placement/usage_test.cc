#include "placement/usage.h"

#include <gtest/gtest.h>

namespace accel::placement {
namespace usage_test {

// Two-cell dedicated guest on nodes 0 and 1, 1 GiB pages, one GPU, an isolated emulator CPU.
Placement TwoCellGuest() {
  Placement p;
  p.host = "h";
  p.flavor = "gpu-2c";
  CellPlacement c0;
  c0.guest_cell = 0;
  c0.host_node = 0;
  c0.pinning = {{0, 2}, {1, 3}};
  c0.consumed_cpus = {2, 3, 34, 35};  // siblings reserved (isolate)
  c0.memory_mib = 4096;
  c0.page_size_kib = 1048576;
  c0.pages = 4;
  CellPlacement c1 = c0;
  c1.guest_cell = 1;
  c1.host_node = 1;
  c1.pinning = {{2, 18}, {3, 19}};
  c1.consumed_cpus = {18, 19, 50, 51};
  c1.shared_vcpus = {4, 5};
  c1.shared_cpus = {20, 21, 22};
  p.cells = {c0, c1};
  p.emulator_cpus = {4};
  p.emulator_consumed_cpus = {4, 36};
  p.devices = {{"h100", "0000:18:00.0", 0x10de, 0x2330, 0, 0}};
  return p;
}

Placement FloatingGuest(int vcpus, uint64_t mib) {
  Placement p;
  p.host = "h";
  p.flavor = "small";
  p.floating_vcpus = vcpus;
  p.floating_memory_mib = mib;
  return p;
}

// HostUsage has no operator==; compare every field.
void ExpectSameUsage(const HostUsage& a, const HostUsage& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (const auto& [id, node] : a.nodes) {
    ASSERT_TRUE(b.nodes.count(id)) << "node " << id;
    const NodeUsage& other = b.nodes.at(id);
    EXPECT_EQ(node.pinned_cpus, other.pinned_cpus) << "node " << id;
    EXPECT_EQ(node.shared_vcpus, other.shared_vcpus) << "node " << id;
    EXPECT_EQ(node.pages_used, other.pages_used) << "node " << id;
  }
  EXPECT_EQ(a.devices, b.devices);
  EXPECT_EQ(a.floating_vcpus, b.floating_vcpus);
  EXPECT_EQ(a.floating_memory_mib, b.floating_memory_mib);
}

TEST(HostUsage, ApplyChargesEachCellToItsNodeAndEmulatorToCellZero) {
  HostUsage u;
  ASSERT_EQ(u.Apply(TwoCellGuest()), "");
  ASSERT_EQ(u.nodes.size(), 2u);
  EXPECT_EQ(u.nodes[0].pinned_cpus.ToString(), "2-4,34-36");
  EXPECT_EQ(u.nodes[1].pinned_cpus.ToString(), "18-19,50-51");
  EXPECT_EQ(u.nodes[0].shared_vcpus, 0);
  EXPECT_EQ(u.nodes[1].shared_vcpus, 2);
  EXPECT_EQ(u.nodes[0].pages_used, (std::map<uint64_t, uint64_t>{{1048576, 4}}));
  EXPECT_EQ(u.nodes[1].pages_used, (std::map<uint64_t, uint64_t>{{1048576, 4}}));
  EXPECT_EQ(u.devices, (std::set<std::string>{"0000:18:00.0"}));
}

TEST(HostUsage, PinnedCpusMissingFromConsumedAreStillCharged) {
  Placement p = TwoCellGuest();
  p.cells[0].consumed_cpus = {};  // malformed, but the pinned CPUs are plainly held
  HostUsage u;
  ASSERT_EQ(u.Apply(p), "");
  EXPECT_EQ(u.nodes[0].pinned_cpus.ToString(), "2-4,36");
}

TEST(HostUsage, ReleaseUndoesApplyExactly) {
  HostUsage base;
  ASSERT_EQ(base.Apply(FloatingGuest(2, 2048)), "");
  Placement other = TwoCellGuest();
  other.cells.pop_back();
  for (auto& cell : other.cells) {
    cell.pinning = {{0, 8}};
    cell.consumed_cpus = {8};
    cell.page_size_kib = 4;
    cell.pages = 1000;
  }
  other.emulator_consumed_cpus = {};
  other.devices = {};
  ASSERT_EQ(base.Apply(other), "");

  HostUsage u = base;
  ASSERT_EQ(u.Apply(TwoCellGuest()), "");
  u.Release(TwoCellGuest());
  ExpectSameUsage(u, base);

  u.Release(other);
  u.Release(FloatingGuest(2, 2048));
  ExpectSameUsage(u, HostUsage{});  // emptied nodes and page pools are dropped
}

TEST(HostUsage, FloatingGuestsAddUp) {
  HostUsage u;
  ASSERT_EQ(u.Apply(FloatingGuest(2, 1024)), "");
  ASSERT_EQ(u.Apply(FloatingGuest(4, 4096)), "");
  EXPECT_EQ(u.floating_vcpus, 6);
  EXPECT_EQ(u.floating_memory_mib, 5120u);
  EXPECT_TRUE(u.nodes.empty());
  u.Release(FloatingGuest(2, 1024));
  EXPECT_EQ(u.floating_vcpus, 4);
  EXPECT_EQ(u.floating_memory_mib, 4096u);
}

TEST(HostUsage, SharedVcpusOnOneNodeAccumulate) {
  Placement p;
  p.host = "h";
  CellPlacement c;
  c.host_node = 1;
  c.shared_vcpus = {0, 1, 2};
  c.page_size_kib = 4;
  c.pages = 262144;
  p.cells = {c};
  HostUsage u;
  ASSERT_EQ(u.Apply(p), "");
  ASSERT_EQ(u.Apply(p), "");  // shared vCPUs and pages are counts: no double booking
  EXPECT_EQ(u.nodes[1].shared_vcpus, 6);
  EXPECT_EQ(u.nodes[1].pages_used[4], 524288u);
  EXPECT_TRUE(u.nodes[1].pinned_cpus.Empty());
}

// Each case books something the first guest holds; Apply must refuse and change nothing.
TEST(HostUsage, DoubleBookingIsRefusedAndLeavesUsageUnchanged) {
  HostUsage u;
  ASSERT_EQ(u.Apply(TwoCellGuest()), "");
  ASSERT_EQ(u.Apply(FloatingGuest(1, 512)), "");
  const HostUsage before = u;

  Placement cpu_clash = TwoCellGuest();
  cpu_clash.devices = {};
  cpu_clash.emulator_consumed_cpus = {};
  cpu_clash.cells.pop_back();
  cpu_clash.cells[0].pinning = {{0, 40}};
  cpu_clash.cells[0].consumed_cpus = {40, 51};  // 51 is a reserved sibling on node 1
  std::string err = u.Apply(cpu_clash);
  EXPECT_NE(err.find("51"), std::string::npos) << err;
  ExpectSameUsage(u, before);

  Placement cpu_on_other_node = cpu_clash;
  cpu_on_other_node.cells[0].host_node = 7;  // a CPU is global: any node counts
  cpu_on_other_node.cells[0].consumed_cpus = {2};
  EXPECT_NE(u.Apply(cpu_on_other_node), "");
  ExpectSameUsage(u, before);

  Placement emulator_clash = cpu_clash;
  emulator_clash.cells[0].consumed_cpus = {40};
  emulator_clash.emulator_consumed_cpus = {36};
  EXPECT_NE(u.Apply(emulator_clash), "");
  ExpectSameUsage(u, before);

  Placement device_clash = cpu_clash;
  device_clash.cells[0].consumed_cpus = {40};
  device_clash.floating_vcpus = 3;
  device_clash.devices = {{"h100", "0000:18:00.0", 0x10de, 0x2330, 0, 0}};
  err = u.Apply(device_clash);
  EXPECT_NE(err.find("0000:18:00.0"), std::string::npos) << err;
  ExpectSameUsage(u, before);

  // The same placement without the clashes fits.
  device_clash.devices[0].address = "0000:2a:00.0";
  EXPECT_EQ(u.Apply(device_clash), "");
}

TEST(HostUsage, OverlapInsideOnePlacementIsRefused) {
  Placement p = TwoCellGuest();
  p.cells[1].consumed_cpus.Add(3);  // cell 1 claims cell 0's CPU
  HostUsage u;
  EXPECT_NE(u.Apply(p), "");
  ExpectSameUsage(u, HostUsage{});

  p = TwoCellGuest();
  p.emulator_consumed_cpus = {2};  // the emulator on a vCPU's CPU
  EXPECT_NE(u.Apply(p), "");

  p = TwoCellGuest();
  p.devices.push_back(p.devices.front());  // one GPU handed over twice
  EXPECT_NE(u.Apply(p), "");
  ExpectSameUsage(u, HostUsage{});
}

TEST(HostUsage, ReleaseOfUnknownPlacementDoesNotUnderflow) {
  HostUsage u;
  u.Release(TwoCellGuest());
  u.Release(FloatingGuest(3, 100));
  ExpectSameUsage(u, HostUsage{});
}

}  // namespace
}  // namespace accel::placement
