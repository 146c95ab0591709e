// The exporter profile setting, shared by `accel exporter --profile` and the node agent's
// `exporter.profile`: which vendor compatibility families RenderMetrics prints.
#pragma once

#include <string>

#include "telemetry/render.h"

namespace accel::telemetry {

/// Render options for `profile`: "auto" (or empty: every vendor's family), "none" (only the
/// accel_* family), or a comma list of dcgm, amd, gaudi (empty items are skipped; "none"
/// anywhere in the list wins). Fields other than dcgm/amd/gaudi keep RenderOptions' defaults.
/// Throws InputError(where, field, "unknown profile '<item>'", hint) on any other item.
RenderOptions RenderOptionsForProfile(const std::string& profile, const std::string& where,
                                      const std::string& field);

}  // namespace accel::telemetry
