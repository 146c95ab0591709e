#include "kubelet/settings.h"

#include <cstdio>

#include "common/quantity.h"

namespace accel::kubelet {

namespace {

using nlohmann::json;

class SettingsReader {
 public:
  SettingsReader(const json& c, std::vector<KubeletFinding>* problems) : c_(c), problems_(problems) {}

  KubeletSettings Read() {
    KubeletSettings s;
    if (c_.is_null()) return s;
    if (!c_.is_object()) {
      Problem("", "must be a KubeletConfiguration mapping", "give the fields of kubelet.config.k8s.io/v1beta1");
      return s;
    }
    s.cpu_manager_policy = String("cpuManagerPolicy", s.cpu_manager_policy);
    s.cpu_manager_options = Options("cpuManagerPolicyOptions");
    if (Has("reservedSystemCPUs")) {
      const json& v = c_["reservedSystemCPUs"];
      std::string error;
      CpuSet cpus;
      if (v.is_string() && CpuSet::Parse(v.get<std::string>(), &cpus, &error)) {
        s.reserved_system_cpus_text = v.get<std::string>();
        s.reserved_system_cpus = cpus;
      } else {
        s.reserved_system_cpus_text = v.is_string() ? v.get<std::string>() : v.dump();
        Problem("reservedSystemCPUs", "is not a CPU list" + (error.empty() ? "" : ": " + error),
                "write it as a cpuset, e.g. \"0-1\"");
      }
    }
    s.topology_manager_policy = String("topologyManagerPolicy", s.topology_manager_policy);
    s.topology_manager_scope = String("topologyManagerScope", s.topology_manager_scope);
    s.topology_manager_options = Options("topologyManagerPolicyOptions");
    s.memory_manager_policy = String("memoryManagerPolicy", s.memory_manager_policy);
    s.kube_reserved = Quantities("kubeReserved", false);
    s.system_reserved = Quantities("systemReserved", false);
    s.eviction_hard_set = Has("evictionHard");
    s.eviction_hard = Quantities("evictionHard", true);
    if (Has("reservedMemory")) {
      s.reserved_memory_set = true;
      const json& entries = c_["reservedMemory"];
      if (!entries.is_array()) {
        Problem("reservedMemory", "must be a list", "e.g. [{numaNode: 0, limits: {memory: 1Gi}}]");
      } else {
        for (size_t i = 0; i < entries.size(); ++i) {
          const json& e = entries[i];
          const std::string where = "reservedMemory[" + std::to_string(i) + "]";
          if (!e.is_object() || !e.contains("numaNode") || !e["numaNode"].is_number_integer() ||
              !e.contains("limits") || !e["limits"].is_object()) {
            Problem(where, "needs numaNode (an integer) and limits (a mapping)",
                    "e.g. {numaNode: 0, limits: {memory: 1Gi}}");
            continue;
          }
          ReservedMemoryEntry entry;
          entry.index = i;
          const int64_t node = e["numaNode"].get<int64_t>();
          entry.numa_node = node < -1 ? -1 : node > 1 << 20 ? 1 << 20 : static_cast<int>(node);
          for (auto it = e["limits"].begin(); it != e["limits"].end(); ++it)
            entry.limits[it.key()] = ReadQuantity(it.value(), where + ".limits." + it.key(), false);
          s.reserved_memory.push_back(std::move(entry));
        }
      }
    }
    if (Has("featureGates")) {
      if (!c_["featureGates"].is_object()) {
        Problem("featureGates", "must be a mapping of gate: true|false", "e.g. {CPUManagerPolicyAlphaOptions: true}");
      } else {
        for (auto it = c_["featureGates"].begin(); it != c_["featureGates"].end(); ++it)
          if (it.value().is_boolean()) s.feature_gates[it.key()] = it.value().get<bool>();
      }
    }
    if (Has("maxPods")) {
      const json& v = c_["maxPods"];
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        Problem("maxPods", "must be a whole number", "e.g. 110");
      else
        s.max_pods = static_cast<int>(std::min<int64_t>(v.get<int64_t>(), 1000000));
    }
    s.system_reserved_cgroup = String("systemReservedCgroup", "");
    s.kube_reserved_cgroup = String("kubeReservedCgroup", "");
    if (Has("enforceNodeAllocatable")) {
      s.enforce_node_allocatable_set = true;
      const json& v = c_["enforceNodeAllocatable"];
      if (!v.is_array())
        Problem("enforceNodeAllocatable", "must be a list", "e.g. [pods]");
      else
        for (const json& item : v) s.enforce_node_allocatable.push_back(item.is_string() ? item.get<std::string>() : item.dump());
    }
    s.shutdown_grace_period = String("shutdownGracePeriod", "");
    s.shutdown_grace_period_critical_pods = String("shutdownGracePeriodCriticalPods", "");
    s.shutdown_by_pod_priority = Has("shutdownGracePeriodByPodPriority") &&
                                 c_["shutdownGracePeriodByPodPriority"].is_array() &&
                                 !c_["shutdownGracePeriodByPodPriority"].empty();
    return s;
  }

 private:
  bool Has(const char* key) const { return c_.contains(key) && !c_[key].is_null(); }

  void Problem(const std::string& field, const std::string& problem, const std::string& fix) {
    if (problems_) problems_->push_back({Severity::kError, field, problem, fix});
  }

  std::string String(const char* key, const std::string& fallback) {
    if (!Has(key)) return fallback;
    if (!c_[key].is_string()) {
      Problem(key, "must be a string", "");
      return fallback;
    }
    return c_[key].get<std::string>();
  }

  // An option map of strings; a value that is not a string reads as "".
  std::map<std::string, std::string> Options(const char* key) {
    std::map<std::string, std::string> out;
    if (!Has(key)) return out;
    if (!c_[key].is_object()) {
      Problem(key, "must be a mapping of option: \"value\"", "e.g. {full-pcpus-only: \"true\"}");
      return out;
    }
    for (auto it = c_[key].begin(); it != c_[key].end(); ++it)
      out[it.key()] = it.value().is_string() ? it.value().get<std::string>() : "";
    return out;
  }

  QuantitySetting ReadQuantity(const json& v, const std::string& field, bool percent_ok) {
    QuantitySetting q;
    q.text = QuantityTextOf(v);
    if (percent_ok && q.percent()) {
      double pct = -1;
      if (std::sscanf(q.text.c_str(), "%lf%%", &pct) != 1 || pct < 0 || pct > 100)
        Problem(field, "is not a percentage or a quantity", "e.g. 100Mi or 10%");
      return q;
    }
    std::string error;
    const std::optional<accel::Quantity> parsed = q.text.empty() ? std::nullopt : ParseQuantity(q.text, &error);
    if (!parsed || parsed->milli < 0) {
      const bool cpu = field.size() >= 4 && field.compare(field.size() - 4, 4, ".cpu") == 0;
      Problem(field, percent_ok ? "is not a percentage or a quantity" : "is not a quantity",
              cpu ? "e.g. 500m" : "write it as e.g. 1Gi");
      return q;
    }
    q.milli = parsed->milli;
    return q;
  }

  std::map<std::string, QuantitySetting> Quantities(const char* key, bool percent_ok) {
    std::map<std::string, QuantitySetting> out;
    if (!Has(key)) return out;
    if (!c_[key].is_object()) {
      Problem(key, "must be a mapping of resource: quantity", "e.g. {memory: 1Gi}");
      return out;
    }
    for (auto it = c_[key].begin(); it != c_[key].end(); ++it)
      out[it.key()] = ReadQuantity(it.value(), std::string(key) + "." + it.key(), percent_ok);
    return out;
  }

  const json& c_;
  std::vector<KubeletFinding>* problems_;
};

}  // namespace

std::string QuantityTextOf(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v.get<double>());
    return buf;
  }
  return "";
}

bool KubeletSettings::CpuOption(const std::string& name) const {
  auto it = cpu_manager_options.find(name);
  return it != cpu_manager_options.end() && it->second == "true";
}

bool KubeletSettings::FeatureGate(const std::string& gate) const {
  auto it = feature_gates.find(gate);
  return it != feature_gates.end() && it->second;
}

KubeletSettings ReadKubeletSettings(const json& config, std::vector<KubeletFinding>* problems) {
  return SettingsReader(config, problems).Read();
}

}  // namespace accel::kubelet
