// ParseAmdMetricsConfig: device-metrics-exporter's config.json and its ConfigMap, read as the
// ROCm project ships them (../shared/peers/rocm/), and the errors for what it would not take.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "support/shared_fixture.h"
#include "telemetry/field_selection.h"

namespace accel::telemetry {
namespace amd_metrics_config_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ErrorOf(const std::string& text) {
  try {
    ParseAmdMetricsConfig(text, "config.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(AmdMetricsConfig, FieldsPrefixAndWhatIsNotServed) {
  AmdMetricsConfig c = ParseAmdMetricsConfig(R"({
    "CommonConfig": {"MetricsFieldPrefix": "amd_"},
    "GPUConfig": {"Fields": ["GPU_POWER_USAGE", "gpu_used_vram", "GPU_PACKAGE_POWER",
                             "GPU_POWER_USAGE", "GPU_NODES_TOTAL"],
                  "Labels": ["GPU_UUID"], "CustomLabels": {}},
    "NICConfig": {"Fields": ["NIC_TOTAL"]}
  })", "config.json");
  EXPECT_FALSE(c.all_fields);
  EXPECT_EQ(c.prefix, "amd_");
  EXPECT_THAT(c.fields, ElementsAre("GPU_POWER_USAGE", "GPU_USED_VRAM", "GPU_NODES_TOTAL"));
  EXPECT_THAT(c.not_served, ElementsAre("GPU_PACKAGE_POWER"));
  EXPECT_THAT(c.ignored_settings, ElementsAre("GPUConfig.Labels"));  // an empty map is nothing
  FieldSelection selection;
  selection.amd = c;
  EXPECT_THAT(SelectionWarning(selection),
              HasSubstr("config.json: 1 GPUConfig.Fields accel cannot read, not served: "
                        "GPU_PACKAGE_POWER; config.json: not applied"));
}

TEST(AmdMetricsConfig, NoFieldListMeansEveryField) {
  for (const char* text : {"{}", R"({"GPUConfig": {}})", R"({"GPUConfig": {"Fields": []}})",
                           R"({"GPUConfig": {"Fields": null}})"}) {
    AmdMetricsConfig c = ParseAmdMetricsConfig(text, "config.json");
    EXPECT_TRUE(c.all_fields) << text;
    EXPECT_TRUE(c.fields.empty()) << text;
    EXPECT_EQ(c.prefix, "") << text;
  }
}

TEST(AmdMetricsConfig, Errors) {
  EXPECT_THAT(ErrorOf(R"({"GPUConfig": {"Fields": ["GPU_POWR_USAGE"]}})"),
              HasSubstr("config.json: GPUConfig.Fields[0]: 'GPU_POWR_USAGE' is not a "
                        "device-metrics-exporter GPU field"));
  EXPECT_THAT(ErrorOf(R"({"GPUConfig": {"Fields": ["GPU_POWER_USAGE", 3]}})"),
              HasSubstr("GPUConfig.Fields[1]: expected a field name"));
  EXPECT_THAT(ErrorOf(R"({"GPUConfig": {"Fields": "GPU_POWER_USAGE"}})"),
              HasSubstr("GPUConfig.Fields: expected a list of field names"));
  EXPECT_THAT(ErrorOf(R"({"GPUConfig": []})"), HasSubstr("GPUConfig: expected an object"));
  EXPECT_THAT(ErrorOf(R"({"CommonConfig": {"MetricsFieldPrefix": "9x-"}})"),
              HasSubstr("CommonConfig.MetricsFieldPrefix: is not a Prometheus name prefix"));
  EXPECT_THAT(ErrorOf("[1, 2]"), HasSubstr("expected a JSON object"));
  EXPECT_THAT(ErrorOf("{\"GPUConfig\": "), HasSubstr("config.json"));
  // A ConfigMap's entry is chosen as for mig-parted's (common/configmap.h): config.json, else the
  // only key; several keys and none is config.json is an error naming them.
  EXPECT_THAT(ErrorOf("kind: ConfigMap\ndata: {a.json: x, b.json: y}\n"),
              HasSubstr("data: the ConfigMap has 2 keys (\"a.json\", \"b.json\") and none is "
                        "\"config.json\""));
  EXPECT_THAT(ErrorOf("kind: ConfigMap\ndata: {other.json: '[1]'}\n"),
              HasSubstr("expected a JSON object"));  // the only key is read
  EXPECT_THAT(ErrorOf("kind: ConfigMap\n"), HasSubstr("the ConfigMap holds no data"));
  EXPECT_THAT(ErrorOf("kind: DaemonSet\napiVersion: apps/v1\n"),
              HasSubstr("a Kubernetes DaemonSet, not a ConfigMap"));
}

TEST(AmdMetricsConfig, ServedFieldsAreKnownNames) {
  const std::vector<std::string>& known = AmdFieldNames();
  EXPECT_EQ(known.size(), 194u);
  for (const std::string& f : AmdServedFields()) {
    EXPECT_NE(std::find(known.begin(), known.end(), f), known.end()) << f;
  }
}

// ---- the ROCm project's own files -----------------------------------------------------------

std::string Peer(const std::string& name) { return test_support::SharedPath("peers/rocm/" + name); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(AmdMetricsConfigPeers, ShippedConfigsReadWhole) {
  for (const char* name : {"config.json", "config-gpu.json", "configmap.yaml"}) {
    const std::string path = Peer(name);
    ACCEL_REQUIRE_SHARED(path);
    AmdMetricsConfig c = LoadAmdMetricsConfig(path);
    EXPECT_FALSE(c.all_fields) << name;
    EXPECT_EQ(c.prefix, "amd_") << name;
    // Every listed field is either served or named in the warning, none twice, none lost.
    std::vector<std::string> listed;
    if (std::string(name) == "configmap.yaml") {
      continue;  // the same list as config.json, checked there; the ConfigMap read is the point
    }
    nlohmann::json doc = nlohmann::json::parse(ReadFile(path));
    for (const auto& f : doc["GPUConfig"]["Fields"]) listed.push_back(f.get<std::string>());
    EXPECT_EQ(c.fields.size() + c.not_served.size(), listed.size()) << name;
    // The whole served set is in these configs: accel's amd profile is all there.
    std::vector<std::string> served = c.fields;
    std::vector<std::string> expected = AmdServedFields();
    std::sort(served.begin(), served.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(served, expected) << name;
  }
}

}  // namespace
}  // namespace accel::telemetry
