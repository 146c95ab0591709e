// YamlMapReader and the scalar readers: the one way accel reads a YAML configuration file key by
// key (the node agent's config, NVIDIA's device plugin config embedded in it, MPS and sharing
// sections). Every key is checked: an unknown key is an error naming its key path and the keys
// known there, so a typo never passes as a silently ignored setting.
//
// One scalar rule for every such file, the rule of NVIDIA's own reader (sigs.k8s.io/yaml over
// yaml.v2, YAML 1.1), because the agent's file embeds NVIDIA's config and one file must not mean
// two things: booleans are the *plain* (unquoted) y|Y|yes|Yes|YES|true|True|TRUE|on|On|ON and
// n|N|no|No|NO|false|False|FALSE|off|Off|OFF; integers are plain decimal; a quoted "true" or "2"
// is a string. (Documents read whole with ReadStructuredFile follow YAML 1.2's core schema
// instead; see common/structured_file.h.)
//
// Stateless apart from the handlers a reader holds; not thread-safe per instance.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"

namespace accel {

/// `path` + "." + `key`, or `key` at the top ("" path).
std::string YamlKeyPath(const std::string& path, const std::string& key);

/// Walks one mapping, dispatching each key to its handler.
///   YamlMapReader(where, node, "sharing.mps")
///       .On("renameByDefault", [&](const YAML::Node& v, const std::string& f) { ... })
///       .Ignore({"nvidiaCTKPath"})
///       .Run();
class YamlMapReader {
 public:
  /// `value` is never null; `field` is the key's full path ("sharing.mps.renameByDefault").
  using Handler = std::function<void(const YAML::Node& value, const std::string& field)>;

  /// `where` names the document in errors (a file, "agent.yaml: devicePlugin.config").
  /// `path` is the mapping's own key path ("" at the top).
  YamlMapReader(std::string where, YAML::Node node, std::string path)
      : where_(std::move(where)), node_(std::move(node)), path_(std::move(path)) {}

  YamlMapReader& On(const std::string& key, Handler handler) {
    handlers_[key] = std::move(handler);
    return *this;
  }
  /// Keys that are valid in the format but mean nothing to accel: accepted, not read.
  YamlMapReader& Ignore(std::initializer_list<const char*> keys);

  /// Calls the handler of each key in document order. A missing or null mapping reads as empty;
  /// `key:` with no value keeps the default (its handler is not called).
  /// Throws InputError(where, path) when the node is not a mapping, and
  /// InputError(where, path.key, "unknown key", "known here: ...") for an unknown key.
  void Run() const;

 private:
  std::string where_;
  YAML::Node node_;
  std::string path_;
  std::map<std::string, Handler> handlers_;
};

/// True when `node` is a scalar written without quotes or a tag.
bool IsPlainYamlScalar(const YAML::Node& node);

/// The scalar's text. Throws InputError(where, field, "must be a string") for a list or mapping.
std::string YamlString(const std::string& where, const YAML::Node& node, const std::string& field);

/// A YAML 1.1 plain boolean (see above). Throws InputError "must be true or false" otherwise.
bool YamlBool(const std::string& where, const YAML::Node& node, const std::string& field);

/// A plain decimal integer of at most 12 digits, optionally negative. Throws InputError
/// "must be an integer" otherwise (a quoted "2" included).
long long YamlInteger(const std::string& where, const YAML::Node& node, const std::string& field);

/// A list of strings; a single scalar reads as a one-item list when `scalar_ok`.
/// Throws InputError "must be a list" otherwise.
std::vector<std::string> YamlStringList(const std::string& where, const YAML::Node& node,
                                        const std::string& field, bool scalar_ok = false);

/// The value paired with the scalar's text in `names`. Throws InputError
/// "unknown value 'x'" with the known names as the hint.
template <typename T>
T YamlOneOf(const std::string& where, const YAML::Node& node, const std::string& field,
            const std::vector<std::pair<const char*, T>>& names) {
  std::string value = YamlString(where, node, field);
  std::string known;
  for (const auto& [name, result] : names) {
    if (value == name) return result;
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  throw InputError(where, field, "unknown value '" + value + "'", "one of: " + known);
}

/// Parses `text` as one YAML document. Throws InputError(where, "", "is not valid YAML: ...",
/// "check indentation and quoting") with the line and column on a syntax error, and whatever
/// CheckYamlText (common/structured_file.h) refuses: among them a key given twice in one mapping
/// ("agent.yaml:9:1: labels: key given twice (lines 3 and 9)", see common/duplicate_keys.h),
/// which yaml-cpp's tree would keep twice for a reader to take one of, and a second document,
/// which yaml-cpp would drop.
YAML::Node LoadYamlText(const std::string& text, const std::string& where);

}  // namespace accel
