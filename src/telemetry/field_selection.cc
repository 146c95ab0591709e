// ExtraReadsFor and SelectionWarning: what a field selection costs the devices and what it
// tells the operator at start.
#include "telemetry/field_selection.h"

#include "common/strings.h"
#include "telemetry/dcgm_fields.h"

namespace accel::telemetry {

devices::ExtraReads ExtraReadsFor(const FieldSelection& selection) {
  devices::ExtraReads extra;
  if (selection.dcgm) {
    for (const DcgmCounter& c : selection.dcgm->counters) extra.Merge(c.field->needs);
  }
  return extra;  // every gpu_* family accel serves comes from the default AMD reads
}

bool NeedsEventWindows(const FieldSelection& selection) {
  if (!selection.dcgm) return false;
  for (const DcgmCounter& c : selection.dcgm->counters) {
    if (c.field->shape == DcgmShape::kXidWindow || c.field->shape == DcgmShape::kClockWindow) {
      return true;
    }
  }
  return false;
}

std::string SelectionWarning(const FieldSelection& selection) {
  std::vector<std::string> parts;
  if (selection.dcgm) {
    const DcgmCounters& d = *selection.dcgm;
    if (!d.not_served.empty()) {
      parts.push_back(d.source + ": " + std::to_string(d.not_served.size()) +
                      " field(s) accel cannot read, not served: " + JoinStrings(d.not_served, ", "));
    }
    if (!d.duplicates.empty()) {
      parts.push_back(d.source + ": listed again, first line kept: " +
                      JoinStrings(d.duplicates, ", "));
    }
  }
  if (selection.amd) {
    const AmdMetricsConfig& a = *selection.amd;
    if (!a.not_served.empty()) {
      parts.push_back(a.source + ": " + std::to_string(a.not_served.size()) +
                      " GPUConfig.Fields accel cannot read, not served: " +
                      JoinStrings(a.not_served, ", "));
    }
    if (!a.ignored_settings.empty()) {
      parts.push_back(a.source + ": not applied (accel prints its fixed label set): " +
                      JoinStrings(a.ignored_settings, ", "));
    }
  }
  if (parts.empty()) return "";
  return "warning: field selection: " + JoinStrings(parts, "; ");
}

}  // namespace accel::telemetry
