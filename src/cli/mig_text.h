// Human-readable output of `accel mig ...` (-o table / text).
#pragma once

#include <string>
#include <vector>

#include "sharing/mig_geometry.h"
#include "sharing/mig_layout.h"
#include "sharing/mig_parted_config.h"
#include "sharing/mig_planner.h"

namespace accel::cli {

/// MODEL PROFILE ID COMPUTE MEMORY MAX PLACEMENTS GiB ATTRIBUTES NOTE, one row per profile;
/// ATTRIBUTES explains "+me", "+me.all", "+gfx" and "-me"; NOTE says what is unconfirmed and
/// the other names a profile goes by.
std::string ProfilesTable(const std::vector<const sharing::GpuModel*>& models);

/// One row per layout (slot string, instances) and a count line.
std::string LayoutsTable(const sharing::GpuModel& model,
                         const std::vector<sharing::MigLayout>& layouts, bool maximal);

/// One line per finding (warnings marked "warning:"), then "FILE: N configs, all valid" (with
/// the number of warnings, if any) or "FILE: N problem(s)".
std::string ValidationText(const std::string& file, const sharing::MigPartedConfig& config,
                           const std::vector<sharing::ConfigFinding>& findings);

/// Demand summary, then a table of GPUs: current → target, what is destroyed and created.
std::string PlanText(const sharing::Fleet& fleet, const sharing::Demand& demand,
                     const sharing::Plan& plan);

}  // namespace accel::cli
