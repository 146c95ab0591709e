#include "topology/sysfs_hugepages.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "topology/sample_host.h"

namespace accel::topology {
namespace sysfs_hugepages_test {

namespace fs = std::filesystem;

class SysfsTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("accel-sysfs-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::path p = root_ / "devices/system/node" / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void Node(int id, uint64_t total_kib, uint64_t free_kib) {
    std::string n = std::to_string(id);
    Write("node" + n + "/meminfo", "Node " + n + " MemTotal:       " + std::to_string(total_kib) +
                                       " kB\nNode " + n +
                                       " MemFree:        " + std::to_string(free_kib) +
                                       " kB\nNode " + n + " MemUsed:        1 kB\n");
  }
  fs::path root_;
};

TEST_F(SysfsTree, ReadsNodesAndPoolsAscending) {
  Node(0, 16 * 1048576, 8 * 1048576);
  Write("node0/hugepages/hugepages-1048576kB/nr_hugepages", "4\n");
  Write("node0/hugepages/hugepages-1048576kB/free_hugepages", "3\n");
  Write("node0/hugepages/hugepages-2048kB/nr_hugepages", "1024\n");
  Write("node0/hugepages/hugepages-2048kB/free_hugepages", "1000\n");
  Node(10, 1048576, 1048576);
  Write("node10/hugepages/hugepages-2048kB/nr_hugepages", "7\n");  // no free file: free = total
  Write("node3/cpulist", "0-3\n");                                 // no meminfo: skipped
  Write("possible", "0-15\n");

  std::vector<SysfsNodeMemory> nodes = ReadSysfsNodeMemory(root_.string());
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].node, 0);
  EXPECT_EQ(nodes[0].total_kib, 16u * 1048576);
  EXPECT_EQ(nodes[0].free_kib, 8u * 1048576);
  ASSERT_EQ(nodes[0].hugepages.size(), 2u);
  EXPECT_EQ(nodes[0].hugepages[0].size_kib, 2048u);
  EXPECT_EQ(nodes[0].hugepages[0].total, 1024u);
  EXPECT_EQ(nodes[0].hugepages[0].free, 1000u);
  EXPECT_EQ(nodes[0].hugepages[1].size_kib, 1048576u);
  EXPECT_EQ(nodes[0].hugepages[1].free, 3u);
  EXPECT_EQ(nodes[1].node, 10);
  EXPECT_EQ(nodes[1].hugepages[0].free, 7u);
}

TEST_F(SysfsTree, MissingTreeIsEmpty) {
  EXPECT_TRUE(ReadSysfsNodeMemory((root_ / "nope").string()).empty());
}

TEST(BuildPagePools, BasePagesAreMemoryOutsideHugepages) {
  std::vector<HugepagePool> pools =
      BuildPagePools(16 * 1048576, 4, {{1048576, 4, 3}, {2048, 1024, 1000}}, 8 * 1048576);
  ASSERT_EQ(pools.size(), 3u);
  EXPECT_EQ(pools[0].size_kib, 4u);
  EXPECT_EQ(pools[0].total, (16u * 1048576 - 4 * 1048576 - 1024 * 2048) / 4);
  EXPECT_EQ(pools[0].free, 8u * 1048576 / 4);
  EXPECT_EQ(pools[1].size_kib, 2048u);
  EXPECT_EQ(pools[2].size_kib, 1048576u);
}

TEST(BuildPagePools, EdgeCases) {
  // Free unknown: free = total. Hugepages larger than memory: no base pages, not a wrap.
  EXPECT_EQ(BuildPagePools(1024, 4, {}), (std::vector<HugepagePool>{{4, 256, 256}}));
  EXPECT_EQ(BuildPagePools(1024, 4, {{2048, 10, 10}})[0].total, 0u);
  // Free larger than the pool (MemFree counted differently) is capped.
  EXPECT_EQ(BuildPagePools(1024, 4, {}, 1 << 20)[0].free, 256u);
  // A pool of the base size (hwloc lists base pages as a page type) is dropped; 0 means 4 KiB.
  EXPECT_EQ(BuildPagePools(1024, 0, {{4, 999, 999}}).size(), 1u);
}

TEST(MergeSysfsMemory, ReplacesOnlyMatchingNodes) {
  HostTopology host;
  host.numa_nodes.resize(2);
  host.numa_nodes[0].id = 0;
  host.numa_nodes[1].id = 1;
  host.numa_nodes[1].memory_kib = 42;
  host.numa_nodes[1].pages = {{4, 10, 10}};
  SysfsNodeMemory sys;
  sys.node = 0;
  sys.total_kib = 4096;
  sys.free_kib = 2048;
  sys.hugepages = {{2048, 1, 0}};
  MergeSysfsMemory({sys}, 4, &host);
  EXPECT_EQ(host.numa_nodes[0].memory_kib, 4096u);
  EXPECT_EQ(host.numa_nodes[0].pages, (std::vector<HugepagePool>{{4, 512, 512}, {2048, 1, 0}}));
  EXPECT_EQ(host.numa_nodes[1].memory_kib, 42u);
}

}  // namespace
}  // namespace accel::topology
