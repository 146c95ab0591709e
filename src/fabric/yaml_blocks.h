// ToYamlWithBlocks: accel::ToYaml (common/yaml_out.h) for Kubernetes manifests people read,
// where multi-line strings (a shell script in a ConfigMap, a device plugin's JSON config in a
// NicClusterPolicy) are written as literal blocks ("|") instead of one escaped line.
// Stateless; safe from any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace accel::fabric {

/// `value` as a block-style YAML document ending in a newline. Scalars are quoted as ToYaml
/// quotes them, and also when they start with '='; a string that ends in exactly one newline
/// and starts with no blank is written as a literal block, which reads back to the same string.
std::string ToYamlWithBlocks(const nlohmann::ordered_json& value);

}  // namespace accel::fabric
