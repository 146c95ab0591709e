// NetworkStack (network_stack.h): Network Operator objects per RDMA group and the guest NCCL files.
#include "cluster/network_stack.h"

#include <cstdio>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/strings.h"
#include "fabric/network_configs.h"
#include "fabric/pairing.h"
#include "fabric/training_env.h"
#include "common/yaml_out.h"
#include "placement/libvirt_pci_layout.h"
#include "placement/placement.h"
#include "topology/classify.h"

namespace accel::cluster {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kNetworkApi = "mellanox.com/v1alpha1";
// The operator reconciles only the NicClusterPolicy of this name (its singleton).
constexpr const char* kNicClusterPolicyName = "nic-cluster-policy";
// Image names of the Network Operator's components (its example CRs, shared/peers/sriov-rdma/
// network-operator/*_cr-full.yaml); repository and version come from NetworkConfigOptions.
constexpr const char* kDocaDriverImage = "doca-driver";
constexpr const char* kSriovPluginImage = "sriov-network-device-plugin";
constexpr const char* kRdmaSharedPluginImage = "k8s-rdma-shared-dev-plugin";
constexpr const char* kMultusImage = "multus-cni";
constexpr const char* kCniPluginsImage = "plugins";
constexpr const char* kNvIpamImage = "nvidia-k8s-ipam";
// Where a HostDeviceNetwork's NetworkAttachmentDefinition goes: the namespace of the pods that
// attach to it. The template does not say where training pods run.
constexpr const char* kPodNamespace = "default";

// "h100-train" → "h100_train": the device plugins accept resource names of [A-Za-z0-9_] only
// (Mellanox/k8s-rdma-shared-dev-plugin validResourceName; the SR-IOV plugin's rule is the same).
std::string PluginName(const std::string& group) {
  std::string out = group;
  for (char& c : out)
    if (c == '-') c = '_';
  return out;
}

std::string PoolName(const NodeGroup& g) { return g.name + "-rdma"; }

Json Component(const char* image, const fabric::NetworkConfigOptions& o) {
  return Json{{"image", image}, {"repository", o.repository}, {"version", o.version}};
}

// Tolerations for `groups`' taints (key, effect; any value), so the operator's DaemonSets run on
// nodes that repel ordinary pods. Sorted, each once.
Json TolerationsFor(const std::vector<const NodeGroup*>& groups) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const NodeGroup* g : groups)
    for (const Taint& t : g->taints) seen.insert({t.key, std::string(TaintEffectName(t.effect))});
  Json out = Json::array();
  for (const auto& [key, effect] : seen) out.push_back({{"key", key}, {"operator", "Exists"}, {"effect", effect}});
  return out;
}

Json ObjectLabels(const ClusterTemplate& t, const std::string& group) {
  Json labels = {{"app.kubernetes.io/managed-by", "accel"}, {"app.kubernetes.io/part-of", t.name}};
  if (!group.empty()) labels[kNodeGroupLabel] = group;
  return labels;
}

// The vendor and device ids of `nics`, each once, sorted: the guest sees each passed function
// with its host ids (a VF keeps its VF device id).
void Ids(const std::vector<const kubelet::GuestDevice*>& nics, Json* vendors, Json* devices) {
  std::set<std::string> v, d;
  for (const kubelet::GuestDevice* n : nics) {
    v.insert(Hex4(n->vendor_id));
    d.insert(Hex4(n->device_id));
  }
  *vendors = Json(std::vector<std::string>(v.begin(), v.end()));
  *devices = Json(std::vector<std::string>(d.begin(), d.end()));
}

std::string Dump(const Json& doc) { return doc.dump(2) + "\n"; }

bool AllMellanox(const std::vector<const kubelet::GuestDevice*>& nics) {
  for (const kubelet::GuestDevice* n : nics)
    if (n->vendor_id != topology::kVendorMellanox) return false;
  return !nics.empty();
}

// SR-IOV network device plugin config (k8snetworkplumbingwg/sriov-network-device-plugin
// pkg/types; selectors as a list, the plugin's current form, as network_configs.h writes it).
std::string SriovConfig(const NodeGroup& g, const std::vector<const kubelet::GuestDevice*>& nics,
                        const fabric::NetworkConfigOptions& o) {
  Json vendors, devices;
  Ids(nics, &vendors, &devices);
  Json selector = {{"vendors", vendors}, {"devices", devices}, {"isRdma", true}};
  Json resource = {{"resourceName", PluginName(g.name) + "_rdma"},
                   {"resourcePrefix", o.resource_prefix},
                   {"deviceType", "netDevice"},
                   {"selectors", Json::array({selector})}};
  return Dump({{"resourceList", Json::array({resource})}});
}

// RDMA shared device plugin config (Mellanox/k8s-rdma-shared-dev-plugin pkg/types: selectors
// vendors, deviceIDs).
std::string RdmaSharedConfig(const NodeGroup& g, const std::vector<const kubelet::GuestDevice*>& nics,
                             const fabric::NetworkConfigOptions& o) {
  Json vendors, devices;
  Ids(nics, &vendors, &devices);
  Json resource = {{"resourceName", PluginName(g.name) + "_shared"},
                   {"resourcePrefix", o.rdma_prefix},
                   {"rdmaHcaMax", o.rdma_hca_max},
                   {"selectors", {{"vendors", vendors}, {"deviceIDs", devices}}}};
  return Dump({{"configList", Json::array({resource})}});
}

Json NicNodePolicy(const ClusterTemplate& t, const NodeGroup& g, const std::vector<const kubelet::GuestDevice*>& nics,
                   const fabric::NetworkConfigOptions& o) {
  Json spec = {{"nodeSelector", {{kNodeGroupLabel, g.name}}}};
  const std::string& driver = t.operators.network.driver_version;
  if (!driver.empty() && AllMellanox(nics)) {
    // The DOCA driver container builds mlx5 for the guest's kernel; without a version the
    // guest's inbox mlx5_core/mlx5_ib (in every distribution kernel) drive the NICs. It drives
    // ConnectX/BlueField only: another vendor's NICs (Broadcom bnxt_re, ...) keep their driver.
    Json ofed = {{"image", kDocaDriverImage}, {"repository", o.repository}, {"version", driver}};
    ofed["upgradePolicy"] = {{"autoUpgrade", true},
                             {"maxParallelUpgrades", 1},
                             {"drain", {{"enable", true}, {"force", true}, {"deleteEmptyDir", true}, {"timeoutSeconds", 300}}}};
    spec["ofedDriver"] = ofed;
  }
  if (g.network.rdma == RdmaMode::kSriov) {
    Json plugin = Component(kSriovPluginImage, o);
    plugin["config"] = SriovConfig(g, nics, o);
    spec["sriovDevicePlugin"] = plugin;
  } else {
    Json plugin = Component(kRdmaSharedPluginImage, o);
    plugin["config"] = RdmaSharedConfig(g, nics, o);
    spec["rdmaSharedDevicePlugin"] = plugin;
  }
  Json tolerations = TolerationsFor({&g});
  if (!tolerations.empty()) spec["tolerations"] = tolerations;
  return {{"apiVersion", kNetworkApi},
          {"kind", "NicNodePolicy"},
          {"metadata", {{"name", g.name + "-rdma"}, {"labels", ObjectLabels(t, g.name)}}},
          {"spec", spec}};
}

Json HostDeviceNetwork(const ClusterTemplate& t, const NodeGroup& g) {
  const std::string ipam = Dump({{"type", "nv-ipam"}, {"poolName", PoolName(g)}});
  return {{"apiVersion", kNetworkApi},
          {"kind", "HostDeviceNetwork"},
          {"metadata", {{"name", g.name + "-rdma"}, {"labels", ObjectLabels(t, g.name)}}},
          {"spec", {{"networkNamespace", kPodNamespace}, {"resourceName", RdmaResourceName(g)}, {"ipam", ipam}}}};
}

Json NicClusterPolicy(const ClusterTemplate& t, const std::vector<const NodeGroup*>& groups,
                      const fabric::NetworkConfigOptions& o) {
  std::vector<std::string> names;
  for (const NodeGroup* g : groups) names.push_back(g->name);
  Json ipam = Component(kNvIpamImage, o);
  ipam["enableWebhook"] = false;
  Json term = {{"matchExpressions", Json::array({{{"key", kNodeGroupLabel}, {"operator", "In"}, {"values", names}}})}};
  Json spec = {{"secondaryNetwork", {{"multus", Component(kMultusImage, o)}, {"cniPlugins", Component(kCniPluginsImage, o)}}},
               {"nvIpam", ipam},
               {"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", Json::array({term})}}}}}};
  Json tolerations = TolerationsFor(groups);
  if (!tolerations.empty()) spec["tolerations"] = tolerations;
  return {{"apiVersion", kNetworkApi},
          {"kind", "NicClusterPolicy"},
          {"metadata", {{"name", kNicClusterPolicyName}, {"labels", ObjectLabels(t, "")}}},
          {"spec", spec}};
}

// Why a group with rdma set gets no Network Operator objects; "" when it gets them.
std::string WhyNoNetworkObjects(const NodeGroup& g, const GroupPlan& gp) {
  if (g.vendor == Vendor::kHabana)
    return "its Gaudi HPUs carry their own RoCE ports, which reach pods with habana.ai/gaudi";
  if (RdmaNicsOf(gp.layout).empty())
    return "flavor " + g.flavor_name + " passes no RDMA NIC through (add a NIC alias to pci_passthrough:alias)";
  return "";
}

bool IsGpu(const kubelet::GuestDevice& d) { return d.role == topology::PciRole::kGpu; }

// The file header of a YAML file; `lines` become comment lines.
std::string Header(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += "# " + l + "\n";
  return out;
}

// A StackPart being built: its objects are kept per file so they come out in file order.
struct PartBuilder {
  StackPart part;
  std::map<std::string, std::vector<Json>> objects;

  void Add(const std::string& file, const std::string& header, const Json& object) {
    part.files[file] = header + ToYaml(object);
    objects[file] = {object};
  }
  StackPart Finish() {
    for (auto& [file, list] : objects)
      for (Json& o : list) part.objects.push_back(std::move(o));
    return std::move(part);
  }
};

// ---------------------------------------------------------------------------------------------
// NCCL

// Host RDMA NICs the pairing may use: the passed-through ones and the PFs of passed-through VFs.
// Every other RDMA NIC of the host is excluded, so each guest GPU pairs with a NIC the guest has.
std::vector<std::string> NicsNotInGuest(const topology::HostTopology& host, const kubelet::GuestLayout& layout) {
  std::set<std::string> kept;
  for (const kubelet::GuestDevice* n : RdmaNicsOf(layout)) {
    kept.insert(n->host_address);
    if (const topology::PciDevice* dev = host.FindPci(n->host_address); dev && dev->is_vf()) kept.insert(dev->physfn);
  }
  std::vector<std::string> out;
  for (const topology::PciDevice& d : host.pci)
    if (d.is_rdma() && !kept.count(d.address)) out.push_back(d.address);
  return out;
}

std::string EnvFile(const NodeGroup& g, const fabric::TrainingSettings& s, const std::vector<std::string>& notes) {
  const std::string topo = kGuestNcclTopoPath;
  std::string out =
      "# NCCL settings for the pods of node group " + g.name + " (written by accel cluster plan).\n"
      "# NAME=value lines: kubectl create configmap nccl-" + g.name + " --from-env-file=nccl.env, envFrom it in\n"
      "# the training container, and mount nccl-topo.xml (a ConfigMap too) at " + topo + ".\n"
      "# NCCL_IB_HCA is not set: the guest's only RDMA devices are the group's NICs, named at boot, and\n"
      "# the topology file pairs each GPU with its NIC by PCI address.\n";
  for (const fabric::EnvVar& e : s.env) {
    if (e.name.rfind("NCCL_", 0) != 0 && e.name != "CUDA_DEVICE_ORDER") continue;  // UCX needs per-rank names
    if (e.name == "NCCL_IB_HCA") continue;
    out += "# " + e.why + "\n" + e.name + "=" + e.value + "\n";
  }
  for (const std::string& w : s.warnings)
    if (w.find("NCCL_IB_HCA") == std::string::npos) out += "# warning: " + w + "\n";
  for (const std::string& n : notes) out += "# note: " + n + "\n";
  return out;
}

void AddNcclFiles(const NodeGroup& g, const GroupPlan& gp, StackPart* part) {
  if (g.vendor != Vendor::kNvidia && g.vendor != Vendor::kAmd) return;  // HCCL (Gaudi) reads no NCCL file
  const kubelet::GuestLayout& layout = gp.layout;
  const std::vector<const kubelet::GuestDevice*> nics = RdmaNicsOf(layout);
  std::vector<std::string> gpus;
  for (const kubelet::GuestDevice& d : layout.devices)
    if (IsGpu(d)) gpus.push_back(d.host_address);
  if (gpus.empty() || nics.empty() || !g.hypervisor) return;
  const topology::HostTopology& host = *g.hypervisor;
  for (const kubelet::GuestDevice& d : layout.devices)
    if (!host.FindPci(d.host_address))
      throw InputError("plan", "groups." + g.name + ".layout",
                       "device " + d.host_address + " is not a device of hypervisor " + host.hostname,
                       "plan the group on the hypervisor its layout was placed on");
  fabric::PairingOptions pairing;
  pairing.gpus = gpus;
  pairing.exclude = NicsNotInGuest(host, layout);
  const fabric::Fabric fabric = fabric::PairGpusWithNics(host, {}, pairing);
  fabric::GuestDeviceMap view = GuestPciView(layout);
  std::vector<std::string> warnings = view.notes;
  // Devices without a fixed guest address stay out of the file (the writer would refuse a GPU
  // without one); NCCL adds them from what the guest shows it.
  std::vector<fabric::GuestDevice> addressed;
  bool any_gpu = false;
  for (const fabric::GuestDevice& d : view.devices) {
    if (d.guest_address.empty()) continue;
    addressed.push_back(d);
    const topology::PciDevice* dev = host.FindPci(d.host_address);
    any_gpu = any_gpu || (dev && dev->role == topology::PciRole::kGpu);
  }
  if (!any_gpu) return;
  view.devices = std::move(addressed);
  const std::string xml = fabric::WriteNcclTopologyXml(host, fabric, view, {}, &warnings);
  fabric::TrainingOptions training;
  training.topo_file = kGuestNcclTopoPath;
  training.accelerator_vendor = g.vendor == Vendor::kAmd ? "amd" : "nvidia";
  const fabric::TrainingSettings settings = fabric::BuildTrainingSettings(fabric, training);
  part->files[g.name + "/nccl/nccl-topo.xml"] = xml;
  part->files[g.name + "/nccl/nccl.env"] = EnvFile(g, settings, warnings);
}

}  // namespace

std::vector<const kubelet::GuestDevice*> RdmaNicsOf(const kubelet::GuestLayout& layout) {
  std::vector<const kubelet::GuestDevice*> out;
  for (const kubelet::GuestDevice& d : layout.devices)
    if (d.role == topology::PciRole::kNic && d.rdma) out.push_back(&d);
  return out;
}

std::string RdmaResourceName(const NodeGroup& group) {
  const fabric::NetworkConfigOptions o;
  switch (group.network.rdma) {
    case RdmaMode::kSriov:
      return o.resource_prefix + "/" + PluginName(group.name) + "_rdma";
    case RdmaMode::kShared:
      return o.rdma_prefix + "/" + PluginName(group.name) + "_shared";
    case RdmaMode::kNone:
      break;
  }
  return "";
}

fabric::GuestDeviceMap GuestPciView(const kubelet::GuestLayout& layout) {
  const bool expanders = layout.device_cells == kubelet::DeviceCellSource::kExpanderBus;
  // The placement the layout came from, as far as the PCI layout reads it (cells, devices and
  // their guest cells, in the same order), so the buses come out as the domain XML has them.
  placement::Placement p;
  p.flavor = layout.flavor;
  for (const kubelet::GuestCellLayout& c : layout.cells) {
    placement::CellPlacement cp;
    cp.guest_cell = c.cell;
    cp.host_node = c.host_node;
    p.cells.push_back(cp);
  }
  for (const kubelet::GuestDevice& d : layout.devices) {
    placement::DevicePlacement dp;
    dp.address = d.host_address;
    dp.guest_cell = expanders ? d.guest_cell : -1;
    p.devices.push_back(dp);
  }
  const placement::GuestPciLayout pci = expanders ? placement::LayoutGuestPci(p) : placement::FlatGuestPci(p);
  std::map<int, int> bus_of_port;  // root port controller index → the guest bus behind it
  for (const placement::ExpanderBus& e : pci.expanders)
    for (size_t k = 0; k < e.root_port_indexes.size(); ++k)
      bus_of_port[e.root_port_indexes[k]] = e.bus_nr + 1 + static_cast<int>(k);

  fabric::GuestDeviceMap view;
  view.domain = layout.flavor;
  view.guest_cells = static_cast<int>(layout.cells.size());
  view.vcpus = layout.vcpus;
  for (const kubelet::GuestCellLayout& c : layout.cells) {
    view.cell_host_node.push_back(c.host_node);
    view.cell_cpus.push_back(c.vcpus);
  }
  for (size_t i = 0; i < layout.devices.size(); ++i) {
    fabric::GuestDevice d;
    d.host_address = layout.devices[i].host_address;
    d.guest_cell = expanders ? layout.devices[i].guest_cell : -1;
    auto it = bus_of_port.find(pci.device_bus[i]);
    if (it != bus_of_port.end()) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "0000:%02x:00.0", it->second);
      d.guest_address = buf;
    } else {
      view.notes.push_back("device " + d.host_address +
                           " has no guest cell, so no fixed guest address: left out of the "
                           "NCCL topology (NCCL adds it from the guest's own view)");
    }
    view.devices.push_back(d);
  }
  return view;
}

StackPart NetworkStack(const ClusterTemplate& t, const ClusterPlan& plan) {
  PartBuilder out;
  const fabric::NetworkConfigOptions options;
  std::vector<const NodeGroup*> rdma_groups;
  std::vector<std::string> skipped;
  for (const GroupPlan& gp : plan.groups) {
    const NodeGroup* g = t.FindGroup(gp.group);
    if (!g)
      throw InputError("plan", "groups", "node group " + gp.group + " is not in template " + t.name,
                       "plan the template the stack is generated for");
    AddNcclFiles(*g, gp, &out.part);
    if (g->network.rdma == RdmaMode::kNone) continue;
    const std::string why = WhyNoNetworkObjects(*g, gp);
    if (!why.empty()) {
      skipped.push_back(g->name + " (rdma: " + std::string(RdmaModeName(g->network.rdma)) + "): " + why);
      continue;
    }
    rdma_groups.push_back(g);
    const std::vector<const kubelet::GuestDevice*> nics = RdmaNicsOf(gp.layout);
    const std::string resource = RdmaResourceName(*g);
    out.Add(g->name + "/network/nic-node-policy.yaml",
              Header({"Node group " + g->name + ": its RDMA NICs as " + resource + " (rdma: " +
                          std::string(RdmaModeName(g->network.rdma)) + ", " + std::to_string(nics.size()) +
                          " NIC(s) per node), for the NVIDIA Network Operator.",
                      "Selected by vendor/device id: inside the guest each passed-through function is a plain",
                      "PCI device. Written by accel cluster plan."}),
              NicNodePolicy(t, *g, nics, options));
    if (g->network.rdma == RdmaMode::kSriov)
      out.Add(g->name + "/network/host-device-network.yaml",
                Header({"Node group " + g->name + ": the pod network on " + resource +
                            " (host-device CNI moves the NIC's netdev into the pod).",
                        "Pods attach with the annotation k8s.v1.cni.cncf.io/networks: " + g->name + "-rdma and request " +
                            resource + ": 1.",
                        "Create the nv-ipam IPPool \"" + PoolName(*g) + "\" with the RDMA subnet first; pods in other",
                        "namespaces than " + std::string(kPodNamespace) + " need networkNamespace changed."}),
                HostDeviceNetwork(t, *g));
  }
  if (!rdma_groups.empty()) {
    std::vector<std::string> header = {
        "Cluster-wide pieces of the NVIDIA Network Operator for the RDMA node groups of " + t.name + ":",
        "Multus, the CNI plugins and nv-ipam. Each group's device plugin (and DOCA driver) is in its own",
        "NicNodePolicy (<group>/network/nic-node-policy.yaml); a section never sits in both kinds.",
        "Written by accel cluster plan."};
    for (const std::string& s : skipped) header.push_back("No Network Operator objects for " + s + ".");
    out.Add("stack/network/nic-cluster-policy.yaml", Header(header), NicClusterPolicy(t, rdma_groups, options));
  }
  return out.Finish();
}

}  // namespace accel::cluster
