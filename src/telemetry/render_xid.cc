// err_msg texts for DCGM_FI_DEV_XID_ERRORS: our own short descriptions of the XIDs people meet
// most often. dcgm-exporter's table is not reproduced (its texts change between releases anyway;
// dashboards and alerts should key on err_code).
#include "telemetry/render_internal.h"

namespace accel::telemetry::internal {

std::string_view XidMessage(uint64_t xid) {
  switch (xid) {
    case 0: return "No Error";
    case 13: return "Graphics engine exception in a running application";
    case 31: return "GPU memory page fault in a running application";
    case 43: return "GPU stopped an application context after a fault";
    case 45: return "Channels torn down (process ended or was killed)";
    case 48: return "Uncorrectable (double-bit) ECC memory error";
    case 61: return "Internal microcontroller stopped at a breakpoint";
    case 62: return "Internal microcontroller halted";
    case 63: return "Memory row remap or page retirement recorded";
    case 64: return "Memory row remap or page retirement could not be recorded";
    case 68: return "Video decoder engine exception";
    case 69: return "Graphics engine class error";
    case 74: return "NVLink error";
    case 79: return "GPU is no longer reachable on the PCIe bus";
    case 92: return "Correctable ECC errors at an excessive rate";
    case 94: return "Uncorrectable memory error contained to the affected processes";
    case 95: return "Uncorrectable memory error not contained; GPU reset needed";
    case 119: return "GPU System Processor did not answer in time";
    case 120: return "GPU System Processor reported an error";
    case 121: return "Chip-to-chip link error corrected";
  }
  return "Unknown Error";
}

}  // namespace accel::telemetry::internal
