// accel mig: MIG geometry, layouts, mig-parted config validation, planning and apply.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/mig_text.h"
#include "common/error.h"
#include "common/yaml_out.h"
#include "sharing/mig_geometry.h"
#include "sharing/mig_json.h"
#include "sharing/mig_layout.h"
#include "sharing/mig_parted_config.h"
#include "sharing/mig_parted_configmap.h"
#include "sharing/mig_planner.h"

namespace accel::cli {

namespace {

using nlohmann::ordered_json;
using sharing::GpuModel;

struct MigOptions {
  std::vector<std::string> gpus;
  std::string output = "table";
  bool maximal = false;
  std::vector<std::string> profiles;
  std::string file;
  std::string key;
  std::string fleet, demand;
  std::string config, name, nvml_library, state_file;
  bool dry_run = false;
};

const GpuModel& RequireModel(const std::string& name) {
  const GpuModel* model = sharing::FindGpuModel(name);
  if (!model) {
    std::string known;
    for (const GpuModel& m : sharing::MigCatalog()) known += (known.empty() ? "" : ", ") + m.name;
    throw InputError("command line", "--gpu", "unknown GPU model '" + name + "'",
                     "known models: " + known + "; `accel mig profiles` lists them");
  }
  return *model;
}

std::vector<const GpuModel*> SelectedModels(const std::vector<std::string>& names) {
  std::vector<const GpuModel*> out;
  for (const std::string& n : names) out.push_back(&RequireModel(n));
  if (names.empty()) {
    for (const GpuModel& m : sharing::MigCatalog()) out.push_back(&m);
  }
  return out;
}

void Print(const ordered_json& value, const std::string& format) {
  std::cout << (format == "yaml" ? ToYaml(value) : value.dump(2) + "\n");
}

int RunProfiles(const MigOptions& o) {
  std::vector<const GpuModel*> models = SelectedModels(o.gpus);
  if (o.output == "table") {
    std::cout << ProfilesTable(models);
    return kExitOk;
  }
  ordered_json out = ordered_json::array();
  for (const GpuModel* m : models) out.push_back(sharing::ModelToJson(*m));
  Print(out, o.output);
  return kExitOk;
}

std::vector<int> ProfileIndices(const GpuModel& model, const std::vector<std::string>& names) {
  std::vector<int> out;
  for (const std::string& n : names) {
    std::optional<int> p = sharing::FindProfile(model, n);
    if (!p) {
      throw InputError("command line", "--profiles",
                       "GPU model " + model.name + " has no MIG profile '" + n + "'",
                       "`accel mig profiles --gpu " + model.name + "` lists its profiles");
    }
    out.push_back(*p);
  }
  return out;
}

int RunLayouts(const MigOptions& o) {
  if (o.gpus.size() != 1) {
    throw InputError("command line", "--gpu", "give exactly one GPU model",
                     "e.g. accel mig layouts --gpu H100-SXM5-80GB --maximal");
  }
  const GpuModel& model = RequireModel(o.gpus.front());
  sharing::EnumerateOptions opts;
  opts.profiles = ProfileIndices(model, o.profiles);
  opts.maximal_only = o.maximal;
  std::vector<sharing::MigLayout> layouts = sharing::EnumerateLayouts(model, opts);
  if (o.output == "table") {
    std::cout << LayoutsTable(model, layouts, o.maximal);
    return kExitOk;
  }
  ordered_json out = ordered_json::array();
  for (const sharing::MigLayout& l : layouts) out.push_back(sharing::LayoutToJson(model, l));
  Print(out, o.output);
  return kExitOk;
}

int RunValidate(const MigOptions& o) {
  sharing::MigPartedDocument doc = sharing::LoadMigPartedDocument(o.file, o.key);
  const sharing::MigPartedConfig& config = doc.config;
  std::vector<sharing::ConfigFinding> findings =
      sharing::ValidateMigPartedConfig(config, o.gpus.empty() ? std::vector<const GpuModel*>{}
                                                              : SelectedModels(o.gpus));
  const bool valid = !sharing::HasErrors(findings);
  if (o.output == "json") {
    ordered_json out;
    out["file"] = o.file;
    if (doc.configmap) {
      out["configmap"] = {{"name", doc.configmap->name}, {"key", doc.configmap->key}};
    }
    out["valid"] = valid;
    out["configs"] = config.configs.size();
    ordered_json problems = ordered_json::array(), warnings = ordered_json::array();
    for (const auto& f : findings) (f.is_error() ? problems : warnings).push_back(sharing::FindingToJson(f));
    out["problems"] = std::move(problems);
    out["warnings"] = std::move(warnings);
    std::cout << out.dump(2) << "\n";
  } else {
    if (doc.configmap) {
      std::cout << o.file << ": ConfigMap"
                << (doc.configmap->name.empty() ? "" : " " + doc.configmap->name) << ", key \""
                << doc.configmap->key << "\"\n";
    }
    std::cout << ValidationText(o.file, config, findings);
  }
  return valid ? kExitOk : kExitNoFit;
}

int RunPlan(const MigOptions& o) {
  sharing::Fleet fleet = sharing::LoadFleet(o.fleet);
  sharing::Demand demand = sharing::LoadDemand(o.demand);
  sharing::Plan plan = sharing::PlanMig(fleet, demand);
  if (o.output == "mig-parted") {
    std::cout << sharing::WriteMigPartedConfig(sharing::PlanToMigPartedConfig(fleet, plan));
  } else if (o.output == "table") {
    std::cout << PlanText(fleet, demand, plan);
  } else {
    Print(sharing::PlanToJson(fleet, demand, plan), o.output);
  }
  return plan.satisfied_total == plan.demand_total ? kExitOk : kExitNoFit;
}

void AddOutput(CLI::App* cmd, std::string* output, std::vector<std::string> formats) {
  std::string list;
  for (const auto& f : formats) list += (list.empty() ? "" : ", ") + f;
  cmd->add_option("-o,--output", *output, "output format: " + list)
      ->check(CLI::IsMember(formats))
      ->capture_default_str();
}

void RegisterProfiles(CLI::App* mig, std::shared_ptr<MigOptions> o, int* exit_code) {
  CLI::App* cmd = mig->add_subcommand(
      "profiles",
      "List the MIG GPU-instance profiles of each GPU model: slices, max count, the model's\n"
      "profile IDs (they differ by model: 14 is 2g on A100 but 1g on A30), placements, and\n"
      "what an attribute means: +me holds the GPU's one OFA; on RTX PRO Blackwell +me.all\n"
      "takes every media engine (only -me instances beside it), +gfx runs graphics APIs, -me\n"
      "has no media engine. Values not seen on hardware are marked unconfirmed.\n\n"
      "Examples:\n"
      "  accel mig profiles\n"
      "  accel mig profiles --gpu H100-SXM5-80GB\n"
      "  accel mig profiles --gpu 0x2BB5                 # RTX PRO 6000 Blackwell, by PCI id\n"
      "  accel mig profiles --gpu 'NVIDIA A100-SXM4-40GB' -o json");
  cmd->add_option("--gpu", o->gpus, "GPU model, alias, NVML name or PCI id (repeatable)");
  AddOutput(cmd, &o->output, {"table", "json", "yaml"});
  cmd->callback([o, exit_code] { *exit_code = RunProfiles(*o); });
}

void RegisterLayouts(CLI::App* mig, std::shared_ptr<MigOptions> o, int* exit_code) {
  CLI::App* cmd = mig->add_subcommand(
      "layouts",
      "Enumerate every valid MIG layout (GPU instances with explicit placements) of a model.\n"
      "A slot string shows one character per memory slice: the instance's compute slices,\n"
      "'m' for a +me instance, 'w' for a 1g instance with two memory slices, '.' free.\n\n"
      "Examples:\n"
      "  accel mig layouts --gpu A100-SXM4-40GB --maximal \\\n"
      "      --profiles 1g.5gb,2g.10gb,3g.20gb,4g.20gb,7g.40gb     # NVIDIA's 19\n"
      "  accel mig layouts --gpu H100-SXM5-80GB --maximal -o json    # one array, a layout each");
  cmd->add_option("--gpu", o->gpus, "GPU model")->required();
  cmd->add_flag("--maximal", o->maximal, "only layouts to which no instance can be added");
  cmd->add_option("--profiles", o->profiles, "restrict to these profiles (comma list)")
      ->delimiter(',');
  AddOutput(cmd, &o->output, {"table", "json", "yaml"});
  cmd->callback([o, exit_code] { *exit_code = RunLayouts(*o); });
}

void RegisterValidate(CLI::App* mig, std::shared_ptr<MigOptions> o, int* exit_code) {
  CLI::App* cmd = mig->add_subcommand(
      "validate",
      "Check a mig-parted config file (version v1), or a Kubernetes ConfigMap holding one (as\n"
      "the GPU Operator's default-mig-parted-config): strict syntax as mig-parted reads it,\n"
      "then every named config against every GPU model each entry can match (by\n"
      "device-filter, or every model that has its profile names). Warnings do not fail the\n"
      "check: a device-filter naming a GPU accel does not know (not checked), and a profile\n"
      "name only some boards print (GB200's 7g.189gb for 7g.186gb).\n\n"
      "Examples:\n"
      "  accel mig validate examples/mig/h100-mixed.yaml\n"
      "  accel mig validate config.yaml --gpu H100-SXM5-80GB -o json\n"
      "  kubectl -n gpu-operator get configmap default-mig-parted-config -o yaml > cm.yaml\n"
      "  accel mig validate cm.yaml                   # reads data.\"config.yaml\"\n"
      "  accel mig validate my-configs.yaml --key h100.yaml\n\n"
      "Exit status: 0 valid (warnings allowed); 1 a config cannot be applied (reasons\n"
      "printed); 2 unreadable or malformed file.");
  cmd->add_option("FILE", o->file, "mig-parted config file, or a ConfigMap holding one")->required();
  cmd->add_option("--key", o->key,
                  "ConfigMap data key holding the config (default: config.yaml, or the only key)");
  cmd->add_option("--gpu", o->gpus, "check only on these GPU models (repeatable)");
  o->output = "text";
  AddOutput(cmd, &o->output, {"text", "json"});
  cmd->callback([o, exit_code] { *exit_code = RunValidate(*o); });
}

void RegisterPlan(CLI::App* mig, std::shared_ptr<MigOptions> o, int* exit_code) {
  CLI::App* cmd = mig->add_subcommand(
      "plan",
      "Choose MIG layouts with explicit placements for a node or fleet: satisfy the most\n"
      "demand, then reconfigure the fewest GPUs (never destroying a busy instance), then leave\n"
      "the largest free profiles.\n\n"
      "Examples:\n"
      "  accel mig plan --fleet examples/mig/fleet.yaml --demand examples/mig/demand.yaml\n"
      "  accel mig plan --fleet fleet.yaml --demand demand.yaml -o mig-parted > plan.yaml\n\n"
      "Exit status: 0 all demand satisfied; 1 part of it cannot be; 2 bad input.");
  cmd->add_option("--fleet", o->fleet, "fleet file: GPUs, current instances, busy flags")
      ->required();
  cmd->add_option("--demand", o->demand, "demand file: profile name -> instances")->required();
  AddOutput(cmd, &o->output, {"table", "json", "yaml", "mig-parted"});
  cmd->callback([o, exit_code] { *exit_code = RunPlan(*o); });
}

}  // namespace

void RegisterMig(CLI::App& app, int* exit_code) {
  CLI::App* mig = app.add_subcommand(
      "mig",
      "GPU sharing by MIG: profiles and placements per GPU model, layout enumeration,\n"
      "mig-parted config validation, fleet planning and apply through NVML (docs/mig.md).");
  mig->require_subcommand(1);
  RegisterProfiles(mig, std::make_shared<MigOptions>(), exit_code);
  RegisterLayouts(mig, std::make_shared<MigOptions>(), exit_code);
  RegisterValidate(mig, std::make_shared<MigOptions>(), exit_code);
  RegisterPlan(mig, std::make_shared<MigOptions>(), exit_code);
  RegisterMigApply(mig, exit_code);
}

}  // namespace accel::cli
