// ParseAgentConfig: the node agent's YAML. Every key is checked (a typo is an error, not a
// silently ignored setting); the embedded device-plugin config is NVIDIA's v1 schema and is
// read by kube::ParsePluginConfig so one file format serves both.
#include "agent/agent_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "common/error.h"
#include "devices/open_backends.h"
#include "telemetry/collector.h"

namespace accel::agent {

namespace {

using Handler = std::function<void(const YAML::Node& value, const std::string& field)>;

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

/// Dispatches each key of mapping `node` (at key path `path`) to its handler; unknown keys
/// are InputError listing the known ones. `key:` with no value keeps the default.
void ReadMap(const std::string& where, const YAML::Node& node, const std::string& path,
             const std::map<std::string, Handler>& handlers) {
  if (!node || node.IsNull()) return;
  if (!node.IsMap()) throw InputError(where, path, "must be a mapping");
  for (const auto& entry : node) {
    std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
    auto handler = handlers.find(key);
    if (handler == handlers.end()) {
      std::string known;
      for (const auto& [name, unused] : handlers) known += (known.empty() ? "" : ", ") + name;
      throw InputError(where, Join(path, key), "unknown key", "known here: " + known);
    }
    if (entry.second.IsNull()) continue;
    handler->second(entry.second, Join(path, key));
  }
}

struct Reader {
  const std::string& where;

  std::string String(const YAML::Node& node, const std::string& field) const {
    if (!node.IsScalar()) throw InputError(where, field, "must be a string");
    return node.Scalar();
  }
  bool Bool(const YAML::Node& node, const std::string& field) const {
    std::string s = String(node, field);
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    throw InputError(where, field, "'" + s + "' is not a boolean", "use true or false");
  }
  std::chrono::milliseconds Duration(const YAML::Node& node, const std::string& field) const {
    std::string s = String(node, field);
    try {
      return telemetry::ParseDuration(s, field);
    } catch (const InputError& e) {
      throw InputError(where, field, e.problem(), e.hint());
    }
  }
  std::vector<std::string> Vendors(const YAML::Node& node, const std::string& field) const {
    if (!node.IsSequence()) throw InputError(where, field, "must be a list", "e.g. [nvidia, amd]");
    std::vector<std::string> out;
    for (const auto& item : node) {
      std::string v = String(item, field);
      if (!devices::IsKnownVendor(v)) {
        throw InputError(where, field, "unknown vendor '" + v + "'", "use nvidia, amd, habana");
      }
      out.push_back(v);
    }
    return out;
  }
};

std::string ReadFile(const std::string& path, const std::string& where, const std::string& field) {
  std::ifstream in(path);
  if (!in) throw InputError(where, field, "cannot read '" + path + "'", "check the path");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// devicePlugin: enabled, config (inline) or configFile (relative to the agent file).
void ReadDevicePlugin(const Reader& r, const YAML::Node& node, const std::string& field,
                      DevicePluginSection* out) {
  YAML::Node inline_config;
  bool has_inline = false;  // a default YAML::Node converts to true: track it apart
  std::string config_file;
  ReadMap(r.where, node, field,
          {{"enabled", [&](const YAML::Node& v, const std::string& f) { out->enabled = r.Bool(v, f); }},
           {"config", [&](const YAML::Node& v, const std::string&) {
             inline_config = v;
             has_inline = true;
           }},
           {"configFile",
            [&](const YAML::Node& v, const std::string& f) { config_file = r.String(v, f); }}});
  if (has_inline && !config_file.empty()) {
    throw InputError(r.where, field, "has both config and configFile", "keep one of them");
  }
  if (!config_file.empty()) {
    std::filesystem::path path(config_file);
    if (path.is_relative()) path = std::filesystem::path(r.where).parent_path() / path;
    std::string text = ReadFile(path.string(), r.where, field + ".configFile");
    YAML::Node doc;
    try {
      doc = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw InputError(path.string(), "", "not valid YAML: " + e.msg);
    }
    out->config = kube::ParsePluginConfig(doc, path.string());
  } else if (has_inline) {
    out->config = kube::ParsePluginConfig(inline_config, r.where + ": " + field + ".config");
  }
}

}  // namespace

AgentConfig ParseAgentConfig(const std::string& yaml, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw InputError(source, "", "not valid YAML: " + e.msg, "check indentation and quoting");
  }
  AgentConfig c;
  Reader r{source};
  auto str = [&](std::string* out) {
    return [&r, out](const YAML::Node& v, const std::string& f) { *out = r.String(v, f); };
  };
  auto flag = [&](bool* out) {
    return [&r, out](const YAML::Node& v, const std::string& f) { *out = r.Bool(v, f); };
  };
  auto duration = [&](std::chrono::milliseconds* out) {
    return [&r, out](const YAML::Node& v, const std::string& f) { *out = r.Duration(v, f); };
  };
  ReadMap(source, root, "", {
      {"vendors", [&](const YAML::Node& v, const std::string& f) { c.vendors = r.Vendors(v, f); }},
      {"libraries", [&](const YAML::Node& v, const std::string& f) {
         ReadMap(source, v, f, {{"nvml", str(&c.nvml_library)},
                                {"rocmSmi", str(&c.rocm_smi_library)},
                                {"hlml", str(&c.hlml_library)}});
       }},
      {"topology", str(&c.topology)},
      {"exporter", [&](const YAML::Node& v, const std::string& f) {
         ReadMap(source, v, f, {{"enabled", flag(&c.exporter.enabled)},
                                {"listen", str(&c.exporter.listen)},
                                {"webConfigFile", str(&c.exporter.web_config_file)},
                                {"profile", str(&c.exporter.profile)},
                                {"collectInterval", duration(&c.exporter.collect_interval)},
                                {"podResourcesSocket", str(&c.exporter.pod_resources_socket)}});
       }},
      {"devicePlugin", [&](const YAML::Node& v, const std::string& f) {
         ReadDevicePlugin(r, v, f, &c.device_plugin);
       }},
      {"labels", [&](const YAML::Node& v, const std::string& f) {
         ReadMap(source, v, f, {{"enabled", flag(&c.labels.enabled)},
                                {"file", str(&c.labels.file)},
                                {"interval", duration(&c.labels.interval)}});
       }},
      {"mig", [&](const YAML::Node& v, const std::string& f) {
         ReadMap(source, v, f, {{"enabled", flag(&c.mig.enabled)},
                                {"configFile", str(&c.mig.config_file)},
                                {"config", str(&c.mig.config)},
                                {"stateFile", str(&c.mig.state_file)}});
       }},
  });
  if (c.labels.enabled && c.labels.file.empty()) {
    throw InputError(source, "labels.file", "is empty", "name the feature file, or set labels.enabled: false");
  }
  return c;
}

AgentConfig LoadAgentConfig(const std::string& path) {
  if (path.empty()) return AgentConfig{};
  return ParseAgentConfig(ReadFile(path, path, ""), path);
}

}  // namespace accel::agent
