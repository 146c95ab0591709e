// StackPart: what one generator of `accel cluster plan` adds to a cluster's files — the vendor
// GPU stack (vendor_stack.h), the network stack and the guest NCCL topology (network_stack.h),
// monitoring (monitoring_stack.h), the Cluster API objects and Magnum lines (cluster_api.h).
//
// Each generator is a pure function of the loaded template and its plan, returning a StackPart;
// PlanFiles merges the parts (a file name two parts both write is a bug, reported as an internal
// error), and the node labels of every part reach the nodes through the Cluster API objects'
// nodeRegistration.kubeletExtraArgs / the Magnum labels, and `accel cluster check` reads the
// objects to find two operator objects selecting the same nodes.
//
// Plain data.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace accel::cluster {

/// Labels on a group's nodes: label key -> value.
using NodeLabels = std::map<std::string, std::string>;

struct StackPart {
  /// Files relative to the plan's output directory (e.g. "stack/nvidia/cluster-policy.yaml",
  /// "<group>/cluster-api.yaml") -> their content. Kubernetes objects are YAML, one or more
  /// documents per file, each valid against shared/crds (validate.py).
  std::map<std::string, std::string> files;
  /// Node labels the part needs on each group's nodes (group name -> labels), e.g.
  /// nvidia.com/mig.config=all-1g.10gb; every group also gets kNodeGroupLabel (template.h) from
  /// the plan itself, so parts need not add it.
  std::map<std::string, NodeLabels> node_labels;
  /// Every Kubernetes object the part's files hold, in file order, as JSON (for checks).
  std::vector<nlohmann::ordered_json> objects;
};

}  // namespace accel::cluster
