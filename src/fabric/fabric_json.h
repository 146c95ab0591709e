// A Fabric as JSON, the shape `accel fabric pairs -o json|yaml` prints and scripts read:
//   {"pairs": [{"gpu", "index", "numa_node", "nic": {...} | null,
//               "path": {"nccl", "smi", "bandwidth_gbs", "hops"}}],
//    "nics": [{"rdma_device", "port", "pci_address", "netdev", "numa_node", "link_layer",
//              "state", "rate_gbps", "vf", "used", "excluded": reason | null}],
//    "notes": [...]}
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "fabric/pairing.h"

namespace accel::fabric {

/// One NIC port as the "nic"/"nics" objects above (without "used"/"excluded").
nlohmann::ordered_json NicToJson(const FabricNic& nic);

/// One path as {"nccl": "PIX", "smi": "PIX", "bandwidth_gbs": 48, "hops": 2}.
nlohmann::ordered_json PathToJson(const PathInfo& path);

/// The whole pairing, as in the file comment.
nlohmann::ordered_json FabricToJson(const Fabric& fabric);

}  // namespace accel::fabric
