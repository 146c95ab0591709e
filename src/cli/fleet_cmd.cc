// accel fleet: the fleet's inventory, placement, claims and capacity in one store.
//   accel fleet host add|update|remove|list|show
//   accel fleet place | capacity | claims | release | audit
//   accel fleet store migrate|status
#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/claims_text.h"
#include "cli/commands.h"
#include "cli/placement_text.h"
#include "cli/table.h"
#include "common/error.h"
#include "common/json_text.h"
#include "common/strings.h"
#include "common/structured_file.h"
#include "common/yaml_out.h"
#include "fleet/capacity.h"
#include "fleet/gpu_policy.h"
#include "fleet/pod_request.h"
#include "fleet/claimer.h"
#include "fleet/fleet_json.h"
#include "fleet/fleet_store.h"
#include "fleet/placing.h"
#include "fleet/fleet_view.h"
#include "fleet/host_policy_file.h"
#include "fleet/labels.h"
#include "fleet/scheduler.h"
#include "placement/flavor.h"
#include "placement/libvirt_domain.h"
#include "placement/pci_alias.h"
#include "placement/placement_json.h"
#include "http/client.h"
#include "topology/sources.h"

namespace accel::cli {

namespace {

using fleet::FleetStore;

constexpr const char* kStoreHelp =
    "Fleet store: sqlite:PATH (embedded, one box) or postgresql://USER@HOST/DB (libpq URI, many "
    "schedulers); default $ACCEL_FLEET_STORE, else the SQLite file `accel place --claim` uses";

std::string StoreOrDefault(const std::string& flag) { return flag.empty() ? fleet::DefaultStoreUrl() : flag; }

/// --server URL: talk to a running `accel fleet serve` instead of opening the store.
struct ServerFlags {
  std::string url;      ///< "" = use the store
  std::string ca_file;  ///< --server-ca
  bool insecure = false;
};

void AddServerFlags(CLI::App* cmd, ServerFlags* f) {
  cmd->add_option("--server", f->url,
                  "talk to a running `accel fleet serve` (http://HOST:PORT, https://USER:PASS@HOST:PORT) "
                  "instead of opening the store");
  cmd->add_option("--server-ca", f->ca_file, "CA bundle (PEM) that signed the service's TLS certificate");
  cmd->add_flag("--server-insecure", f->insecure, "https without verifying the service's certificate (labs only)");
}

// Calls the service; a 4xx answer is bad input (its error text), anything else not 2xx is the
// system refusing. Returns the parsed JSON body.
nlohmann::ordered_json CallServer(const ServerFlags& f, const std::string& method, const std::string& path,
                                  const std::string& body = "") {
  http::HttpCallOptions options;
  options.ca_file = f.ca_file;
  options.insecure = f.insecure;
  http::HttpResponse r = http::HttpCall(f.url, method, path, body, options);
  nlohmann::ordered_json doc;
  try {
    doc = ParseOrderedJsonText(r.body, f.url + path);
  } catch (const InputError&) {
    if (r.status == 401) throw InputError("--server", "", "the service wants credentials (401)", "use https://USER:PASS@HOST:PORT");
    throw SystemError("unexpected answer from", f.url, "HTTP " + std::to_string(r.status) + ": " + r.body.substr(0, 120));
  }
  const std::string error = doc.is_object() && doc.contains("error") ? doc["error"].get<std::string>() : "";
  if (r.status >= 400 && r.status < 500) throw InputError(f.url + path, "", error.empty() ? "HTTP " + std::to_string(r.status) : error);
  if (r.status >= 300) throw SystemError("the service refused", f.url + path, error.empty() ? "HTTP " + std::to_string(r.status) : error);
  return doc;
}


void Emit(const nlohmann::ordered_json& doc, const std::string& output) {
  if (output == "yaml") std::cout << ToYaml(doc);
  else std::cout << doc.dump(2) << "\n";
}

std::string JoinLabels(const fleet::Labels& labels) {
  std::string s;
  for (const auto& [k, v] : labels) s += (s.empty() ? "" : ",") + k + "=" + v;
  return s.empty() ? "-" : s;
}

std::vector<fleet::LabelRequirement> ParseWhere(const std::vector<std::string>& terms) {
  std::vector<fleet::LabelRequirement> reqs;
  for (const std::string& t : terms) reqs.push_back(fleet::ParseRequirement(t, "--where"));
  return reqs;
}

std::vector<placement::PlacementRequest> LoadRequests(const std::vector<std::string>& files,
                                                      const std::string& aliases_file) {
  placement::PciAliasTable aliases;
  if (!aliases_file.empty()) aliases = placement::LoadPciAliases(aliases_file);
  std::vector<placement::PlacementRequest> requests;
  for (const std::string& file : files)
    for (const placement::Flavor& f : placement::LoadFlavors(file))
      requests.push_back(placement::BuildRequest(f, aliases, file + " (flavor " + f.name + ")"));
  return requests;
}

// For commands that only read: nullptr when the store is a SQLite file that does not exist yet
// (reading must not create a database, or its directory, where none is).
std::unique_ptr<FleetStore> OpenForReading(const std::string& flag) {
  const std::string url = StoreOrDefault(flag);
  fleet::StoreUrl parsed = fleet::ParseStoreUrl(url);
  if (parsed.engine == fleet::StoreUrl::kSqlite && !std::filesystem::exists(parsed.target)) return nullptr;
  return FleetStore::Open(url);
}

// The store's name for messages, whether or not it exists.
std::string StoreName(const std::string& flag) { return fleet::ParseStoreUrl(StoreOrDefault(flag)).display; }

fleet::FleetView LoadView(FleetStore* store) {
  return store ? fleet::FleetView::FromSnapshot(store->Snapshot()) : fleet::FleetView();
}

// ---- hosts -------------------------------------------------------------------------------

struct HostOptions {
  std::string store;
  ServerFlags server;
  std::string name;
  std::string topology;
  std::vector<std::string> labels;
  std::vector<std::string> remove_labels;
  std::string policy;
  std::string state;
  bool force = false;
  std::string output = "table";
  std::vector<std::string> where;
};

std::string HostState(const fleet::HostRecord& r, int64_t now) {
  std::string s = fleet::HostAdminStateName(r.state);
  return fleet::IsStale(r, now) ? s + ",stale" : s;
}

fleet::HostSpec SpecFrom(const HostOptions& o, bool adding) {
  fleet::HostSpec spec;
  spec.name = o.name;
  if (!o.topology.empty()) {
    spec.topology = topology::LoadTopology(o.topology);
    if (spec.name.empty()) spec.name = spec.topology->hostname;
  }
  if (spec.name.empty())
    throw InputError("--name", "", "no host name", adding ? "pass --name NAME (the topology names none)" : "pass --name NAME");
  if (!o.policy.empty()) spec.policy = fleet::LoadHostPolicy(o.policy);
  for (const std::string& l : o.labels) spec.set_labels.insert(fleet::ParseLabel(l, "--label"));
  spec.remove_labels = o.remove_labels;
  if (!o.state.empty()) spec.state = fleet::ParseHostAdminState(o.state, "--state");
  return spec;
}

void PrintHost(FleetStore& store, const std::string& name, const std::string& output) {
  fleet::FleetSnapshot snap = store.Snapshot();
  fleet::FleetView view = fleet::FleetView::FromSnapshot(snap);
  const fleet::HostEntry* e = view.Find(name);
  if (!e) throw InputError("NAME", "", "no host '" + name + "' in " + store.url(), "`accel fleet host list` shows the fleet");
  if (output != "table") {
    Emit(fleet::HostJson(*e, view.taken_at()), output);
    return;
  }
  const fleet::HostRecord& r = e->record;
  std::cout << "host " << r.name << "  (" << HostState(r, view.taken_at()) << ", generation " << r.generation << ")\n"
            << "  labels:        " << JoinLabels(r.labels) << "\n"
            << "  hardware:      " << r.topology_id.substr(0, 19) << "  " << e->hardware->numa_nodes.size()
            << " NUMA nodes, " << e->hardware->AllCpus().Count() << " CPUs\n"
            << "  policy:        " << fleet::HostPolicyToJson(r.policy).dump() << "\n"
            << "  accelerators:  " << e->summary.free_accelerators << " free of " << e->summary.total_accelerators << "\n"
            << "  pinnable CPUs: " << e->summary.free_pinnable_cpus << " free of " << e->summary.total_pinnable_cpus << "\n";
  std::vector<fleet::Claim> claims;
  for (const fleet::Claim& c : snap.claims)
    if (c.host == r.name) claims.push_back(c);
  std::cout << "  claims:        " << claims.size() << "\n";
  if (!claims.empty()) std::cout << ClaimsTable(claims);
}

int HostAdd(const HostOptions& o) {
  if (o.topology.empty()) throw InputError("--topology", "", "is required to add a host", "--topology FILE (accel host JSON or hwloc XML) or live");
  const fleet::HostSpec spec = SpecFrom(o, true);  // bad input creates no store
  auto store = FleetStore::Open(StoreOrDefault(o.store));
  fleet::HostRecord r = store->AddHost(spec);
  if (o.output == "table") std::cout << "added host " << r.name << " to " << store->url() << "\n";
  else PrintHost(*store, r.name, o.output);
  return kExitOk;
}

int HostUpdate(const HostOptions& o) {
  const fleet::HostSpec spec = SpecFrom(o, false);
  auto store = FleetStore::Open(StoreOrDefault(o.store));
  fleet::HostRecord r = store->UpdateHost(spec);
  if (o.output == "table") std::cout << "updated host " << r.name << " (generation " << r.generation << ")\n";
  else PrintHost(*store, r.name, o.output);
  return kExitOk;
}

int HostRemove(const HostOptions& o) {
  auto store = FleetStore::Open(StoreOrDefault(o.store));
  if (!store->RemoveHost(o.name, o.force)) {
    std::cerr << "accel fleet host remove: no host '" << o.name << "' in " << store->url() << "\n";
    return kExitNoFit;
  }
  std::cout << "removed host " << o.name << "\n";
  return kExitOk;
}

// The hosts table from accel.fleet-hosts/v1 host objects.
std::string HostsTable(const nlohmann::ordered_json& hosts) {
  std::vector<std::vector<std::string>> rows = {{"NAME", "STATE", "LABELS", "GPUS FREE", "CPUS FREE", "CLAIMS", "HARDWARE"}};
  for (const auto& h : hosts) {
    std::string labels;
    for (const auto& [k, v] : h["labels"].items()) labels += (labels.empty() ? "" : ",") + k + "=" + v.get<std::string>();
    std::string state = h["state"].get<std::string>() + (h["stale"].get<bool>() ? ",stale" : "");
    rows.push_back({h["name"].get<std::string>(), state, labels.empty() ? "-" : labels,
                    std::to_string(h["accelerators"]["free"].get<int>()) + "/" + std::to_string(h["accelerators"]["total"].get<int>()),
                    std::to_string(h["pinnable_cpus"]["free"].get<int>()) + "/" + std::to_string(h["pinnable_cpus"]["total"].get<int>()),
                    std::to_string(h["claims"].size()), h["topology"].get<std::string>().substr(7, 12)});
  }
  return FormatTable(rows);
}

int HostList(const HostOptions& o) {
  const std::vector<fleet::LabelRequirement> where = ParseWhere(o.where);
  if (!o.server.url.empty()) {
    std::string query;
    for (const std::string& w : o.where) query += (query.empty() ? "?" : "&") + std::string("where=") + PercentEncode(w);
    nlohmann::ordered_json doc = CallServer(o.server, "GET", "/api/v1/hosts" + query);
    if (o.output != "table") Emit(doc, o.output);
    else if (doc["hosts"].empty()) std::cout << "no hosts at " << o.server.url << "\n";
    else std::cout << HostsTable(doc["hosts"]);
    return kExitOk;
  }
  auto store = OpenForReading(o.store);
  fleet::FleetView view = LoadView(store.get());
  if (o.output != "table") {
    nlohmann::ordered_json doc;
    doc["schema"] = "accel.fleet-hosts/v1";
    doc["hosts"] = nlohmann::ordered_json::array();
    for (const fleet::HostEntry& e : view.hosts())
      if (fleet::MatchesAll(where, e.record.labels)) doc["hosts"].push_back(fleet::HostJson(e, view.taken_at()));
    Emit(doc, o.output);
    return kExitOk;
  }
  nlohmann::ordered_json hosts = nlohmann::ordered_json::array();
  for (const fleet::HostEntry& e : view.hosts())
    if (fleet::MatchesAll(where, e.record.labels)) hosts.push_back(fleet::HostJson(e, view.taken_at()));
  if (hosts.empty()) std::cout << "no hosts in " << StoreName(o.store) << "\n";
  else std::cout << HostsTable(hosts);
  return kExitOk;
}

void RegisterHost(CLI::App* fleet_cmd, int* exit_code) {
  CLI::App* host = fleet_cmd->add_subcommand("host", "The fleet's hosts: add, update, remove, list, show");
  host->require_subcommand(1);
  auto common = [](CLI::App* cmd, const std::shared_ptr<HostOptions>& o) {
    cmd->add_option("--store", o->store, kStoreHelp);
  };
  auto out = [](CLI::App* cmd, const std::shared_ptr<HostOptions>& o, bool table) {
    cmd->add_option("-o,--output", o->output, table ? "table (default), json or yaml" : "table (a line, default), json or yaml")
        ->check(CLI::IsMember({"table", "json", "yaml"}));
  };

  auto add = std::make_shared<HostOptions>();
  CLI::App* a = host->add_subcommand(
      "add",
      "Add a host: its hardware (topology), the operator's policy, labels and state. Hosts of one\n"
      "SKU share one stored topology.\n\n"
      "Examples:\n"
      "  accel fleet host add --topology fixtures/hosts/hgx-h100.json --name gpu-001 \\\n"
      "      --label az=rack-3 --label gpu=h100 --policy nova-policy.yaml\n"
      "  accel fleet host add --topology live --store postgresql://accel@db/fleet\n\n"
      "Exit status: 0 added; 2 bad input or the host exists already (nothing written); 5 store refused.");
  common(a, add);
  a->add_option("--topology", add->topology, "accel host JSON, hwloc XML (lstopo --of xml) or 'live'")->required();
  a->add_option("--name", add->name, "host name; default the topology's hostname");
  a->add_option("--label", add->labels, "label key=value (repeat), e.g. az=rack-3 gpu=h100");
  a->add_option("--policy", add->policy, "host policy YAML/JSON: cpu_dedicated_set, cpu_shared_set, cpu_allocation_ratio, reserved_host_memory_mb");
  a->add_option("--state", add->state, "enabled (default), disabled (no new placements) or maintenance");
  out(a, add, false);
  a->callback([add, exit_code] { *exit_code = HostAdd(*add); });

  auto upd = std::make_shared<HostOptions>();
  CLI::App* u = host->add_subcommand(
      "update",
      "Change a host's topology, policy, labels or state (bumps its generation).\n\n"
      "Examples:\n"
      "  accel fleet host update --name gpu-001 --state maintenance\n"
      "  accel fleet host update --name gpu-001 --label az=rack-4 --remove-label old\n\n"
      "Exit status: 0 updated; 2 bad input or no such host; 5 store refused.");
  common(u, upd);
  u->add_option("--name", upd->name, "host to change")->required();
  u->add_option("--topology", upd->topology, "new hardware (refused if a claim holds CPUs or devices it lacks)");
  u->add_option("--label", upd->labels, "set label key=value (repeat)");
  u->add_option("--remove-label", upd->remove_labels, "remove label KEY (repeat)");
  u->add_option("--policy", upd->policy, "new host policy file");
  u->add_option("--state", upd->state, "enabled, disabled or maintenance");
  out(u, upd, false);
  u->callback([upd, exit_code] { *exit_code = HostUpdate(*upd); });

  auto rm = std::make_shared<HostOptions>();
  CLI::App* r = host->add_subcommand(
      "remove",
      "Remove a host from the fleet. A host with live claims is refused unless --force, which\n"
      "releases them with it.\n\n"
      "Exit status: 0 removed; 1 no such host; 2 it has claims (without --force); 5 store refused.");
  common(r, rm);
  r->add_option("--name,NAME", rm->name, "host to remove")->required();
  r->add_flag("--force", rm->force, "also release the host's claims");
  r->callback([rm, exit_code] { *exit_code = HostRemove(*rm); });

  auto ls = std::make_shared<HostOptions>();
  CLI::App* l = host->add_subcommand(
      "list",
      "List the fleet's hosts: state, labels, free/total GPUs and pinnable CPUs, claims.\n\n"
      "Examples:\n"
      "  accel fleet host list\n"
      "  accel fleet host list --where gpu=h100 -o json\n\n"
      "Exit status: 0 listed; 2 bad input; 5 store refused.");
  common(l, ls);
  AddServerFlags(l, &ls->server);
  l->add_option("--where", ls->where, "only hosts whose labels match (key=value, key!=value, key, !key; repeat)");
  out(l, ls, true);
  l->callback([ls, exit_code] { *exit_code = HostList(*ls); });

  auto show = std::make_shared<HostOptions>();
  CLI::App* s = host->add_subcommand("show", "Show one host: record, free resources and its claims.\n\nExit status: 0 shown; 2 no such host; 5 store refused.");
  common(s, show);
  AddServerFlags(s, &show->server);
  s->add_option("--name,NAME", show->name, "host to show")->required();
  out(s, show, true);
  s->callback([show, exit_code] {
    *exit_code = [&] {
      if (!show->server.url.empty()) {
        nlohmann::ordered_json doc = CallServer(show->server, "GET", "/api/v1/hosts/" + PercentEncode(show->name));
        Emit(doc, show->output == "table" ? "yaml" : show->output);
        return kExitOk;
      }
      auto store = OpenForReading(show->store);
      if (!store)
        throw InputError("NAME", "", "no host '" + show->name + "' in " + StoreName(show->store) + " (it does not exist yet)",
                         "`accel fleet host add` creates it");
      PrintHost(*store, show->name, show->output);
      return kExitOk;
    }();
  });
}

// ---- place -------------------------------------------------------------------------------

struct FleetPlaceOptions {
  std::string store;
  ServerFlags server;
  std::string flavor;
  std::string pod;      ///< a pod-shaped request file (fleet/pod_request.h) instead of a flavor
  std::string policy;   ///< GPU policy for GPUs by model and size; "" = the default (accel)
  std::string aliases;
  int count = 1;
  bool different_hosts = false;
  std::vector<std::string> where;
  std::string strategy = "pack";
  bool claim = false;
  int alternates = 4;
  std::string seed;
  int subset_size = 1;
  std::string replica;  ///< "INDEX/COUNT"; "" = none (the service's own with --server)
  std::string output = "text";
};

// `accel fleet place --server`: the service decides (and claims); text output is a summary,
// since the hosts' hardware stays with the service.
int PlaceThroughServer(const FleetPlaceOptions& o) {
  if (o.output == "libvirt")
    throw InputError("-o libvirt", "", "needs the host's hardware, which stays with the service", "use -o json, or --store");
  nlohmann::json body;
  if (!o.pod.empty()) body["pod"] = ReadStructuredFile(o.pod);
  else body["flavor"] = ReadStructuredFile(o.flavor);
  if (!o.policy.empty()) body["policy"] = o.policy;
  if (!o.aliases.empty()) body["aliases"] = ReadStructuredFile(o.aliases);
  body["count"] = o.count;
  body["different_hosts"] = o.different_hosts;
  body["where"] = o.where;
  body["strategy"] = o.strategy;
  body["claim"] = o.claim;
  body["alternates"] = o.alternates;
  if (!o.seed.empty()) body["seed"] = o.seed;
  if (o.subset_size != 1) body["subset_size"] = o.subset_size;
  if (!o.replica.empty()) {
    const fleet::SchedulePartition part = fleet::ParsePartition(o.replica, "--replica");
    body["partition"] = {{"index", part.index}, {"count", part.count}};
  }
  nlohmann::ordered_json doc = CallServer(o.server, "POST", "/api/v1/place", body.dump());
  const bool placed = doc.value("placed", false);
  if (o.output != "text") {
    Emit(doc, o.output);
    return placed ? kExitOk : kExitNoFit;
  }
  int k = 0;
  for (const auto& i : doc["instances"]) {
    std::cout << "instance " << ++k << " of " << o.count << ": host " << i["host"].get<std::string>();
    if (i.contains("claim")) std::cout << " (claim " << i["claim"].get<std::string>() << ")";
    std::cout << "\n";
    for (const auto& cell : i["placement"]["cells"])
      std::cout << "  cell " << cell["guest_cell"] << " -> node " << cell["host_node"] << "\n";
    for (const auto& d : i["placement"]["devices"])
      std::cout << "  device " << d["address"].get<std::string>() << "\n";
  }
  if (!placed) {
    std::cout << doc["flavor"].get<std::string>() << ": not placed\n";
    for (const auto& w : doc["why_not"])
      std::cout << "  - " << w["hosts"] << " hosts: " << w["cause"].get<std::string>()
                << (w["example"].get<std::string>().empty() ? "" : " (e.g. " + w["example"].get<std::string>() + ")") << "\n";
  }
  return placed ? kExitOk : kExitNoFit;
}

int Place(const FleetPlaceOptions& o) {
  if (o.flavor.empty() == o.pod.empty())
    throw InputError(o.flavor.empty() ? "--pod" : "--flavor", "", o.flavor.empty() ? "is missing" : "is given with --pod",
                     "give a flavor (--flavor FILE) or a pod-shaped request (--pod FILE), one of them");
  if (!o.policy.empty()) fleet::ParseGpuPolicy(o.policy, "--policy");
  if (!o.server.url.empty()) return PlaceThroughServer(o);
  std::vector<placement::PlacementRequest> requests;
  if (!o.pod.empty()) {
    requests.push_back(fleet::PodRequestFromJson(ReadStructuredFile(o.pod), o.pod));
  } else {
    requests = LoadRequests({o.flavor}, o.aliases);
  }
  if (requests.size() != 1)
    throw InputError(o.flavor, "", "holds " + std::to_string(requests.size()) + " flavors; fleet place places one",
                     "put the flavor in its own file (capacity takes several)");
  const placement::PlacementRequest& req = requests[0];
  if (o.output == "libvirt" && o.count != 1)
    throw InputError("-o libvirt", "", "renders one domain", "use --count 1, or -o json for several instances");
  fleet::ScheduleOptions so;
  so.where = ParseWhere(o.where);
  so.strategy = o.strategy == "spread" ? fleet::FleetStrategy::kSpread : fleet::FleetStrategy::kPack;
  if (!o.policy.empty()) so.gpu_policy = fleet::ParseGpuPolicy(o.policy, "--policy");
  so.count = o.count;
  so.different_hosts = o.different_hosts;
  so.alternates = o.alternates;
  so.tiebreak_seed = o.seed;
  so.subset_size = o.subset_size;
  if (so.subset_size > 1 && so.tiebreak_seed.empty())
    throw InputError("--subset-size", std::to_string(so.subset_size), "chooses among the best hosts by the seed's order",
                     "give the scheduler an identity with --seed (e.g. --seed $(hostname))");
  if (!o.replica.empty()) so.partition = fleet::ParsePartition(o.replica, "--replica");
  // A store that does not exist yet has no hosts: nothing fits, nothing is created.
  auto store = OpenForReading(o.store);
  fleet::FleetView view;
  // Each round looks at the fleet as the store has it now.
  fleet::PlaceOutcome outcome = fleet::PlaceInFleet(o.claim ? store.get() : nullptr, [&] {
    view = LoadView(store.get());
    return fleet::Schedule(view, req, so);
  });
  const bool placed = outcome.placed;
  const std::vector<fleet::Candidate>& where_placed = outcome.instances;
  const std::vector<std::string>& ids = outcome.claim_ids;
  const fleet::ScheduleResult& decision = outcome.decision;
  const int retries = outcome.retries;

  if (o.output == "libvirt") {
    if (!placed) {
      for (const std::string& line : fleet::DescribeCauses(outcome.why_not)) std::cerr << "  - " << line << "\n";
      std::cerr << "accel fleet place: " << req.flavor << " does not fit in the fleet\n";
      return kExitNoFit;
    }
    const fleet::HostEntry& e = view.hosts()[where_placed[0].host_index];
    topology::HostTopology hw = *e.hardware;
    hw.hostname = e.record.name;
    placement::DomainOptions dopt;
    dopt.cpu_shared_set = e.record.policy.cpu_shared_set;
    std::cout << placement::RenderDomainXml(hw, req, where_placed[0].placement, dopt);
    return kExitOk;
  }
  if (o.output == "text") {
    for (size_t k = 0; k < where_placed.size(); ++k) {
      const fleet::HostEntry& e = view.hosts()[where_placed[k].host_index];
      topology::HostTopology hw = *e.hardware;
      hw.hostname = e.record.name;
      placement::PlaceResult pr;
      pr.placement = where_placed[k].placement;
      std::cout << "instance " << k + 1 << " of " << o.count << ": host " << e.record.name << "\n";
      std::cout << RenderPlacementText(hw, req, pr, k < ids.size() ? ids[k] : "", StoreName(o.store));
    }
    if (!placed) {
      std::cout << req.flavor << ": " << (outcome.lost_race ? "placed, but every candidate host was taken by other schedulers"
                                                               : std::to_string(decision.instances.size()) + " of " +
                                                                     std::to_string(o.count) + " instances fit; nothing placed")
                << "\n";
      for (const std::string& line : fleet::DescribeCauses(outcome.why_not)) std::cout << "  - " << line << "\n";
    }
    if (o.claim && retries > 0) std::cout << "claim retries: " << retries << " (another scheduler took a host first)\n";
    return placed ? kExitOk : kExitNoFit;
  }
  nlohmann::ordered_json doc = fleet::PlaceOutcomeJson(outcome, req.flavor, o.count, o.claim);
  Emit(doc, o.output);
  return placed ? kExitOk : kExitNoFit;
}

// ---- capacity ----------------------------------------------------------------------------

struct CapacityCmdOptions {
  std::string store;
  ServerFlags server;
  std::vector<std::string> flavors;
  std::string aliases;
  std::vector<std::string> where;
  std::string group_by;
  std::string output = "table";
};

// The capacity table from an accel.fleet-capacity/v1 document.
void PrintCapacityTable(const nlohmann::ordered_json& doc, const std::string& group_by, bool filtered) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"FLAVOR", "MORE INSTANCES", "RUNS OUT FIRST"};
  std::set<std::string> groups;
  const std::string by = "by_" + group_by;
  for (const auto& f : doc["flavors"])
    if (!group_by.empty() && f.contains(by))
      for (const auto& [g, n] : f[by].items()) groups.insert(g);
  for (const std::string& g : groups) header.push_back(group_by + "=" + g);
  rows.push_back(header);
  for (const auto& f : doc["flavors"]) {
    const std::string out = f["runs_out_first"].get<std::string>();
    std::vector<std::string> row = {f["flavor"].get<std::string>(), std::to_string(f["count"].get<int64_t>()),
                                    out.empty() ? "-" : out + " (" + std::to_string(f["stops_on"][out].get<int>()) + " hosts)"};
    for (const std::string& g : groups)
      row.push_back(std::to_string(f[by].contains(g) ? f[by][g].get<int64_t>() : 0));
    rows.push_back(row);
  }
  std::cout << doc["hosts"] << " hosts counted (enabled, not stale" << (filtered ? ", matching --where" : "") << ")\n";
  std::cout << FormatTable(rows);
  std::cout << "stranded accelerators (by fragmentation): " << doc["stranded_accelerators"] << "\n";
  for (const auto& s : doc["stranded"]) {
    if (s["stranded"].empty()) continue;
    std::cout << "  " << s["host"].get<std::string>() << ": " << s["stranded"].size() << " of " << s["free_accelerators"]
              << " free unusable; " << s["reason"].get<std::string>() << "\n";
  }
  // Older servers (before unwanted and fragmentation) answer without these fields.
  if (doc.contains("unwanted_accelerators")) {
    std::cout << "unwanted accelerators (no flavor asks for them): " << doc["unwanted_accelerators"] << "\n";
    for (const auto& s : doc["stranded"])
      if (s.contains("unwanted") && !s["unwanted"].empty())
        std::cout << "  " << s["host"].get<std::string>() << ": " << s["unwanted"].size() << " of "
                  << s["free_accelerators"] << " free\n";
  }
  if (doc.contains("fragmentation")) {
    const auto& f = doc["fragmentation"];
    const double free = f["free_gpus"].get<double>();
    const double frag = f["fragmented_gpus"].get<double>();
    char line[200];
    std::snprintf(line, sizeof line, "GPU fragmentation: %.2f of %.2f free GPUs the flavors cannot use (%.1f%%); %.2f not wanted by them\n",
                  frag, free, free > 0 ? 100.0 * frag / free : 0.0, f["unwanted_gpus"].get<double>());
    std::cout << line;
  }
}

int CapacityCmd(const CapacityCmdOptions& o) {
  if (!o.group_by.empty()) fleet::ParseRequirement(o.group_by, "--group-by");
  nlohmann::ordered_json doc;
  if (!o.server.url.empty()) {
    nlohmann::json body;
    body["flavors"] = nlohmann::json::array();
    for (const std::string& file : o.flavors) {
      nlohmann::json f = ReadStructuredFile(file);
      if (f.is_array()) for (auto& one : f) body["flavors"].push_back(one);
      else body["flavors"].push_back(f);
    }
    if (!o.aliases.empty()) body["aliases"] = ReadStructuredFile(o.aliases);
    body["where"] = o.where;
    body["group_by"] = o.group_by;
    doc = CallServer(o.server, "POST", "/api/v1/capacity", body.dump());
  } else {
    std::vector<placement::PlacementRequest> requests = LoadRequests(o.flavors, o.aliases);
    fleet::CapacityOptions co;
    co.where = ParseWhere(o.where);
    co.group_by = o.group_by;
    auto store = OpenForReading(o.store);
    fleet::FleetView view = LoadView(store.get());
    doc = fleet::CapacityJson(fleet::Capacity(view, requests, co), co.group_by);
  }
  if (o.output != "table") Emit(doc, o.output);
  else PrintCapacityTable(doc, o.group_by, !o.where.empty());
  return kExitOk;
}

// ---- claims, release, audit, store -------------------------------------------------------

struct SimpleOptions {
  std::string store;
  ServerFlags server;
  std::string host;
  std::vector<std::string> ids;
  std::string output = "table";
};

void RegisterPlaceAndClaims(CLI::App* fleet_cmd, int* exit_code) {
  auto po = std::make_shared<FleetPlaceOptions>();
  CLI::App* p = fleet_cmd->add_subcommand(
      "place",
      "Pick a host in the fleet and the exact placement on it for N instances; optionally claim them.\n\n"
      "The engine is `accel place`'s. Hosts are filtered (enabled, not stale, --where), ranked\n"
      "by the strategy then by fragmentation (keep whole GPU nodes and whole hosts free), then\n"
      "by name (or a seeded order with --seed); with --replica I/N the hosts of this scheduler's\n"
      "share rank first. A claim taken meanwhile by another scheduler falls back to the next-best\n"
      "ranked host. When nothing fits, says why per cause.\n\n"
      "Examples:\n"
      "  accel fleet place --flavor examples/flavors/gpu-4-2cell.yaml --aliases examples/flavors/aliases.json\n"
      "  accel fleet place --flavor f.yaml --count 4 --different-hosts --where az=rack-3 --claim -o json\n"
      "  accel fleet place --flavor f.yaml --claim -o libvirt > guest.xml\n"
      "  accel fleet place --flavor f.yaml --claim --replica 1/2   # the second of two schedulers\n"
      "  accel fleet place --pod share.yaml --claim                 # 470/1000 of a T4, 4 CPUs\n\n"
      "Pod-shaped requests (--pod) and vGPU flavors ask for GPUs by model and size — a share of\n"
      "one GPU in thousandths, a MIG slice, whole GPUs of a model list — ranked by --policy (default\n"
      "accel: keeps the fleet usable for more of the same; docs/fleet-efficiency.md). A pod file:\n"
      "  name: train-7\n  cpu_milli: 4000\n  memory_mib: 16384\n  gpu: {count: 1, milli: 470, models: [T4]}\n\n"
      "Exit status: 0 all placed (and claimed); 1 not all placed (nothing claimed); 2 bad input;\n"
      "5 the store refused or cannot be reached.");
  p->add_option("--store", po->store, kStoreHelp);
  AddServerFlags(p, &po->server);
  p->add_option("--flavor", po->flavor, "flavor file (one flavor; YAML/JSON or `openstack flavor show -f json`)");
  p->add_option("--pod", po->pod, "a pod-shaped request file instead of a flavor (name, cpu_milli, memory_mib, gpu)");
  p->add_option("--policy", po->policy,
                "GPU policy for GPUs by model and size: accel (default), fgd, best-fit, packing,\n"
                "clustering, dot-product, random");
  p->add_option("--aliases", po->aliases, "Nova [pci]alias definitions (JSON/YAML)");
  p->add_option("--count", po->count, "instances to place (all or nothing)")->check(CLI::Range(1, 100000))->capture_default_str();
  p->add_flag("--different-hosts", po->different_hosts, "no two instances on one host");
  p->add_option("--where", po->where, "only hosts whose labels match (key=value, key!=value, key, !key; repeat)");
  p->add_option("--strategy", po->strategy, "pack (fill used hosts first) or spread (emptiest first)")
      ->check(CLI::IsMember({"pack", "spread"}))->capture_default_str();
  p->add_flag("--claim", po->claim, "hold the placements in the store");
  p->add_option("--alternates", po->alternates, "next-best hosts kept per instance for claim retries")
      ->check(CLI::Range(0, 64))->capture_default_str();
  p->add_option("--seed", po->seed, "scheduler identity: orders equally good hosts differently per replica");
  p->add_option("--subset-size", po->subset_size,
                "Nova's host_subset_size: choose among the N best hosts by --seed's order, so schedulers\n"
                "that share a fleet race less for one host (needs --seed; --replica separates them\n"
                "without loosening pack)")
      ->check(CLI::Range(1, 64))->capture_default_str();
  p->add_option("--replica", po->replica,
                "INDEX/COUNT: schedule as replica INDEX (from 0) of COUNT schedulers sharing the store:\n"
                "prefer the hosts whose name's hash modulo COUNT is INDEX, all hosts when none of those fits\n"
                "(with --server: instead of the service's --replica)");
  p->add_option("-o,--output", po->output, "text, json, yaml, or libvirt (one instance)")
      ->check(CLI::IsMember({"text", "json", "yaml", "libvirt"}))->capture_default_str();
  p->callback([po, exit_code] { *exit_code = Place(*po); });

  auto co = std::make_shared<CapacityCmdOptions>();
  CLI::App* c = fleet_cmd->add_subcommand(
      "capacity",
      "How many more instances of each flavor the fleet takes, per label group, what runs out first.\n\n"
      "The count is exactly what `fleet place` would place asked one at a time until nothing fits.\n"
      "Stranded accelerators: free, but no given flavor can use them, and why.\n\n"
      "Examples:\n"
      "  accel fleet capacity --flavor gpu-1.yaml --flavor gpu-8.yaml --aliases aliases.json\n"
      "  accel fleet capacity --flavor flavors.yaml --group-by az -o json\n\n"
      "Exit status: 0 shown; 2 bad input; 5 store refused.");
  c->add_option("--store", co->store, kStoreHelp);
  AddServerFlags(c, &co->server);
  c->add_option("--flavor", co->flavors, "flavor file(s); a file may hold several flavors (repeat)")->required();
  c->add_option("--aliases", co->aliases, "Nova [pci]alias definitions (JSON/YAML)");
  c->add_option("--where", co->where, "only hosts whose labels match (repeat)");
  c->add_option("--group-by", co->group_by, "break counts down by this label key, e.g. az");
  c->add_option("-o,--output", co->output, "table (default), json or yaml")->check(CLI::IsMember({"table", "json", "yaml"}));
  c->callback([co, exit_code] { *exit_code = CapacityCmd(*co); });

  auto lo = std::make_shared<SimpleOptions>();
  CLI::App* l = fleet_cmd->add_subcommand("claims", "List the fleet's claims (as `accel claims`).\n\nExit status: 0 listed; 2 bad input; 5 store refused.");
  l->add_option("--store", lo->store, kStoreHelp);
  AddServerFlags(l, &lo->server);
  l->add_option("--host", lo->host, "only the claims on this host");
  l->add_option("-o,--output", lo->output, "table (default), json or yaml")->check(CLI::IsMember({"table", "json", "yaml"}));
  l->callback([lo, exit_code] {
    *exit_code = [&] {
      if (!lo->server.url.empty()) {
        nlohmann::ordered_json doc =
            CallServer(lo->server, "GET", "/api/v1/claims" + (lo->host.empty() ? "" : "?host=" + PercentEncode(lo->host)));
        std::vector<fleet::Claim> claims;
        for (const auto& c : doc["claims"])
          claims.push_back({c["id"], c["host"], c["flavor"], c["created_at"],
                            placement::PlacementFromJson(c["placement"], lo->server.url + " (claim " + c["id"].get<std::string>() + ")")});
        PrintClaims(claims, lo->output, lo->server.url);
        return kExitOk;
      }
      auto store = OpenForReading(lo->store);
      std::optional<std::string> host;
      if (!lo->host.empty()) host = lo->host;
      PrintClaims(store ? store->ListClaims(host) : std::vector<fleet::Claim>{}, lo->output, StoreName(lo->store));
      return kExitOk;
    }();
  });

  auto ro = std::make_shared<SimpleOptions>();
  CLI::App* r = fleet_cmd->add_subcommand("release", "Release claims by id (as `accel release`).\n\nExit status: 0 all released; 1 some id was not found; 2 bad input; 5 store refused.");
  r->add_option("--store", ro->store, kStoreHelp);
  AddServerFlags(r, &ro->server);
  r->add_option("ID", ro->ids, "claim ids")->required();
  r->callback([ro, exit_code] {
    *exit_code = [&] {
      if (!ro->server.url.empty()) {
        nlohmann::json body;
        body["ids"] = ro->ids;
        nlohmann::ordered_json doc = CallServer(ro->server, "POST", "/api/v1/release", body.dump());
        for (const auto& id : doc["released"]) std::cout << "released " << id.get<std::string>() << "\n";
        for (const auto& id : doc["missing"])
          std::cerr << "accel fleet release: no claim " << id.get<std::string>() << " at " << ro->server.url << "\n";
        return doc["missing"].empty() ? static_cast<int>(kExitOk) : static_cast<int>(kExitNoFit);
      }
      auto store = FleetStore::Open(StoreOrDefault(ro->store));
      int rc = kExitOk;
      for (const std::string& id : ro->ids) {
        if (store->Release(id)) {
          std::cout << "released " << id << "\n";
        } else {
          std::cerr << "accel fleet release: no claim " << id << " in " << store->url() << "\n";
          rc = kExitNoFit;
        }
      }
      return rc;
    }();
  });

  auto ao = std::make_shared<SimpleOptions>();
  CLI::App* a = fleet_cmd->add_subcommand(
      "audit",
      "Check that no CPU, page or device is booked twice.\n\n"
      "Recomputes every host's usage from its claims and checks the unit rows against them.\n\n"
      "Exit status: 0 consistent; 1 problems found (listed); 2 bad input; 5 store refused.");
  a->add_option("--store", ao->store, kStoreHelp);
  a->callback([ao, exit_code] {
    *exit_code = [&] {
      auto store = OpenForReading(ao->store);
      std::vector<std::string> problems = store ? store->Audit() : std::vector<std::string>{};
      for (const std::string& line : problems) std::cout << line << "\n";
      std::cout << (problems.empty() ? "consistent: no double booking" : std::to_string(problems.size()) + " problem(s)") << "\n";
      return problems.empty() ? kExitOk : kExitNoFit;
    }();
  });

  CLI::App* st = fleet_cmd->add_subcommand("store", "The store's schema: migrate, status");
  st->require_subcommand(1);
  auto mo = std::make_shared<SimpleOptions>();
  CLI::App* m = st->add_subcommand(
      "migrate",
      "Create or upgrade the store's schema (versioned; safe to run again; replicas starting together\n"
      "wait for one another). Needed once for a PostgreSQL store; SQLite stores migrate on open.\n\n"
      "Example:\n"
      "  accel fleet store migrate --store postgresql://accel@db.example/fleet\n\n"
      "Exit status: 0 at the current version; 2 a newer schema or another program's tables; 5 unreachable.");
  m->add_option("--store", mo->store, kStoreHelp);
  m->callback([mo, exit_code] {
    *exit_code = [&] {
      auto store = FleetStore::OpenForMigration(StoreOrDefault(mo->store));
      int from = store->Migrate();
      std::cout << store->url() << ": schema " << from << " -> " << FleetStore::kSchemaVersion
                << (from == FleetStore::kSchemaVersion ? " (already current)" : "") << "\n";
      return kExitOk;
    }();
  });
  auto so = std::make_shared<SimpleOptions>();
  CLI::App* s = st->add_subcommand("status", "Show the store's schema version.\n\nExit status: 0 current; 1 needs migrate; 2 newer or not accel's; 5 unreachable.");
  s->add_option("--store", so->store, kStoreHelp);
  s->callback([so, exit_code] {
    *exit_code = [&] {
      auto store = FleetStore::OpenForMigration(StoreOrDefault(so->store));
      int v = store->SchemaVersion();
      std::cout << store->url() << ": schema " << v << " (this accel: " << FleetStore::kSchemaVersion << ")\n";
      if (v > FleetStore::kSchemaVersion) return static_cast<int>(kExitBadInput);
      return v == FleetStore::kSchemaVersion ? static_cast<int>(kExitOk) : static_cast<int>(kExitNoFit);
    }();
  });
}

}  // namespace

void RegisterFleet(CLI::App& app, int* exit_code) {
  CLI::App* fleet_cmd = app.add_subcommand(
      "fleet",
      "Place flavors across a fleet of hypervisors with claims in one store (SQLite on one box,\n"
      "PostgreSQL for many schedulers): inventory, placement, capacity, claims. docs/fleet.md.\n\n"
      "Start here:\n"
      "  accel fleet host add --topology fixtures/hosts/hgx-h100.json --name gpu-001 --label az=a\n"
      "  accel fleet place --flavor examples/flavors/gpu-1g.yaml --aliases examples/flavors/aliases.json\n"
      "  accel fleet capacity --flavor examples/flavors/gpu-1g.yaml --aliases examples/flavors/aliases.json");
  fleet_cmd->require_subcommand(1);
  RegisterHost(fleet_cmd, exit_code);
  RegisterPlaceAndClaims(fleet_cmd, exit_code);
  RegisterFleetServe(fleet_cmd, exit_code);
  RegisterFleetReplay(fleet_cmd, exit_code);
}

}  // namespace accel::cli
