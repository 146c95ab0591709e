#include "cli/claims_text.h"

#include <algorithm>
#include <iostream>
#include <set>

#include "cli/table.h"
#include "fleet/fleet_json.h"
#include "common/yaml_out.h"
#include "placement/placement_json.h"

namespace accel::cli {

namespace {

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
  if (shared > 0) return "(" + std::to_string(shared) + " shared)";
  // A pod's CPU: thousandths of the shared pool.
  return p.floating_cpu_milli > 0 ? "(" + std::to_string(p.floating_cpu_milli) + "m shared)" : "-";
}

// PCI devices, then GPUs given by model and size (pods): a whole GPU as its address, a share as
// ADDRESS@470m (thousandths), a MIG slice as ADDRESS@PROFILE.
std::string DevicesOf(const placement::Placement& p) {
  std::string s;
  for (const auto& d : p.devices) s += (s.empty() ? "" : ",") + d.address;
  for (const auto& g : p.gpus) {
    std::string item = g.address;
    if (g.is_mig()) item += "@" + g.mig_profile;
    else if (g.is_share()) item += "@" + std::to_string(g.milli) + "m";
    else if (std::any_of(p.devices.begin(), p.devices.end(), [&](const auto& d) { return d.address == g.address; })) continue;
    s += (s.empty() ? "" : ",") + item;
  }
  return s.empty() ? "-" : s;
}

}  // namespace

std::string ClaimsTable(const std::vector<fleet::Claim>& claims) {
  std::vector<std::vector<std::string>> rows = {
      {"ID", "HOST", "FLAVOR", "CREATED", "NODES", "CPUS", "DEVICES"}};
  for (const fleet::Claim& c : claims) {
    rows.push_back({c.id, c.host, c.flavor, c.created_at, NodesOf(c.placement),
                    CpusOf(c.placement), DevicesOf(c.placement)});
  }
  return FormatTable(rows);
}

void PrintClaims(const std::vector<fleet::Claim>& claims, const std::string& output, const std::string& store) {
  if (output == "json") {
    std::cout << fleet::ClaimsJson(claims).dump(2) << "\n";
  } else if (output == "yaml") {
    std::cout << ToYaml(fleet::ClaimsJson(claims));
  } else if (claims.empty()) {
    std::cout << "no claims in " << store << "\n";
  } else {
    std::cout << ClaimsTable(claims);
  }
}

}  // namespace accel::cli
