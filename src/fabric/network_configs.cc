#include "fabric/network_configs.h"

#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "common/yaml_out.h"
#include "topology/classify.h"

namespace accel::fabric {

namespace {

using Json = nlohmann::ordered_json;
using topology::HostTopology;
using topology::PciDevice;

// Used NICs, each once, PCI order (fabric.nics is in PCI order): rail k is out[k].
std::vector<const FabricNic*> Rails(const Fabric& fabric) {
  std::set<int> used;
  for (const GpuNicPair& p : fabric.pairs)
    if (p.nic >= 0 && static_cast<size_t>(p.nic) < fabric.nics.size()) used.insert(p.nic);
  std::vector<const FabricNic*> out;
  for (int i : used) out.push_back(&fabric.nics[i]);
  return out;
}

std::string RailName(const std::string& pattern, int k) {
  const size_t pct = pattern.find("%d");
  if (pct == std::string::npos) return pattern + std::to_string(k);
  return pattern.substr(0, pct) + std::to_string(k) + pattern.substr(pct + 2);
}

// The plugins' linkTypes values; "" when unknown.
std::string LinkType(const FabricNic& nic, const PciDevice* dev) {
  if (nic.link_layer == "InfiniBand") return "infiniband";
  if (nic.link_layer == "Ethernet") return "ether";
  if (dev && dev->class_id == 0x0207) return "infiniband";  // InfiniBand controller class
  return "";
}

// VF device id of Mellanox PFs whose VFs are the mlx5 "Virtual Function" of that family.
std::string KnownVfDevice(uint16_t pf_device) {
  static const std::map<uint16_t, uint16_t> kVf = {
      {0x1013, 0x1014},  // ConnectX-4
      {0x1015, 0x1016},  // ConnectX-4 Lx
      {0x1017, 0x1018},  // ConnectX-5
      {0x1019, 0x101a},  // ConnectX-5 Ex
      {0x101b, 0x101c},  // ConnectX-6
      {0x101d, 0x101e},  // ConnectX-6 Dx
      {0x101f, 0x101e},  // ConnectX-6 Lx
      {0x1021, 0x101e},  // ConnectX-7
      {0xa2d6, 0x101e},  // BlueField-2
      {0xa2dc, 0x101e},  // BlueField-3
  };
  auto it = kVf.find(pf_device);
  return it == kVf.end() ? "" : Hex4(it->second);
}

std::string VfDevice(const HostTopology& host, const PciDevice& pf) {
  for (const PciDevice& d : host.pci)
    if (d.physfn == pf.address && d.device_id != 0) return Hex4(d.device_id);
  return pf.vendor_id == topology::kVendorMellanox ? KnownVfDevice(pf.device_id) : "";
}

Json SriovSelector(const HostTopology& host, const FabricNic& nic) {
  const PciDevice* dev = host.FindPci(nic.pci_address);
  Json selector = Json::object();
  if (dev && dev->vendor_id) selector["vendors"] = Json::array({Hex4(dev->vendor_id)});
  if (nic.is_vf || (dev && dev->is_vf())) {
    // A VF in use is one device: select exactly it.
    if (dev && dev->device_id) selector["devices"] = Json::array({Hex4(dev->device_id)});
    selector["pciAddresses"] = Json::array({nic.pci_address});
  } else {
    const std::string vf = dev ? VfDevice(host, *dev) : "";
    if (!vf.empty()) selector["devices"] = Json::array({vf});
    selector["rootDevices"] = Json::array({nic.pci_address});
  }
  const std::string link = LinkType(nic, dev);
  if (!link.empty()) selector["linkTypes"] = Json::array({link});
  selector["isRdma"] = true;
  return selector;
}

std::string Dump(const Json& doc) { return doc.dump(2) + "\n"; }

}  // namespace

std::vector<std::string> RailResourceNames(const Fabric& fabric,
                                           const NetworkConfigOptions& options) {
  std::vector<std::string> names;
  const std::vector<const FabricNic*> rails = Rails(fabric);
  for (size_t k = 0; k < rails.size(); ++k)
    names.push_back(RailName(options.rail_name, static_cast<int>(k)));
  return names;
}

std::string RenderSriovDevicePluginConfig(const HostTopology& host, const Fabric& fabric,
                                          const NetworkConfigOptions& options) {
  Json list = Json::array();
  const std::vector<const FabricNic*> rails = Rails(fabric);
  for (size_t k = 0; k < rails.size(); ++k) {
    list.push_back({{"resourceName", RailName(options.rail_name, static_cast<int>(k))},
                    {"resourcePrefix", options.resource_prefix},
                    {"deviceType", "netDevice"},
                    {"selectors", Json::array({SriovSelector(host, *rails[k])})}});
  }
  return Dump({{"resourceList", list}});
}

std::string RenderRdmaSharedDevicePluginConfig(const Fabric& fabric,
                                               const NetworkConfigOptions& options) {
  Json list = Json::array();
  std::map<int, std::vector<std::string>> by_numa;
  const std::vector<const FabricNic*> rails = Rails(fabric);
  for (size_t k = 0; k < rails.size(); ++k) {
    const FabricNic& nic = *rails[k];
    if (nic.netdev.empty()) continue;  // ifNames is the only per-NIC selector it has
    list.push_back({{"resourceName", RailName(options.rail_name, static_cast<int>(k))},
                    {"resourcePrefix", options.rdma_prefix},
                    {"rdmaHcaMax", options.rdma_hca_max},
                    {"selectors", {{"ifNames", Json::array({nic.netdev})}}}});
    if (nic.numa_node >= 0) by_numa[nic.numa_node].push_back(nic.netdev);
  }
  if (options.per_numa) {
    for (const auto& [node, ifnames] : by_numa)
      list.push_back({{"resourceName", "rdma_numa" + std::to_string(node)},
                      {"resourcePrefix", options.rdma_prefix},
                      {"rdmaHcaMax", options.rdma_hca_max},
                      {"selectors", {{"ifNames", ifnames}}}});
  }
  return Dump({{"configList", list}});
}

std::string RenderNicClusterPolicy(const HostTopology& host, const Fabric& fabric,
                                   const NetworkConfigOptions& options) {
  auto component = [&](const char* image) {
    return Json{{"image", image}, {"repository", options.repository}, {"version", options.version}};
  };
  Json rdma = component("k8s-rdma-shared-dev-plugin");
  rdma["config"] = RenderRdmaSharedDevicePluginConfig(fabric, options);
  Json sriov = component("sriov-network-device-plugin");
  sriov["config"] = RenderSriovDevicePluginConfig(host, fabric, options);
  Json ipam = component("nvidia-k8s-ipam");
  ipam["enableWebhook"] = false;
  Json policy = {
      {"apiVersion", "mellanox.com/v1alpha1"},
      {"kind", "NicClusterPolicy"},
      {"metadata", {{"name", "nic-cluster-policy"}}},
      {"spec", {{"rdmaSharedDevicePlugin", rdma}, {"sriovDevicePlugin", sriov}, {"nvIpam", ipam}}}};
  return "# Generated by accel fabric netconf from the GPU<->NIC pairing of " + host.hostname +
         ".\n# One resource per rail (rail k = k-th NIC in use, PCI order); a pod asks for one "
         "of\n# each rail it needs. Keep the image versions of your Network Operator release.\n" +
         ToYaml(policy);
}

std::vector<std::string> NetworkConfigNotes(const HostTopology& host, const Fabric& fabric) {
  std::vector<std::string> notes;
  const std::vector<const FabricNic*> rails = Rails(fabric);
  if (rails.empty()) notes.push_back("no NIC is paired with a GPU: the configs are empty");
  std::set<std::string> layers;
  std::vector<std::string> no_netdev, no_sriov, no_vfs;
  for (const FabricNic* nic : rails) {
    const PciDevice* dev = host.FindPci(nic->pci_address);
    const std::string layer = LinkType(*nic, dev);
    if (!layer.empty()) layers.insert(layer);
    const bool vf = nic->is_vf || (dev && dev->is_vf());
    if (nic->netdev.empty()) no_netdev.push_back(nic->rdma_device);
    if (!vf && dev && dev->sriov_total_vfs == 0)
      no_sriov.push_back(nic->rdma_device);
    else if (!vf && dev && dev->sriov_num_vfs == 0)
      no_vfs.push_back(nic->rdma_device);
  }
  auto join = [](const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  if (!no_netdev.empty())
    notes.push_back("no netdev on " + join(no_netdev) +
                    ": the RDMA shared device plugin "
                    "selects by ifNames and leaves them out");
  if (!no_sriov.empty())
    notes.push_back("no SR-IOV capability reported by " + join(no_sriov) +
                    ": their SR-IOV "
                    "resources stay empty (enable SR-IOV in the NIC firmware first)");
  if (!no_vfs.empty())
    notes.push_back("no VFs yet on " + join(no_vfs) +
                    ": create them (SR-IOV Network Operator "
                    "SriovNetworkNodePolicy with numVfs and isRdma: true) before the SR-IOV "
                    "resources have devices");
  if (layers.size() > 1)
    notes.push_back("the NICs in use mix link layers; NCCL uses one kind per job");
  return notes;
}

}  // namespace accel::fabric
