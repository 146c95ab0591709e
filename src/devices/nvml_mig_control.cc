// MigControl over NVML: MIG mode, GPU instances at explicit placements, compute instances.
// Lists are read with the sizes NVML documents (a profile's instanceCount bounds the arrays).
#include "devices/nvml_mig_control.h"

#include "devices/nvml_session.h"

#include <algorithm>

namespace accel::devices {

using namespace nvml;

namespace {

constexpr unsigned kMaxComputeProfileIndex = 16;

std::string SynthesizedName(const nvmlGpuInstanceProfileInfo_t& info) {
  return std::to_string(info.sliceCount) + "g." +
         std::to_string((info.memorySizeMB + 1023) / 1024) + "gb";
}

}  // namespace

NvmlMigControl::NvmlMigControl(std::shared_ptr<const NvmlMigSession> session, unsigned index)
    : session_(std::move(session)), index_(index) {
  Check("nvmlDeviceGetHandleByIndex_v2", api().nvmlDeviceGetHandleByIndex_v2(index, &handle_));
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE + 1] = {};
  Check("nvmlDeviceGetName",
        api().nvmlDeviceGetName(handle_, name, NVML_DEVICE_NAME_V2_BUFFER_SIZE));
  name_ = name;
  nvmlPciInfo_t pci{};
  Check("nvmlDeviceGetPciInfo_v3", api().nvmlDeviceGetPciInfo_v3(handle_, &pci));
  pci_id_ = pci.pciDeviceId;
  pci_subsystem_id_ = pci.pciSubSystemId;
  unsigned current = 0, pending = 0;
  nvmlReturn_t rc = api().nvmlDeviceGetMigMode(handle_, &current, &pending);
  if (rc != NVML_ERROR_NOT_SUPPORTED) Check("nvmlDeviceGetMigMode", rc);
  mig_capable_ = rc == NVML_SUCCESS;
}

MigModeState NvmlMigControl::Mode() {
  if (!mig_capable_) return {};
  unsigned current = 0, pending = 0;
  Check("nvmlDeviceGetMigMode", api().nvmlDeviceGetMigMode(handle_, &current, &pending));
  return {current == NVML_DEVICE_MIG_ENABLE, pending == NVML_DEVICE_MIG_ENABLE};
}

bool NvmlMigControl::SetMigEnabled(bool enabled) {
  if (!mig_capable_) session_->Fail(index_, "the GPU does not support MIG");
  nvmlReturn_t activation = NVML_SUCCESS;
  Check("nvmlDeviceSetMigMode",
        api().nvmlDeviceSetMigMode(
            handle_, enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE, &activation));
  profiles_.clear();  // some drivers list profiles only with MIG on
  return Mode().current == enabled;
}

std::vector<nvmlProcessInfo_t> NvmlMigControl::Processes() {
  std::vector<nvmlProcessInfo_t> infos;
  // The list can grow between the sizing call and the reading call; retry a few times.
  for (int attempt = 0; attempt < 4; ++attempt) {
    unsigned count = static_cast<unsigned>(infos.size());
    nvmlReturn_t rc = api().nvmlDeviceGetComputeRunningProcesses_v3(
        handle_, &count, infos.empty() ? nullptr : infos.data());
    if (rc == NVML_SUCCESS) {
      infos.resize(std::min<size_t>(count, infos.size()));
      return infos;
    }
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE) Check("nvmlDeviceGetComputeRunningProcesses_v3", rc);
    infos.assign(count + 4, nvmlProcessInfo_t{});
  }
  session_->Fail(index_, "nvmlDeviceGetComputeRunningProcesses_v3 kept growing");
}

bool NvmlMigControl::HasProcesses() { return !Processes().empty(); }

const std::vector<MigDriverProfile>& NvmlMigControl::Profiles() {
  if (!mig_capable_ || !profiles_.empty()) return profiles_;
  std::vector<MigDriverProfile> profiles;
  for (unsigned index = 0; index < kMaxMigProfileIndex; ++index) {
    nvmlGpuInstanceProfileInfo_t info{};
    nvmlReturn_t rc = api().nvmlDeviceGetGpuInstanceProfileInfo(handle_, index, &info);
    if (rc == NVML_ERROR_INVALID_ARGUMENT) break;
    if (rc == NVML_ERROR_NOT_SUPPORTED) continue;
    Check("nvmlDeviceGetGpuInstanceProfileInfo", rc);
    MigDriverProfile profile{index,
                             info.id,
                             info.sliceCount,
                             info.instanceCount,
                             info.memorySizeMB,
                             SynthesizedName(info)};
    nvmlGpuInstanceProfileInfo_v2_t named{};
    named.version = nvmlGpuInstanceProfileInfo_v2;
    if (api().nvmlDeviceGetGpuInstanceProfileInfoV &&
        api().nvmlDeviceGetGpuInstanceProfileInfoV(handle_, index, &named) == NVML_SUCCESS) {
      named.name[sizeof named.name - 1] = '\0';
      std::string text = named.name;
      if (text.rfind("MIG ", 0) == 0) text = text.substr(4);
      if (!text.empty()) profile.name = text;
    }
    profiles.push_back(std::move(profile));
  }
  profiles_ = std::move(profiles);
  return profiles_;
}

std::vector<MigSlotRange> NvmlMigControl::PossiblePlacements(unsigned profile_id) {
  auto* function = api().nvmlDeviceGetGpuInstancePossiblePlacements_v2;
  unsigned count = 0;
  Check("nvmlDeviceGetGpuInstancePossiblePlacements_v2",
        function(handle_, profile_id, nullptr, &count));
  std::vector<nvmlGpuInstancePlacement_t> placements(count);
  if (count > 0) {
    Check("nvmlDeviceGetGpuInstancePossiblePlacements_v2",
          function(handle_, profile_id, placements.data(), &count));
  }
  std::vector<MigSlotRange> out;
  for (unsigned i = 0; i < std::min<size_t>(count, placements.size()); ++i) {
    out.push_back({static_cast<int>(placements[i].start), static_cast<int>(placements[i].size)});
  }
  return out;
}

std::vector<MigGpuInstanceInfo> NvmlMigControl::GpuInstances() {
  std::vector<MigGpuInstanceInfo> out;
  if (!Mode().current) return out;
  std::vector<nvmlProcessInfo_t> processes = Processes();
  for (const MigDriverProfile& profile : Profiles()) {
    if (profile.instance_count == 0) continue;
    // NVML fills up to the profile's instance count; the array must hold that many.
    std::vector<nvmlGpuInstance_t> handles(profile.instance_count);
    unsigned count = profile.instance_count;
    Check("nvmlDeviceGetGpuInstances",
          api().nvmlDeviceGetGpuInstances(handle_, profile.id, handles.data(), &count));
    for (unsigned i = 0; i < std::min(count, profile.instance_count); ++i) {
      nvmlGpuInstanceInfo_t info{};
      Check("nvmlGpuInstanceGetInfo", api().nvmlGpuInstanceGetInfo(handles[i], &info));
      MigGpuInstanceInfo gi{info.id,
                            info.profileId,
                            static_cast<int>(info.placement.start),
                            static_cast<int>(info.placement.size),
                            {},
                            false};
      for (const ComputeInstance& ci : ComputeInstances(handles[i])) {
        gi.compute_instances.push_back(ci.second);
      }
      gi.busy = std::any_of(processes.begin(), processes.end(),
                            [&](const nvmlProcessInfo_t& p) { return p.gpuInstanceId == info.id; });
      out.push_back(std::move(gi));
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  return out;
}

nvmlGpuInstance_t NvmlMigControl::GpuInstanceHandle(unsigned id) {
  nvmlGpuInstance_t gi = nullptr;
  Check("nvmlDeviceGetGpuInstanceById", api().nvmlDeviceGetGpuInstanceById(handle_, id, &gi));
  return gi;
}

std::vector<nvmlComputeInstanceProfileInfo_t> NvmlMigControl::ComputeProfiles(
    nvmlGpuInstance_t gi) {
  std::vector<nvmlComputeInstanceProfileInfo_t> out;
  for (unsigned index = 0; index < kMaxComputeProfileIndex; ++index) {
    nvmlComputeInstanceProfileInfo_t info{};
    nvmlReturn_t rc = api().nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gi, index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (rc == NVML_ERROR_INVALID_ARGUMENT) break;
    if (rc == NVML_ERROR_NOT_SUPPORTED) continue;
    Check("nvmlGpuInstanceGetComputeInstanceProfileInfo", rc);
    bool seen = std::any_of(out.begin(), out.end(), [&](const auto& p) { return p.id == info.id; });
    if (!seen) out.push_back(info);
  }
  return out;
}

std::vector<NvmlMigControl::ComputeInstance> NvmlMigControl::ComputeInstances(
    nvmlGpuInstance_t gi) {
  std::vector<ComputeInstance> out;
  for (const nvmlComputeInstanceProfileInfo_t& profile : ComputeProfiles(gi)) {
    if (profile.instanceCount == 0) continue;
    std::vector<nvmlComputeInstance_t> handles(profile.instanceCount);
    unsigned count = profile.instanceCount;
    Check("nvmlGpuInstanceGetComputeInstances",
          api().nvmlGpuInstanceGetComputeInstances(gi, profile.id, handles.data(), &count));
    for (unsigned i = 0; i < std::min(count, profile.instanceCount); ++i) {
      nvmlComputeInstanceInfo_t info{};
      Check("nvmlComputeInstanceGetInfo_v2",
            api().nvmlComputeInstanceGetInfo_v2(handles[i], &info));
      out.push_back({handles[i],
                     {info.id, info.profileId, static_cast<int>(info.placement.start),
                      static_cast<int>(profile.sliceCount)}});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.second.start < b.second.start; });
  return out;
}

unsigned NvmlMigControl::CreateGpuInstance(unsigned profile_id, int start) {
  std::vector<MigSlotRange> possible = PossiblePlacements(profile_id);
  auto at = std::find_if(possible.begin(), possible.end(),
                         [&](const MigSlotRange& p) { return p.start == start; });
  if (at == possible.end()) {
    std::string starts;
    for (const MigSlotRange& p : possible)
      starts += (starts.empty() ? "" : ", ") + std::to_string(p.start);
    session_->Fail(index_, "GPU-instance profile " + std::to_string(profile_id) +
                               " cannot start at memory slice " + std::to_string(start) +
                               " (the driver allows: " + (starts.empty() ? "none" : starts) + ")");
  }
  nvmlGpuInstancePlacement_t placement{static_cast<unsigned>(at->start),
                                       static_cast<unsigned>(at->size)};
  nvmlGpuInstance_t gi = nullptr;
  Check("nvmlDeviceCreateGpuInstanceWithPlacement",
        api().nvmlDeviceCreateGpuInstanceWithPlacement(handle_, profile_id, &placement, &gi));
  nvmlGpuInstanceInfo_t info{};
  Check("nvmlGpuInstanceGetInfo", api().nvmlGpuInstanceGetInfo(gi, &info));
  return info.id;
}

void NvmlMigControl::CreateComputeInstances(unsigned gpu_instance, int slices, int count) {
  nvmlGpuInstance_t gi = GpuInstanceHandle(gpu_instance);
  std::vector<nvmlComputeInstanceProfileInfo_t> profiles = ComputeProfiles(gi);
  auto profile = std::find_if(profiles.begin(), profiles.end(), [&](const auto& p) {
    return static_cast<int>(p.sliceCount) == slices;
  });
  if (profile == profiles.end()) {
    session_->Fail(index_, "GPU instance " + std::to_string(gpu_instance) +
                               " offers no compute-instance profile of " + std::to_string(slices) +
                               " slices");
  }
  for (int i = 0; i < count; ++i) {
    nvmlComputeInstance_t ci = nullptr;
    Check("nvmlGpuInstanceCreateComputeInstance",
          api().nvmlGpuInstanceCreateComputeInstance(gi, profile->id, &ci));
  }
}

void NvmlMigControl::DestroyComputeInstances(unsigned gpu_instance) {
  nvmlGpuInstance_t gi = GpuInstanceHandle(gpu_instance);
  for (const ComputeInstance& ci : ComputeInstances(gi)) {
    Check("nvmlComputeInstanceDestroy", api().nvmlComputeInstanceDestroy(ci.first));
  }
}

void NvmlMigControl::DestroyGpuInstance(unsigned gpu_instance) {
  Check("nvmlGpuInstanceDestroy", api().nvmlGpuInstanceDestroy(GpuInstanceHandle(gpu_instance)));
}

}  // namespace accel::devices
