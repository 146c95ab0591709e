// ClaimAllocation: what the scheduler allocated to one ResourceClaim for this driver, read from
// the claim object (resource.k8s.io/v1) the API server returns — the input of
// NodePrepareResources, which the kubelet names only by namespace, name and uid.
//
// Read: metadata.uid/namespace/name; status.allocation.devices.results[] of our driver (request,
// driver, pool, device, adminAccess; results of other drivers belong to other kubelet plugins
// and are skipped); status.allocation.devices.config[] opaque parameters of our driver:
//
//   config:
//   - requests: [gpu]                        # optional; accel's parameters are claim-wide
//     opaque:
//       driver: accel.io
//       parameters:
//         apiVersion: accel.io/v1alpha1      # optional; only this version is known
//         kind: ClaimParameters              # optional
//         nccl: true                         # false: no NCCL/UCX env for this claim
//         ncclSocketIfname: net1             # NCCL_SOCKET_IFNAME for this claim
//
// Entries apply in list order (the API lists class configs before claim configs), so a claim's
// own setting overrides its class's. Unknown keys in our parameters are an error (a typo must
// not be ignored silently); unknown fields elsewhere in the object are ignored (newer API
// servers add fields).
//
// Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/claim_types.h"

namespace accel::dra {

/// One allocation result of our driver.
struct AllocatedDevice {
  /// The request it satisfies: "gpu", or "<request>/<subrequest>" for firstAvailable.
  std::string request;
  std::string driver;  ///< the driver that published it (always ours here)
  std::string pool;    ///< the ResourceSlice pool (accel: the node name)
  std::string device;  ///< the device's name in the pool, e.g. "gpu-3"
  /// Admin access (monitoring without exclusive use): the device may also be allocated to
  /// other claims. Prepared the same way.
  bool admin_access = false;
};

/// accel's opaque per-claim parameters (all optional).
struct ClaimParameters {
  /// Wire NCCL/UCX env into the claim's CDI spec (claim_preparer.h); false = none.
  bool nccl = true;
  /// NCCL_SOCKET_IFNAME override; std::nullopt = the driver's configured default; "" = unset.
  std::optional<std::string> socket_ifname;
};

/// The parts of a claim Prepare needs.
struct ClaimAllocation {
  std::string uid;
  std::string namespace_;
  std::string name;
  /// Our driver's results, in the claim's order (the order the scheduler allocated them).
  std::vector<AllocatedDevice> devices;
  ClaimParameters parameters;
};

/// Reads `claim` (a ResourceClaim object). `ref` is the kubelet's name for it: a non-empty
/// ref.uid must equal metadata.uid (otherwise the claim was deleted and re-created under the
/// same name since the kubelet asked: a stale claim). `driver` is our driver name.
/// Throws InputError (where "ResourceClaim <ns>/<name>", field the JSON path, e.g.
/// "status.allocation.devices.results[2].device") when the claim is not an object, is not
/// allocated, its uid differs, a field we read has the wrong type or an empty name, or our
/// parameters are malformed. A claim allocated no device of ours is not an error (empty list).
ClaimAllocation ParseClaimAllocation(const nlohmann::json& claim, const ClaimRef& ref,
                                     const std::string& driver);

/// The same from JSON text; malformed JSON is an InputError too.
ClaimAllocation ParseClaimAllocationText(std::string_view json_text, const ClaimRef& ref,
                                         const std::string& driver);

}  // namespace accel::dra
