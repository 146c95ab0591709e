#include "common/yaml_config.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "support/thrown_by.h"

namespace accel {
namespace yaml_config_test {

const std::string kWhere = "agent.yaml";

/// The InputError `f` throws; fails the test when it throws nothing.
template <typename F>
InputError ErrorOf(F&& f) {
  return test_support::ThrownBy<InputError>(std::forward<F>(f));
}

TEST(YamlConfig, DispatchesKeysWithTheirPaths) {
  YAML::Node root = LoadYamlText("sharing:\n  mps:\n    renameByDefault: true\n", kWhere);
  std::vector<std::string> fields;
  bool rename = false;
  YamlMapReader(kWhere, root, "")
      .On("sharing", [&](const YAML::Node& v, const std::string& f) {
        fields.push_back(f);
        YamlMapReader(kWhere, v, f)
            .On("mps", [&](const YAML::Node& m, const std::string& g) {
              fields.push_back(g);
              YamlMapReader(kWhere, m, g)
                  .On("renameByDefault", [&](const YAML::Node& b, const std::string& h) {
                    fields.push_back(h);
                    rename = YamlBool(kWhere, b, h);
                  })
                  .Run();
            })
            .Run();
      })
      .Run();
  EXPECT_EQ(fields, (std::vector<std::string>{"sharing", "sharing.mps", "sharing.mps.renameByDefault"}));
  EXPECT_TRUE(rename);
}

TEST(YamlConfig, UnknownKeyNamesItsPathAndTheKnownKeys) {
  YAML::Node root = LoadYamlText("exporter:\n  lisen: ':9400'\n", kWhere);
  InputError e = ErrorOf([&] {
    YamlMapReader(kWhere, root, "")
        .On("exporter", [&](const YAML::Node& v, const std::string& f) {
          YamlMapReader(kWhere, v, f).On("listen", [](auto&, auto&) {}).On("enabled", [](auto&, auto&) {}).Run();
        })
        .Run();
  });
  EXPECT_EQ(e.where(), kWhere);
  EXPECT_EQ(e.field(), "exporter.lisen");
  EXPECT_EQ(e.hint(), "known here: enabled, listen");
}

TEST(YamlConfig, IgnoredKeysAndEmptyValuesKeepDefaults) {
  YAML::Node root = LoadYamlText("nvidiaCTKPath: /usr/bin/x\nreplicas:\n", kWhere);
  int calls = 0;
  YamlMapReader(kWhere, root, "flags")
      .On("replicas", [&](auto&, auto&) { ++calls; })
      .Ignore({"nvidiaCTKPath"})
      .Run();
  EXPECT_EQ(calls, 0);
  YamlMapReader(kWhere, YAML::Node(), "absent").Run();  // a missing section reads as empty
  InputError e = ErrorOf([&] { YamlMapReader(kWhere, LoadYamlText("[1, 2]", kWhere), "flags").Run(); });
  EXPECT_EQ(e.field(), "flags");
  EXPECT_EQ(e.problem(), "must be a mapping");
}

TEST(YamlConfig, BooleansFollowNvidiasYaml11Reader) {
  for (const char* t : {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}) {
    EXPECT_TRUE(YamlBool(kWhere, LoadYamlText(std::string("v: ") + t, kWhere)["v"], "v")) << t;
  }
  for (const char* f : {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}) {
    EXPECT_FALSE(YamlBool(kWhere, LoadYamlText(std::string("v: ") + f, kWhere)["v"], "v")) << f;
  }
  for (const char* bad : {"v: \"true\"", "v: 'yes'", "v: 1", "v: enabled", "v: [true]"}) {
    InputError e = ErrorOf([&] { YamlBool(kWhere, LoadYamlText(bad, kWhere)["v"], "v"); });
    EXPECT_EQ(e.field(), "v") << bad;
  }
}

TEST(YamlConfig, IntegersArePlainDecimal) {
  EXPECT_EQ(YamlInteger(kWhere, LoadYamlText("v: 4", kWhere)["v"], "v"), 4);
  EXPECT_EQ(YamlInteger(kWhere, LoadYamlText("v: -12", kWhere)["v"], "v"), -12);
  for (const char* bad : {"v: \"2\"", "v: 2.5", "v: 0x10", "v: 1234567890123", "v: -", "v: {a: 1}"}) {
    EXPECT_THROW(YamlInteger(kWhere, LoadYamlText(bad, kWhere)["v"], "v"), InputError) << bad;
  }
}

TEST(YamlConfig, OneOfAndStringLists) {
  enum class Policy { kPacked, kDistributed };
  const std::vector<std::pair<const char*, Policy>> names = {{"packed", Policy::kPacked},
                                                            {"distributed", Policy::kDistributed}};
  EXPECT_EQ(YamlOneOf(kWhere, LoadYamlText("v: packed", kWhere)["v"], "v", names), Policy::kPacked);
  InputError e = ErrorOf([&] { YamlOneOf(kWhere, LoadYamlText("v: spread", kWhere)["v"], "v", names); });
  EXPECT_EQ(e.hint(), "one of: packed, distributed");
  EXPECT_EQ(YamlStringList(kWhere, LoadYamlText("v: [a, b]", kWhere)["v"], "v"),
            (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(YamlStringList(kWhere, LoadYamlText("v: a", kWhere)["v"], "v", true),
            std::vector<std::string>{"a"});
  e = ErrorOf([&] { YamlStringList(kWhere, LoadYamlText("v: [a, [b]]", kWhere)["v"], "v"); });
  EXPECT_EQ(e.field(), "v[1]");
}

TEST(YamlConfig, SyntaxErrorsNameLineAndColumn) {
  InputError e = ErrorOf([&] { LoadYamlText("a: [1, 2\nb: c\n", kWhere); });
  EXPECT_EQ(e.where().rfind("agent.yaml:", 0), 0u) << e.what();
  EXPECT_NE(e.problem().find("not valid YAML"), std::string::npos);
}

}  // namespace
}  // namespace accel
