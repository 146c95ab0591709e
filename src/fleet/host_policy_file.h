// A host's policy file (`accel fleet host add --policy FILE`): how the operator lets guests use
// the host, in the names of Nova's nova.conf options so a file can be written from nova.conf:
//
//   cpu_dedicated_set: "2-31,34-63"      # [compute]cpu_dedicated_set; default: every CPU
//   cpu_shared_set: "0-1,32-33"          # [compute]cpu_shared_set; default: every CPU
//   cpu_allocation_ratio: 4.0            # [DEFAULT]cpu_allocation_ratio for shared vCPUs
//   reserved_host_memory_mb: 4096        # base-page MiB per NUMA node kept for the host
//   packing_host_numa_cells_allocation_strategy: true   # [compute]: pack (true) or spread nodes
//
// YAML or JSON; unknown keys are refused with the closest known one. The same JSON form is what
// the store keeps per host.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "placement/usage.h"

namespace accel::fleet {

/// Reads a policy file. Throws InputError naming the file and key for an unreadable file, an
/// unknown key, a malformed CPU set or a ratio/size out of range.
placement::HostPolicy LoadHostPolicy(const std::string& path);

/// Reads the policy from a parsed document (`where` names it in errors). Missing keys keep
/// HostPolicy's defaults.
placement::HostPolicy HostPolicyFromJson(const nlohmann::json& doc, const std::string& where);

/// The policy in the file's form; keys at their default are left out.
nlohmann::json HostPolicyToJson(const placement::HostPolicy& policy);

}  // namespace accel::fleet
