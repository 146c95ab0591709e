// Agent: start order (MIG → backends → the node: topology, devices, interconnect, RDMA ports,
// pairing (dra/node_hardware.h) → health → collector/exporter → MPS control daemons → device
// plugins → labels), stop in reverse, reload = stop + start with a fallback.
#include "agent/agent.h"

#include <atomic>
#include <iostream>
#include <stdexcept>

#include "agent/agent_internal.h"
#include "agent/dra_driver.h"
#include "agent/fleet_publisher.h"
#include "agent/nccl_hca.h"
#include "common/error.h"
#include "devices/open_backends.h"
#include "devices/topology_join.h"
#include "dra/node_hardware.h"
#include "kube/device_health.h"
#include "kube/mps_daemons.h"
#include "kube/plugin_server.h"
#include "kube/resources.h"
#include "telemetry/collector.h"
#include "telemetry/field_selection.h"
#include "http/server.h"
#include "http/listen_address.h"
#include "http/web_config.h"
#include "topology/host_json.h"

namespace accel::agent {

/// Everything one Start built; destroyed in reverse order of construction by Stop.
struct Running {
  AgentConfig config;
  /// exporter.listen and exporter.webConfigFile, read once before anything changes on the node.
  http::ListenAddress address;
  http::WebConfig web;
  /// The node (topology, devices, interconnect, RDMA ports, GPU↔NIC pairing), read once: the
  /// device plugin, the labels and the DRA driver all use this one read.
  dra::NodeHardware node;
  std::vector<kube::PluginResource> resources;
  kube::Labels labels;
  kube::NcclHcaMap nccl_hcas;  ///< the device plugin's NCCL_IB_HCA map (devicePlugin.config nccl.ibHca)
  std::unique_ptr<kube::DeviceHealth> health;
  std::unique_ptr<telemetry::Collector> collector;
  std::unique_ptr<http::HttpServer> server;
  std::unique_ptr<kube::MpsDaemons> mps;
  std::unique_ptr<kube::DevicePluginManager> plugins;
  std::unique_ptr<internal::LabelWriter> label_writer;
  std::unique_ptr<internal::FleetPublisher> fleet;
  std::unique_ptr<internal::DraDriver> dra;
};

struct Agent::Impl {
  internal::Log log;
  std::unique_ptr<Running> running;

  std::unique_ptr<Running> Build(const AgentConfig& config);
  /// Starts the HTTP endpoint, device plugins and label writer of `r` (its collector runs).
  void StartServing(Running* r);
  /// Stops the parts of `r`; false when a vendor call is still hung (the backends are then
  /// leaked on purpose: destroying them under a blocked call would crash).
  bool Tear(std::unique_ptr<Running> r);
};

std::unique_ptr<Running> Agent::Impl::Build(const AgentConfig& config) {
  auto r = std::make_unique<Running>();
  r->config = config;
  // Input that can be wrong is checked before anything changes on the node.
  telemetry::CollectorOptions copts = internal::CollectorOptionsFor(config.exporter, "agent config");
  if (config.exporter.fields) {  // fields the counters file names that accel cannot read
    std::string warning = telemetry::SelectionWarning(*config.exporter.fields);
    if (!warning.empty()) log(warning);
  }
  if (config.exporter.enabled) {
    r->address = http::ParseListenAddress(config.exporter.listen);
    r->web = http::LoadWebConfig(config.exporter.web_config_file);
  }

  internal::ApplyMigConfig(config, log);
  devices::VendorLibraries libraries{config.nvml_library, config.rocm_smi_library,
                                     config.hlml_library};
  auto backends = devices::OpenBackends(config.vendors, libraries, log, "vendors");
  // Before the first read: discovery below reads every device once.
  if (config.exporter.fields) {
    devices::ExtraReads extra = telemetry::ExtraReadsFor(*config.exporter.fields);
    if (extra.any()) {
      for (auto& b : backends) b->SetExtraReads(extra);
    }
  }
  // The node's allocatable devices, resources, labels and health serve the device plugin, the
  // labels and the DRA driver. The exporter alone needs none of them, and discovery reads each
  // device on this thread, where a hung vendor call would hang start-up; the collector's
  // workers read instead. The NVLink interconnect ranks the device plugin's preferred
  // allocation and gives the DRA driver its NVLink cliques; the GPU↔NIC pairing gives both
  // the DRA rails and the device plugin's NCCL_IB_HCA.
  const bool node_devices = config.device_plugin.enabled || config.labels.enabled || config.dra.enabled;
  std::vector<devices::DeviceBackend*> raw;
  if (node_devices) {
    for (auto& b : backends) raw.push_back(b.get());
  }
  dra::NodeSource source = NodeSourceOf(config);
  source.nvlink = config.device_plugin.enabled || config.dra.enabled;
  r->node = dra::ReadNodeHardware(source, raw, log);
  if (node_devices) {
    r->resources = kube::BuildResources(r->node.devices, config.device_plugin.config);
    r->labels = kube::NodeLabels(r->node.devices, config.device_plugin.config, r->resources, r->node.host);
  }
  if (config.device_plugin.enabled && config.device_plugin.config.nccl.ib_hca)
    r->nccl_hcas = NcclHcaMapForNode(r->node, log);
  // Health (XIDs, lost devices) serves both the device plugin and the DRA driver.
  if (config.device_plugin.enabled || config.dra.enabled) {
    r->health = std::make_unique<kube::DeviceHealth>(r->node.devices, config.device_plugin.config.health);
    // The collector is the only reader of the devices and their events: health rides on it.
    kube::DeviceHealth* health = r->health.get();
    copts.on_event = [health](const devices::HealthEvent& e) {
      health->OnEvent(e, kube::DeviceHealth::Clock::now());
    };
    copts.on_reading = [health](devices::Vendor v, unsigned index,
                                const devices::DeviceReading& d) {
      health->OnReading(v, index, d, kube::DeviceHealth::Clock::now());
    };
  }
  r->collector = std::make_unique<telemetry::Collector>(std::move(backends), copts);
  if (!r->node.host.pci.empty() && !r->collector->identities().empty()) {
    std::vector<devices::DeviceIdentity> ids = r->collector->identities();
    devices::JoinTopology(&ids, r->node.host);
    r->collector->SetIdentities(std::move(ids));
  }
  r->collector->Start();
  try {
    StartServing(r.get());
  } catch (...) {
    Tear(std::move(r));  // on a throw nothing stays running
    throw;
  }
  // Only the parts that run are counted: the exporter alone has no resources or labels.
  std::string started = "started: " + std::to_string(r->collector->identities().size()) + " device(s)";
  if (config.device_plugin.enabled) started += ", " + std::to_string(r->resources.size()) + " resource(s)";
  if (config.labels.enabled) started += ", " + std::to_string(r->labels.size()) + " label(s)";
  log(started + "; collecting every " + std::to_string(config.exporter.collect_interval.count()) +
      " ms");
  return r;
}

void Agent::Impl::StartServing(Running* r) {
  const AgentConfig& config = r->config;
  if (config.exporter.enabled) {
    const http::ListenAddress& address = r->address;
    const http::WebConfig& web = r->web;
    telemetry::Collector* c = r->collector.get();
    r->server = std::make_unique<http::HttpServer>(
        web, [c] { return c->exposition(); }, [] { return true; });
    // The host as every accel layer sees it, so a node with no accelerator still answers
    // something useful (and fleet tools can read NUMA/PCI facts without ssh).
    r->server->AddPage("/topology", "application/json", topology::ToJson(r->node.host));
    r->server->Start(address);
    http::ListenAddress bound = address;
    bound.port = r->server->port();
    log("exporter: serving /metrics on " + http::FormatListenAddress(bound) +
        (web.tls.enabled ? " (TLS)" : ""));
  }
  const kube::PluginConfig& pc = config.device_plugin.config;
  // MPS daemons before the plugins, so that no pod is admitted onto a GPU without its limits:
  // until its daemon runs, a resource's devices are Unhealthy. They run with or without a
  // kubelet (`accel serve --once` checks that they start).
  if (config.device_plugin.enabled && pc.sharing_strategy() == kube::SharingStrategy::kMps) {
    r->mps = std::make_unique<kube::MpsDaemons>(r->resources, r->node.devices, pc, r->health.get(),
                                                log);
    r->mps->Start();
  }
  if (config.device_plugin.enabled && internal::PathExists(pc.plugin_dir)) {
    kube::PluginNode node{&r->node.devices, &config.device_plugin.config, &r->node.interconnect,
                          r->health.get(), pc.nccl.ib_hca ? &r->nccl_hcas : nullptr};
    r->plugins = std::make_unique<kube::DevicePluginManager>(node);
    r->plugins->Start(r->resources, [l = log](const std::string& line) { l("device plugin: " + line); });
    log("device plugin: " + std::to_string(r->resources.size()) + " resource(s) in " + pc.plugin_dir);
  } else if (config.device_plugin.enabled) {
    log("device plugin: " + pc.plugin_dir + " does not exist (no kubelet here); not serving");
  }
  if (config.labels.enabled) {
    r->label_writer = std::make_unique<internal::LabelWriter>(config.labels.file, r->labels,
                                                              config.labels.interval, log);
    r->label_writer->Start();
  }
  if (config.fleet.enabled) {
    r->fleet = std::make_unique<internal::FleetPublisher>(config.fleet, config.topology, r->node.host, log);
    r->fleet->Start();
  }
  if (config.dra.enabled) {
    internal::DraInputs inputs{&r->node, r->health.get()};
    r->dra = std::make_unique<internal::DraDriver>(config.dra, inputs, log);
    r->dra->Start();
  }
}

bool Agent::Impl::Tear(std::unique_ptr<Running> r) {
  if (!r) return true;
  if (r->dra) r->dra->Stop();  // the kubelet deregisters us before anything else goes
  if (r->fleet) r->fleet->Stop();
  if (r->label_writer) r->label_writer->Stop();
  if (r->plugins) r->plugins->Stop();  // empty lists to the kubelet, sockets removed
  if (r->mps) r->mps->Stop();          // after the plugins: no Allocate names a quit daemon
  if (r->server) r->server->Stop();
  bool clean = r->collector ? r->collector->Stop() : true;
  if (!clean) {
    log("a vendor library call is still hung; leaving it behind");
    r->collector.release();  // never destroy backends under a blocked call
  }
  return clean;
}

Agent::Agent(Log log) : impl_(std::make_unique<Impl>()) {
  impl_->log = log ? std::move(log)
                   : Log([](const std::string& line) { std::cerr << "accel serve: " << line << "\n"; });
}

Agent::~Agent() { Stop(); }

void Agent::Start(const AgentConfig& config) {
  if (impl_->running) throw std::logic_error("Agent::Start: already started");
  impl_->running = impl_->Build(config);
}

void Agent::Reload(const AgentConfig& config) {
  if (!impl_->running) return Start(config);
  AgentConfig old = impl_->running->config;
  if (!impl_->Tear(std::move(impl_->running))) {
    throw SystemError("cannot reload", "", "a vendor library call is hung", "restart the agent");
  }
  try {
    impl_->running = impl_->Build(config);
  } catch (...) {
    impl_->log("reload failed; going back to the previous config");
    try {
      impl_->running = impl_->Build(old);
    } catch (const std::exception& e) {
      impl_->log(std::string("the previous config does not start either: ") + e.what());
    }
    throw;
  }
}

bool Agent::Stop() { return impl_->Tear(std::move(impl_->running)); }

std::shared_ptr<const std::string> Agent::CollectNow() {
  if (!impl_->running) return nullptr;
  impl_->running->collector->RefreshNow();
  return impl_->running->collector->exposition();
}

bool Agent::running() const { return impl_->running != nullptr; }

int Agent::exporter_port() const {
  return impl_->running && impl_->running->server ? impl_->running->server->port() : 0;
}

int Agent::plugin_registrations() const {
  return impl_->running && impl_->running->plugins ? impl_->running->plugins->registrations() : 0;
}

AgentStatus Agent::status() const {
  AgentStatus s;
  const Running* r = impl_->running.get();
  if (!r) return s;
  s.devices = r->node.devices;
  for (const auto& res : r->resources) s.resources.emplace_back(res.name, res.devices.size());
  s.labels = r->labels;
  s.exposition = r->collector->exposition();
  s.exporter_port = r->server ? r->server->port() : 0;
  s.device_plugin = r->plugins != nullptr;
  if (r->mps) s.mps = r->mps->status();
  if (r->dra) {
    s.dra = true;
    s.dra_driver = r->config.dra.driver_name;
    s.dra_devices = r->dra->DeviceLines();
  }
  return s;
}

}  // namespace accel::agent
