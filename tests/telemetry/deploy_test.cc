// Checks the deploy/ artifacts of the exporter: the alert rules (promtool check + their promtool
// unit tests), every Grafana panel query (as recording rules, so each is valid PromQL), the example
// Prometheus config, and that the dashboard, the rules and their tests use only metric names of
// the accel_* contract. Tests that need /usr/bin/promtool skip when it is absent (a CI failure:
// scripts/setup.sh installs it).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/shared_fixture.h"

namespace accel::telemetry {
namespace deploy_test {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kPromtool = "/usr/bin/promtool";

const fs::path kSource = ACCEL_SOURCE_DIR;
const fs::path kRules = kSource / "deploy/prometheus/accel-alerts.yml";
const fs::path kRuleTests = kSource / "deploy/prometheus/tests/accel-alerts-test.yml";
const fs::path kConfig = kSource / "deploy/prometheus/prometheus.yml";
const fs::path kDashboard = kSource / "deploy/grafana/accel-fleet.json";
const fs::path kRunbook = kSource / "docs/alerts.md";

// Every family of the accel_* contract (the renderer, the dashboard and the rules agree on these).
const std::set<std::string> kContractNames = {
    "accel_device_info",
    "accel_device_up",
    "accel_device_lost",
    "accel_device_sample_age_seconds",
    "accel_devices",
    "accel_utilization_ratio",
    "accel_memory_utilization_ratio",
    "accel_encoder_utilization_ratio",
    "accel_decoder_utilization_ratio",
    "accel_engine_active_ratio",
    "accel_sm_active_ratio",
    "accel_tensor_active_ratio",
    "accel_dram_active_ratio",
    "accel_clock_hertz",
    "accel_temperature_celsius",
    "accel_power_watts",
    "accel_power_limit_watts",
    "accel_energy_joules_total",
    "accel_memory_total_bytes",
    "accel_memory_used_bytes",
    "accel_memory_free_bytes",
    "accel_memory_reserved_bytes",
    "accel_pcie_replays_total",
    "accel_pcie_tx_bytes_per_second",
    "accel_pcie_rx_bytes_per_second",
    "accel_nvlink_bandwidth_bytes_per_second",
    "accel_ecc_errors_total",
    "accel_remapped_rows_total",
    "accel_row_remap_failed",
    "accel_row_remap_pending",
    "accel_xid_last",
    "accel_xid_errors_total",
    "accel_mig_info",
    "accel_mig_memory_used_bytes",
    "accel_mig_memory_total_bytes",
    "accel_mig_engine_active_ratio",
    "accel_mig_tensor_active_ratio",
    "accel_pod_device_info",
    "accel_exporter_build_info",
    "accel_exporter_collections_total",
    "accel_exporter_collection_duration_seconds",
    "accel_exporter_pod_resources_up",
    "accel_exporter_pod_resources_errors_total",
};

struct CommandResult {
  int exit_code = -1;  ///< the command's exit status; -1 when it did not exit normally
  std::string output;  ///< stdout and stderr together
};

// Runs `command` through the shell and returns its exit status and combined output.
CommandResult RunCommand(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    result.output = "popen failed for: " + command;
    return result;
  }
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  int status = pclose(pipe);
  if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

// Quotes `text` as one shell word.
std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Promtool(const std::string& args) { return std::string(kPromtool) + " " + args; }

// Returns the whole file; empty when it cannot be read (the caller's expectations then fail).
std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

json ReadDashboard() { return json::parse(ReadFile(kDashboard)); }

// Appends every "expr" string anywhere in `node` (panel targets, rows' nested panels, annotations).
void CollectExprs(const json& node, std::vector<std::string>* out) {
  if (node.is_object()) {
    for (const auto& [key, value] : node.items()) {
      if (key == "expr" && value.is_string()) {
        out->push_back(value.get<std::string>());
      } else {
        CollectExprs(value, out);
      }
    }
  } else if (node.is_array()) {
    for (const auto& child : node) CollectExprs(child, out);
  }
}

// Appends the panels of `panels`, descending into rows' nested panels (collapsed rows keep them).
void CollectPanels(const json& panels, std::vector<json>* out) {
  for (const auto& panel : panels) {
    out->push_back(panel);
    if (panel.contains("panels")) CollectPanels(panel["panels"], out);
  }
}

void ReplaceAll(std::string* text, const std::string& from, const std::string& to) {
  for (size_t at = text->find(from); at != std::string::npos; at = text->find(from, at + to.size())) {
    text->replace(at, from.size(), to);
  }
}

// Replaces the dashboard's template variables and Grafana's interval macros with values that
// Prometheus accepts, as Grafana would before sending the query.
std::string SubstituteVariables(std::string expr) {
  // Longest names first: $__rate_interval before $__interval.
  for (const char* name : {"$__rate_interval", "${__rate_interval}", "$__interval", "${__interval}",
                           "$__range", "${__range}"}) {
    ReplaceAll(&expr, name, "1m");
  }
  for (const char* name : {"$hostname", "${hostname}", "$vendor", "${vendor}", "$model", "${model}"}) {
    ReplaceAll(&expr, name, ".*");
  }
  return expr;
}

// Returns every accel_* identifier in `text` (metric names; the contract has no such labels).
std::set<std::string> AccelNames(const std::string& text) {
  static const std::regex kName("(^|[^A-Za-z0-9_:])(accel_[A-Za-z0-9_:]*)");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kName); it != std::sregex_iterator();
       ++it) {
    names.insert((*it)[2].str());
  }
  return names;
}

// Returns the alert names of the rules file, in order.
std::vector<std::string> AlertNames() {
  static const std::regex kAlert(R"(-\s+alert:\s*([A-Za-z0-9_]+))");
  std::string rules = ReadFile(kRules);
  std::vector<std::string> names;
  for (auto it = std::sregex_iterator(rules.begin(), rules.end(), kAlert); it != std::sregex_iterator();
       ++it) {
    names.push_back((*it)[1].str());
  }
  return names;
}

class DeployPromtool : public ::testing::Test {
 protected:
  void SetUp() override {
    ACCEL_REQUIRE_TOOL(kPromtool, "prometheus");
  }
};

TEST_F(DeployPromtool, AlertRulesPassCheck) {
  CommandResult r = RunCommand(Promtool("check rules " + ShellQuote(kRules.string())));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(DeployPromtool, AlertRuleUnitTestsPass) {
  CommandResult r = RunCommand(Promtool("test rules " + ShellQuote(kRuleTests.string())));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// promtool has no PromQL syntax checker of its own; a rules file of one recording rule per panel
// query gets every query parsed.
TEST_F(DeployPromtool, EveryDashboardQueryIsValidPromQL) {
  std::vector<std::string> exprs;
  CollectExprs(ReadDashboard(), &exprs);
  ASSERT_GE(exprs.size(), 20u);

  std::string rules = "groups:\n  - name: accel_fleet_dashboard\n    rules:\n";
  for (size_t i = 0; i < exprs.size(); ++i) {
    // A JSON string is a valid YAML double-quoted scalar.
    rules += "      - record: dashboard:query_" + std::to_string(i) + "\n        expr: " +
             json(SubstituteVariables(exprs[i])).dump() + "\n";
  }
  fs::path file = fs::temp_directory_path() /
                  ("accel-dashboard-rules-" + std::to_string(getpid()) + ".yml");
  std::ofstream(file) << rules;
  CommandResult r = RunCommand(Promtool("check rules " + ShellQuote(file.string())));
  fs::remove(file);
  EXPECT_EQ(r.exit_code, 0) << r.output << "\n--- generated rules ---\n" << rules;
  EXPECT_NE(r.output.find("SUCCESS: " + std::to_string(exprs.size()) + " rules found"),
            std::string::npos)
      << r.output;
}

TEST_F(DeployPromtool, ExampleConfigIsValidAndLoadsTheRules) {
  CommandResult r = RunCommand(Promtool("check config " + ShellQuote(kConfig.string())));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("accel-alerts.yml"), std::string::npos) << r.output;
}

TEST(DeployArtifacts, UseOnlyContractMetricNames) {
  for (const fs::path& file : {kDashboard, kRules, kRuleTests}) {
    std::string text = ReadFile(file);
    ASSERT_FALSE(text.empty()) << file;
    std::set<std::string> used = AccelNames(text);
    EXPECT_FALSE(used.empty()) << file;
    for (const std::string& name : used) {
      EXPECT_TRUE(kContractNames.count(name)) << file.filename() << " uses " << name
                                              << ", which is not in the accel_* contract";
    }
  }
}

TEST(DeployArtifacts, DashboardShape) {
  json dashboard = ReadDashboard();
  EXPECT_EQ(dashboard["uid"], "accel-fleet");
  EXPECT_GE(dashboard["schemaVersion"].get<int>(), 36);

  std::map<std::string, json> variables;
  for (const auto& v : dashboard["templating"]["list"]) variables[v["name"]] = v;
  ASSERT_TRUE(variables.count("datasource"));
  EXPECT_EQ(variables["datasource"]["type"], "datasource");
  EXPECT_EQ(variables["datasource"]["query"], "prometheus");
  for (const char* name : {"hostname", "vendor", "model"}) {
    ASSERT_TRUE(variables.count(name)) << name;
    EXPECT_EQ(variables[name]["type"], "query") << name;
    EXPECT_EQ(variables[name]["datasource"]["uid"], "${datasource}") << name;
  }
  EXPECT_EQ(variables["hostname"]["query"], "label_values(accel_device_info, hostname)");

  std::vector<json> panels;
  CollectPanels(dashboard["panels"], &panels);
  std::set<int> ids;
  std::vector<std::string> rows;
  for (const auto& panel : panels) {
    std::string type = panel["type"];
    EXPECT_TRUE(type == "row" || type == "timeseries" || type == "stat" || type == "table")
        << panel["title"] << " is a " << type;
    EXPECT_TRUE(ids.insert(panel["id"].get<int>()).second) << "duplicate id " << panel["id"];
    if (type == "row") {
      rows.push_back(panel["title"]);
      continue;
    }
    EXPECT_EQ(panel["datasource"]["uid"], "${datasource}") << panel["title"];
    ASSERT_FALSE(panel["targets"].empty()) << panel["title"];
    for (const auto& target : panel["targets"]) {
      EXPECT_EQ(target["datasource"]["uid"], "${datasource}") << panel["title"];
    }
  }
  EXPECT_EQ(rows, (std::vector<std::string>{"Fleet", "Utilization", "Memory", "Thermals & power",
                                             "Reliability", "MIG", "Pods", "Exporter"}));
}

// Every alert has a firing and a non-firing promtool case and a runbook section its runbook_url
// points at.
TEST(DeployArtifacts, EveryAlertIsTestedAndDocumented) {
  std::vector<std::string> alerts = AlertNames();
  EXPECT_EQ(alerts.size(), 12u);
  std::string rules = ReadFile(kRules);
  std::string tests = ReadFile(kRuleTests);
  std::string runbook = ReadFile(kRunbook);
  for (const std::string& alert : alerts) {
    std::string check = "alertname: " + alert + "\n        exp_alerts:";
    EXPECT_NE(tests.find(check + " []\n"), std::string::npos) << alert << " has no non-firing case";
    EXPECT_NE(tests.find(check + "\n"), std::string::npos) << alert << " has no firing case";
    EXPECT_NE(rules.find("runbook_url: \"docs/alerts.md#" + alert + "\""), std::string::npos)
        << alert;
    EXPECT_NE(runbook.find("## " + alert + "\n<a id=\"" + alert + "\"></a>"), std::string::npos)
        << alert;
  }
}

}  // namespace
}  // namespace accel::telemetry
