// The kubelet's view of a DRA claim and what the driver answers for it: the plain data the DRA
// gRPC service (plugin_server.h) and the claim preparer (claim_preparer.h) exchange, independent of
// the protobuf types and of any API-server client.
//
// Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace accel::dra {

/// One claim as NodePrepareResources / NodeUnprepareResources name it.
struct ClaimRef {
  std::string namespace_;  ///< the claim's namespace
  std::string uid;         ///< metadata.uid: the key of every answer map
  std::string name;        ///< metadata.name
};

/// One allocated device of a prepared claim (the DRA v1 Device message).
struct PreparedDevice {
  /// The claim's requests this device satisfies (allocation result "request", for a
  /// firstAvailable subrequest "<request>/<subrequest>"). The kubelet matches containers'
  /// claim requests against these.
  std::vector<std::string> request_names;
  std::string pool_name;    ///< the ResourceSlice pool (accel: the node name)
  std::string device_name;  ///< the ResourceSlice device name, e.g. "gpu-3"
  /// Fully qualified CDI device ids the runtime injects, e.g. "k8s.accel.io/claim=<uid>-gpu-3".
  std::vector<std::string> cdi_device_ids;
};

/// The answer for one claim: its devices, or an error (then devices is empty). The kubelet
/// retries a claim that failed; every other claim of the same call is unaffected.
struct PrepareResult {
  std::vector<PreparedDevice> devices;
  std::string error;  ///< "" on success; else what failed and how to fix it
};

/// Health of one published device, as DRAResourceHealth streams it.
enum class DeviceHealthState { kUnknown, kHealthy, kUnhealthy };

struct DeviceHealthEntry {
  std::string pool_name;
  std::string device_name;
  DeviceHealthState health = DeviceHealthState::kUnknown;
  /// Unix seconds of the observation.
  int64_t last_updated_time = 0;
  /// Why (e.g. "XID 79: GPU has fallen off the bus"); "" when healthy.
  std::string message;
};

/// What the DRA gRPC service calls. Implementations must be thread-safe: the kubelet may call
/// Prepare and Unprepare for different claims concurrently.
class ClaimHandler {
 public:
  virtual ~ClaimHandler() = default;
  /// Prepares one claim (idempotent: a claim prepared before answers the same devices).
  /// Never throws; failures are PrepareResult::error.
  virtual PrepareResult Prepare(const ClaimRef& claim) = 0;
  /// Undoes Prepare (idempotent: an unknown claim is success). Returns "" or the error.
  virtual std::string Unprepare(const ClaimRef& claim) = 0;
};

}  // namespace accel::dra
