#include "placement/request.h"

namespace accel::placement {

const char* CpuPolicyName(CpuPolicy p) {
  switch (p) {
    case CpuPolicy::kShared:
      return "shared";
    case CpuPolicy::kDedicated:
      return "dedicated";
    case CpuPolicy::kMixed:
      return "mixed";
  }
  return "shared";
}

const char* ThreadPolicyName(ThreadPolicy p) {
  switch (p) {
    case ThreadPolicy::kPrefer:
      return "prefer";
    case ThreadPolicy::kIsolate:
      return "isolate";
    case ThreadPolicy::kRequire:
      return "require";
  }
  return "prefer";
}

const char* EmulatorPolicyName(EmulatorPolicy p) {
  switch (p) {
    case EmulatorPolicy::kShare:
      return "share";
    case EmulatorPolicy::kIsolate:
      return "isolate";
  }
  return "share";
}

const char* PciNumaPolicyName(PciNumaPolicy p) {
  switch (p) {
    case PciNumaPolicy::kRequired:
      return "required";
    case PciNumaPolicy::kLegacy:
      return "legacy";
    case PciNumaPolicy::kPreferred:
      return "preferred";
    case PciNumaPolicy::kSocket:
      return "socket";
  }
  return "legacy";
}

}  // namespace accel::placement
