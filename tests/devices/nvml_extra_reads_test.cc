// The opt-in NVML readings (devices::ExtraReads) against the fake libnvidia-ml.so.1, through the
// same dlopen path as production: each asked-for field arrives in base units, falls back where
// DCGM falls back, and is never asked for when not selected. Also the NVML session helper
// (nvml_session.h) that the backend, MIG control and the one-shot queries share.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "devices/backend.h"
#include "devices/mig_control.h"
#include "devices/nvml_links.h"
#include "devices/nvml_session.h"

namespace accel::devices {
namespace nvml_extra_reads_test {

using nlohmann::json;
using ::testing::HasSubstr;

json Ramp(double start, double per_second) {
  return json::object({{"start", start}, {"per_second", per_second}});
}

// An H100 reporting every opt-in value, at PCI bus 0x1b + i.
json Gpu(int i) {
  char bus[32];
  std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x1b + i);
  return {
      {"uuid", "GPU-0000000" + std::to_string(i) + "-aaaa-bbbb-cccc-dddddddddddd"},
      {"pci_bus_id", bus},
      {"serial", "1654922000" + std::to_string(i)},
      {"inforom", {{"oem", "2.1"}, {"ecc", "7.16"}, {"power", "N/A"}, {"image", "G520.0200.00.05"}}},
      {"metrics",
       {{"sm_clock_mhz", 1980},
        {"memory_total_mib", 81559},
        {"memory_used_mib", 1024},
        {"ecc_sbe_volatile", 7},
        {"ecc_dbe_volatile", 1},
        {"ecc_sbe_aggregate", 70},
        {"ecc_dbe_aggregate", 10},
        {"retired_pages_sbe", 3},
        {"retired_pages_dbe", 0},
        {"retired_pages_pending", 1},
        {"nvlink_links", 18},
        {"nvlink_tx_kib", Ramp(0, 1000000)},
        {"nvlink_rx_kib", Ramp(0, 1000000)},
        {"nvlink_crc_flit_errors", 4},
        {"nvlink_crc_data_errors", 5},
        {"nvlink_replay_errors", 6},
        {"nvlink_recovery_errors", 2},
        {"violation_power_ns", 100},
        {"violation_thermal_ns", 200},
        {"violation_sync_boost_ns", 300},
        {"violation_board_limit_ns", 400},
        {"violation_low_util_ns", 500},
        {"violation_reliability_ns", 600},
        {"clocks_event_reasons", 0x41},
        {"brand", 2}}},
      {"gpm",
       {{"supported", true},
        {"metrics",
         {{"graphics_util", 80},
          {"sm_occupancy", 35},
          {"fp64_util", 12},
          {"fp32_util", 20},
          {"fp16_util", 30},
          {"nvlink_total_rx_per_sec", 100},
          {"nvlink_total_tx_per_sec", 200}}}}},
  };
}

ExtraReads All() {
  ExtraReads e;
  e.ecc_aggregate = e.retired_pages = e.nvlink_errors = e.nvlink_per_link = e.violations =
      e.clock_events = e.gpm_more = e.p2p_status = e.identity_details = true;
  return e;
}

class NvmlExtraReadsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("FAKE_NVML_CONFIG");
    if (!config_path_.empty()) std::remove(config_path_.c_str());
  }
  void UseConfig(const std::vector<json>& devices, json doc = json::object()) {
    doc["driver_version"] = "580.95.05";
    doc["nvml_version"] = "13.580.95.05";
    doc["devices"] = devices;
    config_path_ = ::testing::TempDir() + "fake_nvml_extra_" + std::to_string(getpid()) + "_" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
    std::ofstream(config_path_) << doc.dump();
    setenv("FAKE_NVML_CONFIG", config_path_.c_str(), 1);
  }
  std::unique_ptr<DeviceBackend> Open(const ExtraReads& extra) {
    auto backend = OpenNvml(ACCEL_FAKE_NVML);
    EXPECT_NE(backend, nullptr);
    if (backend) backend->SetExtraReads(extra);
    return backend;
  }
  std::string config_path_;
};

TEST_F(NvmlExtraReadsTest, EveryOptInReadingInBaseUnits) {
  json other = Gpu(1);
  other["metrics"]["nvlink_links"] = 0;  // no NVLink: P2P over NVLink is not supported
  UseConfig({Gpu(0), other});
  auto backend = Open(All());
  backend->Read(0);  // GPM and link rates need a previous sample
  usleep(20000);
  DeviceReading r = backend->Read(0);
  ASSERT_EQ(r.error, "");
  const Sample& s = r.sample;
  EXPECT_EQ(s.ecc_correctable_aggregate, 70u);
  EXPECT_EQ(s.ecc_uncorrectable_aggregate, 10u);
  EXPECT_EQ(s.retired_pages_sbe, 3u);  // the INSUFFICIENT_SIZE answer carries the count
  EXPECT_EQ(s.retired_pages_dbe, 0u);
  EXPECT_EQ(s.retired_pages_pending, true);
  EXPECT_EQ(s.nvlink_crc_flit_errors, 4u);
  EXPECT_EQ(s.nvlink_crc_data_errors, 5u);
  EXPECT_EQ(s.nvlink_replay_errors, 6u);
  EXPECT_EQ(s.nvlink_recovery_errors, 2u);
  for (size_t k = 0; k < kThrottleReasons; ++k) EXPECT_EQ(s.violation_ns[k], 100u * (k + 1)) << k;
  EXPECT_EQ(s.clock_event_reasons, 0x41u);
  EXPECT_DOUBLE_EQ(s.sm_occupancy.value_or(-1), 0.35);
  EXPECT_DOUBLE_EQ(s.fp64_active.value_or(-1), 0.12);
  EXPECT_DOUBLE_EQ(s.fp32_active.value_or(-1), 0.20);
  EXPECT_DOUBLE_EQ(s.fp16_active.value_or(-1), 0.30);
  EXPECT_DOUBLE_EQ(s.nvlink_rx_bytes_per_second.value_or(-1), 100 * 1048576.0);
  EXPECT_DOUBLE_EQ(s.nvlink_tx_bytes_per_second.value_or(-1), 200 * 1048576.0);
  ASSERT_EQ(s.nvlink_link_mb_per_second.size(), 18u);
  ASSERT_TRUE(s.nvlink_link_mb_per_second[0]);
  EXPECT_GT(*s.nvlink_link_mb_per_second[0], 0);  // the fake's ramp: about 2000 MB/s
  ASSERT_EQ(r.p2p.size(), 1u);
  EXPECT_EQ(r.p2p[0].peer_index, 1u);
  EXPECT_EQ(r.p2p[0].status, 5);  // the peer has no NVLink
  const DeviceIdentity& id = backend->devices()[0];
  EXPECT_EQ(id.library_version, "13.580.95.05");
  EXPECT_EQ(id.brand, "Tesla");
  EXPECT_EQ(id.inforom_oem_version, "2.1");
  EXPECT_EQ(id.inforom_ecc_version, "7.16");
  EXPECT_EQ(id.inforom_power_version, "N/A");
  EXPECT_EQ(id.inforom_image_version, "G520.0200.00.05");
}

TEST_F(NvmlExtraReadsTest, NothingAskedNothingRead) {
  json gpu = Gpu(0);
  // Were any opt-in call made, the GPU would be lost.
  json faults = json::array();
  for (const char* f : {"nvmlDeviceGetViolationStatus", "nvmlDeviceGetRetiredPages",
                        "nvmlDeviceGetRetiredPagesPendingStatus", "nvmlDeviceGetNvLinkErrorCounter",
                        "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetP2PStatus",
                        "nvmlDeviceGetBrand", "nvmlDeviceGetInforomVersion"}) {
    faults.push_back({{"function", f}, {"error", "GPU_IS_LOST"}});
  }
  gpu["faults"] = faults;
  UseConfig({gpu, Gpu(1)});
  auto backend = Open(ExtraReads{});
  backend->Read(0);
  DeviceReading r = backend->Read(0);
  EXPECT_FALSE(r.lost) << r.error;
  EXPECT_FALSE(r.sample.ecc_correctable_aggregate);
  EXPECT_FALSE(r.sample.retired_pages_sbe);
  EXPECT_FALSE(r.sample.nvlink_replay_errors);
  EXPECT_FALSE(r.sample.violation_ns[0]);
  EXPECT_FALSE(r.sample.clock_event_reasons);
  EXPECT_FALSE(r.sample.sm_occupancy);
  EXPECT_TRUE(r.sample.nvlink_link_mb_per_second.empty());
  EXPECT_TRUE(r.p2p.empty());
  EXPECT_EQ(backend->devices()[0].brand, "");
  EXPECT_EQ(r.sample.ecc_correctable, 7u);  // the default set is untouched
}

TEST_F(NvmlExtraReadsTest, FallbacksDcgmAlsoUses) {
  json gpu = Gpu(0);
  // NVML 13 deprecates nvmlDeviceGetViolationStatus: the perf-policy fields (74..79) stand in.
  // A driver without the NVLink error total fields: the per-link counters are summed.
  gpu["not_supported"] = {"nvmlDeviceGetViolationStatus", "nvmlDeviceGetFieldValues"};
  gpu["nvlink_peers"] = {"switch", "down", "switch"};
  UseConfig({gpu});
  auto backend = Open(All());
  DeviceReading r = backend->Read(0);
  ASSERT_EQ(r.error, "");
  // Field values are refused too here, so violations stay absent rather than wrong...
  EXPECT_FALSE(r.sample.violation_ns[0]);
  // ...while the NVLink totals come from the two active links (4 each).
  EXPECT_EQ(r.sample.nvlink_crc_flit_errors, 8u);
  EXPECT_EQ(r.sample.nvlink_replay_errors, 12u);

  json viol = Gpu(0);
  viol["not_supported"] = {"nvmlDeviceGetViolationStatus"};
  UseConfig({viol});
  backend.reset();
  backend = Open(All());
  r = backend->Read(0);
  EXPECT_EQ(r.sample.violation_ns[1], 200u);
  EXPECT_EQ(r.sample.violation_ns[5], 600u);
}

// ---- the session helper ---------------------------------------------------------------------

TEST_F(NvmlExtraReadsTest, SessionsShareTheReferenceCountedInit) {
  UseConfig({Gpu(0), Gpu(1)});
  auto backend = Open(ExtraReads{});
  {
    // A one-shot query beside the backend opens and closes its own session...
    auto session = TryNvmlSession(ACCEL_FAKE_NVML, nullptr);
    ASSERT_NE(session, nullptr);
    EXPECT_NE(session->DeviceAt("0000:1c:00.0"), nullptr);
    EXPECT_NE(session->DeviceAt("00000000:1B:00.0"), nullptr);
    EXPECT_EQ(session->DeviceAt("0000:99:00.0"), nullptr);
    EXPECT_EQ(session->DeviceAt("not an address"), nullptr);
    EXPECT_EQ(ReadNvmlPersistenceModes(ACCEL_FAKE_NVML, {"0000:1b:00.0"}).size(), 1u);
  }
  // ...and the backend's NVML is still initialised afterwards.
  DeviceReading r = backend->Read(1);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.sample.sm_clock_mhz, 1980);
}

TEST_F(NvmlExtraReadsTest, TrySessionNeverThrows) {
  UseConfig({Gpu(0)});
  EXPECT_EQ(TryNvmlSession("", nullptr), nullptr);
  EXPECT_EQ(TryNvmlSession("/nonexistent/libnvidia-ml.so.1", nullptr), nullptr);
  EXPECT_EQ(TryNvmlSession("libc.so.6", nullptr), nullptr);  // not NVML: symbols missing
  EXPECT_EQ(TryNvmlSession(ACCEL_FAKE_NVML, [](const NvmlApi&) { return false; }), nullptr);
  UseConfig({Gpu(0)}, {{"init_error", "DRIVER_NOT_LOADED"}});
  EXPECT_EQ(TryNvmlSession(ACCEL_FAKE_NVML, nullptr), nullptr);
}

TEST_F(NvmlExtraReadsTest, OpenSessionErrorsNameTheLibraryAndTheFix) {
  NvmlSessionOptions options;
  options.also_required = [](const NvmlApi&) { return std::vector<std::string>{"nvmlFutureCall"}; };
  options.missing_what = "symbols missing for the test";
  options.missing_fix = "upgrade";
  UseConfig({Gpu(0)});
  try {
    OpenNvmlSession(ACCEL_FAKE_NVML, options, "fix it");
    FAIL() << "no error";
  } catch (const BackendError& e) {
    EXPECT_THAT(e.what(), HasSubstr("libnvidia-ml.so.1): symbols missing for the test: "
                                    "nvmlFutureCall (upgrade)"));
  }
  EXPECT_THROW(OpenNvmlSession("/nonexistent/libnvidia-ml.so.1", {}, "fix it"), BackendError);
  UseConfig({Gpu(0)}, {{"init_error", "DRIVER_NOT_LOADED"}});
  try {
    OpenNvmlSession(ACCEL_FAKE_NVML, {}, "fix it");
    FAIL() << "no error";
  } catch (const BackendError& e) {
    EXPECT_THAT(e.what(), HasSubstr("nvmlInitWithFlags failed: Driver Not Loaded (the NVIDIA "
                                    "kernel driver is not loaded"));
  }
}

TEST_F(NvmlExtraReadsTest, MigControlOpensThroughTheSameSession) {
  json gpu = Gpu(0);
  gpu["mig"] = {{"mode", 1}};
  UseConfig({gpu, Gpu(1)});
  MigGpus gpus = OpenNvmlMigControl(ACCEL_FAKE_NVML);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_TRUE(gpus[0]->mig_capable());
  EXPECT_TRUE(gpus[0]->Mode().current);
  EXPECT_FALSE(gpus[1]->mig_capable());
}

}  // namespace
}  // namespace accel::devices
