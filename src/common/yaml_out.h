// ToYaml: any JSON value as block-style YAML, for `-o yaml` output.
//
// Keys keep the JSON object's order. Strings that a YAML reader would take for something else
// (numbers, booleans, null, PCI addresses like 0000:18:00.0 that YAML 1.1 reads as base-60
// numbers, empty strings), that start with a YAML indicator character or hold control
// characters are double-quoted, so the YAML reads back to the same values as the JSON. A
// multi-line string ending in one newline (a file inside a ConfigMap) is a literal block ("|").
// Stateless; safe from any thread.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace accel {

/// `value` as a YAML document ending in a newline. Never throws for a valid JSON value.
std::string ToYaml(const nlohmann::ordered_json& value);

/// True when `s` must be quoted to stay a string in YAML 1.1 and 1.2 (see the file comment).
bool YamlNeedsQuotes(const std::string& s);

}  // namespace accel
