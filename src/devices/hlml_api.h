// hlml::Api: the hlml_* functions of one loaded HLML library, resolved with dlsym.
//
// Plain table of function pointers; read-only after Resolve(), so safe from any thread.
#pragma once

#include <string>

#include "devices/hlml_abi.h"
#include "devices/shared_library.h"

namespace accel::devices::hlml {

struct Api {
  // Required: init (either flavour), shutdown, count, handle by index. The rest are optional: a
  // null pointer means the library lacks the call and the field stays absent.
  InitFn* init = nullptr;
  InitWithFlagsFn* init_with_flags = nullptr;
  ShutdownFn* shutdown = nullptr;
  GetCountFn* get_count = nullptr;
  GetHandleByIndexFn* handle_by_index = nullptr;
  VersionFn* driver_version = nullptr;
  VersionFn* hlml_version = nullptr;
  DevStringFn* name = nullptr;
  DevStringFn* uuid = nullptr;
  DevStringFn* serial = nullptr;
  DevStringFn* firmware_fit = nullptr;
  DevUintFn* minor = nullptr;
  DevPciInfoFn* pci_info = nullptr;
  DevUtilizationFn* utilization = nullptr;
  DevMemoryFn* memory = nullptr;
  DevTypedUintFn* temperature = nullptr;
  DevTypedUintFn* clock = nullptr;
  DevUintFn* power_usage = nullptr;
  DevUintFn* power_default_limit = nullptr;
  DevEnergyFn* energy = nullptr;
  DevUintFn* pcie_replays = nullptr;
  DevEccTotalFn* ecc_total = nullptr;
  DevReplacedRowsFn* replaced_rows = nullptr;
  DevEnableStateFn* replaced_rows_pending = nullptr;
  EventSetCreateFn* event_set_create = nullptr;
  EventSetFreeFn* event_set_free = nullptr;
  RegisterEventsFn* register_events = nullptr;
  EventSetWaitFn* event_set_wait = nullptr;

  /// Fills every pointer from `lib`. Returns "" on success, else the name of the first missing
  /// required symbol.
  std::string Resolve(const SharedLibrary& lib);
};

/// "HLML_ERROR_TIMEOUT (10)": the enum name and number (HLML has no error-string call).
std::string ReturnText(Return r);

}  // namespace accel::devices::hlml
