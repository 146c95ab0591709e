// PluginConfig: how the node agent advertises devices to the kubelet — MIG strategy,
// time-slicing, how Allocate names devices, health policy. The YAML reader accepts NVIDIA
// k8s-device-plugin's config file (version v1: flags.migStrategy, flags.plugin.*,
// sharing.timeSlicing) so existing configs keep working, plus accel's own `health` section.
//
// Plain data; the parser is stateless and thread-safe.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "kube/device_set.h"

namespace accel::kube {

/// NVIDIA's MIG strategies.
enum class MigStrategy {
  kNone,    ///< MIG ignored: every GPU is nvidia.com/gpu
  kSingle,  ///< MIG devices are nvidia.com/gpu (all GPUs MIG, one profile)
  kMixed,   ///< one resource per profile: nvidia.com/mig-1g.10gb, ...
};

/// How Allocate tells the container runtime which devices to expose (NVIDIA).
enum class DeviceListStrategy {
  kEnvvar,          ///< NVIDIA_VISIBLE_DEVICES=<ids>
  kVolumeMounts,    ///< /dev/null mounted at /var/run/nvidia-container-devices/<id>
  kCdiAnnotations,  ///< annotation <prefix>accel-device-plugin_<id>=<CDI names>
  kCdiCri,          ///< ContainerAllocateResponse.cdi_devices
};

/// sharing.timeSlicing.
struct TimeSlicing {
  /// Advertise shared resources as "<name>.shared" (nvidia.com/gpu.shared).
  bool rename_by_default = false;
  /// Refuse Allocate requests of more than one replica.
  bool fail_requests_greater_than_one = false;
  /// Resource name (e.g. "nvidia.com/gpu", "nvidia.com/mig-1g.10gb") → replicas (≥ 2).
  std::vector<std::pair<std::string, int>> resources;
};

/// When a device is taken out of service and put back.
struct HealthPolicy {
  /// false: every device always Healthy (DP_DISABLE_HEALTHCHECKS=all).
  bool enabled = true;
  /// XIDs that are application errors, not device faults (NVIDIA's default set).
  std::set<uint64_t> ignored_xids = {13, 31, 43, 45, 68, 109};
  /// A device unhealthy from a critical XID is Healthy again after this many seconds without a
  /// new critical event while it keeps answering reads. 0 = stays unhealthy until restart.
  int recover_after_seconds = 300;
};

struct PluginConfig {
  /// The kubelet's device-plugin directory (kubelet.sock lives there).
  std::string plugin_dir = "/var/lib/kubelet/device-plugins";
  MigStrategy mig_strategy = MigStrategy::kNone;
  TimeSlicing time_slicing;
  /// flags.plugin.deviceListStrategy (NVIDIA); default envvar.
  std::vector<DeviceListStrategy> device_list = {DeviceListStrategy::kEnvvar};
  /// flags.plugin.deviceIDStrategy: false = UUIDs (default), true = indices ("0", "1:2").
  bool device_id_index = false;
  /// flags.plugin.passDeviceSpecs: add /dev/nvidia* DeviceSpecs to Allocate responses.
  bool pass_device_specs = false;
  /// flags.plugin.cdiAnnotationPrefix.
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  /// flags.nvidiaDevRoot: prefix of device node paths on the host.
  std::string dev_root = "/";
  /// flags.plugin.sharedDevicesAllocationPolicy.
  ReplicaPolicy replica_policy = ReplicaPolicy::kDistributed;
  HealthPolicy health;
};

/// Reads a config node (NVIDIA's v1 schema + `health` + `pluginDir`); a null node gives the
/// defaults. NVIDIA keys with no meaning for accel (failOnInitError, gfd.*, resources, imex,
/// gdrcopy/gds/mofed, mpsRoot, nvidiaCTKPath, ...) are accepted and ignored; nvidiaDriverRoot
/// only serves as dev_root when nvidiaDevRoot is absent (as in NVIDIA's plugin). A bare
/// time-slicing name gets "nvidia.com/". health.ignoredXids replaces the default set.
/// Errors: InputError with where = `where` (file name) and the key path as field, for unknown
/// keys, bad scalars (YAML 1.1 typing, as NVIDIA reads them), replicas < 2, unknown strategies,
/// `rename`, `devices` other than "all" ("accel does not support per-device selection yet"),
/// and sharing.mps ("MPS not supported").
PluginConfig ParsePluginConfig(const YAML::Node& node, const std::string& where);

/// "none", "single", "mixed".
const char* MigStrategyName(MigStrategy s);

}  // namespace accel::kube
