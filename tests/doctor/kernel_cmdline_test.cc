// The kernel command line parser and kernel CPU lists, including a comparison of the CPU-list
// parser with a brute-force reading of random lists.
#include "doctor/kernel_cmdline.h"

#include <gtest/gtest.h>

#include <random>

namespace accel::doctor {
namespace kernel_cmdline_test {

TEST(KernelCmdlineTest, SplitsParamsAndQuotes) {
  KernelCmdline c = KernelCmdline::Parse(
      "BOOT_IMAGE=/vmlinuz-6.1 root=UUID=abc ro quiet dyndbg=\"file foo.c +p\" intel_iommu=on "
      "iommu=pt isolcpus=managed_irq,domain,2-5 -- single");
  ASSERT_EQ(c.params().size(), 8u);
  EXPECT_EQ(c.Last("root"), "UUID=abc");
  EXPECT_EQ(c.Last("dyndbg"), "file foo.c +p");
  EXPECT_EQ(c.Last("ro"), "");
  EXPECT_TRUE(c.Has("quiet"));
  EXPECT_FALSE(c.Has("single"));
  EXPECT_EQ(c.init_args(), std::vector<std::string>{"single"});
  EXPECT_EQ(c.Last("intel-iommu"), "on") << "'-' and '_' are the same in names";
  EXPECT_FALSE(c.Last("nohz_full").has_value());
}

TEST(KernelCmdlineTest, LaterValuesWinAndAllKeepsOrder) {
  KernelCmdline c = KernelCmdline::Parse(
      "hugepagesz=1G hugepages=16 hugepagesz=2M hugepages=1024 iommu=nopt iommu=pt\n");
  EXPECT_EQ(c.Last("iommu"), "pt");
  EXPECT_EQ(c.All("hugepages"), (std::vector<std::string>{"16", "1024"}));
}

TEST(KernelCmdlineTest, EmptyAndOddInput) {
  EXPECT_TRUE(KernelCmdline::Parse("").params().empty());
  EXPECT_TRUE(KernelCmdline::Parse("   \n\t ").params().empty());
  KernelCmdline c = KernelCmdline::Parse("a=\"unterminated b=c");
  ASSERT_EQ(c.params().size(), 1u);
  EXPECT_EQ(c.params()[0].key, "a");
  KernelCmdline eq = KernelCmdline::Parse("=x key=");
  ASSERT_EQ(eq.params().size(), 2u);
  EXPECT_EQ(eq.params()[0].key, "");
  EXPECT_TRUE(eq.params()[1].has_value);
}

CpuSet List(const std::string& text, int nr = 64) {
  CpuSet s;
  std::string error;
  EXPECT_TRUE(ParseKernelCpuList(text, nr, &s, &error)) << text << ": " << error;
  return s;
}

TEST(KernelCpuListTest, Forms) {
  EXPECT_EQ(List("0-3,8"), (CpuSet{0, 1, 2, 3, 8}));
  EXPECT_EQ(List(""), CpuSet());
  EXPECT_EQ(List("all", 4), (CpuSet{0, 1, 2, 3}));
  EXPECT_EQ(List("N", 8), CpuSet{7});
  EXPECT_EQ(List("4-N", 8), (CpuSet{4, 5, 6, 7}));
  EXPECT_EQ(List("0-15:2/4"), (CpuSet{0, 1, 4, 5, 8, 9, 12, 13}));
  EXPECT_EQ(List("2-2"), CpuSet{2});
}

TEST(KernelCpuListTest, ErrorsTheKernelRejects) {
  CpuSet s;
  std::string error;
  EXPECT_FALSE(ParseKernelCpuList("0-300", 224, &s, &error));
  EXPECT_NE(error.find("beyond the last CPU 223"), std::string::npos) << error;
  for (const char* bad : {"5-3", "1,,2", "1,", "a", "1-", "-1", "0-7:3/2", "0-7:0/2", "0-7:1",
                          "0-7:/2", "99999999999", "0x3"})
    EXPECT_FALSE(ParseKernelCpuList(bad, 64, &s, &error)) << bad;
}

TEST(KernelCpuListTest, MatchesBruteForceOnRandomLists) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 3000; ++iter) {
    int nr = 1 + static_cast<int>(rng() % 200);
    std::vector<bool> expect(nr, false);
    std::string text;
    int regions = static_cast<int>(rng() % 5);
    for (int r = 0; r < regions; ++r) {
      int a = static_cast<int>(rng() % nr), b = a + static_cast<int>(rng() % (nr - a));
      std::string region = std::to_string(a);
      int used = 1, group = 1;
      if (rng() % 2) {
        region += "-" + std::to_string(b);
        if (rng() % 3 == 0) {
          group = 1 + static_cast<int>(rng() % 6);
          used = 1 + static_cast<int>(rng() % group);
          region += ":" + std::to_string(used) + "/" + std::to_string(group);
        }
      } else {
        b = a;
      }
      for (int c = a; c <= b; ++c)
        if ((c - a) % group < used) expect[c] = true;
      text += (text.empty() ? "" : ",") + region;
    }
    CpuSet got;
    std::string error;
    ASSERT_TRUE(ParseKernelCpuList(text, nr, &got, &error)) << text << ": " << error;
    for (int c = 0; c < nr; ++c) ASSERT_EQ(got.Contains(c), expect[c]) << text << " cpu " << c;
    ASSERT_LE(got.Count(), nr);
  }
}

TEST(IsolCpusTest, FlagsAndDefaults) {
  IsolCpus iso;
  std::string error;
  ASSERT_TRUE(ParseIsolCpus("managed_irq,domain,2-5", 16, &iso, &error)) << error;
  EXPECT_EQ(iso.cpus, (CpuSet{2, 3, 4, 5}));
  EXPECT_TRUE(iso.domain && iso.managed_irq && !iso.nohz);
  EXPECT_EQ(iso.flags, (std::vector<std::string>{"managed_irq", "domain"}));

  ASSERT_TRUE(ParseIsolCpus("1,3", 16, &iso, &error));
  EXPECT_TRUE(iso.domain) << "no flag means domain isolation";
  EXPECT_TRUE(iso.flags.empty());

  ASSERT_TRUE(ParseIsolCpus("nohz,1-2", 16, &iso, &error));
  EXPECT_FALSE(iso.domain) << "flags replace the default";
  EXPECT_TRUE(iso.nohz);

  ASSERT_TRUE(ParseIsolCpus("all", 4, &iso, &error));
  EXPECT_EQ(iso.cpus.Count(), 4);

  EXPECT_FALSE(ParseIsolCpus("bogus,1-2", 16, &iso, &error));
  EXPECT_NE(error.find("unknown isolcpus flag"), std::string::npos);
  EXPECT_FALSE(ParseIsolCpus("domain,1-99", 16, &iso, &error));
}

}  // namespace
}  // namespace accel::doctor
