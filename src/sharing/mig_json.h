// JSON forms of MIG data for `accel mig ... -o json|yaml` and for the node agent: profiles,
// layouts, validation findings and plans. Field names are snake_case and stable (documented in
// docs/mig.md). Stateless; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "sharing/mig_geometry.h"
#include "sharing/mig_layout.h"
#include "sharing/mig_parted_config.h"
#include "sharing/mig_planner.h"

namespace accel::sharing {

/// {"name", "compute_slices", "memory_slices", "max_count", "profile_id" (null if unknown),
///  "memory_gib" (null if unknown), "media_extension", "attributes" ("+me", "+me.all", "+gfx",
///  "-me" or ""), "all_media", "no_media", "graphics", "other_names": [...],
///  "placements": [{"start","size"}], "confirmed"}
nlohmann::ordered_json ProfileToJson(const MigProfile& profile);

/// {"model", "aliases", "pci_ids": ["0x233010DE"], "memory_slices", "compute_slices",
///  "min_driver", "profiles": [...]}
nlohmann::ordered_json ModelToJson(const GpuModel& model);

/// {"slots": "4444221.", "instances": [{"profile", "start", "size", "compute_slices"}]}
nlohmann::ordered_json LayoutToJson(const GpuModel& model, const MigLayout& layout);

/// {"config", "entry", "line", "model", "severity" ("error" or "warning"), "message"}
nlohmann::ordered_json FindingToJson(const ConfigFinding& finding);

/// {"summary": {"demand", "satisfied", "gpus", "gpus_changed", "free_score",
///  "by_profile": [{"profile", "demand", "satisfied"}]},
///  "gpus": [{"node", "index", "model", "changed", "current": layout, "target": layout,
///            "destroy": [...], "create": [...]}]}
nlohmann::ordered_json PlanToJson(const Fleet& fleet, const Demand& demand, const Plan& plan);

/// "0x233010DE"
std::string PciIdString(uint32_t pci_id);

}  // namespace accel::sharing
