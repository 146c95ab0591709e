// RenderMetrics with a field selection (field_selection.h): exactly the CSV's families, in its
// order, with its TYPE and HELP; label fields in dcgm-exporter's sorted place; the DCGM_EXP_*
// window and P2P families; the opt-in values; the amd profile's GPUConfig.Fields and prefix.
// Snapshots are built in code (render_fixture.h), so every value is known.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>

#include "support/shared_fixture.h"
#include "telemetry/field_selection.h"
#include "telemetry/render.h"
#include "telemetry/render_fixture.h"

namespace accel::telemetry {
namespace field_selection_render_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::MixedNode;

std::shared_ptr<const FieldSelection> Dcgm(const std::string& csv) {
  auto s = std::make_shared<FieldSelection>();
  s->dcgm = ParseDcgmCounters(csv, "counters.csv");
  return s;
}

std::string RenderDcgm(const Snapshot& snap, std::shared_ptr<const FieldSelection> fields) {
  RenderOptions o;
  o.amd = o.gaudi = o.accel = false;
  o.fields = std::move(fields);
  std::string out;
  RenderMetrics(snap, o, &out);
  return out;
}

std::vector<std::string> Lines(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

// The first sample line of `metric` for GPU `gpu` (whole-GPU row), or "".
std::string Sample(const std::string& text, const std::string& metric, int gpu) {
  for (const std::string& line : Lines(text, metric + "{gpu=\"" + std::to_string(gpu) + "\"")) {
    return line;
  }
  return "";
}

TEST(FieldSelectionRender, ExactlyTheListedFamiliesInFileOrderWithTheirTypeAndHelp) {
  std::string out = RenderDcgm(MixedNode(), Dcgm("DCGM_FI_DEV_GPU_TEMP, counter, \"Temp, my words.\"\n"
                                                 "DCGM_FI_DEV_FB_TOTAL, gauge, FB total\n"
                                                 "dcgm_sm_clock, gauge, old name\n"));
  EXPECT_THAT(Lines(out, "# TYPE"),
              ElementsAre("# TYPE DCGM_FI_DEV_GPU_TEMP counter", "# TYPE DCGM_FI_DEV_FB_TOTAL gauge",
                          "# TYPE dcgm_sm_clock gauge"));
  EXPECT_THAT(out, HasSubstr("# HELP DCGM_FI_DEV_GPU_TEMP Temp, my words.\n"));
  // No driver-version label unless the CSV lists it (dcgm-exporter's default file does).
  EXPECT_EQ(Sample(out, "DCGM_FI_DEV_FB_TOTAL", 0),
            "DCGM_FI_DEV_FB_TOTAL{gpu=\"0\",UUID=\"GPU-8f6c0000-1d2e-4f3a-9b8c-7d6e5f4a3b00\","
            "pci_bus_id=\"00000000:3B:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\","
            "Hostname=\"node-a\"} 81559");
  EXPECT_THAT(Sample(out, "dcgm_sm_clock", 0), HasSubstr("} 1980"));
  // FB_TOTAL on MIG instance rows is the instance's own framebuffer.
  EXPECT_THAT(out, HasSubstr("GPU_I_PROFILE=\"2g.20gb\",GPU_I_ID=\"5\",Hostname=\"node-a\","
                             "container=\"server\",namespace=\"ml\",pod=\"infer-a\"} 19968"));
}

TEST(FieldSelectionRender, LabelFieldsSortedBeforeThePodAttributes) {
  Snapshot snap = MixedNode();
  snap.devices[1].identity.brand = "NVIDIA";
  std::string out = RenderDcgm(snap, Dcgm("DCGM_FI_DRIVER_VERSION, label, Driver\n"
                                          "DCGM_FI_DEV_GPU_TEMP, gauge, t\n"
                                          "DCGM_FI_DEV_SERIAL, label, Serial\n"
                                          "DCGM_FI_DEV_BRAND, label, Brand\n"));
  EXPECT_THAT(Lines(out, "# TYPE"), ElementsAre("# TYPE DCGM_FI_DEV_GPU_TEMP gauge"));
  EXPECT_THAT(Sample(out, "DCGM_FI_DEV_GPU_TEMP", 1),
              HasSubstr("Hostname=\"node-a\",DCGM_FI_DEV_BRAND=\"NVIDIA\","
                        "DCGM_FI_DEV_SERIAL=\"1654321001\",DCGM_FI_DRIVER_VERSION=\"580.95.05\","
                        "container=\"main\",namespace=\"ml\",pod=\"trainer-0\"} 35"));
}

TEST(FieldSelectionRender, OptInValuesInDcgmsUnitsAndFormats) {
  Snapshot snap = MixedNode();
  devices::Sample& s = snap.devices[0].sample;
  s.violation_ns[static_cast<size_t>(devices::ThrottleReason::kThermal)] = 123456789;
  s.ecc_uncorrectable_aggregate = 4;
  s.retired_pages_pending = true;
  s.nvlink_replay_errors = 7;
  s.fp64_active = 0.125;
  s.clock_event_reasons = 0x44;
  s.nvlink_link_mb_per_second = {1.4, std::nullopt, 3.6};
  std::string out =
      RenderDcgm(snap, Dcgm("DCGM_FI_DEV_THERMAL_VIOLATION, counter, t\n"
                            "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL, counter, e\n"
                            "DCGM_FI_DEV_RETIRED_PENDING, counter, r\n"
                            "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, counter, n\n"
                            "DCGM_FI_PROF_PIPE_FP64_ACTIVE, gauge, f\n"
                            "DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, c\n"
                            "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0, counter, l0\n"
                            "DCGM_FI_DEV_NVLINK_BANDWIDTH_L1, counter, l1\n"
                            "DCGM_FI_DEV_NVLINK_BANDWIDTH_L2, counter, l2\n"));
  EXPECT_THAT(Sample(out, "DCGM_FI_DEV_THERMAL_VIOLATION", 0), HasSubstr("} 123456789"));
  EXPECT_THAT(Sample(out, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", 0), HasSubstr("} 4"));
  EXPECT_THAT(Sample(out, "DCGM_FI_DEV_RETIRED_PENDING", 0), HasSubstr("} 1"));
  EXPECT_THAT(Sample(out, "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", 0), HasSubstr("} 7"));
  EXPECT_THAT(Sample(out, "DCGM_FI_PROF_PIPE_FP64_ACTIVE", 0), HasSubstr("} 0.125000"));
  EXPECT_THAT(Sample(out, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 0), HasSubstr("} 68"));
  EXPECT_THAT(Sample(out, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0", 0), HasSubstr("} 1"));
  EXPECT_EQ(Sample(out, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L1", 0), "");  // link down
  EXPECT_THAT(Sample(out, "DCGM_FI_DEV_NVLINK_BANDWIDTH_L2", 0), HasSubstr("} 4"));
  // Other GPUs never read them: absent, never 0.
  EXPECT_EQ(Sample(out, "DCGM_FI_DEV_THERMAL_VIOLATION", 1), "");
}

TEST(FieldSelectionRender, XidAndClockEventWindowsAsDcgmExporterPrintsThem) {
  Snapshot snap = MixedNode();
  snap.event_window = std::chrono::milliseconds(300000);
  snap.devices[1].xid_window = {{79, 2}, {13, 1}};
  snap.devices[0].clock_event_window = {{0x4, 3}, {0x1, 12}};
  std::string out = RenderDcgm(snap, Dcgm("DCGM_EXP_XID_ERRORS_COUNT, counter, x\n"
                                          "DCGM_EXP_CLOCK_EVENTS_COUNT, counter, c\n"));
  std::vector<std::string> xid1 = Lines(out, "DCGM_EXP_XID_ERRORS_COUNT{gpu=\"1\"");
  ASSERT_EQ(xid1.size(), 2u);
  EXPECT_THAT(xid1[0], HasSubstr("Hostname=\"node-a\",window_size_in_ms=\"300000\",xid=\"13\","
                                 "container=\"main\",namespace=\"ml\",pod=\"trainer-0\"} 1"));
  EXPECT_THAT(xid1[1], HasSubstr("xid=\"79\",container=\"main\""));
  EXPECT_THAT(xid1[1], HasSubstr("} 2"));
  // Nothing in the window: one 0 without the xid label.
  EXPECT_THAT(Sample(out, "DCGM_EXP_XID_ERRORS_COUNT", 0),
              HasSubstr("Hostname=\"node-a\",window_size_in_ms=\"300000\"} 0"));
  std::vector<std::string> clock0 = Lines(out, "DCGM_EXP_CLOCK_EVENTS_COUNT{gpu=\"0\"");
  ASSERT_EQ(clock0.size(), 2u);
  EXPECT_THAT(clock0[0], HasSubstr("clock_event=\"gpu_idle\",window_size_in_ms=\"300000\"} 12"));
  EXPECT_THAT(clock0[1], HasSubstr("clock_event=\"power_cap\",window_size_in_ms=\"300000\"} 3"));

  // A reason bit dcgm-exporter does not name is skipped, as it does; nothing left: one 0.
  snap.devices[0].clock_event_window = {{0x1000, 4}};
  out = RenderDcgm(snap, Dcgm("DCGM_EXP_CLOCK_EVENTS_COUNT, counter, c\n"));
  EXPECT_THAT(Lines(out, "DCGM_EXP_CLOCK_EVENTS_COUNT{gpu=\"0\""),
              ElementsAre(HasSubstr("Hostname=\"node-a\",window_size_in_ms=\"300000\"} 0")));
}

TEST(FieldSelectionRender, P2pStatusPerPeer) {
  Snapshot snap = MixedNode();
  snap.devices[0].p2p = {{1, 0}, {2, 5}};
  std::string out = RenderDcgm(snap, Dcgm("DCGM_EXP_P2P_STATUS, gauge, p\n"));
  std::vector<std::string> lines = Lines(out, "DCGM_EXP_P2P_STATUS{gpu=\"0\"");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("Hostname=\"node-a\",link_status=\"OK\",peer_gpu=\"1\"} 0"));
  EXPECT_THAT(lines[1], HasSubstr("link_status=\"NotSupported\",peer_gpu=\"2\"} 5"));
}

TEST(FieldSelectionRender, AmdFieldsAndPrefix) {
  auto fields = std::make_shared<FieldSelection>();
  fields->amd = ParseAmdMetricsConfig(
      R"({"CommonConfig": {"MetricsFieldPrefix": "amd_"},
          "GPUConfig": {"Fields": ["GPU_USED_VRAM", "GPU_HEALTH", "GPU_PACKAGE_POWER"]}})",
      "config.json");
  RenderOptions o;
  o.dcgm = o.gaudi = o.accel = false;
  o.fields = fields;
  std::string out;
  RenderMetrics(MixedNode(), o, &out);
  EXPECT_THAT(Lines(out, "# TYPE"),
              ElementsAre("# TYPE amd_gpu_used_vram gauge", "# TYPE amd_gpu_health gauge"));
  EXPECT_THAT(out, HasSubstr("amd_gpu_used_vram{card_model=\"AMD Instinct MI300X\""));
  EXPECT_THAT(out, Not(HasSubstr("\ngpu_used_vram{")));

  // No field list: every family, prefixed.
  fields->amd = ParseAmdMetricsConfig(R"({"CommonConfig": {"MetricsFieldPrefix": "x_"}})", "c");
  RenderMetrics(MixedNode(), o, &out);
  for (const std::string& line : Lines(out, "# TYPE")) EXPECT_THAT(line, HasSubstr("# TYPE x_"));
  EXPECT_EQ(Lines(out, "# TYPE").size(), 16u);  // 14 value families, health, nodes
}

TEST(FieldSelectionRender, WholeSelectionPassesPromtool) {
  ACCEL_REQUIRE_TOOL("/usr/bin/promtool", "prometheus");
  Snapshot snap = MixedNode();
  snap.devices[1].xid_window = {{79, 2}};
  snap.devices[0].p2p = {{1, 0}};
  std::string csv;
  for (const char* name :
       {"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_FB_TOTAL", "DCGM_FI_DEV_POWER_VIOLATION",
        "DCGM_FI_DEV_XID_ERRORS", "DCGM_EXP_XID_ERRORS_COUNT", "DCGM_EXP_P2P_STATUS",
        "DCGM_EXP_CLOCK_EVENTS_COUNT"}) {
    csv += std::string(name) + ", gauge, help for " + name + "\n";
  }
  csv += "DCGM_FI_DRIVER_VERSION, label, Driver\nDCGM_FI_DEV_VBIOS_VERSION, label, VBIOS\n";
  std::string text = RenderDcgm(snap, Dcgm(csv));
  std::string dir = ::testing::TempDir();
  std::string in = dir + "/selection_promtool.prom", report = dir + "/selection_promtool.txt";
  { std::ofstream(in) << text; }
  int status = std::system(("/usr/bin/promtool check metrics < '" + in + "' > '" + report + "' 2>&1").c_str());
  int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream r(report);
  std::string lint((std::istreambuf_iterator<char>(r)), std::istreambuf_iterator<char>());
  // dcgm-exporter's names are not lint-clean (camelCase labels, counters without _total): rc 3
  // is a lint finding; 1 would be text Prometheus cannot parse.
  EXPECT_NE(rc, 1) << lint;
  EXPECT_GE(rc, 0) << lint;
}

}  // namespace
}  // namespace accel::telemetry
