#include "common/cpuset.h"

#include <gtest/gtest.h>

namespace accel {
namespace cpuset_test {

TEST(CpuSet, ParsesAndFormatsCompactLists) {
  CpuSet s;
  std::string err;
  ASSERT_TRUE(CpuSet::Parse("0-3, 8,10-11,^2", &s, &err)) << err;
  EXPECT_EQ(s.ToString(), "0-1,3,8,10-11");
  EXPECT_EQ(s.Count(), 6);
  EXPECT_TRUE(s.Contains(10));
  EXPECT_FALSE(s.Contains(2));
  EXPECT_EQ(s.First(), 0);
}

TEST(CpuSet, EmptyStringIsEmptySet) {
  CpuSet s{1};
  std::string err;
  ASSERT_TRUE(CpuSet::Parse("", &s, &err));
  EXPECT_TRUE(s.Empty());
  EXPECT_EQ(s.ToString(), "");
}

TEST(CpuSet, RejectsGarbageWithTheToken) {
  CpuSet s;
  std::string err;
  EXPECT_FALSE(CpuSet::Parse("0-3,x", &s, &err));
  EXPECT_NE(err.find("'x'"), std::string::npos);
  EXPECT_FALSE(CpuSet::Parse("5-2", &s, &err));
  EXPECT_FALSE(CpuSet::Parse("1,,2", &s, &err));
  EXPECT_FALSE(CpuSet::Parse("70000", &s, &err));
}

TEST(CpuSet, SetAlgebraAcrossWords) {
  CpuSet a{1, 64, 200}, b{64, 300};
  EXPECT_EQ(a.Union(b).ToString(), "1,64,200,300");
  EXPECT_EQ(a.Intersect(b).ToString(), "64");
  EXPECT_EQ(a.Minus(b).ToString(), "1,200");
  EXPECT_TRUE(a.Intersects(b));
  EXPECT_TRUE(CpuSet({64}).IsSubsetOf(a));
  EXPECT_EQ(a.Minus(a), CpuSet());
}

}  // namespace
}  // namespace accel

namespace accel {
namespace cpuset_test {

// Sets grow from inline storage to the heap past CPU 511 and keep working both ways.
TEST(CpuSet, GrowsPastInlineStorage) {
  CpuSet small{3, 500};
  CpuSet big{3, 1000, 4000};
  EXPECT_EQ(big.ToString(), "3,1000,4000");
  EXPECT_EQ(small.Union(big).ToString(), "3,500,1000,4000");
  EXPECT_EQ(big.Union(small).ToString(), "3,500,1000,4000");
  EXPECT_EQ(big.Intersect(small).ToString(), "3");
  EXPECT_EQ(big.Minus(CpuSet{1000, 4000}), CpuSet{3});
  EXPECT_TRUE(CpuSet{3}.IsSubsetOf(big));
  EXPECT_FALSE(big.IsSubsetOf(small));
  CpuSet copy = big;
  copy.Remove(4000);
  copy.Remove(1000);
  EXPECT_EQ(copy, CpuSet{3});
  copy.Add(700);
  EXPECT_EQ(copy.Count(), 2);
  EXPECT_EQ(copy.First(), 3);
}

}  // namespace
}  // namespace accel

namespace accel {
namespace cpuset_test {

TEST(CpuSet, NextWalksInOrderAcrossWords) {
  CpuSet s{0, 63, 64, 700};
  std::vector<int> seen;
  for (int c = s.First(); c >= 0; c = s.Next(c)) seen.push_back(c);
  EXPECT_EQ(seen, (std::vector<int>{0, 63, 64, 700}));
  EXPECT_EQ(CpuSet().First(), -1);
  EXPECT_EQ(s.Next(700), -1);
  EXPECT_EQ(s.Next(-1), 0);
}

}  // namespace
}  // namespace accel
