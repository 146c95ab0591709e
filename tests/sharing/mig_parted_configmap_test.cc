// mig-parted configs inside Kubernetes ConfigMaps (which key, errors that name ConfigMap lines),
// and NVIDIA's own files: mig-parted's config-default.yaml and the GPU Operator's
// default-mig-parted-config ConfigMap validate clean, and every all-balanced entry lays out on
// the GPU its device-filter names.
#include "sharing/mig_parted_configmap.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "common/error.h"
#include "sharing/mig_layout.h"
#include "support/shared_fixture.h"

namespace accel::sharing {
namespace mig_parted_configmap_test {

using ::testing::HasSubstr;

const std::string kConfig =
    "version: v1\n"
    "mig-configs:\n"
    "  all-1g.10gb:\n"
    "    - devices: all\n"
    "      mig-enabled: true\n"
    "      mig-devices:\n"
    "        \"1g.10gb\": 7\n";

// `config` indented under data.<key>: | of a ConfigMap named `name`; `more` adds keys after it.
std::string ConfigMap(const std::string& key, const std::string& config, const std::string& more = "",
                      const std::string& name = "default-mig-parted-config") {
  std::string out = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name +
                    "\n  namespace: gpu-operator\ndata:\n  " + key + ": |\n";
  size_t start = 0;
  while (start < config.size()) {
    size_t end = config.find('\n', start);
    out += "    " + config.substr(start, end - start) + "\n";
    start = end == std::string::npos ? config.size() : end + 1;
  }
  return out + more;
}

InputError ErrorOf(const std::string& text, const std::string& key = "") {
  try {
    ParseMigPartedDocument(text, "cm.yaml", key);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return InputError("", "", "");
}

TEST(MigPartedConfigMap, ReadsConfigYamlByDefault) {
  MigPartedDocument doc = ParseMigPartedDocument(ConfigMap("config.yaml", kConfig), "cm.yaml");
  ASSERT_TRUE(doc.configmap);
  EXPECT_EQ(doc.configmap->name, "default-mig-parted-config");
  EXPECT_EQ(doc.configmap->key, "config.yaml");
  ASSERT_EQ(doc.config.configs.size(), 1u);
  EXPECT_EQ(doc.config.configs[0].name, "all-1g.10gb");
  // Entry lines are lines of the ConfigMap file: the entry is on line 11.
  EXPECT_EQ(doc.config.configs[0].entries[0].line, 11);
  // With several keys config.yaml is still the one mig-manager reads.
  doc = ParseMigPartedDocument(ConfigMap("config.yaml", kConfig, "  hooks.yaml: \"x\"\n"), "cm.yaml");
  EXPECT_EQ(doc.configmap->key, "config.yaml");
  EXPECT_EQ(doc.configmap->keys, (std::vector<std::string>{"config.yaml", "hooks.yaml"}));
}

TEST(MigPartedConfigMap, OnlyKeyOrTheKeyAskedFor) {
  MigPartedDocument doc = ParseMigPartedDocument(ConfigMap("h100.yaml", kConfig), "cm.yaml");
  EXPECT_EQ(doc.configmap->key, "h100.yaml");
  const std::string two = ConfigMap("a.yaml", kConfig, "  b.yaml: |\n    version: v1\n    mig-configs:\n"
                                                        "      off:\n        - devices: all\n"
                                                        "          mig-enabled: false\n");
  InputError e = ErrorOf(two);
  EXPECT_THAT(e.what(), HasSubstr("has 2 keys (\"a.yaml\", \"b.yaml\") and none is \"config.yaml\""));
  EXPECT_THAT(e.what(), HasSubstr("--key NAME"));
  EXPECT_THAT(e.where(), HasSubstr("cm.yaml:"));
  doc = ParseMigPartedDocument(two, "cm.yaml", "b.yaml");
  EXPECT_EQ(doc.config.configs[0].name, "off");
  e = ErrorOf(two, "c.yaml");
  EXPECT_THAT(e.what(), HasSubstr("has no key \"c.yaml\"; its keys: \"a.yaml\", \"b.yaml\""));
}

TEST(MigPartedConfigMap, ErrorsNameLinesOfTheConfigMap) {
  std::string bad = kConfig + "      mig-devicez: {}\n";
  InputError e = ErrorOf(ConfigMap("config.yaml", bad));
  EXPECT_EQ(e.where(), "cm.yaml:15");
  EXPECT_EQ(e.problem(), "unexpected field");
  // A quoted value does not keep its lines: the source says which key, lines are the value's.
  std::string quoted =
      "kind: ConfigMap\ndata:\n  config.yaml: \"version: v1\\nmig-configs:\\n  x: []\\n\"\n";
  e = ErrorOf(quoted);
  EXPECT_EQ(e.where(), "cm.yaml (data.config.yaml):3");
  EXPECT_THAT(e.problem(), HasSubstr("at least one entry"));
}

TEST(MigPartedConfigMap, NotAConfigMapOrNotAString) {
  EXPECT_THAT(ErrorOf("apiVersion: v1\nkind: Secret\ndata:\n  config.yaml: eA==\n").what(),
              HasSubstr("a Kubernetes Secret, not a ConfigMap"));
  EXPECT_THAT(ErrorOf("kind: ConfigMap\nmetadata:\n  name: x\n").what(), HasSubstr("ConfigMap x holds no data"));
  EXPECT_THAT(ErrorOf("kind: ConfigMap\ndata: {}\n").what(), HasSubstr("holds no data"));
  EXPECT_THAT(ErrorOf("kind: ConfigMap\ndata:\n  config.yaml:\n    version: v1\n").what(),
              HasSubstr("must be a string holding the mig-parted YAML"));
  // --key on a plain mig-parted config is a mistake worth naming.
  EXPECT_THAT(ErrorOf(kConfig, "config.yaml").what(), HasSubstr("not a Kubernetes ConfigMap"));
  // A plain config reads as before, errors and all.
  EXPECT_FALSE(ParseMigPartedDocument(kConfig, "c.yaml").configmap);
  EXPECT_EQ(ErrorOf("version: v2\nmig-configs: {}\n").field(), "version");
}

// ---- NVIDIA's own files (../shared/peers/mig/) ----

std::string Peer(const std::string& file) { return test_support::SharedPath("peers/mig/" + file); }

std::string Describe(const std::vector<ConfigFinding>& findings, bool errors) {
  std::string out;
  for (const ConfigFinding& f : findings) {
    if (f.is_error() != errors) continue;
    out += f.config + "[" + std::to_string(f.entry) + "] line " + std::to_string(f.line) + " on " +
           f.model + ": " + f.message + "\n";
  }
  return out;
}

TEST(MigPartedNvidiaFiles, DefaultConfigAndOperatorConfigMapValidateClean) {
  for (const char* file : {"config-default.yaml", "0400_configmap.yaml"}) {
    SCOPED_TRACE(file);
    ACCEL_REQUIRE_SHARED(Peer(file));
    MigPartedDocument doc = LoadMigPartedDocument(Peer(file));
    EXPECT_EQ(doc.config.configs.size(), 81u);
    EXPECT_EQ(doc.configmap.has_value(), std::string(file) == "0400_configmap.yaml");
    const std::vector<ConfigFinding> findings = ValidateMigPartedConfig(doc.config);
    EXPECT_FALSE(HasErrors(findings)) << Describe(findings, true);
    // The only warnings: the three configs that name GB200's 189 GB board spellings.
    std::vector<std::string> warned;
    for (const ConfigFinding& f : findings) warned.push_back(f.config + "@" + f.model);
    EXPECT_THAT(warned, ::testing::UnorderedElementsAre("all-3g.95gb@GB200-186GB", "all-4g.95gb@GB200-186GB",
                                                        "all-7g.189gb@GB200-186GB"))
        << Describe(findings, false);
  }
}

TEST(MigPartedNvidiaFiles, EveryProfileNamedResolvesOnSomeModel) {
  ACCEL_REQUIRE_SHARED(Peer("config-default.yaml"));
  const MigPartedConfig config = LoadMigPartedConfig(Peer("config-default.yaml"));
  for (const MigConfig& c : config.configs) {
    for (const MigConfigEntry& e : c.entries) {
      for (const auto& [profile, count] : e.mig_devices) {
        bool somewhere = false;
        for (const GpuModel& m : MigCatalog()) {
          somewhere = somewhere || (EntryMatchesModel(e, m) && FindProfile(m, profile));
        }
        EXPECT_TRUE(somewhere) << c.name << ": " << profile;
      }
    }
  }
}

TEST(MigPartedNvidiaFiles, EveryAllBalancedEntryLaysOutOnItsGpu) {
  ACCEL_REQUIRE_SHARED(Peer("config-default.yaml"));
  const MigPartedConfig config = LoadMigPartedConfig(Peer("config-default.yaml"));
  const MigConfig* balanced = config.Find("all-balanced");
  ASSERT_NE(balanced, nullptr);
  EXPECT_EQ(balanced->entries.size(), 12u);
  std::set<std::string> models;
  for (const MigConfigEntry& e : balanced->entries) {
    ASSERT_FALSE(e.device_filter.empty());
    for (const DeviceFilter& f : e.device_filter) {
      const GpuModel* model = FindGpuModelByPciId(f.pci_id);
      ASSERT_NE(model, nullptr) << f.ToString();
      SCOPED_TRACE(f.ToString() + " = " + model->name);
      models.insert(model->name);
      std::string why;
      std::optional<EntryOnModel> on = ResolveEntry(e, *model, &why);
      ASSERT_TRUE(on) << why;
      EXPECT_TRUE(on->other_names.empty());
      std::optional<MigLayout> layout = LayoutForCounts(*model, on->gpu_instances);
      ASSERT_TRUE(layout);
      EXPECT_TRUE(ValidateLayout(*model, *layout).empty()) << Describe(*model, *layout);
      // 2 x 1g + 1 x 2g (+ 1 x 3g on 7-slice parts), as mig-parted's builder writes it.
      int instances = 0;
      for (int n : on->gpu_instances) instances += n;
      EXPECT_EQ(instances, model->compute_slices == 7 ? 4 : 3);
    }
  }
  // Together the twelve entries cover every model in accel's catalog.
  EXPECT_EQ(models.size(), MigCatalog().size());
}

TEST(MigPartedNvidiaFiles, OtherPeerFilesAreAccepted) {
  // config.yaml: mig-parted's A100-40GB example (no device-filter); every config is valid.
  // dgx-station-80gb-config.yaml: DGX Station A100 80GB, whose display GPU 0x1FB0 is in every
  // config with mig-enabled: false, which asks nothing of any geometry.
  for (const char* file : {"config.yaml", "dgx-station-80gb-config.yaml"}) {
    SCOPED_TRACE(file);
    ACCEL_REQUIRE_SHARED(Peer(file));
    MigPartedDocument doc = LoadMigPartedDocument(Peer(file));
    EXPECT_FALSE(doc.configmap);
    const std::vector<ConfigFinding> findings = ValidateMigPartedConfig(doc.config);
    EXPECT_TRUE(findings.empty()) << Describe(findings, true) << Describe(findings, false);
  }
}

}  // namespace
}  // namespace accel::sharing
