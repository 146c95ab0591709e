// OpenHlml against the fake libhlml.so (tests/fakes/hlml), driven by JSON written to a temp file.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "devices/backend.h"

namespace accel::devices {
namespace hlml_backend_test {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class HlmlBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "accel-hlml-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    unsetenv("FAKE_HLML_CONFIG");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// Writes `json` as the fake's config and points FAKE_HLML_CONFIG at it.
  void Config(const std::string& json) {
    const fs::path path = dir_ / "hlml.json";
    std::ofstream(path) << json;
    setenv("FAKE_HLML_CONFIG", path.c_str(), 1);
  }

  std::unique_ptr<DeviceBackend> Open() { return OpenHlml(ACCEL_FAKE_HLML); }

  fs::path dir_;
};

// Device 0 reports everything; device 1 spells its bus id with an 8-digit domain, which does
// not fit HLML's 15-byte bus_id, and supports nothing else.
const char* kTwoDevices = R"({
  "driver_version": "1.17.0-495f4a1",
  "devices": [
    {"name": "HL-225", "uuid": "01P0-HL2080A0-15-TNPS30-21-07-10", "serial": "AN45160010",
     "pci_bus_id": "0000:B3:00.0", "minor": 4, "board_id": 6, "firmware_fit": "1.17.0-fw-51.2.0",
     "values": {
       "utilization_aip": 88,
       "memory": {"total": 103079215104, "used": 85899345920},
       "temperature_c": {"on_aip": 52, "on_board": 40},
       "power_mw": 455500, "power_default_limit_mw": 600000,
       "energy_mj": 5000000,
       "clock_mhz": {"soc": 1600},
       "pcie_replay_count": 2,
       "ecc": {"volatile": {"corrected": 5, "uncorrected": 1}, "aggregate": {"corrected": 50, "uncorrected": 9}},
       "replaced_rows": {"single_bit": 3, "double_bit": 1, "pending": 1}
     }},
    {"name": "HL-225", "pci_bus_id": "00000000:19:00.0"}
  ]
})";

TEST_F(HlmlBackendTest, DefaultSearchFindsNoLibraryOnThisMachine) {
  EXPECT_EQ(OpenHlml(""), nullptr);
}

TEST_F(HlmlBackendTest, ExplicitMissingLibraryThrows) {
  try {
    OpenHlml("/nonexistent/libhlml.so");
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libhlml.so"), std::string::npos);
  }
}

TEST_F(HlmlBackendTest, MalformedConfigFailsInitWithOneLine) {
  Config("[1, 2");
  testing::internal::CaptureStderr();
  try {
    Open();
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("hlml_init_with_flags failed: HLML_ERROR_UNKNOWN (49)"), std::string::npos)
        << what;
    EXPECT_NE(what.find("habanalabs"), std::string::npos) << what;  // the hint
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("fake HLML: " + (dir_ / "hlml.json").string() + ": not valid JSON"),
            std::string::npos)
      << err;
}

TEST_F(HlmlBackendTest, MissingConfigFileFailsInit) {
  setenv("FAKE_HLML_CONFIG", (dir_ / "absent.json").c_str(), 1);
  testing::internal::CaptureStderr();
  EXPECT_THROW(Open(), BackendError);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("cannot read the file"), std::string::npos);
}

TEST_F(HlmlBackendTest, NoConfigMeansNoDevices) {
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  EXPECT_TRUE(backend->devices().empty());
  EXPECT_EQ(backend->vendor(), Vendor::kHabana);
  EXPECT_NE(backend->library_path().find("libhlml.so"), std::string::npos);
}

TEST_F(HlmlBackendTest, Identities) {
  Config(kTwoDevices);
  auto backend = Open();
  ASSERT_EQ(backend->devices().size(), 2u);
  EXPECT_EQ(backend->driver_version(), "1.17.0-495f4a1");
  const DeviceIdentity& a = backend->devices()[0];
  EXPECT_EQ(a.vendor, Vendor::kHabana);
  EXPECT_EQ(a.index, 0u);
  EXPECT_EQ(a.uuid, "01P0-HL2080A0-15-TNPS30-21-07-10");
  EXPECT_EQ(a.model, "HL-225");
  EXPECT_EQ(a.pci_address, "0000:b3:00.0");
  EXPECT_EQ(a.serial, "AN45160010");
  EXPECT_EQ(a.minor, 4);
  EXPECT_EQ(a.driver_version, "1.17.0-495f4a1");
  EXPECT_EQ(a.firmware_version, "1.17.0-fw-51.2.0");
  const DeviceIdentity& b = backend->devices()[1];
  EXPECT_EQ(b.index, 1u);
  EXPECT_EQ(b.pci_address, "0000:19:00.0");  // truncated bus_id: rebuilt from domain/bus/device
  EXPECT_EQ(b.uuid, "");
  EXPECT_EQ(b.serial, "");
  EXPECT_EQ(b.minor, 1);  // the fake numbers minors by index when not configured
  EXPECT_EQ(b.firmware_version, "");
}

TEST_F(HlmlBackendTest, SamplesEveryField) {
  Config(kTwoDevices);
  auto backend = Open();
  DeviceReading r = backend->Read(0);
  EXPECT_FALSE(r.lost);
  EXPECT_EQ(r.error, "");
  const Sample& s = r.sample;
  EXPECT_DOUBLE_EQ(s.gpu_utilization.value(), 0.88);
  EXPECT_EQ(s.memory_total_bytes.value(), 103079215104u);
  EXPECT_EQ(s.memory_used_bytes.value(), 85899345920u);
  EXPECT_EQ(s.memory_free_bytes.value(), 103079215104u - 85899345920u);
  EXPECT_DOUBLE_EQ(s.temperature_c.value(), 52.0);  // on-chip (AIP)
  EXPECT_FALSE(s.memory_temperature_c);             // on-board is not HBM
  EXPECT_DOUBLE_EQ(s.power_w.value(), 455.5);
  EXPECT_DOUBLE_EQ(s.power_limit_w.value(), 600.0);
  EXPECT_EQ(s.energy_mj.value(), 5000000u);
  EXPECT_DOUBLE_EQ(s.sm_clock_mhz.value(), 1600.0);
  EXPECT_FALSE(s.memory_clock_mhz);
  EXPECT_EQ(s.pcie_replays.value(), 2u);
  EXPECT_EQ(s.ecc_correctable.value(), 5u);  // volatile, not aggregate
  EXPECT_EQ(s.ecc_uncorrectable.value(), 1u);
  EXPECT_EQ(s.remapped_rows_correctable.value(), 3u);
  EXPECT_EQ(s.remapped_rows_uncorrectable.value(), 1u);
  EXPECT_TRUE(s.row_remap_pending.value());
  EXPECT_FALSE(s.memory_utilization || s.engine_active || s.row_remap_failure);
}

TEST_F(HlmlBackendTest, UnsupportedFieldsStayAbsent) {
  Config(kTwoDevices);
  auto backend = Open();
  DeviceReading r = backend->Read(1);
  EXPECT_FALSE(r.lost);
  EXPECT_EQ(r.error, "");
  const Sample& s = r.sample;
  EXPECT_FALSE(s.gpu_utilization || s.memory_total_bytes || s.memory_used_bytes ||
               s.memory_free_bytes || s.temperature_c || s.power_w || s.power_limit_w ||
               s.energy_mj || s.sm_clock_mhz || s.pcie_replays || s.ecc_correctable ||
               s.ecc_uncorrectable || s.remapped_rows_correctable ||
               s.remapped_rows_uncorrectable || s.row_remap_pending);
}

TEST_F(HlmlBackendTest, UnsupportedAnswerIsCachedAndErrorsAreReported) {
  Config(R"({"devices": [{"pci_bus_id": "0000:b3:00.0",
    "values": {"utilization_aip": [10, 20], "power_mw": 100000},
    "faults": [{"function": "hlml_device_get_utilization_rates", "status": 3, "times": 1},
               {"function": "hlml_device_get_power_usage", "status": 10, "times": 1}]}]})");
  auto backend = Open();
  DeviceReading first = backend->Read(0);
  EXPECT_FALSE(first.sample.gpu_utilization);
  EXPECT_FALSE(first.sample.power_w);
  EXPECT_NE(first.error.find("hlml_device_get_power_usage: HLML_ERROR_TIMEOUT"), std::string::npos)
      << first.error;
  DeviceReading second = backend->Read(0);
  EXPECT_FALSE(second.sample.gpu_utilization);  // NOT_SUPPORTED is remembered
  EXPECT_DOUBLE_EQ(second.sample.power_w.value(), 100.0);  // a timeout is not
  EXPECT_EQ(second.error, "");
}

TEST_F(HlmlBackendTest, AipIsLostIsStickyWhileOthersKeepReading) {
  Config(R"({"devices": [
    {"pci_bus_id": "0000:b3:00.0", "values": {"utilization_aip": 50, "power_mw": 1000},
     "faults": [{"function": "hlml_device_get_power_usage", "status": 15, "after_calls": 1, "times": 1}]},
    {"pci_bus_id": "0000:b4:00.0", "values": {"utilization_aip": 60}}]})");
  auto backend = Open();
  EXPECT_FALSE(backend->Read(0).lost);
  DeviceReading lost = backend->Read(0);
  EXPECT_TRUE(lost.lost);
  EXPECT_FALSE(lost.sample.gpu_utilization);  // nothing half-read from a lost device
  EXPECT_NE(lost.error.find("HLML_ERROR_AIP_IS_LOST"), std::string::npos) << lost.error;
  EXPECT_TRUE(backend->Read(0).lost);  // sticky although the fault has cleared
  DeviceReading other = backend->Read(1);
  EXPECT_FALSE(other.lost);
  EXPECT_DOUBLE_EQ(other.sample.gpu_utilization.value(), 0.6);
}

TEST_F(HlmlBackendTest, DeviceLostAfterATimeIsReportedLost) {
  Config(R"({"devices": [
    {"pci_bus_id": "0000:b3:00.0", "values": {"utilization_aip": 50}, "lost": {"after_ms": 300}},
    {"pci_bus_id": "0000:b4:00.0", "values": {"utilization_aip": 60}}]})");
  auto backend = Open();
  std::this_thread::sleep_for(milliseconds(350));
  EXPECT_TRUE(backend->Read(0).lost);
  EXPECT_DOUBLE_EQ(backend->Read(1).sample.gpu_utilization.value(), 0.6);
}

TEST_F(HlmlBackendTest, HealthEventsCarryTheEventBit) {
  Config(R"({"devices": [{"pci_bus_id": "0000:b3:00.0"}, {"pci_bus_id": "0000:b4:00.0"}],
    "events": [{"at_ms": 0, "device": 1, "type": 2},
               {"at_ms": 0, "device": 0, "type": 4},
               {"at_ms": 50, "device": 0, "type": 16}]})");
  auto backend = Open();
  std::vector<HealthEvent> events;
  // Generous: it only stops a broken backend from hanging the test; the loop ends as soon as
  // both events arrived.
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(60000);
  while (events.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    for (const HealthEvent& e : backend->WaitEvents(milliseconds(500))) events.push_back(e);
  }
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].device_index, 1u);
  EXPECT_EQ(events[0].code, 2u);  // HLML_EVENT_CRITICAL_ERR
  EXPECT_EQ(events[0].vendor, Vendor::kHabana);
  EXPECT_EQ(events[1].device_index, 0u);
  EXPECT_EQ(events[1].code, 16u);  // HLML_EVENT_ECC_SERR
  // The clock-rate event (4) is not subscribed to.
  EXPECT_TRUE(backend->WaitEvents(milliseconds(50)).empty());
}

TEST_F(HlmlBackendTest, ExampleGaudi2x8Loads) {
  setenv("FAKE_HLML_CONFIG", ACCEL_SOURCE_DIR "/tests/fakes/hlml/examples/gaudi2-8.json", 1);
  auto backend = Open();
  ASSERT_EQ(backend->devices().size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(backend->devices()[i].model, "HL-225");
    EXPECT_FALSE(backend->devices()[i].pci_address.empty());
    DeviceReading r = backend->Read(i);
    EXPECT_EQ(r.error, "") << i;
    EXPECT_EQ(r.sample.memory_total_bytes.value(), 103079215104u);
    EXPECT_TRUE(r.sample.power_w) << i;
  }
}

}  // namespace
}  // namespace accel::devices
