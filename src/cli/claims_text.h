// Claims as people read them: the table of `accel claims` / `accel fleet claims`; JSON and
// YAML from fleet::ClaimsJson (fleet/fleet_json.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/fleet_store.h"

namespace accel::cli {

/// Aligned table: ID, HOST, FLAVOR, CREATED, NODES, CPUS, DEVICES.
std::string ClaimsTable(const std::vector<fleet::Claim>& claims);

/// Prints `claims` as `output` ("table", "json" or "yaml"); an empty table says
/// "no claims in STORE".
void PrintClaims(const std::vector<fleet::Claim>& claims, const std::string& output, const std::string& store);

}  // namespace accel::cli
