// devices_bench: reading one device while another device's call hangs in the vendor library (a
// wedged GPU), on the fake NVML and ROCm SMI the tests use (see docs/benchmarks.md, "Device
// reads beside a hung device").
//
//   build/bench/devices_bench [--benchmark_filter=Nvml]
//
// The tests check only that such a read returns while the hang lasts
// (tests/devices/nvml_backend_test.cc HangingCallBlocksOnlyItsDevice, rocm_smi_backend_test.cc
// HungCallStallsOnlyItsDevice); how long it takes is measured here. Target: the same as with
// nothing hung (a wedged device costs the others nothing), and far below the 250 ms (NVML) and
// 300 ms (ROCm SMI) those tests once asserted.
//
// Each vendor has one backend for the whole run, on the shipped example config of 8 devices
// with device 0's power call set to hang: the fakes keep global state, and a thread hung in a
// library never comes back, so the backend is never destroyed. The "device0_hung:0" benchmark
// runs first and never touches device 0; "device0_hung:1" first parks a thread inside Read(0).
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "devices/backend.h"

namespace {

using accel::devices::DeviceBackend;
using nlohmann::json;
namespace fs = std::filesystem;

/// A fresh directory for the fakes' configs (and an empty sysfs root for ROCm SMI's clocks).
const fs::path& WorkDir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("accel-devices-bench-" + std::to_string(getpid()));
    fs::remove_all(d);
    fs::create_directories(d / "sys");
    return d;
  }();
  return dir;
}

/// `example` (a shipped fake config) with `fault` added to device 0, written to the work dir;
/// returns its path.
std::string ConfigWithHungDeviceZero(const std::string& example, const json& fault) {
  std::ifstream in(std::string(ACCEL_SOURCE_DIR) + "/" + example);
  json config = json::parse(in);
  json& device0 = config.at("devices").at(0);
  if (!device0.contains("faults")) device0["faults"] = json::array();
  device0["faults"].push_back(fault);
  const fs::path path = WorkDir() / fs::path(example).filename();
  std::ofstream(path) << config.dump();
  return path.string();
}

DeviceBackend* OpenOrDie(std::unique_ptr<DeviceBackend> backend, const char* what) {
  if (backend == nullptr || backend->devices().size() < 2) {
    std::fprintf(stderr, "devices_bench: cannot open %s with two devices or more\n", what);
    std::exit(1);
  }
  return backend.release();  // never destroyed: see the header comment
}

DeviceBackend* Nvml() {
  static DeviceBackend* backend = [] {
    setenv("FAKE_NVML_CONFIG",
           ConfigWithHungDeviceZero("tests/fakes/nvml/examples/h100x8-mig.json",
                                    {{"function", "nvmlDeviceGetPowerUsage"}, {"hang_ms", "forever"}})
               .c_str(),
           1);
    return OpenOrDie(accel::devices::OpenNvml(ACCEL_FAKE_NVML), "the fake NVML");
  }();
  return backend;
}

DeviceBackend* RocmSmi() {
  static DeviceBackend* backend = [] {
    // The ROCm fake takes a number: a day outlasts any run.
    setenv("FAKE_ROCM_SMI_CONFIG",
           ConfigWithHungDeviceZero("tests/fakes/rocm_smi/examples/mi300x-8.json",
                                    {{"function", "rsmi_dev_busy_percent_get"}, {"hang_ms", 86400000}})
               .c_str(),
           1);
    setenv("ACCEL_SYSFS_ROOT", (WorkDir() / "sys").c_str(), 1);
    return OpenOrDie(accel::devices::OpenRocmSmi(ACCEL_FAKE_ROCM_SMI), "the fake ROCm SMI");
  }();
  return backend;
}

/// Parks a thread inside backend->Read(0), once per backend, and gives it time to get there.
void HangDeviceZero(DeviceBackend* backend) {
  static std::set<DeviceBackend*>* hung = new std::set<DeviceBackend*>();
  if (!hung->insert(backend).second) return;
  std::thread([backend] { backend->Read(0); }).detach();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
}

void ReadDeviceOne(benchmark::State& state, DeviceBackend* backend) {
  if (state.range(0) != 0) HangDeviceZero(backend);
  for (auto _ : state) benchmark::DoNotOptimize(backend->Read(1));
}

void BM_NvmlReadDeviceOne(benchmark::State& state) { ReadDeviceOne(state, Nvml()); }
void BM_RocmSmiReadDeviceOne(benchmark::State& state) { ReadDeviceOne(state, RocmSmi()); }

BENCHMARK(BM_NvmlReadDeviceOne)->ArgName("device0_hung")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RocmSmiReadDeviceOne)->ArgName("device0_hung")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove_all(WorkDir(), ec);
  // Threads are still hung inside the fake libraries: leave without running destructors.
  std::fflush(nullptr);
  std::_Exit(0);
}
