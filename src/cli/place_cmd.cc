// accel place: fit flavors on a host, optionally claim the result.
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/commands.h"
#include "cli/placement_text.h"
#include "common/error.h"
#include "common/yaml_out.h"
#include "fleet/fleet_store.h"
#include "fleet/host_policy_file.h"
#include "fleet/host_record.h"
#include "fleet/store_url.h"
#include "placement/engine.h"
#include "placement/flavor.h"
#include "placement/libvirt_domain.h"
#include "placement/pci_alias.h"
#include "placement/placement_json.h"
#include "topology/sources.h"

namespace accel::cli {

namespace {

using placement::HostPolicy;
using placement::HostUsage;

struct HostPlaceOptions {
  std::string topology = "live";
  std::string flavor;
  std::string aliases;
  std::string state;
  std::string store;
  bool claim = false;
  std::string output = "text";
  std::string strategy = "pack";
  std::string dedicated_set, shared_set;
  double cpu_allocation_ratio = 4.0;
  uint64_t reserved_mib = 0;
};

CpuSet ParseCpuFlag(const std::string& flag, const std::string& value) {
  CpuSet s;
  std::string err;
  if (!CpuSet::Parse(value, &s, &err)) throw InputError("command line", flag, err, "e.g. " + flag + " 2-55,58-111");
  return s;
}

HostPolicy MakePolicy(const HostPlaceOptions& o) {
  HostPolicy p;
  p.strategy = o.strategy == "spread" ? placement::Strategy::kSpread : placement::Strategy::kPack;
  if (!o.dedicated_set.empty()) p.cpu_dedicated_set = ParseCpuFlag("--cpu-dedicated-set", o.dedicated_set);
  if (!o.shared_set.empty()) p.cpu_shared_set = ParseCpuFlag("--cpu-shared-set", o.shared_set);
  p.cpu_allocation_ratio = o.cpu_allocation_ratio;
  p.reserved_host_memory_mib_per_node = o.reserved_mib;
  return p;
}

// One flavor's answer, in every output form.
struct Outcome {
  placement::PlacementRequest request;
  placement::PlaceResult result;
  std::string claim_id;
};

nlohmann::ordered_json OutcomeJson(const Outcome& o, const std::string& host) {
  nlohmann::ordered_json j;
  j["flavor"] = o.request.flavor;
  j["host"] = host;
  j["fits"] = o.result.fits();
  if (!o.claim_id.empty()) j["claim"] = o.claim_id;
  j["request"] = placement::RequestSummaryToJson(o.request);
  if (o.result.fits())
    j["placement"] = placement::PlacementToJson(*o.result.placement);
  else
    j["reasons"] = o.result.no_fit.reasons;
  return j;
}

// Usage already held on the host: from the store when it exists (a plain `place` never
// creates a SQLite file), else none.
HostUsage CurrentUsage(const std::string& url, const std::string& host) {
  fleet::StoreUrl parsed = fleet::ParseStoreUrl(url);
  if (parsed.engine == fleet::StoreUrl::kSqlite && !std::filesystem::exists(parsed.target)) return {};
  return fleet::FleetStore::Open(url)->UsageOf(host);
}

// The policy to place with. A host of the fleet inventory has its operator's policy in the
// store (cpu_dedicated_set, reserved memory, ...): placing there with another one would claim
// CPUs a fleet scheduler would not, so with no policy flags the stored one is used, and flags
// that say otherwise are refused. A host the store does not know takes the flags.
HostPolicy PolicyFor(const topology::HostTopology& host, const HostPlaceOptions& o, const std::string& url) {
  const HostPolicy flags = MakePolicy(o);
  fleet::StoreUrl parsed = fleet::ParseStoreUrl(url);
  if (parsed.engine == fleet::StoreUrl::kSqlite && !std::filesystem::exists(parsed.target)) return flags;
  std::optional<fleet::HostRecord> record = fleet::FleetStore::Open(url)->GetHost(host.hostname);
  if (!record) return flags;
  if (o.claim && fleet::TopologyId(host) != record->topology_id)
    throw InputError("--topology", o.topology,
                     "host " + host.hostname + " is in the fleet store " + parsed.display +
                         " with other hardware; a claim made on this hardware could double-book the stored one",
                     "update the inventory first: accel fleet host update --store " + parsed.display +
                         " --name " + host.hostname + " --topology " + o.topology);
  const nlohmann::json given = fleet::HostPolicyToJson(flags);
  const nlohmann::json stored = fleet::HostPolicyToJson(record->policy);
  if (given == fleet::HostPolicyToJson(HostPolicy{}) || given == stored) return record->policy;
  throw InputError("host policy flags", given.dump(),
                   "host " + host.hostname + " is in the fleet store " + parsed.display +
                       " with the policy " + stored.dump() + "; placing it with another would claim what fleet "
                       "schedulers would not",
                   "drop the policy flags (the stored policy is used), or change it with accel fleet host update --policy FILE");
}

Outcome PlaceOne(const topology::HostTopology& host, const placement::PlacementRequest& req,
                 const HostPolicy& policy, const HostPlaceOptions& o, const std::string& state) {
  Outcome out{req, {}, ""};
  if (!o.claim) {
    out.result = placement::Place(host, CurrentUsage(state, host.hostname), policy, req);
    return out;
  }
  std::unique_ptr<fleet::FleetStore> store = fleet::FleetStore::Open(state);
  fleet::ClaimResult claimed = store->ClaimOnHost(host.hostname, [&](const HostUsage& usage) {
    out.result = placement::Place(host, usage, policy, req);
    return out.result.placement;
  });
  if (claimed.claimed()) out.claim_id = claimed.claim->id;
  else if (!claimed.refused.empty()) {
    out.result.placement.reset();
    out.result.no_fit.reasons = {"claim refused: " + claimed.refused};
  }
  return out;
}

void Print(const std::vector<Outcome>& outcomes, const topology::HostTopology& host,
           const HostPolicy& policy, const HostPlaceOptions& o, const std::string& state) {
  if (o.output == "libvirt") {
    const Outcome& out = outcomes.front();
    placement::DomainOptions dopt;
    dopt.cpu_shared_set = policy.cpu_shared_set;
    std::cout << placement::RenderDomainXml(host, out.request, *out.result.placement, dopt);
    return;
  }
  if (o.output == "text") {
    for (const Outcome& out : outcomes)
      std::cout << RenderPlacementText(host, out.request, out.result, out.claim_id,
                                       fleet::ParseStoreUrl(state).display);
    return;
  }
  nlohmann::ordered_json doc = nlohmann::ordered_json::array();
  for (const Outcome& out : outcomes) doc.push_back(OutcomeJson(out, host.hostname));
  if (outcomes.size() == 1) doc = doc[0];
  std::cout << (o.output == "json" ? doc.dump(2) + "\n" : ToYaml(doc));
}

void Run(const HostPlaceOptions& o, int* exit_code) {
  const topology::HostTopology host = topology::LoadTopology(o.topology);
  placement::PciAliasTable aliases;
  if (!o.aliases.empty()) aliases = placement::LoadPciAliases(o.aliases);
  std::vector<placement::Flavor> flavors = placement::LoadFlavors(o.flavor);
  std::vector<placement::PlacementRequest> requests;
  for (const placement::Flavor& f : flavors)
    requests.push_back(placement::BuildRequest(f, aliases, o.flavor + " (flavor " + f.name + ")"));
  if (o.output == "libvirt" && requests.size() != 1)
    throw InputError(o.flavor, "", "holds " + std::to_string(requests.size()) + " flavors; -o libvirt renders one domain",
                     "put the flavor in its own file");
  // The claim store: --store URL, else --state PATH (SQLite), else $ACCEL_FLEET_STORE / the
  // default file. It is the fleet store, so fleet schedulers see these claims too.
  const std::string state = !o.store.empty()   ? o.store
                            : !o.state.empty() ? "sqlite:" + o.state
                                               : fleet::DefaultStoreUrl();
  const HostPolicy policy = PolicyFor(host, o, state);
  std::vector<Outcome> outcomes;
  bool all_fit = true;
  for (const placement::PlacementRequest& req : requests) {
    outcomes.push_back(PlaceOne(host, req, policy, o, state));
    all_fit = all_fit && outcomes.back().result.fits();
  }
  if (o.output == "libvirt" && !all_fit) {
    for (const std::string& r : outcomes[0].result.no_fit.reasons) std::cerr << "  - " << r << "\n";
    std::cerr << "accel place: " << requests[0].flavor << " does not fit on " << host.hostname << "\n";
  } else {
    Print(outcomes, host, policy, o, state);
  }
  *exit_code = all_fit ? kExitOk : kExitNoFit;
}

}  // namespace

void RegisterPlace(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<HostPlaceOptions>();
  CLI::App* cmd = app.add_subcommand(
      "place",
      "Fit a flavor (Nova extra specs) on a host: NUMA node per guest cell, vCPU pinning,\n"
      "emulator CPUs, hugepages and PCI devices by address; or say why it does not fit.\n\n"
      "Examples:\n"
      "  accel place --topology fixtures/hosts/hgx-h100.json \\\n"
      "      --flavor examples/flavors/gpu-1g.yaml --aliases examples/flavors/aliases.json\n"
      "  accel place --topology live --flavor my-flavor.json --claim      # hold the resources\n"
      "  accel place ... -o libvirt > guest.xml && virsh define guest.xml\n\n"
      "A host that is in the fleet inventory (accel fleet host add) is placed with its stored\n"
      "policy; policy flags that contradict it, or --claim on other hardware, are refused.\n\n"
      "Exit status: 0 placed; 1 no fit (the reasons are printed); 2 bad input (file, field, fix);\n"
      "5 the claim store refused (permissions, disk, locked by another process).");
  cmd->add_option("--topology", opts->topology,
                  "Host: 'live' (this machine), an accel host JSON or an hwloc XML (lstopo --of xml)")
      ->capture_default_str();
  cmd->add_option("--flavor", opts->flavor,
                  "Flavor file (YAML/JSON: name, vcpus, ram MiB, extra_specs; or `openstack flavor show -f json`)")
      ->required();
  cmd->add_option("--aliases", opts->aliases,
                  "Nova [pci]alias definitions (JSON/YAML list of {name, vendor_id, product_id, device_type, numa_policy})");
  cmd->add_option("--state", opts->state, "Claim database (SQLite); default $ACCEL_STATE, /var/lib/accel/state.db as root, else ~/.local/state/accel/state.db");
  cmd->add_option("--store", opts->store, "Fleet store URL instead of --state: sqlite:PATH or postgresql://... (default $ACCEL_FLEET_STORE)");
  cmd->add_flag("--claim", opts->claim, "Hold the placement's CPUs, pages and devices in the state database");
  cmd->add_option("-o,--output", opts->output, "Output: text, json, yaml, or libvirt (the domain XML)")
      ->check(CLI::IsMember({"text", "json", "yaml", "libvirt"}))
      ->capture_default_str();
  cmd->add_option("--strategy", opts->strategy, "Fill NUMA nodes one by one (pack) or evenly (spread)")
      ->check(CLI::IsMember({"pack", "spread"}))
      ->capture_default_str();
  cmd->add_option("--cpu-dedicated-set", opts->dedicated_set, "Host CPUs pinned vCPUs may use (Nova [compute]cpu_dedicated_set); default all");
  cmd->add_option("--cpu-shared-set", opts->shared_set, "Host CPUs floating vCPUs run on (Nova [compute]cpu_shared_set); default all");
  cmd->add_option("--cpu-allocation-ratio", opts->cpu_allocation_ratio, "Overcommit of shared vCPUs per shared CPU")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--reserved-host-memory-mb", opts->reserved_mib, "Base-page memory per NUMA node kept for the host")
      ->capture_default_str();
  cmd->callback([opts, exit_code] { Run(*opts, exit_code); });
}

}  // namespace accel::cli
