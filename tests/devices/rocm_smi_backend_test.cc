// OpenRocmSmi against the fake librocm_smi64.so.1 (tests/fakes/rocm_smi), driven by JSON written
// to a temp file, with a temp sysfs tree for the clocks.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "devices/amd_sysfs.h"
#include "devices/backend.h"

namespace accel::devices {
namespace rocm_smi_backend_test {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class RocmSmiBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "accel-rsmi-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    sysfs_ = dir_ / "sys";
    fs::create_directories(sysfs_);
    setenv("ACCEL_SYSFS_ROOT", sysfs_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("FAKE_ROCM_SMI_CONFIG");
    unsetenv("ACCEL_SYSFS_ROOT");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// Writes `json` as the fake's config and points FAKE_ROCM_SMI_CONFIG at it.
  void Config(const std::string& json) {
    const fs::path path = dir_ / "rsmi.json";
    std::ofstream(path) << json;
    setenv("FAKE_ROCM_SMI_CONFIG", path.c_str(), 1);
  }

  /// Builds the sysfs layout amdgpu has: bus/pci/devices/<bdf>/drm/cardN, and class/drm/cardN/
  /// device -> the PCI device directory, holding the DPM tables.
  void SysfsCard(const std::string& bdf, int card, const std::string& sclk, const std::string& mclk) {
    const fs::path pci = sysfs_ / "bus/pci/devices" / bdf;
    fs::create_directories(pci / "drm" / ("card" + std::to_string(card)));
    fs::create_directories(pci / "drm" / ("renderD" + std::to_string(128 + card)));
    const fs::path cls = sysfs_ / "class/drm" / ("card" + std::to_string(card));
    fs::create_directories(cls);
    fs::create_directory_symlink(fs::relative(pci, cls), cls / "device");
    if (!sclk.empty()) std::ofstream(pci / "pp_dpm_sclk") << sclk;
    if (!mclk.empty()) std::ofstream(pci / "pp_dpm_mclk") << mclk;
  }

  std::unique_ptr<DeviceBackend> Open() { return OpenRocmSmi(ACCEL_FAKE_ROCM_SMI); }

  fs::path dir_, sysfs_;
};

// Two MI210-class devices: device 0 reports everything, device 1 only identity.
const char* kTwoDevices = R"({
  "driver_version": "6.8.5",
  "devices": [
    {"name": "AMD Instinct MI210", "brand": "MI210", "device_id": "0x740f",
     "unique_id": "0x4c3a5e1f0b7d2900", "pci_bdf": "0000:0C:00.0", "serial": "692251001120",
     "render_minor": 128, "vbios": "113-D67301-063",
     "values": {
       "busy_percent": 37, "memory_busy_percent": 12,
       "temperature_mdeg": {"edge": 48000, "junction": 61500, "memory": 55000},
       "power_average_uw": 212500000, "power_cap_uw": 300000000,
       "energy": {"counter": 1000000, "resolution_uj": 15.25},
       "memory": {"vram_total": 68702699520, "vram_used": 17179869184},
       "pcie_replay_count": 3,
       "ecc": {"umc": {"correctable": 3, "uncorrectable": 1}, "gfx": {"correctable": 4, "uncorrectable": 0}}
     }},
    {"brand": "MI210", "pci_bdf": "0000:2f:00.0", "render_minor": 129,
     "unsupported": ["rsmi_dev_name_get"]}
  ]
})";

TEST_F(RocmSmiBackendTest, DefaultSearchFindsNoLibraryOnThisMachine) {
  EXPECT_EQ(OpenRocmSmi(""), nullptr);
}

TEST_F(RocmSmiBackendTest, ExplicitMissingLibraryThrows) {
  try {
    OpenRocmSmi("/nonexistent/librocm_smi64.so.1");
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/librocm_smi64.so.1"), std::string::npos);
  }
}

TEST_F(RocmSmiBackendTest, MalformedConfigFailsInitWithOneLine) {
  Config("{\"devices\": [");
  testing::internal::CaptureStderr();
  try {
    Open();
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rsmi_init failed"), std::string::npos) << what;
    EXPECT_NE(what.find("RSMI_STATUS_INIT_ERROR"), std::string::npos) << what;
    EXPECT_NE(what.find("amdgpu"), std::string::npos) << what;  // the hint
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("fake ROCm SMI: " + (dir_ / "rsmi.json").string() + ": not valid JSON"),
            std::string::npos)
      << err;
}

TEST_F(RocmSmiBackendTest, UnknownValueKeyIsAConfigError) {
  Config(R"({"devices": [{"values": {"bussy_percent": 3}}]})");
  testing::internal::CaptureStderr();
  EXPECT_THROW(Open(), BackendError);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("devices[0].values.bussy_percent: unknown value"),
            std::string::npos);
}

TEST_F(RocmSmiBackendTest, NoConfigMeansNoDevices) {
  auto backend = Open();
  ASSERT_NE(backend, nullptr);
  EXPECT_TRUE(backend->devices().empty());
  EXPECT_EQ(backend->vendor(), Vendor::kAmd);
  EXPECT_NE(backend->library_path().find("librocm_smi64.so.1"), std::string::npos);
}

TEST_F(RocmSmiBackendTest, Identities) {
  Config(kTwoDevices);
  auto backend = Open();
  ASSERT_EQ(backend->devices().size(), 2u);
  EXPECT_EQ(backend->driver_version(), "6.8.5");
  const DeviceIdentity& a = backend->devices()[0];
  EXPECT_EQ(a.vendor, Vendor::kAmd);
  EXPECT_EQ(a.index, 0u);
  EXPECT_EQ(a.uuid, "GPU-4c3a5e1f0b7d2900");
  EXPECT_EQ(a.model, "AMD Instinct MI210");
  EXPECT_EQ(a.pci_address, "0000:0c:00.0");
  EXPECT_EQ(a.serial, "692251001120");
  EXPECT_EQ(a.minor, 128);
  EXPECT_EQ(a.driver_version, "6.8.5");
  EXPECT_EQ(a.firmware_version, "113-D67301-063");
  EXPECT_EQ(a.numa_node, -1);
  const DeviceIdentity& b = backend->devices()[1];
  EXPECT_EQ(b.index, 1u);
  EXPECT_EQ(b.uuid, "");        // no unique id
  EXPECT_EQ(b.model, "MI210");  // name unsupported: brand
  EXPECT_EQ(b.pci_address, "0000:2f:00.0");
  EXPECT_EQ(b.serial, "");
  EXPECT_EQ(b.minor, 129);
}

TEST_F(RocmSmiBackendTest, SamplesEveryField) {
  Config(kTwoDevices);
  SysfsCard("0000:0c:00.0", 1, "0: 500Mhz\n1: 1200Mhz *\n2: 1700Mhz\n",
            "0: 400Mhz\n1: 1600Mhz *\n");
  auto backend = Open();
  DeviceReading r = backend->Read(0);
  EXPECT_FALSE(r.lost);
  EXPECT_EQ(r.error, "");
  const Sample& s = r.sample;
  EXPECT_DOUBLE_EQ(s.gpu_utilization.value(), 0.37);
  EXPECT_DOUBLE_EQ(s.memory_utilization.value(), 0.12);
  EXPECT_DOUBLE_EQ(s.temperature_c.value(), 61.5);  // junction, not edge
  EXPECT_DOUBLE_EQ(s.memory_temperature_c.value(), 55.0);
  EXPECT_DOUBLE_EQ(s.power_w.value(), 212.5);
  EXPECT_DOUBLE_EQ(s.power_limit_w.value(), 300.0);
  EXPECT_EQ(s.energy_mj.value(), 15250u);  // 1e6 counts x 15.25 uJ
  EXPECT_EQ(s.memory_total_bytes.value(), 68702699520u);
  EXPECT_EQ(s.memory_used_bytes.value(), 17179869184u);
  EXPECT_EQ(s.memory_free_bytes.value(), 68702699520u - 17179869184u);
  EXPECT_EQ(s.pcie_replays.value(), 3u);
  EXPECT_EQ(s.ecc_correctable.value(), 7u);  // umc 3 + gfx 4
  EXPECT_EQ(s.ecc_uncorrectable.value(), 1u);
  EXPECT_DOUBLE_EQ(s.sm_clock_mhz.value(), 1200.0);
  EXPECT_DOUBLE_EQ(s.memory_clock_mhz.value(), 1600.0);
  // Nothing AMD has no source for is invented.
  EXPECT_FALSE(s.encoder_utilization || s.sm_active || s.memory_reserved_bytes ||
               s.remapped_rows_correctable || s.row_remap_pending || s.vgpu_license_status);
}

TEST_F(RocmSmiBackendTest, UnsupportedFieldsStayAbsent) {
  Config(kTwoDevices);
  auto backend = Open();  // no sysfs card for device 1 either
  DeviceReading r = backend->Read(1);
  EXPECT_FALSE(r.lost);
  EXPECT_EQ(r.error, "");
  const Sample& s = r.sample;
  EXPECT_FALSE(s.gpu_utilization || s.memory_utilization || s.temperature_c ||
               s.memory_temperature_c || s.power_w || s.power_limit_w || s.energy_mj ||
               s.memory_total_bytes || s.memory_used_bytes || s.memory_free_bytes ||
               s.pcie_replays || s.ecc_correctable || s.ecc_uncorrectable || s.sm_clock_mhz ||
               s.memory_clock_mhz);
}

TEST_F(RocmSmiBackendTest, FallsBackToEdgeTemperatureAndSocketPower) {
  Config(R"({"devices": [{"pci_bdf": "0000:0c:00.0", "values": {
      "temperature_mdeg": {"edge": 48000}, "socket_power_uw": 640000000}}]})");
  auto backend = Open();
  for (int i = 0; i < 2; ++i) {
    Sample s = backend->Read(0).sample;
    EXPECT_DOUBLE_EQ(s.temperature_c.value(), 48.0);
    EXPECT_DOUBLE_EQ(s.power_w.value(), 640.0);
  }
}

TEST_F(RocmSmiBackendTest, TransientJunctionErrorDoesNotSwitchToEdge) {
  Config(R"({"devices": [{"pci_bdf": "0000:0c:00.0",
    "values": {"temperature_mdeg": {"edge": 48000, "junction": 61000}},
    "faults": [{"function": "rsmi_dev_temp_metric_get", "status": 3, "times": 1}]}]})");
  auto backend = Open();
  EXPECT_FALSE(backend->Read(0).sample.temperature_c);
  EXPECT_DOUBLE_EQ(backend->Read(0).sample.temperature_c.value(), 61.0);
}

TEST_F(RocmSmiBackendTest, UnsupportedAnswerIsCachedPerDevice) {
  // The first busy-percent call says NOT_SUPPORTED, later ones would answer: the backend must
  // not ask again, while the other device keeps its value.
  Config(R"({"devices": [
    {"pci_bdf": "0000:0c:00.0", "values": {"busy_percent": 50},
     "faults": [{"function": "rsmi_dev_busy_percent_get", "status": 2, "times": 1}]},
    {"pci_bdf": "0000:2f:00.0", "values": {"busy_percent": 60}}]})");
  auto backend = Open();
  EXPECT_FALSE(backend->Read(0).sample.gpu_utilization);
  EXPECT_FALSE(backend->Read(0).sample.gpu_utilization);
  EXPECT_DOUBLE_EQ(backend->Read(1).sample.gpu_utilization.value(), 0.6);
}

TEST_F(RocmSmiBackendTest, TransientErrorIsReportedThenClears) {
  Config(R"({"devices": [{"pci_bdf": "0000:0c:00.0", "values": {"busy_percent": [10, 20]},
     "faults": [{"function": "rsmi_dev_busy_percent_get", "status": 4, "times": 1}]}]})");
  auto backend = Open();
  DeviceReading first = backend->Read(0);
  EXPECT_FALSE(first.sample.gpu_utilization);
  EXPECT_NE(first.error.find("rsmi_dev_busy_percent_get: RSMI_STATUS_PERMISSION"), std::string::npos)
      << first.error;
  EXPECT_DOUBLE_EQ(backend->Read(0).sample.gpu_utilization.value(), 0.1);  // lists cycle per read
  EXPECT_DOUBLE_EQ(backend->Read(0).sample.gpu_utilization.value(), 0.2);
  EXPECT_DOUBLE_EQ(backend->Read(0).sample.gpu_utilization.value(), 0.1);
}

TEST_F(RocmSmiBackendTest, LostDeviceIsStickyWhileOthersKeepReading) {
  // Identity worked at open (call 1); from then on the device's files are gone.
  Config(R"({"devices": [
    {"pci_bdf": "0000:0c:00.0", "device_id": "0x740f", "values": {"busy_percent": 50},
     "faults": [{"function": "rsmi_dev_id_get", "status": 3, "after_calls": 1, "times": 1}]},
    {"pci_bdf": "0000:2f:00.0", "device_id": "0x740f", "values": {"busy_percent": 60}}]})");
  auto backend = Open();
  DeviceReading lost = backend->Read(0);
  EXPECT_TRUE(lost.lost);
  EXPECT_FALSE(lost.sample.gpu_utilization);
  EXPECT_FALSE(lost.error.empty());
  EXPECT_TRUE(backend->Read(0).lost);  // sticky although the probe would answer again
  DeviceReading other = backend->Read(1);
  EXPECT_FALSE(other.lost);
  EXPECT_DOUBLE_EQ(other.sample.gpu_utilization.value(), 0.6);
}

TEST_F(RocmSmiBackendTest, DeviceLostAfterATimeIsReportedLost) {
  Config(R"({"devices": [
    {"pci_bdf": "0000:0c:00.0", "values": {"busy_percent": 50}, "lost": {"after_ms": 300}},
    {"pci_bdf": "0000:2f:00.0", "values": {"busy_percent": 60}}]})");
  auto backend = Open();
  std::this_thread::sleep_for(milliseconds(350));
  EXPECT_TRUE(backend->Read(0).lost);
  EXPECT_DOUBLE_EQ(backend->Read(1).sample.gpu_utilization.value(), 0.6);
}

// As NvmlBackendTest.HangingCallBlocksOnlyItsDevice: no clock, a hang that outlasts the test
// (a day), the child process exits with the hung thread in it, and the alarm makes a Read(1)
// that waits for the hang a failure. The read's latency is measured in bench/devices_bench.cc.
TEST_F(RocmSmiBackendTest, HungCallStallsOnlyItsDevice) {
  Config(R"({"devices": [
    {"pci_bdf": "0000:0c:00.0", "values": {"busy_percent": 50},
     "faults": [{"function": "rsmi_dev_busy_percent_get", "hang_ms": 86400000}]},
    {"pci_bdf": "0000:2f:00.0", "values": {"busy_percent": 60}}]})");
  // fork() here, before this test starts a thread: the child sees the config written above and
  // leaves no files behind ("threadsafe" would re-run the fixture's SetUp in a fresh process).
  GTEST_FLAG_SET(death_test_style, "fast");
  EXPECT_EXIT(
      {
        alarm(120);
        DeviceBackend* backend = Open().release();  // never destroyed: a thread stays hung in it
        if (backend == nullptr) std::_Exit(10);
        static std::atomic<bool> hung_read_returned{false};
        std::thread([backend] {
          backend->Read(0);
          hung_read_returned = true;
        }).detach();
        for (int i = 0; i < 20; ++i) {  // ~200 ms: most overlap the hung read
          if (backend->Read(1).sample.gpu_utilization.value_or(0) != 0.6) std::_Exit(11);
          std::this_thread::sleep_for(milliseconds(10));
        }
        std::_Exit(hung_read_returned ? 12 : 0);  // 12: the "hung" call did not hang
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(RocmSmiBackendTest, HealthEventsCarryTheEventType) {
  Config(R"({"devices": [{"pci_bdf": "0000:0c:00.0"}, {"pci_bdf": "0000:2f:00.0"}],
    "events": [{"at_ms": 0, "device": 1, "type": 2, "message": "thermal"},
               {"at_ms": 100, "device": 0, "type": 3}]})");
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
  EXPECT_EQ(events[0].code, 2u);  // RSMI_EVT_NOTIF_THERMAL_THROTTLE
  EXPECT_EQ(events[0].vendor, Vendor::kAmd);
  EXPECT_FALSE(events[0].gpu_instance_id);
  EXPECT_EQ(events[1].device_index, 0u);
  EXPECT_EQ(events[1].code, 3u);  // GPU_PRE_RESET
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(backend->WaitEvents(milliseconds(50)).empty());
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(40));
}

TEST_F(RocmSmiBackendTest, TwoBackendsShareTheRefCountedLibrary) {
  Config(kTwoDevices);
  auto first = Open();
  auto second = Open();
  first.reset();
  EXPECT_DOUBLE_EQ(second->Read(0).sample.gpu_utilization.value(), 0.37);
}

TEST_F(RocmSmiBackendTest, ExampleMi300x8Loads) {
  setenv("FAKE_ROCM_SMI_CONFIG", ACCEL_SOURCE_DIR "/tests/fakes/rocm_smi/examples/mi300x-8.json", 1);
  auto backend = Open();
  ASSERT_EQ(backend->devices().size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(backend->devices()[i].model, "AMD Instinct MI300X");
    EXPECT_EQ(backend->devices()[i].minor, static_cast<int>(128 + i));
    DeviceReading r = backend->Read(i);
    EXPECT_TRUE(r.sample.power_w) << i;       // socket power
    EXPECT_TRUE(r.sample.temperature_c) << i;  // junction only
    EXPECT_EQ(r.sample.memory_total_bytes.value(), 206158430208u);
  }
}

TEST(AmdSysfsTest, CurrentDpmLevel) {
  EXPECT_DOUBLE_EQ(amd_sysfs::CurrentDpmLevelMhz("0: 500Mhz\n1: 800Mhz *\n2: 1700Mhz\n").value(), 800);
  EXPECT_DOUBLE_EQ(amd_sysfs::CurrentDpmLevelMhz("S: 19Mhz *\n0: 500Mhz\n").value(), 19);
  EXPECT_FALSE(amd_sysfs::CurrentDpmLevelMhz("0: 500Mhz\n1: 800Mhz\n"));
  EXPECT_FALSE(amd_sysfs::CurrentDpmLevelMhz("garbage *"));
  EXPECT_FALSE(amd_sysfs::CurrentDpmLevelMhz(""));
}

}  // namespace
}  // namespace accel::devices
