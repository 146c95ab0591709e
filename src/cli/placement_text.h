// Human-readable rendering of a placement answer for `accel place -o text`.
#pragma once

#include <string>

#include "placement/engine.h"
#include "placement/request.h"
#include "topology/host.h"

namespace accel::cli {

/// A few lines per flavor: where each guest cell went, its pinning, pages, emulator CPUs and
/// devices (with their locality), the claim id when claimed; or the no-fit reasons.
std::string RenderPlacementText(const topology::HostTopology& host,
                                const placement::PlacementRequest& request,
                                const placement::PlaceResult& result, const std::string& claim_id,
                                const std::string& state_path);

}  // namespace accel::cli
