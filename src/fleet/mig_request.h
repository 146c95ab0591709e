// MIG-profile requests in the fleet: a GpuRequest naming a MIG profile gets, for every GPU model
// of the MIG catalog (sharing/mig_geometry.h) that has a profile of that name, the profile's
// geometry (MigShape: the model's PCI ids, its memory slices, the profile's size and allowed
// starts), so placement can fit the slice exactly beside the slices already on a GPU without
// knowing the catalog itself. Pure functions of static data: thread-safe.
#pragma once

#include <string>
#include <vector>

#include "placement/request.h"

namespace accel::fleet {

/// The shapes of MIG profile `profile` on every model of the catalog that has one of that name
/// (one per PCI id of the model); empty when none has it.
std::vector<placement::MigShape> MigShapesOf(const std::string& profile);

/// Fills gpu->mig_shapes from the MIG catalog for gpu->mig_profile (nothing when it is empty).
/// A GPU of a model without the profile cannot take the request. Throws InputError naming
/// `where` when no model of the catalog has the profile, or when count is not 1.
void ResolveMigShapes(placement::GpuRequest* gpu, const std::string& where);

}  // namespace accel::fleet
