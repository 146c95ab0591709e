// The fleet's JSON documents, the same from the CLI (`-o json`) and the service's API:
// accel.fleet-hosts/v1 (HostJson per host), accel.fleet-capacity/v1 and accel.claims/v1.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fleet/capacity.h"
#include "fleet/fleet_store.h"
#include "fleet/fleet_view.h"

namespace accel::fleet {

/// One host: name, state, stale, labels, topology, policy, generation, heartbeat_at, updated_at,
/// accelerators {free, total}, pinnable_cpus {free, total}, claims [ids].
nlohmann::ordered_json HostJson(const HostEntry& e, int64_t now);

/// accel.fleet-capacity/v1: hosts, flavors[{flavor, count, runs_out_first, stops_on,
/// by_<group_by>}], stranded_accelerators, unwanted_accelerators,
/// stranded[{host, free_accelerators, stranded, unwanted, reason}], fragmentation{free_gpus,
/// fragmented_gpus, unwanted_gpus, hosts[{host, free_gpus, fragmented_gpus, unwanted_gpus}]}
/// (GPUs, to the thousandth).
nlohmann::ordered_json CapacityJson(const CapacityReport& report, const std::string& group_by);

/// accel.claims/v1: {schema, claims[{id, host, flavor, created_at, placement}]}.
nlohmann::ordered_json ClaimsJson(const std::vector<Claim>& claims);

}  // namespace accel::fleet
