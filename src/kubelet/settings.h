// KubeletSettings: the one typed reader of a KubeletConfiguration (kubelet.config.k8s.io/v1beta1)
// as JSON — the fields accel reasons about, read once, so the derivation (kubelet/derive.h), the
// checks (kubelet/check.h), the pod admission model (kubelet/node.h) and `accel doctor` cannot
// read one field two ways.
//
// The reader takes the document as the kubelet decodes it and as accel writes it
// (kubelet/overrides.h converts a template's YAML to these JSON shapes): strings for policies,
// options and CPU lists; mappings of resource -> quantity; reservedMemory as a list of
// {numaNode, limits}. A field of the wrong shape, or a value that does not parse, is a problem
// reported with the field's path and the fix, and the field keeps its kubelet default; the rules
// that need the node's layout (a policy name the kubelet does not know, the Memory Manager's sum
// rule, options that exclude each other) are kubelet/check.h's. Defaults are the kubelet's
// (cpuManagerPolicy none, topologyManagerPolicy none, scope container, memoryManagerPolicy None,
// maxPods 110, evictionHard memory.available 100Mi when evictionHard is unset).
//
// Plain data and a pure function; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cpuset.h"
#include "kubelet/finding.h"

namespace accel::kubelet {

/// A quantity-valued setting (kubeReserved.cpu, evictionHard.memory.available, a reservedMemory
/// limit) as written and as parsed.
struct QuantitySetting {
  std::string text;              ///< as written: "500m", "1Gi", "10%" (a number is kept as its text)
  std::optional<int64_t> milli;  ///< the value in thousandths (common/quantity.h); unset for a
                                 ///< percentage or text that is not a quantity
  /// True for "N%" (eviction thresholds only).
  bool percent() const { return !text.empty() && text.back() == '%'; }
};

/// One reservedMemory entry.
struct ReservedMemoryEntry {
  size_t index = 0;   ///< position in the reservedMemory list (malformed entries are left out)
  int numa_node = 0;  ///< guest NUMA node (the reader does not know the node's count)
  /// Memory type ("memory", "hugepages-2Mi", or whatever was written) -> its reservation,
  /// key order.
  std::map<std::string, QuantitySetting> limits;
};

/// What accel reads of a KubeletConfiguration.
struct KubeletSettings {
  std::string cpu_manager_policy = "none";       ///< as written: none | static (others: check.h)
  /// cpuManagerPolicyOptions: option -> its value ("true"); "" for a value that is not a string.
  std::map<std::string, std::string> cpu_manager_options;
  std::string reserved_system_cpus_text;         ///< reservedSystemCPUs as written; "" when unset
  std::optional<CpuSet> reserved_system_cpus;    ///< parsed; unset when absent or not a CPU list
  std::string topology_manager_policy = "none";  ///< none | best-effort | restricted | single-numa-node
  std::string topology_manager_scope = "container";  ///< container | pod
  /// topologyManagerPolicyOptions: option -> value ("true", "16"); "" for a non-string value.
  std::map<std::string, std::string> topology_manager_options;
  std::string memory_manager_policy = "None";    ///< None | Static
  std::map<std::string, QuantitySetting> kube_reserved;    ///< resource -> reservation
  std::map<std::string, QuantitySetting> system_reserved;  ///< resource -> reservation
  bool eviction_hard_set = false;  ///< evictionHard given (it then replaces the defaults whole)
  std::map<std::string, QuantitySetting> eviction_hard;    ///< signal -> threshold
  bool reserved_memory_set = false;                        ///< reservedMemory given
  std::vector<ReservedMemoryEntry> reserved_memory;        ///< its well-formed entries, in order
  std::map<std::string, bool> feature_gates;               ///< featureGates
  int max_pods = 110;                                      ///< maxPods
  std::string system_reserved_cgroup;                      ///< "" when unset
  std::string kube_reserved_cgroup;                        ///< "" when unset
  bool enforce_node_allocatable_set = false;               ///< enforceNodeAllocatable given
  /// enforceNodeAllocatable's values (a non-string item as its JSON text).
  std::vector<std::string> enforce_node_allocatable;
  std::string shutdown_grace_period;                       ///< Go duration text; "" when unset
  std::string shutdown_grace_period_critical_pods;         ///< Go duration text; "" when unset
  bool shutdown_by_pod_priority = false;  ///< shutdownGracePeriodByPodPriority is a non-empty list

  bool static_cpu() const { return cpu_manager_policy == "static"; }
  bool static_memory() const { return memory_manager_policy == "Static"; }
  bool pod_scope() const { return topology_manager_scope == "pod"; }
  /// cpuManagerPolicyOptions `name` is "true".
  bool CpuOption(const std::string& name) const;
  /// featureGates `gate` is true.
  bool FeatureGate(const std::string& gate) const;
};

/// The text a quantity is parsed from: a string as it is, a number as its decimal text ("" for
/// anything else). A pod's and a KubeletConfiguration's quantities may be either.
std::string QuantityTextOf(const nlohmann::json& value);

/// Reads `config` (a KubeletConfiguration as JSON; null reads as {}). Problems of shape and
/// syntax are appended to *problems (when non-null), each an error naming the field: the
/// document is not a mapping; a policy, scope or cgroup that is not a string; reservedSystemCPUs
/// that is not a CPU list; a reservation or threshold that is not a quantity (thresholds may be
/// percentages); a reservedMemory entry without an integer numaNode or a limits mapping; maxPods
/// that is not a whole number >= 0. The field then keeps its default (a reservedMemory entry is
/// left out). Unknown fields are not this reader's business (kubelet/overrides.h knows them).
KubeletSettings ReadKubeletSettings(const nlohmann::json& config, std::vector<KubeletFinding>* problems = nullptr);

}  // namespace accel::kubelet
