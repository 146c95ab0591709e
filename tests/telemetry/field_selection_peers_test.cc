// The vendors' own field lists, end to end on the fake vendor libraries (dlopen'ed as
// production does): each dcgm-exporter CSV in ../shared/peers/dcgm-exporter selects exactly its
// listed fields on the 8 x H100 fake (tests/fakes/nvml/examples/h100x8-mig.json), every DCGM field
// the files name — commented or not — is served there, and device-metrics-exporter's config.json
// selects exactly its gpu_* families on the 8 x MI300X fake ROCm SMI.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "devices/backend.h"
#include "support/shared_fixture.h"
#include "telemetry/collector.h"
#include "telemetry/dcgm_fields.h"
#include "telemetry/field_selection.h"

namespace accel::telemetry {
namespace field_selection_peers_test {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Family name -> number of samples, in the order the families appear.
std::vector<std::pair<std::string, int>> Families(const std::string& text) {
  std::vector<std::pair<std::string, int>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      out.emplace_back(line.substr(7, line.find(' ', 7) - 7), 0);
    } else if (!line.empty() && line[0] != '#' && !out.empty()) {
      ++out.back().second;
    }
  }
  return out;
}

std::vector<std::string> Names(const std::vector<std::pair<std::string, int>>& families) {
  std::vector<std::string> out;
  for (const auto& [name, samples] : families) out.push_back(name);
  return out;
}

/// One collection with `selection` over `backend`, two passes (GPM and link rates need a
/// previous sample), only the selected profile rendered.
std::string CollectOnce(std::unique_ptr<devices::DeviceBackend> backend,
                        std::shared_ptr<const FieldSelection> selection, bool dcgm) {
  CollectorOptions o;
  o.interval = std::chrono::milliseconds(3600 * 1000);  // no background pass during the test
  o.hostname = "node-a";
  o.render.dcgm = dcgm;
  o.render.amd = !dcgm;
  o.render.gaudi = o.render.accel = false;
  o.render.fields = selection;
  std::vector<std::unique_ptr<devices::DeviceBackend>> backends;
  backends.push_back(std::move(backend));
  Collector collector(std::move(backends), o);
  collector.Start();
  collector.RefreshNow();
  std::string text = *collector.exposition();
  EXPECT_TRUE(collector.Stop());
  return text;
}

class DcgmPeersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("FAKE_NVML_CONFIG",
           (std::string(ACCEL_SOURCE_DIR) + "/tests/fakes/nvml/examples/h100x8-mig.json").c_str(), 1);
  }
  void TearDown() override { unsetenv("FAKE_NVML_CONFIG"); }

  std::string Collect(const DcgmCounters& counters) {
    auto selection = std::make_shared<FieldSelection>();
    selection->dcgm = counters;
    return CollectOnce(devices::OpenNvml(ACCEL_FAKE_NVML), selection, true);
  }
};

const char* const kPeerCsvs[] = {"default-counters.csv", "dcp-metrics-included.csv",
                                 "1.x-compatibility-metrics.csv"};

TEST_F(DcgmPeersTest, EachShippedCsvSelectsExactlyItsFields) {
  for (const char* name : kPeerCsvs) {
    const std::string path = test_support::SharedPath(std::string("peers/dcgm-exporter/") + name);
    ACCEL_REQUIRE_SHARED(path);
    DcgmCounters counters = LoadDcgmCounters(path);
    std::vector<std::string> expected, labels;
    for (const DcgmCounter& c : counters.counters) {
      (c.is_label ? labels : expected).push_back(c.metric);
    }
    std::string text = Collect(counters);
    auto families = Families(text);
    EXPECT_EQ(Names(families), expected) << name;
    for (const auto& [family, samples] : families) EXPECT_GT(samples, 0) << name << " " << family;
    // Its HELP texts, and its label fields on the series.
    for (const DcgmCounter& c : counters.counters) {
      if (c.is_label) {
        EXPECT_THAT(text, HasSubstr("," + c.metric + "=\"")) << name;
      } else {
        EXPECT_THAT(text, HasSubstr("# HELP " + c.metric + " " + c.help + "\n")) << name;
      }
    }
    if (labels.empty()) {
      EXPECT_THAT(text, ::testing::Not(HasSubstr("DCGM_FI_DRIVER_VERSION=")));
    }
  }
}

TEST_F(DcgmPeersTest, EveryFieldTheFilesNameIsServed) {
  std::set<std::string> served_families;
  for (const char* name : kPeerCsvs) {
    const std::string path = test_support::SharedPath(std::string("peers/dcgm-exporter/") + name);
    ACCEL_REQUIRE_SHARED(path);
    // Commented lines made active, as a user who wants them all would.
    std::string text = std::regex_replace(
        ReadFile(path), std::regex(R"((^|\n)#\s*((DCGM|dcgm)_[A-Za-z0-9_]+\s*,))"), "$1$2");
    DcgmCounters counters = ParseDcgmCounters(text, path);
    std::string out = Collect(counters);
    std::set<std::string> present;
    for (const auto& [family, samples] : Families(out)) {
      if (samples > 0) present.insert(family);
    }
    for (const DcgmCounter& c : counters.counters) {
      if (c.is_label) {
        EXPECT_THAT(out, HasSubstr("," + c.metric + "=\"")) << name;
        continue;
      }
      EXPECT_TRUE(present.count(c.metric)) << name << ": " << c.metric << " has no sample";
      served_families.insert(c.field->name);
    }
  }
  EXPECT_GE(served_families.size(), 50u);
}

TEST(AmdPeersTest, ConfigJsonSelectsExactlyItsFamilies) {
  const std::string path = test_support::SharedPath("peers/rocm/config.json");
  ACCEL_REQUIRE_SHARED(path);
  const std::string example =
      std::string(ACCEL_SOURCE_DIR) + "/tests/fakes/rocm_smi/examples/mi300x-8.json";
  setenv("FAKE_ROCM_SMI_CONFIG", example.c_str(), 1);
  // A sysfs tree with the DPM tables, so gpu_clock has a source too.
  fs::path root = fs::path(::testing::TempDir()) / ("amd-peers-sysfs-" + std::to_string(getpid()));
  fs::remove_all(root);
  std::ifstream in(example);
  nlohmann::json fake = nlohmann::json::parse(in);
  for (const auto& d : fake["devices"]) {
    fs::path pci = root / "bus/pci/devices" / d["pci_bdf"].get<std::string>();
    fs::create_directories(pci);
    std::ofstream(pci / "pp_dpm_sclk") << "0: 500Mhz\n1: 2100Mhz *\n";
    std::ofstream(pci / "pp_dpm_mclk") << "0: 1300Mhz *\n";
  }
  setenv("ACCEL_SYSFS_ROOT", root.c_str(), 1);
  auto selection = std::make_shared<FieldSelection>();
  selection->amd = LoadAmdMetricsConfig(path);
  std::string text = CollectOnce(devices::OpenRocmSmi(ACCEL_FAKE_ROCM_SMI), selection, false);
  unsetenv("ACCEL_SYSFS_ROOT");
  unsetenv("FAKE_ROCM_SMI_CONFIG");
  fs::remove_all(root);

  // Every family accel serves that the file lists, prefixed amd_, in render order.
  std::vector<std::string> expected;
  for (const std::string& f : AmdServedFields()) {
    std::string lower = f;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    expected.push_back("amd_" + lower);
  }
  auto families = Families(text);
  EXPECT_EQ(Names(families), expected);
  for (const auto& [family, samples] : families) EXPECT_GT(samples, 0) << family;
  // The rest of the file's fields are named in the warning, none lost.
  FieldSelection only;
  only.amd = selection->amd;
  EXPECT_THAT(SelectionWarning(only), HasSubstr("178 GPUConfig.Fields accel cannot read"));
}

}  // namespace
}  // namespace accel::telemetry
