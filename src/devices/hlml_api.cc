#include "devices/hlml_api.h"

namespace accel::devices::hlml {

std::string Api::Resolve(const SharedLibrary& lib) {
  init = lib.Function<InitFn>("hlml_init");
  init_with_flags = lib.Function<InitWithFlagsFn>("hlml_init_with_flags");
  shutdown = lib.Function<ShutdownFn>("hlml_shutdown");
  get_count = lib.Function<GetCountFn>("hlml_device_get_count");
  handle_by_index = lib.Function<GetHandleByIndexFn>("hlml_device_get_handle_by_index");
  if (!init && !init_with_flags) return "hlml_init";
  if (!shutdown) return "hlml_shutdown";
  if (!get_count) return "hlml_device_get_count";
  if (!handle_by_index) return "hlml_device_get_handle_by_index";
  driver_version = lib.Function<VersionFn>("hlml_get_driver_version");
  hlml_version = lib.Function<VersionFn>("hlml_get_hlml_version");
  name = lib.Function<DevStringFn>("hlml_device_get_name");
  uuid = lib.Function<DevStringFn>("hlml_device_get_uuid");
  serial = lib.Function<DevStringFn>("hlml_device_get_serial");
  firmware_fit = lib.Function<DevStringFn>("hlml_get_firmware_fit_version");
  minor = lib.Function<DevUintFn>("hlml_device_get_minor_number");
  pci_info = lib.Function<DevPciInfoFn>("hlml_device_get_pci_info");
  utilization = lib.Function<DevUtilizationFn>("hlml_device_get_utilization_rates");
  memory = lib.Function<DevMemoryFn>("hlml_device_get_memory_info");
  temperature = lib.Function<DevTypedUintFn>("hlml_device_get_temperature");
  clock = lib.Function<DevTypedUintFn>("hlml_device_get_clock_info");
  power_usage = lib.Function<DevUintFn>("hlml_device_get_power_usage");
  power_default_limit =
      lib.Function<DevUintFn>("hlml_device_get_power_management_default_limit");
  energy = lib.Function<DevEnergyFn>("hlml_device_get_total_energy_consumption");
  pcie_replays = lib.Function<DevUintFn>("hlml_device_get_pcie_replay_counter");
  ecc_total = lib.Function<DevEccTotalFn>("hlml_device_get_total_ecc_errors");
  replaced_rows = lib.Function<DevReplacedRowsFn>("hlml_device_get_replaced_rows");
  replaced_rows_pending =
      lib.Function<DevEnableStateFn>("hlml_device_get_replaced_rows_pending_status");
  event_set_create = lib.Function<EventSetCreateFn>("hlml_event_set_create");
  event_set_free = lib.Function<EventSetFreeFn>("hlml_event_set_free");
  register_events = lib.Function<RegisterEventsFn>("hlml_device_register_events");
  event_set_wait = lib.Function<EventSetWaitFn>("hlml_event_set_wait");
  return "";
}

namespace {

const char* ReturnName(Return r) {
  switch (r) {
    case kSuccess: return "HLML_SUCCESS";
    case kUninitialized: return "HLML_ERROR_UNINITIALIZED";
    case kInvalidArgument: return "HLML_ERROR_INVALID_ARGUMENT";
    case kNotSupported: return "HLML_ERROR_NOT_SUPPORTED";
    case kAlreadyInitialized: return "HLML_ERROR_ALREADY_INITIALIZED";
    case kNotFound: return "HLML_ERROR_NOT_FOUND";
    case kInsufficientSize: return "HLML_ERROR_INSUFFICIENT_SIZE";
    case kDriverNotLoaded: return "HLML_ERROR_DRIVER_NOT_LOADED";
    case kTimeout: return "HLML_ERROR_TIMEOUT";
    case kAipIsLost: return "HLML_ERROR_AIP_IS_LOST";
    case kMemory: return "HLML_ERROR_MEMORY";
    case kNoData: return "HLML_ERROR_NO_DATA";
    case kUnknown: return "HLML_ERROR_UNKNOWN";
  }
  return "HLML error";
}

}  // namespace

std::string ReturnText(Return r) {
  return std::string(ReturnName(r)) + " (" + std::to_string(r) + ")";
}

}  // namespace accel::devices::hlml
