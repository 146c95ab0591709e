#include "cli/mig_text.h"

#include <cstdio>

#include "cli/table.h"

namespace accel::cli {

using sharing::GpuModel;
using sharing::MigLayout;
using sharing::MigProfile;

namespace {

std::string Placements(const MigProfile& p) {
  std::string starts;
  for (int s : p.starts) starts += (starts.empty() ? "" : ",") + std::to_string(s);
  return "{" + starts + "}:" + std::to_string(p.memory_slices);
}

std::string Gib(double gib) {
  if (gib <= 0) return "?";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", gib);
  return buf;
}

std::string Names(const GpuModel& model, const MigLayout& layout) {
  if (layout.empty()) return "-";
  return sharing::Describe(model, layout);
}

}  // namespace

std::string ProfilesTable(const std::vector<const GpuModel*>& models) {
  std::vector<std::vector<std::string>> rows = {
      {"MODEL", "PROFILE", "ID", "COMPUTE", "MEMORY", "MAX", "PLACEMENTS", "GiB", "NOTE"}};
  for (const GpuModel* m : models) {
    for (const MigProfile& p : m->profiles) {
      rows.push_back({m->name, p.name, p.profile_id >= 0 ? std::to_string(p.profile_id) : "?",
                      std::to_string(p.compute_slices) + "/" + std::to_string(m->compute_slices),
                      std::to_string(p.memory_slices) + "/" + std::to_string(m->memory_slices),
                      std::to_string(p.max_count), Placements(p), Gib(p.memory_gib),
                      p.confirmed ? "" : "unconfirmed: checked against the driver at apply"});
    }
  }
  return FormatTable(rows);
}

std::string LayoutsTable(const GpuModel& model, const std::vector<MigLayout>& layouts,
                         bool maximal) {
  std::vector<std::vector<std::string>> rows = {{"#", "SLOTS", "INSTANCES"}};
  for (size_t i = 0; i < layouts.size(); ++i) {
    rows.push_back({std::to_string(i + 1), sharing::SlotString(model, layouts[i]),
                    Names(model, layouts[i])});
  }
  return FormatTable(rows) + std::to_string(layouts.size()) + (maximal ? " maximal" : "") +
         " layouts on " + model.name + "\n";
}

std::string ValidationText(const std::string& file, const sharing::MigPartedConfig& config,
                           const std::vector<sharing::ConfigFinding>& findings) {
  if (findings.empty()) {
    return file + ": " + std::to_string(config.configs.size()) + " configs, all valid\n";
  }
  std::string out;
  for (const auto& f : findings) {
    out += file + (f.line > 0 ? ":" + std::to_string(f.line) : "") + ": config '" + f.config +
           "' entry " + std::to_string(f.entry) + (f.model.empty() ? "" : " on " + f.model) +
           ": " + f.message + "\n";
  }
  out += file + ": " + std::to_string(findings.size()) + " problem(s)\n";
  return out;
}

std::string PlanText(const sharing::Fleet& fleet, const sharing::Demand& demand,
                     const sharing::Plan& plan) {
  std::vector<std::vector<std::string>> want = {{"PROFILE", "DEMAND", "SATISFIED"}};
  for (size_t i = 0; i < demand.size(); ++i) {
    int got = i < plan.satisfied.size() ? plan.satisfied[i].second : 0;
    want.push_back({demand[i].first, std::to_string(demand[i].second), std::to_string(got)});
  }
  std::vector<std::vector<std::string>> gpus = {
      {"NODE", "GPU", "MODEL", "CHANGE", "TARGET", "DESTROY", "CREATE"}};
  for (const sharing::GpuPlan& g : plan.gpus) {
    const sharing::FleetGpu& gpu = fleet.gpus.at(g.gpu);
    const GpuModel& m = *gpu.model;
    gpus.push_back({gpu.node.empty() ? "-" : gpu.node, std::to_string(gpu.index), m.name,
                    g.changed ? "yes" : "no",
                    sharing::SlotString(m, g.target) + "  " + Names(m, g.target),
                    g.changed ? Names(m, g.destroy) : "-", g.changed ? Names(m, g.create) : "-"});
  }
  return FormatTable(want) + "\n" + FormatTable(gpus) + "\nsatisfied " +
         std::to_string(plan.satisfied_total) + " of " + std::to_string(plan.demand_total) +
         " instances; " + std::to_string(plan.gpus_changed) + " of " +
         std::to_string(fleet.gpus.size()) + " GPUs change\n";
}

}  // namespace accel::cli
