// mig-parted configuration files (version v1): strict reading with mig-parted's own rules,
// writing in NVIDIA's conventions, and checking every named config against the GPU models it
// can apply to.
//
// File shape (NVIDIA/mig-parted api/spec/v1/spec.go):
//   version: v1
//   mig-configs:
//     <name>:
//       - devices: all | [0, 1, ...]
//         device-filter: "0x233010DE" | ["0x233010DE", "0x20B210DE:0x134F10DE"]   # optional
//         mig-enabled: true | false
//         mig-devices: {"1g.10gb": 7, "1c.3g.40gb": 3}   # required iff mig-enabled
//
// Plain data and free functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sharing/mig_geometry.h"
#include "sharing/mig_layout.h"

namespace accel::sharing {

/// One `device-filter` value: "0x<device><vendor>[:0x<subsysdevice><subsysvendor>]".
struct DeviceFilter {
  /// (device << 16) | vendor, e.g. 0x233010DE.
  uint32_t pci_id = 0;
  /// (subsystem device << 16) | subsystem vendor when given (exact match then required).
  std::optional<uint32_t> subsystem_id;

  bool operator==(const DeviceFilter&) const = default;
  /// "0x233010DE" or "0x20B210DE:0x134F10DE" (mig-parted prints %04X%04X).
  std::string ToString() const;
};

/// One entry of a named config: which GPUs, and what to make of them.
struct MigConfigEntry {
  /// `devices: all`.
  bool all_devices = true;
  /// `devices: [..]`: NVML GPU indices; empty when all_devices.
  std::vector<int> devices;
  /// `device-filter`; empty = no filter (every model).
  std::vector<DeviceFilter> device_filter;
  /// Whether device-filter was written as a single string rather than a list (kept for writing).
  bool device_filter_scalar = false;
  /// `mig-enabled`.
  bool mig_enabled = false;
  /// `mig-devices` in file order: profile string (as written) → count ≥ 0.
  std::vector<std::pair<std::string, int>> mig_devices;
  /// 1-based line of the entry in its file; 0 when built in memory.
  int line = 0;
};

/// One named config.
struct MigConfig {
  std::string name;
  std::vector<MigConfigEntry> entries;
};

/// A whole file: configs in file order.
struct MigPartedConfig {
  std::vector<MigConfig> configs;

  /// The config named `name`; nullptr when absent.
  const MigConfig* Find(std::string_view name) const;
};

/// Parses YAML text with mig-parted's strict rules: unknown keys, a missing or wrong version,
/// `mig-enabled: true` without mig-devices, `mig-enabled: false` with non-empty mig-devices,
/// unparsable profile strings, negative counts, all-zero counts, bad device indices or filters
/// are errors. `source` names the file in messages; `first_line` is the line of `source` on
/// which `yaml` starts (a config embedded in a ConfigMap starts below its key), so lines in
/// messages and MigConfigEntry::line are lines of `source`. Throws InputError whose where() is
/// "source:line" and whose field() is the key path ("mig-configs.all-1g.10gb[1].mig-devices").
MigPartedConfig ParseMigPartedConfig(std::string_view yaml, const std::string& source,
                                     int first_line = 1);

/// Reads and parses `path`: a mig-parted config, or a Kubernetes ConfigMap holding one (see
/// mig_parted_configmap.h; the key config.yaml, or the ConfigMap's only key). Throws InputError
/// (also when the file cannot be read: where() = path, problem says why).
MigPartedConfig LoadMigPartedConfig(const std::string& path);

/// YAML in NVIDIA's conventions: `version: v1`, flow-style devices and device-filter, quoted
/// profile keys, configs and entries in order. ParseMigPartedConfig(Write(c)) == c apart from
/// line numbers.
std::string WriteMigPartedConfig(const MigPartedConfig& config);

/// What a config entry means for one GPU model: the GI instances it asks for.
struct EntryOnModel {
  /// Profile index → number of GPU instances (CI profiles "1c.3g.40gb" count their GIs:
  /// ceil(count / floor(G / C)) instances of the parent GI profile; CIs of several sizes on
  /// one GI profile are packed largest first, each into the last GI while it has room, as
  /// mig-parted creates them).
  std::vector<int> gpu_instances;
  /// Profile strings of the entry that named a profile by one of its other_names, each with
  /// the name nvidia-smi prints on this model: {"7g.189gb", "7g.186gb"}.
  std::vector<std::pair<std::string, std::string>> other_names;
};

/// Resolves an entry's mig-devices on `model` (counts of 0 are skipped, as mig-parted does).
/// Returns nullopt and fills *why (when non-null) when a profile does not exist on the model
/// or a CI profile is larger than its GI.
std::optional<EntryOnModel> ResolveEntry(const MigConfigEntry& entry, const GpuModel& model,
                                         std::string* why);

/// Whether `entry` can apply to `model` by its device-filter (no filter = every model).
bool EntryMatchesModel(const MigConfigEntry& entry, const GpuModel& model);

/// One finding of ValidateMigPartedConfig.
struct ConfigFinding {
  enum class Severity {
    kError,    ///< the entry cannot be applied on `model` (or on any model): the config is invalid
    kWarning,  ///< the entry was not fully checked, or relies on a name some drivers do not print
  };
  std::string config;  ///< config name
  int entry = 0;       ///< 0-based entry index
  int line = 0;        ///< entry's line in the file (0 unknown)
  std::string model;   ///< GpuModel::name it was checked on; empty when model-independent
  std::string message; ///< why it cannot be applied there, or what was not checked
  Severity severity = Severity::kError;

  bool is_error() const { return severity == Severity::kError; }
};

/// Checks every named config against every catalog model each entry can match. An entry with
/// a device-filter is checked on each catalog model the filter names; filter IDs accel does
/// not know are a warning (that GPU is not checked), never an error. An entry without a filter
/// is checked on every model that has all its profile names as nvidia-smi prints them; when no
/// model does, on the models where they are other names (GB200's "7g.189gb"), with a warning;
/// and it is an error when no model has them at all. An entry is valid on a model when some
/// placement of the requested instances exists (the counts fit the geometry and the media-engine
/// rules). `only_models`, when not empty, restricts the check to those models (and then an
/// unknown filter ID is not worth a warning). Returns errors and warnings in file order;
/// the config is valid when no finding is_error().
std::vector<ConfigFinding> ValidateMigPartedConfig(const MigPartedConfig& config,
                                                   const std::vector<const GpuModel*>& only_models = {});

/// Whether any finding is an error.
bool HasErrors(const std::vector<ConfigFinding>& findings);

}  // namespace accel::sharing
