// FleetPublisher: the agent's `fleet:` part. At start it adds or updates its host in the fleet
// store (topology, labels, policy) and then, every heartbeat, reads the topology again: if the
// hardware changed it updates the host, else it records a heartbeat. A store that cannot be
// reached is logged once per outage and tried again next heartbeat; the agent goes on serving.
//
// Thread-safe Start/Stop; the destructor stops. Owns its store connection (used only on its
// thread).
#pragma once

#include <memory>
#include <string>

#include "agent/agent_config.h"
#include "agent/agent_internal.h"
#include "common/periodic_thread.h"
#include "topology/host.h"

namespace accel::fleet {
class FleetStore;
}

namespace accel::agent::internal {

class FleetPublisher {
 public:
  /// `topology` is where the agent reads its host ("live", a file); `first` is what it read at
  /// start (published at once).
  FleetPublisher(FleetSection section, std::string topology, topology::HostTopology first, Log log);
  ~FleetPublisher();
  /// Publishes once now (so the host is in the store when Start returns, when reachable), then
  /// starts the heartbeat thread.
  void Start();
  void Stop();
  /// Publishes now (upsert or heartbeat, as a tick does). Returns false when the store failed.
  bool Tick();

 private:
  bool Publish(const topology::HostTopology& host, bool changed);

  FleetSection section_;
  std::string topology_spec_;
  topology::HostTopology current_;
  std::string published_id_;  ///< TopologyId last upserted; "" before the first success
  Log log_;
  std::unique_ptr<fleet::FleetStore> store_;
  bool failing_ = false;      ///< the last attempt failed (log only the first of a streak)
  PeriodicThread thread_;
};

}  // namespace accel::agent::internal
