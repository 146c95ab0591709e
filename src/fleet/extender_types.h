// The JSON of kube-scheduler's scheduler-extender protocol (k8s.io/kube-scheduler/extender/v1,
// types.go), read and written as kube-scheduler's HTTPExtender (pkg/scheduler/extender.go)
// writes and reads it:
//   - The Go structs have no json tags, so every key is the Go field name: "Pod", "Nodes",
//     "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error", "Host", "Score",
//     "PodName", "PodNamespace", "PodUID", "Node".
//   - Go's encoding/json matches keys case-insensitively when it decodes (an exact match wins)
//     and ignores keys it does not know; the readers here do the same, so whatever
//     kube-scheduler's decoder would accept of us, we accept of it.
//   - Pointers are null when unset: ExtenderArgs carries the candidate nodes either as full
//     v1.Node objects (Nodes, a v1.NodeList) when the extender is configured without
//     nodeCacheCapable, or as names only (NodeNames) when it is. A filter result answers in the
//     same form it was asked in: kube-scheduler reads NodeNames back only from a nodeCacheCapable
//     extender, and Nodes otherwise.
//   - Scores are 0..kMaxExtenderPriority (10); kube-scheduler multiplies them by the extender's
//     weight and by MaxNodeScore / MaxExtenderPriority (100 / 10).
//   - kube-scheduler treats any status but 200 as a failure and does not read the body then; an
//     answer of 200 whose Error is set fails the call with that text. Errors of the request
//     itself (not JSON, not an ExtenderArgs) are still answered 400 with Error set, for people
//     and logs.
// Only the three verbs accel serves: filter, prioritize and bind (no preempt).
//
// Plain data and pure functions; thread-safe. Readers throw InputError and nothing else.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace accel::fleet {

/// extenderv1.MaxExtenderPriority: the highest score prioritize may give.
inline constexpr int64_t kMaxExtenderPriority = 10;

/// ExtenderArgs: the pod and the candidate nodes, for filter and prioritize.
struct ExtenderArgs {
  nlohmann::json pod;  ///< the v1.Pod, as sent (an object)
  /// The candidate node names, in the order sent (from NodeNames, or from Nodes.items[].metadata.name).
  std::vector<std::string> node_names;
  /// True when the nodes came as NodeNames (an extender with nodeCacheCapable: true).
  bool node_cache_capable = false;
  /// With full nodes (Nodes): the v1.Node objects as sent, in node_names order.
  std::vector<nlohmann::json> nodes;
};

/// ExtenderFilterResult: the nodes that pass and why each other one does not.
struct ExtenderFilterResult {
  /// Answer with NodeNames (true) or with Nodes (false): as the arguments came.
  bool node_cache_capable = false;
  std::vector<std::string> node_names;  ///< the nodes that pass (NodeNames form)
  std::vector<nlohmann::json> nodes;    ///< the nodes that pass, objects as sent (Nodes form)
  /// Nodes that do not pass now, each with its reason (kube-scheduler's preemption may help).
  std::map<std::string, std::string> failed_nodes;
  /// Nodes that do not pass and preemption would not change that (not a fleet host, disabled,
  /// stale, or a pod whose request breaks the contract).
  std::map<std::string, std::string> failed_and_unresolvable_nodes;
  std::string error;  ///< a failure of the whole call; "" = none
};

/// HostPriority: one node's score, 0..kMaxExtenderPriority.
struct HostPriority {
  std::string host;
  int64_t score = 0;
};

/// ExtenderBindingArgs: bind pod PodNamespace/PodName (PodUID) to Node.
struct ExtenderBindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};

/// Reads the body of a filter or prioritize call. Throws InputError ("extender args: FIELD:
/// problem") for text that is not JSON, not an object, a Pod that is not an object, no Nodes and
/// no NodeNames, a node without metadata.name, or a value of the wrong type.
ExtenderArgs ReadExtenderArgs(std::string_view body);

/// Reads the body of a bind call. Throws InputError for text that is not JSON, not an object, or a
/// field that is missing, empty or not a string.
ExtenderBindingArgs ReadExtenderBindingArgs(std::string_view body);

/// {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}: Nodes is
/// {"metadata": {}, "items": [...]} and NodeNames null in the Nodes form, the reverse in the
/// NodeNames form.
nlohmann::ordered_json FilterResultJson(const ExtenderFilterResult& result);

/// [{"Host", "Score"}, ...] (HostPriorityList).
nlohmann::ordered_json PriorityListJson(const std::vector<HostPriority>& priorities);

/// {"Error": error} (ExtenderBindingResult; also what any call answers when it fails as a whole).
nlohmann::ordered_json ErrorResultJson(const std::string& error);

}  // namespace accel::fleet
