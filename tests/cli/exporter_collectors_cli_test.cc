// `accel exporter -f FILE` and `--amd-metrics-config FILE` as users run them with the files they
// already mount for dcgm-exporter and device-metrics-exporter: exactly the listed families, one
// warning for what accel cannot read, exit 2 with file:line for a broken file, output Prometheus
// parses; the agent config's exporter.collectors / exporter.amdMetricsConfig keys.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "agent/agent_config.h"
#include "cli/cli_test_util.h"
#include "common/error.h"
#include "support/shared_fixture.h"
#include "telemetry/dcgm_fields.h"
#include "telemetry/field_selection.h"

namespace accel::cli::testing {
namespace exporter_collectors_cli_test {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ExampleNvml() { return Src("tests/fakes/nvml/examples/h100x8-mig.json"); }

std::string Peer(const std::string& rel) { return test_support::SharedPath("peers/" + rel); }

// `accel exporter --once` on the 8 x H100 fake, only the dcgm profile; extra args appended.
std::string DcgmOnce(const std::string& args) {
  return "exporter --once --vendors nvidia --topology none --no-accel-metrics --profile dcgm "
         "--nvml-library " + std::string(ACCEL_FAKE_NVML) + " " + args;
}

RunResult RunWithFake(const std::string& args, bool merge_stderr) {
  return RunShellCapture("FAKE_NVML_CONFIG=" + ExampleNvml() + " " + std::string(ACCEL_BINARY) +
                         " " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null"));
}

std::vector<std::string> TypeLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) out.push_back(line.substr(7, line.find(' ', 7) - 7));
  }
  return out;
}

class ExporterCollectorsCli : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = FreshDir("collectors"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string File(const std::string& name, const std::string& text) {
    std::filesystem::path p = dir_ / name;
    WriteFile(p, text);
    return p.string();
  }
  std::filesystem::path dir_;
};

TEST_F(ExporterCollectorsCli, DcgmExportersDefaultCsvServesExactlyItsFields) {
  const std::string csv = Peer("dcgm-exporter/default-counters.csv");
  ACCEL_REQUIRE_SHARED(csv);
  RunResult r = RunWithFake(DcgmOnce("-f " + csv), /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> expected;
  for (const telemetry::DcgmCounter& c : telemetry::LoadDcgmCounters(csv).counters) {
    if (!c.is_label) expected.push_back(c.metric);
  }
  EXPECT_EQ(TypeLines(r.output), expected);
  EXPECT_THAT(r.output, HasSubstr("# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"));
  EXPECT_THAT(r.output, HasSubstr("DCGM_FI_DRIVER_VERSION=\"580.95.05\""));
  // The same through dcgm-exporter's environment variable, as its DaemonSets set it.
  RunResult env = RunShellCapture("DCGM_EXPORTER_COLLECTORS=" + csv + " FAKE_NVML_CONFIG=" +
                                  ExampleNvml() + " " + ACCEL_BINARY + " " + DcgmOnce("") +
                                  " 2>/dev/null");
  EXPECT_EQ(TypeLines(env.output), expected);
}

TEST_F(ExporterCollectorsCli, OutputParsesInPromtool) {
  ACCEL_REQUIRE_TOOL("/usr/bin/promtool", "prometheus");
  const std::string csv = Peer("dcgm-exporter/default-counters.csv");
  ACCEL_REQUIRE_SHARED(csv);
  // Every field the file names, commented or not.
  std::ifstream in(csv);
  std::stringstream text;
  text << in.rdbuf();
  std::string all = File("all.csv", std::regex_replace(text.str(), std::regex(R"((^|\n)#\s*(DCGM_[A-Z0-9_]+\s*,))"), "$1$2"));
  std::string prom = (dir_ / "out.prom").string();
  RunResult r = RunWithFake(DcgmOnce("-f " + all) + " > " + prom, /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0);
  RunResult check = RunShellCapture("/usr/bin/promtool check metrics < " + prom + " 2>&1");
  // 3 = lint findings only (dcgm-exporter's own names are not lint-clean); 1 = unparseable.
  EXPECT_NE(check.exit_code, 1) << check.output;
  EXPECT_THAT(check.output, Not(HasSubstr("error while linting: text format parsing error")));
}

TEST_F(ExporterCollectorsCli, OneWarningNamesWhatAccelCannotRead) {
  std::string csv = File("counters.csv",
                         "DCGM_FI_DEV_GPU_TEMP, gauge, t\n"
                         "DCGM_EXP_GPU_HEALTH_STATUS, counter, h\n"
                         "DCGM_FI_DEV_CPU_UTIL_TOTAL, gauge, cpu\n"
                         "DCGM_FI_DEV_FB_TOTAL, gauge, fb\n");
  RunResult r = RunWithFake(DcgmOnce("-f " + csv), /*merge_stderr=*/true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  size_t warnings = 0;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    if (line.find("warning: field selection") != std::string::npos) {
      ++warnings;
      EXPECT_THAT(line, HasSubstr("2 field(s) accel cannot read, not served: "
                                  "DCGM_EXP_GPU_HEALTH_STATUS (line 2"));
      EXPECT_THAT(line, HasSubstr("DCGM_FI_DEV_CPU_UTIL_TOTAL (line 3: Grace CPU"));
    }
  }
  EXPECT_EQ(warnings, 1u);
  EXPECT_THAT(r.output, HasSubstr("# TYPE DCGM_FI_DEV_FB_TOTAL gauge"));
}

TEST_F(ExporterCollectorsCli, BrokenFilesExitTwoWithFileAndLine) {
  struct Case {
    std::string text, expect;
  } cases[] = {
      {"# ok\nDCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_GPU_TMP, gauge, t\n",
       "bad.csv:3: 'DCGM_FI_DEV_GPU_TMP' is not a DCGM field (did you mean DCGM_FI_DEV_GPU_TEMP?)"},
      {"DCGM_FI_DEV_GPU_TEMP, gauges, t\n", "bad.csv:1: unknown Prometheus type 'gauges'"},
      {"DCGM_FI_DEV_GPU_TEMP, gauge, with, commas\n", "bad.csv:1: expected 3 fields"},
  };
  for (const Case& c : cases) {
    std::string csv = File("bad.csv", c.text);
    RunResult r = RunWithFake(DcgmOnce("-f " + csv), /*merge_stderr=*/true);
    EXPECT_EQ(r.exit_code, 2) << c.text;
    EXPECT_THAT(r.output, HasSubstr(c.expect));
  }
  RunResult missing = RunWithFake(DcgmOnce("-f " + (dir_ / "nope.csv").string()), true);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.output, HasSubstr("nope.csv: cannot be opened"));
}

TEST_F(ExporterCollectorsCli, AmdConfigMapSelectsItsFamiliesWithThePrefix) {
  const std::string configmap = Peer("rocm/configmap.yaml");
  ACCEL_REQUIRE_SHARED(configmap);
  RunResult r = RunShellCapture(
      "FAKE_ROCM_SMI_CONFIG=" + Src("tests/fakes/rocm_smi/examples/mi300x-8.json") +
      " ACCEL_SYSFS_ROOT=" + dir_.string() + " " + ACCEL_BINARY +
      " exporter --once --vendors amd --topology none --no-accel-metrics --profile amd"
      " --rocm-smi-library " + ACCEL_FAKE_ROCM_SMI + " --amd-metrics-config " + configmap +
      " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string& family : TypeLines(r.output)) {
    EXPECT_EQ(family.rfind("amd_", 0), 0u) << family;
  }
  EXPECT_THAT(r.output, HasSubstr("# TYPE amd_gpu_used_vram gauge"));
  EXPECT_THAT(r.output, HasSubstr("GPUConfig.Fields accel cannot read"));
  RunResult bad = RunAccel("exporter --once --vendors amd --amd-metrics-config " +
                           File("c.json", R"({"GPUConfig": {"Fields": ["GPU_POWR"]}})"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.output, HasSubstr("GPUConfig.Fields[0]: 'GPU_POWR' is not a"));
}

TEST_F(ExporterCollectorsCli, AgentConfigKeysReadTheFilesRelativeToTheAgentFile) {
  File("counters.csv", "DCGM_FI_DEV_FB_TOTAL, gauge, fb\n");
  File("amd.json", R"({"GPUConfig": {"Fields": ["GPU_HEALTH"]}})");
  std::string agent = File("agent.yaml",
                           "exporter:\n  collectors: counters.csv\n  amdMetricsConfig: amd.json\n");
  agent::AgentConfig c = agent::LoadAgentConfig(agent);
  ASSERT_NE(c.exporter.fields, nullptr);
  ASSERT_TRUE(c.exporter.fields->dcgm);
  EXPECT_EQ(c.exporter.fields->dcgm->counters.at(0).metric, "DCGM_FI_DEV_FB_TOTAL");
  ASSERT_TRUE(c.exporter.fields->amd);
  EXPECT_EQ(c.exporter.fields->amd->fields, std::vector<std::string>{"GPU_HEALTH"});
  EXPECT_EQ(agent::LoadAgentConfig(File("plain.yaml", "exporter: {}\n")).exporter.fields, nullptr);
  try {
    agent::LoadAgentConfig(File("broken.yaml", "exporter:\n  collectors: missing.csv\n"));
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr((dir_ / "missing.csv").string() + ": cannot be opened"));
  }
}

// The DaemonSet mounts the counters ConfigMap and passes that file to -f; the file it ships
// selects fields accel serves, all of them, on the fake.
TEST_F(ExporterCollectorsCli, DaemonSetMountsItsCountersConfigMap) {
  std::vector<YAML::Node> docs = YAML::LoadAllFromFile(Src("deploy/kubernetes/accel-exporter.yaml"));
  YAML::Node configmap, daemonset;
  for (const YAML::Node& d : docs) {
    if (d["kind"].as<std::string>() == "ConfigMap") configmap = d;
    if (d["kind"].as<std::string>() == "DaemonSet") daemonset = d;
  }
  ASSERT_TRUE(configmap && daemonset);
  const std::string cm_name = configmap["metadata"]["name"].as<std::string>();
  YAML::Node pod = daemonset["spec"]["template"]["spec"];
  std::string volume, mount;
  for (const YAML::Node& v : pod["volumes"]) {
    if (v["configMap"] && v["configMap"]["name"].as<std::string>() == cm_name) volume = v["name"].as<std::string>();
  }
  ASSERT_FALSE(volume.empty()) << "no volume of ConfigMap " << cm_name;
  YAML::Node container = pod["containers"][0];
  for (const YAML::Node& m : container["volumeMounts"]) {
    if (m["name"].as<std::string>() == volume) mount = m["mountPath"].as<std::string>();
  }
  std::vector<std::string> args = container["args"].as<std::vector<std::string>>();
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[0], "-f");
  ASSERT_EQ(args[1].rfind(mount + "/", 0), 0u) << args[1];
  std::string key = args[1].substr(mount.size() + 1);
  ASSERT_TRUE(configmap["data"][key]) << "the ConfigMap has no key " << key;
  std::string csv = File(key, configmap["data"][key].as<std::string>());
  telemetry::DcgmCounters counters = telemetry::LoadDcgmCounters(csv);
  EXPECT_TRUE(counters.not_served.empty());
  EXPECT_TRUE(counters.duplicates.empty());
  RunResult r = RunWithFake(DcgmOnce("-f " + csv), /*merge_stderr=*/true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, Not(HasSubstr("warning")));
  EXPECT_THAT(r.output, HasSubstr("# TYPE DCGM_FI_DEV_FB_TOTAL gauge"));
}

TEST_F(ExporterCollectorsCli, ExamplesServeEveryFieldTheyList) {
  telemetry::DcgmCounters all = telemetry::LoadDcgmCounters(Src("examples/exporter/all-fields.csv"));
  EXPECT_EQ(all.counters.size(), telemetry::DcgmFields().size());  // every served field, once
  EXPECT_TRUE(all.not_served.empty());
  RunResult r = RunWithFake(DcgmOnce("-f " + Src("examples/exporter/all-fields.csv")), false);
  ASSERT_EQ(r.exit_code, 0);
  size_t families = 0;
  for (const telemetry::DcgmCounter& c : all.counters) families += c.is_label ? 0 : 1;
  // Every family has samples on the 8 x H100 fake (it reports every value accel reads).
  std::vector<std::string> types = TypeLines(r.output);
  EXPECT_EQ(types.size(), families);

  YAML::Node cm = YAML::LoadFile(Src("examples/exporter/counters-configmap.yaml"));
  std::string csv = File("dcgm-metrics.csv", cm["data"]["dcgm-metrics.csv"].as<std::string>());
  telemetry::DcgmCounters listed = telemetry::LoadDcgmCounters(csv);
  EXPECT_TRUE(listed.not_served.empty());
  EXPECT_TRUE(listed.duplicates.empty());

  telemetry::AmdMetricsConfig amd =
      telemetry::LoadAmdMetricsConfig(Src("examples/exporter/amd-metrics-config.json"));
  EXPECT_EQ(amd.fields, telemetry::AmdServedFields());
  EXPECT_TRUE(amd.not_served.empty());
}

}  // namespace
}  // namespace accel::cli::testing
