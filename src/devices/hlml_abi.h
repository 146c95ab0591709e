// The subset of Habana Labs' HLML C ABI (hlml.h, MIT, shipped with the Gaudi driver packages)
// that accel calls, declared here so the build needs no Habana headers or libraries.
//
// HLML copies NVML's shape: opaque device handles, an hlml_return_t per call, caller-owned
// buffers. Functions newer than the first public hlml.h (driver/firmware versions, row
// replacement) are optional and probed with dlsym.
#pragma once

#include <cstdint>

namespace accel::devices::hlml {

/// hlml_return_t (a 4-byte enum in C).
using Return = int32_t;
inline constexpr Return kSuccess = 0;
inline constexpr Return kUninitialized = 1;
inline constexpr Return kInvalidArgument = 2;
inline constexpr Return kNotSupported = 3;
inline constexpr Return kAlreadyInitialized = 5;
inline constexpr Return kNotFound = 6;
inline constexpr Return kInsufficientSize = 7;
inline constexpr Return kDriverNotLoaded = 9;
inline constexpr Return kTimeout = 10;
inline constexpr Return kAipIsLost = 15;
inline constexpr Return kMemory = 20;
inline constexpr Return kNoData = 21;
inline constexpr Return kUnknown = 49;

using Device = void*;    ///< hlml_device_t
using EventSet = void*;  ///< hlml_event_set_t

/// Event type bits for hlml_device_register_events.
inline constexpr uint64_t kEventEccDoubleBit = 1ull << 0;  ///< HLML_EVENT_ECC_ERR / _ECC_DERR
inline constexpr uint64_t kEventCritical = 1ull << 1;
inline constexpr uint64_t kEventClockRate = 1ull << 2;
inline constexpr uint64_t kEventDramError = 1ull << 3;
inline constexpr uint64_t kEventEccSingleBit = 1ull << 4;

/// hlml_temperature_sensors_t.
inline constexpr uint32_t kTemperatureOnAip = 0;
inline constexpr uint32_t kTemperatureOnBoard = 1;
/// hlml_clock_type_t.
inline constexpr uint32_t kClockSoc = 0;
/// hlml_memory_error_type_t and hlml_ecc_counter_type_t.
inline constexpr uint32_t kErrorCorrected = 0;
inline constexpr uint32_t kErrorUncorrected = 1;
inline constexpr uint32_t kVolatileEcc = 0;
/// hlml_row_replacement_cause_t.
inline constexpr uint32_t kRowsMultipleSingleBit = 0;
inline constexpr uint32_t kRowsDoubleBit = 1;
/// HLML_DEVICE_ROW_RPL_MAX: the most replaced rows one call reports.
inline constexpr unsigned kMaxReplacedRows = 32;
/// hlml_enable_state_t.
inline constexpr uint32_t kEnabled = 1;

/// hlml_pci_info_t. The field order is HLML's, not NVML's, and bus_id is PCI_ADDR_LEN = 15
/// bytes ("0000:b3:00.0" plus NUL; not NUL-terminated when the text fills it).
struct PciInfo {
  uint32_t bus;
  char bus_id[15];
  uint32_t device;
  uint32_t domain;
  uint32_t pci_device_id;
  char link_speed[10];
  char link_width[10];
};
static_assert(sizeof(PciInfo) == 52);

/// hlml_utilization_t.
struct Utilization {
  uint32_t aip;
};

/// hlml_memory_t: bytes, in this order.
struct Memory {
  unsigned long long free;
  unsigned long long total;
  unsigned long long used;
};
static_assert(sizeof(Memory) == 24);

/// hlml_event_data_t.
struct EventData {
  Device device;
  unsigned long long event_type;
};
static_assert(sizeof(EventData) == 16);

/// hlml_row_address_t.
struct RowAddress {
  uint8_t hbm_idx;
  uint8_t pc;
  uint8_t sid;
  uint8_t bank_idx;
  uint16_t row_addr;
};
static_assert(sizeof(RowAddress) == 6);

// Function signatures, C linkage.
using InitFn = Return();
using InitWithFlagsFn = Return(unsigned flags);
using ShutdownFn = Return();
using GetCountFn = Return(unsigned* count);
using GetHandleByIndexFn = Return(unsigned index, Device* device);
using VersionFn = Return(char* buffer, unsigned length);      // hlml_get_{hlml,driver}_version
using DevStringFn = Return(Device, char* buffer, unsigned length);  // name, uuid, serial, fw
using DevUintFn = Return(Device, unsigned* value);            // minor, power, replays, ...
using DevPciInfoFn = Return(Device, PciInfo* pci);
using DevUtilizationFn = Return(Device, Utilization* utilization);
using DevMemoryFn = Return(Device, Memory* memory);
using DevTypedUintFn = Return(Device, uint32_t type, unsigned* value);  // temperature, clock
using DevEnergyFn = Return(Device, unsigned long long* millijoules);
using DevEccTotalFn = Return(Device, uint32_t error_type, uint32_t counter_type,
                             unsigned long long* count);
using DevReplacedRowsFn = Return(Device, uint32_t cause, unsigned* row_count, RowAddress* rows);
using DevEnableStateFn = Return(Device, uint32_t* state);
using EventSetCreateFn = Return(EventSet* set);
using EventSetFreeFn = Return(EventSet set);
using RegisterEventsFn = Return(Device, unsigned long long event_types, EventSet set);
using EventSetWaitFn = Return(EventSet set, EventData* data, unsigned timeout_ms);

}  // namespace accel::devices::hlml
