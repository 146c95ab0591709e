// Applying a named mig-parted config to a node's GPUs (`accel mig apply`): plan, then execute
// with rollback, and publish the node-label state for the node agent.
//
// Semantics follow mig-parted (mig.md §2.2): entries are walked in file order, an entry applies
// to every GPU matching its device-filter (the GPU's own PCI id) and devices; the last matching
// entry wins; a GPU matched by none is untouched; a non-MIG-capable GPU is skipped unless an
// entry names its index explicitly with mig-enabled: true (an error). Unlike mig-parted, a GPU
// whose layout changes is not rebuilt from scratch: idle instances of the wanted profiles are
// kept where a valid layout allows, busy instances are always kept (a GPU where one would have
// to go is an error and nothing at all is applied), and new instances get explicit placements
// (LayoutForCounts) checked against the driver's possible placements.
//
// Step order per GPU: enable MIG; destroy compute instances of what goes (and of kept GPU
// instances whose compute instances change); destroy the GPU instances that go; create GPU
// instances largest first at their placements; create their compute instances; disable MIG.
//
// Free functions over caller-owned MigControls; not thread-safe for one GPU list.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "devices/mig_control.h"
#include "sharing/mig_parted_config.h"

namespace accel::sharing {

/// One change to one GPU.
struct MigApplyStep {
  enum class Kind {
    kEnableMig,
    kDisableMig,
    kDestroyComputeInstances,  ///< every compute instance of an existing GPU instance
    kDestroyGpuInstance,
    kCreateGpuInstance,
    kCreateComputeInstances,  ///< in a GPU instance created earlier in the plan, or a kept one
  };
  Kind kind = Kind::kCreateGpuInstance;
  /// Position of the GPU in the list the plan was made from.
  size_t gpu = 0;
  /// The existing GPU instance a destroy step (or CI creation in a kept instance) acts on.
  std::optional<unsigned> gpu_instance_id;
  /// CI creation in the GPU instance made by this step (index into the GPU's steps); -1 if none.
  int created_by_step = -1;
  /// GPU-instance steps: the driver's GI profile id and the memory slices [start, start + size).
  unsigned profile_id = 0;
  int start = 0;
  int size = 0;
  /// CI steps: compute slices of each compute instance created, or (destroy) of each one that
  /// existed, so a rollback can recreate them.
  std::vector<int> compute_slices;
  /// For a person: "create GPU instance 3g.40gb at memory slices 4-7 (profile id 9)".
  std::string description;
};

/// What happens to one GPU.
struct MigApplyGpu {
  enum class Status {
    kUntouched,       ///< no entry of the config matches it
    kSkipped,         ///< not MIG-capable and not named explicitly
    kAlreadyApplied,  ///< nothing to do
    kChange,          ///< `steps` bring it to the target
    kError,           ///< cannot be applied; `reason` says why
  };
  size_t position = 0;  ///< in the GPU list
  unsigned index = 0;   ///< NVML index
  std::string product;  ///< NVML product name
  std::string model;    ///< catalog model name; empty when unknown
  Status status = Status::kUntouched;
  std::string reason;   ///< for kUntouched, kSkipped, kError
  std::string current;  ///< "MIG off", or Describe() of the GPU instances now
  std::string target;   ///< what the config asks for, same form
  std::vector<MigApplyStep> steps;
};

/// The plan for a whole node.
struct MigApplyPlan {
  std::string config;  ///< the config name
  std::vector<MigApplyGpu> gpus;

  /// False when any GPU is in error: then nothing may be applied.
  bool ok() const;
  /// Total steps over all GPUs.
  size_t StepCount() const;
  /// Lines for a person: "GPU 0 (H100-SXM5-80GB): change: 7 x 1g.10gb -> 3g.40gb@0 + ...",
  /// then one "  - <step>" line per step; errors as "GPU 1 ...: error: <reason>".
  std::vector<std::string> Describe() const;
};

/// Plans config `name` of `config` on `gpus` (position = NVML order). Reads the GPUs (mode,
/// instances, processes, driver profiles and placements) but changes nothing. Throws InputError
/// when the config has no such name, BackendError when a GPU cannot be read.
MigApplyPlan PlanApply(const MigPartedConfig& config, const std::string& name,
                       const devices::MigGpus& gpus);

/// What ExecuteApply did.
struct MigApplyResult {
  bool success = false;
  std::vector<std::string> done;             ///< steps that took effect, "GPU 0: <description>"
  std::string error;                         ///< the failure that stopped it; empty on success
  std::vector<std::string> rolled_back;      ///< undo actions that succeeded, in order
  std::vector<std::string> rollback_errors;  ///< empty = the node is as it was before
};

/// Executes `plan` (made by PlanApply from the same `gpus`). Refuses (success = false, nothing
/// done) when !plan.ok(). On the first failing step it undoes everything this call did, in
/// reverse: destroys what it created and recreates what it destroyed at the same placement (GPU
/// instance ids may differ afterwards). A MIG mode change that only becomes pending (the driver
/// needs a GPU reset) counts as a failure. Never throws BackendError.
MigApplyResult ExecuteApply(const MigApplyPlan& plan, const devices::MigGpus& gpus);

// ---- Node-label state (mig.md §2.5) ----

/// Where node-feature-discovery's local source reads feature files; nfd-master must allow the
/// nvidia.com label namespace (extraLabelNs) for the labels to be published.
inline constexpr const char* kDefaultMigStateFile =
    "/etc/kubernetes/node-feature-discovery/features.d/accel-mig";

/// `nvidia.com/mig.config.state` values accel writes.
enum class MigConfigState { kPending, kSuccess, kFailed };

/// "pending", "success", "failed".
const char* MigConfigStateName(MigConfigState state);

/// Writes the feature file `path` with two lines, `nvidia.com/mig.config=<config>` and
/// `nvidia.com/mig.config.state=<state>`, with WriteFileAtomically (a hidden temporary name NFD
/// skips, renamed over `path`), so neither NFD nor the node agent reads half a file. Throws
/// InputError when `config` is not a valid label value (<= 63 of [A-Za-z0-9._-], alphanumeric at
/// both ends) and SystemError when the file cannot be written (the path and the OS's reason).
void WriteMigConfigState(const std::string& path, const std::string& config, MigConfigState state);

/// The two labels as found in a feature file.
struct MigConfigLabels {
  std::string config;
  std::string state;
};

/// Reads a file written by WriteMigConfigState. Returns nullopt when it does not exist or lacks
/// either key.
std::optional<MigConfigLabels> ReadMigConfigState(const std::string& path);

}  // namespace accel::sharing
