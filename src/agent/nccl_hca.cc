#include "agent/nccl_hca.h"

#include <exception>
#include <filesystem>

namespace accel::agent {

kube::NcclHcaMap NcclHcaMapOf(const fabric::Fabric& fabric) {
  kube::NcclHcaMap out;
  for (const fabric::GpuNicPair& p : fabric.pairs) {
    if (p.nic < 0 || static_cast<size_t>(p.nic) >= fabric.nics.size()) continue;
    const fabric::FabricNic& nic = fabric.nics[p.nic];
    out[p.gpu_address] = nic.rdma_device + ":" + std::to_string(nic.port);
  }
  return out;
}

kube::NcclHcaMap ComputeNcclHcaMap(const topology::HostTopology& host,
                                   const std::vector<fabric::NicPort>& ports,
                                   std::vector<std::string>* notes) {
  try {
    // Default options: the same answer `accel fabric pairs` and `accel fabric env` give on this
    // node, so a pod's NCCL_IB_HCA and the generated job specs agree.
    fabric::Fabric f = fabric::PairGpusWithNics(host, ports);
    if (notes) notes->insert(notes->end(), f.notes.begin(), f.notes.end());
    return NcclHcaMapOf(f);
  } catch (const std::exception& e) {
    // Only a requested GPU that is not on the host throws, and none is requested; keep the
    // agent serving without the variable rather than failing start-up.
    if (notes) notes->push_back(std::string("GPU/NIC pairing failed: ") + e.what());
    return {};
  }
}

kube::NcclHcaMap NcclHcaMapForNode(const topology::HostTopology& host,
                                   const std::string& topology_spec,
                                   const std::function<void(const std::string&)>& log) {
  std::string root;
  if (topology_spec == "live") {
    root = "/";
  } else if (topology_spec.rfind("sysfs:", 0) == 0) {
    root = topology_spec.substr(6);
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(topology_spec, ec)) root = topology_spec;
  }
  std::vector<fabric::NicPort> ports;
  std::vector<std::string> notes;
  try {
    if (!root.empty()) ports = fabric::ReadNicPorts(root);
  } catch (const std::exception& e) {  // a sysfs that vanishes under the directory walk
    notes.push_back(std::string("RDMA ports unreadable, every port counted as up: ") + e.what());
    root.clear();
  }
  kube::NcclHcaMap map = ComputeNcclHcaMap(host, ports, &notes);
  if (log) {
    log("device plugin: NCCL_IB_HCA from the GPU/NIC pairing: " + std::to_string(map.size()) +
        " accelerator(s) paired with a NIC" +
        (root.empty() ? " (no RDMA port states: every port counted as up)" : ""));
    for (const std::string& n : notes) log("device plugin: pairing: " + n);
  }
  return map;
}

}  // namespace accel::agent
