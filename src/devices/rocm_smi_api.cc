#include "devices/rocm_smi_api.h"

namespace accel::devices::rsmi {

std::string Api::Resolve(const SharedLibrary& lib) {
  init = lib.Function<InitFn>("rsmi_init");
  shut_down = lib.Function<ShutDownFn>("rsmi_shut_down");
  num_monitor_devices = lib.Function<NumMonitorDevicesFn>("rsmi_num_monitor_devices");
  pci_id = lib.Function<DevU64Fn>("rsmi_dev_pci_id_get");
  if (!init) return "rsmi_init";
  if (!shut_down) return "rsmi_shut_down";
  if (!num_monitor_devices) return "rsmi_num_monitor_devices";
  if (!pci_id) return "rsmi_dev_pci_id_get";

  status_string = lib.Function<StatusStringFn>("rsmi_status_string");
  version_str = lib.Function<VersionStrGetFn>("rsmi_version_str_get");
  dev_id = lib.Function<DevU16Fn>("rsmi_dev_id_get");
  unique_id = lib.Function<DevU64Fn>("rsmi_dev_unique_id_get");
  name = lib.Function<DevNameFn>("rsmi_dev_name_get");
  brand = lib.Function<DevStringFn>("rsmi_dev_brand_get");
  serial = lib.Function<DevStringFn>("rsmi_dev_serial_number_get");
  vbios = lib.Function<DevStringFn>("rsmi_dev_vbios_version_get");
  render_minor = lib.Function<DevU32Fn>("rsmi_dev_drm_render_minor_get");
  busy_percent = lib.Function<DevU32Fn>("rsmi_dev_busy_percent_get");
  memory_busy_percent = lib.Function<DevU32Fn>("rsmi_dev_memory_busy_percent_get");
  temp_metric = lib.Function<DevTempMetricFn>("rsmi_dev_temp_metric_get");
  power_ave = lib.Function<DevSensorU64Fn>("rsmi_dev_power_ave_get");
  current_socket_power = lib.Function<DevU64Fn>("rsmi_dev_current_socket_power_get");
  power_cap = lib.Function<DevSensorU64Fn>("rsmi_dev_power_cap_get");
  energy_count = lib.Function<DevEnergyCountFn>("rsmi_dev_energy_count_get");
  memory_total = lib.Function<DevMemoryFn>("rsmi_dev_memory_total_get");
  memory_usage = lib.Function<DevMemoryFn>("rsmi_dev_memory_usage_get");
  pci_replay_counter = lib.Function<DevU64Fn>("rsmi_dev_pci_replay_counter_get");
  ecc_enabled = lib.Function<DevU64Fn>("rsmi_dev_ecc_enabled_get");
  ecc_count = lib.Function<DevEccCountFn>("rsmi_dev_ecc_count_get");
  event_init = lib.Function<EventInitFn>("rsmi_event_notification_init");
  event_stop = lib.Function<EventInitFn>("rsmi_event_notification_stop");
  event_mask_set = lib.Function<EventMaskSetFn>("rsmi_event_notification_mask_set");
  event_get = lib.Function<EventGetFn>("rsmi_event_notification_get");
  return "";
}

std::string Api::StatusText(Status status) const {
  const char* text = nullptr;
  if (status_string && status_string(status, &text) == kSuccess && text && *text) return text;
  return "rsmi status " + std::to_string(status);
}

}  // namespace accel::devices::rsmi
