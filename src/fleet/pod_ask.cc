#include "fleet/pod_ask.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "common/error.h"
#include "common/strings.h"
#include "fleet/workload_mix.h"
#include "kubelet/pod.h"
#include "placement/gpu_fit.h"

namespace accel::fleet {

namespace {

using nlohmann::json;

constexpr const char* kMigPrefix = "nvidia.com/mig-";
constexpr int kMaxGpus = 64;  // GpuRequest::count's range

struct Vendor {
  const char* resource;
  uint16_t pci_vendor;
  const char* name;
};
constexpr Vendor kVendors[] = {
    {"nvidia.com/gpu", 0x10de, "NVIDIA"},
    {"amd.com/gpu", 0x1002, "AMD"},
    {"habana.ai/gaudi", 0x1da3, "Habana"},
};

bool IsAccelResource(const std::string& name) {
  if (name == kGpuMilliResource || name.rfind(kMigPrefix, 0) == 0) return true;
  for (const Vendor& v : kVendors)
    if (name == v.resource) return true;
  return false;
}

// Whether any container (init or app) names one of accel's resources in its requests or limits.
// Reads loosely: the strict reading comes after, only for pods this says are accel's.
bool MentionsAccelResource(const json& pod) {
  if (!pod.contains("spec") || !pod["spec"].is_object()) return false;
  const json& spec = pod["spec"];
  for (const char* list : {"initContainers", "containers"}) {
    if (!spec.contains(list) || !spec[list].is_array()) continue;
    for (const json& c : spec[list]) {
      if (!c.is_object() || !c.contains("resources") || !c["resources"].is_object()) continue;
      for (const char* kind : {"requests", "limits"}) {
        const json& r = c["resources"];
        if (!r.contains(kind) || !r[kind].is_object()) continue;
        for (auto it = r[kind].begin(); it != r[kind].end(); ++it)
          if (IsAccelResource(it.key())) return true;
      }
    }
  }
  return false;
}

std::string MetaString(const json& pod, const char* key) {
  const std::string hint = "every pod kube-scheduler sends has metadata.name, namespace and uid";
  if (!pod.contains("metadata") || !pod["metadata"].is_object())
    throw InputError("extender args", "Pod.metadata", "is missing", hint);
  const json& m = pod["metadata"];
  if (!m.contains(key) || !m[key].is_string() || m[key].get<std::string>().empty())
    throw InputError("extender args", std::string("Pod.metadata.") + key, "is missing or not a string", hint);
  return m[key].get<std::string>();
}

std::string PciIds(uint16_t vendor, uint16_t device) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x:%04x", vendor, device);
  return buf;
}

const char* VendorName(uint16_t vendor) {
  for (const Vendor& v : kVendors)
    if (v.pci_vendor == vendor) return v.name;
  return "any";
}

}  // namespace

PodAsk ReadPodAsk(const nlohmann::json& pod) {
  if (!pod.is_object()) throw InputError("extender args", "Pod", "must be an object (a v1.Pod)");
  PodAsk ask;
  ask.name = MetaString(pod, "name");
  ask.ns = MetaString(pod, "namespace");
  ask.uid = MetaString(pod, "uid");
  if (!MentionsAccelResource(pod)) return ask;

  const std::string where = "pod " + ask.ns + "/" + ask.name;
  kubelet::PodResources resources;
  try {
    resources = kubelet::ReadPodObject(pod, where);
  } catch (const InputError& e) {
    ask.refused = e.what();
    return ask;
  }
  auto effective = [&](const std::string& resource) {
    return kubelet::PodRequestMilli(resources, resource) / 1000;  // extended resources are whole numbers
  };
  // Every form the pod uses, for "one form per pod".
  std::vector<std::string> forms;
  for (const Vendor& v : kVendors) {
    const int64_t n = effective(v.resource);
    if (n <= 0) continue;
    forms.push_back(std::string(v.resource) + ": " + std::to_string(n));
    if (n > kMaxGpus) {
      ask.refused = std::string(v.resource) + " is " + std::to_string(n) + ": at most " + std::to_string(kMaxGpus) +
                    " GPUs per pod (they must be on one host)";
    }
    ask.gpu_count = static_cast<int>(std::min<int64_t>(n, kMaxGpus));
    ask.vendor_id = v.pci_vendor;
    ask.gpu_resource = v.resource;
  }
  const int64_t share = effective(kGpuMilliResource);
  if (share > 0) {
    forms.push_back(std::string(kGpuMilliResource) + ": " + std::to_string(share));
    if (share > 1000)
      ask.refused = std::string(kGpuMilliResource) + " is " + std::to_string(share) +
                    ": a share is 1..1000 thousandths of one GPU (ask for whole GPUs with nvidia.com/gpu, amd.com/gpu "
                    "or habana.ai/gaudi)";
    ask.gpu_milli = static_cast<int>(std::min<int64_t>(share, 1000));
    ask.gpu_resource = kGpuMilliResource;
  }
  std::set<std::string> mig_resources;
  for (const kubelet::ContainerResources& c : resources.containers)
    for (const auto& [name, amount] : c.requests)
      if (name.rfind(kMigPrefix, 0) == 0) mig_resources.insert(name);
  for (const std::string& r : mig_resources) {
    const int64_t n = effective(r);
    if (n <= 0) continue;
    forms.push_back(r + ": " + std::to_string(n));
    if (n != 1) ask.refused = r + " is " + std::to_string(n) + ": accel gives one MIG slice per pod";
    ask.mig_profile = r.substr(std::string(kMigPrefix).size());
    ask.vendor_id = 0x10de;
    ask.gpu_resource = r;
  }
  if (forms.size() > 1)
    ask.refused = "asks for " + JoinStrings(forms, " and ") +
                  ": accel gives a pod one of whole GPUs, a share of one GPU (" + kGpuMilliResource + ") or one MIG slice";
  if (!ask.refused.empty() || forms.empty()) return ask;

  const json& meta = pod["metadata"];
  if (meta.contains("annotations") && meta["annotations"].is_object() && meta["annotations"].contains(kGpuModelsAnnotation)) {
    const json& v = meta["annotations"][kGpuModelsAnnotation];
    if (v.is_string()) ask.models = SplitList(v.get<std::string>(), '|');
    if (ask.models.empty())
      ask.refused = std::string("annotation ") + kGpuModelsAnnotation + " names no model (e.g. \"H100|A100\")";
  }
  ask.cpu_milli = kubelet::PodRequestMilli(resources, "cpu") + kubelet::ResourceMilli(resources.overhead, "cpu");
  ask.memory_mib = kubelet::MilliBytesToMib(kubelet::PodRequestMilli(resources, "memory") +
                                            kubelet::ResourceMilli(resources.overhead, "memory"));
  return ask;
}

std::optional<placement::PlacementRequest> PodPlacementRequest(const PodAsk& ask, const FleetView& view,
                                                               const MigShapeResolver& mig_shapes, std::string* why) {
  // The PCI ids of every accelerator of the fleet that the pod's vendor and models allow.
  std::set<std::string> ids;
  for (const HardwareInfo& hw : view.hardware())
    for (const topology::PciDevice* d : hw.accelerators) {
      if (ask.vendor_id != 0 && d->vendor_id != ask.vendor_id) continue;
      if (!placement::GpuModelMatches(placement::GpuModelOf(*d), d->vendor_id, d->device_id, ask.models)) continue;
      ids.insert(PciIds(d->vendor_id, d->device_id));
    }
  const std::string models = ask.models.empty() ? "" : " of model " + JoinStrings(ask.models, "|");
  if (ids.empty()) {
    *why = "no accelerator in the fleet is " +
           (ask.vendor_id ? std::string("an ") + VendorName(ask.vendor_id) + " GPU" : std::string("a GPU")) + models +
           " (" + ask.gpu_resource + ")";
    return std::nullopt;
  }
  placement::PlacementRequest r = PodRequest(ask.flavor(), ask.cpu_milli, ask.memory_mib, 0, 0, {});
  placement::GpuRequest g;
  g.models.assign(ids.begin(), ids.end());
  if (ask.gpu_count > 0) {
    g.count = ask.gpu_count;
  } else if (!ask.mig_profile.empty()) {
    g.mig_profile = ask.mig_profile;
    if (mig_shapes) g.mig_shapes = mig_shapes(ask.mig_profile);
    std::erase_if(g.mig_shapes, [&](const placement::MigShape& s) { return !ids.count(PciIds(s.vendor_id, s.device_id)); });
    if (g.mig_shapes.empty()) {
      *why = "no GPU in the fleet" + models + " has MIG profile " + ask.mig_profile +
             (mig_shapes ? "" : " (this service was started without the MIG catalog)");
      return std::nullopt;
    }
    // Only the models with the profile: a host with none of them can never take the slice.
    g.models.clear();
    for (const placement::MigShape& s : g.mig_shapes) g.models.push_back(PciIds(s.vendor_id, s.device_id));
    std::sort(g.models.begin(), g.models.end());
    g.models.erase(std::unique(g.models.begin(), g.models.end()), g.models.end());
  } else {
    g.milli = ask.gpu_milli;
  }
  r.gpu = std::move(g);
  return r;
}

}  // namespace accel::fleet
