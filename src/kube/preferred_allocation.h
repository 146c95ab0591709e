// PreferredAllocation: the answer to one GetPreferredAllocation container request — the best
// interconnected whole devices (BestDeviceSet), replicas spread or packed over their units
// (PickReplicas), and a NUMA-then-index fallback whenever neither applies, so the kubelet always
// gets an answer (NVIDIA's plugin failed every admission when link discovery failed, #2038).
//
// A pure function over the resource and node; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "kube/plugin_server.h"
#include "kube/resources.h"

namespace accel::kube {

/// `size` IDs out of `available` (IDs of `resource`) that include every `required` one, required
/// first. Unknown IDs and duplicates are ignored; never throws. Whole devices of a node with an
/// interconnect that knows them all: the best interconnected set. Shared resources: replicas by
/// `node.config->replica_policy`. Otherwise (no interconnect, a device missing from it, MIG
/// devices): devices on the NUMA nodes of the required ones first, then the one NUMA node that
/// fits the rest most tightly, then the largest NUMA groups, in device order within a group. The
/// answer is shorter than `size` when fewer IDs are available, and holds every known required
/// ID even when they exceed `size`.
std::vector<std::string> PreferredAllocation(const PluginResource& resource, const PluginNode& node,
                                             const std::vector<std::string>& available,
                                             const std::vector<std::string>& required, int size);

}  // namespace accel::kube
