// JSON forms of a placement ("accel.placement/v1"), of a no-fit answer and of a request summary.
//
// The placement form maps Placement field by field, keys in a fixed order, every field always
// written, so write -> read -> write gives back the same bytes. docs/placement-schema.md documents
// it. Stateless functions; safe from any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "placement/placement.h"
#include "placement/request.h"

namespace accel::placement {

/// The `schema` string of a placement document.
inline constexpr const char* kPlacementSchema = "accel.placement/v1";

/// The placement as a JSON object, `schema` first, keys in the documented order.
nlohmann::ordered_json PlacementToJson(const Placement& p);

/// Reads a placement object. `where` names its origin for errors (a file, "claim c-… in PATH").
/// Returns the placement; throws InputError naming the field path (e.g. "cells[0].pinning.3")
/// for a wrong schema, a missing required key, an unknown key, or a value of the wrong type or range.
Placement PlacementFromJson(const nlohmann::ordered_json& j, const std::string& where);

/// PlacementToJson as text: 2-space indentation and a trailing newline.
std::string WritePlacementJson(const Placement& p);

/// Parses text then PlacementFromJson. Throws InputError for malformed JSON (with the byte
/// position) and for everything PlacementFromJson refuses.
Placement ReadPlacementJson(const std::string& text, const std::string& where);

/// {"fits": false, "reasons": [...]}: the JSON answer for a request that does not fit.
nlohmann::ordered_json NoFitToJson(const NoFit& no_fit);

/// What a request asks, for output next to its placement: flavor, vcpus, memory_mib, policies,
/// page_size, cells, pci, guest_topology (when set) and extra_specs. Output only; not read back.
nlohmann::ordered_json RequestSummaryToJson(const PlacementRequest& r);

}  // namespace accel::placement
