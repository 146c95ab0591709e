// Renders a Snapshot as Prometheus text exposition format 0.0.4.
//
// Profiles: `dcgm` (dcgm-exporter's 25 default metrics, names, types, label order and value
// formatting), `amd` (device-metrics-exporter gpu_* names and labels), `gaudi` (habanalabs_*),
// each applied to the devices of its vendor, and the vendor-neutral `accel_*` family for every
// device. Pure functions: thread-safe, no I/O.
#pragma once

#include <memory>
#include <string>

#include "telemetry/field_selection.h"
#include "telemetry/snapshot.h"

namespace accel::telemetry {

struct RenderOptions {
  /// Render each vendor's compatibility profile for the devices of that vendor.
  bool dcgm = true;   ///< NVIDIA devices as DCGM_FI_* series
  bool amd = true;    ///< AMD devices as gpu_* series
  bool gaudi = true;  ///< Gaudi devices as habanalabs_* series
  /// Render the accel_* family for every device.
  bool accel = true;
  /// Name of dcgm's hostname label: "Hostname" (every released dcgm-exporter), "hostname"
  /// (dcgm-exporter HEAD), or "" to omit it (--no-hostname).
  std::string dcgm_hostname_label = "Hostname";
  /// The fields a counters CSV / AMD metrics config selected (field_selection.h); null, or an
  /// absent part, keeps that profile's built-in set.
  std::shared_ptr<const FieldSelection> fields;
};

/// Appends the exposition of `snapshot` to *out (cleared first). Every family is one contiguous
/// group: HELP, TYPE, samples; families without samples are not printed; the text ends in '\n'.
/// Throws InputError only when options.dcgm_hostname_label is not a valid label name (callers
/// validate flags first, as `accel exporter` does).
void RenderMetrics(const Snapshot& snapshot, const RenderOptions& options, std::string* out);

}  // namespace accel::telemetry
