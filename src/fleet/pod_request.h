// Pod-shaped requests as documents: what `accel fleet place --pod FILE` reads and what
// POST /api/v1/place takes instead of a flavor. One object, YAML or JSON:
//
//   name: train-7            # required: what the claim is recorded as (its "flavor")
//   cpu_milli: 4000          # CPU thousandths from the host's shared pool (default 0)
//   memory_mib: 16384        # memory (default 0)
//   gpu:                     # optional
//     count: 1               #   GPUs of one host (default 1)
//     milli: 470             #   thousandths of each: < 1000 = a time-slicing/MPS share (count 1)
//     mig_profile: 1g.10gb   #   or one MIG slice of this profile (count 1, milli not given)
//     models: [T4, A10]      #   allowed GPU models (words of the GPU's name or vvvv:dddd)
//
// Pure functions; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "placement/request.h"

namespace accel::fleet {

/// The request of pod document `doc` (see above), MIG shapes resolved from the catalog. Throws
/// InputError naming `where` and the field for an unknown key, a wrong type or a value out of
/// range (milli 1..1000; a share or a MIG slice with count > 1; both milli < 1000 and a MIG
/// profile; a MIG profile no model has).
placement::PlacementRequest PodRequestFromJson(const nlohmann::json& doc, const std::string& where);

/// The document of `request` (a pod-shaped request: cpu_milli, memory and a GpuRequest).
nlohmann::ordered_json PodRequestToJson(const placement::PlacementRequest& request);

}  // namespace accel::fleet
