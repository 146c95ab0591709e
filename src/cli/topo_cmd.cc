// accel topo: show a host's topology (this machine, an hwloc XML export or accel's JSON), as a
// summary, as accel.host/v1 JSON, or as a picture (SVG) with the claims on it in colour.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/error.h"
#include "fleet/fleet_store.h"
#include "fleet/store_url.h"
#include "placement/host_picture.h"
#include "topology/host_json.h"
#include "topology/sources.h"
#include "topology/text.h"

namespace accel::cli {

namespace {

struct TopoOptions {
  std::string topology = "live";
  std::string output = "text";
  std::string state;  ///< SQLite claim database for -o svg ("" = see store)
  std::string store;  ///< fleet store URL for -o svg; "" = --state, else fleet::DefaultStoreUrl()
};

// The claims on `hostname` in the store at `url`, for the picture. An SQLite file that does not
// exist holds no claims (and is not created: a picture writes nothing). The one place topo reads
// claims, so it follows the store's API alone.
std::vector<placement::PictureClaim> ClaimsOnHost(const std::string& url, const std::string& hostname) {
  std::vector<placement::PictureClaim> out;
  const fleet::StoreUrl parsed = fleet::ParseStoreUrl(url);
  if (parsed.engine == fleet::StoreUrl::kSqlite && !std::filesystem::exists(parsed.target)) return out;
  for (fleet::Claim& c : fleet::FleetStore::Open(url)->ListClaims(hostname))
    out.push_back({c.id, c.flavor, std::move(c.placement)});
  return out;
}

int RunTopo(const TopoOptions& opts) {
  topology::HostTopology host = topology::LoadTopology(opts.topology);
  if (opts.output == "svg") {
    // As accel place: --store URL, else --state PATH (SQLite), else $ACCEL_FLEET_STORE / the
    // default claim database.
    const std::string url = !opts.store.empty()   ? opts.store
                            : !opts.state.empty() ? "sqlite:" + opts.state
                                                  : fleet::DefaultStoreUrl();
    if (!opts.state.empty() && opts.store.empty() && !std::filesystem::exists(opts.state))
      std::cerr << "accel topo: note: no claim database at " << opts.state << "; drawing no claims\n";
    std::cout << placement::RenderHostSvg(host, ClaimsOnHost(url, host.hostname));
  } else {
    std::cout << (opts.output == "json" ? topology::ToJson(host) : topology::ToText(host));
  }
  std::cout.flush();
  return kExitOk;
}

}  // namespace

void RegisterTopo(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<TopoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "topo",
      "Show a host's topology: packages, NUMA nodes (CPUs, SMT siblings, memory, hugepages,\n"
      "distances) and the PCI tree with GPUs, HPUs, NVSwitches and NICs classified.\n\n"
      "-o svg draws it as lstopo does (packages, NUMA nodes with their cores, memory and\n"
      "hugepage pools, the GPUs, NVSwitches and NICs of each node) with the claims in the claim\n"
      "database on this host (`accel place --claim`, matched by host name) in colour: each\n"
      "claim's pinned CPUs, page share and devices in one colour, listed in a legend. Hover a\n"
      "CPU or device in a browser for its index, address and the claim holding it.\n\n"
      "Examples:\n"
      "  accel topo                                    # this machine, human summary\n"
      "  accel topo -o json > host.json                # save it for `accel place --topology`\n"
      "  accel topo --topology lstopo-export.xml       # an hwloc XML export (lstopo host.xml)\n"
      "  accel topo --topology host.json -o text       # summarize a saved host\n"
      "  accel topo --topology sysfs:/mnt/copy         # a copied /sys tree (DIR/sys/...)\n"
      "  accel topo --topology fixtures/hosts/hgx-h100.json -o svg > host.svg\n"
      "  accel place --topology fixtures/hosts/hgx-h100.json --flavor examples/flavors/gpu-1g.yaml \\\n"
      "      --aliases examples/flavors/aliases.json --claim --state /tmp/s.db\n"
      "  accel topo --topology fixtures/hosts/hgx-h100.json -o svg --state /tmp/s.db > host.svg\n\n"
      "Exit status: 0 shown; 2 bad input (missing, unreadable or malformed file, a state file that\n"
      "is not an accel claim database, a malformed --store URL); 5 the claim store cannot be opened\n"
      "or reached (permissions, locked, server down).");
  cmd->add_option("--topology,-t", opts->topology,
                  "'live' (this machine), an hwloc XML file, accel host JSON "
                  "(accel.host/v1, docs/schemas.md), or a directory holding sys/ (sysfs:DIR)")
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output,
                  "output format: text (summary), json (accel.host/v1) or svg (a picture with the "
                  "host's claims in colour; standalone SVG 1.1, also fine inline in HTML)")
      ->check(CLI::IsMember({"text", "json", "svg"}))
      ->capture_default_str();
  cmd->add_option("--state", opts->state,
                  "Claim database (SQLite) whose claims on this host -o svg colours. Without --state "
                  "or --store: $ACCEL_FLEET_STORE, else $ACCEL_STATE, else /var/lib/accel/state.db as "
                  "root, ~/.local/state/accel/state.db otherwise. A missing file means no claims (it is "
                  "not created)");
  cmd->add_option("--store", opts->store,
                  "Fleet store URL instead of --state: sqlite:PATH or postgresql://... "
                  "(default $ACCEL_FLEET_STORE)");
  cmd->callback([opts, exit_code] { *exit_code = RunTopo(*opts); });
}

}  // namespace accel::cli
