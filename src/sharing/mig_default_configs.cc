#include "sharing/mig_default_configs.h"

#include <algorithm>

#include "common/strings.h"

namespace accel::sharing {

namespace {

// A profile without media extensions, all-media, no-media or graphics variants: the kind
// all-balanced takes.
bool PlainProfile(const MigProfile& p) { return !p.media_extension && !p.all_media && !p.no_media && !p.graphics; }

}  // namespace

DefaultMigConfigKind DefaultMigConfigKindOf(std::string_view name) {
  if (name.empty()) return DefaultMigConfigKind::kNone;
  if (name == "all-disabled") return DefaultMigConfigKind::kDisabled;
  if (name == "all-enabled") return DefaultMigConfigKind::kEnabledEmpty;
  if (name == "all-balanced") return DefaultMigConfigKind::kBalanced;
  if (name.size() > 4 && name.substr(0, 4) == "all-") return DefaultMigConfigKind::kSingleProfile;
  return DefaultMigConfigKind::kUnknown;
}

std::optional<MigPartedConfig> DefaultMigConfig(std::string_view name, const GpuModel& model, std::string* why) {
  auto fail = [&](const std::string& reason) -> std::optional<MigPartedConfig> {
    if (why) *why = reason;
    return std::nullopt;
  };
  MigConfigEntry e;
  e.all_devices = true;
  switch (DefaultMigConfigKindOf(name)) {
    case DefaultMigConfigKind::kDisabled:
      e.mig_enabled = false;
      break;
    case DefaultMigConfigKind::kEnabledEmpty:
      e.mig_enabled = true;
      break;
    case DefaultMigConfigKind::kBalanced:
      e.mig_enabled = true;
      for (int slices : {1, 2, 3}) {
        if (slices == 3 && model.compute_slices < 7) break;
        const MigProfile* best = nullptr;
        for (const MigProfile& p : model.profiles)
          if (p.compute_slices == slices && PlainProfile(p) && (!best || p.memory_slices < best->memory_slices)) best = &p;
        if (!best) return fail(model.name + " has no plain " + std::to_string(slices) + "g profile for all-balanced");
        e.mig_devices.emplace_back(best->name, slices == 1 ? 2 : 1);
      }
      break;
    case DefaultMigConfigKind::kSingleProfile: {
      const std::string profile(name.substr(4));
      const std::optional<int> index = FindProfile(model, profile);
      if (!index)
        return fail("MIG profile " + profile + " does not exist on " + model.name + " (its profiles: " +
                    ProfileNameList(model) + ")");
      const MigProfile& p = model.profiles[static_cast<size_t>(*index)];
      e.mig_enabled = true;
      // NVIDIA's file keys the profile the way the GPU's driver prints it; a name known only as
      // another board's spelling stays as written (ValidateMigPartedConfig warns about it).
      e.mig_devices.emplace_back(IsOtherName(p, profile) ? profile : p.name, p.max_count);
      break;
    }
    case DefaultMigConfigKind::kNone:
    case DefaultMigConfigKind::kUnknown:
      return fail("'" + std::string(name) +
                  "' is not one of the configs of NVIDIA's default-mig-parted-config (all-disabled, all-enabled, "
                  "all-balanced, all-<profile>)");
  }
  MigPartedConfig config;
  config.configs.push_back({std::string(name), {e}});
  return config;
}

std::optional<MigDevices> DefaultMigDevices(std::string_view name, const GpuModel& model, std::string* why) {
  std::string ignored;
  if (why == nullptr) why = &ignored;
  const DefaultMigConfigKind kind = DefaultMigConfigKindOf(name);
  if (kind != DefaultMigConfigKind::kBalanced && kind != DefaultMigConfigKind::kSingleProfile) {
    *why = "'" + std::string(name) + "' is not all-balanced or all-<profile>";
    return std::nullopt;
  }
  if (kind == DefaultMigConfigKind::kSingleProfile) {
    // The profile as this model's driver prints it: another board's spelling is not written.
    const std::string profile(name.substr(4));
    const std::optional<int> index = FindProfile(model, profile);
    if (!index || IsOtherName(model.profiles[static_cast<size_t>(*index)], profile)) {
      *why = model.name + " has no MIG profile " + profile + " (its profiles: " + ProfileNameList(model) + ")";
      return std::nullopt;
    }
  }
  const std::optional<MigPartedConfig> config = DefaultMigConfig(name, model, why);
  if (!config) return std::nullopt;
  return config->configs.front().entries.front().mig_devices;
}

std::string MixedStrategyResource(std::string_view profile) {
  std::string r = "nvidia.com/mig-" + std::string(profile);
  std::replace(r.begin(), r.end(), '+', '.');
  return r;
}

std::string NodeMigShapeText(NodeMigShape shape) {
  switch (shape) {
    case NodeMigShape::kOff: return "no MIG";
    case NodeMigShape::kEnabledEmpty: return "MIG enabled with no MIG devices";
    case NodeMigShape::kOneProfile: return "one MIG profile on every GPU";
    case NodeMigShape::kSeveral: return "several MIG profiles on one node";
  }
  return "";
}

NodeMigShape NodeMigShapeOf(DefaultMigConfigKind kind) {
  switch (kind) {
    case DefaultMigConfigKind::kNone:
    case DefaultMigConfigKind::kDisabled: return NodeMigShape::kOff;
    case DefaultMigConfigKind::kEnabledEmpty: return NodeMigShape::kEnabledEmpty;
    case DefaultMigConfigKind::kSingleProfile: return NodeMigShape::kOneProfile;
    case DefaultMigConfigKind::kBalanced:
    case DefaultMigConfigKind::kUnknown: return NodeMigShape::kSeveral;
  }
  return NodeMigShape::kSeveral;
}

std::set<std::string> AcceptedMigStrategies(NodeMigShape shape, bool mps) {
  std::set<std::string> s;
  switch (shape) {
    case NodeMigShape::kOff: s = {"none", "single", "mixed"}; break;
    case NodeMigShape::kEnabledEmpty: s = {"mixed"}; break;  // single: "every MIG-enabled GPU must have a MIG device"
    case NodeMigShape::kOneProfile: s = {"single", "mixed"}; break;
    case NodeMigShape::kSeveral: s = {"mixed"}; break;
  }
  if (mps) s.erase("mixed");  // validateFlags: "using --mig-strategy=mixed is not supported with MPS"
  return s;
}

std::string MigStrategyRefusal(const std::string& strategy, NodeMigShape shape, bool mps) {
  if (AcceptedMigStrategies(shape, mps).count(strategy)) return "";
  if (mps && strategy == "mixed") return "the device plugin refuses MPS with --mig-strategy=mixed";
  if (strategy == "none")
    return "strategy none ignores MIG: the GPUs are advertised whole while MIG mode leaves CUDA no device outside "
           "a MIG instance";
  if (strategy == "single" && shape == NodeMigShape::kSeveral)
    return "strategy single refuses a node with several MIG profiles, or MIG on some GPUs only (\"more than one MIG "
           "device type present on node\")";
  if (strategy == "single" && shape == NodeMigShape::kEnabledEmpty)
    return "strategy single refuses a MIG-enabled GPU without MIG devices";
  return "";
}

bool ServedBySingleStrategy(DefaultMigConfigKind kind) {
  return AcceptedMigStrategies(NodeMigShapeOf(kind), false).count("single") > 0;
}

}  // namespace accel::sharing
