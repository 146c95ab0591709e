// Kubelet overrides: the KubeletConfiguration (kubelet.config.k8s.io/v1beta1) fields a cluster
// template may set under spec.kubelet and spec.nodeGroups[].kubelet, checked field by field.
//
// accel generates each node group's KubeletConfiguration from the guest layout its flavor gives
// (cpuManagerPolicy, reservedSystemCPUs, topology and memory manager settings, reservedMemory);
// overrides are what the operator wants different or in addition. They are checked here so that a
// wrong type or value stops `accel cluster plan` with the key path instead of stopping the kubelet
// on a node: every field accel knows has its JSON type and, where the kubelet accepts a fixed
// set, its values (KnownKubeletFields; sources: kubernetes/kubelet config/v1beta1/types.go and
// shared/reference/platform.md §2). A field accel does not know is an error with the nearest known
// name, because the kubelet's strict decoder refuses unknown fields too.
//
// The checked overrides are kept as JSON in the kubelet's own shapes (strings, integers,
// booleans, maps, lists): quantities, CPU sets and durations stay the text the operator wrote,
// plain YAML booleans given to string-valued option maps become "true"/"false". The generator
// merges them over what it derives.
//
// Cross-field rules (the Memory Manager's sum rule, options that exclude each other, a policy
// that rejects pods on the group's layout) are not checked here: they need the layout and belong
// to `accel cluster check`.
//
// Free functions over immutable tables; thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace accel::kubelet {

/// The JSON type of a KubeletConfiguration field, with the check accel applies to its value.
enum class KubeletFieldType {
  kString,             ///< any string
  kEnum,               ///< one of KubeletField::values, case-sensitive as the kubelet compares
  kEnumList,           ///< a list of KubeletField::values (enforceNodeAllocatable)
  kStringList,         ///< a list of strings
  kBool,               ///< a plain YAML boolean
  kInteger,            ///< an integer in [KubeletField::min, KubeletField::max]
  kDuration,           ///< a Go duration string: "10s", "1m30s" (common/quantity.h)
  kQuantity,           ///< one non-negative resource quantity: "10Mi"
  kCpuSet,             ///< a CPU list: "0-1,64-65" (common/cpuset.h)
  kResourceMap,        ///< resource name (cpu, memory, ephemeral-storage, pid) -> quantity >= 0
  kEvictionMap,        ///< eviction signal -> quantity or percentage ("100Mi", "10%")
  kEvictionPeriodMap,  ///< eviction signal -> duration (evictionSoftGracePeriod)
  kBoolMap,            ///< name -> boolean (featureGates)
  kCpuManagerOptions,  ///< cpuManagerPolicyOptions: known option -> "true" | "false"
  kTopologyOptions,    ///< topologyManagerPolicyOptions: known option -> its value as a string
  kReservedMemory,     ///< reservedMemory: [{numaNode: int >= 0, limits: {memory|hugepages-<size>: qty > 0}}]
};

/// One field accel knows.
struct KubeletField {
  const char* name;                 ///< the JSON name, e.g. "cpuManagerPolicy"
  KubeletFieldType type;            ///< its type and check
  std::vector<std::string> values;  ///< kEnum / kEnumList: the accepted values; empty otherwise
  long long min = 0;                ///< kInteger: smallest accepted value
  long long max = 0;                ///< kInteger: largest accepted value
};

/// Every field accel checks, sorted by name. The list is in docs/schemas.md.
const std::vector<KubeletField>& KnownKubeletFields();

/// Every top-level field of KubeletConfiguration v1beta1 (kubernetes
/// staging/src/k8s.io/kubelet/config/v1beta1/types.go, the 1.35 development tree, plus apiVersion
/// and kind). accel checks the KnownKubeletFields and keeps the others unchecked; a name in
/// neither is one the kubelet drops (it decodes leniently).
const std::set<std::string>& AllKubeletFields();

/// The field called `name`, or nullptr.
const KubeletField* FindKubeletField(const std::string& name);

/// A valid YAML value of the field, as written in a template: "1m30s", "{cpu: 500m, memory: 1Gi}".
std::string ExampleValue(const KubeletField& field);

/// The CPU Manager options (KEP table in platform.md §2.2) and Topology Manager options (§2.3)
/// accel accepts in the option maps.
const std::vector<std::string>& KnownCpuManagerOptions();
const std::vector<std::string>& KnownTopologyManagerOptions();

/// Reads a `kubelet:` mapping. `where` is the file, `path` the mapping's key path
/// ("spec.nodeGroups[1].kubelet"). A null node reads as {}. `apiVersion` and `kind` may be
/// present (so a pasted KubeletConfiguration works) but only as kubelet.config.k8s.io/v1beta1 and
/// KubeletConfiguration; they are not kept.
/// Returns a JSON object of the fields given, converted as described above.
/// Throws InputError(where, path.field, what, fix) for a node that is not a mapping, an unknown
/// field (the nearest known name in the fix), a value of the wrong type, an unknown enum value or
/// option (the accepted ones in the fix), a quantity, duration or CPU list that does not parse,
/// a negative reservation, a percentage outside 0-100%, or a reservedMemory entry that repeats a
/// NUMA node or has a zero or unknown limit.
nlohmann::json ReadKubeletOverrides(const YAML::Node& node, const std::string& where, const std::string& path);

/// `group` merged over `cluster` as a JSON merge patch (RFC 7386, what the kubelet's --config-dir
/// drop-ins do): maps (featureGates, kubeReserved, option maps, ...) merge key by key, lists
/// (reservedMemory, enforceNodeAllocatable) and scalars are replaced whole. Both must be objects.
nlohmann::json MergeKubeletOverrides(const nlohmann::json& cluster, const nlohmann::json& group);

}  // namespace accel::kubelet
