// OpenBackends: the vendor libraries of a node, opened once for the exporter and the node agent.
// A vendor whose library is not installed contributes no devices (one log line), so the same
// binary runs on NVIDIA, AMD, Gaudi and accelerator-less nodes.
//
// Stateless; safe from any thread (the vendor libraries' own init is not re-entrant, so callers
// open a node's backends from one thread).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "devices/backend.h"

namespace accel::devices {

/// Explicit library paths; "" = the loader's search path.
struct VendorLibraries {
  std::string nvml;      ///< libnvidia-ml.so.1
  std::string rocm_smi;  ///< librocm_smi64.so
  std::string hlml;      ///< libhlml.so
};

/// Whether `vendor` is one of "nvidia", "amd", "habana".
bool IsKnownVendor(const std::string& vendor);

/// Opens the backends of `vendors` (in the fixed order nvidia, amd, habana), logging one line
/// per vendor through `log` (may be empty): the library and device count, or "not installed".
/// Returns the opened backends (possibly none). Throws InputError(where, "", ...) on an unknown
/// vendor name, and BackendError when a library is found or named but cannot be used.
std::vector<std::unique_ptr<DeviceBackend>> OpenBackends(
    const std::vector<std::string>& vendors, const VendorLibraries& libraries,
    const std::function<void(const std::string&)>& log, const std::string& where = "--vendors");

}  // namespace accel::devices
