// PluginConfig: how the node agent advertises devices to the kubelet — MIG strategy, sharing
// (time-slicing or MPS), how Allocate names devices, health policy. The YAML reader accepts
// NVIDIA k8s-device-plugin's config file (version v1: flags.migStrategy, flags.mpsRoot,
// flags.plugin.*, sharing.timeSlicing, sharing.mps) so existing configs keep working, plus
// accel's own `health`, `pluginDir`, `nccl` and `flags.mpsControlPath`.
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

/// The sharing strategy a config asks for (NVIDIA's Sharing.SharingStrategy()).
enum class SharingStrategy {
  kNone,         ///< every unit advertised once
  kTimeSlicing,  ///< sharing.timeSlicing: replicas with no memory or fault isolation
  kMps,          ///< sharing.mps: replicas served through an MPS control daemon per resource
};

/// One `resources[]` entry of sharing.timeSlicing or sharing.mps.
struct SharedResource {
  /// Full resource name the entry shares, e.g. "nvidia.com/gpu" ("gpu" is read as that).
  std::string name;
  /// Replicas per unit (>= 2; MPS: at most kMaxMpsReplicas).
  int replicas = 2;
  /// `rename`: the full name the shared resource is advertised under instead; empty = none.
  std::string rename;
};

/// sharing.timeSlicing or sharing.mps (NVIDIA's ReplicatedResources).
struct ReplicatedResources {
  /// Resources without a `rename` are advertised as "<name>.shared" (nvidia.com/gpu.shared).
  bool rename_by_default = false;
  /// Allocate refuses requests of more than one replica. Defaults: false for time-slicing
  /// (NVIDIA's backward compatibility), true for MPS unless the file says false.
  bool fail_requests_greater_than_one = false;
  /// In file order; names unique.
  std::vector<SharedResource> resources;

  /// The name `r` is advertised under: its rename, else "<name>.shared" when
  /// rename_by_default, else its name.
  std::string AdvertisedName(const SharedResource& r) const;
  /// The entry for resource `name`, or null.
  const SharedResource* Find(const std::string& name) const;
};

/// An MPS server serves at most 48 clients on Volta and newer GPUs (16 before Volta), so an MPS
/// resource has at most this many replicas per GPU (NVIDIA's mps-control-daemon refuses more).
inline constexpr int kMaxMpsReplicas = 48;

/// How the node agent runs MPS (NVIDIA's flags.mpsRoot plus accel's flags.mpsControlPath).
struct MpsSettings {
  /// flags.mpsRoot: host directory holding <resource>/pipe, <resource>/log per MPS resource.
  std::string root = "/run/nvidia/mps";
  /// flags.mpsControlPath (accel): the nvidia-cuda-mps-control binary; empty = search PATH,
  /// then <driver root>/usr/bin and <driver root>/bin.
  std::string control_path;
};

/// When a device is taken out of service and put back.
struct HealthPolicy {
  /// false: device faults never take a device out (DP_DISABLE_HEALTHCHECKS=all); an MPS control
  /// daemon that is down still does (DeviceHealth::SetServiceDown).
  bool enabled = true;
  /// XIDs that are application errors, not device faults (NVIDIA's default set).
  std::set<uint64_t> ignored_xids = {13, 31, 43, 45, 68, 109};
  /// A device unhealthy from a critical XID is Healthy again after this many seconds without a
  /// new critical event while it keeps answering reads. 0 = stays unhealthy until restart.
  int recover_after_seconds = 300;
};

/// accel's `nccl:` block: NCCL settings Allocate adds to a GPU container, for clusters that run
/// the RDMA shared device plugin (every HCA mounted into every pod) rather than DRA. Off by
/// default: an env the pod spec also sets would be overridden by it.
struct NcclWiring {
  /// nccl.ibHca: NCCL_IB_HCA="=<HCAs paired with the allocated GPUs>" (accel's GPU↔NIC pairing,
  /// exact-match '=' prefix), so NCCL uses the NICs beside the pod's GPUs and leaves the
  /// storage/management NICs alone. NVIDIA and AMD (RCCL) resources only.
  bool ib_hca = false;
  /// nccl.socketIfname: NCCL_SOCKET_IFNAME added to the same containers (bootstrap interface,
  /// e.g. "eth0"; written "=eth0" unless it starts with '=' or '^'); "" = not set.
  std::string socket_ifname;

  /// Either variable is set.
  bool enabled() const { return ib_hca || !socket_ifname.empty(); }
};

struct PluginConfig {
  /// The kubelet's device-plugin directory (kubelet.sock lives there).
  std::string plugin_dir = "/var/lib/kubelet/device-plugins";
  MigStrategy mig_strategy = MigStrategy::kNone;
  /// sharing.timeSlicing; empty resources when absent.
  ReplicatedResources time_slicing;
  /// sharing.mps (fail_requests_greater_than_one defaults to true here); empty when absent.
  ReplicatedResources mps;
  MpsSettings mps_settings;
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
  /// flags.nvidiaDriverRoot: where the driver's files (and nvidia-cuda-mps-control) are.
  std::string driver_root = "/";
  /// flags.plugin.sharedDevicesAllocationPolicy.
  ReplicaPolicy replica_policy = ReplicaPolicy::kDistributed;
  HealthPolicy health;
  /// `nccl:` (accel): NCCL env added at Allocate; off by default.
  NcclWiring nccl;

  /// MPS when sharing.mps has resources, time-slicing when sharing.timeSlicing has, else none
  /// (the file may not name both).
  SharingStrategy sharing_strategy() const;
  /// The resources of the active strategy (time_slicing for none: empty).
  const ReplicatedResources& sharing() const;
};

/// Reads a config node (NVIDIA's v1 schema + `health` + `pluginDir` + `nccl` +
/// flags.mpsControlPath); a
/// null node gives the defaults. NVIDIA keys with no meaning for accel (failOnInitError, gfd.*,
/// resources, imex, gdrcopy/gds/mofed, nvidiaCTKPath, ...) are accepted and ignored;
/// nvidiaDriverRoot also serves as dev_root when nvidiaDevRoot is absent (as in NVIDIA's
/// plugin). A bare resource name (`name`, `rename`) gets "nvidia.com/". health.ignoredXids
/// replaces the default set.
/// Errors: InputError with where = `where` (file name) and the key path as field, for unknown
/// keys, bad scalars (YAML 1.1 typing, as NVIDIA reads them), replicas < 2 (or > 48 for MPS),
/// unknown strategies, invalid or clashing resource names, `devices` other than "all" ("accel
/// does not support per-device selection yet"), both sharing.timeSlicing and sharing.mps, MPS
/// with migStrategy mixed or with an empty or relative flags.mpsRoot (NVIDIA's own refusals).
PluginConfig ParsePluginConfig(const YAML::Node& node, const std::string& where);

/// "none", "single", "mixed".
const char* MigStrategyName(MigStrategy s);

/// GFD's gpu.sharing-strategy values: "none", "time-slicing", "mps".
const char* SharingStrategyName(SharingStrategy s);

}  // namespace accel::kube
