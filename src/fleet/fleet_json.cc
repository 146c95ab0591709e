#include "fleet/fleet_json.h"

#include <cmath>

#include "fleet/host_policy_file.h"
#include "placement/placement_json.h"

namespace accel::fleet {

nlohmann::ordered_json HostJson(const HostEntry& e, int64_t now) {
  const HostRecord& r = e.record;
  nlohmann::ordered_json j;
  j["name"] = r.name;
  j["state"] = HostAdminStateName(r.state);
  j["stale"] = IsStale(r, now);
  j["labels"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : r.labels) j["labels"][k] = v;
  j["topology"] = r.topology_id;
  j["policy"] = HostPolicyToJson(r.policy);
  j["generation"] = r.generation;
  j["heartbeat_at"] = r.heartbeat_at ? nlohmann::ordered_json(*r.heartbeat_at) : nlohmann::ordered_json();
  j["updated_at"] = r.updated_at;
  j["accelerators"] = {{"free", e.summary.free_accelerators}, {"total", e.summary.total_accelerators}};
  j["pinnable_cpus"] = {{"free", e.summary.free_pinnable_cpus}, {"total", e.summary.total_pinnable_cpus}};
  j["claims"] = e.claims;
  return j;
}

nlohmann::ordered_json CapacityJson(const CapacityReport& report, const std::string& group_by) {
  nlohmann::ordered_json doc;
  doc["schema"] = "accel.fleet-capacity/v1";
  doc["hosts"] = report.eligible_hosts;
  doc["flavors"] = nlohmann::ordered_json::array();
  for (const FlavorCapacity& f : report.flavors) {
    nlohmann::ordered_json j;
    j["flavor"] = f.flavor;
    j["count"] = f.count;
    j["runs_out_first"] = f.runs_out_first;
    j["stops_on"] = f.stops_on;
    if (!group_by.empty()) j["by_" + group_by] = f.by_group;
    doc["flavors"].push_back(std::move(j));
  }
  doc["stranded_accelerators"] = report.stranded_accelerators;
  doc["unwanted_accelerators"] = report.unwanted_accelerators;
  doc["stranded"] = nlohmann::ordered_json::array();
  for (const StrandedHost& s : report.stranded)
    doc["stranded"].push_back({{"host", s.host}, {"free_accelerators", s.free_accelerators},
                               {"stranded", s.stranded}, {"unwanted", s.unwanted}, {"reason", s.reason}});
  auto gpus = [](double milli) { return std::round(milli) / 1000.0; };
  nlohmann::ordered_json frag;
  frag["free_gpus"] = gpus(static_cast<double>(report.free_gpu_milli));
  frag["fragmented_gpus"] = gpus(report.fragmented_gpu_milli);
  frag["unwanted_gpus"] = gpus(static_cast<double>(report.unwanted_gpu_milli));
  frag["hosts"] = nlohmann::ordered_json::array();
  for (const HostFragmentationLine& l : report.fragmentation)
    frag["hosts"].push_back({{"host", l.host}, {"free_gpus", gpus(static_cast<double>(l.free_milli))},
                             {"fragmented_gpus", gpus(l.fragmented_milli)},
                             {"unwanted_gpus", gpus(static_cast<double>(l.unwanted_milli))}});
  doc["fragmentation"] = std::move(frag);
  return doc;
}

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

}  // namespace accel::fleet
