#include "kubelet/version.h"

namespace accel::kubelet {

std::string KubernetesVersion::ToString() const {
  return "v" + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

bool KubernetesVersion::AtLeast(int want_major, int want_minor) const {
  return major != want_major ? major > want_major : minor >= want_minor;
}

}  // namespace accel::kubelet
