// Field selection as the vendors' exporters do it: a dcgm-exporter counters CSV (`-f`,
// `--collectors`) picks the dcgm profile's DCGM_* series, and the `GPUConfig.Fields` list of
// AMD device-metrics-exporter's config.json picks the amd profile's gpu_* series.
//
// The readers take the files users already have, unchanged (the ConfigMaps of the GPU Operator
// and the ROCm exporter), and say exactly what they could not do: a syntax error, an unknown name
// or a bad type is an InputError with the file and line; a real field accel has no source for is
// kept out of the output and named in the one start-up warning (SelectionWarning), never dropped
// silently. Pure functions of their input; the results are immutable and shared read-only.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "devices/device.h"
#include "http/exposition.h"

namespace accel::telemetry {

// Every metric is written with the exposition writer of the http layer (http/exposition.h).
using http::MetricType;

struct DcgmField;

/// One line of a counters CSV that accel serves.
struct DcgmCounter {
  /// The Prometheus metric (or label) name: the CSV's first column as written, so a legacy
  /// `dcgm_gpu_temp` stays `dcgm_gpu_temp`.
  std::string metric;
  /// What accel reads for it (dcgm_fields.h); never null.
  const DcgmField* field = nullptr;
  /// The CSV's type: gauge or counter (`label` lines have is_label).
  MetricType type = MetricType::kGauge;
  bool is_label = false;
  /// The CSV's help text, verbatim (trimmed).
  std::string help;
  /// 1-based line of the file.
  int line = 0;
};

/// A counters CSV read by ParseDcgmCounters.
struct DcgmCounters {
  /// The file name, for messages.
  std::string source;
  /// What accel serves, in file order (labels included). Non-empty.
  std::vector<DcgmCounter> counters;
  /// Known DCGM fields the file lists that accel cannot read: "NAME (line N)" or
  /// "NAME (line N: reason)".
  std::vector<std::string> not_served;
  /// Metric names listed again after their first line: "NAME (line N, first at line M)". The
  /// first line is served (dcgm-exporter would print the family twice, which Prometheus refuses).
  std::vector<std::string> duplicates;
};

/// Reads a dcgm-exporter counters CSV (etc/default-counters.csv format): records of
/// `DCGM field, Prometheus type, help text`; `#` starts a comment line; blank lines are
/// skipped; each field is trimmed of spaces and tabs; RFC 4180 quoting ("help, with commas",
/// "" for a quote) as Go's encoding/csv reads it, which dcgm-exporter uses. Names are DCGM_FI_*,
/// DCGM_EXP_* or go-dcgm's legacy 1.x names (dcgm_gpu_temp, ...); types gauge, counter or label.
/// Where accel is more lenient than dcgm-exporter: a '#' after leading blanks is a comment, and a
/// quoted field may follow blanks. `source` names the file in errors.
/// Throws InputError("<source>:<line>", ...) on: a record without exactly 3 fields, an
/// unterminated quote or text after a closing quote, an unknown field name (with the closest
/// served name as a hint), a type other than gauge/counter/label (histogram and summary, which
/// dcgm-exporter takes but cannot print validly, included), `label` on a numeric field or a
/// number type on a label field, and a file that lists no field accel serves.
DcgmCounters ParseDcgmCounters(std::string_view text, const std::string& source);

/// ParseDcgmCounters on the file at `path`. Throws InputError when it cannot be read.
DcgmCounters LoadDcgmCounters(const std::string& path);

/// AMD device-metrics-exporter settings read by ParseAmdMetricsConfig.
struct AmdMetricsConfig {
  /// The file name, for messages.
  std::string source;
  /// True when GPUConfig.Fields is absent or empty: the exporter then exports every field.
  bool all_fields = true;
  /// The listed fields accel serves, upper case as listed (GPU_POWER_USAGE -> gpu_power_usage).
  std::vector<std::string> fields;
  /// Listed fields accel cannot read (known device-metrics-exporter names): "NAME".
  std::vector<std::string> not_served;
  /// CommonConfig.MetricsFieldPrefix, put in front of every gpu_* / pcie_* name ("" = none).
  std::string prefix;
  /// Settings in the file that accel does not apply (GPUConfig.Labels, CustomLabels,
  /// ExtraPodLabels when given): named in the start-up warning.
  std::vector<std::string> ignored_settings;
};

/// Reads device-metrics-exporter's config.json (the `-amd-metrics-config` file,
/// /etc/metrics/config.json), or a Kubernetes ConfigMap holding it under data."config.json"
/// (the exporter's example configmap.yaml). Only GPUConfig.Fields and
/// CommonConfig.MetricsFieldPrefix select what is served; other sections (NICConfig, ...) are
/// another exporter's business and ignored. Throws InputError(source, "<key path>", ...) on: text
/// that is neither JSON nor YAML, GPUConfig.Fields that is not a list of strings, a field name
/// device-metrics-exporter does not define, or a prefix that is not a Prometheus name start.
AmdMetricsConfig ParseAmdMetricsConfig(std::string_view text, const std::string& source);

/// ParseAmdMetricsConfig on the file at `path`. Throws InputError when it cannot be read.
AmdMetricsConfig LoadAmdMetricsConfig(const std::string& path);

/// Every GPU field name device-metrics-exporter defines (GPUConfig.Fields vocabulary), in its
/// config's order.
const std::vector<std::string>& AmdFieldNames();

/// The amd profile's field names accel renders (GPU_POWER_USAGE, ..., GPU_HEALTH,
/// GPU_NODES_TOTAL), in render order.
const std::vector<std::string>& AmdServedFields();

/// What a user selected. Absent parts keep the built-in set of that profile. Immutable; share it
/// through std::shared_ptr<const FieldSelection>.
struct FieldSelection {
  std::optional<DcgmCounters> dcgm;
  std::optional<AmdMetricsConfig> amd;
};

/// The device reads `selection` needs beyond the default set (devices::ExtraReads).
devices::ExtraReads ExtraReadsFor(const FieldSelection& selection);

/// True when `selection` lists a sliding-window count (DCGM_EXP_XID_ERRORS_COUNT,
/// DCGM_EXP_CLOCK_EVENTS_COUNT), so the collector must keep per-device event history.
bool NeedsEventWindows(const FieldSelection& selection);

/// The one start-up warning for `selection`: every listed field accel cannot read, duplicates
/// and settings it does not apply, each part naming its file. "" when there is nothing to say.
std::string SelectionWarning(const FieldSelection& selection);

}  // namespace accel::telemetry
