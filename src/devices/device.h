// The device model: what accel knows about one accelerator of any vendor, and one reading of it.
//
// Plain data shared by every backend (NVML, ROCm SMI, HLML) and every consumer (the telemetry
// exporter, MIG tooling, the device plugin). Values are in base units the backends convert to
// (bytes, watts, degrees Celsius, hertz ratios 0..1); an absent std::optional means "this device
// or driver does not report it" and must never be exported as 0.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace accel::devices {

enum class Vendor { kNvidia, kAmd, kHabana };

/// "nvidia", "amd", "habana": the value of the `vendor` label and of --vendor flags.
const char* VendorName(Vendor v);

/// Who a device is. Filled once at start by the backend, then joined to the host topology.
struct DeviceIdentity {
  Vendor vendor = Vendor::kNvidia;
  /// The vendor library's enumeration index (NVML index, rsmi dv_ind, hlml index); the `gpu`
  /// label of dcgm-exporter.
  unsigned index = 0;
  /// Vendor UUID as the vendor tools print it: "GPU-8f6c...". AMD: "GPU-" + 16 hex digits of
  /// rsmi unique_id when known, else empty. Gaudi: hlml UUID.
  std::string uuid;
  /// Marketing name, e.g. "NVIDIA H100 80GB HBM3", "AMD Instinct MI300X", "HL-325L".
  std::string model;
  /// PCI address in accel's canonical form, lower case, 4-digit domain: "0000:3b:00.0". This is
  /// the join key with topology::HostTopology::pci[].address.
  std::string pci_address;
  /// NUMA node from the topology join; -1 when unknown.
  int numa_node = -1;
  /// Board serial number; empty when not reported.
  std::string serial;
  /// Device node minor: /dev/nvidiaN, /dev/dri/renderD<N>, /dev/accel/accel<N>; -1 unknown.
  int minor = -1;
  /// Kernel driver version reported by the vendor library, e.g. "580.95.05"; empty unknown.
  std::string driver_version;
  /// Board firmware (VBIOS / FIT) version; empty unknown.
  std::string firmware_version;
};

/// One reading of a device (or of one MIG GPU instance). Every field is optional: absent means
/// unsupported or unavailable right now.
struct Sample {
  // Activity, ratios 0..1 (the vendor's percent / 100).
  std::optional<double> gpu_utilization;       ///< NVML util.gpu, AMD gfx busy, Gaudi AIP util
  std::optional<double> memory_utilization;    ///< NVML util.memory (memory-controller busy)
  std::optional<double> encoder_utilization;   ///< NVML encoder
  std::optional<double> decoder_utilization;   ///< NVML decoder
  std::optional<double> engine_active;         ///< graphics/compute engine active (GPM 1)
  std::optional<double> sm_active;             ///< SM active (GPM 2)
  std::optional<double> tensor_active;         ///< any tensor pipe active (GPM 5)
  std::optional<double> dram_active;           ///< DRAM bandwidth utilization (GPM 10)

  // Clocks, MHz.
  std::optional<double> sm_clock_mhz;          ///< SM / GFX / SOC clock
  std::optional<double> memory_clock_mhz;

  // Thermals, degrees Celsius.
  std::optional<double> temperature_c;         ///< core / junction / on-chip
  std::optional<double> memory_temperature_c;  ///< HBM

  // Power.
  std::optional<double> power_w;               ///< board power draw
  std::optional<double> power_limit_w;         ///< enforced power limit
  std::optional<uint64_t> energy_mj;           ///< energy since driver load, millijoules

  // Memory, bytes.
  std::optional<uint64_t> memory_total_bytes;
  std::optional<uint64_t> memory_used_bytes;
  std::optional<uint64_t> memory_free_bytes;
  std::optional<uint64_t> memory_reserved_bytes;

  // Interconnect.
  std::optional<uint64_t> pcie_replays;            ///< counter
  std::optional<double> pcie_tx_bytes_per_second;
  std::optional<double> pcie_rx_bytes_per_second;
  std::optional<double> nvlink_bandwidth_mb_per_second;  ///< all links, tx + rx (DCGM's rate)

  // Reliability counters.
  std::optional<uint64_t> ecc_correctable;         ///< volatile single-bit / correctable total
  std::optional<uint64_t> ecc_uncorrectable;       ///< volatile double-bit / uncorrectable total
  std::optional<uint64_t> remapped_rows_correctable;
  std::optional<uint64_t> remapped_rows_uncorrectable;
  std::optional<bool> row_remap_failure;
  std::optional<bool> row_remap_pending;

  /// vGPU license state: 1 licensed, 0 not (0 on bare metal, like DCGM).
  std::optional<int> vgpu_license_status;
};

/// One MIG GPU instance of an NVIDIA GPU (one series per GPU instance, like DCGM).
struct MigInstance {
  std::string uuid;                 ///< "MIG-..." of the instance's first compute instance
  unsigned gpu_instance_id = 0;     ///< NVML GPU-instance id (GPU_I_ID)
  unsigned compute_instance_id = 0; ///< NVML compute-instance id
  /// DCGM's synthesized profile name: "<slices>g.<ceil(memoryMB/1024)>gb", e.g. "1g.10gb".
  std::string profile;
  /// Sample of this instance: memory (per-GI framebuffer) and activity where the driver has it.
  Sample sample;
};

/// What one collection pass learned about one device.
struct DeviceReading {
  Sample sample;
  /// MIG GPU instances when MIG mode is on (empty otherwise).
  std::vector<MigInstance> mig;
  /// MIG mode currently enabled.
  bool mig_enabled = false;
  /// The vendor library said the device is gone (NVML GPU_IS_LOST, HLML AIP_IS_LOST). Sticky.
  bool lost = false;
  /// Last vendor error worth showing to a person (function and message); empty when clean.
  std::string error;
};

/// A health event from the vendor's event channel (NVIDIA XID, AMD/Gaudi critical events).
struct HealthEvent {
  unsigned device_index = 0;  ///< DeviceIdentity::index of the device it happened on
  Vendor vendor = Vendor::kNvidia;
  /// NVIDIA: the XID number. Other vendors: their event code.
  uint64_t code = 0;
  /// MIG GPU instance it is scoped to; absent for device-wide events.
  std::optional<unsigned> gpu_instance_id;
  std::chrono::system_clock::time_point when;
};

}  // namespace accel::devices
