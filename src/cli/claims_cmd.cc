// accel claims: list the placements in force; accel release: drop one.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "common/error.h"
#include "common/yaml_out.h"
#include "cli/claims_text.h"
#include "fleet/fleet_store.h"
#include "placement/placement_json.h"

namespace accel::cli {

namespace {

using fleet::Claim;
using fleet::FleetStore;

constexpr const char* kStateHelp =
    "claim database; default $ACCEL_STATE, else /var/lib/accel/state.db for root, else "
    "$XDG_STATE_HOME/accel/state.db or ~/.local/state/accel/state.db";
constexpr const char* kClaimsStoreHelp =
    "fleet store URL instead (sqlite:PATH or postgresql://...); default $ACCEL_FLEET_STORE";

struct ClaimsOptions {
  std::string state;
  std::string store;
  std::string host;
  std::string output = "table";
};

struct ReleaseOptions {
  std::string id;
  std::string state;
  std::string store;
};

// The store a claims command uses, and whether it exists yet (listing must not create one):
// --store URL; else --state PATH (the SQLite file); else $ACCEL_FLEET_STORE, $ACCEL_STATE or
// the default file.
struct ChosenStore {
  std::string url;
  bool exists = true;
};

ChosenStore ChooseStore(const std::string& store, const std::string& state) {
  if (!store.empty()) return {store, true};
  std::string url = state.empty() ? fleet::DefaultStoreUrl() : "sqlite:" + state;
  fleet::StoreUrl parsed = fleet::ParseStoreUrl(url, state.empty() ? "ACCEL_FLEET_STORE" : "--state");
  if (parsed.engine == fleet::StoreUrl::kSqlite) return {url, std::filesystem::exists(parsed.target)};
  return {url, true};
}

int ListClaims(const ClaimsOptions& o) {
  ChosenStore store = ChooseStore(o.store, o.state);
  std::vector<Claim> claims;
  // Listing must not create a state database (or its directory) where none is yet.
  if (store.exists) {
    std::optional<std::string> host;
    if (!o.host.empty()) host = o.host;
    claims = FleetStore::Open(store.url)->ListClaims(host);
  }
  PrintClaims(claims, o.output, fleet::ParseStoreUrl(store.url).display);
  return kExitOk;
}

int ReleaseClaim(const ReleaseOptions& o) {
  ChosenStore store = ChooseStore(o.store, o.state);
  bool released = store.exists && FleetStore::Open(store.url)->Release(o.id);
  if (!released) {
    std::cerr << "accel release: no claim " << o.id << " in " << fleet::ParseStoreUrl(store.url).display << "\n";
    return kExitNoFit;  // a well-formed request with nothing to act on
  }
  std::cout << "released " << o.id << "\n";
  return kExitOk;
}

}  // namespace

void RegisterClaims(CLI::App& app, int* exit_code) {
  auto claims_opts = std::make_shared<ClaimsOptions>();
  CLI::App* claims = app.add_subcommand(
      "claims",
      "List the claims (placements in force) in the state database.\n"
      "Examples:\n"
      "  accel claims\n"
      "  accel claims --host hgx-h100 -o json\n"
      "Exit status: 0 listed; 2 the file is not a claim database; 5 it cannot be opened or is\n"
      "locked (permissions, disk, another process).");
  claims->add_option("--state", claims_opts->state, kStateHelp);
  claims->add_option("--store", claims_opts->store, kClaimsStoreHelp);
  claims->add_option("--host", claims_opts->host, "only the claims on this host");
  claims->add_option("-o,--output", claims_opts->output, "table (default), json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}));
  claims->callback([claims_opts, exit_code] {
    *exit_code = ListClaims(*claims_opts);
  });

  auto release_opts = std::make_shared<ReleaseOptions>();
  CLI::App* release = app.add_subcommand(
      "release",
      "Release a claim: its CPUs, pages and devices become free for new placements.\n"
      "Example:\n"
      "  accel release c-0123456789ab\n"
      "Exit status: 0 released; 1 no claim with that id; 2 the file is not a claim database;\n"
      "5 it cannot be opened or is locked.");
  release->add_option("ID", release_opts->id, "claim id, as accel claims lists it")->required();
  release->add_option("--state", release_opts->state, kStateHelp);
  release->add_option("--store", release_opts->store, kClaimsStoreHelp);
  release->callback([release_opts, exit_code] {
    *exit_code = ReleaseClaim(*release_opts);
  });
}

}  // namespace accel::cli
