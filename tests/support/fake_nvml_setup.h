// Setting up the fake libnvidia-ml.so.1 (docs/fake-nvml.md) in a test process: a per-test config
// file named in FAKE_NVML_CONFIG (the fake reads it at the next init from zero), MIG fixtures
// built from it, and a compact text form of a GPU's MIG layout for assertions.
//
// Header-only; test code, not thread-safe (setenv).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "devices/mig_control.h"

namespace accel::test_support {

/// A file name under the test temp dir unique to this process and test:
/// "<suite>_<pid>_<test><suffix>".
inline std::string PerTestTempPath(const std::string& suffix) {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  return ::testing::TempDir() + test->test_suite_name() + "_" + std::to_string(getpid()) + "_" +
         test->name() + suffix;
}

/// Writes a fake NVML config and points FAKE_NVML_CONFIG at it for the object's lifetime; the
/// destructor unsets FAKE_NVML_CONFIG and FAKE_NVML_STATE_OUT and removes the file. Close every
/// NVML user (backend, MigGpus) before the next Write or the destructor: the fake only re-reads
/// the file when its init count goes from zero.
class FakeNvmlConfigFile {
 public:
  FakeNvmlConfigFile() = default;
  ~FakeNvmlConfigFile() { Clear(); }
  FakeNvmlConfigFile(const FakeNvmlConfigFile&) = delete;
  FakeNvmlConfigFile& operator=(const FakeNvmlConfigFile&) = delete;

  /// Writes {"devices": devices} (or `config` whole) and sets FAKE_NVML_CONFIG.
  void WriteDevices(const std::vector<nlohmann::json>& devices) {
    Write(nlohmann::json{{"devices", devices}});
  }
  void Write(const nlohmann::json& config) {
    if (path_.empty()) path_ = PerTestTempPath(".json");
    std::ofstream(path_) << config.dump();
    setenv("FAKE_NVML_CONFIG", path_.c_str(), 1);
  }
  void Clear() {
    unsetenv("FAKE_NVML_CONFIG");
    unsetenv("FAKE_NVML_STATE_OUT");
    if (!path_.empty()) std::remove(path_.c_str());
    path_.clear();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// H100 80GB number `i` at bus 0x1B + i ("00000000:1B:00.0", ...) with UUID
/// "GPU-0000000<i>-aaaa-bbbb-cccc-dddddddddddd"; `mig` becomes its "mig" object when given.
inline nlohmann::json FakeGpu(int i, nlohmann::json mig = nullptr) {
  char bus[32];
  std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x1b + i);
  std::string uuid = "GPU-0000000" + std::to_string(i) + "-aaaa-bbbb-cccc-dddddddddddd";
  nlohmann::json gpu = {{"uuid", uuid}, {"name", "NVIDIA H100 80GB HBM3"}, {"pci_bus_id", bus}};
  if (!mig.is_null()) gpu["mig"] = mig;
  return gpu;
}

/// One compute instance `ci` of GPU instance `gi` (GI profile id, first memory slice), UUID
/// "MIG-<gi>-<ci>"; `slices` compute slices (0: the whole GI) and `processes` synthetic
/// processes on it (they make destroying it answer IN_USE).
inline nlohmann::json FakeCi(unsigned gi, unsigned ci, unsigned profile,
                                          unsigned start, int slices = 0, int processes = 0) {
  nlohmann::json out = {{"gpu_instance_id", gi},
                        {"compute_instance_id", ci},
                        {"profile_id", profile},
                        {"placement_start", start},
                        {"uuid", "MIG-" + std::to_string(gi) + "-" + std::to_string(ci)}};
  if (slices > 0) out["compute_slices"] = slices;
  if (processes > 0) out["processes"] = processes;
  return out;
}

/// "profile-id@start[ci slices]" per GPU instance, in start order, e.g. "9@0[111] 19@4[1]";
/// busy instances get a trailing "*" when `mark_busy`.
inline std::string MigLayout(devices::MigControl& gpu, bool mark_busy = false) {
  std::string out;
  for (const devices::MigGpuInstanceInfo& gi : gpu.GpuInstances()) {
    out += (out.empty() ? "" : " ") + std::to_string(gi.profile_id) + "@" +
           std::to_string(gi.start) + "[";
    for (const auto& ci : gi.compute_instances) out += std::to_string(ci.slices);
    out += mark_busy && gi.busy ? "]*" : "]";
  }
  return out;
}

/// A test that opens MigControl on the fake: Open(devices) writes the config and opens every
/// GPU into gpus_; TearDown closes them (nvmlShutdown) before the config goes away.
class FakeNvmlMigTest : public ::testing::Test {
 protected:
  void TearDown() override {
    gpus_.clear();
    config_.Clear();
  }
  void Open(const std::vector<nlohmann::json>& devices) {
    config_.WriteDevices(devices);
    gpus_ = devices::OpenNvmlMigControl(ACCEL_FAKE_NVML);
  }

  FakeNvmlConfigFile config_;
  devices::MigGpus gpus_;
};

}  // namespace accel::test_support
