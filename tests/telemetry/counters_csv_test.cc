// ParseDcgmCounters: dcgm-exporter's counters CSV syntax (as Go's encoding/csv and
// counter_config.go read it), the errors with file:line, the one warning's contents, and the
// peer files NVIDIA ships (../shared/peers/dcgm-exporter/*.csv) read as they are.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "common/error.h"
#include "support/shared_fixture.h"
#include "telemetry/dcgm_fields.h"
#include "telemetry/field_selection.h"

namespace accel::telemetry {
namespace counters_csv_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Metrics(const DcgmCounters& c) {
  std::vector<std::string> out;
  for (const DcgmCounter& counter : c.counters) out.push_back(counter.metric);
  return out;
}

std::string ErrorOf(const std::string& text) {
  try {
    ParseDcgmCounters(text, "counters.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CountersCsv, CommentsBlankLinesWhitespaceAndTypes) {
  DcgmCounters c = ParseDcgmCounters(
      "# Format\n"
      "# If line starts with a '#' it is considered a comment,,\n"
      "\n"
      "   \n"
      "DCGM_FI_DEV_SM_CLOCK,  gauge, SM clock frequency (in MHz).\n"
      "DCGM_FI_DEV_DEC_UTIL ,     gauge, Decoder utilization (in %).\r\n"
      "\tDCGM_FI_DEV_PCIE_REPLAY_COUNTER,\tcounter,\tTotal number of PCIe retries.\n"
      "  # an indented comment\n"
      "DCGM_FI_DRIVER_VERSION,        label, Driver Version",
      "counters.csv");
  EXPECT_THAT(Metrics(c), ElementsAre("DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_DEC_UTIL",
                                      "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DRIVER_VERSION"));
  EXPECT_EQ(c.counters[0].type, MetricType::kGauge);
  EXPECT_EQ(c.counters[0].help, "SM clock frequency (in MHz).");
  EXPECT_EQ(c.counters[0].line, 5);
  EXPECT_EQ(c.counters[1].help, "Decoder utilization (in %).");  // no trailing \r
  EXPECT_EQ(c.counters[2].type, MetricType::kCounter);
  EXPECT_EQ(c.counters[2].line, 7);
  EXPECT_TRUE(c.counters[3].is_label);
  EXPECT_EQ(c.counters[3].line, 9);
  EXPECT_TRUE(c.not_served.empty());
  EXPECT_TRUE(c.duplicates.empty());
}

TEST(CountersCsv, QuotedHelpWithCommasQuotesAndNewlines) {
  DcgmCounters c = ParseDcgmCounters(
      "DCGM_FI_DEV_GPU_TEMP, gauge, \"GPU temperature, in C, \"\"core\"\" sensor.\"\n"
      "DCGM_FI_DEV_POWER_USAGE, gauge, \"two\nlines\"\n"
      "\"DCGM_FI_DEV_FB_USED\",\"gauge\",\"\"\n",
      "counters.csv");
  ASSERT_EQ(c.counters.size(), 3u);
  EXPECT_EQ(c.counters[0].help, "GPU temperature, in C, \"core\" sensor.");
  EXPECT_EQ(c.counters[1].help, "two\nlines");
  EXPECT_EQ(c.counters[2].metric, "DCGM_FI_DEV_FB_USED");
  EXPECT_EQ(c.counters[2].line, 4);  // the quoted newline on line 2 counts
  EXPECT_EQ(c.counters[2].help, "");
}

TEST(CountersCsv, LegacyAndExporterNames) {
  DcgmCounters c = ParseDcgmCounters(
      "dcgm_gpu_temp, gauge, GPU temperature (in C).\n"
      "dcgm_fi_prof_pcie_tx_bytes, counter, PCIe TX.\n"
      "DCGM_EXP_XID_ERRORS_COUNT, counter, reported XIDs during last window\n",
      "counters.csv");
  ASSERT_EQ(c.counters.size(), 3u);
  EXPECT_EQ(c.counters[0].metric, "dcgm_gpu_temp");  // the metric keeps the CSV's spelling
  EXPECT_STREQ(c.counters[0].field->name, "DCGM_FI_DEV_GPU_TEMP");
  EXPECT_STREQ(c.counters[1].field->name, "DCGM_FI_PROF_PCIE_TX_BYTES");
  EXPECT_EQ(c.counters[2].field->shape, DcgmShape::kXidWindow);
}

TEST(CountersCsv, ErrorsNameTheFileAndLine) {
  EXPECT_THAT(ErrorOf("DCGM_FI_DEV_GPU_TEMP, gauge\n"),
              HasSubstr("counters.csv:1: expected 3 fields (DCGM field, Prometheus type, help), found 2"));
  EXPECT_THAT(ErrorOf("# c\n\nDCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature, in C.\n"),
              HasSubstr("counters.csv:3: expected 3 fields"));
  EXPECT_THAT(ErrorOf("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature, in C.\n"),
              HasSubstr("must be in double quotes"));
  EXPECT_THAT(ErrorOf("DCGM_FI_DEV_GPU_TEMP, gauge, ok\nDCGM_FI_DEV_GPU_TMP, gauge, typo\n"),
              HasSubstr("counters.csv:2: 'DCGM_FI_DEV_GPU_TMP' is not a DCGM field (did you mean "
                        "DCGM_FI_DEV_GPU_TEMP?)"));
  EXPECT_THAT(ErrorOf("NOT_A_FIELD, gauge, x\n"), HasSubstr("is not a DCGM field"));
  EXPECT_THAT(ErrorOf("DCGM_FI_DEV_GPU_TEMP, Gauge, x\n"),
              HasSubstr("counters.csv:1: unknown Prometheus type 'Gauge'"));
  EXPECT_THAT(ErrorOf("DCGM_FI_DEV_GPU_TEMP, histogram, x\n"),
              HasSubstr("counters.csv:1: type 'histogram' for a single value"));
  EXPECT_THAT(ErrorOf("DCGM_FI_DEV_GPU_TEMP, label, x\n"), HasSubstr("is a number, not a label"));
  EXPECT_THAT(ErrorOf("DCGM_FI_DRIVER_VERSION, gauge, x\n"), HasSubstr("is a string"));
  EXPECT_THAT(ErrorOf("DCGM_FI_DEV_GPU_TEMP, gauge, \"never closed\n"),
              HasSubstr("counters.csv:1: a quoted field is never closed"));
  EXPECT_THAT(ErrorOf("DCGM_FI_DEV_GPU_TEMP, gauge, \"a\" b\n"), HasSubstr("text after a closing quote"));
  EXPECT_THAT(ErrorOf("DCGM_FI_DEV_GPU_TEMP, gauge, a \"b\"\n"),
              HasSubstr("a quote inside an unquoted field"));
  EXPECT_THAT(ErrorOf("# only comments\n"), HasSubstr("counters.csv: lists no field accel serves"));
  EXPECT_THAT(ErrorOf("DCGM_EXP_GPU_HEALTH_STATUS, counter, health\n"),
              HasSubstr("lists no field accel serves (1 field it cannot read)"));
}

TEST(CountersCsv, KnownFieldsAccelCannotReadAndDuplicatesGoToTheWarning) {
  DcgmCounters c = ParseDcgmCounters(
      "DCGM_FI_DEV_GPU_TEMP, gauge, a\n"
      "DCGM_EXP_GPU_HEALTH_STATUS, counter, health\n"
      "DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT, gauge, switch\n"
      "DCGM_FI_DEV_GPU_TEMP, gauge, again\n",
      "counters.csv");
  EXPECT_THAT(Metrics(c), ElementsAre("DCGM_FI_DEV_GPU_TEMP"));
  EXPECT_EQ(c.counters[0].help, "a");
  ASSERT_EQ(c.not_served.size(), 2u);
  EXPECT_THAT(c.not_served[0], HasSubstr("DCGM_EXP_GPU_HEALTH_STATUS (line 2: DCGM's health-watch"));
  EXPECT_EQ(c.not_served[1],
            "DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT (line 3: NVSwitch entities are not read)");
  EXPECT_THAT(c.duplicates, ElementsAre("DCGM_FI_DEV_GPU_TEMP (line 4, first at line 1)"));
  FieldSelection selection;
  selection.dcgm = c;
  std::string warning = SelectionWarning(selection);
  EXPECT_THAT(warning, HasSubstr("counters.csv: 2 field(s) accel cannot read, not served: "
                                 "DCGM_EXP_GPU_HEALTH_STATUS"));
  EXPECT_THAT(warning, HasSubstr("listed again, first line kept: DCGM_FI_DEV_GPU_TEMP"));
  EXPECT_EQ(std::count(warning.begin(), warning.end(), '\n'), 0);  // one line
}

TEST(CountersCsv, EveryServedFieldIsAKnownDcgmName) {
  for (const DcgmField& f : DcgmFields()) {
    EXPECT_TRUE(IsDcgmFieldName(f.name)) << f.name;
    EXPECT_EQ(FindDcgmField(f.name), &f) << f.name;
    EXPECT_STRNE(f.source, "") << f.name;
  }
  EXPECT_EQ(DefaultDcgmFields().size(), 25u);
  for (const DcgmField* f : DefaultDcgmFields()) EXPECT_NE(f, nullptr);
}

TEST(CountersCsv, MetricsReferenceNamesEveryServedField) {
  std::string doc = ReadFile(std::string(ACCEL_SOURCE_DIR) + "/docs/metrics.md");
  for (const DcgmField& f : DcgmFields()) {
    if (f.shape == DcgmShape::kNvlinkLink && f.link > 0) continue;  // "_L0 ... _L17" in one row
    EXPECT_NE(doc.find(std::string("| ") + f.name + " "), std::string::npos)
        << f.name << " is missing from docs/metrics.md";
  }
}

// ---- the CSVs NVIDIA ships ------------------------------------------------------------------

const char* const kPeerCsvs[] = {"default-counters.csv", "dcp-metrics-included.csv",
                                 "1.x-compatibility-metrics.csv"};

std::string PeerCsv(const std::string& name) {
  return test_support::SharedPath("peers/dcgm-exporter/" + name);
}

// The active (uncommented) field lines of a CSV, by a plain reading independent of the parser.
std::vector<std::string> ActiveNames(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream in(text);
  std::string line;
  std::regex field(R"(^\s*([A-Za-z0-9_]+)\s*,)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (!line.empty() && line[0] != '#' && std::regex_search(line, m, field)) names.push_back(m[1]);
  }
  return names;
}

TEST(CountersCsvPeers, EachShippedCsvSelectsItsActiveLines) {
  for (const char* name : kPeerCsvs) {
    const std::string path = PeerCsv(name);
    ACCEL_REQUIRE_SHARED(path);
    DcgmCounters c = LoadDcgmCounters(path);
    std::vector<std::string> active = ActiveNames(ReadFile(path));
    // The 1.x file lists dcgm_fi_prof_pcie_tx/rx_bytes twice: the first line is served.
    std::vector<std::string> unique;
    for (const std::string& n : active) {
      if (std::find(unique.begin(), unique.end(), n) == unique.end()) unique.push_back(n);
    }
    EXPECT_EQ(Metrics(c), unique) << name;
    EXPECT_TRUE(c.not_served.empty()) << name << ": " << c.not_served.front();
    EXPECT_EQ(c.duplicates.size(), active.size() - unique.size()) << name;
  }
}

// Every line made active: what a user who uncomments everything gets.
std::string Uncommented(const std::string& text) {
  return std::regex_replace(text, std::regex(R"((^|\n)#\s*((DCGM|dcgm)_[A-Za-z0-9_]+\s*,))"), "$1$2");
}

TEST(CountersCsvPeers, EveryNamedFieldCommentedOrNotIsServedOrInTheWarning) {
  std::set<std::string> all, served, not_served;
  for (const char* name : kPeerCsvs) {
    const std::string path = PeerCsv(name);
    ACCEL_REQUIRE_SHARED(path);
    DcgmCounters c = ParseDcgmCounters(Uncommented(ReadFile(path)), path);
    for (const DcgmCounter& counter : c.counters) served.insert(counter.field->name);
    for (const std::string& n : c.not_served) not_served.insert(n.substr(0, n.find(' ')));
    std::string text = ReadFile(path);
    const std::regex dcgm_name(R"(DCGM_(FI|EXP)_[A-Z0-9_]+)");
    for (std::sregex_iterator it(text.begin(), text.end(), dcgm_name), end; it != end; ++it) {
      all.insert(it->str());
    }
  }
  EXPECT_EQ(all.size(), 61u);  // the issue's count of distinct DCGM names in the three files
  for (const std::string& name : all) {
    EXPECT_TRUE(served.count(name) || not_served.count(name)) << name << " silently dropped";
  }
  // DCGM's health-watch engine is the only one accel has no NVML source for.
  EXPECT_EQ(not_served, std::set<std::string>{"DCGM_EXP_GPU_HEALTH_STATUS"});
  EXPECT_TRUE(served.count("DCGM_FI_DEV_NVLINK_BANDWIDTH_L0"));
  EXPECT_TRUE(served.count("DCGM_FI_DEV_RELIABILITY_VIOLATION"));
  EXPECT_TRUE(served.count("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"));
}

}  // namespace
}  // namespace accel::telemetry
