// mig-parted v1 config files: mig-parted's strict reading rules (good and bad), error positions,
// writing and reading back, and checking configs against the GPU models they apply to.
#include "sharing/mig_parted_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "common/error.h"

namespace accel::sharing {
namespace mig_parted_config_test {

using ::testing::HasSubstr;

const std::string kExamples = std::string(ACCEL_SOURCE_DIR) + "/examples/mig/";

// A file with one config "c" of one entry: `head` lines (the "- " line first) are indented as
// list items, `body` lines as the entry's keys.
std::string OneEntry(const std::string& body, const std::string& head = "- devices: all\n") {
  std::string out = "version: v1\nmig-configs:\n  c:\n";
  auto indent = [&out](const std::string& lines, const std::string& by) {
    size_t start = 0;
    while (start < lines.size()) {
      size_t end = lines.find('\n', start);
      out += by + lines.substr(start, end - start) + "\n";
      start = end == std::string::npos ? lines.size() : end + 1;
    }
  };
  indent(head, "    ");
  indent(body, "      ");
  return out;
}

InputError ParseError(const std::string& yaml) {
  try {
    ParseMigPartedConfig(yaml, "cfg.yaml");
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << yaml;
  return InputError("", "", "");
}

void ExpectSame(const MigPartedConfig& a, const MigPartedConfig& b) {
  ASSERT_EQ(a.configs.size(), b.configs.size());
  for (size_t c = 0; c < a.configs.size(); ++c) {
    EXPECT_EQ(a.configs[c].name, b.configs[c].name);
    ASSERT_EQ(a.configs[c].entries.size(), b.configs[c].entries.size()) << a.configs[c].name;
    for (size_t i = 0; i < a.configs[c].entries.size(); ++i) {
      const MigConfigEntry& x = a.configs[c].entries[i];
      const MigConfigEntry& y = b.configs[c].entries[i];
      EXPECT_EQ(x.all_devices, y.all_devices);
      EXPECT_EQ(x.devices, y.devices);
      EXPECT_EQ(x.device_filter, y.device_filter);
      EXPECT_EQ(x.device_filter_scalar, y.device_filter_scalar);
      EXPECT_EQ(x.mig_enabled, y.mig_enabled);
      EXPECT_EQ(x.mig_devices, y.mig_devices) << a.configs[c].name << "[" << i << "]";
    }
  }
}

const GpuModel& Model(const char* name) {
  const GpuModel* m = FindGpuModel(name);
  EXPECT_NE(m, nullptr) << name;
  return *m;
}

// ---- reading: accepted shapes ----

TEST(MigPartedConfigRead, NvidiaStyleEntry) {
  MigPartedConfig c = ParseMigPartedConfig(R"(version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false

  all-1g.10gb:
    - device-filter: ["0x233010DE", "0x20B210DE:0x134F10DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7
    - device-filter: "0x20B010DE"
      devices: [0, 3]
      mig-enabled: true
      mig-devices:
        1g.10gb: 4
        "1c.3g.20gb": 0
)",
                                           "x.yaml");
  ASSERT_EQ(c.configs.size(), 2u);
  EXPECT_EQ(c.configs[0].name, "all-disabled");
  EXPECT_EQ(c.configs[0].entries[0].line, 4);
  EXPECT_TRUE(c.configs[0].entries[0].all_devices);
  EXPECT_FALSE(c.configs[0].entries[0].mig_enabled);
  const MigConfig* ten = c.Find("all-1g.10gb");
  ASSERT_NE(ten, nullptr);
  ASSERT_EQ(ten->entries.size(), 2u);
  const MigConfigEntry& e0 = ten->entries[0];
  EXPECT_EQ(e0.line, 8);
  ASSERT_EQ(e0.device_filter.size(), 2u);
  EXPECT_EQ(e0.device_filter[0], (DeviceFilter{0x233010DE, std::nullopt}));
  EXPECT_EQ(e0.device_filter[1], (DeviceFilter{0x20B210DE, 0x134F10DE}));
  EXPECT_FALSE(e0.device_filter_scalar);
  EXPECT_EQ(e0.mig_devices, (std::vector<std::pair<std::string, int>>{{"1g.10gb", 7}}));
  const MigConfigEntry& e1 = ten->entries[1];
  EXPECT_TRUE(e1.device_filter_scalar);
  EXPECT_FALSE(e1.all_devices);
  EXPECT_EQ(e1.devices, (std::vector<int>{0, 3}));
  EXPECT_EQ(e1.mig_devices, (std::vector<std::pair<std::string, int>>{{"1g.10gb", 4}, {"1c.3g.20gb", 0}}));
  EXPECT_EQ(c.Find("nope"), nullptr);
}

TEST(MigPartedConfigRead, LenientWhereMigPartedIsLenient) {
  // YAML 1.1 booleans, as mig-parted's reader takes them.
  EXPECT_TRUE(ParseMigPartedConfig(OneEntry("mig-enabled: yes\nmig-devices: {}\n"), "f")
                  .configs[0]
                  .entries[0]
                  .mig_enabled);
  EXPECT_FALSE(ParseMigPartedConfig(OneEntry("mig-enabled: Off\n"), "f").configs[0].entries[0].mig_enabled);
  // Empty mig-devices: allowed with MIG on (no instances) and with MIG off.
  EXPECT_TRUE(ParseMigPartedConfig(OneEntry("mig-enabled: true\nmig-devices: {}\n"), "f")
                  .configs[0]
                  .entries[0]
                  .mig_devices.empty());
  EXPECT_NO_THROW(ParseMigPartedConfig(OneEntry("mig-enabled: false\nmig-devices: {}\n"), "f"));
  // An empty device-filter (string, list or null) filters nothing; devices: [] selects nothing.
  for (const char* filter : {"\"\"", "[]", "~"}) {
    MigPartedConfig c = ParseMigPartedConfig(
        OneEntry("mig-enabled: false\n", std::string("- device-filter: ") + filter + "\n  devices: []\n"),
        "f");
    EXPECT_TRUE(c.configs[0].entries[0].device_filter.empty()) << filter;
    EXPECT_FALSE(c.configs[0].entries[0].all_devices);
  }
  // Base autodetect like Go's strconv.ParseUint(s, 0, 32); quoted "all" is still all.
  MigPartedConfig c = ParseMigPartedConfig(
      OneEntry("mig-enabled: false\n",
               "- device-filter: [\"590352606\", \"0x233010de\", \"0b1:0o17\"]\n  devices: \"all\"\n"),
      "f");
  EXPECT_EQ(c.configs[0].entries[0].device_filter,
            (std::vector<DeviceFilter>{{0x233010DE, std::nullopt}, {0x233010DE, std::nullopt}, {1, 15}}));
  // JSON is YAML too.
  EXPECT_NO_THROW(ParseMigPartedConfig(
      R"({"version": "v1", "mig-configs": {"a": [{"devices": [1], "mig-enabled": true, "mig-devices": {"7g.80gb": 1}}]}})",
      "f"));
}

// ---- reading: refused shapes, each with its line, key path and reason ----

struct BadCase {
  const char* what;
  std::string yaml;
  int line;
  std::string field;
  std::string problem;  // substring
};

TEST(MigPartedConfigRead, StrictRules) {
  const std::string e = "mig-configs.c[0]";
  std::vector<BadCase> cases = {
      {"empty file", "", 1, "", "empty"},
      {"not a map", "- a\n", 1, "", "expected a mapping"},
      {"missing version", "mig-configs:\n  c:\n    - devices: all\n      mig-enabled: false\n", 1, "version",
       "missing"},
      {"wrong version", "version: v2\nmig-configs: {}\n", 1, "version", "unknown version: v2"},
      {"numeric version", "version: 1\n", 1, "version", "unknown version"},
      {"unknown top key", "version: v1\nkind: x\n", 2, "kind", "unexpected field"},
      {"merge key", OneEntry("<<: {a: 1}\nmig-enabled: false\n"), 5, e + ".<<", "unexpected field"},
      {"missing mig-configs", "version: v1\n", 1, "mig-configs", "missing"},
      {"empty mig-configs", "version: v1\nmig-configs: {}\n", 2, "mig-configs", "at least one"},
      {"config without entries", "version: v1\nmig-configs:\n  c: []\n", 3, "mig-configs.c",
       "at least one entry"},
      {"entry not a map", "version: v1\nmig-configs:\n  c:\n    - all\n", 4, e, "mapping"},
      {"unknown entry key", OneEntry("mig_enabled: false\n"), 5, e + ".mig_enabled", "unexpected field"},
      {"missing devices", OneEntry("", "- mig-enabled: false\n"), 4, e + ".devices",
       "missing required field"},
      {"missing mig-enabled", OneEntry(""), 4, e + ".mig-enabled", "missing required field"},
      {"devices other string", OneEntry("mig-enabled: false\n", "- devices: \"0,1\"\n"), 4, e + ".devices",
       "\"all\" or a list"},
      {"devices scalar int", OneEntry("mig-enabled: false\n", "- devices: 3\n"), 4, e + ".devices",
       "\"all\" or a list"},
      {"negative index", OneEntry("mig-enabled: false\n", "- devices: [0, -1]\n"), 4, e + ".devices[1]",
       ">= 0"},
      {"quoted index", OneEntry("mig-enabled: false\n", "- devices: [\"0\"]\n"), 4, e + ".devices[0]",
       "whole number"},
      {"unquoted filter", OneEntry("mig-enabled: false\n", "- device-filter: 0x233010DE\n  devices: all\n"),
       4, e + ".device-filter", "unquoted"},
      {"bad filter",
       OneEntry("mig-enabled: false\n", "- device-filter: [\"0x2330\", \"H100\"]\n  devices: all\n"), 4,
       e + ".device-filter[1]", "not a PCI id"},
      {"filter too wide",
       OneEntry("mig-enabled: false\n", "- device-filter: \"0x1233010DE\"\n  devices: all\n"), 4,
       e + ".device-filter", "not a PCI id"},
      {"filter three parts",
       OneEntry("mig-enabled: false\n", "- device-filter: \"0x1:0x2:0x3\"\n  devices: all\n"), 4,
       e + ".device-filter", "not a PCI id"},
      {"filter bad subsystem",
       OneEntry("mig-enabled: false\n", "- device-filter: \"0x233010DE:\"\n  devices: all\n"), 4,
       e + ".device-filter", "not a PCI id"},
      {"filter map", OneEntry("mig-enabled: false\n", "- device-filter: {a: 1}\n  devices: all\n"), 4,
       e + ".device-filter", "string or a list"},
      {"quoted bool", OneEntry("mig-enabled: \"true\"\nmig-devices: {}\n"), 5, e + ".mig-enabled",
       "true or false"},
      {"null bool", OneEntry("mig-enabled:\n"), 5, e + ".mig-enabled", "true or false"},
      {"enabled without devices", OneEntry("mig-enabled: true\n"), 5, e + ".mig-devices",
       "missing required field"},
      {"enabled with null devices", OneEntry("mig-enabled: true\nmig-devices:\n"), 5, e + ".mig-devices",
       "missing"},
      {"disabled with devices", OneEntry("mig-enabled: false\nmig-devices:\n  \"1g.10gb\": 1\n"), 6,
       e + ".mig-devices", "mig-enabled is false"},
      {"mig-devices list", OneEntry("mig-enabled: true\nmig-devices: [1g.10gb]\n"), 6, e + ".mig-devices",
       "mapping"},
      {"bad profile", OneEntry("mig-enabled: true\nmig-devices:\n  \"1g10gb\": 1\n"), 7,
       e + ".mig-devices.\"1g10gb\"", "not a MIG profile"},
      {"negative count", OneEntry("mig-enabled: true\nmig-devices:\n  \"1g.10gb\": -1\n"), 7,
       e + ".mig-devices.\"1g.10gb\"", ">= 0"},
      {"quoted count", OneEntry("mig-enabled: true\nmig-devices:\n  \"1g.10gb\": \"7\"\n"), 7,
       e + ".mig-devices.\"1g.10gb\"", "whole number"},
      {"float count", OneEntry("mig-enabled: true\nmig-devices:\n  \"1g.10gb\": 1.5\n"), 7,
       e + ".mig-devices.\"1g.10gb\"", "whole number"},
      {"octal-looking count", OneEntry("mig-enabled: true\nmig-devices:\n  \"1g.10gb\": 010\n"), 7,
       e + ".mig-devices.\"1g.10gb\"", "whole number"},
      {"huge count", OneEntry("mig-enabled: true\nmig-devices:\n  \"1g.10gb\": 99999999999\n"), 7,
       e + ".mig-devices.\"1g.10gb\"", "too large"},
      {"missing count", OneEntry("mig-enabled: true\nmig-devices:\n  \"1g.10gb\":\n"), 7,
       e + ".mig-devices.\"1g.10gb\"", "whole number"},
      {"all zero", OneEntry("mig-enabled: true\nmig-devices:\n  \"1g.10gb\": 0\n  \"2g.20gb\": 0\n"), 6,
       e + ".mig-devices", "all counts are 0"},
      {"control character in name",
       "version: v1\nmig-configs:\n  \"a\\tb\": [{devices: all, mig-enabled: false}]\n", 3,
       "mig-configs.a\tb", "control characters"},
      {"syntax error", "version: v1\nmig-configs:\n  c: [\n", 4, "", "YAML syntax error"},
      {"two documents", "version: v1\n---\nversion: v1\n", 3, "", "more than one YAML document"},
      // yaml-cpp 0.7's LoadAll never returns on these.
      {"stray comma", ",\n", 1, "", "stray"},
      {"stray comma after a document", "version: v1\n ,a: 4\n", 2, "", "YAML syntax error"},
  };
  for (const BadCase& c : cases) {
    InputError err = ParseError(c.yaml);
    EXPECT_EQ(err.where(), "cfg.yaml:" + std::to_string(c.line)) << c.what << ": " << err.what();
    EXPECT_EQ(err.field(), c.field) << c.what << ": " << err.what();
    EXPECT_THAT(err.problem(), HasSubstr(c.problem)) << c.what << ": " << err.what();
  }
}

// Duplicate keys are refused by the common YAML check, with both lines (and the column of the
// second key in where()).
TEST(MigPartedConfigRead, DuplicateKeysNameBothLines) {
  const std::string e = "mig-configs.c[0]";
  struct Case {
    const char* what;
    std::string yaml;
    std::string where, field, problem;
  };
  const std::vector<Case> cases = {
      {"duplicate profile", OneEntry("mig-enabled: true\nmig-devices:\n  \"1g.10gb\": 1\n  1g.10gb: 2\n"),
       "cfg.yaml:8:9", e + ".mig-devices.\"1g.10gb\"", "key given twice (lines 7 and 8)"},
      {"duplicate entry key", OneEntry("mig-enabled: true\nmig-enabled: false\n"), "cfg.yaml:6:7",
       e + ".mig-enabled", "key given twice (lines 5 and 6)"},
      {"duplicate config",
       "version: v1\nmig-configs:\n  a: [{devices: all, mig-enabled: false}]\n"
       "  a: [{devices: all, mig-enabled: false}]\n",
       "cfg.yaml:4:3", "mig-configs.a", "key given twice (lines 3 and 4)"},
  };
  for (const Case& c : cases) {
    InputError err = ParseError(c.yaml);
    EXPECT_EQ(err.where(), c.where) << c.what << ": " << err.what();
    EXPECT_EQ(err.field(), c.field) << c.what << ": " << err.what();
    EXPECT_EQ(err.problem(), c.problem) << c.what << ": " << err.what();
  }
  // In a config embedded at line 20 of a ConfigMap, the lines are the ConfigMap's.
  try {
    ParseMigPartedConfig("version: v1\nversion: v1\n", "cm.yaml", 20);
    FAIL();
  } catch (const InputError& err) {
    EXPECT_EQ(err.where(), "cm.yaml:21:1") << err.what();
    EXPECT_EQ(err.problem(), "key given twice (lines 20 and 21)") << err.what();
  }
}

TEST(MigPartedConfigRead, AliasesCannotBlowUp) {
  // 300 entries named 40 times: 12,300 entries after alias expansion, more than mig-parted's
  // bound of values (each entry and key counts) though fewer than the common YAML check's.
  std::string yaml = "version: v1\nmig-configs:\n  c: &e [";
  for (int i = 0; i < 300; ++i) yaml += std::string(i ? ", " : "") + "{devices: all, mig-enabled: false}";
  yaml += "]\n";
  for (int i = 0; i < 40; ++i) yaml += "  c" + std::to_string(i) + ": *e\n";
  InputError err = ParseError(yaml);
  EXPECT_THAT(err.problem(), HasSubstr("more than 20000 values"));
  // 400 times (120,000 entries): the common check refuses the file before the reader walks it.
  for (int i = 40; i < 400; ++i) yaml += "  c" + std::to_string(i) + ": *e\n";
  EXPECT_THAT(ParseError(yaml).problem(), HasSubstr("expands to more than 100000 values"));
  // Aliases themselves are fine.
  MigPartedConfig c = ParseMigPartedConfig(
      "version: v1\nmig-configs: {a: &e [{devices: all, mig-enabled: false}], b: *e}\n", "f");
  EXPECT_EQ(c.configs.size(), 2u);
}

TEST(MigPartedConfigRead, MessageNamesFileLineAndPath) {
  InputError err = ParseError(R"(version: v1
mig-configs:
  all-1g.10gb:
    - devices: all
      mig-enabled: false
    - devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": -7
)");
  EXPECT_THAT(std::string(err.what()),
              HasSubstr("cfg.yaml:9: mig-configs.all-1g.10gb[1].mig-devices.\"1g.10gb\": "));
}

TEST(MigPartedConfigRead, LoadNamesTheFile) {
  MigPartedConfig c = LoadMigPartedConfig(kExamples + "h100-mixed.yaml");
  EXPECT_NE(c.Find("inference-mixed"), nullptr);
  try {
    LoadMigPartedConfig(kExamples + "no-such-file.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.where(), HasSubstr("no-such-file.yaml"));
  }
}

// ---- writing ----

TEST(MigPartedConfigWrite, NvidiaConventions) {
  MigConfigEntry e;
  e.device_filter = {{0x233010DE, std::nullopt}, {0x20B210DE, 0x134F10DE}};
  e.mig_enabled = true;
  e.mig_devices = {{"1g.10gb", 7}};
  MigConfigEntry off;
  off.all_devices = false;
  off.devices = {0, 2};
  MigPartedConfig c{{{"all-1g.10gb", {e}}, {"gpu-2-off", {off}}, {"off", {off}}}};
  EXPECT_EQ(WriteMigPartedConfig(c), R"(version: v1
mig-configs:
  all-1g.10gb:
    # H100-SXM5-80GB, A100-80GB
    - device-filter: ["0x233010DE", "0x20B210DE:0x134F10DE"]
      devices: all
      mig-enabled: true
      mig-devices:
        "1g.10gb": 7

  gpu-2-off:
    - devices: [0, 2]
      mig-enabled: false

  "off":
    - devices: [0, 2]
      mig-enabled: false
)");
  EXPECT_EQ((DeviceFilter{0x20B710DE, std::nullopt}).ToString(), "0x20B710DE");
  EXPECT_EQ((DeviceFilter{0x10DE, 0x12}).ToString(), "0x000010DE:0x00000012");
}

TEST(MigPartedConfigWrite, RoundTripsExamples) {
  for (const char* file : {"default-configs.yaml", "h100-mixed.yaml", "invalid.yaml"}) {
    MigPartedConfig c = LoadMigPartedConfig(kExamples + file);
    std::string text = WriteMigPartedConfig(c);
    ExpectSame(ParseMigPartedConfig(text, file), c);
    EXPECT_EQ(WriteMigPartedConfig(ParseMigPartedConfig(text, file)), text) << file;
  }
}

TEST(MigPartedConfigWrite, RoundTripsOddNamesAndShapes) {
  MigConfigEntry scalar;
  scalar.device_filter = {{0x20B710DE, std::nullopt}};
  scalar.device_filter_scalar = true;
  scalar.mig_enabled = true;
  scalar.mig_devices = {{"1g.6gb+me", 1}, {"2g.12gb", 0}, {"1g.6gb", 3}};
  MigConfigEntry none;
  none.all_devices = false;
  none.mig_enabled = true;
  MigPartedConfig c;
  for (const char* name : {"true", "123", "a b", "x: y", "#c", "-dash", "quote\"s\\", "é-naïve", "null", "on",
                           "\xE2\x80\xA8sep", "1g.10gb"}) {
    c.configs.push_back({name, {scalar, none}});
  }
  std::string text = WriteMigPartedConfig(c);
  ExpectSame(ParseMigPartedConfig(text, "odd"), c);
}

// ---- resolving and matching ----

TEST(MigPartedConfigResolve, ComputeInstanceProfilesCountTheirGpuInstances) {
  const GpuModel& a100 = Model("A100-SXM4-40GB");
  const GpuModel& h100 = Model("H100-SXM5-80GB");
  auto gis = [](const GpuModel& m, std::vector<std::pair<std::string, int>> devices) {
    MigConfigEntry e;
    e.mig_enabled = true;
    e.mig_devices = std::move(devices);
    std::string why;
    std::optional<EntryOnModel> on = ResolveEntry(e, m, &why);
    EXPECT_TRUE(on) << why;
    return on ? on->gpu_instances : std::vector<int>{};
  };
  int a100_3g = *FindProfile(a100, "3g.20gb");
  int h100_3g = *FindProfile(h100, "3g.40gb");
  // mig.md 2.2: "1c.3g.20gb": 6 -> two 3g GIs with three 1c CIs each.
  EXPECT_EQ(gis(a100, {{"1c.3g.20gb", 6}})[a100_3g], 2);
  EXPECT_EQ(gis(a100, {{"1c.3g.20gb", 7}})[a100_3g], 3);
  EXPECT_EQ(gis(h100, {{"1c.3g.40gb", 3}})[h100_3g], 1);
  // A 2c CI leaves one slice of a 3g GI, which a 1c fills; the next 1c needs a second GI.
  EXPECT_EQ(gis(h100, {{"2c.3g.40gb", 1}, {"1c.3g.40gb", 2}})[h100_3g], 2);
  EXPECT_EQ(gis(h100, {{"2c.3g.40gb", 2}})[h100_3g], 2);
  // Whole GIs and CIs of the same GI profile do not share.
  EXPECT_EQ(gis(h100, {{"3g.40gb", 1}, {"1c.3g.40gb", 1}})[h100_3g], 2);
  // Zero counts are never looked up (mig-parted skips them).
  EXPECT_EQ(gis(h100, {{"1g.5gb", 0}, {"1g.10gb", 2}})[*FindProfile(h100, "1g.10gb")], 2);
  // Huge counts stay cheap and saturate.
  EXPECT_GT(gis(h100, {{"1c.7g.80gb", 2000000000}})[*FindProfile(h100, "7g.80gb")], 1000);

  MigConfigEntry e;
  e.mig_devices = {{"1g.5gb", 1}};
  std::string why;
  EXPECT_FALSE(ResolveEntry(e, h100, &why));
  EXPECT_THAT(why, HasSubstr("1g.5gb"));
  e.mig_devices = {{"4c.3g.40gb", 1}};
  EXPECT_FALSE(ResolveEntry(e, h100, &why));
}

TEST(MigPartedConfigResolve, NameCollisionsResolvePerModel) {
  MigConfigEntry e;
  e.mig_devices = {{"1g.10gb", 4}};
  const GpuModel& a100 = Model("A100-SXM4-40GB");
  const GpuModel& h100 = Model("H100-SXM5-80GB");
  std::optional<EntryOnModel> on40 = ResolveEntry(e, a100, nullptr);
  std::optional<EntryOnModel> on80 = ResolveEntry(e, h100, nullptr);
  ASSERT_TRUE(on40 && on80);
  EXPECT_EQ(a100.profiles[*FindProfile(a100, "1g.10gb")].memory_slices, 2);
  EXPECT_EQ(h100.profiles[*FindProfile(h100, "1g.10gb")].memory_slices, 1);
}

TEST(MigPartedConfigResolve, DeviceFilterMatchesModelByPciId) {
  MigConfigEntry e;
  EXPECT_TRUE(EntryMatchesModel(e, Model("A30-24GB")));
  e.device_filter = {{0x233010DE, 0x16C110DE}};  // subsystem ignored for the model
  EXPECT_TRUE(EntryMatchesModel(e, Model("H100-SXM5-80GB")));
  EXPECT_FALSE(EntryMatchesModel(e, Model("A100-80GB")));
  e.device_filter.push_back({0x20B210DE, std::nullopt});
  EXPECT_TRUE(EntryMatchesModel(e, Model("A100-80GB")));
}

// ---- validation ----

std::vector<ConfigFinding> ValidateText(const std::string& yaml, std::vector<const GpuModel*> only = {}) {
  return ValidateMigPartedConfig(ParseMigPartedConfig(yaml, "v.yaml"), only);
}

TEST(MigPartedConfigValidate, ExamplesThatShouldPass) {
  for (const char* file : {"default-configs.yaml", "h100-mixed.yaml"}) {
    for (const ConfigFinding& f : ValidateMigPartedConfig(LoadMigPartedConfig(kExamples + file))) {
      ADD_FAILURE() << file << ": " << f.config << "[" << f.entry << "] line " << f.line << " on " << f.model
                    << ": " << f.message;
    }
  }
}

TEST(MigPartedConfigValidate, DefaultConfigsCoverEveryCatalogProfile) {
  MigPartedConfig c = LoadMigPartedConfig(kExamples + "default-configs.yaml");
  for (const GpuModel& m : MigCatalog()) {
    for (const MigProfile& p : m.profiles) {
      std::string name = "all-" + p.name;
      std::replace(name.begin(), name.end(), '+', '.');
      const MigConfig* config = c.Find(name);
      ASSERT_NE(config, nullptr) << name;
      int on_model = 0;
      for (const MigConfigEntry& e : config->entries) {
        if (!EntryMatchesModel(e, m)) continue;
        std::optional<EntryOnModel> on = ResolveEntry(e, m, nullptr);
        if (!on) continue;
        ++on_model;
        EXPECT_EQ(on->gpu_instances[*FindProfile(m, p.name)], p.max_count) << name << " on " << m.name;
      }
      EXPECT_EQ(on_model, 1) << name << " on " << m.name;
    }
  }
}

TEST(MigPartedConfigValidate, UnfilteredNameIsCheckedOnEveryModelThatHasIt) {
  std::string seven = OneEntry("mig-enabled: true\nmig-devices:\n  \"1g.10gb\": 7\n");
  std::vector<ConfigFinding> all = ValidateText(seven);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].model, "A100-SXM4-40GB");
  EXPECT_EQ(all[0].config, "c");
  EXPECT_EQ(all[0].line, 4);
  EXPECT_THAT(all[0].message, HasSubstr("7 x 1g.10gb exceeds the 4"));
  EXPECT_TRUE(ValidateText(seven, {&Model("H100-SXM5-80GB")}).empty());
  EXPECT_EQ(ValidateText(seven, {&Model("A100-SXM4-40GB")}).size(), 1u);
  // No model in scope has the name at all.
  std::vector<ConfigFinding> none = ValidateText(seven, {&Model("A30-24GB")});
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].model, "");
  EXPECT_THAT(none[0].message, HasSubstr("no GPU model"));
}

TEST(MigPartedConfigValidate, GeometryMemoryAndMediaProblems) {
  auto one = [](const std::string& filter, const std::string& devices) {
    std::vector<ConfigFinding> f =
        ValidateText(OneEntry("mig-enabled: true\nmig-devices: " + devices + "\n",
                              "- device-filter: \"" + filter + "\"\n  devices: all\n"));
    EXPECT_EQ(f.size(), 1u) << devices;
    return f.empty() ? std::string() : f[0].model + ": " + f[0].message;
  };
  EXPECT_THAT(one("0x233010DE", "{\"3g.40gb\": 2, \"1g.10gb\": 1}"), HasSubstr("needs 9 memory slices"));
  EXPECT_THAT(one("0x233010DE", "{\"2g.20gb\": 3, \"1g.10gb\": 2}"),
              HasSubstr("no placement of 2 x 1g.10gb + 3 x 2g.20gb exists"));
  EXPECT_THAT(one("0x20B710DE", "{\"1g.6gb+me\": 1, \"2g.12gb+me\": 1}"), HasSubstr("media-extension"));
  EXPECT_THAT(one("0x233010DE", "{\"1g.10gb+me\": 2}"), HasSubstr("exceeds the 1"));
  EXPECT_THAT(one("0x233010DE", "{\"1g.5gb\": 1}"),
              HasSubstr("H100-SXM5-80GB: H100-SXM5-80GB has no profile 1g.5gb"));
  EXPECT_THAT(one("0x2BB510DE", "{\"1g.24gb+me\": 1, \"2g.48gb+me.all\": 1}"), HasSubstr("media-extension"));
  EXPECT_THAT(one("0x2BB510DE", "{\"1g.24gb\": 2, \"2g.48gb+me.all\": 1}"),
              HasSubstr("only -me instances may sit beside it"));
  // A30 +me alone, and the 4-slice geometry.
  EXPECT_TRUE(ValidateText(OneEntry("mig-enabled: true\nmig-devices: {\"2g.12gb+me\": 1, \"1g.6gb\": 2}\n",
                                    "- device-filter: \"0x20B710DE\"\n  devices: all\n"))
                  .empty());
  // Filtered to a model outside only_models: the entry does not apply there.
  EXPECT_TRUE(ValidateText(OneEntry("mig-enabled: true\nmig-devices: {\"1g.6gb\": 9}\n",
                                    "- device-filter: \"0x20B710DE\"\n  devices: all\n"),
                           {&Model("H100-SXM5-80GB")})
                  .empty());
}

TEST(MigPartedConfigValidate, InvalidExampleReportsEveryConfig) {
  std::vector<ConfigFinding> f = ValidateMigPartedConfig(LoadMigPartedConfig(kExamples + "invalid.yaml"));
  std::vector<std::string> got;
  for (const ConfigFinding& x : f) got.push_back(x.config + "@" + x.model);
  EXPECT_THAT(got, ::testing::ElementsAre("seven-small@A100-SXM4-40GB", "three-three-one@H100-SXM5-80GB",
                                          "two-two-two-one-one@H100-SXM5-80GB", "a30-two-media@A30-24GB",
                                          "wrong-model@H100-SXM5-80GB", "typo@"));
  for (const ConfigFinding& x : f) EXPECT_GT(x.line, 0) << x.config;
}

TEST(MigPartedConfigValidate, UnknownDeviceFilterIsAWarningNotAProblem) {
  std::vector<ConfigFinding> f = ValidateText(
      OneEntry("mig-enabled: true\nmig-devices: {\"1g.10gb\": 7}\n",
               "- device-filter: [\"0x12345678\"]\n  devices: all\n"));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].is_error());
  EXPECT_FALSE(HasErrors(f));
  EXPECT_THAT(f[0].message, HasSubstr("0x12345678 is no GPU model accel knows"));
  EXPECT_THAT(f[0].message, HasSubstr("the entry is not checked"));
  // One known, one unknown: checked on the known one, a warning for the other.
  f = ValidateText(OneEntry("mig-enabled: true\nmig-devices: {\"1g.10gb\": 8}\n",
                            "- device-filter: [\"0x233010DE\", \"0x1FB010DE\"]\n  devices: all\n"));
  ASSERT_EQ(f.size(), 2u);
  EXPECT_FALSE(f[0].is_error());
  EXPECT_THAT(f[0].message, HasSubstr("0x1FB010DE is no GPU model accel knows; not checked there"));
  EXPECT_TRUE(f[1].is_error());
  EXPECT_EQ(f[1].model, "H100-SXM5-80GB");
  // Restricted to some models with --gpu, an unknown ID is none of the user's business.
  EXPECT_TRUE(ValidateText(OneEntry("mig-enabled: true\nmig-devices: {\"1g.10gb\": 7}\n",
                                    "- device-filter: \"0x12345678\"\n  devices: all\n"),
                           {&Model("H100-SXM5-80GB")})
                  .empty());
}

TEST(MigPartedConfigValidate, OtherBoardNamesAreAcceptedWithAWarning) {
  // No model prints 7g.189gb; GB200 boards that report 189 GB do: valid, with a warning.
  std::vector<ConfigFinding> f = ValidateText(OneEntry("mig-enabled: true\nmig-devices: {\"7g.189gb\": 1}\n"));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].is_error());
  EXPECT_EQ(f[0].model, "GB200-186GB");
  EXPECT_THAT(f[0].message, HasSubstr("7g.189gb is what some GB200-186GB boards or drivers call 7g.186gb"));
  // A filtered entry relying on one: the same warning; too many is still an error.
  f = ValidateText(OneEntry("mig-enabled: true\nmig-devices: {\"3g.95gb\": 3}\n",
                            "- device-filter: \"0x294110DE\"\n  devices: all\n"));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(f[0].is_error());
  EXPECT_THAT(f[0].message, HasSubstr("3 x 3g.93gb exceeds the 2"));
  // When some model prints the name, the others' board names do not drag them in:
  // 1g.24gb is H100 NVL's, GH200's and RTX PRO 6000's own name (and early GB200 boards').
  EXPECT_TRUE(ValidateText(OneEntry("mig-enabled: true\nmig-devices: {\"1g.24gb\": 4}\n")).empty());
}

TEST(MigPartedConfigValidate, DisabledEntriesAlwaysPass) {
  EXPECT_TRUE(
      ValidateText(OneEntry("mig-enabled: false\n", "- device-filter: \"0x12345678\"\n  devices: all\n"))
          .empty());
  EXPECT_TRUE(ValidateText(OneEntry("mig-enabled: true\nmig-devices: {}\n")).empty());
}

}  // namespace
}  // namespace accel::sharing
