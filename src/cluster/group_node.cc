#include "cluster/group_node.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "cluster/network_stack.h"
#include "cluster/vendor_stack.h"
#include "common/error.h"
#include "fabric/network_configs.h"
#include "sharing/mig_default_configs.h"
#include "sharing/mig_geometry.h"
#include "topology/classify.h"

namespace accel::cluster {

namespace {

using MigKind = sharing::DefaultMigConfigKind;

// (resource name, count) per GPU `d` of group `g` under its MIG config (NVIDIA's default config
// of that name for the GPU's model, check.h's sharing::DefaultMigConfig) and strategy.
std::vector<std::pair<std::string, int>> GpuUnits(const ClusterTemplate& t, size_t group_index, const NodeGroup& g,
                                                  const kubelet::GuestDevice& d, MigKind kind, bool mixed) {
  if (kind == MigKind::kNone || kind == MigKind::kDisabled) return {{"nvidia.com/gpu", 1}};
  const std::string field = "spec.nodeGroups[" + std::to_string(group_index) + "].sharing.mig";
  if (kind == MigKind::kUnknown)
    throw InputError(t.source, field,
                     "accel cluster pods knows what NVIDIA's default mig-parted configs advertise; '" + g.sharing.mig +
                         "' is not one",
                     "use all-disabled, all-enabled, all-balanced or all-<profile>");
  const uint32_t pci_id = (static_cast<uint32_t>(d.device_id) << 16) | d.vendor_id;
  const sharing::GpuModel* model = sharing::FindGpuModelByPciId(pci_id);
  if (model == nullptr) {
    char id[16];
    std::snprintf(id, sizeof id, "10de:%04x", d.device_id);
    throw InputError(t.source, field, "the group's GPU " + std::string(id) + " is not a MIG-capable model accel knows",
                     "use all-disabled, or a GPU of `accel mig profiles`");
  }
  std::string why;
  const std::optional<sharing::MigPartedConfig> config = sharing::DefaultMigConfig(g.sharing.mig, *model, &why);
  if (!config || config->configs.empty() || config->configs.front().entries.empty())
    throw InputError(t.source, field, why.empty() ? "no MIG layout for " + model->name : why, "see `accel mig profiles`");
  const sharing::MigConfigEntry& entry = config->configs.front().entries.front();
  if (!entry.mig_enabled) return {{"nvidia.com/gpu", 1}};
  std::vector<std::pair<std::string, int>> units;
  for (const auto& [profile, count] : entry.mig_devices) {
    if (count <= 0) continue;
    const std::optional<int> index = sharing::FindProfile(*model, profile);
    const std::string name = index ? model->profiles[static_cast<size_t>(*index)].name : profile;
    units.emplace_back(mixed ? sharing::MixedStrategyResource(name) : "nvidia.com/gpu", count);
  }
  return units;  // all-enabled: MIG on with no instances, nothing advertised
}

}  // namespace

std::vector<kubelet::NodeResource> AdvertisedResources(const ClusterTemplate& t, const NodeGroup& group,
                                                       const kubelet::GuestLayout& layout) {
  const size_t cells = layout.cells_or_one().size();
  size_t index = 0;
  for (size_t i = 0; i < t.groups.size(); ++i)
    if (t.groups[i].name == group.name) index = i;
  uint16_t vendor_id = 0;
  switch (group.vendor) {
    case Vendor::kNvidia: vendor_id = topology::kVendorNvidia; break;
    case Vendor::kAmd: vendor_id = topology::kVendorAmd; break;
    case Vendor::kHabana: vendor_id = topology::kVendorHabana; break;
    case Vendor::kNone: break;
  }
  // NVIDIA's MIG strategy, as the vendor stack sets it (GroupMigStrategy).
  const MigKind kind = sharing::DefaultMigConfigKindOf(group.sharing.mig);
  const bool mixed = GroupMigStrategy(t, group) == "mixed";
  const ReplicaSharing* replicas = group.sharing.mps ? &*group.sharing.mps
                                   : group.sharing.time_slicing ? &*group.sharing.time_slicing
                                                                : nullptr;
  std::vector<kubelet::NodeResource> out;
  auto add = [&](const std::string& name, int cell, int count, const std::string& origin) -> kubelet::NodeResource& {
    auto it = std::find_if(out.begin(), out.end(), [&](const kubelet::NodeResource& r) { return r.name == name; });
    if (it == out.end()) {
      out.push_back(kubelet::NodeResource{name, std::vector<int>(cells, 0), 0, 0, origin});
      it = out.end() - 1;
    }
    if (cell >= 0 && static_cast<size_t>(cell) < cells) it->per_cell[static_cast<size_t>(cell)] += count;
    else it->without_cell += count;
    return *it;
  };
  std::map<std::string, int> accelerators;  // alias -> devices, for the origin text
  for (const kubelet::GuestDevice& d : layout.devices) {
    const bool accel = d.role == topology::PciRole::kGpu || d.role == topology::PciRole::kHpu;
    if (!accel || vendor_id == 0 || d.vendor_id != vendor_id) continue;
    ++accelerators[d.alias];
    std::vector<std::pair<std::string, int>> units;
    if (group.vendor == Vendor::kNvidia) units = GpuUnits(t, index, group, d, kind, mixed);
    else units = {{group.vendor == Vendor::kAmd ? "amd.com/gpu" : "habana.ai/gaudi", 1}};
    for (auto [name, count] : units) {
      std::string origin;
      int max = 0;
      // Sharing applies to the vendor's resource, or under mixed to the MIG resources.
      const bool shared = replicas != nullptr;
      if (shared) {
        count *= replicas->replicas;
        if (replicas->rename_by_default) name += ".shared";
        if (replicas->fail_requests_greater_than_one) max = 1;
      }
      kubelet::NodeResource& r = add(name, d.guest_cell, count, "");
      r.max_per_container = max;
    }
  }
  for (kubelet::NodeResource& r : out) {
    std::string what;
    for (const auto& [alias, n] : accelerators) what += (what.empty() ? "" : ", ") + std::to_string(n) + " x " + alias;
    r.origin = what;
    if (!group.sharing.mig.empty() && kind != MigKind::kDisabled)
      r.origin += ", MIG " + group.sharing.mig + " (strategy " + (mixed ? "mixed" : "single") + ")";
    if (replicas)
      r.origin += std::string(", ") + (group.sharing.mps ? "MPS" : "time-slicing") + " " +
                  std::to_string(replicas->replicas) + " replicas each" +
                  (replicas->fail_requests_greater_than_one ? ", at most 1 per container" : "");
  }
  // RDMA NICs (network_stack.h): one function per pod (sriov) or a shared pool without NUMA.
  const std::string rdma = RdmaResourceName(group);
  const std::vector<const kubelet::GuestDevice*> nics = RdmaNicsOf(layout);
  if (!rdma.empty() && group.vendor != Vendor::kHabana && !nics.empty()) {
    if (group.network.rdma == RdmaMode::kSriov) {
      for (const kubelet::GuestDevice* d : nics) add(rdma, d->guest_cell, 1, "");
      out.back().origin = std::to_string(nics.size()) + " RDMA NIC function(s), SR-IOV network device plugin (NUMA reported)";
    } else {
      const int hca_max = fabric::NetworkConfigOptions().rdma_hca_max;
      add(rdma, -1, hca_max, "").origin = "RDMA shared device plugin over " + std::to_string(nics.size()) +
                                          " NIC(s): rdmaHcaMax " + std::to_string(hca_max) + ", no NUMA node reported";
    }
  }
  return out;
}


kubelet::KubeletNode KubeletNodeOf(const ClusterTemplate& t, const NodeGroup& group, const GroupPlan& plan) {
  kubelet::KubeletNode n = kubelet::KubeletNodeFrom(plan.layout, plan.hugepages, plan.kubelet.config,
                                  AdvertisedResources(t, group, plan.layout), t.kubernetes_version);
  n.group = group.name;
  return n;
}

}  // namespace accel::cluster
