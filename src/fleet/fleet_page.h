// The fleet page `accel fleet serve` shows at `/`: plain HTML, no script and nothing loaded from
// elsewhere — the hosts (state, labels, free GPUs, pinnable CPUs and pages), the capacity of the
// service's flavors, stranded accelerators, and each host's picture (an SVG the service itself
// serves at /hosts/NAME.svg, loaded lazily).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleet/capacity.h"
#include "fleet/fleet_store.h"
#include "fleet/fleet_view.h"

namespace accel::fleet {

/// The HTML page. Elements a browser test reads: table#hosts with one tr[data-host=NAME] per
/// host (cells .state, .labels, .gpus, .cpus, .pages), table#capacity with one
/// tr[data-flavor=NAME] per flavor whose td.count holds the number, img.host-picture per host.
std::string FleetPage(const FleetView& view, const CapacityReport& capacity, int64_t now);

/// The SVG picture of host `e` with `claims` (its live claims) coloured (placement/host_picture.h).
std::string HostPicture(const HostEntry& e, const std::vector<Claim>& claims);

/// `text` with & < > " ' escaped for HTML/XML text and attribute values.
std::string HtmlEscape(const std::string& text);

}  // namespace accel::fleet
