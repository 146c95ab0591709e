// BuildResources: NVIDIA's MIG strategies (internal/rm and mig-strategy.go) and the replicas of
// time-slicing and MPS (internal/rm/rm.go, api/config/v1/sharing.go), plus one resource per other
// vendor.
#include "kube/resources.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "common/error.h"

namespace accel::kube {

namespace {

constexpr const char* kWhere = "device plugin config";
constexpr const char* kNvidiaGpu = "nvidia.com/gpu";

// A resource under construction: its name and the NodeDevice indices it serves.
struct Group {
  std::string name;
  devices::Vendor vendor;
  std::vector<size_t> units;
};

Group* GroupFor(std::vector<Group>* groups, const std::string& name, devices::Vendor vendor) {
  for (Group& g : *groups) {
    if (g.name == name) return &g;
  }
  groups->push_back({name, vendor, {}});
  return &groups->back();
}

// NVIDIA's mixed-strategy name: "nvidia.com/mig-" + profile with '+' → '.'.
std::string MigResourceName(const std::string& profile) {
  std::string name = "nvidia.com/mig-" + profile;
  std::replace(name.begin(), name.end(), '+', '.');
  return name;
}

// Single strategy: every GPU MIG-enabled (then MIG devices of one profile are nvidia.com/gpu)
// or none (then whole GPUs are).
void SingleStrategy(const std::vector<NodeDevice>& devices, std::vector<size_t>* out) {
  std::vector<size_t> gpus, migs;
  size_t mig_gpus = 0;
  std::set<std::string> with_mig, profiles;
  for (size_t i = 0; i < devices.size(); ++i) {
    const NodeDevice& d = devices[i];
    if (d.vendor != devices::Vendor::kNvidia) continue;
    if (d.is_mig()) {
      migs.push_back(i);
      with_mig.insert(d.physical_id);
      profiles.insert(d.mig_profile);
    } else {
      gpus.push_back(i);
      mig_gpus += d.mig_enabled ? 1 : 0;
    }
  }
  if (mig_gpus == 0) {
    *out = gpus;
    return;
  }
  if (mig_gpus != gpus.size()) {
    throw InputError(kWhere, "flags.migStrategy",
                     "single: all devices on the node must be configured with the same migEnabled "
                     "value (" + std::to_string(mig_gpus) + " of " + std::to_string(gpus.size()) +
                         " GPUs have MIG enabled)",
                     "use migStrategy mixed, or set the same MIG mode on every GPU");
  }
  for (size_t g : gpus) {
    if (!with_mig.count(devices[g].id)) {
      throw InputError(kWhere, "flags.migStrategy",
                       "single: MIG-enabled GPU " + devices[g].id + " has no MIG devices",
                       "create MIG devices on it or disable MIG");
    }
  }
  if (profiles.size() > 1) {
    throw InputError(kWhere, "flags.migStrategy",
                     "single: more than one MIG device type present on node",
                     "use migStrategy mixed, or one MIG profile on every GPU");
  }
  *out = migs;
}

std::vector<Group> GroupByStrategy(const std::vector<NodeDevice>& devices, MigStrategy strategy) {
  std::vector<Group> groups;
  groups.push_back({kNvidiaGpu, devices::Vendor::kNvidia, {}});
  if (strategy == MigStrategy::kSingle) SingleStrategy(devices, &groups[0].units);
  std::map<std::string, std::vector<size_t>> by_profile;
  for (size_t i = 0; i < devices.size(); ++i) {
    const NodeDevice& d = devices[i];
    if (d.vendor == devices::Vendor::kAmd) {
      GroupFor(&groups, "amd.com/gpu", d.vendor)->units.push_back(i);
    } else if (d.vendor == devices::Vendor::kHabana) {
      GroupFor(&groups, "habana.ai/gaudi", d.vendor)->units.push_back(i);
    } else if (strategy == MigStrategy::kNone && !d.is_mig()) {
      groups[0].units.push_back(i);
    } else if (strategy == MigStrategy::kMixed && !d.is_mig() && !d.mig_enabled) {
      groups[0].units.push_back(i);
    } else if (strategy == MigStrategy::kMixed && d.is_mig()) {
      if (d.mig_profile.empty()) {
        throw InputError(kWhere, "flags.migStrategy",
                         "mixed: the profile of MIG device " + d.id + " is unknown",
                         "run the node agent as root: NVML needs it to read GPU instances");
      }
      by_profile[MigResourceName(d.mig_profile)].push_back(i);
    }
  }
  // MIG resources after nvidia.com/gpu, by name; other vendors keep discovery order after them.
  std::vector<Group> ordered = {groups[0]};
  for (auto& [name, units] : by_profile) ordered.push_back({name, devices::Vendor::kNvidia, units});
  ordered.insert(ordered.end(), groups.begin() + 1, groups.end());
  ordered.erase(std::remove_if(ordered.begin(), ordered.end(),
                               [](const Group& g) { return g.units.empty(); }),
                ordered.end());
  return ordered;
}

// "accel-" + the name with '/' → '-' and anything outside [A-Za-z0-9._-] → '_', made unique.
std::string SocketName(const std::string& resource, std::set<std::string>* taken) {
  std::string base = "accel-";
  for (char c : resource) {
    bool safe = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
    base += c == '/' ? '-' : safe ? c : '_';
  }
  std::string name = base + ".sock";
  for (int n = 2; taken->count(name); ++n) name = base + "-" + std::to_string(n) + ".sock";
  taken->insert(name);
  return name;
}

// "sharing.timeSlicing" or "sharing.mps": where the active strategy's resources are in the file.
std::string SharingField(const PluginConfig& config) {
  return config.sharing_strategy() == SharingStrategy::kMps ? "sharing.mps" : "sharing.timeSlicing";
}

// The shared resources must name something this node advertises, and MPS only whole NVIDIA GPUs.
void CheckSharing(const std::vector<Group>& groups, const std::vector<NodeDevice>& devices,
                  const PluginConfig& config) {
  const ReplicatedResources& sharing = config.sharing();
  bool mps = config.sharing_strategy() == SharingStrategy::kMps;
  for (size_t i = 0; i < sharing.resources.size(); ++i) {
    const std::string& name = sharing.resources[i].name;
    std::string field = SharingField(config) + ".resources[" + std::to_string(i) + "].name";
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const Group& g) { return g.name == name; });
    if (group == groups.end()) {
      throw InputError(kWhere, field,
                       "resource " + name + " names no device on this node under migStrategy " +
                           MigStrategyName(config.mig_strategy));
    }
    if (!mps) continue;
    if (group->vendor != devices::Vendor::kNvidia) {
      throw InputError(kWhere, field, "MPS shares NVIDIA GPUs only, not " + name,
                       "use sharing.timeSlicing for other vendors' devices");
    }
    for (size_t unit : group->units) {
      const NodeDevice& d = devices[unit];
      if (d.is_mig()) {
        throw InputError(kWhere, field,
                         "sharing using MPS is not supported for MIG devices (" + name +
                             " holds MIG devices under migStrategy " +
                             MigStrategyName(config.mig_strategy) + ")",
                         "disable MIG on the node's GPUs, or share them with time-slicing");
      }
      // GFD refuses MPS on a MIG-enabled GPU too: it runs no CUDA context as a whole GPU.
      if (d.mig_enabled) {
        throw InputError(kWhere, field,
                         "sharing using MPS is not supported for MIG devices (GPU " + d.id +
                             " has MIG mode enabled)",
                         "disable MIG on every GPU of the node (mig-parted config all-disabled)");
      }
    }
  }
}

PluginResource MakeResource(const Group& group, const std::vector<NodeDevice>& devices,
                            const PluginConfig& config) {
  PluginResource r;
  r.name = r.base_name = group.name;
  r.vendor = group.vendor;
  const ReplicatedResources& sharing = config.sharing();
  if (const SharedResource* shared = sharing.Find(group.name)) {
    r.name = sharing.AdvertisedName(*shared);
    r.replicas = shared->replicas;
    r.sharing = config.sharing_strategy();
    r.fail_requests_greater_than_one = sharing.fail_requests_greater_than_one;
  }
  for (size_t unit : group.units) {
    if (r.replicas == 1) {
      r.devices.push_back({devices[unit].id, unit, -1});
      continue;
    }
    for (int n = 0; n < r.replicas; ++n) {
      r.devices.push_back({devices[unit].id + "::" + std::to_string(n), unit, n});
    }
  }
  return r;
}

}  // namespace

std::vector<PluginResource> BuildResources(const std::vector<NodeDevice>& devices,
                                           const PluginConfig& config) {
  std::vector<Group> groups = GroupByStrategy(devices, config.mig_strategy);
  CheckSharing(groups, devices, config);
  std::vector<PluginResource> out;
  std::set<std::string> sockets, names;
  for (const Group& group : groups) {
    out.push_back(MakeResource(group, devices, config));
    PluginResource& r = out.back();
    if (!names.insert(r.name).second) {
      throw InputError(kWhere, SharingField(config),
                       "two resources of this node would both be advertised as " + r.name,
                       "rename the shared resource to a name no other resource has");
    }
    r.socket_name = SocketName(r.name, &sockets);
  }
  return out;
}

}  // namespace accel::kube
