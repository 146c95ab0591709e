// Builders for fake NVML configs (docs/fake-nvml.md) shared by the exporter's end-to-end tests.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace accel::test_support {

/// A non-MIG H100 at `pci` ("00000000:1B:00.0") with constant values, so a test can compare what
/// Prometheus returns with what the fake served:
///   temperature 40+i °C, power (250500 + 1000 i) mW, SM clock 1755 MHz, GPU util 70+i %,
///   FB used (20480 + 1024 i) MiB of 81559, reserved 512, GPM tensor (30+i) %.
inline nlohmann::json FakeH100(int i, const std::string& pci) {
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-00000000-1111-2222-3333-%012d", i);
  return {
      {"uuid", uuid},
      {"name", "NVIDIA H100 80GB HBM3"},
      {"pci_bus_id", pci},
      {"serial", "16549220000" + std::to_string(i)},
      {"minor", i},
      {"metrics",
       {{"temperature_c", 40 + i},
        {"memory_temperature_c", 50 + i},
        {"power_mw", 250500 + 1000 * i},
        {"enforced_power_limit_mw", 700000},
        {"energy_mj", 1000000},
        {"sm_clock_mhz", 1755},
        {"memory_clock_mhz", 2619},
        {"gpu_util_pct", 70 + i},
        {"memory_util_pct", 30},
        {"encoder_util_pct", 0},
        {"decoder_util_pct", 0},
        {"memory_total_mib", 81559},
        {"memory_used_mib", 20480 + 1024 * i},
        {"memory_reserved_mib", 512},
        {"pcie_replays", 0},
        {"remapped_rows_correctable", 0},
        {"remapped_rows_uncorrectable", 0},
        {"remap_failure", 0},
        {"remap_pending", 0}}},
      {"gpm", {{"supported", true}, {"metrics", {{"graphics_util", 60 + i}, {"sm_util", 55},
                                                 {"any_tensor_util", 30 + i}, {"dram_bw_util", 20}}}}},
  };
}

/// UUID of FakeH100(i, ...).
inline std::string FakeH100Uuid(int i) { return FakeH100(i, "00000000:1B:00.0")["uuid"]; }

/// Turns a FakeH100 into a MIG-mode GPU with `count` 1g.10gb instances (GI ids 7.., MIG UUIDs
/// "MIG-<i>-<n>"-style), each with (1024 × (n+1)) MiB used.
inline void MakeMig(nlohmann::json* gpu, int i, int count) {
  nlohmann::json instances = nlohmann::json::array();
  for (int n = 0; n < count; ++n) {
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "MIG-00000000-4444-5555-%04d-%012d", i, n);
    instances.push_back({{"gpu_instance_id", 7 + n},
                         {"compute_instance_id", 0},
                         {"profile_id", 19},
                         {"placement_start", n},
                         {"uuid", uuid},
                         {"metrics", {{"memory_used_mib", 1024 * (n + 1)}}},
                         {"gpm", {{"graphics_util", 40}, {"any_tensor_util", 20 + n}}}});
  }
  (*gpu)["mig"] = {{"mode", 1}, {"instances", instances}};
}

/// MIG UUID of instance n of MakeMig(gpu i).
inline std::string FakeMigUuid(int i, int n) {
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "MIG-00000000-4444-5555-%04d-%012d", i, n);
  return uuid;
}

/// PCI bus IDs of the eight GPUs of fixtures/hosts/hgx-h100.json, NVML spelling (node 0: 0-3).
inline const char* const kHgxH100Gpus[8] = {
    "00000000:1B:00.0", "00000000:43:00.0", "00000000:52:00.0", "00000000:61:00.0",
    "00000000:9D:00.0", "00000000:C3:00.0", "00000000:D1:00.0", "00000000:DF:00.0"};

/// A whole config around `devices`.
inline nlohmann::json FakeNvmlConfig(const nlohmann::json& devices) {
  return {{"driver_version", "580.95.05"}, {"devices", devices}};
}

}  // namespace accel::test_support
