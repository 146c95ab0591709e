// Node labels in node-feature-discovery's feature-file format (key=value lines in
// /etc/kubernetes/node-feature-discovery/features.d/<name>): NVIDIA GPU Feature Discovery's
// names (nvidia.com/gpu.product, gpu.memory, gpu.count, gpu.replicas, gpu.sharing-strategy
// none|time-slicing|mps, mps.capable, mig.strategy, mig-<profile>.count, ...), AMD's
// amd.com/gpu.* and Habana's habana.ai/* equivalents, plus accel's own (accel.io/numa-nodes,
// hugepages, RDMA NICs).
//
// Pure functions plus an atomic file write; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kube/node_devices.h"
#include "kube/plugin_config.h"
#include "kube/resources.h"
#include "topology/host.h"

namespace accel::kube {

/// Ordered label list (key, value); keys unique.
using Labels = std::vector<std::pair<std::string, std::string>>;

/// Labels for this node. `resources` is BuildResources' answer for the same devices/config (for
/// replicas and MIG counts). Values are valid Kubernetes label values (≤ 63 chars,
/// [A-Za-z0-9._-], sanitised like GFD: spaces → '-').
Labels NodeLabels(const std::vector<NodeDevice>& devices, const PluginConfig& config,
                  const std::vector<PluginResource>& resources,
                  const topology::HostTopology& host);

/// "key=value\n" per label.
std::string FormatFeatureFile(const Labels& labels);

/// Writes FormatFeatureFile(labels) to `path` with WriteFileAtomically (a hidden temporary name
/// NFD skips, then rename), creating the directory if needed. Throws SystemError naming the path.
void WriteFeatureFile(const std::string& path, const Labels& labels);

}  // namespace accel::kube
