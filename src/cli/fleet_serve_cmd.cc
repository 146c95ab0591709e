// accel fleet serve: the fleet scheduler service — fleet::FleetService behind accel's HTTP server
// (the one `accel exporter` uses: same web config file for TLS and basic auth).
#include <signal.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/daemon.h"
#include "cli/exit_code.h"
#include "common/error.h"
#include "fleet/fleet_store.h"
#include "fleet/mig_request.h"
#include "fleet/gpu_policy.h"
#include "fleet/service.h"
#include "kubeapi/client.h"
#include "kubeapi/kube_config.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"
#include "http/server.h"
#include "http/listen_address.h"
#include "http/web_config.h"

namespace accel::cli {

namespace {

struct FleetServeOptions {
  std::string store;
  std::string listen = ":9470";
  std::string web_config;
  std::vector<std::string> capacity_flavors;
  std::string aliases;
  int refresh_ms = 500;
  int capacity_every_s = 30;
  std::string seed;
  int subset_size = 1;
  std::string replica;  ///< "INDEX/COUNT"; "" = no partition
  int concurrency = 8;  ///< requests served at once: HTTP workers and store connections
  bool once = false;
  std::string kubeconfig;  ///< API server access for the scheduler extender's bind
  bool in_cluster = false; ///< the same, from the pod's service account
  std::string gpu_policy = "accel";
  int release_gone_every_s = 60;
};


// The extender's API server access: read pods, create their Bindings (as kube-scheduler's
// DefaultBinder does: metadata.uid makes the API server refuse a pod of that name but another UID).
void ConnectExtender(const FleetServeOptions& o, fleet::ExtenderOptions* x) {
  x->policy = fleet::ParseGpuPolicy(o.gpu_policy, "--gpu-policy");
  x->mig_shapes = fleet::MigShapesOf;
  x->release_gone_every = std::chrono::milliseconds(1000LL * o.release_gone_every_s);
  if (o.in_cluster && !o.kubeconfig.empty())
    throw InputError("--in-cluster", "", "and --kubeconfig exclude each other", "give one: the API server access to bind pods with");
  if (!o.in_cluster && o.kubeconfig.empty()) return;
  kubeapi::KubeClientOptions ko;
  // kube-scheduler waits httpTimeout for a bind (docs/fleet-kubernetes.md: 30s): retry within it.
  ko.timeout = std::chrono::seconds(5);
  ko.max_total_wait = std::chrono::seconds(5);
  ko.rbac_manifest = "deploy/kubernetes/scheduler-extender/accel-fleet-serve.yaml";
  auto kube = std::make_shared<kubeapi::KubeClient>(
      o.in_cluster ? kubeapi::InClusterConfig() : kubeapi::LoadKubeconfig(o.kubeconfig), ko);
  x->bind = [kube](const fleet::PodBinding& b) {
    const nlohmann::json binding = {
        {"apiVersion", "v1"},
        {"kind", "Binding"},
        {"metadata", {{"name", b.name}, {"namespace", b.ns}, {"uid", b.uid}}},
        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", b.node}}}};
    kube->Create(kubeapi::ApiPath("v1", "pods", b.ns, b.name) + "/binding", binding);
  };
  x->read_pod = [kube](const std::string& ns, const std::string& name) {
    return kube->Get(kubeapi::ApiPath("v1", "pods", ns, name));
  };
}

int Serve(const FleetServeOptions& o) {
  auto log = [](const std::string& line) { std::cerr << "accel fleet serve: " << line << "\n"; };
  fleet::ServiceOptions so;
  std::unique_ptr<fleet::FleetService> service;
  std::unique_ptr<http::HttpServer> server;
  http::ListenAddress address;
  try {
    so.store_url = o.store.empty() ? fleet::DefaultStoreUrl() : o.store;
    so.refresh = std::chrono::milliseconds(o.refresh_ms);
    so.capacity_every = std::chrono::milliseconds(1000LL * o.capacity_every_s);
    so.seed = o.seed;
    so.subset_size = o.subset_size;
    so.connections = o.concurrency;
    if (so.subset_size > 1 && so.seed.empty())
      throw InputError("--subset-size", std::to_string(so.subset_size), "chooses among the best hosts by the seed's order",
                       "give the replica an identity with --seed (e.g. --seed $(hostname))");
    if (!o.replica.empty()) so.partition = fleet::ParsePartition(o.replica, "--replica");
    ConnectExtender(o, &so.extender);
    placement::PciAliasTable aliases;
    if (!o.aliases.empty()) aliases = placement::LoadPciAliases(o.aliases);
    for (const std::string& file : o.capacity_flavors)
      for (const placement::Flavor& f : placement::LoadFlavors(file))
        so.capacity_flavors.push_back(placement::BuildRequest(f, aliases, file + " (flavor " + f.name + ")"));
    address = http::ParseListenAddress(o.listen);
    http::WebConfig web = http::LoadWebConfig(o.web_config);
    service = std::make_unique<fleet::FleetService>(so);
    fleet::FleetService* svc = service.get();
    server = std::make_unique<http::HttpServer>(
        std::move(web), [svc] { return std::make_shared<const std::string>(svc->Metrics()); }, [] { return true; });
    server->SetWorkers(o.concurrency);  // a kept-alive client holds a worker: one per connection
    server->AddHandler("/", [svc](const http::HttpServer::Request& r) {
      fleet::ServiceReply reply = svc->Handle({r.method, r.path, r.query, r.body});
      return http::HttpServer::Reply{reply.status, reply.content_type, std::move(reply.body), reply.allow};
    });
  } catch (const std::exception& e) {
    log(e.what());
    return ExitCodeFor(e);
  }
  const sigset_t signals = PrepareDaemonProcess();  // before the refresher and server threads
  try {
    server->Start(address);
  } catch (const std::exception& e) {
    log(e.what());
    return ExitCodeFor(e);
  }
  service->Start();
  log("serving the fleet of " + so.store_url + " on " + http::FormatListenAddress(address) + " (port " +
      std::to_string(server->port()) + "): API /api/v1, scheduler extender /scheduler/ (" +
      (so.extender.bind ? "binds pods" : "no API server access: does not bind") + "), page /, metrics /metrics" +
      (so.partition.count > 1 ? "; replica " + fleet::FormatPartition(so.partition) + " (prefers its share of the hosts)" : ""));
  if (o.once) {
    std::cout << service->Metrics();
  } else {
    WaitForSignals(signals, [&] {
      log(service->RefreshNow() ? "read the store again" : "the store cannot be reached");
      return true;
    }, log);
  }
  server->Stop();
  service->Stop();
  return kExitOk;
}

}  // namespace

void RegisterFleetServe(CLI::App* fleet_cmd, int* exit_code) {
  auto o = std::make_shared<FleetServeOptions>();
  CLI::App* cmd = fleet_cmd->add_subcommand(
      "serve",
      "Run the fleet scheduler service: a JSON API, /metrics and a fleet page.\n\n"
      "It holds the fleet in memory, kept current from the store (replicas\n"
      "on one PostgreSQL see each other's claims within --refresh-ms), a JSON API (place + claim,\n"
      "release, hosts, capacity, claims, filter; docs/fleet-api.yaml), /metrics for Prometheus and\n"
      "a fleet page at /. TLS and basic auth from the web config file, as `accel exporter`.\n\n"
      "It is also kube-scheduler's scheduler extender (filter, prioritize, bind under /scheduler/;\n"
      "docs/fleet-kubernetes.md): pods asking for GPUs, GPU shares (accel.dev/gpu-milli) or MIG slices\n"
      "are judged and claimed like VMs. To bind pods it needs the API server: --kubeconfig FILE or\n"
      "--in-cluster; claims of pods that are gone are released every --release-gone-every seconds.\n\n"
      "Several replicas on one PostgreSQL: give each `--replica INDEX/COUNT` (0/2 and 1/2 for two).\n"
      "Replica i then prefers the hosts whose name hashes to i, so replicas race for a host only\n"
      "when one's share has no fitting host left (it then takes the best of all hosts).\n\n"
      "Examples:\n"
      "  accel fleet serve --store postgresql://accel@db/fleet --replica 0/2 \\\n"
      "      --capacity-flavor flavors.yaml --aliases aliases.json\n"
      "  accel fleet serve --store postgresql://accel@db/fleet --replica 1/2 --web.listen-address :9471\n"
      "  # a StatefulSet of 3: --replica ${HOSTNAME##*-}/3\n"
      "  curl -s localhost:9470/api/v1/hosts | jq '.hosts[].name'\n"
      "  curl -s -XPOST localhost:9470/api/v1/place -d '{\"flavor\": {...}, \"claim\": true}'\n"
      "  accel fleet serve --store postgresql://accel@db/fleet --in-cluster  # kube-scheduler's extender\n\n"
      "Exit status: 0 stopped by SIGINT/SIGTERM; 2 bad input (store URL, flavor, web config, --replica,\n"
      "--kubeconfig, --gpu-policy);\n"
      "5 the system refused (cannot listen, store unreachable at start).");
  cmd->add_option("--store", o->store, "fleet store URL (sqlite:PATH or postgresql://...); default $ACCEL_FLEET_STORE");
  cmd->add_option("--web.listen-address", o->listen, "address to listen on, e.g. :9470, 127.0.0.1:0")->capture_default_str();
  cmd->add_option("--web.config.file", o->web_config, "exporter-toolkit web config: TLS, client certificates, basic auth");
  cmd->add_option("--capacity-flavor", o->capacity_flavors, "flavor file(s) whose capacity /metrics and the page report (repeat)");
  cmd->add_option("--aliases", o->aliases, "Nova [pci]alias definitions for --capacity-flavor");
  cmd->add_option("--refresh-ms", o->refresh_ms, "how often to read others' changes from the store")
      ->check(CLI::Range(50, 600000))->capture_default_str();
  cmd->add_option("--capacity-every", o->capacity_every_s, "seconds between capacity recomputations")
      ->check(CLI::Range(1, 86400))->capture_default_str();
  cmd->add_option("--seed", o->seed, "replica identity: orders equally good hosts differently per replica");
  cmd->add_option("--subset-size", o->subset_size,
                  "Nova's host_subset_size: choose among the N best hosts by --seed's order (fewer races\n"
                  "between replicas, looser packing; --replica separates them without loosening it); a\n"
                  "request's subset_size overrides it")
      ->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--replica", o->replica,
                  "INDEX/COUNT: this is replica INDEX (from 0) of COUNT sharing the store; it prefers its\n"
                  "share of the hosts (their name's hash modulo COUNT is INDEX) and falls back to all hosts\n"
                  "when none of its share fits; a request's partition overrides it");
  cmd->add_option("--concurrency", o->concurrency,
                  "requests served at once: HTTP worker threads and store connections (a client that\n"
                  "keeps its connection open holds one worker; more clients wait for a free one)")
      ->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--kubeconfig", o->kubeconfig,
                  "kubeconfig of the API server the scheduler extender binds pods through (and reads them from)");
  cmd->add_flag("--in-cluster", o->in_cluster, "the same, with the pod's service account (accel fleet serve in a pod)");
  cmd->add_option("--gpu-policy", o->gpu_policy,
                  "how the scheduler extender ranks hosts and GPUs for pods: accel, fgd, best-fit, packing,\n"
                  "clustering, dot-product, random")
      ->capture_default_str();
  cmd->add_option("--release-gone-every", o->release_gone_every_s,
                  "seconds between releases of claims whose pods are gone (with API server access; 0 = never)")
      ->check(CLI::Range(0, 86400))->capture_default_str();
  cmd->add_flag("--once", o->once, "start, print /metrics once, stop (for scripts and tests)");
  cmd->callback([o, exit_code] { *exit_code = Serve(*o); });
}

}  // namespace accel::cli
