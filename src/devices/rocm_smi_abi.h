// The subset of the ROCm SMI 5.2.3 C ABI (rocm_smi/rocm_smi.h) that accel calls, declared here
// so the build needs no ROCm headers and the binary links no ROCm library.
//
// Only types whose layout is the same in 5.2.3 and in the ROCm 6.x/7.x releases are declared.
// What moved between versions (rsmi_frequencies_t gained a leading bool; rsmi_gpu_metrics_t grows
// every release) is read from sysfs instead (devices/amd_sysfs.h). Sizes were checked against
// the Debian 12 librocm-smi-dev 5.2.3 header (research notes, telemetry.md §3.2).
#pragma once

#include <cstddef>
#include <cstdint>

namespace accel::devices::rsmi {

/// rsmi_status_t (a 4-byte enum in C).
using Status = uint32_t;
inline constexpr Status kSuccess = 0;
inline constexpr Status kInvalidArgs = 1;
inline constexpr Status kNotSupported = 2;
inline constexpr Status kFileError = 3;
inline constexpr Status kPermission = 4;
inline constexpr Status kInitError = 8;
inline constexpr Status kNotYetImplemented = 9;
inline constexpr Status kNotFound = 10;
inline constexpr Status kNoData = 14;
inline constexpr Status kUnknownError = 0xFFFFFFFF;

/// rsmi_sw_component_t.
inline constexpr uint32_t kSwComponentDriver = 0;

/// rsmi_memory_type_t.
inline constexpr uint32_t kMemoryVram = 0;

/// rsmi_temperature_type_t (sensor) and rsmi_temperature_metric_t.
inline constexpr uint32_t kTempEdge = 0;
inline constexpr uint32_t kTempJunction = 1;
inline constexpr uint32_t kTempMemory = 2;
inline constexpr uint32_t kTempCurrent = 0;

/// rsmi_gpu_block_t: one bit per RAS block, UMC (1 << 0) through FUSE (1 << 13). The C enum
/// holds RSMI_GPU_BLOCK_RESERVED = 1 << 63, so it is 8 bytes wide.
using GpuBlock = uint64_t;
inline constexpr GpuBlock kFirstBlock = 1ull << 0;
inline constexpr GpuBlock kLastBlock = 1ull << 13;

/// rsmi_evt_notification_type_t (KFD_SMI_EVENT_* values) and RSMI_EVENT_MASK_FROM_INDEX.
inline constexpr uint32_t kEventVmFault = 1;
inline constexpr uint32_t kEventThermalThrottle = 2;
inline constexpr uint32_t kEventGpuPreReset = 3;
inline constexpr uint32_t kEventGpuPostReset = 4;
constexpr uint64_t EventMask(uint32_t event) { return 1ull << (event - 1); }

/// rsmi_version_t.
struct Version {
  uint32_t major;
  uint32_t minor;
  uint32_t patch;
  const char* build;
};
static_assert(sizeof(Version) == 24);

/// rsmi_error_count_t.
struct ErrorCount {
  uint64_t correctable_err;
  uint64_t uncorrectable_err;
};
static_assert(sizeof(ErrorCount) == 16);

/// rsmi_evt_notification_data_t.
struct EventData {
  uint32_t dv_ind;
  uint32_t event;
  char message[64];
};
static_assert(sizeof(EventData) == 72);

// Function signatures, C linkage, all exported by librocm_smi64.so.1 5.2.3 unless noted.
using InitFn = Status(uint64_t init_flags);
using ShutDownFn = Status();
using NumMonitorDevicesFn = Status(uint32_t* num_devices);
using StatusStringFn = Status(Status status, const char** text);
using VersionStrGetFn = Status(uint32_t component, char* buffer, uint32_t length);
using DevU16Fn = Status(uint32_t dv_ind, uint16_t* value);            // rsmi_dev_id_get
using DevU32Fn = Status(uint32_t dv_ind, uint32_t* value);            // busy %, render minor
using DevU64Fn = Status(uint32_t dv_ind, uint64_t* value);            // pci id, unique id, replays
using DevNameFn = Status(uint32_t dv_ind, char* buffer, size_t length);     // rsmi_dev_name_get
using DevStringFn = Status(uint32_t dv_ind, char* buffer, uint32_t length); // brand/serial/vbios
using DevMemoryFn = Status(uint32_t dv_ind, uint32_t memory_type, uint64_t* bytes);
using DevTempMetricFn = Status(uint32_t dv_ind, uint32_t sensor, uint32_t metric, int64_t* mdeg_c);
using DevSensorU64Fn = Status(uint32_t dv_ind, uint32_t sensor_ind, uint64_t* microwatts);
using DevEnergyCountFn = Status(uint32_t dv_ind, uint64_t* counter, float* resolution_uj,
                                uint64_t* timestamp);
using DevEccCountFn = Status(uint32_t dv_ind, GpuBlock block, ErrorCount* counts);
using EventInitFn = Status(uint32_t dv_ind);                          // also _stop
using EventMaskSetFn = Status(uint32_t dv_ind, uint64_t mask);
using EventGetFn = Status(int timeout_ms, uint32_t* num_elements, EventData* data);

}  // namespace accel::devices::rsmi
