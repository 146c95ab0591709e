// The device model: what accel knows about one accelerator of any vendor, and one reading of it.
//
// Plain data shared by every backend (NVML, ROCm SMI, HLML) and every consumer (the telemetry
// exporter, MIG tooling, the device plugin). Values are in base units the backends convert to
// (bytes, watts, degrees Celsius, hertz ratios 0..1); an absent std::optional means "this device
// or driver does not report it" and must never be exported as 0.
#pragma once

#include <array>
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

  // Read only when asked for (ExtraReads::identity_details); empty otherwise or when unknown.
  /// Version of the vendor library itself (NVML: nvmlSystemGetNVMLVersion, "12.580.95.05").
  std::string library_version;
  /// Product brand (NVML: nvmlDeviceGetBrand as nvidia-smi names it: "NVIDIA", "Tesla", ...).
  std::string brand;
  /// InfoROM object versions (NVML: nvmlDeviceGetInforomVersion OEM/ECC/POWER) and the InfoROM
  /// image version (nvmlDeviceGetInforomImageVersion).
  std::string inforom_oem_version;
  std::string inforom_ecc_version;
  std::string inforom_power_version;
  std::string inforom_image_version;
};

/// Why a GPU ran below its requested clocks (NVML nvmlPerfPolicyType_t 0..5, in that order).
enum class ThrottleReason {
  kPower,        ///< power capping (NVML_PERF_POLICY_POWER)
  kThermal,      ///< thermal limits
  kSyncBoost,    ///< sync boost (GPUs of a group held to the slowest)
  kBoardLimit,   ///< board limits
  kLowUtil,      ///< low utilisation
  kReliability,  ///< board reliability limits
};
inline constexpr size_t kThrottleReasons = 6;

/// Readings beyond the default set. Each costs vendor calls per device per pass, so a backend
/// makes them only when asked (DeviceBackend::SetExtraReads); the default exporter output needs
/// none of them.
struct ExtraReads {
  bool ecc_aggregate = false;     ///< lifetime ECC totals (Sample::ecc_*_aggregate)
  bool retired_pages = false;     ///< Sample::retired_pages_*
  bool nvlink_errors = false;     ///< Sample::nvlink_*_errors
  bool nvlink_per_link = false;   ///< Sample::nvlink_link_mb_per_second
  bool violations = false;        ///< Sample::violation_ns
  bool clock_events = false;      ///< Sample::clock_event_reasons
  bool gpm_more = false;          ///< SM occupancy, FP64/32/16 pipes, NVLink bytes (GPM)
  bool p2p_status = false;        ///< DeviceReading::p2p
  bool identity_details = false;  ///< DeviceIdentity library_version, brand, inforom_*

  bool any() const {
    return ecc_aggregate || retired_pages || nvlink_errors || nvlink_per_link || violations ||
           clock_events || gpm_more || p2p_status || identity_details;
  }
  void Merge(const ExtraReads& o) {
    ecc_aggregate |= o.ecc_aggregate;
    retired_pages |= o.retired_pages;
    nvlink_errors |= o.nvlink_errors;
    nvlink_per_link |= o.nvlink_per_link;
    violations |= o.violations;
    clock_events |= o.clock_events;
    gpm_more |= o.gpm_more;
    p2p_status |= o.p2p_status;
    identity_details |= o.identity_details;
  }
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
  // GPM, read with ExtraReads::gpm_more.
  std::optional<double> sm_occupancy;          ///< resident warps / max warps (GPM 3)
  std::optional<double> fp64_active;           ///< FP64 pipe active (GPM 11)
  std::optional<double> fp32_active;           ///< FP32 pipe active (GPM 12)
  std::optional<double> fp16_active;           ///< FP16 pipe active (GPM 13)
  std::optional<double> nvlink_tx_bytes_per_second;  ///< all links (GPM 61)
  std::optional<double> nvlink_rx_bytes_per_second;  ///< all links (GPM 60)

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
  /// The same rate per link, by link number (ExtraReads::nvlink_per_link); a link that is down
  /// or unreadable is absent; empty when not read.
  std::vector<std::optional<double>> nvlink_link_mb_per_second;
  /// NVLink error counters summed over links (ExtraReads::nvlink_errors).
  std::optional<uint64_t> nvlink_crc_flit_errors;
  std::optional<uint64_t> nvlink_crc_data_errors;
  std::optional<uint64_t> nvlink_replay_errors;
  std::optional<uint64_t> nvlink_recovery_errors;

  // Reliability counters.
  std::optional<uint64_t> ecc_correctable;         ///< volatile single-bit / correctable total
  std::optional<uint64_t> ecc_uncorrectable;       ///< volatile double-bit / uncorrectable total
  std::optional<uint64_t> remapped_rows_correctable;
  std::optional<uint64_t> remapped_rows_uncorrectable;
  std::optional<bool> row_remap_failure;
  std::optional<bool> row_remap_pending;
  /// Lifetime ECC totals (ExtraReads::ecc_aggregate).
  std::optional<uint64_t> ecc_correctable_aggregate;
  std::optional<uint64_t> ecc_uncorrectable_aggregate;
  /// Pages retired after single-bit / double-bit errors, and a retirement awaiting reboot
  /// (ExtraReads::retired_pages; pre-Ampere boards, others remap rows instead).
  std::optional<uint64_t> retired_pages_sbe;
  std::optional<uint64_t> retired_pages_dbe;
  std::optional<bool> retired_pages_pending;

  // Throttling (ExtraReads::violations / clock_events).
  /// Time spent below requested clocks since the driver loaded, by reason, nanoseconds.
  std::array<std::optional<uint64_t>, kThrottleReasons> violation_ns;
  /// Clock-event (throttle) reasons active now, NVML's bit mask (GpuIdle 0x1 ...).
  std::optional<uint64_t> clock_event_reasons;

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

/// Peer-to-peer status of one GPU towards another over NVLink (ExtraReads::p2p_status).
struct PeerStatus {
  unsigned peer_index = 0;  ///< DeviceIdentity::index of the other GPU
  /// NVML nvmlGpuP2PStatus_t: 0 OK, 1 chipset not supported, 2 GPU not supported, 3 topology
  /// not supported, 4 disabled by regkey, 5 not supported, 6 unknown.
  int status = 6;
};

/// What one collection pass learned about one device.
struct DeviceReading {
  Sample sample;
  /// NVLink P2P status towards every other GPU of the same vendor (read only when asked).
  std::vector<PeerStatus> p2p;
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
