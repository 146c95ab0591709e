#include "fabric/fabric_json.h"

namespace accel::fabric {

using nlohmann::ordered_json;

ordered_json NicToJson(const FabricNic& nic) {
  ordered_json out;
  out["rdma_device"] = nic.rdma_device;
  out["port"] = nic.port;
  out["pci_address"] = nic.pci_address;
  out["netdev"] = nic.netdev;
  out["numa_node"] = nic.numa_node;
  out["link_layer"] = nic.link_layer;
  out["state"] = nic.state;
  out["rate_gbps"] = nic.rate_gbps;
  out["vf"] = nic.is_vf;
  return out;
}

ordered_json PathToJson(const PathInfo& path) {
  ordered_json out;
  out["nccl"] = PathTypeName(path.type);
  out["smi"] = path.smi;
  out["bandwidth_gbs"] = path.bandwidth_gbs;
  out["hops"] = path.hops;
  if (path.numa_unknown) out["numa_unknown"] = true;
  return out;
}

ordered_json FabricToJson(const Fabric& fabric) {
  std::vector<char> used(fabric.nics.size(), 0);
  ordered_json pairs = ordered_json::array();
  for (const GpuNicPair& p : fabric.pairs) {
    ordered_json item;
    item["gpu"] = p.gpu_address;
    item["index"] = p.gpu_index;
    item["numa_node"] = p.numa_node;
    bool has_nic = p.nic >= 0 && p.nic < static_cast<int>(fabric.nics.size());
    item["nic"] = has_nic ? NicToJson(fabric.nics[p.nic]) : ordered_json(nullptr);
    item["path"] = has_nic ? PathToJson(p.path) : ordered_json(nullptr);
    if (has_nic) used[p.nic] = 1;
    pairs.push_back(std::move(item));
  }
  ordered_json nics = ordered_json::array();
  for (size_t i = 0; i < fabric.nics.size(); ++i) {
    ordered_json item = NicToJson(fabric.nics[i]);
    item["used"] = used[i] != 0;
    item["excluded"] = fabric.nics[i].excluded.empty() ? ordered_json(nullptr)
                                                       : ordered_json(fabric.nics[i].excluded);
    nics.push_back(std::move(item));
  }
  ordered_json out;
  out["schema"] = "accel.fabric-pairs/v1";
  out["pairs"] = std::move(pairs);
  out["nics"] = std::move(nics);
  out["notes"] = fabric.notes;
  return out;
}

}  // namespace accel::fabric
