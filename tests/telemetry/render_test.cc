#include "telemetry/render.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "common/error.h"
#include "support/shared_fixture.h"
#include "http/exposition.h"
#include "telemetry/render_fixture.h"

namespace accel::telemetry {
namespace render_test {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::MixedNode;

RenderOptions Only(bool dcgm, bool amd, bool gaudi, bool accel) {
  RenderOptions o;
  o.dcgm = dcgm;
  o.amd = amd;
  o.gaudi = gaudi;
  o.accel = accel;
  return o;
}

std::string Render(const Snapshot& snap, const RenderOptions& options) {
  std::string out = "stale text that must be cleared";
  RenderMetrics(snap, options, &out);
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Sample lines whose series name is `name` and that contain every one of `parts`.
std::vector<std::string> Samples(const std::string& text, const std::string& name,
                                 const std::vector<std::string>& parts = {}) {
  std::vector<std::string> found;
  for (const std::string& line : Lines(text)) {
    if (line.rfind(name + "{", 0) != 0 && line.rfind(name + " ", 0) != 0) continue;
    bool all = true;
    for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
    if (all) found.push_back(line);
  }
  return found;
}

const char kGpu0[] =
    R"(gpu="0",UUID="GPU-8f6c0000-1d2e-4f3a-9b8c-7d6e5f4a3b00",pci_bus_id="00000000:3B:00.0",)"
    R"(device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-a",)"
    R"(DCGM_FI_DRIVER_VERSION="580.95.05")";

// ---- The text format ------------------------------------------------------------------------

TEST(Exposition, NumbersLikeGo) {
  auto fixed = [](double v) { std::string s; http::AppendFixed6(&s, v); return s; };
  auto shortest = [](double v) { std::string s; http::AppendShortest(&s, v); return s; };
  EXPECT_EQ(fixed(71.234), "71.234000");
  EXPECT_EQ(fixed(0), "0.000000");
  EXPECT_EQ(fixed(245.12), "245.120000");
  EXPECT_EQ(fixed(1e20), "100000000000000000000.000000");
  EXPECT_EQ(fixed(std::nan("")), "NaN");
  EXPECT_EQ(fixed(-INFINITY), "-Inf");
  EXPECT_EQ(shortest(0.1), "0.1");
  EXPECT_EQ(shortest(123456.7), "123456.7");
  EXPECT_EQ(shortest(1048576), "1.048576e+06");
  EXPECT_EQ(shortest(1.98e9), "1.98e+09");
  EXPECT_EQ(shortest(0.0001), "0.0001");
  EXPECT_EQ(shortest(0.00001), "1e-05");
  EXPECT_EQ(shortest(1), "1");
  EXPECT_EQ(shortest(-2.5), "-2.5");
  EXPECT_EQ(shortest(INFINITY), "+Inf");
}

TEST(Exposition, EscapesLabelValuesAndHelp) {
  std::string chunk;
  http::AppendLabel(&chunk, "a", "x\"y\\z\nw");
  http::AppendLabel(&chunk, "b", "");
  EXPECT_EQ(chunk, R"(a="x\"y\\z\nw",b="")");
  std::string help;
  http::AppendEscapedHelp(&help, "quote \" stays, \\ and\nnewline do not");
  EXPECT_EQ(help, R"(quote " stays, \\ and\nnewline do not)");
}

TEST(Exposition, EmptyFamiliesLeaveNoTrace) {
  std::string out;
  http::ExpositionWriter w(&out);
  w.BeginFamily("empty_one", "nothing here", http::MetricType::kGauge);
  w.BeginFamily("x_total", "some\\thing", http::MetricType::kCounter);
  w.StartSample();
  w.FinishUint(7);
  w.StartSample();
  w.AddLabels("");
  w.AddLabel("k", "v");
  w.AddLabels(R"(l="1")");
  w.FinishShortest(0.5);
  EXPECT_EQ(out,
            "# HELP x_total some\\\\thing\n# TYPE x_total counter\n"
            "x_total 7\nx_total{k=\"v\",l=\"1\"} 0.5\n");
  EXPECT_EQ(w.samples(), 2u);
}

// ---- dcgm profile ---------------------------------------------------------------------------

TEST(RenderDcgm, ExactLinesForAKnownGpu) {
  std::string text = Render(MixedNode(), Only(true, false, false, false));
  std::string labels = std::string("{") + kGpu0 + "}";
  for (const std::string& line : {
           "DCGM_FI_DEV_SM_CLOCK" + labels + " 1980",
           "DCGM_FI_DEV_MEM_CLOCK" + labels + " 2619",
           "DCGM_FI_DEV_MEMORY_TEMP" + labels + " 41",
           "DCGM_FI_DEV_GPU_TEMP" + labels + " 34",
           "DCGM_FI_DEV_POWER_USAGE" + labels + " 71.234000",
           "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" + labels + " 123456789012",
           "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" + labels + " 3",
           "DCGM_FI_DEV_GPU_UTIL" + labels + " 42",
           "DCGM_FI_DEV_MEM_COPY_UTIL" + labels + " 7",
           "DCGM_FI_DEV_ENC_UTIL" + labels + " 0",
           "DCGM_FI_DEV_DEC_UTIL" + labels + " 0",
           "DCGM_FI_DEV_XID_ERRORS{" + std::string(kGpu0) +
               R"(,err_code="0",err_msg="No Error"} 0)",
           "DCGM_FI_DEV_FB_FREE" + labels + " 79990",
           "DCGM_FI_DEV_FB_USED" + labels + " 1029",
           "DCGM_FI_DEV_FB_RESERVED" + labels + " 540",
           "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL" + labels + " 1234",
           "DCGM_FI_DEV_VGPU_LICENSE_STATUS" + labels + " 0",
           "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS" + labels + " 0",
           "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS" + labels + " 1",
           "DCGM_FI_DEV_ROW_REMAP_FAILURE" + labels + " 0",
           "DCGM_FI_PROF_GR_ENGINE_ACTIVE" + labels + " 0.500000",
           "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" + labels + " 0.250000",
           "DCGM_FI_PROF_DRAM_ACTIVE" + labels + " 0.125000",
           "DCGM_FI_PROF_PCIE_TX_BYTES" + labels + " 12582912",
           "DCGM_FI_PROF_PCIE_RX_BYTES" + labels + " 36175872",
       }) {
    EXPECT_THAT(text, HasSubstr("\n" + line + "\n")) << line;
  }
}

TEST(RenderDcgm, TheTwentyFiveDefaultFamiliesWithTheirTypes) {
  std::string text = Render(MixedNode(), Only(true, false, false, false));
  std::map<std::string, std::string> types;
  for (const std::string& line : Lines(text)) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    std::istringstream in(line.substr(7));
    std::string name, type;
    in >> name >> type;
    types[name] = type;
  }
  std::map<std::string, std::string> expected = {
      {"DCGM_FI_DEV_SM_CLOCK", "gauge"}, {"DCGM_FI_DEV_MEM_CLOCK", "gauge"},
      {"DCGM_FI_DEV_MEMORY_TEMP", "gauge"}, {"DCGM_FI_DEV_GPU_TEMP", "gauge"},
      {"DCGM_FI_DEV_POWER_USAGE", "gauge"}, {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter"},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter"}, {"DCGM_FI_DEV_GPU_UTIL", "gauge"},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge"}, {"DCGM_FI_DEV_ENC_UTIL", "gauge"},
      {"DCGM_FI_DEV_DEC_UTIL", "gauge"}, {"DCGM_FI_DEV_XID_ERRORS", "gauge"},
      {"DCGM_FI_DEV_FB_FREE", "gauge"}, {"DCGM_FI_DEV_FB_USED", "gauge"},
      {"DCGM_FI_DEV_FB_RESERVED", "gauge"}, {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter"},
      {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge"},
      {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter"},
      {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter"},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge"}, {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge"},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge"}, {"DCGM_FI_PROF_DRAM_ACTIVE", "gauge"},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", "gauge"}, {"DCGM_FI_PROF_PCIE_RX_BYTES", "gauge"}};
  EXPECT_EQ(types, expected);
}

TEST(RenderDcgm, HostnameLabelSwitch) {
  Snapshot snap = MixedNode();
  RenderOptions o = Only(true, false, false, false);
  o.dcgm_hostname_label = "hostname";
  std::string lower = Render(snap, o);
  EXPECT_THAT(lower, HasSubstr(R"(modelName="NVIDIA H100 80GB HBM3",hostname="node-a",DCGM_FI)"));
  EXPECT_THAT(lower, Not(HasSubstr("Hostname=")));
  o.dcgm_hostname_label = "";
  std::string none = Render(snap, o);
  EXPECT_THAT(none, HasSubstr(R"(modelName="NVIDIA H100 80GB HBM3",DCGM_FI_DRIVER_VERSION=)"));
  EXPECT_THAT(none, Not(HasSubstr("ostname=")));
  o.dcgm_hostname_label = "host name";
  std::string out;
  EXPECT_THROW(RenderMetrics(snap, o, &out), InputError);
}

TEST(RenderDcgm, LastXidWithCodeAndOurMessage) {
  std::string text = Render(MixedNode(), Only(true, false, false, false));
  auto xid = Samples(text, "DCGM_FI_DEV_XID_ERRORS", {R"({gpu="1")"});
  ASSERT_EQ(xid.size(), 1u);
  EXPECT_THAT(xid[0], HasSubstr(R"(DCGM_FI_DRIVER_VERSION="580.95.05",container="main",)"
                                R"(err_code="79",err_msg="GPU is no longer reachable on the PCIe )"
                                R"(bus",namespace="ml",pod="trainer-0"} 79)"));
}

TEST(RenderDcgm, LostAndStaleGpusVanish) {
  std::string text = Render(MixedNode(), Only(true, false, false, false));
  EXPECT_THAT(text, Not(HasSubstr(R"({gpu="4")")));
  EXPECT_THAT(text, Not(HasSubstr(R"({gpu="5")")));
  // GPUs 0, 1, 6, 7 once; GPU 2 as 3 instances (one with two pods); GPU 3 as 3 replicas.
  EXPECT_EQ(Samples(text, "DCGM_FI_DEV_GPU_TEMP").size(), 11u);
}

TEST(RenderDcgm, UnsupportedFieldsAreOmittedNotZero) {
  std::string text = Render(MixedNode(), Only(true, false, false, false));
  for (const char* name : {"DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_FB_RESERVED",
                           "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES",
                           "DCGM_FI_DEV_VGPU_LICENSE_STATUS"}) {
    EXPECT_TRUE(Samples(text, name, {R"({gpu="6")"}).empty()) << name;
  }
  EXPECT_EQ(Samples(text, "DCGM_FI_DEV_GPU_TEMP", {R"({gpu="6")"}).size(), 1u);
}

TEST(RenderDcgm, MigInstancesReplaceTheGpu) {
  std::string text = Render(MixedNode(), Only(true, false, false, false));
  const std::string gi9 =
      R"(gpu="2",UUID="GPU-8f6c0022-1d2e-4f3a-9b8c-7d6e5f4a3b02",pci_bus_id="00000000:5D:00.0",)"
      R"(device="nvidia2",modelName="NVIDIA H100 80GB HBM3",GPU_I_PROFILE="1g.10gb",GPU_I_ID="9",)"
      R"(Hostname="node-a",DCGM_FI_DRIVER_VERSION="580.95.05")";
  EXPECT_THAT(text, HasSubstr("\nDCGM_FI_DEV_FB_USED{" + gi9 + "} 0\n"));
  EXPECT_THAT(text, HasSubstr("\nDCGM_FI_DEV_FB_FREE{" + gi9 + "} 9984\n"));
  EXPECT_THAT(text, HasSubstr("\nDCGM_FI_DEV_GPU_TEMP{" + gi9 + "} 36\n"));  // the GPU's
  EXPECT_THAT(text, HasSubstr("\nDCGM_FI_PROF_PIPE_TENSOR_ACTIVE{" + gi9 + "} 0.500000\n"));
  EXPECT_THAT(text, HasSubstr("\nDCGM_FI_PROF_PCIE_TX_BYTES{" + gi9 + "} 12582912\n"));
  // Every gpu="2" series names its instance; no *_UTIL for MIG.
  int gpu2 = 0;
  for (const std::string& line : Lines(text)) {
    if (line.find(R"({gpu="2")") == std::string::npos) continue;
    ++gpu2;
    EXPECT_THAT(line, HasSubstr("GPU_I_ID=")) << line;
    EXPECT_THAT(line, Not(HasSubstr("_UTIL{"))) << line;
  }
  EXPECT_GT(gpu2, 40);
  // Instance without GPM tensor data: omitted, not the GPU's value.
  EXPECT_TRUE(Samples(text, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", {R"(GPU_I_ID="1")"}).empty());
  // Instance 5 has two pods: one series each, no unlabelled one.
  auto used = Samples(text, "DCGM_FI_DEV_FB_USED", {R"(GPU_I_ID="5")"});
  ASSERT_EQ(used.size(), 2u);
  EXPECT_THAT(used[0], HasSubstr(R"(DCGM_FI_DRIVER_VERSION="580.95.05",container="server",)"
                                 R"(namespace="ml",pod="infer-a"} 4096)"));
  EXPECT_THAT(used[1], HasSubstr(R"(pod="infer-b"} 4096)"));
}

TEST(RenderDcgm, TimeSlicedReplicasGetVgpu) {
  std::string text = Render(MixedNode(), Only(true, false, false, false));
  auto temp = Samples(text, "DCGM_FI_DEV_GPU_TEMP", {R"({gpu="3")"});
  ASSERT_EQ(temp.size(), 3u);  // the 4th PodRef repeats replica 2 under another resource
  EXPECT_THAT(temp[0], HasSubstr(R"(container="jupyter",namespace="dev",pod="notebook-1",)"
                                 R"(vgpu="0"} 37)"));
  EXPECT_THAT(temp[1], HasSubstr(R"(pod="notebook-1",vgpu="1"} 37)"));
  EXPECT_THAT(temp[2], HasSubstr(R"(pod="notebook-2",vgpu="2"} 37)"));
}

TEST(RenderDcgm, EscapesOddLabelValues) {
  std::string text = Render(MixedNode(), Only(true, false, false, false));
  EXPECT_THAT(text, HasSubstr(R"(modelName="Odd \"GPU\" \\ model\nline 2")"));
}

// ---- amd and gaudi profiles ------------------------------------------------------------------

TEST(RenderAmd, DeviceMetricsExporterNamesAndSortedLabels) {
  std::string text = Render(MixedNode(), Only(false, true, false, false));
  const std::string after =
      R"(container="trainer",deployment_mode="baremetal",driver_version="6.8.5",)"
      R"(gpu_compute_partition_type="",gpu_id="0",gpu_memory_partition_type="",)"
      R"(gpu_partition_id="0",gpu_uuid="GPU-0a1b2c3d4e5f6a7b",hostname="node-a",job_id="",)"
      R"(job_partition="",job_user="",namespace="ml",pod="rocm-job",serial_number="PCB00",)"
      R"(vbios_version="113-M3000100-102")";
  const std::string before = R"(card_model="AMD Instinct MI300X",card_vendor="AMD")";
  EXPECT_THAT(text, HasSubstr("\ngpu_power_usage{" + before + "," + after + "} 612.5\n"));
  EXPECT_THAT(text, HasSubstr("\ngpu_energy_consumed{" + before + "," + after +
                              "} 9.87654321e+11\n"));
  EXPECT_THAT(text, HasSubstr("\ngpu_gfx_activity{" + before + "," + after + "} 87\n"));
  EXPECT_THAT(text, HasSubstr("\ngpu_clock{" + before +
                              R"(,clock_index="0",clock_type="system",)" + after + "} 2100\n"));
  EXPECT_THAT(text, HasSubstr("\ngpu_total_vram{" + before + "," + after + "} 196608\n"));
  EXPECT_THAT(text, HasSubstr("\ngpu_nodes_total{hostname=\"node-a\"} 2\n"));
  EXPECT_THAT(text, Not(HasSubstr("# TYPE gpu_power_usage counter")));
  EXPECT_THAT(text, Not(HasSubstr("NVIDIA")));
}

TEST(RenderGaudi, HabanalabsNamesAndLabels) {
  std::string text = Render(MixedNode(), Only(false, false, true, false));
  const std::string labels =
      R"(Serial="AN45010000",UUID="01P4-HL3080A0-18-U4V193-22-07-00",device="AN45010000",)"
      R"(id="0",fit="hl-gaudi3-1.21.0-fw-58.1.0-sec-9",spi="",driver="1.21.0-ca59b5a",)"
      R"(pod_namespace="ml",pod_name="gaudi-job")";
  EXPECT_THAT(text, HasSubstr("\nhabanalabs_power_mW{" + labels + "} 420250\n"));
  EXPECT_THAT(text, HasSubstr("\nhabanalabs_utilization{" + labels + "} 90\n"));
  EXPECT_THAT(text, HasSubstr("\nhabanalabs_memory_used_bytes{" + labels + "} 6.8719476736e+10\n"));
  // The lost Gaudi keeps only its device_config series.
  std::vector<std::string> lost;
  for (const std::string& line : Lines(text)) {
    if (line.find(R"(,id="1",)") != std::string::npos) lost.push_back(line);
  }
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_THAT(lost[0], HasSubstr("habanalabs_device_config{"));
}

// ---- accel_* --------------------------------------------------------------------------------

TEST(RenderAccel, DeviceLabelsAndUnits) {
  std::string text = Render(MixedNode(), Only(false, false, false, true));
  const std::string gpu0 =
      R"(hostname="node-a",vendor="nvidia",index="0",uuid="GPU-8f6c0000-1d2e-4f3a-9b8c-)"
      R"(7d6e5f4a3b00",model="NVIDIA H100 80GB HBM3",pci_address="0000:3b:00.0",numa_node="0")";
  for (const std::string& line : {
           "accel_device_info{" + gpu0 +
               R"(,driver_version="580.95.05",firmware_version="96.00.99.00.01",)"
               R"(serial="1654321000"} 1)",
           "accel_device_up{" + gpu0 + "} 1",
           "accel_device_lost{" + gpu0 + "} 0",
           "accel_device_sample_age_seconds{" + gpu0 + "} 1.5",
           "accel_utilization_ratio{" + gpu0 + "} 0.42",
           "accel_clock_hertz{" + gpu0 + R"(,clock="sm"} 1.98e+09)",
           "accel_clock_hertz{" + gpu0 + R"(,clock="memory"} 2.619e+09)",
           "accel_temperature_celsius{" + gpu0 + R"(,sensor="memory"} 41)",
           "accel_power_watts{" + gpu0 + "} 71.234",
           "accel_energy_joules_total{" + gpu0 + "} 1.23456789012e+08",
           "accel_memory_used_bytes{" + gpu0 + "} 1078984704",
           "accel_nvlink_bandwidth_bytes_per_second{" + gpu0 + "} 1.2344e+09",
           "accel_ecc_errors_total{" + gpu0 + R"(,type="correctable"} 5)",
           "accel_remapped_rows_total{" + gpu0 + R"(,cause="correctable"} 1)",
           "accel_xid_last{" + gpu0 + "} 0",
       }) {
    EXPECT_THAT(text, HasSubstr("\n" + line + "\n")) << line;
  }
  EXPECT_THAT(text, HasSubstr("\naccel_devices{hostname=\"node-a\",vendor=\"nvidia\"} 8\n"
                              "accel_devices{hostname=\"node-a\",vendor=\"amd\"} 2\n"
                              "accel_devices{hostname=\"node-a\",vendor=\"habana\"} 2\n"));
  EXPECT_THAT(text, HasSubstr(R"(,vendor="amd",index="1",uuid="GPU-5fd0a1b2c3d4e5f6",)"));
  EXPECT_THAT(text, HasSubstr(R"(pci_address="0000:2f:00.0",numa_node="-1"} 1)"));
}

TEST(RenderAccel, LostAndStaleKeepIdentityButNoValues) {
  std::string text = Render(MixedNode(), Only(false, false, false, true));
  for (const char* idx : {R"(vendor="nvidia",index="4")", R"(vendor="nvidia",index="5")",
                          R"(vendor="habana",index="1")"}) {
    EXPECT_EQ(Samples(text, "accel_device_info", {idx}).size(), 1u) << idx;
    EXPECT_THAT(Samples(text, "accel_device_up", {idx}), ::testing::ElementsAre(HasSubstr("} 0")));
    EXPECT_TRUE(Samples(text, "accel_power_watts", {idx}).empty()) << idx;
    EXPECT_TRUE(Samples(text, "accel_device_sample_age_seconds", {idx}).empty()) << idx;
  }
  EXPECT_THAT(Samples(text, "accel_device_lost", {R"(index="4")"}),
              ::testing::ElementsAre(HasSubstr("} 1")));
  EXPECT_THAT(Samples(text, "accel_device_lost", {R"(vendor="nvidia",index="5")"}),
              ::testing::ElementsAre(HasSubstr("} 0")));
  EXPECT_EQ(Samples(text, "accel_xid_errors_total", {R"(index="4")", R"(xid="79"} 1)"}).size(), 1u);
  EXPECT_EQ(Samples(text, "accel_pod_device_info", {R"(index="4")", R"(pod="trainer-1")"}).size(),
            1u);
}

TEST(RenderAccel, XidCountsMigAndPods) {
  std::string text = Render(MixedNode(), Only(false, false, false, true));
  EXPECT_EQ(Samples(text, "accel_xid_errors_total", {R"(index="1")", R"(xid="13"} 1)"}).size(), 1u);
  EXPECT_EQ(Samples(text, "accel_xid_errors_total", {R"(index="1")", R"(xid="79"} 2)"}).size(), 1u);
  EXPECT_EQ(Samples(text, "accel_mig_info").size(), 3u);
  EXPECT_THAT(text, HasSubstr(R"(numa_node="0",gpu_instance="5",mig_profile="2g.20gb",)"
                              R"(mig_uuid="MIG-2c5a0005-7e1b-5c4d-8a9f-0b1c2d3e4f01"} 1)"));
  EXPECT_EQ(Samples(text, "accel_mig_memory_used_bytes", {R"(gpu_instance="5")"}).size(), 1u);
  EXPECT_TRUE(Samples(text, "accel_mig_tensor_active_ratio", {R"(gpu_instance="1")"}).empty());
  EXPECT_THAT(text, HasSubstr(R"(mig_profile="2g.20gb",namespace="ml",pod="infer-b",)"
                              R"(container="server",resource="nvidia.com/mig-2g.20gb",replica=""} 1)"));
  // Replicas: every distinct (pod, container, resource, replica), the whole device too.
  EXPECT_EQ(Samples(text, "accel_pod_device_info", {R"(index="3")"}).size(), 4u);
  EXPECT_EQ(Samples(text, "accel_pod_device_info", {R"(replica="2")"}).size(), 2u);
  EXPECT_EQ(Samples(text, "accel_pod_device_info").size(), 11u);
}

TEST(RenderAccel, ExporterSelfMetrics) {
  Snapshot snap = MixedNode();
  std::string text = Render(snap, Only(false, false, false, true));
  EXPECT_THAT(text, HasSubstr("\naccel_exporter_collections_total{hostname=\"node-a\"} 42\n"));
  EXPECT_THAT(text,
              HasSubstr("\naccel_exporter_collection_duration_seconds{hostname=\"node-a\"} 0.0125\n"));
  EXPECT_THAT(text, HasSubstr("\naccel_exporter_pod_resources_up{hostname=\"node-a\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\naccel_exporter_pod_resources_errors_total{hostname=\"node-a\"} 3\n"));
  snap.stats.pod_resources_enabled = false;
  text = Render(snap, Only(false, false, false, true));
  EXPECT_THAT(text, Not(HasSubstr("accel_exporter_pod_resources")));
  EXPECT_THAT(text, HasSubstr("accel_exporter_build_info{hostname=\"node-a\",version=\""));
}

// ---- Whole exposition -----------------------------------------------------------------------

// Every family one contiguous group with one HELP then one TYPE before its samples; every
// (name, label set) once; the text ends in a newline.
void ExpectWellFormed(const std::string& text) {
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  std::set<std::string> closed, series;
  std::string open;
  bool saw_help = false, saw_type = false;
  for (const std::string& line : Lines(text)) {
    if (line.rfind("# HELP ", 0) == 0) {
      std::string name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_EQ(closed.count(name), 0u) << "family reopened: " << name;
      if (!open.empty()) closed.insert(open);
      open = name;
      saw_help = true;
      saw_type = false;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      EXPECT_TRUE(saw_help && !saw_type) << line;
      EXPECT_EQ(line.substr(7, line.find(' ', 7) - 7), open);
      saw_type = true;
      continue;
    }
    std::string name = line.substr(0, line.find_first_of("{ "));
    EXPECT_EQ(name, open) << "sample outside its family: " << line;
    EXPECT_TRUE(saw_type) << line;
    EXPECT_TRUE(series.insert(line.substr(0, line.rfind(' '))).second) << "duplicate: " << line;
  }
}

TEST(RenderMetrics, WellFormedInEveryCombination) {
  Snapshot snap = MixedNode();
  for (int mask = 1; mask < 16; ++mask) {
    SCOPED_TRACE(mask);
    ExpectWellFormed(Render(snap, Only(mask & 1, mask & 2, mask & 4, mask & 8)));
  }
  ExpectWellFormed(Render(testing::LargeMigNode(), RenderOptions()));
}

TEST(RenderMetrics, NothingToSayIsEmpty) {
  EXPECT_EQ(Render(Snapshot(), Only(true, true, true, false)), "");
  EXPECT_EQ(Render(MixedNode(), Only(false, false, false, false)), "");
}

TEST(RenderMetrics, SameOutputWhenTheScratchIsReused) {
  Snapshot big = testing::LargeMigNode();
  std::string first = Render(big, RenderOptions());
  Render(MixedNode(), RenderOptions());
  EXPECT_EQ(Render(big, RenderOptions()), first);
}

// ---- Golden files ---------------------------------------------------------------------------

std::string GoldenPath(const std::string& name) {
  return std::string(ACCEL_SOURCE_DIR) + "/tests/telemetry/golden/" + name;
}

// Compares with tests/telemetry/golden/<name>; ACCEL_UPDATE_GOLDEN=1 rewrites the file instead.
void ExpectGolden(const std::string& name, const std::string& text) {
  const char* update = std::getenv("ACCEL_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::filesystem::create_directories(std::filesystem::path(GoldenPath(name)).parent_path());
    std::ofstream(GoldenPath(name), std::ios::binary) << text;
    return;
  }
  std::ifstream in(GoldenPath(name), std::ios::binary);
  ASSERT_TRUE(in) << GoldenPath(name) << " missing; run with ACCEL_UPDATE_GOLDEN=1";
  std::string golden((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, golden) << "render differs from " << name
                          << " (ACCEL_UPDATE_GOLDEN=1 rewrites it after a deliberate change)";
}

TEST(RenderGolden, EachProfile) {
  Snapshot snap = MixedNode();
  ExpectGolden("dcgm.prom", Render(snap, Only(true, false, false, false)));
  ExpectGolden("amd.prom", Render(snap, Only(false, true, false, false)));
  ExpectGolden("gaudi.prom", Render(snap, Only(false, false, true, false)));
  ExpectGolden("accel.prom", Render(snap, Only(false, false, false, true)));
}

// ---- promtool -------------------------------------------------------------------------------

// Exit status of `promtool check metrics` on `text`, and its output in *report.
int Promtool(const std::string& text, std::string* report) {
  std::string dir = ::testing::TempDir();
  std::string in = dir + "/render_promtool_in.prom", out = dir + "/render_promtool_out.txt";
  std::ofstream(in, std::ios::binary) << text;
  std::string cmd = "/usr/bin/promtool check metrics < '" + in + "' > '" + out + "' 2>&1";
  int status = std::system(cmd.c_str());
  std::ifstream r(out);
  report->assign((std::istreambuf_iterator<char>(r)), std::istreambuf_iterator<char>());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(RenderPromtool, AccelIsLintCleanAndProfilesParse) {
  ACCEL_REQUIRE_TOOL("/usr/bin/promtool", "prometheus");
  Snapshot snap = MixedNode();
  std::string report;
  EXPECT_EQ(Promtool(Render(snap, Only(false, false, false, true)), &report), 0) << report;
  // Compatibility profiles keep the incumbents' names (camelCase labels, counters without
  // _total), so promtool lints them (exit 3); they must still parse (not exit 1).
  for (int profile = 0; profile < 3; ++profile) {
    RenderOptions o = Only(profile == 0, profile == 1, profile == 2, false);
    int rc = Promtool(Render(snap, o), &report);
    EXPECT_NE(rc, 1) << "profile " << profile << " does not parse:\n" << report;
    EXPECT_GE(rc, 0) << report;
  }
}

}  // namespace
}  // namespace accel::telemetry
