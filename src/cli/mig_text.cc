#include "cli/mig_text.h"

#include <cstdio>

#include "cli/table.h"
#include "common/strings.h"

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

// What a profile's attribute means, for a person choosing one.
std::string AttributeText(const MigProfile& p) {
  const std::string suffix = sharing::AttributeSuffix(p);
  if (suffix.empty()) return "";
  if (p.all_media) return suffix + " (every media engine; only -me beside it)";
  if (p.media_extension) return suffix + " (holds the OFA; one per GPU)";
  if (p.graphics) return suffix + " (graphics APIs)";
  if (p.no_media) return suffix + " (no media engine)";
  return suffix;
}

std::string Note(const MigProfile& p) {
  std::string note = p.confirmed ? "" : "unconfirmed: checked against the driver at apply";
  if (!p.other_names.empty()) {
    note += std::string(note.empty() ? "" : "; ") + "also named " +
            JoinStrings(p.other_names, ", ") + " on some boards";
  }
  return note;
}

std::string Names(const GpuModel& model, const MigLayout& layout) {
  if (layout.empty()) return "-";
  return sharing::Describe(model, layout);
}

}  // namespace

std::string ProfilesTable(const std::vector<const GpuModel*>& models) {
  std::vector<std::vector<std::string>> rows = {
      {"MODEL", "PROFILE", "ID", "COMPUTE", "MEMORY", "MAX", "PLACEMENTS", "GiB", "ATTRIBUTES",
       "NOTE"}};
  for (const GpuModel* m : models) {
    for (const MigProfile& p : m->profiles) {
      rows.push_back({m->name, p.name, p.profile_id >= 0 ? std::to_string(p.profile_id) : "?",
                      std::to_string(p.compute_slices) + "/" + std::to_string(m->compute_slices),
                      std::to_string(p.memory_slices) + "/" + std::to_string(m->memory_slices),
                      std::to_string(p.max_count), Placements(p), Gib(p.memory_gib),
                      AttributeText(p), Note(p)});
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
  int errors = 0, warnings = 0;
  std::string out;
  for (const auto& f : findings) {
    (f.is_error() ? errors : warnings)++;
    out += file + (f.line > 0 ? ":" + std::to_string(f.line) : "") + ": " +
           (f.is_error() ? "" : "warning: ") + "config '" + f.config + "' entry " +
           std::to_string(f.entry) + (f.model.empty() ? "" : " on " + f.model) + ": " +
           f.message + "\n";
  }
  const std::string noted =
      warnings == 0 ? "" : " (" + std::to_string(warnings) + " warning" + (warnings == 1 ? "" : "s") + ")";
  if (errors == 0) {
    return out + file + ": " + std::to_string(config.configs.size()) + " configs, all valid" +
           noted + "\n";
  }
  return out + file + ": " + std::to_string(errors) + " problem(s)" + noted + "\n";
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
