// ChooseConfigMapKey: which entry of a Kubernetes ConfigMap's `data` holds the file accel reads,
// by one rule for every reader that accepts a ConfigMap in place of a file (mig-parted configs,
// device-metrics-exporter's config.json): the key the user named, else the key the owning
// operator uses, else the only key. Pure function; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace accel {

/// The key to read among `keys` (data's keys in document order):
///   - `wanted` when not empty (it must be one of `keys`);
///   - else `default_key` when present ("config.yaml" for mig-manager, "config.json" for
///     device-metrics-exporter);
///   - else the only key.
/// `what` names the ConfigMap in messages ("ConfigMap default-mig-parted-config"), `where` is the
/// file (and line), `key_flag` the option that picks a key ("--key"; "" when there is none).
/// Throws InputError(where, "data", ...) listing the keys when data is empty, `wanted` is not
/// there, or there are several keys and none is `default_key`.
std::string ChooseConfigMapKey(const std::vector<std::string>& keys, const std::string& wanted,
                               const std::string& default_key, const std::string& what,
                               const std::string& where, const std::string& key_flag);

}  // namespace accel
