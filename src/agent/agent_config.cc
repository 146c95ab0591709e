// ParseAgentConfig: the node agent's YAML. Every key is checked (a typo is an error, not a
// silently ignored setting); the embedded device-plugin config is NVIDIA's v1 schema and is
// read by kube::ParsePluginConfig so one file format serves both.
#include "agent/agent_config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "common/error.h"
#include "common/strings.h"
#include "common/structured_file.h"
#include "common/yaml_config.h"
#include "devices/open_backends.h"
#include "fleet/host_policy_file.h"
#include "fleet/labels.h"
#include "fleet/store_url.h"
#include "telemetry/collector.h"

namespace accel::agent {

namespace {

// Readers bound to the file's name, for the handler tables below.
struct Reader {
  const std::string& where;

  std::string String(const YAML::Node& node, const std::string& field) const {
    return YamlString(where, node, field);
  }
  bool Bool(const YAML::Node& node, const std::string& field) const {
    return YamlBool(where, node, field);
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
    std::vector<std::string> out = YamlStringList(where, node, field);
    for (const std::string& v : out) {
      if (!devices::IsKnownVendor(v)) {
        throw InputError(where, field, "unknown vendor '" + v + "'", "use nvidia, amd, habana");
      }
    }
    return out;
  }
};

/// devicePlugin: enabled, config (inline) or configFile (relative to the agent file).
void ReadDevicePlugin(const Reader& r, const YAML::Node& node, const std::string& field,
                      DevicePluginSection* out) {
  YAML::Node inline_config;
  bool has_inline = false;  // a default YAML::Node converts to true: track it apart
  std::string config_file;
  YamlMapReader(r.where, node, field)
      .On("enabled", [&](const YAML::Node& v, const std::string& f) { out->enabled = r.Bool(v, f); })
      .On("config", [&](const YAML::Node& v, const std::string&) {
        inline_config = v;
        has_inline = true;
      })
      .On("configFile", [&](const YAML::Node& v, const std::string& f) { config_file = r.String(v, f); })
      .Run();
  if (has_inline && !config_file.empty()) {
    throw InputError(r.where, field, "has both config and configFile", "keep one of them");
  }
  if (!config_file.empty()) {
    std::filesystem::path path(config_file);
    if (path.is_relative()) path = std::filesystem::path(r.where).parent_path() / path;
    YAML::Node doc = LoadYamlText(ReadWholeFile(path.string()), path.string());
    out->config = kube::ParsePluginConfig(doc, path.string());
  } else if (has_inline) {
    out->config = kube::ParsePluginConfig(inline_config, r.where + ": " + field + ".config");
  }
}

/// Checks the dra block and resolves its relative paths against the agent file's directory.
void CheckDraSection(DraSection* dra, const std::string& source) {
  if (!IsDnsSubdomain(dra->driver_name) || dra->driver_name.size() > 63)
    throw InputError(source, "dra.driverName",
                     "'" + dra->driver_name + "' is not a DNS subdomain of at most 63 characters",
                     "e.g. driverName: accel.io (DeviceClasses select devices by it)");
  if (!dra->node_name.empty() && !IsDnsSubdomain(dra->node_name))
    throw InputError(source, "dra.nodeName", "'" + dra->node_name + "' is not a valid node name",
                     "leave it empty to take $NODE_NAME or the host name");
  if (dra->resync_interval.count() < 1000)
    throw InputError(source, "dra.resyncInterval", "must be at least 1s", "e.g. resyncInterval: 60s");
  for (auto [key, path] : {std::pair{"dra.registryDir", &dra->registry_dir}, {"dra.cdiDir", &dra->cdi_dir},
                           {"dra.stateDir", &dra->state_dir}, {"dra.hostRoot", &dra->host_root}})
    if (path->empty() || (*path)[0] != '/')
      throw InputError(source, key, "must be an absolute path", "e.g. " + std::string(key) + ": /var/run/cdi");
  if (!dra->kubeconfig.empty() && dra->kubeconfig[0] != '/')
    dra->kubeconfig = (std::filesystem::path(source).parent_path() / dra->kubeconfig).string();
  if (dra->plugin_dir.empty()) dra->plugin_dir = "/var/lib/kubelet/plugins/" + dra->driver_name;
}

}  // namespace

std::string HostnameLabel(const std::string& where, const std::string& value,
                          const std::string& field) {
  if (value == "Hostname" || value == "hostname") return value;
  if (value == "none" || value.empty()) return "";
  throw InputError(where, field, "'" + value + "' is not a label name",
                   "use Hostname (dcgm-exporter releases), hostname (dcgm-exporter HEAD) or none");
}

AgentConfig ParseAgentConfig(const std::string& yaml, const std::string& source) {
  YAML::Node root = LoadYamlText(yaml, source);
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
  YamlMapReader(source, root, "")
      .On("vendors", [&](const YAML::Node& v, const std::string& f) { c.vendors = r.Vendors(v, f); })
      .On("libraries", [&](const YAML::Node& v, const std::string& f) {
        YamlMapReader(source, v, f)
            .On("nvml", str(&c.nvml_library))
            .On("rocmSmi", str(&c.rocm_smi_library))
            .On("hlml", str(&c.hlml_library))
            .Run();
      })
      .On("topology", str(&c.topology))
      .On("exporter", [&](const YAML::Node& v, const std::string& f) {
        YamlMapReader(source, v, f)
            .On("enabled", flag(&c.exporter.enabled))
            .On("listen", str(&c.exporter.listen))
            .On("webConfigFile", str(&c.exporter.web_config_file))
            .On("profile", str(&c.exporter.profile))
            .On("accelMetrics", flag(&c.exporter.accel_metrics))
            .On("hostnameLabel", [&](const YAML::Node& v, const std::string& f) {
              c.exporter.hostname_label = HostnameLabel(source, r.String(v, f), f);
            })
            .On("collectInterval", duration(&c.exporter.collect_interval))
            .On("staleAfter", duration(&c.exporter.stale_after))
            .On("pods", [&](const YAML::Node& v, const std::string& f) {
              c.exporter.pods = YamlOneOf<PodAttribution>(
                  source, v, f,
                  {{"auto", PodAttribution::kAuto}, {"always", PodAttribution::kAlways},
                   {"never", PodAttribution::kNever}});
            })
            .On("podResourcesSocket", str(&c.exporter.pod_resources_socket))
            .On("podRefreshInterval", duration(&c.exporter.pod_refresh_interval))
            .On("collectors", str(&c.exporter.collectors))
            .On("amdMetricsConfig", str(&c.exporter.amd_metrics_config))
            .Run();
      })
      .On("devicePlugin", [&](const YAML::Node& v, const std::string& f) {
        ReadDevicePlugin(r, v, f, &c.device_plugin);
      })
      .On("labels", [&](const YAML::Node& v, const std::string& f) {
        YamlMapReader(source, v, f)
            .On("enabled", flag(&c.labels.enabled))
            .On("file", str(&c.labels.file))
            .On("interval", duration(&c.labels.interval))
            .Run();
      })
      .On("mig", [&](const YAML::Node& v, const std::string& f) {
        YamlMapReader(source, v, f)
            .On("enabled", flag(&c.mig.enabled))
            .On("configFile", str(&c.mig.config_file))
            .On("config", str(&c.mig.config))
            .On("stateFile", str(&c.mig.state_file))
            .Run();
      })
      .On("fleet", [&](const YAML::Node& v, const std::string& f) {
        YamlMapReader(source, v, f)
            .On("enabled", flag(&c.fleet.enabled))
            .On("store", str(&c.fleet.store))
            .On("name", str(&c.fleet.name))
            .On("labels", [&](const YAML::Node& labels, const std::string& lf) {
              if (!labels.IsMap()) throw InputError(source, lf, "must be a mapping of label keys to values", "e.g. labels: {az: rack-3}");
              for (const auto& kv : labels) {
                const std::string key = kv.first.as<std::string>();
                const std::string value = r.String(kv.second, YamlKeyPath(lf, key));
                c.fleet.labels.insert(fleet::ParseLabel(key + "=" + value, source + ": " + lf));
              }
            })
            .On("policyFile", str(&c.fleet.policy_file))
            .On("heartbeat", duration(&c.fleet.heartbeat))
            .On("staleAfter", duration(&c.fleet.stale_after))
            .Run();
      })
      .On("dra", [&](const YAML::Node& v, const std::string& f) {
        YamlMapReader(source, v, f)
            .On("enabled", flag(&c.dra.enabled))
            .On("driverName", str(&c.dra.driver_name))
            .On("nodeName", str(&c.dra.node_name))
            .On("kubeconfig", str(&c.dra.kubeconfig))
            .On("registryDir", str(&c.dra.registry_dir))
            .On("pluginDir", str(&c.dra.plugin_dir))
            .On("cdiDir", str(&c.dra.cdi_dir))
            .On("stateDir", str(&c.dra.state_dir))
            .On("publishVfs", flag(&c.dra.publish_vfs))
            .On("partitionableDevices", flag(&c.dra.partitionable_devices))
            .On("hostRoot", str(&c.dra.host_root))
            .On("resyncInterval", duration(&c.dra.resync_interval))
            .On("nccl", [&](const YAML::Node& n, const std::string& nf) {
              YamlMapReader(source, n, nf)
                  .On("socketIfname", str(&c.dra.nccl_socket_ifname))
                  .On("topoFile", str(&c.dra.nccl_topo_file))
                  .Run();
            })
            .Run();
      })
      .Run();
  if (c.dra.enabled) CheckDraSection(&c.dra, source);
  if (c.fleet.enabled) {
    if (c.fleet.heartbeat.count() < 1000)
      throw InputError(source, "fleet.heartbeat", "must be at least 1s", "e.g. heartbeat: 30s");
    if (!c.fleet.store.empty()) fleet::ParseStoreUrl(c.fleet.store, source + ": fleet.store");
    if (!c.fleet.policy_file.empty()) {
      std::filesystem::path p(c.fleet.policy_file);
      if (p.is_relative()) c.fleet.policy_file = (std::filesystem::path(source).parent_path() / p).string();
      fleet::LoadHostPolicy(c.fleet.policy_file);  // a bad file stops the start, not the first heartbeat
    }
  }
  if (c.labels.enabled && c.labels.file.empty()) {
    throw InputError(source, "labels.file", "is empty", "name the feature file, or set labels.enabled: false");
  }
  LoadFieldSelection(&c.exporter, std::filesystem::path(source).parent_path().string());
  return c;
}

void LoadFieldSelection(ExporterSection* exporter, const std::string& base_dir) {
  auto resolve = [&base_dir](const std::string& file) {
    std::filesystem::path path(file);
    if (path.is_relative() && !base_dir.empty()) path = std::filesystem::path(base_dir) / path;
    return path.string();
  };
  exporter->fields = nullptr;
  if (exporter->collectors.empty() && exporter->amd_metrics_config.empty()) return;
  auto fields = std::make_shared<telemetry::FieldSelection>();
  if (!exporter->collectors.empty()) {
    fields->dcgm = telemetry::LoadDcgmCounters(resolve(exporter->collectors));
  }
  if (!exporter->amd_metrics_config.empty()) {
    fields->amd = telemetry::LoadAmdMetricsConfig(resolve(exporter->amd_metrics_config));
  }
  exporter->fields = std::move(fields);
}

AgentConfig LoadAgentConfig(const std::string& path) {
  if (path.empty()) return AgentConfig{};
  return ParseAgentConfig(ReadWholeFile(path), path);
}

dra::NodeSource NodeSourceOf(const AgentConfig& config) {
  dra::NodeSource source;
  source.topology = config.topology;
  source.host_root = config.dra.host_root;
  return source;
}

}  // namespace accel::agent
