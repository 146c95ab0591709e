// Duplicate keys: the one rule and the one message for every YAML and JSON document accel reads.
//
// YAML and JSON readers keep only the last of two equal keys in a mapping (yaml-cpp, Go's yaml.v2
// and encoding/json, nlohmann::json), so `labels:` given twice in an agent.yaml would silently
// drop the first. accel refuses such a document instead: an InputError that names the file, the
// key path and both lines, which the CLI turns into exit 2.
//
// The rule: two keys of one mapping (one JSON object) are the same key when their text is the
// same after quoting and escapes are undone, so `a`, "a" and 'a' are one key, and so are 1 and
// "1" (accel reads every key as text). YAML merge keys (`<<`) are not expanded (yaml-cpp 0.7
// reads `<<` as a plain key), so only a second literal `<<` in one mapping is a duplicate.
//
// Where it is decided: YAML in the one pass over yaml-cpp's events of common/structured_file.cc
// (ParseStructuredText, and CheckYamlText, which LoadYamlText of common/yaml_config.h and the
// mig-parted reader run before they walk yaml-cpp's tree), JSON in ParseJsonText
// (common/json_text.h) while it builds the tree. Both throw DuplicateKeyError, so the message is
// the same everywhere.
//
// Stateless free functions; safe to call from any thread.
#pragma once

#include <string>
#include <string_view>

#include "common/error.h"

namespace accel {

/// A place in a text, 1-based; line 0 when unknown.
struct TextPosition {
  int line = 0;
  int column = 0;
};

/// Which syntax a document was written in: the hint says which reader would drop the first key.
enum class DocumentSyntax { kYaml, kJson };

/// The error for a key given twice in one mapping or object.
///   where: the document's name without a position ("agent.yaml", "<stdin>")
///   key_path: the key's full path ("labels", "devicePlugin.config.sharing.timeSlicing",
///             "[1].name"); see KeyPathJoin
///   first, second: the two occurrences; `second` also goes into where()
/// what(): "agent.yaml:9:1: labels: key given twice (lines 3 and 9) (keep one: YAML keeps only
/// the last, so the first would be ignored)"; "(both on line 1, columns 2 and 8)" when the two
/// share a line; no positions at all when they are unknown.
InputError DuplicateKeyError(const std::string& where, const std::string& key_path,
                             TextPosition first, TextPosition second, DocumentSyntax syntax);

/// `path` + "." + `key` ("" path: `key` alone). A key that is empty or holds a '.', '[' or '"'
/// is written quoted ("mig-devices.\"1g.10gb\""), so a path reads back unambiguously.
std::string KeyPathJoin(const std::string& path, std::string_view key);

/// `path` + "[i]".
std::string KeyPathIndex(const std::string& path, size_t index);

}  // namespace accel
