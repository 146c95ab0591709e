#include "sharing/mig_json.h"

#include <cstdio>

namespace accel::sharing {

using nlohmann::ordered_json;

std::string PciIdString(uint32_t pci_id) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08X", pci_id);
  return buf;
}

ordered_json ProfileToJson(const MigProfile& p) {
  ordered_json j;
  j["name"] = p.name;
  j["compute_slices"] = p.compute_slices;
  j["memory_slices"] = p.memory_slices;
  j["max_count"] = p.max_count;
  j["profile_id"] = p.profile_id >= 0 ? ordered_json(p.profile_id) : ordered_json();
  j["memory_gib"] = p.memory_gib > 0 ? ordered_json(p.memory_gib) : ordered_json();
  j["media_extension"] = p.media_extension;
  j["attributes"] = AttributeSuffix(p);
  j["all_media"] = p.all_media;
  j["no_media"] = p.no_media;
  j["graphics"] = p.graphics;
  j["other_names"] = p.other_names;
  ordered_json placements = ordered_json::array();
  for (int start : p.starts) placements.push_back({{"start", start}, {"size", p.memory_slices}});
  j["placements"] = std::move(placements);
  j["confirmed"] = p.confirmed;
  return j;
}

ordered_json ModelToJson(const GpuModel& m) {
  ordered_json j;
  j["model"] = m.name;
  j["aliases"] = m.aliases;
  ordered_json ids = ordered_json::array();
  for (uint32_t id : m.pci_ids) ids.push_back(PciIdString(id));
  j["pci_ids"] = std::move(ids);
  j["memory_slices"] = m.memory_slices;
  j["compute_slices"] = m.compute_slices;
  j["min_driver"] = m.min_driver;
  ordered_json profiles = ordered_json::array();
  for (const MigProfile& p : m.profiles) profiles.push_back(ProfileToJson(p));
  j["profiles"] = std::move(profiles);
  return j;
}

namespace {

ordered_json InstancesToJson(const GpuModel& model, const MigLayout& layout) {
  ordered_json out = ordered_json::array();
  for (const MigPlacement& p : layout) {
    const MigProfile& profile = model.profiles.at(p.profile);
    out.push_back({{"profile", profile.name},
                   {"start", p.start},
                   {"size", profile.memory_slices},
                   {"compute_slices", profile.compute_slices}});
  }
  return out;
}

MigLayout CurrentLayout(const FleetGpu& gpu) {
  MigLayout layout;
  for (const ExistingInstance& i : gpu.instances) layout.push_back(i.placement);
  return Canonical(std::move(layout));
}

}  // namespace

ordered_json LayoutToJson(const GpuModel& model, const MigLayout& layout) {
  ordered_json j;
  j["slots"] = SlotString(model, layout);
  j["instances"] = InstancesToJson(model, layout);
  return j;
}

ordered_json FindingToJson(const ConfigFinding& f) {
  ordered_json j;
  j["config"] = f.config;
  j["entry"] = f.entry;
  j["line"] = f.line;
  j["model"] = f.model.empty() ? ordered_json() : ordered_json(f.model);
  j["severity"] = f.is_error() ? "error" : "warning";
  j["message"] = f.message;
  return j;
}

ordered_json PlanToJson(const Fleet& fleet, const Demand& demand, const Plan& plan) {
  ordered_json by_profile = ordered_json::array();
  for (size_t i = 0; i < demand.size(); ++i) {
    int satisfied = i < plan.satisfied.size() ? plan.satisfied[i].second : 0;
    by_profile.push_back(
        {{"profile", demand[i].first}, {"demand", demand[i].second}, {"satisfied", satisfied}});
  }
  ordered_json summary;
  summary["demand"] = plan.demand_total;
  summary["satisfied"] = plan.satisfied_total;
  summary["gpus"] = fleet.gpus.size();
  summary["gpus_changed"] = plan.gpus_changed;
  summary["free_score"] = plan.free_score;
  summary["by_profile"] = std::move(by_profile);

  ordered_json gpus = ordered_json::array();
  for (const GpuPlan& g : plan.gpus) {
    const FleetGpu& gpu = fleet.gpus.at(g.gpu);
    ordered_json j;
    j["node"] = gpu.node;
    j["index"] = gpu.index;
    j["model"] = gpu.model->name;
    j["changed"] = g.changed;
    j["current"] = LayoutToJson(*gpu.model, CurrentLayout(gpu));
    j["target"] = LayoutToJson(*gpu.model, g.target);
    j["destroy"] = InstancesToJson(*gpu.model, g.destroy);
    j["create"] = InstancesToJson(*gpu.model, g.create);
    gpus.push_back(std::move(j));
  }
  ordered_json out;
  out["summary"] = std::move(summary);
  out["gpus"] = std::move(gpus);
  return out;
}

}  // namespace accel::sharing
