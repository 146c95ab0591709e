// The node agent's helpers: the MIG manager's one-shot apply, the label writer.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "agent/agent_internal.h"
#include "common/error.h"
#include "devices/backend.h"
#include "devices/mig_control.h"
#include "sharing/mig_apply.h"
#include "sharing/mig_parted_config.h"

namespace accel::agent::internal {

namespace {

void WriteState(const MigSection& mig, sharing::MigConfigState state, const Log& log) {
  try {
    sharing::WriteMigConfigState(mig.state_file, mig.config, state);
  } catch (const std::exception& e) {
    log(std::string("mig: cannot write state ") + sharing::MigConfigStateName(state) + ": " +
        e.what());
  }
}

}  // namespace

void ApplyMigConfig(const AgentConfig& config, const Log& log) {
  const MigSection& mig = config.mig;
  if (!mig.enabled || mig.config.empty()) return;
  WriteState(mig, sharing::MigConfigState::kPending, log);
  bool ok = false;
  try {
    sharing::MigPartedConfig parted = sharing::LoadMigPartedConfig(mig.config_file);
    devices::MigGpus gpus = devices::OpenNvmlMigControl(config.nvml_library);
    sharing::MigApplyPlan plan = sharing::PlanApply(parted, mig.config, gpus);
    if (!plan.ok()) {
      for (const auto& line : plan.Describe()) {
        if (line.find(": error: ") != std::string::npos) log("mig: " + line);
      }
      log("mig: config '" + mig.config + "' cannot be applied; GPUs left as they are");
    } else {
      sharing::MigApplyResult result = sharing::ExecuteApply(plan, gpus);
      ok = result.success;
      log("mig: config '" + mig.config + "': " +
          (ok ? std::to_string(result.done.size()) + " step(s) applied"
              : "failed: " + result.error + (result.rollback_errors.empty()
                                                 ? " (rolled back)"
                                                 : " (rollback incomplete)")));
    }
  } catch (const std::exception& e) {
    log("mig: config '" + mig.config + "' not applied: " + e.what());
  }
  WriteState(mig, ok ? sharing::MigConfigState::kSuccess : sharing::MigConfigState::kFailed, log);
}

LabelWriter::LabelWriter(std::string path, kube::Labels labels, std::chrono::milliseconds interval,
                         Log log)
    : path_(std::move(path)), labels_(std::move(labels)), interval_(interval), log_(std::move(log)) {}

LabelWriter::~LabelWriter() { Stop(); }

void LabelWriter::Start() {
  WriteOnce();
  thread_.Start(interval_, [this] { WriteOnce(); });
}

void LabelWriter::Stop() { thread_.Stop(); }

void LabelWriter::WriteOnce() {
  std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    if (!directory_missing_logged_) {
      log_("labels: " + dir.string() + " does not exist (is node-feature-discovery installed?); "
           "not writing " + path_);
      directory_missing_logged_ = true;
    }
    return;
  }
  try {
    kube::WriteFeatureFile(path_, labels_);
    error_logged_ = false;
  } catch (const std::exception& e) {
    if (!error_logged_) log_(std::string("labels: ") + e.what());
    error_logged_ = true;
  }
}

}  // namespace accel::agent::internal
