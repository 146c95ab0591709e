// RenderTunePlanText / RenderTunePlanJson.
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/strings.h"
#include "tuning/tune_plan.h"

namespace accel::tuning {

namespace {


std::string CpusCell(const CpuSet& cpus) {
  return cpus.Empty() ? "-" : cpus.ToString() + " (" + std::to_string(cpus.Count()) + ")";
}

// Instances of a node, grouped: "gpu-1g x4, numa2 x1".
std::string GuestsCell(const std::vector<std::string>& guests) {
  std::vector<std::pair<std::string, int>> counts;
  for (const std::string& g : guests) {
    std::string flavor = g.substr(0, g.rfind(" #"));
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& c) { return c.first == flavor; });
    if (it == counts.end())
      counts.push_back({flavor, 1});
    else
      ++it->second;
  }
  std::vector<std::string> parts;
  for (const auto& [flavor, n] : counts) parts.push_back(flavor + " x" + std::to_string(n));
  return parts.empty() ? "-" : JoinStrings(parts, ", ");
}

std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line = " ";
    for (size_t c = 0; c < row.size(); ++c)
      line += " " + row[c] + (c + 1 < row.size() ? std::string(width[c] - row[c].size() + 1, ' ') : "");
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string RenderTunePlanText(const TunePlan& plan) {
  size_t n = plan.planned.size();
  std::string out = "Tuning plan for " + plan.host + ": " + std::to_string(n) +
                    (n == 1 ? " instance" : " instances") + " on " +
                    std::to_string(plan.nodes.size()) + " NUMA nodes\n\n";
  std::vector<std::vector<std::string>> rows = {
      {"node", "1G pages", "2M pages", "host MiB", "dedicated CPUs", "housekeeping CPUs", "instances"}};
  for (const NodePlan& np : plan.nodes)
    rows.push_back({std::to_string(np.node), std::to_string(np.pages_1g), std::to_string(np.pages_2m),
                    std::to_string(np.host_memory_mib), CpusCell(np.dedicated),
                    CpusCell(np.housekeeping), GuestsCell(np.guests)});
  out += Table(rows);
  out += "\nKernel command line (add):\n  " + JoinStrings(plan.kernel_args, " ") + "\n";
  out += "\nnova.conf:\n";
  for (const std::string& line : plan.nova_conf) out += "  " + line + "\n";
  out += "\nCommands:\n";
  for (const std::string& line : plan.commands) out += "  " + line + "\n";
  if (!plan.notes.empty()) {
    out += "\nNotes:\n";
    for (const std::string& n : plan.notes) out += "  - " + n + "\n";
  }
  return out;
}

std::string RenderTunePlanJson(const TunePlan& plan) {
  nlohmann::ordered_json j;
  j["schema"] = "accel.tune-plan/v1";
  j["host"] = plan.host;
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const NodePlan& np : plan.nodes) {
    nlohmann::ordered_json n;
    n["node"] = np.node;
    n["pages_1g"] = np.pages_1g;
    n["pages_2m"] = np.pages_2m;
    n["host_memory_mib"] = np.host_memory_mib;
    n["dedicated"] = np.dedicated.ToString();
    n["housekeeping"] = np.housekeeping.ToString();
    n["instances"] = np.guests;
    nodes.push_back(std::move(n));
  }
  j["nodes"] = std::move(nodes);
  j["dedicated"] = plan.dedicated.ToString();
  j["housekeeping"] = plan.housekeeping.ToString();
  j["kernel_args"] = plan.kernel_args;
  j["kernel_cmdline"] = JoinStrings(plan.kernel_args, " ");
  j["nova_conf"] = plan.nova_conf;
  j["commands"] = plan.commands;
  j["planned"] = plan.planned;
  j["notes"] = plan.notes;
  return j.dump(2) + "\n";
}

}  // namespace accel::tuning
