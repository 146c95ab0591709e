// DraDriver: inventory → slices → kubelet sockets, and one thread that follows health.
#include "agent/dra_driver.h"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <optional>

#include "common/error.h"
#include "common/periodic_thread.h"
#include "common/strings.h"
#include "dra/claim_preparer.h"
#include "dra/inventory.h"
#include "dra/plugin_server.h"
#include "dra/resource_slices.h"
#include "dra/slice_publisher.h"
#include "kubeapi/client.h"
#include "kubeapi/kube_config.h"

namespace accel::agent::internal {

namespace {

/// How often health is looked at; slices and health streams change within this of an event.
constexpr std::chrono::milliseconds kHealthPoll{1000};

}  // namespace

std::string DraNodeName(const DraSection& section, const topology::HostTopology& host) {
  if (!section.node_name.empty()) return AsciiLower(section.node_name);
  if (const char* env = std::getenv("NODE_NAME"); env && *env) return AsciiLower(env);
  if (!host.hostname.empty()) return AsciiLower(host.hostname);
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0 && name[0]) return AsciiLower(name);
  return "localhost";
}

dra::InventoryOptions DraInventoryOptions(const DraSection& section, const topology::HostTopology& host) {
  dra::InventoryOptions io;
  io.driver = section.driver_name;
  io.node_name = DraNodeName(section, host);
  io.include_vfs = section.publish_vfs;
  io.partitionable = section.partitionable_devices;
  return io;
}

struct DraDriver::Impl {
  DraSection section;
  DraInputs inputs;
  Log log;
  std::string node;

  std::shared_ptr<const dra::Inventory> full;  ///< every device, healthy or not
  std::unique_ptr<kubeapi::KubeClient> client;
  std::unique_ptr<dra::SlicePublisher> publisher;
  std::unique_ptr<dra::ClaimPreparer> preparer;
  std::unique_ptr<dra::DraPluginServer> server;
  PeriodicThread thread;

  std::mutex mu;                      // guards the fields below (thread vs SyncNow)
  uint64_t health_generation = ~0ull; ///< DeviceHealth::generation() last acted on
  std::vector<bool> unhealthy;        ///< per inventory device, as last published
  bool published = false;             ///< the last publish succeeded
  std::chrono::steady_clock::time_point last_publish{};
  bool failing = false;               ///< log only the first failure of a streak

  /// Whether inventory device `d` is unhealthy now.
  bool Unhealthy(const dra::DraDevice& d) const {
    if (!inputs.health || d.node_device < 0) return false;
    return !inputs.health->healthy(static_cast<size_t>(d.node_device));
  }

  std::vector<dra::DeviceHealthEntry> HealthEntries(const std::vector<bool>& bad) const {
    std::vector<dra::DeviceHealthEntry> out;
    const int64_t now = static_cast<int64_t>(std::time(nullptr));
    for (size_t i = 0; i < full->devices.size(); ++i) {
      const dra::DraDevice& d = full->devices[i];
      dra::DeviceHealthEntry e;
      e.pool_name = node;
      e.device_name = d.name;
      e.last_updated_time = now;
      if (d.kind == dra::DeviceKind::kNic) {
        // Pairing excluded a NIC whose port is down; everything else it saw is usable.
        const bool down = d.nic >= 0 && full->fabric.nics[d.nic].state == "DOWN";
        e.health = down ? dra::DeviceHealthState::kUnhealthy : dra::DeviceHealthState::kHealthy;
        if (down) e.message = "RDMA port down";
      } else {
        e.health = bad[i] ? dra::DeviceHealthState::kUnhealthy : dra::DeviceHealthState::kHealthy;
        if (bad[i]) e.message = "unhealthy (XID or lost device; see accel serve's log)";
      }
      out.push_back(std::move(e));
    }
    return out;
  }

  /// Publishes the healthy part of the inventory. Never throws; false when the API failed.
  bool Publish(const std::vector<bool>& bad) {
    dra::Inventory shown = *full;
    shown.devices.clear();
    for (size_t i = 0; i < full->devices.size(); ++i)
      if (!bad[i]) shown.devices.push_back(full->devices[i]);
    try {
      dra::PublishResult r = publisher->Publish(dra::BuildResourceSlices(shown, 0));
      if (failing || r.created + r.updated + r.deleted > 0)
        log("dra: ResourceSlices of pool " + node + " at generation " + std::to_string(r.generation) +
            " (" + std::to_string(shown.devices.size()) + " device(s); " + std::to_string(r.created) +
            " created, " + std::to_string(r.updated) + " updated, " + std::to_string(r.deleted) + " deleted)");
      failing = false;
      return true;
    } catch (const std::exception& e) {
      if (!failing) log(std::string("dra: cannot publish ResourceSlices (retrying): ") + e.what());
      failing = true;
      return false;
    }
  }

  /// The thread's work: act on a health change, retry a failed publish, resync.
  bool Sync(bool force) {
    std::lock_guard<std::mutex> lock(mu);
    if (inputs.health) inputs.health->Tick(kube::DeviceHealth::Clock::now());
    const uint64_t generation = inputs.health ? inputs.health->generation() : 0;
    const auto now = std::chrono::steady_clock::now();
    const bool health_changed = generation != health_generation;
    if (!force && !health_changed && published && now - last_publish < section.resync_interval) return false;
    std::vector<bool> bad(full->devices.size());
    for (size_t i = 0; i < bad.size(); ++i) bad[i] = Unhealthy(full->devices[i]);
    if (health_changed) {
      for (size_t i = 0; i < bad.size(); ++i)
        if (!unhealthy.empty() && bad[i] != unhealthy[i])
          log("dra: " + full->devices[i].name + (bad[i] ? " unhealthy: withdrawn from the pool" : " healthy again"));
      if (server) server->SetHealth(HealthEntries(bad));
    }
    health_generation = generation;
    unhealthy = bad;
    published = Publish(bad);
    last_publish = now;
    return published;
  }
};

DraDriver::DraDriver(DraSection section, DraInputs inputs, Log log) : impl_(std::make_unique<Impl>()) {
  impl_->section = std::move(section);
  impl_->inputs = std::move(inputs);
  impl_->log = std::move(log);
}

DraDriver::~DraDriver() { Stop(); }

void DraDriver::Start() {
  Impl& m = *impl_;
  const DraSection& s = m.section;
  static const dra::NodeHardware kNoNode;
  const dra::NodeHardware& node = m.inputs.node ? *m.inputs.node : kNoNode;
  const dra::InventoryOptions io = DraInventoryOptions(s, node.host);
  m.node = io.node_name;
  m.full = std::make_shared<const dra::Inventory>(dra::BuildNodeInventory(node, io));

  kubeapi::KubeConfig kc = s.kubeconfig.empty() ? kubeapi::InClusterConfig() : kubeapi::LoadKubeconfig(s.kubeconfig);
  // Short retries: the first publish runs on the start path (an API server that is down must
  // not hold the agent's start for long; the thread retries every second), and a Prepare the
  // kubelet is waiting for is better failed and retried by the kubelet than held.
  kubeapi::KubeClientOptions ko;
  ko.attempts = 4;
  ko.max_total_wait = std::chrono::seconds(5);
  ko.timeout = std::chrono::seconds(10);
  m.client = std::make_unique<kubeapi::KubeClient>(std::move(kc), ko);
  Log log = m.log;
  m.publisher = std::make_unique<dra::SlicePublisher>(m.client.get(), s.driver_name, m.node,
                                                      [log](const std::string& line) { log("dra: " + line); });

  dra::PreparerOptions po;
  po.cdi_dir = s.cdi_dir;
  po.state_dir = s.state_dir;
  po.device_nodes.host_root = s.host_root;
  po.nccl.socket_ifname = s.nccl_socket_ifname;
  po.nccl.topo_file = s.nccl_topo_file;
  kubeapi::KubeClient* client = m.client.get();
  auto fetch = [client](const dra::ClaimRef& c) -> nlohmann::json {
    auto claim = client->Get(kubeapi::ApiPath("resource.k8s.io/v1", "resourceclaims", c.namespace_, c.name));
    if (!claim)
      throw SystemError("cannot read claim", c.namespace_ + "/" + c.name, "not found on the API server",
                        "the claim was deleted; the kubelet stops asking once its pod is gone");
    return *claim;
  };
  m.preparer = std::make_unique<dra::ClaimPreparer>(m.full, fetch, po, [log](const std::string& line) {
    log("dra: " + line);
  });

  m.Sync(true);  // slices first: the scheduler can allocate before the kubelet registers us

  dra::DraPluginOptions so;
  so.driver_name = s.driver_name;
  so.registry_dir = s.registry_dir;
  so.plugin_dir = s.plugin_dir;
  so.log = [log](const std::string& line) { log("dra: " + line); };
  m.server = std::make_unique<dra::DraPluginServer>(so, m.preparer.get());
  {
    std::lock_guard<std::mutex> lock(m.mu);
    m.server->SetHealth(m.HealthEntries(m.unhealthy));
  }
  m.server->Start();
  m.log("dra: driver " + s.driver_name + " on node " + m.node + ": " + std::to_string(m.full->devices.size()) +
        " device(s); kubelet registration at " + so.RegistrationSocket());
  Impl* impl = impl_.get();
  m.thread.Start(kHealthPoll, [impl] { impl->Sync(false); });
}

void DraDriver::Stop() {
  if (!impl_) return;
  impl_->thread.Stop();
  if (impl_->server) impl_->server->Stop();
  impl_->server.reset();
}

std::vector<std::string> DraDriver::DeviceLines() const {
  std::vector<std::string> out;
  if (!impl_->full) return out;
  for (const dra::DraDevice& d : impl_->full->devices) {
    std::string line = d.name + "  " + dra::DeviceKindName(d.kind);
    if (d.rail >= 0) line += "  rail " + std::to_string(d.rail);
    if (!d.pci_address.empty()) line += "  " + d.pci_address;
    out.push_back(std::move(line));
  }
  return out;
}

bool DraDriver::SyncNow() { return impl_->Sync(false); }

}  // namespace accel::agent::internal
