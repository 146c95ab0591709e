#include "kubelet/overrides.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string_view>

#include "common/cpuset.h"
#include "common/error.h"
#include "common/quantity.h"
#include "common/strings.h"
#include "common/yaml_config.h"

namespace accel::kubelet {

namespace {

using nlohmann::json;
using T = KubeletFieldType;

constexpr long long kInt32Max = 2147483647LL;

// Eviction signals the kubelet knows (pkg/kubelet/eviction/api/types.go).
const std::vector<std::string> kEvictionSignals = {
    "memory.available",    "allocatableMemory.available", "nodefs.available",
    "nodefs.inodesFree",   "imagefs.available",           "imagefs.inodesFree",
    "containerfs.available", "containerfs.inodesFree",    "pid.available"};
// Resources kubeReserved and systemReserved may name (kubelet's reserved-resource parsing).
const std::vector<std::string> kReservedResources = {"cpu", "memory", "ephemeral-storage", "pid"};

std::string Known(const std::vector<std::string>& names) { return JoinStrings(names, ", "); }

std::string Nearest(const std::string& word, const std::vector<std::string>& names) {
  std::vector<std::string_view> views(names.begin(), names.end());
  return std::string(ClosestMatch(word, views, std::max<size_t>(3, word.size() / 3)));
}

std::string OneOfHint(const std::string& got, const std::vector<std::string>& names) {
  const std::string near = Nearest(got, names);
  return (near.empty() ? "" : "did you mean '" + near + "'? ") + "one of: " + Known(names);
}

struct Reader {
  const std::string& where;

  [[noreturn]] void Fail(const std::string& field, const std::string& what, const std::string& fix) const {
    throw InputError(where, field, what, fix);
  }

  std::string String(const YAML::Node& v, const std::string& f) const { return YamlString(where, v, f); }

  void RequireMap(const YAML::Node& v, const std::string& f, const std::string& example) const {
    if (!v.IsMap()) Fail(f, "must be a mapping", "e.g. " + example);
  }

  // Map keys: scalars only (a YAML complex key is never a KubeletConfiguration name).
  std::string Key(const YAML::Node& k, const std::string& f) const {
    if (!k.IsScalar()) Fail(f, "has a key that is not a string", "write each key as a plain name");
    return k.Scalar();
  }

  std::string QuantityText(const YAML::Node& v, const std::string& f, bool positive) const {
    std::string text = String(v, f), error;
    std::optional<Quantity> q = ParseQuantity(text, &error);
    if (!q) Fail(f, error, "e.g. 100Mi, 1Gi, 500m, 2");
    if (q->milli < 0 || (positive && q->milli == 0))
      Fail(f, "'" + text + "' must be " + (positive ? "greater than zero" : "zero or more"), "e.g. 100Mi, 1Gi, 500m");
    return text;
  }

  std::string DurationText(const YAML::Node& v, const std::string& f) const {
    std::string text = String(v, f), error;
    if (!ParseGoDuration(text, &error)) Fail(f, error, "write a Go duration such as 10s, 500ms, 1m30s or 2h");
    return text;
  }

  // A map option value the kubelet reads as a string: plain booleans and integers become their text.
  std::string OptionText(const YAML::Node& v, const std::string& f) const {
    if (!v.IsScalar()) Fail(f, "must be a string", "e.g. \"true\"");
    if (IsPlainYamlScalar(v)) {
      try {
        return YamlBool(where, v, f) ? "true" : "false";
      } catch (const InputError&) {
      }
    }
    return v.Scalar();
  }

  json EvictionValue(const YAML::Node& v, const std::string& f) const {
    const std::string text = String(v, f);
    if (!text.empty() && text.back() == '%') {
      std::string error;
      const std::string number = text.substr(0, text.size() - 1);
      char* end = nullptr;
      const double p = number.empty() || number.find_first_not_of("0123456789.") != std::string::npos
                           ? -1
                           : std::strtod(number.c_str(), &end);
      if (p < 0 || p > 100 || (end && *end != '\0'))
        Fail(f, "'" + text + "' is not a percentage from 0% to 100%", "e.g. 10% or 5.5%");
      return text;
    }
    return QuantityText(v, f, false);
  }

  json Value(const KubeletField& field, const YAML::Node& v, const std::string& f) const {
    switch (field.type) {
      case T::kString:
        return String(v, f);
      case T::kEnum: {
        const std::string s = String(v, f);
        if (std::find(field.values.begin(), field.values.end(), s) == field.values.end())
          Fail(f, "unknown value '" + s + "'", OneOfHint(s, field.values));
        return s;
      }
      case T::kEnumList:
      case T::kStringList: {
        std::vector<std::string> items = YamlStringList(where, v, f);
        if (field.type == T::kEnumList) {
          for (size_t i = 0; i < items.size(); ++i)
            if (std::find(field.values.begin(), field.values.end(), items[i]) == field.values.end())
              Fail(f + "[" + std::to_string(i) + "]", "unknown value '" + items[i] + "'", OneOfHint(items[i], field.values));
        }
        return items;
      }
      case T::kBool:
        return YamlBool(where, v, f);
      case T::kInteger: {
        const long long n = YamlInteger(where, v, f);
        if (n < field.min || n > field.max)
          Fail(f, std::to_string(n) + " is out of range", "use " + std::to_string(field.min) + " to " + std::to_string(field.max));
        return n;
      }
      case T::kDuration:
        return DurationText(v, f);
      case T::kQuantity:
        return QuantityText(v, f, false);
      case T::kCpuSet: {
        const std::string s = String(v, f);
        CpuSet set;
        std::string error;
        if (!CpuSet::Parse(s, &set, &error)) Fail(f, "'" + s + "' is not a CPU list: " + error, "e.g. \"0-1,64-65\"");
        if (s.find('^') != std::string::npos) Fail(f, "'" + s + "': the kubelet's CPU lists have no ^ exclusions", "list the CPUs, e.g. \"0-1,64-65\"");
        return s;
      }
      case T::kResourceMap:
      case T::kEvictionMap:
      case T::kEvictionPeriodMap:
      case T::kBoolMap:
      case T::kCpuManagerOptions:
      case T::kTopologyOptions:
        return Map(field, v, f);
      case T::kReservedMemory:
        return ReservedMemory(v, f);
    }
    return json();
  }

  json Map(const KubeletField& field, const YAML::Node& v, const std::string& f) const {
    static const std::map<T, std::string> kExamples = {
        {T::kResourceMap, "{cpu: 500m, memory: 1Gi}"},
        {T::kEvictionMap, "{memory.available: 100Mi, nodefs.available: 10%}"},
        {T::kEvictionPeriodMap, "{memory.available: 1m30s}"},
        {T::kBoolMap, "{CPUManagerPolicyAlphaOptions: true}"},
        {T::kCpuManagerOptions, "{full-pcpus-only: \"true\"}"},
        {T::kTopologyOptions, "{prefer-closest-numa-nodes: \"true\"}"}};
    RequireMap(v, f, kExamples.at(field.type));
    json out = json::object();
    for (const auto& kv : v) {
      const std::string key = Key(kv.first, f);
      const std::string kf = f + "." + key;
      const YAML::Node& value = kv.second;
      if (value.IsNull()) Fail(kf, "has no value", "give a value or remove the key");
      switch (field.type) {
        case T::kResourceMap:
          if (std::find(kReservedResources.begin(), kReservedResources.end(), key) == kReservedResources.end())
            Fail(kf, "unknown resource '" + key + "'", OneOfHint(key, kReservedResources));
          out[key] = QuantityText(value, kf, false);
          break;
        case T::kEvictionMap:
        case T::kEvictionPeriodMap:
          if (std::find(kEvictionSignals.begin(), kEvictionSignals.end(), key) == kEvictionSignals.end())
            Fail(kf, "unknown eviction signal '" + key + "'", OneOfHint(key, kEvictionSignals));
          out[key] = field.type == T::kEvictionMap ? EvictionValue(value, kf) : json(DurationText(value, kf));
          break;
        case T::kBoolMap: {
          bool ok = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) != 0;
          });
          if (!ok) Fail(kf, "'" + key + "' is not a feature gate name", "gate names are CamelCase letters and digits, e.g. CPUManagerPolicyAlphaOptions");
          out[key] = YamlBool(where, value, kf);
          break;
        }
        case T::kCpuManagerOptions: {
          const auto& known = KnownCpuManagerOptions();
          if (std::find(known.begin(), known.end(), key) == known.end())
            Fail(kf, "unknown CPU Manager option '" + key + "'", OneOfHint(key, known));
          const std::string s = OptionText(value, kf);
          if (s != "true" && s != "false") Fail(kf, "must be \"true\" or \"false\", got '" + s + "'", "e.g. " + key + ": \"true\"");
          out[key] = s;
          break;
        }
        case T::kTopologyOptions: {
          const auto& known = KnownTopologyManagerOptions();
          if (std::find(known.begin(), known.end(), key) == known.end())
            Fail(kf, "unknown Topology Manager option '" + key + "'", OneOfHint(key, known));
          const std::string s = OptionText(value, kf);
          if (key == "max-allowable-numa-nodes") {
            const bool digits = !s.empty() && s.size() <= 4 && s.find_first_not_of("0123456789") == std::string::npos;
            if (!digits || std::stoi(s) < 1)
              Fail(kf, "must be a whole number of NUMA nodes, got '" + s + "'", "e.g. max-allowable-numa-nodes: \"12\" (the kubelet's default limit is 8)");
          } else if (s != "true" && s != "false") {
            Fail(kf, "must be \"true\" or \"false\", got '" + s + "'", "e.g. " + key + ": \"true\"");
          }
          out[key] = s;
          break;
        }
        default:
          break;
      }
    }
    return out;
  }

  json ReservedMemory(const YAML::Node& v, const std::string& f) const {
    if (!v.IsSequence())
      Fail(f, "must be a list", "e.g. [{numaNode: 0, limits: {memory: 1Gi}}, {numaNode: 1, limits: {memory: 1124Mi}}]");
    json out = json::array();
    std::set<long long> nodes;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string ef = f + "[" + std::to_string(i) + "]";
      const YAML::Node entry = v[i];
      RequireMap(entry, ef, "{numaNode: 0, limits: {memory: 1Gi}}");
      json e = json::object();
      bool has_node = false, has_limits = false;
      YamlMapReader(where, entry, ef)
          .On("numaNode", [&](const YAML::Node& n, const std::string& nf) {
            const long long id = YamlInteger(where, n, nf);
            if (id < 0 || id > 1023) Fail(nf, std::to_string(id) + " is not a NUMA node id", "use the guest's node ids, 0 and up");
            if (!nodes.insert(id).second)
              Fail(nf, "NUMA node " + std::to_string(id) + " is listed twice", "give each node one entry with all its limits");
            e["numaNode"] = id;
            has_node = true;
          })
          .On("limits", [&](const YAML::Node& l, const std::string& lf) {
            RequireMap(l, lf, "{memory: 1Gi, hugepages-1Gi: 2Gi}");
            json limits = json::object();
            for (const auto& kv : l) {
              const std::string key = Key(kv.first, lf);
              const std::string kf = lf + "." + key;
              if (key != "memory" && key.rfind("hugepages-", 0) != 0)
                Fail(kf, "unknown memory type '" + key + "'", "use memory or hugepages-<size> (hugepages-2Mi, hugepages-1Gi)");
              if (key != "memory") {
                std::string error;
                std::optional<Quantity> size = ParseQuantity(key.substr(10), &error);
                if (!size || size->milli <= 0)
                  Fail(kf, "'" + key + "' does not name a page size", "use hugepages-2Mi or hugepages-1Gi");
              }
              if (kv.second.IsNull()) Fail(kf, "has no value", "give a quantity, e.g. 1Gi");
              limits[key] = QuantityText(kv.second, kf, true);  // zero limits are refused by the kubelet
            }
            if (limits.empty()) Fail(lf, "is empty", "give at least memory, e.g. {memory: 1Gi}");
            e["limits"] = limits;
            has_limits = true;
          })
          .Run();
      if (!has_node) Fail(ef + ".numaNode", "is missing", "name the guest NUMA node, e.g. numaNode: 0");
      if (!has_limits) Fail(ef + ".limits", "is missing", "e.g. limits: {memory: 1Gi}");
      out.push_back(e);
    }
    return out;
  }
};

KubeletField Enum(const char* name, std::vector<std::string> values) { return {name, T::kEnum, std::move(values)}; }
KubeletField Int(const char* name, long long min, long long max) { return {name, T::kInteger, {}, min, max}; }
KubeletField Of(const char* name, T type) { return {name, type, {}}; }

}  // namespace

std::string ExampleValue(const KubeletField& field) {
  switch (field.type) {
    case T::kString: return "\"...\"";
    case T::kEnum: return field.values.front();
    case T::kEnumList: return "[" + field.values.front() + "]";
    case T::kStringList: return "[a, b]";
    case T::kBool: return "true";
    case T::kInteger: return std::to_string(std::max(field.min, 2LL));
    case T::kDuration: return "1m30s";
    case T::kQuantity: return "10Mi";
    case T::kCpuSet: return "\"0-1\"";
    case T::kResourceMap: return "{cpu: 500m, memory: 1Gi}";
    case T::kEvictionMap: return "{memory.available: 100Mi, nodefs.available: 10%}";
    case T::kEvictionPeriodMap: return "{memory.available: 30s}";
    case T::kBoolMap: return "{CPUManagerPolicyAlphaOptions: true}";
    case T::kCpuManagerOptions: return "{full-pcpus-only: \"true\"}";
    case T::kTopologyOptions: return "{prefer-closest-numa-nodes: \"true\", max-allowable-numa-nodes: \"12\"}";
    case T::kReservedMemory: return "[{numaNode: 0, limits: {memory: 1Gi, hugepages-1Gi: 2Gi}}]";
  }
  return "";
}

const std::vector<std::string>& KnownCpuManagerOptions() {
  // KEP stages in shared/reference/platform.md §2.2; whether an option is usable depends on the
  // Kubernetes version and the CPUManagerPolicyAlphaOptions/BetaOptions gates (a check, not a syntax rule).
  static const std::vector<std::string> kOptions = {
      "align-by-socket", "distribute-cpus-across-cores", "distribute-cpus-across-numa", "full-pcpus-only",
      "prefer-align-cpus-by-uncorecache", "strict-cpu-reservation"};
  return kOptions;
}

const std::vector<std::string>& KnownTopologyManagerOptions() {
  // platform.md §2.3: both stable. The alpha NUMA allocation-strategy options seen in one index
  // version have no KEP and are not accepted (unconfirmed).
  static const std::vector<std::string> kOptions = {"max-allowable-numa-nodes", "prefer-closest-numa-nodes"};
  return kOptions;
}

const std::vector<KubeletField>& KnownKubeletFields() {
  static const std::vector<KubeletField> kFields = [] {
    std::vector<KubeletField> f = {
        Of("allowedUnsafeSysctls", T::kStringList),
        Of("cgroupRoot", T::kString),
        Enum("cgroupDriver", {"cgroupfs", "systemd"}),
        Of("cgroupsPerQOS", T::kBool),
        Of("clusterDNS", T::kStringList),
        Of("clusterDomain", T::kString),
        Of("containerLogMaxSize", T::kQuantity),
        Int("containerLogMaxFiles", 2, kInt32Max),
        Of("containerRuntimeEndpoint", T::kString),
        Of("cpuCFSQuota", T::kBool),
        Of("cpuCFSQuotaPeriod", T::kDuration),
        Enum("cpuManagerPolicy", {"none", "static"}),
        Of("cpuManagerPolicyOptions", T::kCpuManagerOptions),
        Of("cpuManagerReconcilePeriod", T::kDuration),
        {"enforceNodeAllocatable", T::kEnumList,
         {"pods", "system-reserved", "kube-reserved", "system-reserved-compressible", "kube-reserved-compressible", "none"}},
        Of("evictionHard", T::kEvictionMap),
        Int("evictionMaxPodGracePeriod", -1, kInt32Max),
        Of("evictionMinimumReclaim", T::kEvictionMap),
        Of("evictionPressureTransitionPeriod", T::kDuration),
        Of("evictionSoft", T::kEvictionMap),
        Of("evictionSoftGracePeriod", T::kEvictionPeriodMap),
        Of("failSwapOn", T::kBool),
        Of("featureGates", T::kBoolMap),
        Int("imageGCHighThresholdPercent", 0, 100),
        Int("imageGCLowThresholdPercent", 0, 100),
        Of("imageMaximumGCAge", T::kDuration),
        Of("imageMinimumGCAge", T::kDuration),
        Of("imageServiceEndpoint", T::kString),
        Int("kubeAPIBurst", 0, kInt32Max),
        Int("kubeAPIQPS", 0, kInt32Max),
        Of("kubeReserved", T::kResourceMap),
        Of("kubeReservedCgroup", T::kString),
        Of("kubeletCgroups", T::kString),
        Of("localStorageCapacityIsolation", T::kBool),
        Int("maxParallelImagePulls", 1, kInt32Max),
        Int("maxPods", 1, kInt32Max),
        Enum("memoryManagerPolicy", {"None", "Static"}),
        Of("nodeStatusReportFrequency", T::kDuration),
        Of("nodeStatusUpdateFrequency", T::kDuration),
        Int("podPidsLimit", -1, 1LL << 40),
        Int("podsPerCore", 0, kInt32Max),
        Of("protectKernelDefaults", T::kBool),
        Of("registerNode", T::kBool),
        Of("reservedMemory", T::kReservedMemory),
        Of("reservedSystemCPUs", T::kCpuSet),
        Of("resolvConf", T::kString),
        Of("rotateCertificates", T::kBool),
        Of("runtimeRequestTimeout", T::kDuration),
        Of("serializeImagePulls", T::kBool),
        Of("serverTLSBootstrap", T::kBool),
        Of("shutdownGracePeriod", T::kDuration),
        Of("shutdownGracePeriodCriticalPods", T::kDuration),
        Of("singleProcessOOMKill", T::kBool),
        Of("staticPodPath", T::kString),
        Of("syncFrequency", T::kDuration),
        Of("systemCgroups", T::kString),
        Of("systemReserved", T::kResourceMap),
        Of("systemReservedCgroup", T::kString),
        Enum("topologyManagerPolicy", {"none", "best-effort", "restricted", "single-numa-node"}),
        Of("topologyManagerPolicyOptions", T::kTopologyOptions),
        Enum("topologyManagerScope", {"container", "pod"}),
    };
    std::sort(f.begin(), f.end(), [](const KubeletField& a, const KubeletField& b) { return std::string_view(a.name) < b.name; });
    return f;
  }();
  return kFields;
}

const KubeletField* FindKubeletField(const std::string& name) {
  for (const KubeletField& f : KnownKubeletFields())
    if (name == f.name) return &f;
  return nullptr;
}

json ReadKubeletOverrides(const YAML::Node& node, const std::string& where, const std::string& path) {
  Reader r{where};
  json out = json::object();
  if (!node || node.IsNull()) return out;
  r.RequireMap(node, path, "kubelet: {maxPods: 250, featureGates: {CPUManagerPolicyAlphaOptions: true}}");
  std::vector<std::string> names;
  for (const KubeletField& f : KnownKubeletFields()) names.push_back(f.name);
  for (const auto& kv : node) {
    const std::string key = r.Key(kv.first, path);
    const std::string f = YamlKeyPath(path, key);
    if (kv.second.IsNull()) continue;  // `key:` with no value keeps the default, as YamlMapReader
    if (key == "apiVersion" || key == "kind") {
      const std::string want = key == "kind" ? "KubeletConfiguration" : "kubelet.config.k8s.io/v1beta1";
      const std::string got = r.String(kv.second, f);
      if (got != want) r.Fail(f, "is '" + got + "'; overrides are KubeletConfiguration fields", "write " + want + " or leave it out");
      continue;
    }
    const KubeletField* field = FindKubeletField(key);
    if (!field) {
      const std::string near = Nearest(key, names);
      r.Fail(f, "unknown KubeletConfiguration field",
             (near.empty() ? std::string() : "did you mean '" + near + "'? ") +
                 "accel checks the fields listed in docs/schemas.md (Cluster template); names are case-sensitive");
    }
    try {
      out[key] = r.Value(*field, kv.second, f);
    } catch (const InputError& e) {
      if (!e.hint().empty()) throw;
      // The common scalar readers say what is wrong; add what is right for this field.
      throw InputError(e.where(), e.field(), e.problem(), "e.g. " + key + ": " + ExampleValue(*field));
    }
  }
  return out;
}

json MergeKubeletOverrides(const json& cluster, const json& group) {
  json merged = cluster.is_object() ? cluster : json::object();
  merged.merge_patch(group.is_object() ? group : json::object());
  return merged;
}

const std::set<std::string>& AllKubeletFields() {
  static const std::set<std::string> kFields = {
      "apiVersion", "kind", "enableServer", "staticPodPath", "podLogsDir", "syncFrequency",
      "fileCheckFrequency", "httpCheckFrequency", "staticPodURL", "staticPodURLHeader", "address", "port",
      "readOnlyPort", "tlsCertFile", "tlsPrivateKeyFile", "tlsCipherSuites", "tlsCurvePreferences",
      "tlsMinVersion", "rotateCertificates", "serverTLSBootstrap", "authentication", "authorization",
      "registryPullQPS", "registryBurst", "imagePullCredentialsVerificationPolicy",
      "preloadedImagesVerificationAllowlist", "eventRecordQPS", "eventBurst", "enableDebuggingHandlers",
      "enableContentionProfiling", "healthzPort", "healthzBindAddress", "oomScoreAdj", "clusterDomain",
      "clusterDNS", "streamingConnectionIdleTimeout", "nodeStatusUpdateFrequency", "nodeStatusReportFrequency",
      "nodeLeaseDurationSeconds", "imageMinimumGCAge", "imageMaximumGCAge", "imageGCHighThresholdPercent",
      "imageGCLowThresholdPercent", "volumeStatsAggPeriod", "kubeletCgroups", "systemCgroups", "cgroupRoot",
      "cgroupsPerQOS", "cgroupDriver", "cpuManagerPolicy", "singleProcessOOMKill", "cpuManagerPolicyOptions",
      "cpuManagerReconcilePeriod", "draManagerReconcilePeriod", "memoryManagerPolicy", "topologyManagerPolicy",
      "topologyManagerScope", "topologyManagerPolicyOptions", "qosReserved", "runtimeRequestTimeout",
      "hairpinMode", "maxPods", "podCIDR", "podPidsLimit", "resolvConf", "runOnce", "cpuCFSQuota",
      "cpuCFSQuotaPeriod", "nodeStatusMaxImages", "maxOpenFiles", "contentType", "kubeAPIQPS", "kubeAPIBurst",
      "serializeImagePulls", "maxParallelImagePulls", "evictionHard", "evictionSoft", "evictionSoftGracePeriod",
      "evictionPressureTransitionPeriod", "evictionMaxPodGracePeriod", "evictionMinimumReclaim",
      "mergeDefaultEvictionSettings", "podsPerCore", "enableControllerAttachDetach", "protectKernelDefaults",
      "makeIPTablesUtilChains", "iptablesMasqueradeBit", "iptablesDropBit", "featureGates", "failSwapOn",
      "memorySwap", "containerLogMaxSize", "containerLogMaxFiles", "containerLogMaxWorkers",
      "containerLogMonitorInterval", "configMapAndSecretChangeDetectionStrategy", "systemReserved",
      "kubeReserved", "reservedSystemCPUs", "showHiddenMetricsForVersion", "systemReservedCgroup",
      "kubeReservedCgroup", "enforceNodeAllocatable", "allowedUnsafeSysctls", "volumePluginDir", "providerID",
      "kernelMemcgNotification", "logging", "enableSystemLogHandler", "enableSystemLogQuery",
      "shutdownGracePeriod", "shutdownGracePeriodCriticalPods", "shutdownGracePeriodByPodPriority",
      "crashLoopBackOff", "reservedMemory", "enableProfilingHandler", "enableDebugFlagsHandler",
      "seccompDefault", "memoryThrottlingFactor", "memoryReservationPolicy", "registerWithTaints",
      "registerNode", "tracing", "localStorageCapacityIsolation", "containerRuntimeEndpoint",
      "imageServiceEndpoint", "failCgroupV1", "userNamespaces"};
  return kFields;
}

}  // namespace accel::kubelet
