// Snapshots built in code for the renderer's tests (and for timing it by hand).
//
// MixedNode(): 8 H100s with one of everything the renderer must handle (see the comments on each
// GPU), 2 MI300X and 2 Gaudi 3. LargeMigNode(): 8 GPUs x 7 MIG instances with 64 pods.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "telemetry/snapshot.h"

namespace accel::telemetry::testing {

inline std::chrono::system_clock::time_point FixedTime() {
  return std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));  // 2026-01-01
}

inline PodRef Pod(std::string ns, std::string pod, std::string container, std::string resource,
                  int replica = -1) {
  return PodRef{std::move(ns), std::move(pod), std::move(container), std::move(resource), replica};
}

/// Every field an H100 reports, with values that show the unit conversions.
inline devices::Sample FullH100Sample(unsigned index) {
  devices::Sample s;
  s.gpu_utilization = 0.42;
  s.memory_utilization = 0.07;
  s.encoder_utilization = 0.0;
  s.decoder_utilization = 0.0;
  s.engine_active = 0.5;
  s.sm_active = 0.375;
  s.tensor_active = 0.25;
  s.dram_active = 0.125;
  s.sm_clock_mhz = 1980;
  s.memory_clock_mhz = 2619;
  s.temperature_c = 34 + index;
  s.memory_temperature_c = 41;
  s.power_w = 71.234 + index;
  s.power_limit_w = 700;
  s.energy_mj = 123456789012ULL + index;
  s.memory_total_bytes = 85520809984ULL;            // 81559 MiB
  s.memory_used_bytes = 1073741824ULL + 5242880;    // 1029 MiB
  s.memory_reserved_bytes = 566231040ULL;           // 540 MiB
  s.memory_free_bytes = 85520809984ULL - 1073741824ULL - 5242880 - 566231040ULL;
  s.pcie_replays = 3;
  s.pcie_tx_bytes_per_second = 1048576.0 * 12;
  s.pcie_rx_bytes_per_second = 1048576.0 * 34.5;
  s.nvlink_bandwidth_mb_per_second = 1234.4;
  s.ecc_correctable = 5;
  s.ecc_uncorrectable = 0;
  s.remapped_rows_correctable = 1;
  s.remapped_rows_uncorrectable = 0;
  s.row_remap_failure = false;
  s.row_remap_pending = false;
  s.vgpu_license_status = 0;
  return s;
}

inline DeviceState H100(unsigned index, const std::string& bus) {
  DeviceState d;
  d.identity.vendor = devices::Vendor::kNvidia;
  d.identity.index = index;
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-8f6c%04x-1d2e-4f3a-9b8c-7d6e5f4a3b%02x", index * 17, index);
  d.identity.uuid = uuid;
  d.identity.model = "NVIDIA H100 80GB HBM3";
  d.identity.pci_address = "0000:" + bus + ":00.0";
  d.identity.numa_node = index < 4 ? 0 : 1;
  d.identity.serial = "165432100" + std::to_string(index);
  d.identity.minor = static_cast<int>(index);
  d.identity.driver_version = "580.95.05";
  d.identity.firmware_version = "96.00.99.00.01";
  d.sample = FullH100Sample(index);
  d.sampled_at = FixedTime() - std::chrono::milliseconds(1500);
  return d;
}

inline devices::MigInstance Mig(unsigned gi, const std::string& profile, uint64_t total_mib,
                                uint64_t used_mib, unsigned n) {
  devices::MigInstance m;
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "MIG-2c5a%04x-7e1b-5c4d-8a9f-0b1c2d3e4f%02x", gi, n);
  m.uuid = uuid;
  m.gpu_instance_id = gi;
  m.compute_instance_id = 0;
  m.profile = profile;
  m.sample.memory_total_bytes = total_mib << 20;
  m.sample.memory_used_bytes = used_mib << 20;
  m.sample.memory_free_bytes = (total_mib - used_mib) << 20;
  m.sample.memory_reserved_bytes = 0;
  m.sample.engine_active = 0.75;
  m.sample.tensor_active = 0.5;
  return m;
}

inline DeviceState Mi300x(unsigned index, const std::string& bus) {
  DeviceState d;
  d.identity.vendor = devices::Vendor::kAmd;
  d.identity.index = index;
  d.identity.uuid = "GPU-" + std::string(index ? "5fd0a1b2c3d4e5f6" : "0a1b2c3d4e5f6a7b");
  d.identity.model = "AMD Instinct MI300X";
  d.identity.pci_address = "0000:" + bus + ":00.0";
  d.identity.serial = "PCB0" + std::to_string(index);
  d.identity.driver_version = "6.8.5";
  d.identity.firmware_version = "113-M3000100-102";
  devices::Sample& s = d.sample;
  s.gpu_utilization = 0.87;
  s.memory_utilization = 0.31;
  s.sm_clock_mhz = 2100;
  s.memory_clock_mhz = 1300;
  s.temperature_c = 52;
  s.memory_temperature_c = 45;
  s.power_w = 612.5;
  s.power_limit_w = 750;
  s.energy_mj = 987654321;
  s.memory_total_bytes = 206158430208ULL;  // 196608 MiB
  s.memory_used_bytes = 1048576ULL * 300;
  s.memory_free_bytes = 206158430208ULL - 1048576ULL * 300;
  s.pcie_replays = 0;
  s.ecc_correctable = 2;
  s.ecc_uncorrectable = 0;
  d.sampled_at = FixedTime() - std::chrono::milliseconds(800);
  return d;
}

inline DeviceState Gaudi3(unsigned index, const std::string& bus) {
  DeviceState d;
  d.identity.vendor = devices::Vendor::kHabana;
  d.identity.index = index;
  d.identity.uuid = "01P4-HL3080A0-18-U4V193-22-07-0" + std::to_string(index);
  d.identity.model = "HL-325L";
  d.identity.pci_address = "0000:" + bus + ":00.0";
  d.identity.numa_node = 1;
  d.identity.serial = "AN4501000" + std::to_string(index);
  d.identity.driver_version = "1.21.0-ca59b5a";
  d.identity.firmware_version = "hl-gaudi3-1.21.0-fw-58.1.0-sec-9";
  devices::Sample& s = d.sample;
  s.gpu_utilization = 0.9;
  s.sm_clock_mhz = 1600;
  s.temperature_c = 48;
  s.power_w = 420.25;
  s.power_limit_w = 900;
  s.energy_mj = 5000000;
  s.memory_total_bytes = 137438953472ULL;
  s.memory_used_bytes = 68719476736ULL;
  s.memory_free_bytes = 68719476736ULL;
  s.pcie_replays = 1;
  s.row_remap_pending = false;
  d.sampled_at = FixedTime() - std::chrono::milliseconds(200);
  return d;
}

/// GPU 0: everything reported, no pod. GPU 1: XID 79 (and an earlier 13), one pod. GPU 2: MIG
/// with three instances, pods on two of them. GPU 3: time-sliced, three replicas in two pods
/// plus a PodRef repeated under a second resource name. GPU 4: lost (XID 79). GPU 5: stale.
/// GPU 6: no HBM temperature, reserved memory, PROF or vGPU fields. GPU 7: a model name with
/// `"`, `\` and a newline. AMD 0 (one pod), AMD 1; Gaudi 0 (one pod), Gaudi 1 (lost).
inline Snapshot MixedNode() {
  Snapshot snap;
  snap.hostname = "node-a";
  snap.taken_at = FixedTime();
  snap.driver_versions = {{"nvidia", "580.95.05"}, {"amd", "6.8.5"}, {"habana", "1.21.0-ca59b5a"}};
  const char* buses[] = {"3b", "4c", "5d", "6e", "9b", "ac", "bd", "ce"};
  for (unsigned i = 0; i < 8; ++i) snap.devices.push_back(H100(i, buses[i]));

  DeviceState& xid = snap.devices[1];
  xid.last_xid = 79;
  xid.xid_counts = {{13, 1}, {79, 2}};
  xid.pods = {Pod("ml", "trainer-0", "main", "nvidia.com/gpu")};

  DeviceState& mig = snap.devices[2];
  mig.mig_enabled = true;
  mig.sample.gpu_utilization.reset();  // NVML has no device utilization in MIG mode
  mig.sample.memory_utilization.reset();
  mig.mig.push_back({Mig(9, "1g.10gb", 9984, 0, 0), {}});
  mig.mig.push_back({Mig(5, "2g.20gb", 19968, 4096, 1),
                     {Pod("ml", "infer-a", "server", "nvidia.com/mig-2g.20gb"),
                      Pod("ml", "infer-b", "server", "nvidia.com/mig-2g.20gb")}});
  mig.mig.push_back({Mig(1, "3g.40gb", 40192, 1024, 2),
                     {Pod("batch", "job-7", "worker", "nvidia.com/mig-3g.40gb")}});
  mig.mig[2].instance.sample.tensor_active.reset();  // GPM not available on this one

  DeviceState& shared = snap.devices[3];
  shared.pods = {Pod("dev", "notebook-1", "jupyter", "nvidia.com/gpu.shared", 0),
                 Pod("dev", "notebook-1", "jupyter", "nvidia.com/gpu.shared", 1),
                 Pod("dev", "notebook-2", "jupyter", "nvidia.com/gpu.shared", 2),
                 Pod("dev", "notebook-2", "jupyter", "nvidia.com/gpu", 2)};

  snap.devices[4].health = DeviceHealth::kLost;
  snap.devices[4].last_xid = 79;
  snap.devices[4].xid_counts = {{79, 1}};
  snap.devices[4].pods = {Pod("ml", "trainer-1", "main", "nvidia.com/gpu")};
  snap.devices[5].health = DeviceHealth::kStale;
  snap.devices[5].sampled_at = FixedTime() - std::chrono::seconds(90);

  devices::Sample& partial = snap.devices[6].sample;
  partial.memory_temperature_c.reset();
  partial.memory_reserved_bytes.reset();
  partial.engine_active.reset();
  partial.sm_active.reset();
  partial.tensor_active.reset();
  partial.dram_active.reset();
  partial.pcie_tx_bytes_per_second.reset();
  partial.pcie_rx_bytes_per_second.reset();
  partial.vgpu_license_status.reset();

  snap.devices[7].identity.model = "Odd \"GPU\" \\ model\nline 2";

  snap.devices.push_back(Mi300x(0, "11"));
  snap.devices.back().pods = {Pod("ml", "rocm-job", "trainer", "amd.com/gpu")};
  snap.devices.push_back(Mi300x(1, "2f"));
  snap.devices.push_back(Gaudi3(0, "19"));
  snap.devices.back().pods = {Pod("ml", "gaudi-job", "worker", "habana.ai/gaudi")};
  snap.devices.push_back(Gaudi3(1, "b3"));
  snap.devices.back().health = DeviceHealth::kLost;

  snap.stats.passes = 42;
  snap.stats.last_pass_seconds = 0.0125;
  snap.stats.pod_resources_enabled = true;
  snap.stats.pod_resources_ok = true;
  snap.stats.pod_resources_errors = 3;
  return snap;
}

/// 8 H100s, each split into 7 x 1g.10gb MIG instances, with `pods` pods spread over the 56
/// instances: the scale of dcgm-exporter issue #599.
inline Snapshot LargeMigNode(int pods = 64) {
  Snapshot snap;
  snap.hostname = "gpu-node-17";
  snap.taken_at = FixedTime();
  snap.driver_versions = {{"nvidia", "580.95.05"}};
  const char* buses[] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
  for (unsigned i = 0; i < 8; ++i) {
    DeviceState d = H100(i, buses[i]);
    d.mig_enabled = true;
    for (unsigned gi = 0; gi < 7; ++gi) d.mig.push_back({Mig(7 + gi, "1g.10gb", 9984, 512, gi), {}});
    snap.devices.push_back(std::move(d));
  }
  for (int p = 0; p < pods; ++p) {
    DeviceState& d = snap.devices[p % 8];
    d.mig[(p / 8) % 7].pods.push_back(Pod("tenant-" + std::to_string(p % 5),
                                          "inference-" + std::to_string(p), "server",
                                          "nvidia.com/mig-1g.10gb"));
  }
  snap.stats.passes = 1000;
  snap.stats.pod_resources_enabled = true;
  snap.stats.pod_resources_ok = true;
  return snap;
}

}  // namespace accel::telemetry::testing
