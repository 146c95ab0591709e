// The fake's MIG control model: GPU instances with handle slots, compute-instance profiles,
// placements, and the JSON state dump tests read after nvmlShutdown (FAKE_NVML_STATE_OUT).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "fake_nvml.h"

namespace fake_nvml {

const MigProfile* ProfileById(const Device& dev, unsigned id) {
  for (const MigProfile& p : dev.profiles) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

GpuInstance* GpuInstanceBySlot(Device& dev, int slot) {
  for (GpuInstance& gi : dev.gpu_instances) {
    if (gi.slot == slot) return &gi;
  }
  return nullptr;
}

GpuInstance* GpuInstanceById(Device& dev, unsigned id) {
  for (GpuInstance& gi : dev.gpu_instances) {
    if (gi.id == id) return &gi;
  }
  return nullptr;
}

unsigned GpuInstanceMask(const Device& dev, const GpuInstance& gi) {
  const MigProfile* profile = ProfileById(dev, gi.profile_id);
  unsigned size = profile ? profile->placement_size : 1;
  return ((1u << size) - 1u) << gi.start;
}

unsigned ComputeProfileSlices(unsigned profile) {
  static const unsigned kSlices[] = {1, 2, 3, 4, 7, 8, 6, 1};  // NVML_COMPUTE_INSTANCE_PROFILE_*
  return profile < std::size(kSlices) ? kSlices[profile] : 0;
}

void SetDefaultPlacements(MigProfile* profile) {
  // The H100 80GB geometry (mig.md §1.4), by NVML profile index.
  switch (profile->index) {
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE:
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1:
      profile->placement_size = 1;
      profile->placement_starts = {0, 1, 2, 3, 4, 5, 6};
      break;
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE:
    case NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1:
      profile->placement_size = 2;
      profile->placement_starts = {0, 2, 4};
      break;
    case NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2:
      profile->placement_size = 2;
      profile->placement_starts = {0, 2, 4, 6};
      break;
    case NVML_GPU_INSTANCE_PROFILE_3_SLICE:
      profile->placement_size = 4;
      profile->placement_starts = {0, 4};
      break;
    case NVML_GPU_INSTANCE_PROFILE_4_SLICE:
      profile->placement_size = 4;
      profile->placement_starts = {0};
      break;
    default:  // 7g/8g and anything unknown: the whole GPU
      profile->placement_size = 8;
      profile->placement_starts = {0};
  }
}

void DeriveMigTopology(Device* dev) {
  dev->gpu_instances.clear();
  std::map<unsigned, unsigned> next_ci_start;  // by GI id
  for (size_t m = 0; m < dev->mig.size(); ++m) {
    MigDevice& ci = dev->mig[m];
    if (!GpuInstanceById(*dev, ci.gpu_instance_id)) {
      dev->gpu_instances.push_back({ci.gpu_instance_id, ci.profile_id, ci.placement_start,
                                    static_cast<int>(dev->gpu_instances.size())});
    }
    const MigProfile* profile = ProfileById(*dev, ci.profile_id);
    bool rev2 = profile && profile->index == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2;
    unsigned ci_profile = NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1;
    if (!rev2) {
      for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1; ++p) {
        if (ComputeProfileSlices(p) == ci.ci_slices) ci_profile = p;
      }
    }
    ci.ci_profile_id = ci_profile;
    ci.ci_start = next_ci_start[ci.gpu_instance_id];
    next_ci_start[ci.gpu_instance_id] += ci.ci_slices;
    ci.slot = static_cast<int>(m);
  }
}

namespace {

nlohmann::ordered_json DeviceState(const Device& dev, size_t position) {
  nlohmann::ordered_json gis = nlohmann::ordered_json::array();
  std::vector<GpuInstance> sorted = dev.gpu_instances;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.start < b.start; });
  for (const GpuInstance& gi : sorted) {
    const MigProfile* profile = ProfileById(dev, gi.profile_id);
    nlohmann::ordered_json cis = nlohmann::ordered_json::array();
    for (const MigDevice& ci : dev.mig) {
      if (ci.gpu_instance_id != gi.id) continue;
      cis.push_back({{"id", ci.compute_instance_id},
                     {"profile_id", ci.ci_profile_id},
                     {"start", ci.ci_start},
                     {"slices", ci.ci_slices},
                     {"uuid", ci.uuid}});
    }
    gis.push_back({{"id", gi.id},
                   {"profile_id", gi.profile_id},
                   {"start", gi.start},
                   {"size", profile ? profile->placement_size : 1},
                   {"compute_instances", cis}});
  }
  return {{"index", position},
          {"uuid", dev.uuid},
          {"mig_mode", dev.mig_mode},
          {"mig_pending_mode", dev.mig_pending_mode},
          {"gpu_instances", gis}};
}

}  // namespace

void WriteStateOut(const Config& config) {
  const char* path = std::getenv("FAKE_NVML_STATE_OUT");
  if (!path || !*path) return;
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (size_t d = 0; d < config.devices.size(); ++d)
    devices.push_back(DeviceState(config.devices[d], d));
  std::ofstream out(path);
  out << nlohmann::ordered_json{{"devices", devices}}.dump(2) << "\n";
  if (!out) std::fprintf(stderr, "fake NVML: cannot write FAKE_NVML_STATE_OUT %s\n", path);
}

}  // namespace fake_nvml
