#include "agent/fleet_publisher.h"

#include "common/error.h"
#include "fleet/fleet_store.h"
#include "fleet/host_policy_file.h"
#include "fleet/host_record.h"
#include "topology/sources.h"

namespace accel::agent::internal {

FleetPublisher::FleetPublisher(FleetSection section, std::string topology, topology::HostTopology first, Log log)
    : section_(std::move(section)), topology_spec_(std::move(topology)), current_(std::move(first)), log_(std::move(log)) {}

FleetPublisher::~FleetPublisher() { Stop(); }

void FleetPublisher::Start() {
  Tick();
  thread_.Start(section_.heartbeat, [this] { Tick(); });
}

void FleetPublisher::Stop() { thread_.Stop(); }

bool FleetPublisher::Tick() {
  // The hardware as it is now: a GPU that fell off the bus, a MIG-less reboot, memory changes.
  topology::HostTopology now = current_;
  if (!published_id_.empty() && topology_spec_ != "none") {
    try {
      now = topology::LoadTopology(topology_spec_);
    } catch (const std::exception& e) {
      log_(std::string("fleet: cannot read the topology again, keeping the last one: ") + e.what());
    }
  }
  const bool changed = published_id_.empty() || fleet::TopologyId(now) != published_id_;
  return Publish(now, changed);
}

bool FleetPublisher::Publish(const topology::HostTopology& host, bool changed) {
  const std::string name = section_.name.empty() ? host.hostname : section_.name;
  try {
    if (name.empty())
      throw InputError("agent config", "fleet.name", "is empty and the topology names no host", "set fleet.name");
    if (!store_) store_ = fleet::FleetStore::Open(section_.store.empty() ? fleet::DefaultStoreUrl() : section_.store);
    bool alive = false;
    if (!changed) alive = store_->Heartbeat(name);
    if (changed || !alive) {  // new hardware, or the host left the store: (re)join with it
      fleet::HostSpec spec;
      spec.name = name;
      spec.topology = host;
      if (!section_.policy_file.empty()) spec.policy = fleet::LoadHostPolicy(section_.policy_file);
      spec.set_labels = section_.labels;
      const auto stale = section_.stale_after.count() > 0 ? section_.stale_after : 3 * section_.heartbeat;
      spec.stale_after_s = std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::seconds>(stale).count());
      fleet::HostRecord r = store_->UpsertFromAgent(spec);
      published_id_ = r.topology_id;
      current_ = host;
      log_("fleet: published host " + name + " to " + store_->url() + " (hardware " + r.topology_id.substr(0, 19) + ")");
    }
    if (failing_) log_("fleet: the store answers again");
    failing_ = false;
    return true;
  } catch (const std::exception& e) {
    if (!failing_) log_(std::string("fleet: cannot publish the host (trying again every heartbeat): ") + e.what());
    failing_ = true;
    store_.reset();  // a fresh connection next time
    return false;
  }
}

}  // namespace accel::agent::internal
