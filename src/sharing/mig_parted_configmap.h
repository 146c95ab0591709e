// mig-parted configs inside Kubernetes ConfigMaps. NVIDIA's GPU Operator ships its default MIG
// configs as the ConfigMap default-mig-parted-config (assets/state-mig-manager/
// 0400_configmap.yaml, the config under data."config.yaml"), and operators hand mig-manager
// their own the same way (ClusterPolicy migManager.config.name), so `kubectl get configmap -o
// yaml` output is something people validate and apply.
//
// Plain data and free functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sharing/mig_parted_config.h"

namespace accel::sharing {

/// Where in a ConfigMap a mig-parted config was found.
struct ConfigMapSource {
  /// metadata.name; empty when the ConfigMap has none.
  std::string name;
  /// The data key the config was read from, e.g. "config.yaml".
  std::string key;
  /// Every key of data, in file order.
  std::vector<std::string> keys;
};

/// A mig-parted config and, when it came from a ConfigMap, where in it.
struct MigPartedDocument {
  MigPartedConfig config;
  /// Set when the text was a ConfigMap (`kind: ConfigMap`).
  std::optional<ConfigMapSource> configmap;
};

/// Parses `text`: a mig-parted config (as ParseMigPartedConfig), or a single-document ConfigMap
/// (`kind: ConfigMap`) whose data holds one. The key read is `key` when not empty; otherwise
/// "config.yaml" when data has it (what mig-manager reads), else data's only key. Errors in the
/// embedded config name lines of `text` (the config of a `key: |` block starts on the line
/// below the key; a quoted value is named "source (data.KEY)" with its own lines).
/// Throws InputError: a `kind` other than ConfigMap; a ConfigMap without data; `key` absent, or
/// several keys and no config.yaml with `key` empty (the message lists the keys); a value that
/// is not a string; `key` given for a plain mig-parted config; and every error of
/// ParseMigPartedConfig.
MigPartedDocument ParseMigPartedDocument(std::string_view text, const std::string& source,
                                         const std::string& key = "");

/// Reads `path` and parses it with ParseMigPartedDocument. Throws InputError (also when the
/// file cannot be read).
MigPartedDocument LoadMigPartedDocument(const std::string& path, const std::string& key = "");

}  // namespace accel::sharing
