// HostRecord: one host of the fleet as the store keeps it — its name, the hardware it is (a
// topology shared by every host of the same SKU), the operator's policy, labels and state.
//
// Plain data. The topology itself is held once per distinct hardware (FleetStore::Topology,
// FleetView), keyed by TopologyId: a fleet is a few SKUs times many hosts.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "placement/usage.h"
#include "topology/host.h"

namespace accel::fleet {

/// What the operator allows on a host.
enum class HostAdminState {
  kEnabled,      ///< takes new placements
  kDisabled,     ///< keeps its claims, takes no new placements
  kMaintenance,  ///< like disabled, and shown as being worked on
};

/// "enabled", "disabled", "maintenance".
const char* HostAdminStateName(HostAdminState s);
/// Parses a state name; throws InputError naming `where` with the accepted names otherwise.
HostAdminState ParseHostAdminState(const std::string& text, const std::string& where);

/// Labels, key -> value (e.g. az -> rack-3, gpu -> h100), sorted by key.
using Labels = std::map<std::string, std::string>;

struct HostRecord {
  std::string name;         ///< unique in the fleet; the hypervisor's host name
  std::string topology_id;  ///< TopologyId of its hardware ("sha256:..."), shared by like hosts
  placement::HostPolicy policy;  ///< cpu_dedicated_set, cpu_shared_set, ratios, reserved memory
  Labels labels;            ///< operator labels, used by --where filters and capacity groups
  HostAdminState state = HostAdminState::kEnabled;
  /// Bumped by every claim, release and update of the host; a claim made from a view of the
  /// host at generation g succeeds only while the host is still at g.
  int64_t generation = 0;
  /// Unix seconds of the last heartbeat of the host's agent (`accel serve` with a fleet: block);
  /// unset for hosts added by hand, which never go stale.
  std::optional<int64_t> heartbeat_at;
  /// Seconds without a heartbeat after which the host is stale (no new placements); 0 = never.
  int64_t stale_after_s = 0;
  std::string updated_at;   ///< UTC ISO-8601 of the last add/update
};

/// True when the host's agent has not been heard from within stale_after_s of `now_unix`.
bool IsStale(const HostRecord& host, int64_t now_unix);

/// The identity of a piece of hardware: "sha256:" + the hex SHA-256 of its accel.host/v1 JSON
/// with the host name replaced and source cleared. Hosts of one SKU (same CPUs, memory, pages and PCI
/// devices at the same addresses) get the same id.
std::string TopologyId(const topology::HostTopology& host);

/// The host name a shared topology carries: the hardware is every host's; placements get the
/// host's own name (HostRecord::name) when they are made.
inline constexpr const char* kSharedHostname = "shared-hardware";

/// `host` with hostname kSharedHostname and source cleared: the form stored once per TopologyId.
topology::HostTopology Anonymized(const topology::HostTopology& host);

}  // namespace accel::fleet
