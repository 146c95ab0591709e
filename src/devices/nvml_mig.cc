// MIG enumeration the way DCGM does it with NVML only (telemetry.md §2.8): one instance per GPU
// instance, named with DCGM's synthesized profile name, with per-GI memory and GPM activity.
#include <algorithm>

#include "devices/nvml_backend.h"

#include "devices/nvml_session.h"

namespace accel::devices {

using namespace nvml;

namespace {

// DCGM's GPU_I_PROFILE value (since 2.3.4): "<slices>g.<ceil(memoryMB / 1024)>gb".
std::string ProfileName(const nvmlGpuInstanceProfileInfo_t& info) {
  return std::to_string(info.sliceCount) + "g." +
         std::to_string((info.memorySizeMB + 1023) / 1024) + "gb";
}

// The profile table never changes for a GPU; read it once.
void LoadProfiles(NvmlReadContext& ctx) {
  NvmlDeviceState& dev = ctx.device();
  auto* function = ctx.api().nvmlDeviceGetGpuInstanceProfileInfo;
  if (dev.profiles_loaded || !ctx.Want(NvmlSlot::kMigProfiles, function != nullptr)) return;
  std::vector<NvmlMigProfile> profiles;
  for (unsigned index = 0; index < kMaxMigProfileIndex; ++index) {
    nvmlGpuInstanceProfileInfo_t info{};
    nvmlReturn_t rc = function(ctx.handle(), index, &info);
    if (rc == NVML_ERROR_INVALID_ARGUMENT) break;
    if (rc == NVML_ERROR_NOT_SUPPORTED) continue;  // a profile this GPU does not offer
    if (!ctx.Check(NvmlSlot::kMigProfiles, "nvmlDeviceGetGpuInstanceProfileInfo", rc)) return;
    profiles.push_back({info.id, info.instanceCount, ProfileName(info)});
  }
  dev.profiles = std::move(profiles);
  dev.profiles_loaded = true;
}

// GPU-instance id -> profile name, rebuilt whenever the set of GPU instances changes.
void MapInstancesToProfiles(NvmlReadContext& ctx, const std::vector<unsigned>& gi_ids) {
  NvmlDeviceState& dev = ctx.device();
  const NvmlApi& api = ctx.api();
  if (gi_ids == dev.profile_gi_ids) return;
  LoadProfiles(ctx);
  bool present = api.nvmlDeviceGetGpuInstances && api.nvmlGpuInstanceGetInfo;
  if (!dev.profiles_loaded || !ctx.Want(NvmlSlot::kMigProfiles, present)) return;
  std::map<unsigned, std::string> by_gi;
  for (const NvmlMigProfile& profile : dev.profiles) {
    if (profile.instance_count == 0) continue;
    // NVML fills up to the profile's instance count; the array must hold that many.
    std::vector<nvmlGpuInstance_t> instances(profile.instance_count);
    unsigned count = profile.instance_count;
    nvmlReturn_t rc =
        api.nvmlDeviceGetGpuInstances(ctx.handle(), profile.id, instances.data(), &count);
    if (rc == NVML_ERROR_NO_PERMISSION) {
      // GI introspection needs root; without it profile names stay empty, asked no more.
      ctx.MarkUnsupported(NvmlSlot::kMigProfiles);
      ctx.CheckCall("nvmlDeviceGetGpuInstances", rc);
      return;
    }
    if (!ctx.Check(NvmlSlot::kMigProfiles, "nvmlDeviceGetGpuInstances", rc)) return;
    for (unsigned i = 0; i < std::min(count, profile.instance_count); ++i) {
      nvmlGpuInstanceInfo_t info{};
      if (ctx.CheckCall("nvmlGpuInstanceGetInfo",
                        api.nvmlGpuInstanceGetInfo(instances[i], &info))) {
        by_gi[info.id] = profile.name;
      }
    }
  }
  dev.profile_by_gi = std::move(by_gi);
  dev.profile_gi_ids = gi_ids;
}

// One MIG device handle -> its instance (without profile and GPM). False when it cannot be read.
bool ReadMigDevice(NvmlReadContext& ctx, nvmlDevice_t mig, MigInstance* out) {
  const NvmlApi& api = ctx.api();
  if (!ctx.CheckCall("nvmlDeviceGetGpuInstanceId",
                     api.nvmlDeviceGetGpuInstanceId(mig, &out->gpu_instance_id)) ||
      !ctx.CheckCall("nvmlDeviceGetComputeInstanceId",
                     api.nvmlDeviceGetComputeInstanceId(mig, &out->compute_instance_id))) {
    return false;
  }
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE + 1] = {};
  if (api.nvmlDeviceGetUUID(mig, uuid, NVML_DEVICE_UUID_V2_BUFFER_SIZE) == NVML_SUCCESS)
    out->uuid = uuid;
  return true;
}

// The MIG device handles of the GPU, one per GPU instance (its first compute instance).
std::vector<std::pair<nvmlDevice_t, MigInstance>> ListInstances(NvmlReadContext& ctx) {
  const NvmlApi& api = ctx.api();
  std::vector<std::pair<nvmlDevice_t, MigInstance>> out;
  unsigned max = 0;
  if (!api.nvmlDeviceGetMaxMigDeviceCount || !api.nvmlDeviceGetMigDeviceHandleByIndex ||
      !api.nvmlDeviceGetGpuInstanceId || !api.nvmlDeviceGetComputeInstanceId ||
      !ctx.CheckCall("nvmlDeviceGetMaxMigDeviceCount",
                     api.nvmlDeviceGetMaxMigDeviceCount(ctx.handle(), &max))) {
    return out;
  }
  for (unsigned i = 0; i < max && !ctx.lost(); ++i) {
    nvmlDevice_t mig = nullptr;
    nvmlReturn_t rc = api.nvmlDeviceGetMigDeviceHandleByIndex(ctx.handle(), i, &mig);
    if (rc == NVML_ERROR_NOT_FOUND) continue;  // an unused slot
    if (!ctx.CheckCall("nvmlDeviceGetMigDeviceHandleByIndex", rc)) continue;
    MigInstance instance;
    if (!ReadMigDevice(ctx, mig, &instance)) continue;
    bool seen = std::any_of(out.begin(), out.end(), [&](const auto& entry) {
      return entry.second.gpu_instance_id == instance.gpu_instance_id;
    });
    if (!seen) out.emplace_back(mig, std::move(instance));
  }
  return out;
}

}  // namespace

void ReadMig(NvmlReadContext& ctx) {
  NvmlDeviceState& dev = ctx.device();
  DeviceReading& reading = ctx.reading();
  unsigned current = 0, pending = 0;
  if (!ACCEL_NVML_ASK(ctx, NvmlSlot::kMigMode, nvmlDeviceGetMigMode, ctx.handle(), &current,
                      &pending)) {
    return;
  }
  reading.mig_enabled = current == NVML_DEVICE_MIG_ENABLE;
  auto instances = reading.mig_enabled ? ListInstances(ctx) : decltype(ListInstances(ctx)){};
  if (ctx.lost()) return;

  std::vector<unsigned> gi_ids;
  for (const auto& [handle, instance] : instances) gi_ids.push_back(instance.gpu_instance_id);
  std::sort(gi_ids.begin(), gi_ids.end());
  if (!gi_ids.empty()) MapInstancesToProfiles(ctx, gi_ids);

  // GPM buffers of GPU instances that no longer exist.
  for (auto it = dev.mig_gpm.begin(); it != dev.mig_gpm.end();) {
    if (std::binary_search(gi_ids.begin(), gi_ids.end(), it->first)) {
      ++it;
    } else {
      FreeGpm(ctx.api(), &it->second);
      it = dev.mig_gpm.erase(it);
    }
  }

  for (auto& [handle, instance] : instances) {
    if (ctx.lost()) return;
    auto name = dev.profile_by_gi.find(instance.gpu_instance_id);
    if (name != dev.profile_by_gi.end()) instance.profile = name->second;
    ReadMemory(ctx, handle, NvmlSlot::kMigMemoryV2, NvmlSlot::kMigMemoryV1, &instance.sample);
    ReadGpm(ctx, &dev.mig_gpm[instance.gpu_instance_id], instance.gpu_instance_id,
            NvmlSlot::kMigGpm, &instance.sample);
    reading.mig.push_back(std::move(instance));
  }
}

}  // namespace accel::devices
