#include "common/yaml_out.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace accel {
namespace yaml_out_test {

using nlohmann::ordered_json;

TEST(YamlOut, BlockStyleInKeyOrder) {
  ordered_json j = ordered_json::parse(
      R"({"z": 1, "a": [{"k": "v", "num": 2.5}, "x"], "empty_list": [], "empty_map": {},
          "t": true, "nothing": null})");
  EXPECT_EQ(ToYaml(j),
            "z: 1\n"
            "a:\n"
            "  - k: v\n"
            "    num: 2.5\n"
            "  - x\n"
            "empty_list: []\n"
            "empty_map: {}\n"
            "t: true\n"
            "nothing: ~\n");
}

TEST(YamlOut, NumbersKeepTheirShortestForm) {
  EXPECT_EQ(ToYaml(ordered_json::parse(R"({"gbps": 63.015, "big": 18446744073709551615,
                                           "neg": -3})")),
            "gbps: 63.015\nbig: 18446744073709551615\nneg: -3\n");
}

// Strings a YAML reader would resolve to something else are quoted ("!" tag in yaml-cpp);
// ordinary words stay plain ("?" tag).
TEST(YamlOut, QuotesStringsThatWouldNotStayStrings) {
  const std::vector<std::string> quoted = {"123", "-1", "1.5", ".inf", "true", "False", "yes",
                                           "off", "null", "~", "", "0000:18:00.0", "0-3,8",
                                           "10de", "y", "N"};
  const std::vector<std::string> plain = {"h100", "hgx-h100", "c-0123456789ab", "gpu-1g",
                                          "hello world", "accel.placement/v1"};
  ordered_json list = ordered_json::array();
  for (const auto& s : quoted) list.push_back(s);
  for (const auto& s : plain) list.push_back(s);
  YAML::Node back = YAML::Load(ToYaml(list));
  ASSERT_EQ(back.size(), quoted.size() + plain.size());
  for (size_t i = 0; i < back.size(); ++i) {
    std::string s = back[i].as<std::string>();
    EXPECT_EQ(s, list[i].get<std::string>());
    bool want_quotes = i < quoted.size();
    EXPECT_EQ(back[i].Tag() == "!", want_quotes) << "'" << s << "'";
    EXPECT_EQ(YamlNeedsQuotes(s), want_quotes) << "'" << s << "'";
  }
}

TEST(YamlOut, SpecialCharactersSurviveARoundTrip) {
  ordered_json j = {{"note", "a: b # c"}, {"multi", "line1\nline2"}, {"0", "key is a number"},
                    {"uni", "ünïcode"}};
  YAML::Node back = YAML::Load(ToYaml(j));
  EXPECT_EQ(back["note"].as<std::string>(), "a: b # c");
  EXPECT_EQ(back["multi"].as<std::string>(), "line1\nline2");
  EXPECT_EQ(back["0"].as<std::string>(), "key is a number");
  EXPECT_EQ(back["uni"].as<std::string>(), "ünïcode");
}

TEST(YamlOut, FilesInObjectsAreLiteralBlocks) {
  const std::string unit = "[Unit]\nDescription=x # y: z\n\n[Service]\nExecStart=/bin/sh -c 'echo 1 > /x'\n";
  const ordered_json j = {{"data", {{"unit", unit}, {"after", "v"}}}, {"list", {unit, "x"}}};
  const std::string yaml = ToYaml(j);
  EXPECT_NE(yaml.find("unit: |\n    [Unit]\n"), std::string::npos) << yaml;
  const YAML::Node back = YAML::Load(yaml);
  EXPECT_EQ(back["data"]["unit"].as<std::string>(), unit);
  EXPECT_EQ(back["data"]["after"].as<std::string>(), "v");
  EXPECT_EQ(back["list"][0].as<std::string>(), unit);
}

// Every string reads back as itself, whichever style it gets: random strings over the characters
// that decide the style (newlines at both ends, leading spaces, tabs, quotes, ": ", "#").
TEST(YamlOut, RandomMultiLineStringsReadBackExactly) {
  const std::string alphabet = "ab \n\t:#'\"|->{}[],&*!%@`\\\r";
  uint64_t x = 88172645463325252ull;
  for (int n = 0; n < 4000; ++n) {
    std::string s;
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const size_t len = x % 24;
    for (size_t i = 0; i < len; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      s += alphabet[x % alphabet.size()];
    }
    const ordered_json j = {{"k", s}, {"next", {s, "end"}}};
    const YAML::Node back = YAML::Load(ToYaml(j));
    ASSERT_EQ(back["k"].as<std::string>(), s) << ordered_json(s).dump() << "\n" << ToYaml(j);
    ASSERT_EQ(back["next"][0].as<std::string>(), s) << ordered_json(s).dump() << "\n" << ToYaml(j);
    ASSERT_EQ(back["next"][1].as<std::string>(), "end");
  }
}

TEST(YamlOut, LiteralBlockThenNextKey) {
  const ordered_json doc = {{"script", "#!/bin/sh\necho 'hi' # x: y\n"}, {"after", 1}};
  const std::string text = ToYaml(doc);
  EXPECT_EQ(text, "script: |\n  #!/bin/sh\n  echo 'hi' # x: y\n\nafter: 1\n");
  EXPECT_EQ(YAML::Load(text)["script"].as<std::string>(), "#!/bin/sh\necho 'hi' # x: y\n");
  // A document that ends in a literal block ends in one newline.
  EXPECT_EQ(ToYaml(ordered_json{{"k", "a\nb\n"}}), "k: |\n  a\n  b\n");
}

TEST(YamlOut, IndicatorsAndExactMatchListsAreQuoted) {
  EXPECT_EQ(ToYaml(ordered_json{{"a", "=mlx5_0:1"}, {"b", "0"}, {"c", "eth0"}, {"d", ":9400"}, {"e", "*"}}),
            "a: \"=mlx5_0:1\"\nb: \"0\"\nc: eth0\nd: \":9400\"\ne: \"*\"\n");
}

TEST(YamlOut, ScalarDocumentsEndWithNewline) {
  EXPECT_EQ(ToYaml(ordered_json("x")), "x\n");
  EXPECT_EQ(ToYaml(ordered_json::array()), "[]\n");
}

}  // namespace
}  // namespace accel
