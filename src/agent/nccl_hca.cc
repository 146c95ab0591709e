#include "agent/nccl_hca.h"

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

kube::NcclHcaMap NcclHcaMapForNode(const dra::NodeHardware& node,
                                   const std::function<void(const std::string&)>& log) {
  kube::NcclHcaMap map = NcclHcaMapOf(node.pairing);
  if (log) {
    log("device plugin: NCCL_IB_HCA from the GPU/NIC pairing: " + std::to_string(map.size()) +
        " accelerator(s) paired with a NIC" +
        (node.rdma_root.empty() ? " (no RDMA port states: every port counted as up)" : ""));
    for (const std::string& n : node.pairing.notes) log("device plugin: pairing: " + n);
  }
  return map;
}

}  // namespace accel::agent
