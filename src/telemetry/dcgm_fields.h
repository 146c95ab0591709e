// The DCGM fields accel serves from NVML/GPM, and the names DCGM itself knows.
//
// A dcgm-exporter counters CSV names DCGM fields (DCGM_FI_*, the exporter's own DCGM_EXP_*, or
// go-dcgm's legacy 1.x spellings such as dcgm_gpu_temp). Each name here is either
// - served: a DcgmField below says where its value comes from (the NVML call, the unit, what a
//   MIG GPU-instance row shows) and which opt-in device reads it needs;
// - known but not served: a real DCGM field accel has no source for (IsDcgmFieldName is true,
//   FindDcgmField is null) — the counters reader names these in its one warning;
// - unknown: not a DCGM name at all — a typo, an InputError for the reader.
// The table of known names follows go-dcgm's const_fields.go and legacy_fields.csv (DCGM 4.x):
// every DCGM_FI_* field id name, plus the four DCGM_EXP_* exporter counters. Private to
// src/telemetry; thread-safe (immutable tables built on first use).
#pragma once

#include <string_view>
#include <vector>

#include "devices/device.h"
#include "telemetry/render_internal.h"

namespace accel::telemetry {

/// Where a field's value comes from on a MIG GPU-instance row.
enum class DcgmMigSource {
  kDevice,            ///< the GPU-wide reading repeated on every instance (clocks, power, ...)
  kNone,              ///< not rendered for MIG (the *_UTIL fields, as in DCGM)
  kInstance,          ///< the instance's own reading only (framebuffer, GPM activity)
  kInstanceOrDevice,  ///< PCIe traffic: the instance's when it has it, else the GPU's link
};

/// How a field's series are shaped.
enum class DcgmShape {
  kValue,        ///< one sample per row, the value from the row's Sample
  kLabel,        ///< a label on every other series of the device (CSV type `label`)
  kXid,          ///< DCGM_FI_DEV_XID_ERRORS: the last XID with err_code / err_msg labels
  kXidWindow,    ///< DCGM_EXP_XID_ERRORS_COUNT: XIDs per code in the sliding window
  kClockWindow,  ///< DCGM_EXP_CLOCK_EVENTS_COUNT: clock-event samples per reason in the window
  kP2p,          ///< DCGM_EXP_P2P_STATUS: NVLink P2P status towards each other GPU
  kNvlinkLink,   ///< DCGM_FI_DEV_NVLINK_BANDWIDTH_L<n>: one link's rate (DcgmField::link)
};

/// The identity string a label field shows.
using DcgmLabelValue = std::string_view (*)(const Snapshot&, const DeviceState&);

/// One DCGM field accel serves.
struct DcgmField {
  /// DCGM's name, e.g. "DCGM_FI_DEV_FB_TOTAL".
  const char* name;
  DcgmShape shape;
  /// The type and HELP the built-in set prints (the default profile); a CSV line gives its own.
  MetricType type;
  const char* help;
  /// kValue: the value from a row's Sample (None() when absent).
  internal::Value (*value)(const devices::Sample&) = nullptr;
  DcgmMigSource mig = DcgmMigSource::kDevice;
  /// kLabel: the label's value.
  DcgmLabelValue label = nullptr;
  /// The device reads beyond the default set this field needs.
  devices::ExtraReads needs;
  /// kNvlinkLink: the link number.
  unsigned link = 0;
  /// Where the value comes from, for docs/metrics.md and the tests: the NVML call and unit.
  const char* source = "";
};

/// Every field accel serves, in catalog order (DCGM_FI_DEV_NVLINK_BANDWIDTH_L0..L17 included).
const std::vector<DcgmField>& DcgmFields();

/// The served field named `name`: a DCGM_FI_* / DCGM_EXP_* name, or a go-dcgm legacy name
/// (dcgm_gpu_temp ...) resolved to the field it stands for. Null when accel does not serve it.
const DcgmField* FindDcgmField(std::string_view name);

/// True when DCGM knows `name` (any DCGM_FI_* field, DCGM_EXP_* counter, or legacy name),
/// whether accel serves it or not.
bool IsDcgmFieldName(std::string_view name);

/// The DCGM name a go-dcgm legacy name stands for ("dcgm_gpu_temp" -> "DCGM_FI_DEV_GPU_TEMP"),
/// or `name` itself when it is not a legacy name.
std::string_view CanonicalDcgmName(std::string_view name);

/// Why accel does not serve the known field `name`, for the start-up warning: a specific reason
/// where one is worth saying (DCGM's health engine, NVSwitch or CPU entities), else "".
std::string_view WhyNotServed(std::string_view name);

/// The 25 fields of the default profile (dcgm-exporter's default-counters.csv, minus the
/// DCGM_FI_DRIVER_VERSION label, which the default profile always prints), in that file's order.
const std::vector<const DcgmField*>& DefaultDcgmFields();

}  // namespace accel::telemetry
