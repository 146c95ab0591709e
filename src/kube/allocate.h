// What a container gets for the devices the kubelet allocated, in each vendor's convention:
// NVIDIA NVIDIA_VISIBLE_DEVICES or CDI (annotations / cdi_devices) and optional /dev/nvidia*
// specs, plus for an MPS-shared resource CUDA_MPS_PIPE_DIRECTORY and the mounts of its control
// daemon's pipe directory and /dev/shm; AMD /dev/kfd plus the device's /dev/dri card and render nodes; Gaudi
// HABANA_VISIBLE_DEVICES plus /dev/accel/accelN and accel_controlDN.
//
// Plain data and pure functions (device node paths are computed, not probed); thread-safe.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kube/node_devices.h"
#include "kube/plugin_config.h"
#include "kube/resources.h"

namespace accel::kube {

/// A mount of a host path into the container.
struct MountSpec {
  std::string container_path;
  std::string host_path;
  bool read_only = false;
};

/// A device node exposed to the container.
struct DeviceNodeSpec {
  std::string container_path;
  std::string host_path;
  /// Cgroup permissions, e.g. "rw", "rwm".
  std::string permissions = "rw";
};

/// One ContainerAllocateResponse, vendor-neutral.
struct ContainerAllocation {
  std::map<std::string, std::string> envs;
  std::map<std::string, std::string> annotations;
  std::vector<MountSpec> mounts;
  std::vector<DeviceNodeSpec> devices;
  /// Fully qualified CDI names ("k8s.device-plugin.nvidia.com/gpu=GPU-…").
  std::vector<std::string> cdi_devices;
};

/// What one unit (NodeDevice) needs in a container in its vendor's convention, before it is
/// merged with other units: the device plugin's AllocateContainer and the DRA driver's CDI
/// specs (dra/cdi_spec.h) both build on it, so the two paths give a container the same nodes
/// and variables.
struct DeviceEdits {
  /// Nodes of the unit itself: NVIDIA /dev/nvidia<minor> (the physical GPU's, for a MIG device
  /// too); AMD /dev/dri/card<minor − 128> and /dev/dri/renderD<minor>; Gaudi
  /// /dev/accel/accel<minor> and /dev/accel/accel_controlD<minor>. Empty when the minor is
  /// unknown (−1, or below 128 for AMD): the caller decides whether that is an error.
  std::vector<DeviceNodeSpec> device_nodes;
  /// Nodes every unit of the vendor needs, shared between units: NVIDIA /dev/nvidiactl,
  /// /dev/nvidia-uvm, /dev/nvidia-uvm-tools; AMD /dev/kfd; none for Gaudi.
  std::vector<DeviceNodeSpec> shared_nodes;
  /// The vendor's visible-devices variable: "NVIDIA_VISIBLE_DEVICES", "HABANA_VISIBLE_DEVICES",
  /// or "" (AMD: the ROCm runtime sees exactly the nodes it is given).
  std::string visible_env;
  /// This unit's entry in visible_env's comma-separated list: NVIDIA the UUID (or with
  /// `nvidia_by_index` "<gpu>" / "<gpu>:<mig>"), Gaudi the minor; "" when visible_env is "".
  std::string visible_value;
};

/// The edits of `device`. NVIDIA host paths are under `dev_root` (NVIDIA's devRoot: where the
/// host's /dev is, "/" normally); AMD and Gaudi host paths are the container paths (their
/// plugins have no such setting). Computed, never probed (see allocate.cc). Never throws.
DeviceEdits EditsOfDevice(const NodeDevice& device, const std::string& dev_root = "/",
                          bool nvidia_by_index = false);

/// A request the plugin refuses; the message is what the kubelet shows in the pod's
/// UnexpectedAdmissionError. Maps to gRPC INVALID_ARGUMENT.
class AllocationError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The response for `ids` (advertised IDs of `resource`). Replica IDs are reduced to their
/// unit and de-duplicated. MPS resources (resource.sharing == kMps) also get
/// CUDA_MPS_PIPE_DIRECTORY=/mps/<resource>/pipe and the mounts of
/// <config.mps_settings.root>/<resource>/pipe there and of /dev/shm. Throws AllocationError
/// for an unknown ID, or for more than one ID of a shared resource with
/// fail_requests_greater_than_one.
ContainerAllocation AllocateContainer(const PluginResource& resource,
                                      const std::vector<NodeDevice>& devices,
                                      const PluginConfig& config,
                                      const std::vector<std::string>& ids);

}  // namespace accel::kube
