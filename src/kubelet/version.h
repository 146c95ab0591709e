// KubernetesVersion: the Kubernetes release a kubelet runs, for rules that depend on it (an
// option stable from 1.32, a field from 1.35). Plain data; thread-safe.
#pragma once

#include <string>

namespace accel::kubelet {

/// A Kubernetes release, as spec.kubernetesVersion and kubeadm write it: v1.33.2.
struct KubernetesVersion {
  int major = 0;  ///< 1
  int minor = 0;  ///< 33
  int patch = 0;  ///< 2
  std::string ToString() const;  ///< "v1.33.2"
  /// True when this version is at least major.minor (for "stable since 1.32" rules).
  bool AtLeast(int want_major, int want_minor) const;
};

/// The release accel assumes when none is given: the oldest it derives configurations for.
inline constexpr KubernetesVersion kDefaultKubernetesVersion{1, 33, 0};

}  // namespace accel::kubelet
