// The MIG and device plugin sharing configs of a group, as both NVIDIA's GPU Operator
// (vendor_stack_nvidia.cc) and accel's agent (vendor_stack_agent.cc) are given them: the
// mig-parted configs accel can write (NVIDIA's default config names, laid out on the group's GPU
// models) and the time-slicing/MPS section of the device plugin's config.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster/vendor_stack_internal.h"
#include "common/error.h"
#include "topology/classify.h"

namespace accel::cluster::vendor_stack_internal {

// ---------------------------------------------------------------------------------------------
// MIG: the mig-parted configs accel can write

GroupGpus GpusOf(const GroupPlan* plan) {
  GroupGpus out;
  if (plan == nullptr) return out;
  std::set<const GpuModel*> seen;
  for (const kubelet::GuestDevice& d : plan->layout.devices) {
    if (d.role != topology::PciRole::kGpu || d.vendor_id != topology::kVendorNvidia) continue;
    const uint32_t pci_id = (static_cast<uint32_t>(d.device_id) << 16) | d.vendor_id;
    const GpuModel* model = sharing::FindGpuModelByPciId(pci_id);
    if (model != nullptr) {
      seen.insert(model);
      continue;
    }
    char buf[16];
    std::snprintf(buf, sizeof buf, "%04x:%04x", d.vendor_id, d.device_id);
    if (std::find(out.unknown.begin(), out.unknown.end(), buf) == out.unknown.end()) out.unknown.push_back(buf);
  }
  for (const GpuModel& m : sharing::MigCatalog())
    if (seen.count(&m)) out.models.push_back(&m);
  return out;
}

sharing::MigPartedConfig BuildMigConfig(const ClusterTemplate& t, const std::map<std::string, MigUse>& uses) {
  sharing::MigPartedConfig config;
  std::vector<const GpuModel*> all_models;
  auto add_simple = [&](const std::string& name, bool enabled) {
    sharing::MigConfig c;
    c.name = name;
    sharing::MigConfigEntry e;
    e.mig_enabled = enabled;
    c.entries.push_back(e);
    config.configs.push_back(std::move(c));
  };
  add_simple(kMigDefaultConfig, false);
  for (const auto& [name, use] : uses) {
    const GroupInfo& first = *use.groups.front();
    const std::string field = FieldOf(first.index, "sharing.mig");
    const MigConfigKind kind = sharing::DefaultMigConfigKindOf(name);
    if (kind == MigConfigKind::kDisabled) continue;  // written above
    if (kind == MigConfigKind::kUnknown)
      throw InputError(t.source, field, "accel cannot write mig-parted config '" + name + "' for this group",
                       "use all-disabled, all-enabled, all-balanced or all-<profile> (NVIDIA's default config names, "
                       "e.g. all-1g.10gb; `accel mig profiles` lists the profiles)");
    // The models of every group using the name; a group without a known MIG GPU cannot.
    std::vector<const GpuModel*> models;
    for (const GroupInfo* g : use.groups) {
      if (g->gpus.models.empty()) {
        std::string gpus;
        for (const std::string& u : g->gpus.unknown) gpus += (gpus.empty() ? "" : ", ") + u;
        throw InputError(t.source, FieldOf(g->index, "sharing.mig"),
                         "group " + g->group->name + " has no MIG-capable NVIDIA GPU accel knows" +
                             (gpus.empty() ? std::string(" (its flavor passes through no NVIDIA GPU)")
                                           : " (its GPUs: " + gpus + ")"),
                         "MIG needs a GPU of accel's MIG catalog (`accel mig profiles`); remove sharing.mig or use "
                         "all-disabled");
      }
      for (const GpuModel* m : g->gpus.models)
        if (std::find(models.begin(), models.end(), m) == models.end()) models.push_back(m);
    }
    for (const GpuModel* m : models)
      if (std::find(all_models.begin(), all_models.end(), m) == all_models.end()) all_models.push_back(m);
    if (kind == MigConfigKind::kEnabledEmpty) {
      add_simple(name, true);
      continue;
    }
    sharing::MigConfig c;
    c.name = name;
    for (const GpuModel* m : models) {
      std::string why;
      const std::optional<MigDevices> devices = sharing::DefaultMigDevices(name, *m, &why);
      if (!devices) {
        const GroupInfo* user = use.groups.front();
        for (const GroupInfo* g : use.groups)
          if (std::find(g->gpus.models.begin(), g->gpus.models.end(), m) != g->gpus.models.end()) {
            user = g;
            break;
          }
        throw InputError(t.source, FieldOf(user->index, "sharing.mig"),
                         "mig-parted config '" + name + "' cannot be laid out on this group's GPUs: " + why,
                         "pick a profile of that model (`accel mig profiles`)");
      }
      // Models with the same layout share one entry (one device-filter list), as in NVIDIA's file.
      bool merged = false;
      for (sharing::MigConfigEntry& e : c.entries) {
        if (e.mig_devices != *devices) continue;
        for (uint32_t id : m->pci_ids) e.device_filter.push_back({id, std::nullopt});
        merged = true;
        break;
      }
      if (merged) continue;
      sharing::MigConfigEntry e;
      e.mig_enabled = true;
      e.mig_devices = *devices;
      for (uint32_t id : m->pci_ids) e.device_filter.push_back({id, std::nullopt});
      c.entries.push_back(std::move(e));
    }
    config.configs.push_back(std::move(c));
  }
  // Every entry is checked like `accel mig validate` checks a file (geometry, media engines).
  for (const sharing::ConfigFinding& f : sharing::ValidateMigPartedConfig(config, all_models)) {
    if (!f.is_error()) continue;
    size_t index = uses.begin()->second.groups.front()->index;
    if (auto it = uses.find(f.config); it != uses.end()) index = it->second.groups.front()->index;
    throw InputError(t.source, FieldOf(index, "sharing.mig"),
                     "mig-parted config '" + f.config + "' is invalid on " + f.model + ": " + f.message,
                     "pick another config (`accel mig profiles`)");
  }
  return config;
}

namespace {

// The MIG devices `name` makes on the group's GPUs, as resource names under the mixed strategy
// ("nvidia.com/mig-1g.10gb"; '+' becomes '.', as NVIDIA's device plugin names them).
std::vector<std::string> MixedResources(const std::string& name, const GroupInfo& g) {
  std::set<std::string> names;
  const MigConfigKind kind = sharing::DefaultMigConfigKindOf(name);
  if (kind != MigConfigKind::kBalanced && kind != MigConfigKind::kSingleProfile) return {};
  for (const GpuModel* m : g.gpus.models) {
    std::string why;
    const std::optional<MigDevices> devices = sharing::DefaultMigDevices(name, *m, &why);
    if (!devices) continue;
    for (const auto& [profile, count] : *devices) names.insert(sharing::MixedStrategyResource(profile));
  }
  return {names.begin(), names.end()};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Device plugin sharing

const ReplicaSharing* ReplicasOf(const NodeGroup& g) {
  if (g.sharing.mps) return &*g.sharing.mps;
  if (g.sharing.time_slicing) return &*g.sharing.time_slicing;
  return nullptr;
}

std::vector<std::string> SharedResources(const GroupInfo& g, const std::string& mig_strategy) {
  switch (g.group->vendor) {
    case Vendor::kAmd: return {"amd.com/gpu"};
    case Vendor::kHabana: return {"habana.ai/gaudi"};
    case Vendor::kNone: return {};
    case Vendor::kNvidia: break;
  }
  if (mig_strategy == "mixed") {
    std::vector<std::string> mig = MixedResources(g.group->sharing.mig, g);
    if (!mig.empty()) return mig;
  }
  return {"nvidia.com/gpu"};
}

ordered_json SharingSection(const NodeGroup& g, const std::vector<std::string>& resources) {
  const ReplicaSharing& r = *ReplicasOf(g);
  ordered_json section;
  section["renameByDefault"] = r.rename_by_default;
  section["failRequestsGreaterThanOne"] = r.fail_requests_greater_than_one;
  section["resources"] = ordered_json::array();
  for (const std::string& name : resources) section["resources"].push_back({{"name", name}, {"replicas", r.replicas}});
  ordered_json sharing;
  sharing[g.sharing.mps ? "mps" : "timeSlicing"] = section;
  return sharing;
}

}  // namespace accel::cluster::vendor_stack_internal
