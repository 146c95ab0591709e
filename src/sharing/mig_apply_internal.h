// Internals of PlanApply / ExecuteApply shared by mig_apply*.cc. Not for other callers.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "devices/mig_control.h"
#include "sharing/mig_apply.h"
#include "sharing/mig_layout.h"

namespace accel::sharing {

/// A GPU instance the config asks for: catalog profile and the compute slices of each of its
/// compute instances (descending).
struct WantedInstance {
  int profile = 0;
  std::vector<int> cis;
};

/// A GPU instance that exists now.
struct HaveInstance {
  devices::MigGpuInstanceInfo info;
  std::optional<int> profile;  ///< catalog profile index; nullopt when the catalog lacks it
  std::vector<int> cis;        ///< compute slices of its compute instances (descending)
};

/// Which existing instances stay and where the new ones go.
struct Choice {
  std::vector<size_t> kept;                   ///< indices into the HaveInstance list
  std::vector<std::vector<int>> kept_cis;     ///< CI layout each kept instance ends with
  MigLayout target;                           ///< canonical, kept + created
  MigLayout created;                          ///< target minus kept
  std::vector<std::vector<int>> created_cis;  ///< parallel to created
  std::string error;                          ///< why no choice exists; empty otherwise
};

/// Keeps every busy instance and as many idle instances of wanted profiles as a valid target
/// layout with exactly `counts` allows (ties: more instances whose compute instances already
/// match). Sets error when a busy instance would have to go or change, or nothing fits.
Choice ChooseKept(const GpuModel& model, const std::vector<int>& counts,
                  const std::vector<HaveInstance>& have, const std::vector<WantedInstance>& wanted);

/// What BuildSteps needs about one GPU.
struct PlanInput {
  devices::MigControl& gpu;
  const GpuModel* model;  ///< null only when MIG is to be disabled on an unknown model
  const std::vector<std::optional<unsigned>>& driver_ids;  ///< catalog profile -> driver id
  const std::vector<HaveInstance>& have;
  bool mig_on = false;
  std::vector<WantedInstance> wanted;
  Choice choice;
};

/// The steps bringing the GPU at `position` to the choice (or to MIG off when !enable), in
/// execution order. `label` names an existing instance for descriptions.
std::vector<MigApplyStep> BuildSteps(const PlanInput& input, bool enable, size_t position,
                                     const std::function<std::string(const HaveInstance&)>& label);

/// "0x233010DE".
std::string PciIdText(uint32_t pci_id);

}  // namespace accel::sharing
