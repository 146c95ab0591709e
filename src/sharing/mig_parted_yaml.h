// YAML helpers for mig_parted_reader.cc: loading one document safely with yaml-cpp 0.7, and
// typing scalars the way mig-parted's YAML 1.1 reader (sigs.k8s.io/yaml over yaml.v2) does.
// Internal to accel_sharing; stateless and thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sharing/mig_parted_config.h"

namespace accel::sharing::parted_detail {

/// The first YAML document of `yaml`. Throws InputError (where = "source:line", the line plus
/// `line_offset`) when a second document or stray text follows, then whatever CheckYamlText of
/// common/structured_file.h refuses (a key given twice: "source:LINE:COL", naming both lines),
/// and YAML::ParserException on a syntax error.
YAML::Node LoadOneDocument(std::string_view yaml, const std::string& source, int line_offset = 0);

/// 1-based line of `node`; `fallback` (the key's line) for empty values and unknown marks.
int LineOf(const YAML::Node& node, int fallback);

/// Whether `node` is an unquoted scalar without a tag (only those can be numbers or booleans).
bool IsPlain(const YAML::Node& node);

/// The boolean of a plain y/yes/true/on or n/no/false/off (any of YAML 1.1's spellings);
/// nullopt for anything else, quoted "true" included.
std::optional<bool> PlainBool(const YAML::Node& node);

/// The value of a plain decimal integer (optional sign, no leading zeros, at most 12 digits);
/// nullopt otherwise.
std::optional<long long> PlainDecimal(const YAML::Node& node);

/// "0x233010DE" or "0x20B210DE:0x134F10DE", each part read like Go's strconv.ParseUint(s, 0, 32)
/// (0x, 0o, 0b, leading-0 octal or decimal); nullopt when a part is not such a number.
std::optional<DeviceFilter> ParseDeviceFilter(std::string_view text);

/// Whether a config name is non-empty UTF-8 without control characters.
bool IsCleanName(std::string_view name);

}  // namespace accel::sharing::parted_detail
