#include "devices/device.h"

namespace accel::devices {

const char* VendorName(Vendor v) {
  switch (v) {
    case Vendor::kNvidia: return "nvidia";
    case Vendor::kAmd: return "amd";
    case Vendor::kHabana: return "habana";
  }
  return "unknown";
}

}  // namespace accel::devices
