#include "cli/claims_text.h"

#include <iostream>
#include <set>

#include "cli/table.h"
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
  return shared > 0 ? "(" + std::to_string(shared) + " shared)" : "-";
}

std::string DevicesOf(const placement::Placement& p) {
  std::string s;
  for (const auto& d : p.devices) s += (s.empty() ? "" : ",") + d.address;
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

nlohmann::ordered_json ClaimsJson(const std::vector<fleet::Claim>& claims) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const fleet::Claim& c : claims) {
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

void PrintClaims(const std::vector<fleet::Claim>& claims, const std::string& output, const std::string& store) {
  if (output == "json") {
    std::cout << ClaimsJson(claims).dump(2) << "\n";
  } else if (output == "yaml") {
    std::cout << ToYaml(ClaimsJson(claims));
  } else if (claims.empty()) {
    std::cout << "no claims in " << store << "\n";
  } else {
    std::cout << ClaimsTable(claims);
  }
}

}  // namespace accel::cli
