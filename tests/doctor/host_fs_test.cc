// Reading through a root: values, missing and unreadable files, directory listings, links.
#include "doctor/host_fs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "support/healthy_host_tree.h"

namespace accel::doctor {
namespace host_fs_test {

using testing::TempRoot;
using testing::WriteFakeFile;

TEST(HostFsTest, ReadsTrimmedValuesWithTheRealPath) {
  TempRoot root("fs");
  WriteFakeFile(root.path(), "proc/cmdline", "  ro quiet \n");
  FileValue v = ReadFile(root.path(), "/proc/cmdline");
  EXPECT_TRUE(v.ok);
  EXPECT_EQ(v.value, "ro quiet");
  EXPECT_EQ(v.path, "/proc/cmdline");
  EXPECT_EQ(v.ToEvidence().path, "/proc/cmdline");
  EXPECT_EQ(ReadFile(root.path() + "/", "/proc/cmdline").value, "ro quiet");
}

TEST(HostFsTest, MissingAndUnreadable) {
  TempRoot root("fs");
  FileValue missing = ReadFile(root.path(), "/sys/module/nvidia_peermem/version");
  EXPECT_FALSE(missing.ok);
  EXPECT_TRUE(missing.missing);
  EXPECT_EQ(missing.value, "(missing)");
  // A path through a regular file is missing too (ENOTDIR).
  WriteFakeFile(root.path(), "proc/cmdline", "x");
  EXPECT_EQ(ReadFile(root.path(), "/proc/cmdline/deeper").value, "(missing)");

  std::filesystem::create_directories(root.path() + "/proc/sys/kernel/numa_balancing");
  FileValue dir = ReadFile(root.path(), "/proc/sys/kernel/numa_balancing");
  EXPECT_FALSE(dir.ok);
  EXPECT_FALSE(dir.missing);
  EXPECT_EQ(dir.value, "(unreadable: Is a directory)");

  std::filesystem::create_symlink(root.path() + "/nowhere", root.path() + "/dangling");
  FileValue dangling = ReadFile(root.path(), "/dangling");
  EXPECT_FALSE(dangling.missing);
  EXPECT_EQ(dangling.value, "(unreadable: dangling symlink)");
  EXPECT_FALSE(PathExists(root.path(), "/dangling"));
  EXPECT_EQ(LinkBaseName(root.path(), "/dangling"), "nowhere");
}

TEST(HostFsTest, ReadBytesKeepsBinaryAndLimits) {
  TempRoot root("fs");
  testing::WriteBinary(root.path() + "/cfg", std::string("\0\x01\x02 \n", 5));
  std::string bytes, why;
  ASSERT_TRUE(ReadBytes(root.path(), "/cfg", 4096, &bytes, &why));
  EXPECT_EQ(bytes, std::string("\0\x01\x02 \n", 5));
  ASSERT_TRUE(ReadBytes(root.path(), "/cfg", 2, &bytes, &why));
  EXPECT_EQ(bytes.size(), 2u);
  EXPECT_FALSE(ReadBytes(root.path(), "/nope", 10, &bytes, &why));
  EXPECT_EQ(why, "missing");
}

TEST(HostFsTest, ListDirIsNaturallySorted) {
  TempRoot root("fs");
  for (const char* n : {"cpu10", "cpu2", "cpu1", "cpufreq", "cpu0"})
    WriteFakeFile(root.path(), std::string("sys/devices/system/cpu/") + n + "/x", "");
  EXPECT_EQ(ListDir(root.path(), "/sys/devices/system/cpu"),
            (std::vector<std::string>{"cpu0", "cpu1", "cpu2", "cpu10", "cpufreq"}));
  EXPECT_TRUE(ListDir(root.path(), "/no/such/dir").empty());
}

}  // namespace
}  // namespace accel::doctor
