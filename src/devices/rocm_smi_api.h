// RocmSmiApi: the rsmi_* functions of one loaded ROCm SMI library, resolved with dlsym.
//
// Plain table of function pointers; read-only after Resolve(), so safe from any thread.
#pragma once

#include <string>

#include "devices/rocm_smi_abi.h"
#include "devices/shared_library.h"

namespace accel::devices::rsmi {

struct Api {
  // Required: without these the library is not a usable ROCm SMI.
  InitFn* init = nullptr;
  ShutDownFn* shut_down = nullptr;
  NumMonitorDevicesFn* num_monitor_devices = nullptr;
  DevU64Fn* pci_id = nullptr;

  // Optional: a null pointer means the library lacks the call and the field stays absent.
  StatusStringFn* status_string = nullptr;
  VersionStrGetFn* version_str = nullptr;
  DevU16Fn* dev_id = nullptr;
  DevU64Fn* unique_id = nullptr;
  DevNameFn* name = nullptr;
  DevStringFn* brand = nullptr;
  DevStringFn* serial = nullptr;
  DevStringFn* vbios = nullptr;
  DevU32Fn* render_minor = nullptr;
  DevU32Fn* busy_percent = nullptr;
  DevU32Fn* memory_busy_percent = nullptr;
  DevTempMetricFn* temp_metric = nullptr;
  DevSensorU64Fn* power_ave = nullptr;
  DevU64Fn* current_socket_power = nullptr;  ///< ROCm 6+ only (MI300 socket power)
  DevSensorU64Fn* power_cap = nullptr;
  DevEnergyCountFn* energy_count = nullptr;
  DevMemoryFn* memory_total = nullptr;
  DevMemoryFn* memory_usage = nullptr;
  DevU64Fn* pci_replay_counter = nullptr;
  DevU64Fn* ecc_enabled = nullptr;
  DevEccCountFn* ecc_count = nullptr;
  EventInitFn* event_init = nullptr;
  EventInitFn* event_stop = nullptr;
  EventMaskSetFn* event_mask_set = nullptr;
  EventGetFn* event_get = nullptr;

  /// Fills every pointer from `lib`. Returns "" on success, else the name of the first missing
  /// required symbol.
  std::string Resolve(const SharedLibrary& lib);

  /// rsmi_status_string's text for `status`, or "rsmi status N" when the library has none.
  std::string StatusText(Status status) const;
};

}  // namespace accel::devices::rsmi
