#include "common/strings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace accel {
namespace {

TEST(Strings, JoinStrings) {
  EXPECT_EQ(JoinStrings({}, ", "), "");
  EXPECT_EQ(JoinStrings({"a"}, ", "), "a");
  EXPECT_EQ(JoinStrings({"a", "b", "c"}, ","), "a,b,c");
}

TEST(Strings, NaturalLessIsAStrictWeakOrder) {
  EXPECT_TRUE(NaturalLess("mlx5_2", "mlx5_10"));
  EXPECT_FALSE(NaturalLess("mlx5_10", "mlx5_2"));
  EXPECT_TRUE(NaturalLess("a", "b"));
  EXPECT_TRUE(NaturalLess("cpu", "cpu0"));
  EXPECT_FALSE(NaturalLess("x1", "x1"));
  std::mt19937 rng(3);
  const std::string alphabet = "ab019_";
  std::vector<std::string> words;
  for (int i = 0; i < 300; ++i) {
    std::string w;
    for (int k = static_cast<int>(rng() % 6); k > 0; --k) w += alphabet[rng() % alphabet.size()];
    words.push_back(w);
  }
  for (const std::string& a : words)
    for (const std::string& b : words) {
      ASSERT_FALSE(NaturalLess(a, b) && NaturalLess(b, a)) << a << " " << b;
      if (a == b) {
        ASSERT_FALSE(NaturalLess(a, b));
      }
    }
  std::sort(words.begin(), words.end(), NaturalLess);  // must not misbehave
  EXPECT_TRUE(std::is_sorted(words.begin(), words.end(), NaturalLess));
}

}  // namespace
}  // namespace accel
