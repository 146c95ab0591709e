// Claims as people and programs read them: the table of `accel claims` / `accel fleet claims`
// and the accel.claims/v1 JSON document.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/fleet_store.h"

namespace accel::cli {

/// Aligned table: ID, HOST, FLAVOR, CREATED, NODES, CPUS, DEVICES.
std::string ClaimsTable(const std::vector<fleet::Claim>& claims);

/// {"schema": "accel.claims/v1", "claims": [{id, host, flavor, created_at, placement}]}
nlohmann::ordered_json ClaimsJson(const std::vector<fleet::Claim>& claims);

/// Prints `claims` as `output` ("table", "json" or "yaml"); an empty table says
/// "no claims in STORE".
void PrintClaims(const std::vector<fleet::Claim>& claims, const std::string& output, const std::string& store);

}  // namespace accel::cli
