// The subset of the NVML C ABI accel uses, declared from the research notes
// (docs: /work/shared/reference/telemetry.md §2; MIG control: mig.md §1.3, signatures and
// layouts checked against NVIDIA's nvml.h as go-nvml ships it), not copied from nvml.h.
//
// Both the NVML backend (which dlsyms these names) and the fake libnvidia-ml.so.1 in
// tests/fakes/nvml (which exports them) include this header, so a layout or signature mismatch
// between the two fails to compile. Types keep NVML's spelling so code reads like NVML documentation; they live
// in a namespace because only the exported function *names* matter to the ABI. x86-64 layouts;
// the static_asserts pin every size and offset the notes give.
#pragma once

#include <cstddef>
#include <cstdint>

namespace accel::devices::nvml {

// ---- Return codes (nvmlReturn_t is a C enum: 4 bytes) ----
enum nvmlReturn_t : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
  NVML_ERROR_UNKNOWN = 999,
};
static_assert(sizeof(nvmlReturn_t) == 4);

// ---- Opaque handles ----
struct nvmlDevice_st;
struct nvmlGpuInstance_st;
struct nvmlEventSet_st;
struct nvmlGpmSample_st;
struct nvmlComputeInstance_st;
using nvmlDevice_t = nvmlDevice_st*;
using nvmlGpuInstance_t = nvmlGpuInstance_st*;
using nvmlComputeInstance_t = nvmlComputeInstance_st*;
using nvmlEventSet_t = nvmlEventSet_st*;
using nvmlGpmSample_t = nvmlGpmSample_st*;

// ---- Enums (C enums, passed as 4-byte ints) ----
using nvmlTemperatureSensors_t = unsigned int;
inline constexpr nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU = 0;

using nvmlClockType_t = unsigned int;
inline constexpr nvmlClockType_t NVML_CLOCK_GRAPHICS = 0;
inline constexpr nvmlClockType_t NVML_CLOCK_SM = 1;
inline constexpr nvmlClockType_t NVML_CLOCK_MEM = 2;
inline constexpr nvmlClockType_t NVML_CLOCK_VIDEO = 3;

using nvmlMemoryErrorType_t = unsigned int;
inline constexpr nvmlMemoryErrorType_t NVML_MEMORY_ERROR_TYPE_CORRECTED = 0;
inline constexpr nvmlMemoryErrorType_t NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1;

using nvmlEccCounterType_t = unsigned int;
inline constexpr nvmlEccCounterType_t NVML_VOLATILE_ECC = 0;
inline constexpr nvmlEccCounterType_t NVML_AGGREGATE_ECC = 1;

using nvmlPageRetirementCause_t = unsigned int;
inline constexpr nvmlPageRetirementCause_t
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0;
inline constexpr nvmlPageRetirementCause_t NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1;

using nvmlPcieUtilCounter_t = unsigned int;
inline constexpr nvmlPcieUtilCounter_t NVML_PCIE_UTIL_TX_BYTES = 0;
inline constexpr nvmlPcieUtilCounter_t NVML_PCIE_UTIL_RX_BYTES = 1;

using nvmlEnableState_t = unsigned int;
inline constexpr nvmlEnableState_t NVML_FEATURE_DISABLED = 0;
inline constexpr nvmlEnableState_t NVML_FEATURE_ENABLED = 1;
inline constexpr unsigned int NVML_DEVICE_MIG_DISABLE = 0;
inline constexpr unsigned int NVML_DEVICE_MIG_ENABLE = 1;

// GPU-instance profile *indices* (the `profile` argument of nvmlDeviceGetGpuInstanceProfileInfo);
// the per-device profile *id* that creation takes comes back in the info struct.
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0x0;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_2_SLICE = 0x1;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_3_SLICE = 0x2;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_4_SLICE = 0x3;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_7_SLICE = 0x4;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_8_SLICE = 0x5;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_6_SLICE = 0x6;
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7;  ///< 1g+me
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 = 0x8;  ///< 2g+me
inline constexpr unsigned int NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 = 0x9;  ///< 1g, 2 memory slices

// Compute-instance profile indices (nvmlGpuInstanceGetComputeInstanceProfileInfo `profile`).
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE = 0x0;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE = 0x1;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE = 0x2;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE = 0x3;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE = 0x4;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE = 0x5;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE = 0x6;
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7;
/// The only engine profile NVML defines.
inline constexpr unsigned int NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0x0;

using nvmlValueType_t = unsigned int;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_DOUBLE = 0;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_UNSIGNED_INT = 1;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_UNSIGNED_LONG = 2;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_SIGNED_INT = 5;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_UNSIGNED_SHORT = 6;

using nvmlPerfPolicyType_t = unsigned int;  // POWER 0 .. RELIABILITY 5, TOTAL_APP 10, TOTAL_BASE 11
using nvmlNvLinkErrorCounter_t = unsigned int;  // DL_REPLAY 0, DL_RECOVERY 1, CRC_FLIT 2, CRC_DATA 3
using nvmlPstates_t = int;  // P0 = 0 .. P15 = 15, UNKNOWN = 32
using nvmlGridLicenseFeatureCode_t = unsigned int;
inline constexpr nvmlGridLicenseFeatureCode_t NVML_GRID_LICENSE_FEATURE_CODE_VGPU = 1;

inline constexpr unsigned int NVML_NVLINK_MAX_LINKS = 36;

// nvmlPerfPolicyType_t values for nvmlDeviceGetViolationStatus.
inline constexpr nvmlPerfPolicyType_t NVML_PERF_POLICY_POWER = 0;
inline constexpr nvmlPerfPolicyType_t NVML_PERF_POLICY_RELIABILITY = 5;

/// nvmlDeviceGetNvLinkErrorCounter counters (nvmlNvLinkErrorCounter_t).
inline constexpr nvmlNvLinkErrorCounter_t NVML_NVLINK_ERROR_DL_REPLAY = 0;
inline constexpr nvmlNvLinkErrorCounter_t NVML_NVLINK_ERROR_DL_RECOVERY = 1;
inline constexpr nvmlNvLinkErrorCounter_t NVML_NVLINK_ERROR_DL_CRC_FLIT = 2;
inline constexpr nvmlNvLinkErrorCounter_t NVML_NVLINK_ERROR_DL_CRC_DATA = 3;

/// nvmlBrandType_t (nvmlDeviceGetBrand): NVML_BRAND_UNKNOWN 0 .. NVML_BRAND_TITAN_RTX 16.
using nvmlBrandType_t = unsigned int;

/// nvmlInforomObject_t (nvmlDeviceGetInforomVersion).
using nvmlInforomObject_t = unsigned int;
inline constexpr nvmlInforomObject_t NVML_INFOROM_OEM = 0;
inline constexpr nvmlInforomObject_t NVML_INFOROM_ECC = 1;
inline constexpr nvmlInforomObject_t NVML_INFOROM_POWER = 2;

/// nvmlGpuP2PCapsIndex_t and nvmlGpuP2PStatus_t (nvmlDeviceGetP2PStatus).
using nvmlGpuP2PCapsIndex_t = unsigned int;
inline constexpr nvmlGpuP2PCapsIndex_t NVML_P2P_CAPS_INDEX_NVLINK = 2;
using nvmlGpuP2PStatus_t = unsigned int;
inline constexpr nvmlGpuP2PStatus_t NVML_P2P_STATUS_OK = 0;
inline constexpr nvmlGpuP2PStatus_t NVML_P2P_STATUS_UNKNOWN = 6;

/// What sits at the far end of an NVLink (nvmlDeviceGetNvLinkRemoteDeviceType).
using nvmlIntNvLinkDeviceType_t = unsigned int;
inline constexpr nvmlIntNvLinkDeviceType_t NVML_NVLINK_DEVICE_TYPE_GPU = 0x00;
inline constexpr nvmlIntNvLinkDeviceType_t NVML_NVLINK_DEVICE_TYPE_IBMNPU = 0x01;
inline constexpr nvmlIntNvLinkDeviceType_t NVML_NVLINK_DEVICE_TYPE_SWITCH = 0x02;
inline constexpr nvmlIntNvLinkDeviceType_t NVML_NVLINK_DEVICE_TYPE_UNKNOWN = 0xFF;

// Event type bits (nvmlDeviceRegisterEvents / nvmlEventData_t::eventType).
inline constexpr unsigned long long nvmlEventTypeSingleBitEccError = 0x1;
inline constexpr unsigned long long nvmlEventTypeDoubleBitEccError = 0x2;
inline constexpr unsigned long long nvmlEventTypePState = 0x4;
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8;
inline constexpr unsigned long long nvmlEventTypeClock = 0x10;
inline constexpr unsigned long long nvmlEventTypeMigConfigChange = 0x100;

// nvmlInitWithFlags flags.
inline constexpr unsigned int NVML_INIT_FLAG_NO_GPUS = 1;
inline constexpr unsigned int NVML_INIT_FLAG_NO_ATTACH = 2;

// Field ids for nvmlDeviceGetFieldValues (NVML_FI_DEV_*).
inline constexpr unsigned int NVML_FI_DEV_ECC_SBE_VOL_TOTAL = 3;
inline constexpr unsigned int NVML_FI_DEV_ECC_DBE_VOL_TOTAL = 4;
inline constexpr unsigned int NVML_FI_DEV_ECC_SBE_AGG_TOTAL = 5;
inline constexpr unsigned int NVML_FI_DEV_ECC_DBE_AGG_TOTAL = 6;
inline constexpr unsigned int NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL = 38;
inline constexpr unsigned int NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL = 45;
inline constexpr unsigned int NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL = 52;
inline constexpr unsigned int NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL = 59;
/// Throttle time per perf policy, ns: POWER 74, THERMAL 75, SYNC_BOOST 76, BOARD_LIMIT 77,
/// LOW_UTILIZATION 78, RELIABILITY 79 (what DCGM reads for DCGM_FI_DEV_*_VIOLATION).
inline constexpr unsigned int NVML_FI_DEV_PERF_POLICY_POWER = 74;
inline constexpr unsigned int NVML_FI_DEV_MEMORY_TEMP = 82;
inline constexpr unsigned int NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION = 83;
inline constexpr unsigned int NVML_FI_DEV_PCIE_REPLAY_COUNTER = 94;
inline constexpr unsigned int NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138;
inline constexpr unsigned int NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139;
inline constexpr unsigned int NVML_FI_DEV_REMAPPED_COR = 142;
inline constexpr unsigned int NVML_FI_DEV_REMAPPED_UNC = 143;
inline constexpr unsigned int NVML_FI_DEV_REMAPPED_PENDING = 144;
inline constexpr unsigned int NVML_FI_DEV_REMAPPED_FAILURE = 145;
inline constexpr unsigned int NVML_FI_DEV_POWER_INSTANT = 186;
/// scopeId meaning "all NVLink links".
inline constexpr unsigned int kNvmlScopeAllLinks = 0xFFFFFFFFu;
/// nvmlEventData_t gpuInstanceId / computeInstanceId of a device-wide event.
inline constexpr unsigned int kNvmlNoInstance = 0xFFFFFFFFu;

// GPM metric ids (nvmlGpmMetricId_t).
inline constexpr unsigned int NVML_GPM_METRIC_GRAPHICS_UTIL = 1;
inline constexpr unsigned int NVML_GPM_METRIC_SM_UTIL = 2;
inline constexpr unsigned int NVML_GPM_METRIC_SM_OCCUPANCY = 3;
inline constexpr unsigned int NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5;
inline constexpr unsigned int NVML_GPM_METRIC_DRAM_BW_UTIL = 10;
inline constexpr unsigned int NVML_GPM_METRIC_FP64_UTIL = 11;
inline constexpr unsigned int NVML_GPM_METRIC_FP32_UTIL = 12;
inline constexpr unsigned int NVML_GPM_METRIC_FP16_UTIL = 13;
inline constexpr unsigned int NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20;
inline constexpr unsigned int NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21;
inline constexpr unsigned int NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60;
inline constexpr unsigned int NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61;
/// Size of nvmlGpmMetricsGet_t::metrics in the 13.3 header. The library only touches
/// metrics[0 .. numMetrics), so a smaller count is always safe.
inline constexpr unsigned int kNvmlGpmMetricMax = 333;
inline constexpr unsigned int NVML_GPM_SUPPORT_VERSION = 1;
inline constexpr unsigned int NVML_GPM_METRICS_GET_VERSION = 1;

// String buffer sizes.
inline constexpr unsigned int NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_SERIAL_BUFFER_SIZE = 30;
inline constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned int NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE = 32;
inline constexpr unsigned int NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE = 16;
inline constexpr unsigned int NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32;
inline constexpr unsigned int NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16;
inline constexpr unsigned int NVML_GRID_LICENSE_BUFFER_SIZE = 128;
inline constexpr unsigned int NVML_GRID_LICENSE_FEATURE_MAX_COUNT = 3;

/// NVML_STRUCT_VERSION: the struct's size in the low bits, its version in the top byte.
constexpr unsigned int NvmlStructVersion(size_t size, unsigned int version) {
  return static_cast<unsigned int>(size) | (version << 24);
}

// ---- Structs ----
struct nvmlPciInfo_t {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;     ///< device << 16 | vendor
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  ///< "00000000:3B:00.0"
};
static_assert(sizeof(nvmlPciInfo_t) == 68 && alignof(nvmlPciInfo_t) == 4);
static_assert(offsetof(nvmlPciInfo_t, domain) == 16 && offsetof(nvmlPciInfo_t, busId) == 36);

struct nvmlUtilization_t {
  unsigned int gpu;     ///< percent
  unsigned int memory;  ///< percent
};
static_assert(sizeof(nvmlUtilization_t) == 8);

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;  ///< includes reserved
};
static_assert(sizeof(nvmlMemory_t) == 24);

struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
static_assert(sizeof(nvmlMemory_v2_t) == 40);
static_assert(offsetof(nvmlMemory_v2_t, total) == 8 && offsetof(nvmlMemory_v2_t, reserved) == 16 &&
              offsetof(nvmlMemory_v2_t, free) == 24 && offsetof(nvmlMemory_v2_t, used) == 32);
inline constexpr unsigned int nvmlMemory_v2 = NvmlStructVersion(sizeof(nvmlMemory_v2_t), 2);
static_assert(nvmlMemory_v2 == 0x02000028);

union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  unsigned short usVal;
};
static_assert(sizeof(nvmlValue_t) == 8);

struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;    ///< microseconds since the epoch
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};
static_assert(sizeof(nvmlFieldValue_t) == 40);
static_assert(offsetof(nvmlFieldValue_t, timestamp) == 8 &&
              offsetof(nvmlFieldValue_t, valueType) == 24 &&
              offsetof(nvmlFieldValue_t, nvmlReturn) == 28 && offsetof(nvmlFieldValue_t, value) == 32);

struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;   ///< the XID for XidCriticalError
  unsigned int gpuInstanceId;     ///< kNvmlNoInstance when device-wide
  unsigned int computeInstanceId;
};
static_assert(sizeof(nvmlEventData_t) == 32 && offsetof(nvmlEventData_t, gpuInstanceId) == 24);
/// What the legacy nvmlEventSetWait writes: the fields before gpuInstanceId.
inline constexpr size_t kNvmlEventDataV1Size = 24;

struct nvmlProcessInfo_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;  ///< bytes
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
static_assert(sizeof(nvmlProcessInfo_t) == 24 && offsetof(nvmlProcessInfo_t, gpuInstanceId) == 16);

struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);

struct nvmlViolationTime_t {
  unsigned long long referenceTime;
  unsigned long long violationTime;  ///< ns
};
static_assert(sizeof(nvmlViolationTime_t) == 16);

struct nvmlTemperature_t {
  unsigned int version;
  nvmlTemperatureSensors_t sensorType;
  int temperature;
};
static_assert(sizeof(nvmlTemperature_t) == 12);
inline constexpr unsigned int nvmlTemperature_v1 = NvmlStructVersion(sizeof(nvmlTemperature_t), 1);
static_assert(nvmlTemperature_v1 == 0x0100000C);

struct nvmlGpuInstancePlacement_t {
  unsigned int start;  ///< first memory slice
  unsigned int size;   ///< memory slices
};
static_assert(sizeof(nvmlGpuInstancePlacement_t) == 8);

struct nvmlGpuInstanceInfo_t {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
};
static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24);

struct nvmlGpuInstanceProfileInfo_t {
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
};
static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48);
static_assert(offsetof(nvmlGpuInstanceProfileInfo_t, memorySizeMB) == 40);

struct nvmlGpuInstanceProfileInfo_v2_t {
  unsigned int version;
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[96];  ///< "MIG 1g.10gb"
};
static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152);
inline constexpr unsigned int nvmlGpuInstanceProfileInfo_v2 =
    NvmlStructVersion(sizeof(nvmlGpuInstanceProfileInfo_v2_t), 2);
static_assert(nvmlGpuInstanceProfileInfo_v2 == 0x02000098);

struct nvmlComputeInstancePlacement_t {
  unsigned int start;  ///< first compute slice inside the GPU instance
  unsigned int size;   ///< compute slices
};
static_assert(sizeof(nvmlComputeInstancePlacement_t) == 8);

struct nvmlComputeInstanceProfileInfo_t {
  unsigned int id;  ///< unique within the GPU instance; what creation takes
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
};
static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36);

struct nvmlComputeInstanceInfo_t {
  nvmlDevice_t device;  ///< the parent GPU
  nvmlGpuInstance_t gpuInstance;
  unsigned int id;
  unsigned int profileId;
  nvmlComputeInstancePlacement_t placement;
};
static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32);
static_assert(offsetof(nvmlComputeInstanceInfo_t, id) == 16 &&
              offsetof(nvmlComputeInstanceInfo_t, placement) == 24);

struct nvmlGridLicenseExpiry_t {
  unsigned int year;
  unsigned short month, day, hour, min, sec;
  unsigned char status;
};
static_assert(sizeof(nvmlGridLicenseExpiry_t) == 16);

struct nvmlGridLicensableFeature_t {
  nvmlGridLicenseFeatureCode_t featureCode;
  unsigned int featureState;  ///< non-zero: licensed
  char licenseInfo[NVML_GRID_LICENSE_BUFFER_SIZE];
  char productName[NVML_GRID_LICENSE_BUFFER_SIZE];
  unsigned int featureEnabled;
  nvmlGridLicenseExpiry_t licenseExpiry;
};
static_assert(sizeof(nvmlGridLicensableFeature_t) == 284);

/// The _v4 layout (with licenseExpiry).
struct nvmlGridLicensableFeatures_t {
  int isGridLicenseSupported;
  unsigned int licensableFeaturesCount;
  nvmlGridLicensableFeature_t gridLicensableFeatures[NVML_GRID_LICENSE_FEATURE_MAX_COUNT];
};
static_assert(sizeof(nvmlGridLicensableFeatures_t) == 860);

struct nvmlGpmSupport_t {
  unsigned int version;  ///< NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;
};
static_assert(sizeof(nvmlGpmSupport_t) == 8);

struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;  ///< percent 0..100, or MiB/s for the *_PER_SEC metrics
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};
static_assert(sizeof(nvmlGpmMetric_t) == 40 && offsetof(nvmlGpmMetric_t, value) == 8);

struct nvmlGpmMetricsGet_t {
  unsigned int version;  ///< NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[kNvmlGpmMetricMax];
};
static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8 && offsetof(nvmlGpmMetricsGet_t, metrics) == 24);

// ---- Functions ----
// X(name, parameter list): every exported function that returns nvmlReturn_t. The backend builds
// its dlsym table from this list; the fake declares its exports from it.
#define ACCEL_NVML_FUNCTIONS(X)                                                                   \
  X(nvmlInit_v2, (void))                                                                          \
  X(nvmlInitWithFlags, (unsigned int flags))                                                      \
  X(nvmlShutdown, (void))                                                                         \
  X(nvmlSystemGetDriverVersion, (char* version, unsigned int length))                             \
  X(nvmlSystemGetNVMLVersion, (char* version, unsigned int length))                               \
  X(nvmlSystemGetCudaDriverVersion_v2, (int* cudaDriverVersion))                                  \
  X(nvmlDeviceGetCount_v2, (unsigned int* deviceCount))                                           \
  X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t* device))                    \
  X(nvmlDeviceGetHandleByUUID, (const char* uuid, nvmlDevice_t* device))                          \
  X(nvmlDeviceGetHandleByPciBusId_v2, (const char* pciBusId, nvmlDevice_t* device))               \
  X(nvmlDeviceGetIndex, (nvmlDevice_t device, unsigned int* index))                               \
  X(nvmlDeviceGetMinorNumber, (nvmlDevice_t device, unsigned int* minorNumber))                   \
  X(nvmlDeviceGetUUID, (nvmlDevice_t device, char* uuid, unsigned int length))                    \
  X(nvmlDeviceGetName, (nvmlDevice_t device, char* name, unsigned int length))                    \
  X(nvmlDeviceGetSerial, (nvmlDevice_t device, char* serial, unsigned int length))                \
  X(nvmlDeviceGetVbiosVersion, (nvmlDevice_t device, char* version, unsigned int length))         \
  X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t* pci))                           \
  X(nvmlDeviceGetPersistenceMode, (nvmlDevice_t device, nvmlEnableState_t* mode))                 \
  X(nvmlDeviceGetBrand, (nvmlDevice_t device, nvmlBrandType_t* type))                             \
  X(nvmlDeviceGetInforomVersion,                                                                  \
    (nvmlDevice_t device, nvmlInforomObject_t object, char* version, unsigned int length))        \
  X(nvmlDeviceGetInforomImageVersion, (nvmlDevice_t device, char* version, unsigned int length))  \
  X(nvmlDeviceGetP2PStatus, (nvmlDevice_t device1, nvmlDevice_t device2,                          \
                             nvmlGpuP2PCapsIndex_t p2pIndex, nvmlGpuP2PStatus_t* p2pStatus))     \
  X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t* utilization))         \
  X(nvmlDeviceGetEncoderUtilization,                                                              \
    (nvmlDevice_t device, unsigned int* utilization, unsigned int* samplingPeriodUs))             \
  X(nvmlDeviceGetDecoderUtilization,                                                              \
    (nvmlDevice_t device, unsigned int* utilization, unsigned int* samplingPeriodUs))             \
  X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t* memory))                         \
  X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t* memory))                   \
  X(nvmlDeviceGetTemperature,                                                                     \
    (nvmlDevice_t device, nvmlTemperatureSensors_t sensorType, unsigned int* temp))               \
  X(nvmlDeviceGetTemperatureV, (nvmlDevice_t device, nvmlTemperature_t* temperature))             \
  X(nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int* power))                          \
  X(nvmlDeviceGetTotalEnergyConsumption, (nvmlDevice_t device, unsigned long long* energy))       \
  X(nvmlDeviceGetPowerManagementLimit, (nvmlDevice_t device, unsigned int* limit))                \
  X(nvmlDeviceGetEnforcedPowerLimit, (nvmlDevice_t device, unsigned int* limit))                  \
  X(nvmlDeviceGetClockInfo, (nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock))     \
  X(nvmlDeviceGetMaxClockInfo, (nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock))  \
  X(nvmlDeviceGetCurrentClocksEventReasons, (nvmlDevice_t device, unsigned long long* reasons))   \
  X(nvmlDeviceGetViolationStatus,                                                                 \
    (nvmlDevice_t device, nvmlPerfPolicyType_t policy, nvmlViolationTime_t* violation))           \
  X(nvmlDeviceGetFanSpeed, (nvmlDevice_t device, unsigned int* speed))                            \
  X(nvmlDeviceGetPerformanceState, (nvmlDevice_t device, nvmlPstates_t* pState))                  \
  X(nvmlDeviceGetEccMode,                                                                         \
    (nvmlDevice_t device, nvmlEnableState_t* current, nvmlEnableState_t* pending))                \
  X(nvmlDeviceGetTotalEccErrors, (nvmlDevice_t device, nvmlMemoryErrorType_t errorType,           \
                                  nvmlEccCounterType_t counterType, unsigned long long* eccCounts)) \
  X(nvmlDeviceGetRetiredPages, (nvmlDevice_t device, nvmlPageRetirementCause_t cause,             \
                                unsigned int* pageCount, unsigned long long* addresses))          \
  X(nvmlDeviceGetRetiredPagesPendingStatus, (nvmlDevice_t device, nvmlEnableState_t* isPending))  \
  X(nvmlDeviceGetRemappedRows, (nvmlDevice_t device, unsigned int* corrRows,                      \
                                unsigned int* uncRows, unsigned int* isPending,                   \
                                unsigned int* failureOccurred))                                   \
  X(nvmlDeviceGetPcieReplayCounter, (nvmlDevice_t device, unsigned int* value))                   \
  X(nvmlDeviceGetPcieThroughput,                                                                  \
    (nvmlDevice_t device, nvmlPcieUtilCounter_t counter, unsigned int* value))                    \
  X(nvmlDeviceGetNvLinkState, (nvmlDevice_t device, unsigned int link, nvmlEnableState_t* isActive)) \
  X(nvmlDeviceGetNvLinkErrorCounter, (nvmlDevice_t device, unsigned int link,                     \
                                      nvmlNvLinkErrorCounter_t counter,                           \
                                      unsigned long long* counterValue))                          \
  X(nvmlDeviceGetNvLinkRemotePciInfo_v2,                                                          \
    (nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci))                                 \
  X(nvmlDeviceGetNvLinkRemoteDeviceType,                                                          \
    (nvmlDevice_t device, unsigned int link, nvmlIntNvLinkDeviceType_t* pNvLinkDeviceType))       \
  X(nvmlDeviceGetFieldValues, (nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values))   \
  X(nvmlDeviceGetGridLicensableFeatures_v4,                                                       \
    (nvmlDevice_t device, nvmlGridLicensableFeatures_t* features))                                \
  X(nvmlEventSetCreate, (nvmlEventSet_t* set))                                                    \
  X(nvmlDeviceGetSupportedEventTypes, (nvmlDevice_t device, unsigned long long* eventTypes))      \
  X(nvmlDeviceRegisterEvents,                                                                     \
    (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set))                     \
  X(nvmlEventSetWait_v2, (nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms))     \
  X(nvmlEventSetWait, (nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms))        \
  X(nvmlEventSetFree, (nvmlEventSet_t set))                                                       \
  X(nvmlDeviceGetMigMode,                                                                         \
    (nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode))                  \
  X(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int* count))                   \
  X(nvmlDeviceGetMigDeviceHandleByIndex,                                                          \
    (nvmlDevice_t device, unsigned int index, nvmlDevice_t* migDevice))                           \
  X(nvmlDeviceIsMigDeviceHandle, (nvmlDevice_t device, unsigned int* isMigDevice))                \
  X(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, (nvmlDevice_t migDevice, nvmlDevice_t* device)) \
  X(nvmlDeviceGetGpuInstanceId, (nvmlDevice_t device, unsigned int* id))                          \
  X(nvmlDeviceGetComputeInstanceId, (nvmlDevice_t device, unsigned int* id))                      \
  X(nvmlDeviceGetGpuInstanceById,                                                                 \
    (nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* gpuInstance))                       \
  X(nvmlGpuInstanceGetInfo, (nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info))         \
  X(nvmlDeviceGetGpuInstances, (nvmlDevice_t device, unsigned int profileId,                      \
                                nvmlGpuInstance_t* gpuInstances, unsigned int* count))            \
  X(nvmlDeviceGetGpuInstanceProfileInfo,                                                          \
    (nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t* info))              \
  X(nvmlDeviceGetGpuInstanceProfileInfoV,                                                         \
    (nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t* info))           \
  X(nvmlDeviceSetMigMode,                                                                         \
    (nvmlDevice_t device, unsigned int mode, nvmlReturn_t* activationStatus))                     \
  X(nvmlDeviceGetGpuInstancePossiblePlacements_v2,                                                \
    (nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t* placements,         \
     unsigned int* count))                                                                        \
  X(nvmlDeviceGetGpuInstanceRemainingCapacity,                                                    \
    (nvmlDevice_t device, unsigned int profileId, unsigned int* count))                           \
  X(nvmlDeviceCreateGpuInstanceWithPlacement,                                                     \
    (nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t* placement,    \
     nvmlGpuInstance_t* gpuInstance))                                                             \
  X(nvmlGpuInstanceDestroy, (nvmlGpuInstance_t gpuInstance))                                      \
  X(nvmlGpuInstanceGetComputeInstanceProfileInfo,                                                 \
    (nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,                \
     nvmlComputeInstanceProfileInfo_t* info))                                                     \
  X(nvmlGpuInstanceCreateComputeInstance,                                                         \
    (nvmlGpuInstance_t gpuInstance, unsigned int profileId,                                       \
     nvmlComputeInstance_t* computeInstance))                                                     \
  X(nvmlGpuInstanceGetComputeInstances,                                                           \
    (nvmlGpuInstance_t gpuInstance, unsigned int profileId,                                       \
     nvmlComputeInstance_t* computeInstances, unsigned int* count))                               \
  X(nvmlComputeInstanceDestroy, (nvmlComputeInstance_t computeInstance))                          \
  X(nvmlComputeInstanceGetInfo_v2,                                                                \
    (nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t* info))                     \
  X(nvmlDeviceGetComputeRunningProcesses_v3,                                                      \
    (nvmlDevice_t device, unsigned int* infoCount, nvmlProcessInfo_t* infos))                     \
  X(nvmlDeviceGetProcessUtilization,                                                              \
    (nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,                            \
     unsigned int* processSamplesCount, unsigned long long lastSeenTimeStamp))                    \
  X(nvmlGpmQueryDeviceSupport, (nvmlDevice_t device, nvmlGpmSupport_t* gpmSupport))               \
  X(nvmlGpmSampleAlloc, (nvmlGpmSample_t* gpmSample))                                             \
  X(nvmlGpmSampleFree, (nvmlGpmSample_t gpmSample))                                               \
  X(nvmlGpmSampleGet, (nvmlDevice_t device, nvmlGpmSample_t gpmSample))                           \
  X(nvmlGpmMigSampleGet,                                                                          \
    (nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t gpmSample))                 \
  X(nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t* metricsGet))

// Function types, e.g. nvmlDeviceGetUUID_fn, for SharedLibrary::Function<>.
#define ACCEL_NVML_FUNCTION_TYPE(name, params) using name##_fn = nvmlReturn_t params;
ACCEL_NVML_FUNCTIONS(ACCEL_NVML_FUNCTION_TYPE)
#undef ACCEL_NVML_FUNCTION_TYPE
/// The one export that does not return nvmlReturn_t.
using nvmlErrorString_fn = const char*(nvmlReturn_t result);

}  // namespace accel::devices::nvml
