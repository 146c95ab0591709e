// The monitoring stack of `accel cluster plan` (cluster/monitoring_stack.h): ServiceMonitors and
// PrometheusRules valid against the real CRDs; every target gets node_group from its node's
// label; every rule of a group selects that group only; the accel rules are exactly
// deploy/prometheus/accel-alerts.yml's with the group's matcher added; every rule parses
// (promtool check rules) and the key ones fire in promtool unit tests on the group's series only.
#include "cluster/monitoring_stack.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/structured_file.h"
#include "common/yaml_out.h"
#include "support/crd_validate.h"
#include "support/shared_fixture.h"

namespace accel::cluster {
namespace monitoring_stack_test {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

constexpr const char* kPromtool = "/usr/bin/promtool";

std::string Src(const std::string& rel) { return std::string(ACCEL_SOURCE_DIR) + "/" + rel; }

const ClusterTemplate& Example() {
  static const ClusterTemplate t = LoadClusterTemplate(Src("examples/cluster/ai-prod.yaml"));
  return t;
}

const StackPart& ExamplePart() {
  static const StackPart part = MonitoringStack(Example(), PlanCluster(Example()));
  return part;
}

std::string AllYaml(const StackPart& part) {
  std::string out;
  for (const auto& [name, text] : part.files) out += "---\n" + text;
  return out;
}

fs::path TempDir() {
  const fs::path d = fs::temp_directory_path() / ("accel-monitoring-stack-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// Removes TempDir() when the test binary ends.
class RemoveTempDir : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("accel-monitoring-stack-" + std::to_string(::getpid())), ec);
  }
};
[[maybe_unused]] ::testing::Environment* const kRemoveTempDir = ::testing::AddGlobalTestEnvironment(new RemoveTempDir);

// Runs `cmd`; returns its exit status and puts stdout+stderr in *out.
int RunCommand(const std::string& cmd, std::string* out) {
  const fs::path log = TempDir() / "run.log";
  const int status = std::system((cmd + " > '" + log.string() + "' 2>&1").c_str());
  *out = ReadWholeFile(log.string());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(MonitoringStack, ObjectsValidateAgainstTheCrds) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  const StackPart& part = ExamplePart();
  const test_support::CrdResult r = test_support::ValidateObjects(AllYaml(part), "monitoring-stack");
  EXPECT_EQ(r.exit_code, 0) << r.output << AllYaml(part);
  EXPECT_NE(r.output.find(std::to_string(part.objects.size()) + " object(s) checked"), std::string::npos) << r.output;
}

TEST(MonitoringStack, ExampleFiles) {
  const StackPart& part = ExamplePart();
  std::set<std::string> names;
  for (const auto& [name, text] : part.files) names.insert(name);
  // The CPU-only system group has no exporter and no rules.
  EXPECT_EQ(names, (std::set<std::string>{"gaudi-train/monitoring/prometheus-rule.yaml",
                                          "h100-train/monitoring/prometheus-rule.yaml",
                                          "mi300x-infer/monitoring/prometheus-rule.yaml",
                                          "stack/monitoring/service-monitors.yaml"}));
  EXPECT_TRUE(part.node_labels.empty());
  std::vector<std::string> objects;
  for (const json& o : part.objects) objects.push_back(o["kind"].get<std::string>() + "/" + o["metadata"]["name"].get<std::string>());
  // In file order; the example's groups: NVIDIA operator, AMD on accel's agent, Gaudi operator.
  EXPECT_EQ(objects, (std::vector<std::string>{
                         "PrometheusRule/ai-prod-gaudi-train", "PrometheusRule/ai-prod-h100-train",
                         "PrometheusRule/ai-prod-mi300x-infer", "ServiceMonitor/accel-nvidia-dcgm-exporter",
                         "ServiceMonitor/accel-habana-metric-exporter", "ServiceMonitor/accel-agent",
                         "Service/accel-agent-metrics"}));
}

TEST(MonitoringStack, EveryTargetGetsItsNodeGroupFromTheNodeLabel) {
  for (const json& o : ExamplePart().objects) {
    if (o["kind"] != "ServiceMonitor") continue;
    EXPECT_EQ(o["metadata"]["namespace"], "monitoring");
    EXPECT_EQ(o["spec"]["attachMetadata"]["node"], true) << o.dump(2);
    ASSERT_EQ(o["spec"]["endpoints"].size(), 1u);
    const json& relabel = o["spec"]["endpoints"][0]["relabelings"];
    bool group = false, job = false;
    for (const json& r : relabel) {
      if (r.value("targetLabel", "") == "node_group") {
        EXPECT_EQ(r["sourceLabels"], json({"__meta_kubernetes_node_label_accel_io_node_group"}));
        group = true;
      }
      if (r.value("targetLabel", "") == "job") job = true;
    }
    EXPECT_TRUE(group) << o.dump(2);
    EXPECT_TRUE(job) << o.dump(2);
  }
}

TEST(MonitoringStack, ScrapesEachVendorsRealService) {
  std::map<std::string, json> monitors;
  for (const json& o : ExamplePart().objects)
    if (o["kind"] == "ServiceMonitor") monitors[o["metadata"]["name"].get<std::string>()] = o;
  // dcgm-exporter: the GPU Operator's Service (app=nvidia-dcgm-exporter, port gpu-metrics).
  const json& dcgm = monitors.at("accel-nvidia-dcgm-exporter")["spec"];
  EXPECT_EQ(dcgm["selector"], json::parse(R"({"matchLabels": {"app": "nvidia-dcgm-exporter"}})"));
  EXPECT_EQ(dcgm["namespaceSelector"]["matchNames"], json({"gpu-operator"}));
  EXPECT_EQ(dcgm["endpoints"][0]["port"], "gpu-metrics");
  // Gaudi: the operator's namespace, container port 41611.
  const json& gaudi = monitors.at("accel-habana-metric-exporter")["spec"];
  EXPECT_EQ(gaudi["namespaceSelector"]["matchNames"], json({"habana-ai-operator"}));
  EXPECT_EQ(gaudi["endpoints"][0]["targetPort"], 41611);
  // accel's agent: the Service this part adds, in the agent's namespace.
  const json& accel = monitors.at("accel-agent")["spec"];
  EXPECT_EQ(accel["namespaceSelector"]["matchNames"], json({"accel-system"}));
  EXPECT_EQ(accel["endpoints"][0]["port"], "metrics");
}

// The PromQL selectors of `expr` ("{...}" spans).
std::vector<std::string> Selectors(const std::string& expr) {
  std::vector<std::string> out;
  for (size_t open = expr.find('{'); open != std::string::npos; open = expr.find('{', open + 1)) {
    const size_t close = expr.find('}', open);
    out.push_back(expr.substr(open, close - open + 1));
  }
  return out;
}

TEST(GroupAlertRules, EverySelectorNamesTheGroup) {
  for (const NodeGroup& g : Example().groups) {
    const std::vector<AlertRule> rules = GroupAlertRules(g);
    EXPECT_EQ(rules.empty(), g.vendor == Vendor::kNone) << g.name;
    std::set<std::string> names;
    for (const AlertRule& r : rules) {
      EXPECT_TRUE(names.insert(r.alert).second) << r.alert;
      EXPECT_EQ(r.expr.find("$G"), std::string::npos) << r.expr;
      const std::vector<std::string> selectors = Selectors(r.expr);
      EXPECT_FALSE(selectors.empty()) << r.alert;
      for (const std::string& s : selectors)
        EXPECT_NE(s.find("node_group=\"" + g.name + "\""), std::string::npos) << g.name << " " << r.alert << ": " << s;
      EXPECT_TRUE(r.severity == "critical" || r.severity == "warning") << r.alert;
      EXPECT_EQ(r.runbook_url.rfind("docs/", 0), 0u) << r.runbook_url;
    }
  }
}

TEST(GroupAlertRules, RunbooksExist) {
  const std::string alerts = ReadWholeFile(Src("docs/alerts.md"));
  for (const NodeGroup& g : Example().groups)
    for (const AlertRule& r : GroupAlertRules(g)) {
      const size_t hash = r.runbook_url.find('#');
      ASSERT_NE(hash, std::string::npos) << r.runbook_url;
      if (r.runbook_url.rfind("docs/alerts.md", 0) != 0) continue;  // node-groups.md: the lead's doc
      EXPECT_NE(alerts.find("<a id=\"" + r.runbook_url.substr(hash + 1) + "\">"), std::string::npos) << r.runbook_url;
    }
}

TEST(AccelAlertTemplates, AreTheDeployRulesWithTheGroupMatcher) {
  const nlohmann::json file = ReadStructuredFile(Src("deploy/prometheus/accel-alerts.yml"));
  const nlohmann::json& rules = file["groups"][0]["rules"];
  const std::vector<AlertRule>& templates = AccelAlertTemplates();
  ASSERT_EQ(templates.size(), rules.size());
  auto strip = [](std::string s) {
    for (const std::string from : {"{$G, ", "{$G}"}) {
      const std::string to = from == "{$G, " ? "{" : "";
      for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
    }
    return s;
  };
  for (size_t i = 0; i < rules.size(); ++i) {
    const AlertRule& t = templates[i];
    const nlohmann::json& r = rules[i];
    EXPECT_EQ(t.alert, r["alert"]);
    EXPECT_EQ(strip(t.expr), r["expr"]) << t.alert;
    EXPECT_EQ(t.for_duration, r.value("for", "")) << t.alert;
    EXPECT_EQ(t.severity, r["labels"]["severity"]) << t.alert;
    EXPECT_EQ(t.summary, r["annotations"]["summary"]) << t.alert;
    EXPECT_EQ(t.description, r["annotations"]["description"]) << t.alert;
    EXPECT_EQ(t.runbook_url, r["annotations"]["runbook_url"]) << t.alert;
    // Every series selector has the placeholder (none forgotten).
    for (const std::string& s : Selectors(t.expr)) EXPECT_EQ(s.rfind("{$G", 0), 0u) << t.alert << ": " << s;
  }
}

TEST(GroupAlertRules, ExporterDownWithoutAbsentForAGroupThatMayBeEmpty) {
  NodeGroup g = Example().groups[0];  // h100-train: minCount 2
  auto down = [&] {
    for (const AlertRule& r : GroupAlertRules(g))
      if (r.alert.find("ExporterDown") != std::string::npos) return r.expr;
    return std::string();
  };
  EXPECT_NE(down().find("absent("), std::string::npos) << down();
  g.min_count = 0;
  EXPECT_EQ(down().find("absent("), std::string::npos) << down();
  EXPECT_EQ(down(), "up{node_group=\"h100-train\", job=\"nvidia-dcgm-exporter\"} == 0");
}

// The group's PrometheusRule's spec as a Prometheus rules file.
std::string RulesFile(const StackPart& part, const std::string& group) {
  for (const json& o : part.objects)
    if (o["kind"] == "PrometheusRule" && o["metadata"]["labels"].value("accel.io/node-group", "") == group)
      return ToYaml(o["spec"]);
  return "";
}

TEST(MonitoringStack, PromtoolChecksEveryRule) {
  ACCEL_REQUIRE_TOOL(kPromtool, "prometheus");
  // Every kind of group: the example's three, plus AMD on its operator.
  ClusterTemplate t = Example();
  for (NodeGroup& g : t.groups)
    if (g.vendor == Vendor::kAmd) g.stack = Stack::kOperator;
  const StackPart amd = MonitoringStack(t, PlanCluster(t));
  for (const StackPart* part : {&ExamplePart(), &amd})
    for (const char* group : {"h100-train", "mi300x-infer", "gaudi-train"}) {
      const std::string text = RulesFile(*part, group);
      ASSERT_FALSE(text.empty()) << group;
      const fs::path file = TempDir() / (std::string(group) + "-rules.yml");
      std::ofstream(file) << text;
      std::string out;
      EXPECT_EQ(RunCommand(std::string(kPromtool) + " check rules '" + file.string() + "'", &out), 0) << out << text;
    }
}

TEST(MonitoringStack, PromtoolUnitTestsFireOnTheGroupOnly) {
  ACCEL_REQUIRE_TOOL(kPromtool, "prometheus");
  const fs::path dir = TempDir();
  std::ofstream(dir / "h100-rules.yml") << RulesFile(ExamplePart(), "h100-train");
  std::ofstream(dir / "mi300x-rules.yml") << RulesFile(ExamplePart(), "mi300x-infer");
  // Same series in the group and in another group: only the group's fire. XID 79 on GPU 0,
  // a GPU lost after 30 minutes, an accel device lost; the other group's copies stay silent.
  const std::string tests = R"yaml(rule_files: [h100-rules.yml, mi300x-rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'DCGM_FI_DEV_XID_ERRORS{node_group="h100-train", node="n1", gpu="0", job="nvidia-dcgm-exporter"}'
        values: '0 0 79 79 79'
      - series: 'DCGM_FI_DEV_XID_ERRORS{node_group="other", node="n9", gpu="0", job="nvidia-dcgm-exporter"}'
        values: '0 0 79 79 79'
      - series: 'up{node_group="h100-train", node="n1", job="nvidia-dcgm-exporter", instance="n1:9400"}'
        values: '1x60'
      - series: 'DCGM_FI_DEV_GPU_TEMP{node_group="h100-train", node="n1", gpu="0"}'
        values: '40x60'
      - series: 'DCGM_FI_DEV_GPU_TEMP{node_group="h100-train", node="n1", gpu="1"}'
        values: '40x30 _x30'
      - series: 'accel_device_lost{node_group="mi300x-infer", hostname="n2", vendor="amd", index="1"}'
        values: '0 1 1'
      - series: 'accel_device_lost{node_group="other", hostname="n8", vendor="amd", index="1"}'
        values: '0 1 1'
      - series: 'up{node_group="mi300x-infer", job="accel-exporter", instance="n2:9400"}'
        values: '1x60'
    alert_rule_test:
      - eval_time: 3m
        alertname: DcgmXidCritical
        exp_alerts:
          - exp_labels: {node_group: h100-train, node: n1, gpu: "0", job: nvidia-dcgm-exporter, severity: critical}
            exp_annotations:
              summary: "XID 79 on n1 GPU 0"
              description: "GPU 0 (, ) on n1 reported XID 79: the GPU or its running jobs are unusable until restarted or reset."
              runbook_url: "docs/alerts.md#AccelXidCritical"
      - eval_time: 40m
        alertname: DcgmGpuCountDropped
        exp_alerts:
          - exp_labels: {node_group: h100-train, node: n1, severity: critical}
            exp_annotations:
              summary: "n1 lost 1 GPU(s)"
              description: "n1 now reports 1 GPU(s) fewer than at its maximum during the last hour: a GPU fell off the bus or its driver dropped it."
              runbook_url: "docs/alerts.md#AccelDeviceCountDropped"
      - eval_time: 40m
        alertname: DcgmExporterDown
        exp_alerts: []
      - eval_time: 2m
        alertname: AccelDeviceLost
        exp_alerts:
          - exp_labels: {node_group: mi300x-infer, hostname: n2, vendor: amd, index: "1", severity: critical}
            exp_annotations:
              summary: "n2 lost amd1"
              description: "The vendor library reports device amd1 (, , uuid ) on n2 as lost: it no longer answers on the bus."
              runbook_url: "docs/alerts.md#AccelDeviceLost"
)yaml";
  std::ofstream(dir / "tests.yml") << tests;
  std::string out;
  EXPECT_EQ(RunCommand("cd '" + dir.string() + "' && " + kPromtool + " test rules tests.yml", &out), 0) << out;
}

TEST(MonitoringStack, Deterministic) {
  const ClusterPlan plan = PlanCluster(Example());
  const StackPart a = MonitoringStack(Example(), plan), b = MonitoringStack(Example(), plan);
  EXPECT_EQ(a.files, b.files);
  EXPECT_EQ(a.objects.size(), b.objects.size());
}

TEST(MonitoringStack, NoAcceleratorsNoObjects) {
  ClusterTemplate t = Example();
  std::vector<NodeGroup> cpu;
  for (const NodeGroup& g : t.groups)
    if (g.vendor == Vendor::kNone) cpu.push_back(g);
  t.groups = cpu;
  const StackPart part = MonitoringStack(t, PlanCluster(t));
  EXPECT_TRUE(part.files.empty());
  EXPECT_TRUE(part.objects.empty());
}

}  // namespace
}  // namespace accel::cluster
