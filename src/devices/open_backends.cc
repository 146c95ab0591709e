#include "devices/open_backends.h"

#include <algorithm>

#include "common/error.h"

namespace accel::devices {

bool IsKnownVendor(const std::string& vendor) {
  return vendor == "nvidia" || vendor == "amd" || vendor == "habana";
}

std::vector<std::unique_ptr<DeviceBackend>> OpenBackends(
    const std::vector<std::string>& vendors, const VendorLibraries& libraries,
    const std::function<void(const std::string&)>& log, const std::string& where) {
  for (const auto& v : vendors) {
    if (!IsKnownVendor(v)) {
      throw InputError(where, "", "unknown vendor '" + v + "'",
                       "use a list of nvidia, amd, habana");
    }
  }
  struct Candidate {
    const char* vendor;
    const char* what;
    const std::string* library;
    std::unique_ptr<DeviceBackend> (*open)(const std::string&);
  };
  const Candidate candidates[] = {
      {"nvidia", "NVML", &libraries.nvml, OpenNvml},
      {"amd", "ROCm SMI", &libraries.rocm_smi, OpenRocmSmi},
      {"habana", "HLML", &libraries.hlml, OpenHlml},
  };
  std::vector<std::unique_ptr<DeviceBackend>> backends;
  for (const Candidate& c : candidates) {
    if (std::find(vendors.begin(), vendors.end(), c.vendor) == vendors.end()) continue;
    std::unique_ptr<DeviceBackend> backend = c.open(*c.library);
    if (!backend) {
      if (log) log(std::string(c.what) + ": not installed, no " + c.vendor + " devices");
      continue;
    }
    if (log) {
      log(std::string(c.what) + " " + backend->library_path() + ": " +
          std::to_string(backend->devices().size()) + " device(s)" +
          (backend->driver_version().empty() ? "" : ", driver " + backend->driver_version()));
    }
    backends.push_back(std::move(backend));
  }
  return backends;
}

}  // namespace accel::devices
