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
#include <set>

#include "common/error.h"
#include "common/yaml_config.h"

namespace accel::kube {

namespace {

constexpr size_t kMaxResourceNameLength = 63;
// NVIDIA sets no limit; 1024 replicas of 8 GPUs already make a 400 KiB ListAndWatch message, and
// a larger number is a typo that would exhaust memory before the kubelet refused it.
constexpr int kMaxTimeSlicingReplicas = 1024;

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

// One resources[] entry of sharing.timeSlicing / sharing.mps (NVIDIA's ReplicatedResource).
SharedResource ParseSharedResource(const std::string& where, const YAML::Node& node,
                                   const std::string& field, int max_replicas,
                                   const std::string& too_many) {
  std::optional<std::string> name;
  std::optional<long long> replicas;
  SharedResource out;
  YamlMapReader(where, node, field)
      .On("name", [&](const YAML::Node& v, const std::string& f) {
        name = ResourceName(where, YamlString(where, v, f), f);
      })
      .On("replicas", [&](const YAML::Node& v, const std::string& f) {
        replicas = YamlInteger(where, v, f);
        if (*replicas < 2) throw InputError(where, f, "number of replicas must be >= 2");
        if (*replicas > max_replicas) {
          throw InputError(where, f,
                           std::to_string(*replicas) + " replicas: " + too_many,
                           "use at most " + std::to_string(max_replicas) + " replicas");
        }
      })
      .On("rename", [&](const YAML::Node& v, const std::string& f) {
        out.rename = ResourceName(where, YamlString(where, v, f), f);
      })
      .On("devices", [&](const YAML::Node& v, const std::string& f) {
        // NVIDIA parses a count or a list too, then forces "all" at run time with a warning.
        if (IsPlainYamlScalar(v) && v.Scalar() == "all") return;
        throw InputError(where, f, "accel does not support per-device selection yet",
                         "remove `devices` to share every device of the resource");
      })
      .Run();
  if (!node.IsMap()) throw InputError(where, field, "must be a mapping");
  if (!name) throw InputError(where, field + ".name", "is required");
  if (!replicas) throw InputError(where, field + ".replicas", "is required");
  out.name = *name;
  out.replicas = static_cast<int>(*replicas);
  return out;
}

// sharing.timeSlicing or sharing.mps. `fail_default` is NVIDIA's default of
// failRequestsGreaterThanOne for the strategy.
void ParseReplicated(const std::string& where, const YAML::Node& node, const std::string& field,
                     int max_replicas, const std::string& too_many, bool fail_default,
                     ReplicatedResources* out) {
  out->fail_requests_greater_than_one = fail_default;
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
          std::string item = f + "[" + std::to_string(i) + "]";
          SharedResource r = ParseSharedResource(where, v[i], item, max_replicas, too_many);
          if (out->Find(r.name)) throw InputError(where, item + ".name", "duplicate resource " + r.name);
          out->resources.push_back(std::move(r));
        }
      })
      .Run();
  if (out->resources.empty()) {
    throw InputError(where, field + ".resources", "no resources specified",
                     "list {name: nvidia.com/gpu, replicas: N} entries");
  }
  // The advertised names: valid resource names (".shared" may push one past 63 characters),
  // and two entries may not be advertised under one name.
  std::set<std::string> advertised;
  for (size_t i = 0; i < out->resources.size(); ++i) {
    const SharedResource& r = out->resources[i];
    std::string item = field + ".resources[" + std::to_string(i) + "]";
    std::string name = out->AdvertisedName(r);
    ResourceName(where, name, item + (r.rename.empty() ? ".name" : ".rename"));
    if (!advertised.insert(name).second) {
      throw InputError(where, item, "two resources would be advertised as " + name,
                       "give each a different rename");
    }
  }
}

void ParseSharing(const std::string& where, const YAML::Node& node, PluginConfig* config) {
  YamlMapReader(where, node, "sharing")
      .On("timeSlicing", [&](const YAML::Node& v, const std::string& f) {
        ParseReplicated(where, v, f, kMaxTimeSlicingReplicas,
                        "accel advertises at most 1024 replicas per device (each is one ID in "
                        "every ListAndWatch message)",
                        false, &config->time_slicing);
      })
      .On("mps", [&](const YAML::Node& v, const std::string& f) {
        // NVIDIA: failRequestsGreaterThanOne is true for MPS unless the file relaxes it (one
        // client of a GPU's 1/N slice per container; more would not add up to more compute).
        ParseReplicated(where, v, f, kMaxMpsReplicas,
                        "an MPS server serves at most 48 clients per GPU (Volta and newer)", true,
                        &config->mps);
      })
      .Run();
  if (!config->time_slicing.resources.empty() && !config->mps.resources.empty()) {
    throw InputError(where, "sharing",
                     "sharing.timeSlicing and sharing.mps are mutually exclusive (NVIDIA's plugin "
                     "would silently use mps only)",
                     "keep one of them; use separate node configs for the two kinds of nodes");
  }
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

void ParseFlags(const std::string& where, const YAML::Node& node, PluginConfig* config,
                std::string* mps_root_field) {
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
      .On("mpsRoot", [&](const YAML::Node& v, const std::string& f) {
        config->mps_settings.root = YamlString(where, v, f);
        *mps_root_field = f;
      })
      .On("mpsControlPath", [&](const YAML::Node& v, const std::string& f) {
        config->mps_settings.control_path = YamlString(where, v, f);
        if (!config->mps_settings.control_path.empty() &&
            config->mps_settings.control_path.front() != '/') {
          throw InputError(where, f, "must be an absolute path",
                           "name the binary, e.g. /usr/bin/nvidia-cuda-mps-control, or leave it "
                           "empty to search PATH and the driver root");
        }
      })
      .Ignore({"failOnInitError", "gdrcopyEnabled", "gdsEnabled", "mofedEnabled",
               "useNodeFeatureAPI", "deviceDiscoveryStrategy", "gfd"})
      .Run();
  // As in NVIDIA's plugin, device nodes live under the driver root unless told otherwise.
  if (driver_root && !driver_root->empty()) config->driver_root = *driver_root;
  if (dev_root) {
    config->dev_root = *dev_root;
  } else if (driver_root) {
    config->dev_root = *driver_root;
  }
  if (config->dev_root.empty()) config->dev_root = "/";
}

// NVIDIA's validateFlags for MPS, plus the root accel creates directories under.
void CheckMps(const std::string& where, const std::string& mps_root_field,
              const PluginConfig& config) {
  if (config.mps.resources.empty()) return;
  if (config.mig_strategy == MigStrategy::kMixed) {
    throw InputError(where, "flags.migStrategy", "migStrategy mixed is not supported with MPS",
                     "MPS shares whole GPUs: use migStrategy none (or single on GPUs without MIG)");
  }
  const std::string& root = config.mps_settings.root;
  std::string field = mps_root_field.empty() ? "flags.mpsRoot" : mps_root_field;
  if (root.empty()) {
    throw InputError(where, field, "using MPS requires flags.mpsRoot",
                     "set it to a host directory, e.g. /run/nvidia/mps");
  }
  if (root.front() != '/') throw InputError(where, field, "must be an absolute path");
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

// accel's `nccl:` block. The interface name is checked as Linux names interfaces (IFNAMSIZ,
// no '/' or whitespace) so a typo fails here instead of in every training pod.
void ParseNccl(const std::string& where, const YAML::Node& node, NcclWiring* nccl) {
  YamlMapReader(where, node, "nccl")
      .On("ibHca", [&](const YAML::Node& v, const std::string& f) {
        nccl->ib_hca = YamlBool(where, v, f);
      })
      .On("socketIfname", [&](const YAML::Node& v, const std::string& f) {
        std::string name = YamlString(where, v, f);
        std::string bare = name.empty() || (name.front() != '=' && name.front() != '^')
                               ? name
                               : name.substr(1);
        bool ok = name.empty() ||
                  (!bare.empty() && bare.size() <= 256 &&
                   std::none_of(bare.begin(), bare.end(), [](char c) {
                     return c == '/' || std::isspace(static_cast<unsigned char>(c)) ||
                            !std::isprint(static_cast<unsigned char>(c));
                   }));
        if (!ok) {
          throw InputError(where, f, "invalid interface name '" + name + "'",
                           "an interface (eth0), a prefix list (eth,ens) or NCCL's =NAME / ^NAME");
        }
        nccl->socket_ifname = name;
      })
      .Run();
}

}  // namespace

PluginConfig ParsePluginConfig(const YAML::Node& node, const std::string& where) {
  PluginConfig config;
  std::string mps_root_field;
  YamlMapReader(where, node, "")
      .On("version", [&](const YAML::Node& v, const std::string& f) {
        std::string version = YamlString(where, v, f);
        if (version != "v1") throw InputError(where, f, "unknown version '" + version + "'",
                                              "only v1 is supported");
      })
      .On("flags", [&](const YAML::Node& v, const std::string&) {
        ParseFlags(where, v, &config, &mps_root_field);
      })
      .On("sharing",
          [&](const YAML::Node& v, const std::string&) { ParseSharing(where, v, &config); })
      .On("health",
          [&](const YAML::Node& v, const std::string&) { ParseHealth(where, v, &config.health); })
      .On("nccl",
          [&](const YAML::Node& v, const std::string&) { ParseNccl(where, v, &config.nccl); })
      .On("pluginDir", [&](const YAML::Node& v, const std::string& f) {
        config.plugin_dir = YamlString(where, v, f);
        if (config.plugin_dir.empty() || config.plugin_dir.front() != '/') {
          throw InputError(where, f, "must be an absolute path");
        }
      })
      // NVIDIA parses resources.gpus/mig patterns but ignores them at run time; so does accel.
      .Ignore({"resources", "imex"})
      .Run();
  CheckMps(where, mps_root_field, config);
  return config;
}

std::string ReplicatedResources::AdvertisedName(const SharedResource& r) const {
  if (!r.rename.empty()) return r.rename;
  return rename_by_default ? r.name + ".shared" : r.name;
}

const SharedResource* ReplicatedResources::Find(const std::string& name) const {
  for (const SharedResource& r : resources) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

SharingStrategy PluginConfig::sharing_strategy() const {
  if (!mps.resources.empty()) return SharingStrategy::kMps;
  if (!time_slicing.resources.empty()) return SharingStrategy::kTimeSlicing;
  return SharingStrategy::kNone;
}

const ReplicatedResources& PluginConfig::sharing() const {
  return sharing_strategy() == SharingStrategy::kMps ? mps : time_slicing;
}

const char* SharingStrategyName(SharingStrategy s) {
  switch (s) {
    case SharingStrategy::kNone: return "none";
    case SharingStrategy::kTimeSlicing: return "time-slicing";
    case SharingStrategy::kMps: return "mps";
  }
  return "none";
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
