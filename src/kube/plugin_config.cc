// ParsePluginConfig: NVIDIA k8s-device-plugin's v1 config file (api/config/v1) as accel reads it.
// Scalars are typed as NVIDIA's YAML 1.1 reader (sigs.k8s.io/yaml over yaml.v2) would type them,
// so a file NVIDIA accepts means the same here; NVIDIA keys with no meaning for accel are
// accepted and ignored, anything else unknown is refused so typos do not pass silently.
#include "kube/plugin_config.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>

#include "common/error.h"
#include "common/yaml_config.h"

namespace accel::kube {

namespace {

constexpr size_t kMaxResourceNameLength = 63;

std::vector<DeviceListStrategy> ParseDeviceList(const std::string& where, const YAML::Node& node,
                                                const std::string& field) {
  static const std::vector<std::pair<const char*, DeviceListStrategy>> kNames = {
      {"envvar", DeviceListStrategy::kEnvvar},
      {"volume-mounts", DeviceListStrategy::kVolumeMounts},
      {"cdi-annotations", DeviceListStrategy::kCdiAnnotations},
      {"cdi-cri", DeviceListStrategy::kCdiCri}};
  std::vector<DeviceListStrategy> out;
  auto add = [&](const YAML::Node& item, const std::string& item_field) {
    DeviceListStrategy s = YamlOneOf(where, item, item_field, kNames);
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) add(node[i], field + "[" + std::to_string(i) + "]");
  } else {
    add(node, field);
  }
  if (out.empty()) throw InputError(where, field, "must name at least one strategy");
  return out;
}

// NVIDIA's NewResourceName: "nvidia.com/" added to a bare name; accel also takes other vendors'
// prefixes ("amd.com/gpu"). The name part must be a DNS-subdomain-like label.
std::string ResourceName(const std::string& where, const std::string& raw,
                         const std::string& field) {
  std::string full = raw.find('/') == std::string::npos ? "nvidia.com/" + raw : raw;
  std::string name = full.substr(full.find('/') + 1);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  bool ok = !name.empty() && full.size() <= kMaxResourceNameLength && alnum(name.front()) &&
            alnum(name.back()) &&
            std::all_of(name.begin(), name.end(),
                        [&](char c) { return alnum(c) || c == '-' || c == '.'; });
  if (!ok) {
    throw InputError(where, field, "invalid resource name '" + raw + "'",
                     "letters, digits, '-' and '.', at most 63 characters with the prefix");
  }
  return full;
}

void ParseTimeSlicingResource(const std::string& where, const YAML::Node& node,
                              const std::string& field, TimeSlicing* out) {
  std::optional<std::string> name;
  std::optional<long long> replicas;
  YamlMapReader(where, node, field)
      .On("name", [&](const YAML::Node& v, const std::string& f) {
        name = ResourceName(where, YamlString(where, v, f), f);
      })
      .On("replicas", [&](const YAML::Node& v, const std::string& f) {
        replicas = YamlInteger(where, v, f);
        if (*replicas < 2) throw InputError(where, f, "number of replicas must be >= 2");
      })
      .On("rename", [&](const YAML::Node&, const std::string& f) {
        throw InputError(where, f, "accel does not support per-resource renames yet",
                         "use renameByDefault");
      })
      .On("devices", [&](const YAML::Node& v, const std::string& f) {
        if (IsPlainYamlScalar(v) && v.Scalar() == "all") return;  // what NVIDIA forces at run time anyway
        throw InputError(where, f, "accel does not support per-device selection yet",
                         "remove `devices` to share every device of the resource");
      })
      .Run();
  if (!node.IsMap()) throw InputError(where, field, "must be a mapping");
  if (!name) throw InputError(where, field + ".name", "is required");
  if (!replicas) throw InputError(where, field + ".replicas", "is required");
  for (const auto& [existing, unused] : out->resources) {
    if (existing == *name) throw InputError(where, field + ".name", "duplicate resource " + *name);
  }
  out->resources.emplace_back(*name, static_cast<int>(*replicas));
}

void ParseTimeSlicing(const std::string& where, const YAML::Node& node, const std::string& field,
                      TimeSlicing* out) {
  YamlMapReader(where, node, field)
      .On("renameByDefault", [&](const YAML::Node& v, const std::string& f) {
        out->rename_by_default = YamlBool(where, v, f);
      })
      .On("failRequestsGreaterThanOne", [&](const YAML::Node& v, const std::string& f) {
        out->fail_requests_greater_than_one = YamlBool(where, v, f);
      })
      .On("resources", [&](const YAML::Node& v, const std::string& f) {
        if (!v.IsSequence()) throw InputError(where, f, "must be a list");
        for (size_t i = 0; i < v.size(); ++i) {
          ParseTimeSlicingResource(where, v[i], f + "[" + std::to_string(i) + "]", out);
        }
      })
      .Run();
  if (out->resources.empty()) {
    throw InputError(where, field + ".resources", "no resources specified",
                     "list {name: nvidia.com/gpu, replicas: N} entries");
  }
}

void ParseSharing(const std::string& where, const YAML::Node& node, PluginConfig* config) {
  YamlMapReader(where, node, "sharing")
      .On("timeSlicing", [&](const YAML::Node& v, const std::string& f) {
        ParseTimeSlicing(where, v, f, &config->time_slicing);
      })
      .On("mps", [&](const YAML::Node&, const std::string& f) {
        throw InputError(where, f, "MPS not supported", "use sharing.timeSlicing");
      })
      .Run();
}

void ParsePluginFlags(const std::string& where, const YAML::Node& node, PluginConfig* config) {
  YamlMapReader(where, node, "flags.plugin")
      .On("passDeviceSpecs", [&](const YAML::Node& v, const std::string& f) {
        config->pass_device_specs = YamlBool(where, v, f);
      })
      .On("deviceListStrategy", [&](const YAML::Node& v, const std::string& f) {
        config->device_list = ParseDeviceList(where, v, f);
      })
      .On("deviceIDStrategy", [&](const YAML::Node& v, const std::string& f) {
        config->device_id_index = YamlOneOf<bool>(where, v, f, {{"uuid", false}, {"index", true}});
      })
      .On("cdiAnnotationPrefix", [&](const YAML::Node& v, const std::string& f) {
        config->cdi_annotation_prefix = YamlString(where, v, f);
      })
      .On("sharedDevicesAllocationPolicy", [&](const YAML::Node& v, const std::string& f) {
        config->replica_policy = YamlOneOf<ReplicaPolicy>(
            where, v, f, {{"distributed", ReplicaPolicy::kDistributed},
                          {"packed", ReplicaPolicy::kPacked}});
      })
      .Ignore({"nvidiaCTKPath", "containerDriverRoot"})
      .Run();
}

void ParseFlags(const std::string& where, const YAML::Node& node, PluginConfig* config) {
  std::optional<std::string> dev_root, driver_root;
  YamlMapReader(where, node, "flags")
      .On("migStrategy", [&](const YAML::Node& v, const std::string& f) {
        config->mig_strategy = YamlOneOf<MigStrategy>(
            where, v, f, {{"none", MigStrategy::kNone}, {"single", MigStrategy::kSingle},
                          {"mixed", MigStrategy::kMixed}});
      })
      .On("nvidiaDevRoot", [&](const YAML::Node& v, const std::string& f) {
        dev_root = YamlString(where, v, f);
      })
      .On("nvidiaDriverRoot", [&](const YAML::Node& v, const std::string& f) {
        driver_root = YamlString(where, v, f);
      })
      .On("plugin", [&](const YAML::Node& v, const std::string&) {
        ParsePluginFlags(where, v, config);
      })
      .Ignore({"failOnInitError", "gdrcopyEnabled", "gdsEnabled", "mofedEnabled",
               "useNodeFeatureAPI", "deviceDiscoveryStrategy", "mpsRoot", "gfd"})
      .Run();
  // As in NVIDIA's plugin, device nodes live under the driver root unless told otherwise.
  if (dev_root) {
    config->dev_root = *dev_root;
  } else if (driver_root) {
    config->dev_root = *driver_root;
  }
  if (config->dev_root.empty()) config->dev_root = "/";
}

void ParseHealth(const std::string& where, const YAML::Node& node, HealthPolicy* health) {
  YamlMapReader(where, node, "health")
      .On("enabled", [&](const YAML::Node& v, const std::string& f) {
        health->enabled = YamlBool(where, v, f);
      })
      .On("ignoredXids", [&](const YAML::Node& v, const std::string& f) {
        if (!v.IsSequence()) throw InputError(where, f, "must be a list of XID numbers");
        health->ignored_xids.clear();
        for (size_t i = 0; i < v.size(); ++i) {
          std::string item = f + "[" + std::to_string(i) + "]";
          long long xid = YamlInteger(where, v[i], item);
          if (xid < 0) throw InputError(where, item, "must not be negative");
          health->ignored_xids.insert(static_cast<uint64_t>(xid));
        }
      })
      .On("recoverAfterSeconds", [&](const YAML::Node& v, const std::string& f) {
        long long seconds = YamlInteger(where, v, f);
        if (seconds < 0 || seconds > 7 * 24 * 3600) {
          throw InputError(where, f, "must be between 0 (never) and 604800 seconds");
        }
        health->recover_after_seconds = static_cast<int>(seconds);
      })
      .Run();
}

}  // namespace

PluginConfig ParsePluginConfig(const YAML::Node& node, const std::string& where) {
  PluginConfig config;
  YamlMapReader(where, node, "")
      .On("version", [&](const YAML::Node& v, const std::string& f) {
        std::string version = YamlString(where, v, f);
        if (version != "v1") throw InputError(where, f, "unknown version '" + version + "'",
                                              "only v1 is supported");
      })
      .On("flags", [&](const YAML::Node& v, const std::string&) { ParseFlags(where, v, &config); })
      .On("sharing",
          [&](const YAML::Node& v, const std::string&) { ParseSharing(where, v, &config); })
      .On("health",
          [&](const YAML::Node& v, const std::string&) { ParseHealth(where, v, &config.health); })
      .On("pluginDir", [&](const YAML::Node& v, const std::string& f) {
        config.plugin_dir = YamlString(where, v, f);
        if (config.plugin_dir.empty() || config.plugin_dir.front() != '/') {
          throw InputError(where, f, "must be an absolute path");
        }
      })
      // NVIDIA parses resources.gpus/mig patterns but ignores them at run time; so does accel.
      .Ignore({"resources", "imex"})
      .Run();
  return config;
}

const char* MigStrategyName(MigStrategy s) {
  switch (s) {
    case MigStrategy::kNone: return "none";
    case MigStrategy::kSingle: return "single";
    case MigStrategy::kMixed: return "mixed";
  }
  return "none";
}

}  // namespace accel::kube
