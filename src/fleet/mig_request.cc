#include "fleet/mig_request.h"

#include "common/error.h"
#include "sharing/mig_geometry.h"

namespace accel::fleet {

void ResolveMigShapes(placement::GpuRequest* gpu, const std::string& where) {
  gpu->mig_shapes.clear();
  if (gpu->mig_profile.empty()) return;
  if (gpu->count != 1)
    throw InputError(where, "mig_profile", "asks for " + std::to_string(gpu->count) + " MIG slices in one request",
                     "a request takes one MIG slice; ask for more instances instead");
  std::string models;
  for (const sharing::GpuModel& model : sharing::MigCatalog()) {
    models += (models.empty() ? "" : ", ") + model.name;
    const std::optional<int> index = sharing::FindProfile(model, gpu->mig_profile);
    if (!index) continue;
    const sharing::MigProfile& profile = model.profiles[static_cast<size_t>(*index)];
    for (uint32_t id : model.pci_ids) {
      placement::MigShape s;
      s.model_profile = model.name + "/" + profile.name;
      s.vendor_id = static_cast<uint16_t>(id & 0xffff);
      s.device_id = static_cast<uint16_t>(id >> 16);
      s.gpu_slices = model.memory_slices;
      s.memory_slices = profile.memory_slices;
      s.starts = profile.starts;
      gpu->mig_shapes.push_back(std::move(s));
    }
  }
  if (gpu->mig_shapes.empty())
    throw InputError(where, "mig_profile", "'" + gpu->mig_profile + "' is not a MIG profile of any GPU model accel knows",
                     "use a profile name as nvidia-smi -lgip prints it (e.g. 1g.10gb, 3g.40gb); models: " + models);
}

}  // namespace accel::fleet
