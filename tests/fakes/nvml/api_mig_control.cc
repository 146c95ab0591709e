// MIG control exports: MIG mode changes, placements, creating and destroying GPU and compute
// instances. Every call goes through DeviceCall, so faults and not_supported apply to them too.
#include <algorithm>
#include <cstdio>

#include "fake_nvml.h"

using namespace fake_nvml;

namespace {

unsigned g_uuid_counter = 0;  // guarded by Global().mu

unsigned UsedMask(const Device& dev) {
  unsigned mask = 0;
  for (const GpuInstance& gi : dev.gpu_instances) mask |= GpuInstanceMask(dev, gi);
  return mask;
}

// Lowest handle slot no GPU instance (or compute instance) of the device uses; -1 when full.
template <typename List>
int FreeSlot(const List& list) {
  for (int slot = 0; slot < kMaxMigDevices; ++slot) {
    if (std::none_of(list.begin(), list.end(), [&](const auto& x) { return x.slot == slot; }))
      return slot;
  }
  return -1;
}

bool HasProcess(const Device& dev, unsigned gi, std::optional<unsigned> ci) {
  return std::any_of(dev.processes.begin(), dev.processes.end(), [&](const Process& p) {
    return p.gpu_instance_id == gi && (!ci || p.compute_instance_id == *ci);
  });
}

// Whether GPU instances of `gi_profile` offer compute-instance profile index `ci_profile`: a 1g
// with two memory slices offers only 1_SLICE_REV1 (as on GH200); others every size up to theirs
// (6 and 8 slices only as the whole instance).
bool Offers(const MigProfile& gi_profile, unsigned ci_profile) {
  unsigned slices = ComputeProfileSlices(ci_profile);
  if (gi_profile.index == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2)
    return ci_profile == NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1;
  if (ci_profile == NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 || slices > gi_profile.slices)
    return false;
  return (slices != 6 && slices != 8) || slices == gi_profile.slices;
}

// A GPU-instance handle call: the DeviceCall plus the instance it names (null when stale).
struct GpuInstanceCall {
  GpuInstanceCall(const char* function, nvmlGpuInstance_t handle)
      : valid(DecodeGpuInstance(handle, &device, &slot)),
        call(function, DeviceHandle(valid ? device : kMaxDevices - 1)) {
    if (valid && call.rc() == NVML_SUCCESS) gi = GpuInstanceBySlot(call.device(), slot);
  }
  nvmlReturn_t rc() const {
    if (!valid) return NVML_ERROR_INVALID_ARGUMENT;
    if (call.rc() != NVML_SUCCESS) return call.rc();
    return gi ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
  }
  int device = 0, slot = 0;  // before `valid`: its initializer fills them
  bool valid;
  DeviceCall call;
  GpuInstance* gi = nullptr;
};

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                                   nvmlReturn_t* activationStatus) {
  if (!activationStatus || mode > 1) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceSetMigMode", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  Device& dev = call.device();
  if (!dev.mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  if (mode == 0 && !dev.gpu_instances.empty()) return NVML_ERROR_IN_USE;
  dev.mig_pending_mode = mode;
  *activationStatus = dev.mig_activation;
  if (dev.mig_activation == NVML_SUCCESS) dev.mig_mode = mode;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t* placements,
    unsigned int* count) {
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetGpuInstancePossiblePlacements_v2", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  const Device& dev = call.device();
  if (!dev.mig_capable) return NVML_ERROR_NOT_SUPPORTED;
  const MigProfile* profile = ProfileById(dev, profileId);
  if (!profile) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned needed = static_cast<unsigned>(profile->placement_starts.size());
  if (placements && *count < needed) {
    *count = needed;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; placements && i < needed; ++i)
    placements[i] = {profile->placement_starts[i], profile->placement_size};
  *count = needed;
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device,
                                                                        unsigned int profileId,
                                                                        unsigned int* count) {
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceGetGpuInstanceRemainingCapacity", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  const Device& dev = call.device();
  if (!dev.mig_capable || dev.mig_mode != 1) return NVML_ERROR_NOT_SUPPORTED;
  const MigProfile* profile = ProfileById(dev, profileId);
  if (!profile) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned used = UsedMask(dev), existing = 0, free_places = 0;
  for (const GpuInstance& gi : dev.gpu_instances) existing += gi.profile_id == profileId;
  for (unsigned start : profile->placement_starts) {
    unsigned mask = ((1u << profile->placement_size) - 1u) << start;
    if (!(mask & used)) ++free_places;
  }
  unsigned left = profile->instance_count > existing ? profile->instance_count - existing : 0;
  *count = std::min(left, free_places);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(
    nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t* placement,
    nvmlGpuInstance_t* gpuInstance) {
  if (!placement || !gpuInstance) return NVML_ERROR_INVALID_ARGUMENT;
  DeviceCall call("nvmlDeviceCreateGpuInstanceWithPlacement", device);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  Device& dev = call.device();
  if (!dev.mig_capable || dev.mig_mode != 1) return NVML_ERROR_NOT_SUPPORTED;
  const MigProfile* profile = ProfileById(dev, profileId);
  if (!profile || placement->size != profile->placement_size ||
      std::find(profile->placement_starts.begin(), profile->placement_starts.end(),
                placement->start) == profile->placement_starts.end()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  unsigned existing = 0;
  for (const GpuInstance& gi : dev.gpu_instances) existing += gi.profile_id == profileId;
  unsigned mask = ((1u << placement->size) - 1u) << placement->start;
  int slot = FreeSlot(dev.gpu_instances);
  if (existing >= profile->instance_count || (mask & UsedMask(dev)) || slot < 0)
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  unsigned id = 1;
  while (GpuInstanceById(dev, id)) ++id;
  dev.gpu_instances.push_back({id, profileId, placement->start, slot});
  *gpuInstance = GpuInstanceHandle(call.position(), slot);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
  GpuInstanceCall call("nvmlGpuInstanceDestroy", gpuInstance);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  Device& dev = call.call.device();
  unsigned id = call.gi->id;
  bool has_ci = std::any_of(dev.mig.begin(), dev.mig.end(),
                            [&](const MigDevice& m) { return m.gpu_instance_id == id; });
  if (has_ci || HasProcess(dev, id, std::nullopt)) return NVML_ERROR_IN_USE;
  dev.gpu_instances.erase(dev.gpu_instances.begin() + (call.gi - dev.gpu_instances.data()));
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_t* info) {
  if (!info || engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
    return NVML_ERROR_INVALID_ARGUMENT;
  GpuInstanceCall call("nvmlGpuInstanceGetComputeInstanceProfileInfo", gpuInstance);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  if (profile > NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1) return NVML_ERROR_INVALID_ARGUMENT;
  const MigProfile* gi_profile = ProfileById(call.call.device(), call.gi->profile_id);
  if (!gi_profile || !Offers(*gi_profile, profile)) return NVML_ERROR_NOT_SUPPORTED;
  unsigned slices = ComputeProfileSlices(profile);
  *info = {profile,
           slices,
           gi_profile->slices / slices,
           gi_profile->multiprocessors * slices / gi_profile->slices,
           gi_profile->slices,
           gi_profile->slices,
           0,
           gi_profile->slices,
           0};
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, nvmlComputeInstance_t* computeInstance) {
  if (!computeInstance) return NVML_ERROR_INVALID_ARGUMENT;
  GpuInstanceCall call("nvmlGpuInstanceCreateComputeInstance", gpuInstance);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  Device& dev = call.call.device();
  const GpuInstance gi = *call.gi;
  const MigProfile* gi_profile = ProfileById(dev, gi.profile_id);
  if (!gi_profile || profileId > NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 ||
      !Offers(*gi_profile, profileId)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  unsigned slices = ComputeProfileSlices(profileId), used = 0;
  std::set<unsigned> ids;
  for (const MigDevice& m : dev.mig) {
    if (m.gpu_instance_id != gi.id) continue;
    used |= ((1u << m.ci_slices) - 1u) << m.ci_start;
    ids.insert(m.compute_instance_id);
  }
  // Compute slices are packed from 0 at multiples of the size, like the driver's default.
  std::optional<unsigned> start;
  for (unsigned s = 0; !start && s + slices <= gi_profile->slices; s += slices) {
    if (!((((1u << slices) - 1u) << s) & used)) start = s;
  }
  int slot = FreeSlot(dev.mig);
  if (!start || slot < 0 || dev.mig.size() >= dev.max_mig_devices)
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  MigDevice ci;
  ci.gpu_instance_id = gi.id;
  while (ids.count(ci.compute_instance_id)) ++ci.compute_instance_id;
  ci.profile_id = gi.profile_id;
  ci.placement_start = gi.start;
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "MIG-fa4e0000-%04x-%04x-%04x-%012x", call.device, gi.id,
                ci.compute_instance_id, ++g_uuid_counter);
  ci.uuid = uuid;
  ci.ci_profile_id = profileId;
  ci.ci_start = *start;
  ci.ci_slices = slices;
  ci.slot = slot;
  dev.mig.push_back(std::move(ci));
  *computeInstance = ComputeInstanceHandle(call.device, slot);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t
nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                   nvmlComputeInstance_t* computeInstances, unsigned int* count) {
  if (!computeInstances || !count) return NVML_ERROR_INVALID_ARGUMENT;
  GpuInstanceCall call("nvmlGpuInstanceGetComputeInstances", gpuInstance);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  const Device& dev = call.call.device();
  const MigProfile* gi_profile = ProfileById(dev, call.gi->profile_id);
  if (!gi_profile || profileId > NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 ||
      !Offers(*gi_profile, profileId)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  // The caller's array holds the profile's instanceCount (slices of the GI / of the CI).
  unsigned capacity = gi_profile->slices / ComputeProfileSlices(profileId), n = 0;
  for (const MigDevice& m : dev.mig) {
    if (m.gpu_instance_id == call.gi->id && m.ci_profile_id == profileId && n < capacity)
      computeInstances[n++] = ComputeInstanceHandle(call.device, m.slot);
  }
  *count = n;
  return NVML_SUCCESS;
}

namespace {

// A compute-instance handle call: the DeviceCall plus the index into Device::mig (-1 if stale).
struct ComputeInstanceCall {
  ComputeInstanceCall(const char* function, nvmlComputeInstance_t handle)
      : valid(DecodeComputeInstance(handle, &device, &slot)),
        call(function, DeviceHandle(valid ? device : kMaxDevices - 1)) {
    if (!valid || call.rc() != NVML_SUCCESS) return;
    const auto& mig = call.device().mig;
    for (size_t m = 0; m < mig.size(); ++m) {
      if (mig[m].slot == slot) index = static_cast<int>(m);
    }
  }
  nvmlReturn_t rc() const {
    if (!valid) return NVML_ERROR_INVALID_ARGUMENT;
    if (call.rc() != NVML_SUCCESS) return call.rc();
    return index >= 0 ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
  }
  int device = 0, slot = 0, index = -1;  // before `valid`: its initializer fills them
  bool valid;
  DeviceCall call;
};

}  // namespace

FAKE_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
  ComputeInstanceCall call("nvmlComputeInstanceDestroy", computeInstance);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  Device& dev = call.call.device();
  const MigDevice& ci = dev.mig[call.index];
  if (HasProcess(dev, ci.gpu_instance_id, ci.compute_instance_id)) return NVML_ERROR_IN_USE;
  dev.mig.erase(dev.mig.begin() + call.index);
  return NVML_SUCCESS;
}

FAKE_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                                            nvmlComputeInstanceInfo_t* info) {
  if (!info) return NVML_ERROR_INVALID_ARGUMENT;
  ComputeInstanceCall call("nvmlComputeInstanceGetInfo_v2", computeInstance);
  if (call.rc() != NVML_SUCCESS) return call.rc();
  Device& dev = call.call.device();
  const MigDevice& ci = dev.mig[call.index];
  GpuInstance* gi = GpuInstanceById(dev, ci.gpu_instance_id);
  info->device = DeviceHandle(call.device);
  info->gpuInstance = gi ? GpuInstanceHandle(call.device, gi->slot) : nullptr;
  info->id = ci.compute_instance_id;
  info->profileId = ci.ci_profile_id;
  info->placement = {ci.ci_start, ci.ci_slices};
  return NVML_SUCCESS;
}
