// accel mig apply: apply a named mig-parted config through NVML with explicit placements.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "common/error.h"
#include "devices/mig_control.h"
#include "sharing/mig_apply.h"
#include "sharing/mig_parted_config.h"
#include "sharing/mig_parted_configmap.h"

namespace accel::cli {

namespace {

struct ApplyOptions {
  std::string config;
  std::string key;
  std::string name;
  bool dry_run = false;
  std::string nvml_library;
  std::string state_file = sharing::kDefaultMigStateFile;
  bool no_state = false;
};

void PrintPlan(const sharing::MigApplyPlan& plan) {
  for (const std::string& line : plan.Describe()) std::cout << line << "\n";
}

// The default feature file is written only where node-feature-discovery runs (its features.d
// directory exists); a path given with --state-file is always written.
bool StateWanted(const ApplyOptions& o) {
  if (o.no_state) return false;
  if (o.state_file != sharing::kDefaultMigStateFile) return true;
  return std::filesystem::is_directory(std::filesystem::path(o.state_file).parent_path());
}

// Writes the state labels. "pending" is written before the GPUs change, so a file that cannot be
// written stops the apply there (SystemError, exit 5, nothing changed). The outcome after the
// GPUs changed (or were found as wanted) is only reported: the apply's own result stands.
void WriteState(const ApplyOptions& o, sharing::MigConfigState state) {
  if (!StateWanted(o)) return;
  if (state == sharing::MigConfigState::kPending) {
    sharing::WriteMigConfigState(o.state_file, o.name, state);
    return;
  }
  try {
    sharing::WriteMigConfigState(o.state_file, o.name, state);
  } catch (const SystemError& e) {  // a warning, not exit 5: the apply's own result stands
    std::cerr << "accel mig apply: warning: state labels not written: " << e.what() << "\n";
  }
}

int RunApply(const ApplyOptions& o) {
  sharing::MigPartedConfig config = sharing::LoadMigPartedDocument(o.config, o.key).config;
  if (!config.Find(o.name)) {
    std::string names;
    for (const auto& c : config.configs) names += (names.empty() ? "" : ", ") + c.name;
    throw InputError(o.config, "mig-configs", "no config named '" + o.name + "'",
                     "the file has: " + names);
  }
  devices::MigGpus gpus = devices::OpenNvmlMigControl(o.nvml_library);
  if (gpus.empty()) {
    std::cerr << "accel mig apply: no NVIDIA GPU found (is the driver loaded? --nvml-library "
                 "names libnvidia-ml.so.1 off the default path)\n";
    return kExitNoFit;
  }
  sharing::MigApplyPlan plan = sharing::PlanApply(config, o.name, gpus);
  PrintPlan(plan);
  if (!plan.ok()) {
    std::cerr << "accel mig apply: config '" << o.name << "' cannot be applied; nothing changed\n";
    if (!o.dry_run) WriteState(o, sharing::MigConfigState::kFailed);
    return kExitNoFit;
  }
  if (o.dry_run) {
    std::cout << "dry run: " << plan.StepCount() << " step(s), nothing changed\n";
    return kExitOk;
  }
  if (plan.StepCount() == 0) {
    WriteState(o, sharing::MigConfigState::kSuccess);
    std::cout << "config '" << o.name << "' is already applied\n";
    return kExitOk;
  }
  WriteState(o, sharing::MigConfigState::kPending);
  sharing::MigApplyResult result = sharing::ExecuteApply(plan, gpus);
  for (const std::string& line : result.done) std::cout << "done: " << line << "\n";
  if (result.success) {
    WriteState(o, sharing::MigConfigState::kSuccess);
    std::cout << "config '" << o.name << "' applied\n";
    return kExitOk;
  }
  std::cerr << "accel mig apply: " << result.error << "\n";
  for (const std::string& line : result.rolled_back) std::cerr << "rolled back: " << line << "\n";
  for (const std::string& line : result.rollback_errors) {
    std::cerr << "rollback FAILED: " << line << "\n";
  }
  WriteState(o, sharing::MigConfigState::kFailed);
  return kExitNoFit;
}

}  // namespace

void RegisterMigApply(CLI::App* mig, int* exit_code) {
  auto o = std::make_shared<ApplyOptions>();
  CLI::App* cmd = mig->add_subcommand(
      "apply",
      "Apply a named config of a mig-parted file to this node's NVIDIA GPUs through NVML.\n"
      "Unlike mig-parted, only what differs changes: idle instances of wanted profiles stay,\n"
      "busy instances are never destroyed (a GPU where one would have to go refuses the whole\n"
      "apply), and new GPU instances get explicit placements checked against the driver's.\n"
      "A failed step rolls back everything this run did. The node-label state\n"
      "(nvidia.com/mig.config, nvidia.com/mig.config.state = pending|success|failed) is\n"
      "written as a node-feature-discovery feature file.\n\n"
      "Examples:\n"
      "  accel mig apply --config examples/mig/h100-mixed.yaml --name inference-mixed --dry-run\n"
      "  sudo accel mig apply --config /etc/accel/mig.yaml --name all-balanced\n"
      "  kubectl -n gpu-operator get configmap default-mig-parted-config -o yaml > cm.yaml\n"
      "  sudo accel mig apply --config cm.yaml --name all-1g.10gb --dry-run\n\n"
      "Exit status: 0 applied (or already applied, or dry run); 1 cannot be applied or failed\n"
      "and rolled back; 2 bad input or NVML unusable; 5 the state file cannot be written\n"
      "(checked before any GPU changes).");
  cmd->add_option("--config,-f", o->config,
                  "mig-parted config file (version v1), or a Kubernetes ConfigMap holding one")
      ->required();
  cmd->add_option("--key", o->key,
                  "ConfigMap data key holding the config (default: config.yaml, or the only key)");
  cmd->add_option("--name,-c", o->name, "config name in the file")->required();
  cmd->add_flag("--dry-run", o->dry_run, "print the steps, change nothing");
  cmd->add_option("--nvml-library", o->nvml_library,
                  "path of libnvidia-ml.so.1 (default: the loader's search path)");
  cmd->add_option("--state-file", o->state_file,
                  "feature file for the nvidia.com/mig.config labels (the default is written\n"
                  "only when its directory exists)")
      ->capture_default_str();
  cmd->add_flag("--no-state", o->no_state, "do not write the label state file");
  cmd->callback([o, exit_code] { *exit_code = RunApply(*o); });
}

}  // namespace accel::cli
