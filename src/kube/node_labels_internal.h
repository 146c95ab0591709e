// Pieces shared by node_labels.cc (NVIDIA, file writer) and node_labels_vendors.cc (AMD, Gaudi,
// accel.io host facts). Internal to the kube layer; pure functions, thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kube/node_devices.h"
#include "topology/host.h"

namespace accel::kube {

/// Labels under construction, keyed (so unique and sorted).
using LabelMap = std::map<std::string, std::string>;

/// GFD's sanitising (whitespace-separated words joined by '-'), extended to every character a
/// label value may not hold, cut to 63 characters with alphanumeric ends.
std::string SanitizeLabelValue(const std::string& s);

/// amd.com/gpu.* (the ROCm node labeller's names and homogeneous/heterogeneous rule).
void AddAmdLabels(const std::vector<NodeDevice>& devices, const topology::HostTopology& host,
                  LabelMap* labels);
/// habana.ai/* (Habana Feature Discovery's names).
void AddGaudiLabels(const std::vector<NodeDevice>& devices, const topology::HostTopology& host,
                    LabelMap* labels);
/// accel.io/* facts from the topology model (omitted when `host` is empty) and the devices.
void AddHostLabels(const std::vector<NodeDevice>& devices, const topology::HostTopology& host,
                   LabelMap* labels);

}  // namespace accel::kube
