#include "common/yaml_config.h"

#include <algorithm>
#include <set>

#include "common/structured_file.h"

namespace accel {

std::string YamlKeyPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

YamlMapReader& YamlMapReader::Ignore(std::initializer_list<const char*> keys) {
  for (const char* key : keys) handlers_[key] = [](const YAML::Node&, const std::string&) {};
  return *this;
}

void YamlMapReader::Run() const {
  if (!node_ || node_.IsNull()) return;
  if (!node_.IsMap()) throw InputError(where_, path_, "must be a mapping");
  for (const auto& entry : node_) {
    std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    auto handler = handlers_.find(key);
    if (handler == handlers_.end()) {
      std::string known;
      for (const auto& [name, unused] : handlers_) known += (known.empty() ? "" : ", ") + name;
      throw InputError(where_, YamlKeyPath(path_, key), "unknown key", "known here: " + known);
    }
    if (entry.second.IsNull()) continue;  // `key:` with no value means "default", as in NVIDIA's
    handler->second(entry.second, YamlKeyPath(path_, key));
  }
}

bool IsPlainYamlScalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() == "?"; }

std::string YamlString(const std::string& where, const YAML::Node& node, const std::string& field) {
  if (!node.IsScalar()) throw InputError(where, field, "must be a string");
  return node.Scalar();
}

bool YamlBool(const std::string& where, const YAML::Node& node, const std::string& field) {
  static const std::set<std::string> kTrue = {"y", "Y", "yes", "Yes", "YES", "true",
                                              "True", "TRUE", "on", "On", "ON"};
  static const std::set<std::string> kFalse = {"n", "N", "no", "No", "NO", "false",
                                               "False", "FALSE", "off", "Off", "OFF"};
  if (IsPlainYamlScalar(node) && kTrue.count(node.Scalar())) return true;
  if (IsPlainYamlScalar(node) && kFalse.count(node.Scalar())) return false;
  std::string got = node.IsScalar() ? ", got '" + node.Scalar() + "'" : "";
  throw InputError(where, field, "must be true or false" + got, "write it without quotes");
}

long long YamlInteger(const std::string& where, const YAML::Node& node, const std::string& field) {
  std::string s = IsPlainYamlScalar(node) ? node.Scalar() : "";
  size_t digits = s.size() - (!s.empty() && s[0] == '-' ? 1 : 0);
  bool ok = digits > 0 && digits <= 12 &&
            std::all_of(s.end() - digits, s.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!ok) {
    std::string got = node.IsScalar() ? node.Scalar() : "a list or mapping";
    throw InputError(where, field, "must be an integer, got '" + got + "'");
  }
  return std::stoll(s);
}

std::vector<std::string> YamlStringList(const std::string& where, const YAML::Node& node,
                                        const std::string& field, bool scalar_ok) {
  if (scalar_ok && node.IsScalar()) return {node.Scalar()};
  if (!node.IsSequence()) throw InputError(where, field, "must be a list", "e.g. [a, b]");
  std::vector<std::string> out;
  for (size_t i = 0; i < node.size(); ++i) {
    out.push_back(YamlString(where, node[i], field + "[" + std::to_string(i) + "]"));
  }
  return out;
}

YAML::Node LoadYamlText(const std::string& text, const std::string& where) {
  try {
    YAML::Node root = YAML::Load(text);
    // What yaml-cpp lets through: a key given twice (its tree keeps both, and a reader takes
    // one), a second document (dropped), text that is not UTF-8, alias bombs.
    CheckYamlText(text, where);
    return root;
  } catch (const YAML::Exception& e) {
    std::string at = e.mark.is_null() ? where
                                      : where + ":" + std::to_string(e.mark.line + 1) + ":" +
                                            std::to_string(e.mark.column + 1);
    throw InputError(at, "", "is not valid YAML: " + e.msg, "check indentation and quoting");
  }
}

}  // namespace accel
