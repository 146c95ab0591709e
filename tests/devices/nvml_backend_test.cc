// The NVML backend against the fake libnvidia-ml.so.1 (tests/fakes/nvml), loaded with dlopen
// exactly as production loads the real library. Each test writes its own fake config.
#include "devices/nvml_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "devices/backend.h"
#include "devices/shared_library.h"

namespace accel::devices {
namespace nvml_backend_test {

using nlohmann::json;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
constexpr double kMiB = 1048576.0;

json Ramp(double start, double per_second) {
  return json::object({{"start", start}, {"per_second", per_second}});
}

// A fully populated H100 at PCI bus 0x1b + i.
json Gpu(int i) {
  char bus[32];
  std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x1b + i);
  return {
      {"uuid", "GPU-0000000" + std::to_string(i) + "-aaaa-bbbb-cccc-dddddddddddd"},
      {"name", "NVIDIA H100 80GB HBM3"},
      {"pci_bus_id", bus},
      {"serial", "16549220000" + std::to_string(i)},
      {"minor", 10 + i},
      {"vbios_version", "96.00.99.00.0" + std::to_string(i)},
      {"metrics",
       {{"sm_clock_mhz", {1980, 1755}},
        {"memory_clock_mhz", 2619},
        {"temperature_c", {34, 36}},
        {"memory_temperature_c", 41},
        {"power_mw", {312500, 250000}},
        {"enforced_power_limit_mw", 700000},
        {"energy_mj", Ramp(1000000, 300000)},
        {"pcie_replays", 2},
        {"gpu_util_pct", {87, 12}},
        {"memory_util_pct", 40},
        {"encoder_util_pct", 3},
        {"decoder_util_pct", 5},
        {"memory_total_mib", 81559},
        {"memory_used_mib", 1024},
        {"memory_reserved_mib", 512},
        {"ecc_sbe_volatile", 7},
        {"ecc_dbe_volatile", 1},
        {"remapped_rows_correctable", 2},
        {"remapped_rows_uncorrectable", 1},
        {"remap_pending", 1},
        {"remap_failure", 0},
        {"nvlink_tx_kib", Ramp(0, 1000000)},
        {"nvlink_rx_kib", Ramp(0, 1000000)}}},
  };
}

json MigJson(unsigned gi, unsigned ci, unsigned profile, const std::string& uuid, double used_mib) {
  return {{"gpu_instance_id", gi},
          {"compute_instance_id", ci},
          {"profile_id", profile},
          {"uuid", uuid},
          {"metrics", {{"memory_used_mib", used_mib}}}};
}

class NvmlBackendTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("FAKE_NVML_CONFIG");
    if (!config_path_.empty()) std::remove(config_path_.c_str());
  }

  // Writes `text` as the fake's config for the next nvmlInit.
  void UseConfigText(const std::string& text) {
    config_path_ = ::testing::TempDir() + "fake_nvml_" + std::to_string(getpid()) + "_" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
    std::ofstream(config_path_) << text;
    setenv("FAKE_NVML_CONFIG", config_path_.c_str(), 1);
  }
  // (A vector, not a json: nlohmann reads a one-element brace list as that element.)
  void UseConfig(const std::vector<json>& devices, json extra = json::object()) {
    extra["driver_version"] = "580.95.05";
    extra["devices"] = devices;
    UseConfigText(extra.dump());
  }
  std::unique_ptr<DeviceBackend> Open() {
    auto backend = OpenNvml(ACCEL_FAKE_NVML);
    EXPECT_NE(backend, nullptr);
    return backend;
  }

  std::string config_path_;
};

TEST_F(NvmlBackendTest, IdentitiesAndCanonicalPci) {
  std::vector<json> gpus = {Gpu(0), Gpu(1)};
  gpus[1]["pci_bus_id"] = "0000:af:00.0";  // the short, lower-case spelling some drivers use
  UseConfig(gpus);
  auto backend = Open();
  EXPECT_EQ(backend->vendor(), Vendor::kNvidia);
  EXPECT_THAT(backend->library_path(), HasSubstr("libnvidia-ml.so.1"));
  EXPECT_EQ(backend->driver_version(), "580.95.05");
  const auto& devices = backend->devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].index, 0u);
  EXPECT_EQ(devices[1].index, 1u);
  EXPECT_EQ(devices[0].uuid, "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd");
  EXPECT_EQ(devices[0].model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(devices[0].pci_address, "0000:1b:00.0");
  EXPECT_EQ(devices[1].pci_address, "0000:af:00.0");
  EXPECT_EQ(devices[0].serial, "165492200000");
  EXPECT_EQ(devices[1].minor, 11);
  EXPECT_EQ(devices[0].driver_version, "580.95.05");
  EXPECT_EQ(devices[1].firmware_version, "96.00.99.00.01");
  EXPECT_EQ(devices[0].numa_node, -1);
}

TEST_F(NvmlBackendTest, EverySampleField) {
  UseConfig({Gpu(0)});
  auto backend = Open();
  DeviceReading r = backend->Read(0);
  const Sample& s = r.sample;
  EXPECT_FALSE(r.lost);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(s.sm_clock_mhz, 1980);
  EXPECT_EQ(s.memory_clock_mhz, 2619);
  EXPECT_EQ(s.temperature_c, 34);
  EXPECT_EQ(s.memory_temperature_c, 41);
  EXPECT_EQ(s.power_w, 312.5);
  EXPECT_EQ(s.power_limit_w, 700);
  ASSERT_TRUE(s.energy_mj);
  EXPECT_GE(*s.energy_mj, 1000000u);
  EXPECT_EQ(s.pcie_replays, 2u);
  EXPECT_EQ(s.gpu_utilization, 0.87);
  EXPECT_EQ(s.memory_utilization, 0.40);
  EXPECT_EQ(s.encoder_utilization, 0.03);
  EXPECT_EQ(s.decoder_utilization, 0.05);
  EXPECT_EQ(s.memory_total_bytes, uint64_t{81559} << 20);
  EXPECT_EQ(s.memory_used_bytes, uint64_t{1024} << 20);
  EXPECT_EQ(s.memory_reserved_bytes, uint64_t{512} << 20);
  EXPECT_EQ(s.memory_free_bytes, uint64_t{81559 - 1024 - 512} << 20);
  EXPECT_EQ(s.ecc_correctable, 7u);
  EXPECT_EQ(s.ecc_uncorrectable, 1u);
  EXPECT_EQ(s.remapped_rows_correctable, 2u);
  EXPECT_EQ(s.remapped_rows_uncorrectable, 1u);
  EXPECT_EQ(s.row_remap_pending, true);
  EXPECT_EQ(s.row_remap_failure, false);
  EXPECT_EQ(s.vgpu_license_status, 0);             // bare metal, like DCGM
  EXPECT_EQ(s.nvlink_bandwidth_mb_per_second, 0);  // first reading has no rate yet
  // No GPM on this GPU; no MIG either.
  EXPECT_FALSE(s.engine_active);
  EXPECT_FALSE(s.pcie_tx_bytes_per_second);
  EXPECT_FALSE(r.mig_enabled);
  EXPECT_TRUE(r.mig.empty());
}

TEST_F(NvmlBackendTest, ValuesChangeBetweenReads) {
  UseConfig({Gpu(0)});
  auto backend = Open();
  Sample first = backend->Read(0).sample;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Sample second = backend->Read(0).sample;
  Sample third = backend->Read(0).sample;
  EXPECT_EQ(second.sm_clock_mhz, 1755);
  EXPECT_EQ(second.power_w, 250);
  EXPECT_EQ(second.gpu_utilization, 0.12);
  EXPECT_EQ(second.temperature_c, 36);
  EXPECT_EQ(third.sm_clock_mhz, 1980);             // lists cycle
  EXPECT_GT(*second.energy_mj, *first.energy_mj);  // ramps grow with time
}

TEST_F(NvmlBackendTest, UnsupportedFieldsAreAbsentAndNotAskedAgain) {
  json gpu = Gpu(0);
  gpu["metrics"].erase("encoder_util_pct");  // never configured
  gpu["not_supported"] = {"temperature_c", "memory_temperature_c", "nvmlDeviceGetPowerUsage"};
  // Asking GetPowerUsage a second time would lose the GPU: proves the answer is cached.
  gpu["faults"] = {
      {{"function", "nvmlDeviceGetPowerUsage"}, {"error", "GPU_IS_LOST"}, {"after_calls", 1}}};
  UseConfig({gpu});
  auto backend = Open();
  for (int i = 0; i < 3; ++i) {
    DeviceReading r = backend->Read(0);
    EXPECT_FALSE(r.lost);
    EXPECT_FALSE(r.sample.temperature_c);
    EXPECT_FALSE(r.sample.memory_temperature_c);
    EXPECT_FALSE(r.sample.power_w);
    EXPECT_FALSE(r.sample.encoder_utilization);
    EXPECT_TRUE(r.sample.decoder_utilization);
    EXPECT_TRUE(r.sample.power_limit_w);
  }
}

TEST_F(NvmlBackendTest, VgpuLicenseStates) {
  json licensed = Gpu(0), unlicensed = Gpu(1), refused = Gpu(2);
  licensed["metrics"]["vgpu_licensed"] = 1;
  unlicensed["metrics"]["vgpu_licensed"] = 0;
  refused["not_supported"] = {"nvmlDeviceGetGridLicensableFeatures_v4"};
  UseConfig({licensed, unlicensed, refused});
  auto backend = Open();
  EXPECT_EQ(backend->Read(0).sample.vgpu_license_status, 1);
  EXPECT_EQ(backend->Read(1).sample.vgpu_license_status, 0);
  EXPECT_EQ(backend->Read(2).sample.vgpu_license_status, 0);
  EXPECT_EQ(backend->Read(2).sample.vgpu_license_status, 0);
}

TEST_F(NvmlBackendTest, OlderDriverFallbacks) {
  json gpu = Gpu(0);
  gpu["faults"] = {{{"function", "nvmlDeviceGetMemoryInfo_v2"}, {"error", "FUNCTION_NOT_FOUND"}},
                   {{"function", "nvmlDeviceGetTemperature"}, {"error", "DEPRECATED"}}};
  gpu["not_supported"] = {"nvmlDeviceGetRemappedRows"};
  UseConfig({gpu});
  auto backend = Open();
  for (int i = 0; i < 2; ++i) {
    Sample s = backend->Read(0).sample;
    EXPECT_EQ(s.memory_total_bytes, uint64_t{81559} << 20);
    EXPECT_EQ(s.memory_used_bytes, uint64_t{1024 + 512} << 20);  // v1 counts reserved as used
    EXPECT_FALSE(s.memory_reserved_bytes);
    EXPECT_TRUE(s.temperature_c);  // from nvmlDeviceGetTemperatureV
    // Remapped rows from fields 142..145.
    EXPECT_EQ(s.remapped_rows_correctable, 2u);
    EXPECT_EQ(s.remapped_rows_uncorrectable, 1u);
    EXPECT_EQ(s.row_remap_pending, true);
    EXPECT_EQ(s.row_remap_failure, false);
  }
}

TEST_F(NvmlBackendTest, GpuLostMidRunOthersStillRead) {
  json lost = Gpu(1);
  lost["faults"] = {
      {{"function", "nvmlDeviceGetPowerUsage"}, {"error", "GPU_IS_LOST"}, {"after_calls", 1}}};
  UseConfig({Gpu(0), lost});
  auto backend = Open();
  EXPECT_FALSE(backend->Read(1).lost);
  DeviceReading r = backend->Read(1);
  EXPECT_TRUE(r.lost);
  EXPECT_THAT(r.error, HasSubstr("GPU is lost"));
  EXPECT_FALSE(r.sample.sm_clock_mhz);  // no half sample
  EXPECT_TRUE(backend->Read(1).lost);   // sticky
  DeviceReading other = backend->Read(0);
  EXPECT_FALSE(other.lost);
  EXPECT_TRUE(other.sample.power_w);
}

// A call hung in the vendor library (a wedged GPU) holds up reads of that device only. The hang
// never ends, so nothing here reads a clock: Read(1) must return, again and again, while Read(0)
// is still inside the library. It runs in a child process (a death test) that exits with the
// hung thread still in it; the alarm turns a Read(1) that waits for the hang into a failure
// instead of a test that never ends. How long Read(1) takes meanwhile is a benchmark
// (bench/devices_bench.cc), not a test.
TEST_F(NvmlBackendTest, HangingCallBlocksOnlyItsDevice) {
  json hung = Gpu(0);
  hung["faults"] = {{{"function", "nvmlDeviceGetPowerUsage"}, {"hang_ms", "forever"}}};
  UseConfig({hung, Gpu(1)});
  // fork() here, before this test starts a thread: the child sees the config written above and
  // leaves no files behind ("threadsafe" would re-run the fixture's SetUp in a fresh process).
  GTEST_FLAG_SET(death_test_style, "fast");
  EXPECT_EXIT(
      {
        alarm(120);
        // Never destroyed: a thread stays in the fake library, so the child leaves by _Exit.
        DeviceBackend* backend = OpenNvml(ACCEL_FAKE_NVML).release();
        if (backend == nullptr) std::_Exit(10);
        static std::atomic<bool> hung_read_returned{false};
        std::thread([backend] {
          backend->Read(0);
          hung_read_returned = true;
        }).detach();
        // Spread over ~200 ms so that most of these reads overlap the hung one, however the
        // threads are scheduled; none of them may wait for it.
        for (int i = 0; i < 20; ++i) {
          if (!backend->Read(1).sample.power_w) std::_Exit(11);
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        std::_Exit(hung_read_returned ? 12 : 0);  // 12: the "hung" call did not hang
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(NvmlBackendTest, MigInstancesAndProfileNames) {
  json gpu = Gpu(0);
  gpu["mig"] = {{"mode", 1},
                {"instances",
                 {MigJson(1, 0, 9, "MIG-aaaa0001", 2048),   // 3g.40gb
                  MigJson(7, 0, 19, "MIG-aaaa0007", 512),   // 1g.10gb
                  MigJson(2, 0, 14, "MIG-aaaa0002", 4096),  // 2g.20gb, two compute instances
                  MigJson(2, 1, 14, "MIG-aaaa0003", 4096)}}};
  json plain = Gpu(1);
  plain["mig"] = {{"mode", 0}};
  UseConfig({gpu, plain, Gpu(2)});
  auto backend = Open();
  for (int pass = 0; pass < 2; ++pass) {  // the second pass uses the cached profile map
    DeviceReading r = backend->Read(0);
    EXPECT_TRUE(r.mig_enabled);
    ASSERT_EQ(r.mig.size(), 3u);  // one per GPU instance
    EXPECT_EQ(r.mig[0].uuid, "MIG-aaaa0001");
    EXPECT_EQ(r.mig[0].gpu_instance_id, 1u);
    EXPECT_EQ(r.mig[0].profile, "3g.40gb");
    EXPECT_EQ(r.mig[0].sample.memory_total_bytes, uint64_t{40448} << 20);
    EXPECT_EQ(r.mig[0].sample.memory_used_bytes, uint64_t{2048} << 20);
    EXPECT_EQ(r.mig[1].profile, "1g.10gb");
    EXPECT_EQ(r.mig[1].gpu_instance_id, 7u);
    EXPECT_EQ(r.mig[2].profile, "2g.20gb");
    EXPECT_EQ(r.mig[2].uuid, "MIG-aaaa0002");
    EXPECT_EQ(r.mig[2].compute_instance_id, 0u);
    EXPECT_FALSE(r.sample.gpu_utilization);  // NVML has no whole-GPU utilisation under MIG
    EXPECT_TRUE(r.sample.power_w);
  }
  EXPECT_FALSE(backend->Read(1).mig_enabled);
  EXPECT_TRUE(backend->Read(1).mig.empty());
  EXPECT_FALSE(backend->Read(2).mig_enabled);  // not MIG-capable at all
}

TEST_F(NvmlBackendTest, GpmRatiosFromTheSecondRead) {
  json gpu = Gpu(0);
  gpu["gpm"] = {{"supported", true},
                {"metrics",
                 {{"graphics_util", 50},
                  {"sm_util", 40},
                  {"any_tensor_util", 30},
                  {"dram_bw_util", 20},
                  {"pcie_tx_per_sec", 100},
                  {"pcie_rx_per_sec", 200}}}};
  json instance = MigJson(7, 0, 19, "MIG-bbbb0007", 100);
  instance["gpm"] = {{"any_tensor_util", 60}, {"graphics_util", 70}};
  gpu["mig"] = {{"mode", 1}, {"instances", {instance}}};
  json old = Gpu(1);
  old["gpm"] = {{"supported", false}};
  old["mig"] = {{"mode", 1}, {"instances", {instance}}};
  json per_gi_only = gpu;  // a driver that samples GPU instances but not the whole GPU in MIG mode
  per_gi_only["not_supported"] = {"nvmlGpmSampleGet"};
  UseConfig({gpu, old, per_gi_only});
  auto backend = Open();
  DeviceReading first = backend->Read(0);
  EXPECT_FALSE(first.sample.engine_active);
  EXPECT_FALSE(first.sample.tensor_active);
  ASSERT_EQ(first.mig.size(), 1u);
  EXPECT_FALSE(first.mig[0].sample.tensor_active);

  DeviceReading second = backend->Read(0);
  EXPECT_DOUBLE_EQ(*second.sample.engine_active, 0.5);
  EXPECT_DOUBLE_EQ(*second.sample.sm_active, 0.4);
  EXPECT_DOUBLE_EQ(*second.sample.tensor_active, 0.3);
  EXPECT_DOUBLE_EQ(*second.sample.dram_active, 0.2);
  EXPECT_DOUBLE_EQ(*second.sample.pcie_tx_bytes_per_second, 100 * kMiB);
  EXPECT_DOUBLE_EQ(*second.sample.pcie_rx_bytes_per_second, 200 * kMiB);
  ASSERT_EQ(second.mig.size(), 1u);
  EXPECT_DOUBLE_EQ(*second.mig[0].sample.tensor_active, 0.6);
  EXPECT_DOUBLE_EQ(*second.mig[0].sample.engine_active, 0.7);
  EXPECT_FALSE(second.mig[0].sample.dram_active);  // not configured for the instance

  backend->Read(1);
  DeviceReading unsupported = backend->Read(1);
  EXPECT_FALSE(unsupported.sample.engine_active);
  EXPECT_FALSE(unsupported.mig.at(0).sample.tensor_active);

  backend->Read(2);
  DeviceReading partial = backend->Read(2);
  EXPECT_FALSE(partial.sample.engine_active);
  EXPECT_DOUBLE_EQ(*partial.mig.at(0).sample.tensor_active, 0.6);
}

TEST_F(NvmlBackendTest, NvlinkRate) {
  UseConfig({Gpu(0)});  // TX and RX each grow 1,000,000 KiB/s
  auto backend = Open();
  EXPECT_EQ(backend->Read(0).sample.nvlink_bandwidth_mb_per_second, 0);
  // The rate is bytes over the field values' own timestamps, so the sleep's length does not
  // matter; a longer one only shrinks any skew between the fake's ramp clock and its timestamps.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::optional<double> rate = backend->Read(0).sample.nvlink_bandwidth_mb_per_second;
  ASSERT_TRUE(rate);
  EXPECT_NEAR(*rate, 2000.0, 100.0);  // (2,000,000 KiB/s) / 1000, DCGM's ~MB/s
}

TEST_F(NvmlBackendTest, XidEvents) {
  json a = Gpu(0), b = Gpu(1), c = Gpu(2);
  a["events"] = {{{"at_ms", 0}, {"xid", 79}}};
  b["events"] = {{{"at_ms", 60}, {"xid", 31}, {"gpu_instance_id", 7}, {"compute_instance_id", 0}}};
  c["supported_event_types"] = 0;  // no XID support: never registered, its event never arrives
  c["events"] = {{{"at_ms", 0}, {"xid", 48}}};
  UseConfig({a, b, c});
  auto backend = Open();
  std::vector<HealthEvent> events;
  // Events fall due 0 and 60 ms after init; the deadline only stops a broken backend from
  // hanging the test, so it is generous (the loop ends as soon as both arrived).
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (events.size() < 2 && Clock::now() < deadline) {
    for (const HealthEvent& e : backend->WaitEvents(std::chrono::milliseconds(200)))
      events.push_back(e);
  }
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].device_index, 0u);
  EXPECT_EQ(events[0].code, 79u);
  EXPECT_FALSE(events[0].gpu_instance_id);
  EXPECT_EQ(events[0].vendor, Vendor::kNvidia);
  EXPECT_EQ(events[1].device_index, 1u);
  EXPECT_EQ(events[1].code, 31u);
  EXPECT_EQ(events[1].gpu_instance_id, 7u);
  // With nothing due, WaitEvents waits out its timeout: a lower bound, which no load can break.
  auto before = Clock::now();
  EXPECT_TRUE(backend->WaitEvents(std::chrono::milliseconds(50)).empty());
  EXPECT_GE(Clock::now() - before, std::chrono::milliseconds(45));
}

TEST_F(NvmlBackendTest, HandleFailureAtOpenIsReportedPerDevice) {
  json gone = Gpu(1);
  gone["faults"] = {{{"function", "nvmlDeviceGetHandleByIndex_v2"}, {"error", "GPU_IS_LOST"}}};
  UseConfig({Gpu(0), gone});
  auto backend = Open();
  ASSERT_EQ(backend->devices().size(), 2u);
  EXPECT_EQ(backend->devices()[1].index, 1u);
  DeviceReading r = backend->Read(1);
  EXPECT_TRUE(r.lost);
  EXPECT_THAT(r.error, HasSubstr("nvmlDeviceGetHandleByIndex_v2"));
  EXPECT_FALSE(backend->Read(0).lost);
}

TEST_F(NvmlBackendTest, MalformedConfigIsABackendErrorNamingTheProblem) {
  UseConfigText("{ \"devices\": [ ");
  ::testing::internal::CaptureStderr();
  try {
    OpenNvml(ACCEL_FAKE_NVML);
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    EXPECT_THAT(e.what(), HasSubstr("nvmlInitWithFlags"));
    EXPECT_THAT(e.what(), HasSubstr("not valid JSON"));
    EXPECT_THAT(e.what(), HasSubstr(config_path_));
  }
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("fake NVML: " + config_path_ + ": "));

  json gpu = Gpu(0);
  gpu["metrics"]["temprature_c"] = 30;
  UseConfig({gpu});
  try {
    OpenNvml(ACCEL_FAKE_NVML);
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    EXPECT_THAT(e.what(), HasSubstr("devices[0].metrics.temprature_c: unknown metric"));
  }
}

TEST_F(NvmlBackendTest, InitFailureCarriesNvmlErrorAndHint) {
  UseConfig({Gpu(0)}, {{"init_error", "DRIVER_NOT_LOADED"}});
  try {
    OpenNvml(ACCEL_FAKE_NVML);
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    EXPECT_THAT(e.what(), HasSubstr("libnvidia-ml.so.1"));
    EXPECT_THAT(e.what(), HasSubstr("nvmlInitWithFlags failed: Driver Not Loaded"));
    EXPECT_THAT(e.what(), HasSubstr("kernel driver is not loaded"));
  }
}

TEST_F(NvmlBackendTest, ExplicitPathThatDoesNotExist) {
  try {
    OpenNvml("/nonexistent/libnvidia-ml.so.1");
    FAIL() << "expected BackendError";
  } catch (const BackendError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/libnvidia-ml.so.1"));
  }
}

// Runs in a fresh process (threadsafe death-test style re-executes the binary): once the fake is
// loaded, the loader would hand it out for the soname "libnvidia-ml.so.1", and it pins itself
// in memory (RTLD_NODELETE) so it is never unloaded.
TEST(NvmlNotInstalledDeathTest, OpenWithoutLibraryIsNull) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        // A machine with a real NVML has nothing to show here.
        bool installed = SharedLibrary({"libnvidia-ml.so.1"}).ok();
        std::_Exit(installed || OpenNvml("") == nullptr ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(NvmlBackendTest, NoConfigMeansZeroGpusAndReinitReadsNewConfig) {
  unsetenv("FAKE_NVML_CONFIG");
  {
    auto backend = Open();
    EXPECT_TRUE(backend->devices().empty());
    EXPECT_TRUE(backend->WaitEvents(std::chrono::milliseconds(5)).empty());
  }
  UseConfig({Gpu(0), Gpu(1), Gpu(2)});
  EXPECT_EQ(Open()->devices().size(), 3u);
}

TEST_F(NvmlBackendTest, ShippedExampleConfigs) {
  for (auto [file, mig_gpus] :
       {std::pair{"h100x8-mig.json", 4u}, std::pair{"h100x8-all-mig.json", 8u}}) {
    SCOPED_TRACE(file);
    setenv("FAKE_NVML_CONFIG",
           (std::string(ACCEL_SOURCE_DIR) + "/tests/fakes/nvml/examples/" + file).c_str(), 1);
    auto backend = Open();
    ASSERT_EQ(backend->devices().size(), 8u);
    EXPECT_EQ(backend->devices()[7].pci_address, "0000:df:00.0");  // fixtures/hosts/hgx-h100.json
    unsigned mig = 0;
    for (size_t i = 0; i < 8; ++i) {
      backend->Read(i);
      DeviceReading r = backend->Read(i);
      EXPECT_EQ(r.error, "");
      EXPECT_TRUE(r.sample.tensor_active);
      EXPECT_TRUE(r.sample.power_w);
      if (!r.mig_enabled) continue;
      ++mig;
      ASSERT_EQ(r.mig.size(), 7u);
      for (const MigInstance& m : r.mig) {
        EXPECT_EQ(m.profile, "1g.10gb");
        EXPECT_TRUE(m.sample.tensor_active);
        EXPECT_TRUE(m.sample.memory_used_bytes);
      }
    }
    EXPECT_EQ(mig, mig_gpus);
  }
}

TEST_F(NvmlBackendTest, ConcurrentReadsOfDistinctDevices) {
  setenv("FAKE_NVML_CONFIG", ACCEL_SOURCE_DIR "/tests/fakes/nvml/examples/h100x8-all-mig.json", 1);
  auto backend = Open();
  std::vector<std::thread> workers;
  std::atomic<int> failures{0};
  for (size_t i = 0; i < backend->devices().size(); ++i) {
    workers.emplace_back([&, i] {
      for (int n = 0; n < 20; ++n) {
        DeviceReading r = backend->Read(i);
        if (r.lost || !r.error.empty() || r.mig.size() != 7) ++failures;
      }
    });
  }
  std::thread events([&] { backend->WaitEvents(std::chrono::milliseconds(20)); });
  for (auto& w : workers) w.join();
  events.join();
  EXPECT_EQ(failures.load(), 0);
}

// ---- The fake itself behaves like NVML (through the same dlsym table the backend uses) ----

class FakeNvmlAbiTest : public NvmlBackendTest {
 protected:
  void SetUp() override {
    json gpu = Gpu(0);
    gpu["mig"] = {{"mode", 1}, {"instances", {MigJson(7, 0, 19, "MIG-cccc0007", 1)}}};
    gpu["processes"] = {{{"pid", 11}, {"used_memory_mib", 1}},
                        {{"pid", 12}, {"used_memory_mib", 2}}};
    UseConfig({gpu, Gpu(1)});
    ASSERT_TRUE(library_.ok()) << library_.error();
    ASSERT_TRUE(api_.Load(library_).empty());
  }
  SharedLibrary library_{{ACCEL_FAKE_NVML}};
  NvmlApi api_;
};

TEST_F(FakeNvmlAbiTest, ExportsEveryFunctionOfTheAbiList) {
#define EXPECT_EXPORTED(name, params) EXPECT_NE(library_.Symbol(#name), nullptr) << #name;
  ACCEL_NVML_FUNCTIONS(EXPECT_EXPORTED)
#undef EXPECT_EXPORTED
  EXPECT_NE(library_.Symbol("nvmlErrorString"), nullptr);
}

TEST_F(FakeNvmlAbiTest, InitIsRefCountedAndRequired) {
  using namespace nvml;
  unsigned count = 0;
  EXPECT_EQ(api_.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(api_.nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(api_.nvmlInit_v2(), NVML_SUCCESS);
  ASSERT_EQ(api_.nvmlInitWithFlags(0), NVML_SUCCESS);
  EXPECT_EQ(api_.nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(api_.nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);  // still one init left
  EXPECT_EQ(count, 2u);
  EXPECT_EQ(api_.nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(api_.nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvmlAbiTest, HandlesVersionsSizesFieldsAndTimeouts) {
  using namespace nvml;
  ASSERT_EQ(api_.nvmlInit_v2(), NVML_SUCCESS);
  nvmlDevice_t gpu0 = nullptr, again = nullptr, gpu1 = nullptr, mig = nullptr, parent = nullptr;
  ASSERT_EQ(api_.nvmlDeviceGetHandleByIndex_v2(0, &gpu0), NVML_SUCCESS);
  ASSERT_EQ(api_.nvmlDeviceGetHandleByIndex_v2(0, &again), NVML_SUCCESS);
  ASSERT_EQ(api_.nvmlDeviceGetHandleByIndex_v2(1, &gpu1), NVML_SUCCESS);
  EXPECT_EQ(api_.nvmlDeviceGetHandleByIndex_v2(2, &again), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(api_.nvmlDeviceGetMigDeviceHandleByIndex(gpu0, 0, &mig), NVML_SUCCESS);
  EXPECT_EQ(api_.nvmlDeviceGetMigDeviceHandleByIndex(gpu0, 1, &again), NVML_ERROR_NOT_FOUND);
  ASSERT_EQ(api_.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, &parent), NVML_SUCCESS);
  EXPECT_EQ(parent, gpu0);
  EXPECT_NE(gpu0, gpu1);
  EXPECT_NE(mig, gpu0);
  nvmlDevice_t by_uuid = nullptr;
  ASSERT_EQ(api_.nvmlDeviceGetHandleByUUID("MIG-cccc0007", &by_uuid), NVML_SUCCESS);
  EXPECT_EQ(by_uuid, mig);

  nvmlMemory_v2_t memory{};
  memory.version = 0x01000028;
  EXPECT_EQ(api_.nvmlDeviceGetMemoryInfo_v2(gpu0, &memory), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  memory.version = nvmlMemory_v2;
  EXPECT_EQ(api_.nvmlDeviceGetMemoryInfo_v2(gpu0, &memory), NVML_SUCCESS);

  char tiny[4];
  EXPECT_EQ(api_.nvmlDeviceGetUUID(gpu0, tiny, sizeof tiny), NVML_ERROR_INSUFFICIENT_SIZE);
  unsigned processes = 0;
  EXPECT_EQ(api_.nvmlDeviceGetComputeRunningProcesses_v3(gpu0, &processes, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(processes, 2u);
  std::vector<nvmlProcessInfo_t> infos(processes);
  EXPECT_EQ(api_.nvmlDeviceGetComputeRunningProcesses_v3(gpu0, &processes, infos.data()),
            NVML_SUCCESS);
  EXPECT_EQ(infos[1].pid, 12u);
  EXPECT_EQ(infos[1].usedGpuMemory, 2u << 20);

  nvmlFieldValue_t fields[2] = {};
  fields[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
  fields[1].fieldId = 9999;
  EXPECT_EQ(api_.nvmlDeviceGetFieldValues(gpu0, 2, fields), NVML_SUCCESS);
  EXPECT_EQ(fields[0].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(fields[0].value.uiVal, 41u);
  EXPECT_EQ(fields[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);

  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(api_.nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_EQ(api_.nvmlDeviceRegisterEvents(gpu0, nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  nvmlEventData_t data{};
  EXPECT_EQ(api_.nvmlEventSetWait_v2(set, &data, 10), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(api_.nvmlEventSetFree(set), NVML_SUCCESS);
  EXPECT_EQ(api_.nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(api_.nvmlDeviceGetMemoryInfo_v2(gpu0, &memory), NVML_ERROR_UNINITIALIZED);
}

}  // namespace
}  // namespace accel::devices
