// Finding the mig-parted config inside a ConfigMap, then reading it with the strict reader so
// that every message names a line of the ConfigMap file.
#include "sharing/mig_parted_configmap.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "common/configmap.h"
#include "common/error.h"
#include "common/structured_file.h"
#include "common/strings.h"
#include "sharing/mig_parted_yaml.h"

namespace accel::sharing {

namespace {

using parted_detail::LineOf;

constexpr const char* kDefaultKey = "config.yaml";  // mig-manager's CONFIG_FILE in the ConfigMap

// The root of `text` when it parses as one YAML mapping; nullopt otherwise (the strict reader
// then reports what is wrong with it as a mig-parted file).
std::optional<YAML::Node> RootMap(std::string_view text, const std::string& source) {
  try {
    YAML::Node root = parted_detail::LoadOneDocument(text, source);
    if (root.IsMap()) return root;
  } catch (const YAML::Exception&) {
  } catch (const InputError&) {
  }
  return std::nullopt;
}


MigPartedDocument FromConfigMap(std::string_view text, const YAML::Node& root,
                                const std::string& source, const std::string& wanted) {
  ConfigMapSource from;
  const YAML::Node metadata = root["metadata"];
  if (metadata && metadata.IsMap() && metadata["name"] && metadata["name"].IsScalar()) {
    from.name = metadata["name"].Scalar();
  }
  const std::string what = from.name.empty() ? "the ConfigMap" : "ConfigMap " + from.name;
  const YAML::Node data = root["data"];
  const int kind_line = LineOf(root["kind"], 1);
  int key_line = data ? LineOf(data, kind_line) : kind_line;
  if (data && data.IsMap()) {
    for (auto it = data.begin(); it != data.end(); ++it) {
      if (it->first.IsScalar()) from.keys.push_back(it->first.Scalar());
    }
  }
  const std::string key = ChooseConfigMapKey(from.keys, wanted, kDefaultKey, what,
                                             source + ":" + std::to_string(key_line), "--key");
  std::optional<YAML::Node> value;
  for (auto it = data.begin(); it != data.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) {
      value = it->second;
      key_line = LineOf(it->first, key_line);
    }
  }
  if (!value->IsScalar()) {
    throw InputError(source + ":" + std::to_string(LineOf(*value, key_line)), "data." + key,
                     "must be a string holding the mig-parted YAML",
                     "write it as a block: `" + key + ": |` and the config indented below");
  }
  from.key = key;
  // A literal block (`key: |`) keeps its lines, so line n of the config is line n below the
  // '|'. Any other form (quoted, folded) does not map line for line.
  const YAML::Mark mark = value->Mark();
  const bool literal = !mark.is_null() && mark.pos >= 0 &&
                       static_cast<size_t>(mark.pos) < text.size() && text[mark.pos] == '|';
  MigPartedDocument doc;
  if (literal) {
    doc.config = ParseMigPartedConfig(value->Scalar(), source, mark.line + 2);
  } else {
    doc.config = ParseMigPartedConfig(value->Scalar(), source + " (data." + key + ")");
  }
  doc.configmap = std::move(from);
  return doc;
}

}  // namespace

MigPartedDocument ParseMigPartedDocument(std::string_view text, const std::string& source,
                                         const std::string& key) {
  std::optional<YAML::Node> root = RootMap(text, source);
  // Not a mapping, or not YAML at all (a key given twice, say): the mig-parted reader below
  // says what is wrong with it. (A default YAML::Node is a defined null node, not "no kind".)
  if (root && (*root)["kind"]) {
    const YAML::Node kind = (*root)["kind"];
    if (!kind.IsScalar() || kind.Scalar() != "ConfigMap") {
      throw InputError(source + ":" + std::to_string(LineOf(kind, 1)), "kind",
                       "a Kubernetes " + (kind.IsScalar() ? kind.Scalar() : "object") +
                           ", not a ConfigMap holding a mig-parted config",
                       "give a mig-parted config (`version: v1`, `mig-configs:`) or a ConfigMap "
                       "with it under data.\"config.yaml\"");
    }
    return FromConfigMap(text, *root, source, key);
  }
  if (!key.empty()) {
    throw InputError(source, "", "not a Kubernetes ConfigMap, so a data key (\"" + key +
                                     "\") does not apply",
                     "drop --key for a plain mig-parted config");
  }
  MigPartedDocument doc;
  doc.config = ParseMigPartedConfig(text, source);
  return doc;
}

MigPartedDocument LoadMigPartedDocument(const std::string& path, const std::string& key) {
  return ParseMigPartedDocument(ReadWholeFile(path), path, key);
}

MigPartedConfig LoadMigPartedConfig(const std::string& path) {
  return LoadMigPartedDocument(path).config;
}

}  // namespace accel::sharing
