#include "fleet/workload_mix.h"

#include <algorithm>
#include <map>

#include "placement/gpu_fit.h"

namespace accel::fleet {

void WorkloadMix::Normalize() {
  std::erase_if(entries, [](const MixEntry& e) { return !(e.weight > 0); });
  double sum = 0;
  for (const MixEntry& e : entries) sum += e.weight;
  if (sum <= 0) return;
  for (MixEntry& e : entries) e.weight /= sum;
}

placement::PlacementRequest PodRequest(const std::string& name, int64_t cpu_milli, uint64_t memory_mib,
                                       int gpu_count, int gpu_milli, const std::vector<std::string>& models) {
  placement::PlacementRequest r;
  r.flavor = name;
  r.cpu_policy = placement::CpuPolicy::kShared;
  r.cpu_milli = cpu_milli;
  r.memory_mib = memory_mib;
  if (gpu_count > 0) {
    placement::GpuRequest g;
    g.count = gpu_count;
    g.milli = gpu_count == 1 ? gpu_milli : 1000;
    g.models = models;
    r.gpu = std::move(g);
  }
  return r;
}

MixEntry MixEntryOf(const placement::PlacementRequest& request) {
  MixEntry e;
  e.name = request.flavor;
  e.cpu_milli = request.cpu_milli + static_cast<int64_t>(request.vcpus) * 1000;
  e.memory_mib = request.memory_mib;
  if (request.gpu) {
    e.gpu_count = request.gpu->count;
    e.gpu_milli = request.gpu->milli;
    e.mig_profile = request.gpu->mig_profile;
    e.models = request.gpu->models;
    if (!e.mig_profile.empty() && !request.gpu->mig_shapes.empty()) {
      const placement::MigShape& s = request.gpu->mig_shapes.front();
      e.gpu_milli = placement::MigMilli(s.memory_slices, s.gpu_slices);
    }
  } else {
    for (const placement::PciRequest& p : request.pci) e.gpu_count += p.count;
    e.gpu_milli = e.gpu_count > 0 ? 1000 : 0;
  }
  e.request = request;
  return e;
}

}  // namespace accel::fleet
