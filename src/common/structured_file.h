// Structured files: one reader for the YAML and JSON documents people hand to accel.
//
// A document is JSON when its first non-space character is '{' or '['; it is then read by
// ParseJsonText (common/json_text.h). Anything else is read as YAML and converted to the same
// nlohmann::json shape, so callers check one tree whatever the syntax. Stateless free functions; safe to call from any thread.
//
// YAML scalars are converted the way YAML 1.2's core schema resolves *plain* (unquoted) scalars,
// narrowed so that text which only looks numeric stays text:
//   - true/True/TRUE/false/False/FALSE           -> boolean  (yes/no/on/off stay strings)
//   - ~, null, Null, NULL, an empty value         -> null
//   - decimal integers without leading zeros      -> integer  ("0100", "0x10de", "1e3"... stay strings
//     ("16", "-3", "131072"); beyond int64 stay text   unless the float rule below applies)
//   - decimal floats with a '.' ("1.5", "2.0")    -> float
//   - everything else ("2MB", "1GB", "0-3", "^0-1", "h100:1", "10de") -> string
// Quoted scalars and scalars with an explicit tag are always strings. Mapping keys are always
// strings. Objects come back with sorted keys (nlohmann::json); a key given twice in one mapping is
// refused with the DuplicateKeyError of common/duplicate_keys.h (key path and both lines), and so
// is text that is not UTF-8 (every string can be written back out as JSON).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace accel {

/// Reads the file at `path` and parses it as described above.
/// Returns the document (null for an empty YAML file). Throws InputError naming the file, and
/// the line and column ("flavor.yaml:7:3") when the syntax is wrong, for: an unreadable file, a
/// syntax error, a duplicate key ("flavor.yaml:9:3: extra_specs.hw:cpu_policy: key given twice
/// (lines 4 and 9)"), nesting deeper than 64 levels, a YAML file with more than one document, or
/// aliases that expand beyond 100,000 values.
nlohmann::json ReadStructuredFile(const std::string& path);

/// The bytes of the file at `path` (at most 64 MiB: flavors, aliases, host JSON, hwloc XML). Throws InputError naming the file when it
/// cannot be opened or read, is a directory, or is larger.
std::string ReadWholeFile(const std::string& path);

/// Same as ReadStructuredFile for text already in memory; `where` names it in errors (a file
/// name, "<stdin>", "fuzz input").
nlohmann::json ParseStructuredText(std::string_view text, const std::string& where);

/// The checks ParseStructuredText makes of a YAML document, without keeping the tree: for readers
/// that walk yaml-cpp's own nodes (LoadYamlText in common/yaml_config.h, the mig-parted reader),
/// which yaml-cpp loads without them. Throws the InputErrors listed for ReadStructuredFile (a
/// duplicate key, text that is not UTF-8, a second document or stray text after the first,
/// nesting deeper than 64 levels, aliases that expand beyond 100,000 values, a key that is empty
/// or not plain text); `first_line` is the line of the file the text starts at (for a document
/// embedded in another), so every position names a line of that file. Reads JSON text as the
/// YAML it also is.
void CheckYamlText(std::string_view text, const std::string& where, int first_line = 1);

}  // namespace accel
