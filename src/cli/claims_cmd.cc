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
#include "placement/claim_store.h"
#include "placement/placement_json.h"

namespace accel::cli {

namespace {

using placement::Claim;
using placement::ClaimStore;

constexpr const char* kStateHelp =
    "claim database; default $ACCEL_STATE, else /var/lib/accel/state.db for root, else "
    "$XDG_STATE_HOME/accel/state.db or ~/.local/state/accel/state.db";

struct ClaimsOptions {
  std::string state;
  std::string host;
  std::string output = "table";
};

struct ReleaseOptions {
  std::string id;
  std::string state;
};

std::string StatePath(const std::string& flag) {
  return flag.empty() ? placement::DefaultStatePath() : flag;
}

// ---- table cells ----

std::string NodesOf(const placement::Placement& p) {
  std::set<int> nodes;
  for (const auto& cell : p.cells) nodes.insert(cell.host_node);
  std::string s;
  for (int n : nodes) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s.empty() ? "-" : s;
}

std::string CpusOf(const placement::Placement& p) {
  CpuSet cpus = p.emulator_consumed_cpus;
  for (const auto& cell : p.cells) {
    cpus = cpus.Union(cell.consumed_cpus);
    for (const auto& [vcpu, cpu] : cell.pinning) cpus.Add(cpu);
  }
  if (!cpus.Empty()) return cpus.ToString();
  int shared = p.floating_vcpus;
  for (const auto& cell : p.cells) shared += cell.shared_vcpus.Count();
  return shared > 0 ? "(" + std::to_string(shared) + " shared)" : "-";
}

std::string DevicesOf(const placement::Placement& p) {
  std::string s;
  for (const auto& d : p.devices) s += (s.empty() ? "" : ",") + d.address;
  return s.empty() ? "-" : s;
}

std::string Table(const std::vector<Claim>& claims) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "HOST", "FLAVOR", "CREATED", "NODES", "CPUS", "DEVICES"}};
  for (const Claim& c : claims) {
    rows.push_back({c.id, c.host, c.flavor, c.created_at, NodesOf(c.placement),
                    CpusOf(c.placement), DevicesOf(c.placement)});
  }
  return FormatTable(rows);
}

// {"schema": "accel.claims/v1", "claims": [{id, host, flavor, created_at, placement}]}
nlohmann::ordered_json ClaimsJson(const std::vector<Claim>& claims) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const Claim& c : claims) {
    nlohmann::ordered_json j;
    j["id"] = c.id;
    j["host"] = c.host;
    j["flavor"] = c.flavor;
    j["created_at"] = c.created_at;
    j["placement"] = placement::PlacementToJson(c.placement);
    list.push_back(std::move(j));
  }
  nlohmann::ordered_json doc;
  doc["schema"] = "accel.claims/v1";
  doc["claims"] = std::move(list);
  return doc;
}

int ListClaims(const ClaimsOptions& o) {
  std::string path = StatePath(o.state);
  std::vector<Claim> claims;
  // Listing must not create a state database (or its directory) where none is yet.
  if (std::filesystem::exists(path)) {
    std::optional<std::string> host;
    if (!o.host.empty()) host = o.host;
    claims = ClaimStore::Open(path).List(host);
  }
  if (o.output == "json") {
    std::cout << ClaimsJson(claims).dump(2) << "\n";
  } else if (o.output == "yaml") {
    std::cout << ToYaml(ClaimsJson(claims));
  } else if (claims.empty()) {
    std::cout << "no claims in " << path << "\n";
  } else {
    std::cout << Table(claims);
  }
  return kExitOk;
}

int ReleaseClaim(const ReleaseOptions& o) {
  std::string path = StatePath(o.state);
  bool released = std::filesystem::exists(path) && ClaimStore::Open(path).Release(o.id);
  if (!released) {
    std::cerr << "accel release: no claim " << o.id << " in " << path << "\n";
    return kExitNoFit;  // a well-formed request with nothing to act on
  }
  std::cout << "released " << o.id << "\n";
  return kExitOk;
}

// Runs a command body; an InputError becomes one line on stderr and exit code 2.
template <typename Body>
int Guarded(const char* command, Body body) {
  try {
    return body();
  } catch (const InputError& e) {
    std::cerr << "accel " << command << ": " << e.what() << "\n";
    return kExitBadInput;
  }
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
  claims->add_option("--host", claims_opts->host, "only the claims on this host");
  claims->add_option("-o,--output", claims_opts->output, "table (default), json or yaml")
      ->check(CLI::IsMember({"table", "json", "yaml"}));
  claims->callback([claims_opts, exit_code] {
    *exit_code = Guarded("claims", [&] { return ListClaims(*claims_opts); });
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
  release->callback([release_opts, exit_code] {
    *exit_code = Guarded("release", [&] { return ReleaseClaim(*release_opts); });
  });
}

}  // namespace accel::cli
