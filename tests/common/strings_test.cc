#include "common/strings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace accel {
namespace strings_test {

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

TEST(Strings, TrimRemovesOnlyTheGivenCharactersAtBothEnds) {
  EXPECT_EQ(Trim("  a b \n"), "a b");
  EXPECT_EQ(Trim("\t\r\n\v\f "), "");
  EXPECT_EQ(Trim(""), "");
  EXPECT_EQ(Trim("x"), "x");
  EXPECT_EQ(Trim(" \ta\t ", " \t"), "a");
  EXPECT_EQ(Trim("\na\n", " \t"), "\na\n");  // HTTP's OWS is not a line break
  std::string text = "  inside  ";
  std::string_view trimmed = Trim(text);
  EXPECT_EQ(trimmed.data(), text.data() + 2);  // a view into the argument, no copy
}

TEST(Strings, SplitListTrimsItemsAndDropsEmptyOnes) {
  EXPECT_EQ(SplitList(" nvidia, amd,,habana "), (std::vector<std::string>{"nvidia", "amd", "habana"}));
  EXPECT_EQ(SplitList(""), std::vector<std::string>{});
  EXPECT_EQ(SplitList(",, ,"), std::vector<std::string>{});
  EXPECT_EQ(SplitList("a"), std::vector<std::string>{"a"});
  EXPECT_EQ(SplitList("0-3:4-7", ':'), (std::vector<std::string>{"0-3", "4-7"}));
  // Property: joining the split items again gives the input minus blanks around items.
  std::mt19937 rng(7);
  const std::string alphabet = "ab ,\t";
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    for (int k = static_cast<int>(rng() % 12); k > 0; --k) text += alphabet[rng() % alphabet.size()];
    std::vector<std::string> items = SplitList(text);
    for (const std::string& item : items) {
      ASSERT_FALSE(item.empty()) << text;
      ASSERT_EQ(item.find(','), std::string::npos) << text;
      ASSERT_EQ(std::string(Trim(item)), item) << text;
    }
    std::string letters;
    for (char c : text) if (c == 'a' || c == 'b') letters += c;
    std::string joined;
    for (const std::string& item : items) for (char c : item) if (c == 'a' || c == 'b') joined += c;
    ASSERT_EQ(joined, letters) << text;
  }
}

TEST(Strings, EditDistanceAndClosestMatch) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
  EXPECT_EQ(EditDistance("hw:cpu_polcy", "hw:cpu_policy"), 1u);
  EXPECT_EQ(EditDistance("DCGM_FI_DEV_GPU_TEMP", "dcgm_fi_dev_gpu_temp"), 0u);  // case-blind
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  const std::vector<std::string_view> keys = {"hw:cpu_policy", "hw:mem_page_size", "hw:numa_nodes"};
  EXPECT_EQ(ClosestMatch("hw:cpu_polcy", keys, 2), "hw:cpu_policy");
  EXPECT_EQ(ClosestMatch("hw:gpu", keys, 2), "");
  EXPECT_EQ(ClosestMatch("x", {}, 5), "");
  // Symmetric, zero only for equal strings (ignoring case), and a triangle inequality.
  std::mt19937 rng(11);
  auto word = [&] {
    std::string w;
    for (int k = static_cast<int>(rng() % 6); k > 0; --k) w += "abAB"[rng() % 4];
    return w;
  };
  for (int i = 0; i < 2000; ++i) {
    std::string a = word(), b = word(), c = word();
    ASSERT_EQ(EditDistance(a, b), EditDistance(b, a)) << a << " " << b;
    ASSERT_LE(EditDistance(a, c), EditDistance(a, b) + EditDistance(b, c)) << a << " " << b << " " << c;
    ASSERT_LE(EditDistance(a, b), std::max(a.size(), b.size()));
  }
}

TEST(PercentEncoding, RoundTripsEveryByteAndKeepsUnreserved) {
  EXPECT_EQ(PercentEncode("a b/c"), "a%20b%2Fc");
  EXPECT_EQ(PercentEncode("gpu-001_x.y~z"), "gpu-001_x.y~z");
  EXPECT_EQ(PercentDecode("a%20b%2fc"), "a b/c");
  EXPECT_EQ(PercentDecode("a+b", true), "a b");
  EXPECT_EQ(PercentDecode("a+b"), "a+b");
  EXPECT_EQ(PercentDecode("100%"), "100%");    // not an escape: kept
  EXPECT_EQ(PercentDecode("%zz%4"), "%zz%4");
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  EXPECT_EQ(PercentDecode(PercentEncode(all)), all);
}

}  // namespace
}  // namespace accel
