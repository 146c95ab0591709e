// ToYamlWithBlocks: literal blocks for multi-line strings, and every value reads back equal.
#include "fabric/yaml_blocks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <random>

namespace accel::fabric {
namespace {

using Json = nlohmann::ordered_json;

// yaml-cpp's view of a scalar, as the string it holds.
std::string Scalar(const YAML::Node& n) { return n.as<std::string>(); }

TEST(YamlBlocks, MultiLineStringsAreLiteralBlocks) {
  const Json doc = {{"script", "#!/bin/sh\necho 'hi' # x: y\n"}, {"after", 1}};
  const std::string text = ToYamlWithBlocks(doc);
  EXPECT_EQ(text, "script: |\n  #!/bin/sh\n  echo 'hi' # x: y\n\nafter: 1\n");
  EXPECT_EQ(Scalar(YAML::Load(text)["script"]), "#!/bin/sh\necho 'hi' # x: y\n");
}

TEST(YamlBlocks, ExactMatchListsAndNumbersAreQuoted) {
  const std::string text = ToYamlWithBlocks(Json{{"a", "=mlx5_0:1"}, {"b", "0"}, {"c", "eth0"}});
  EXPECT_EQ(text, "a: \"=mlx5_0:1\"\nb: \"0\"\nc: eth0\n");
}

// Random strings (blanks, newlines, quotes, YAML indicators) read back unchanged.
TEST(YamlBlocksProperty, StringsRoundTrip) {
  std::mt19937 rng(11);
  const std::string alphabet = "ab =:#-|>'\"\n\t{}[],&*!%@`?";
  for (int iter = 0; iter < 3000; ++iter) {
    std::string s;
    const int len = std::uniform_int_distribution<int>(0, 16)(rng);
    for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
    SCOPED_TRACE(::testing::PrintToString(s));
    const Json doc = {{"k", s}, {"list", Json::array({s, "x"})}};
    const YAML::Node back = YAML::Load(ToYamlWithBlocks(doc));
    ASSERT_EQ(Scalar(back["k"]), s);
    ASSERT_EQ(Scalar(back["list"][0]), s);
    ASSERT_EQ(Scalar(back["list"][1]), "x");
  }
}

}  // namespace
}  // namespace accel::fabric
