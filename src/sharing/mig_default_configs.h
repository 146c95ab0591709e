// NVIDIA's default MIG configs and the MIG strategies of NVIDIA's device plugin — one home for
// both, used by the cluster's vendor stack, `accel cluster check` and the pod admission model.
//
// The default configs are those of mig-parted's deployments/systemd/config-default.yaml, which
// the GPU Operator ships as the ConfigMap default-mig-parted-config:
//   all-disabled   MIG off
//   all-enabled    MIG on, no instances
//   all-balanced   two of the smallest plain 1g profile, one 2g, one 3g (no 3g on the 4-slice
//                  A30 and RTX PRO 6000)
//   all-<profile>  as many instances of <profile> as the GPU holds, the profile spelled as the
//                  config names spell it ("1g.10gb", "1g.10gb.me", "1g.24gb.me.all", "4g.96gb.gfx")
// built here from the MIG catalog for every model (examples/mig/default-configs.yaml; equal to
// NVIDIA's file on every model and config it has: tests/cluster/check_test.cc).
//
// The device plugin's MIG strategies (shared/reference k8s-device-plugin.md §2.3): `none`
// ignores MIG, `single` needs every GPU of a node MIG-disabled or MIG-enabled with instances of
// one profile, `mixed` takes any node and advertises each profile as its own resource; MPS is
// refused under `mixed`.
//
// Pure functions over the immutable catalog; thread-safe.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sharing/mig_geometry.h"
#include "sharing/mig_parted_config.h"

namespace accel::sharing {

/// What a MIG config name asks for, as NVIDIA's default configs define the names.
enum class DefaultMigConfigKind {
  kNone,           ///< "": no MIG config
  kDisabled,       ///< all-disabled
  kEnabledEmpty,   ///< all-enabled: MIG on, no instances
  kBalanced,       ///< all-balanced
  kSingleProfile,  ///< all-<profile>
  kUnknown,        ///< any other name: not one of NVIDIA's default configs
};

/// The kind of config `name` (see above).
DefaultMigConfigKind DefaultMigConfigKindOf(std::string_view name);

/// The mig-parted config `name` as NVIDIA's default config defines it for `model`: one config,
/// one entry (devices: all). For a profile this model knows only by another board's name, the
/// entry keeps the name as written and NVIDIA's count is that board's. Returns nullopt, with
/// the reason in *why when non-null, for a name that is not a default config or a profile the
/// model lacks.
std::optional<MigPartedConfig> DefaultMigConfig(std::string_view name, const GpuModel& model,
                                                std::string* why = nullptr);

/// mig-parted's mig-devices: profile as nvidia-smi prints it -> instances per GPU.
using MigDevices = std::vector<std::pair<std::string, int>>;

/// The mig-devices of default config `name` on `model`, as accel writes them: all-balanced or
/// all-<profile> only, the profile one nvidia-smi prints on this model (not another board's
/// spelling): "all-1g.10gb.me" -> {"1g.10gb+me": 1}. Returns nullopt and sets *why (when
/// non-null) for any other name (all-disabled and all-enabled have no devices) or a profile the
/// model lacks or knows by another name only.
std::optional<MigDevices> DefaultMigDevices(std::string_view name, const GpuModel& model,
                                            std::string* why = nullptr);

/// The extended resource NVIDIA's device plugin advertises a MIG device of `profile` under
/// the mixed strategy: "nvidia.com/mig-1g.10gb"; '+' becomes '.' ("1g.10gb+me" ->
/// "nvidia.com/mig-1g.10gb.me").
std::string MixedStrategyResource(std::string_view profile);

/// What MIG looks like on one node, for the device plugin's MIG strategies.
enum class NodeMigShape {
  kOff,           ///< no MIG (no config, or MIG disabled on every GPU)
  kEnabledEmpty,  ///< MIG enabled, no instances (all-enabled)
  kOneProfile,    ///< every GPU MIG-enabled with instances of one profile
  kSeveral,       ///< several profiles on a node, or MIG on some GPUs and off on others
};

/// "no MIG", "MIG enabled with no MIG devices", "one MIG profile on every GPU", "several MIG
/// profiles on one node".
std::string NodeMigShapeText(NodeMigShape shape);

/// The shape a default config of `kind` gives every node it applies to: kNone and kDisabled
/// kOff, kEnabledEmpty kEnabledEmpty, kSingleProfile kOneProfile, kBalanced kSeveral; kUnknown
/// (a custom config, whose shape depends on its entries) kSeveral, which only `mixed` serves.
NodeMigShape NodeMigShapeOf(DefaultMigConfigKind kind);

/// The MIG strategies ("none", "single", "mixed") NVIDIA's device plugin accepts on a node of
/// `shape`, without "mixed" when the node shares GPUs with MPS (validateFlags: "using
/// --mig-strategy=mixed is not supported with MPS").
std::set<std::string> AcceptedMigStrategies(NodeMigShape shape, bool mps);

/// Why NVIDIA's device plugin refuses (or, for `none`, misserves) `strategy` on a node of
/// `shape`; "" when the strategy works there.
std::string MigStrategyRefusal(const std::string& strategy, NodeMigShape shape, bool mps);

/// True when the `single` strategy serves default config `kind` (AcceptedMigStrategies of its
/// shape holds "single"): no config, all-disabled and all-<profile>.
bool ServedBySingleStrategy(DefaultMigConfigKind kind);

}  // namespace accel::sharing
