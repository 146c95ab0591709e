#include "fleet/mig_request.h"

#include "common/error.h"
#include "sharing/mig_geometry.h"

namespace accel::fleet {

std::vector<placement::MigShape> MigShapesOf(const std::string& profile) {
  std::vector<placement::MigShape> out;
  for (const sharing::GpuModel& model : sharing::MigCatalog()) {
    const std::optional<int> index = sharing::FindProfile(model, profile);
    if (!index) continue;
    const sharing::MigProfile& p = model.profiles[static_cast<size_t>(*index)];
    for (uint32_t id : model.pci_ids) {
      placement::MigShape s;
      s.model_profile = model.name + "/" + p.name;
      s.vendor_id = static_cast<uint16_t>(id & 0xffff);
      s.device_id = static_cast<uint16_t>(id >> 16);
      s.gpu_slices = model.memory_slices;
      s.memory_slices = p.memory_slices;
      s.starts = p.starts;
      out.push_back(std::move(s));
    }
  }
  return out;
}

void ResolveMigShapes(placement::GpuRequest* gpu, const std::string& where) {
  gpu->mig_shapes.clear();
  if (gpu->mig_profile.empty()) return;
  if (gpu->count != 1)
    throw InputError(where, "mig_profile", "asks for " + std::to_string(gpu->count) + " MIG slices in one request",
                     "a request takes one MIG slice; ask for more instances instead");
  gpu->mig_shapes = MigShapesOf(gpu->mig_profile);
  if (gpu->mig_shapes.empty()) {
    std::string models;
    for (const sharing::GpuModel& model : sharing::MigCatalog()) models += (models.empty() ? "" : ", ") + model.name;
    throw InputError(where, "mig_profile", "'" + gpu->mig_profile + "' is not a MIG profile of any GPU model accel knows",
                     "use a profile name as nvidia-smi -lgip prints it (e.g. 1g.10gb, 3g.40gb); models: " + models);
  }
}

}  // namespace accel::fleet
