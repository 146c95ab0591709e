// CDI specs of prepared claims: what the container runtime (containerd, CRI-O) injects for the
// CDI ids NodePrepareResources answers — one spec file per claim, as NVIDIA's DRA driver does
// (kind "k8s.gpu.nvidia.com/claim" there, "k8s.<driver>/claim" here, so "k8s.accel.io/claim"),
// one CDI device per allocated device named "<claim uid>-<device>", and the claim-wide env
// (the vendors' visible-devices lists, NCCL) in the spec's own containerEdits.
//
// cdiVersion "0.5.0": the lowest that allows hostPath on device nodes and device names that
// start with a digit (claim uids do); nothing newer (annotations, intelRdt, additionalGIDs)
// is used. The file is "<vendor>-<class>_<uid>.json" (CDI's GenerateTransientSpecName), e.g.
// "k8s.accel.io-claim_<uid>.json", written atomically (common/atomic_file.h) so the runtime,
// which rescans the directory, never reads half a spec.
//
// Device node host paths are the host's /dev paths (the runtime, not the agent, opens them).
// Two lookups read the host (under DeviceNodeOptions::host_root): the uverbs node of an RDMA
// device (/sys/class/infiniband/<dev>/device/infiniband_verbs/uverbsN) and the MIG capability
// nodes of a MIG device (/proc/driver/nvidia/capabilities/gpu<minor>/mig/gi<g>[/ci<c>]/access).
//
// Limits (documented, not hidden):
//  * The vendors' visible-devices variables are lists, and CDI env is "last one wins", so they
//    are claim-wide: a container that asks for only one request of a multi-request claim sees
//    the whole claim's NVIDIA_VISIBLE_DEVICES (its device nodes are still only its own).
//  * NVIDIA driver libraries are not in the spec (that needs nvidia-ctk's probe of the driver
//    files); the NVIDIA container runtime adds them from NVIDIA_VISIBLE_DEVICES, as it does for
//    the device plugin's envvar strategy.
//  * An RDMA NIC's netdev stays in the host network namespace (moving it is dra.net's job):
//    InfiniBand and RoCE in shared mode work; RoCE with an exclusive netns does not.
//
// Pure functions except WriteCdiSpec/RemoveCdiSpec and the host lookups; all thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/inventory.h"
#include "kube/allocate.h"

namespace accel::dra {

/// The CDI version written (see above).
inline constexpr const char* kCdiVersion = "0.5.0";

/// CDI containerEdits.
struct CdiEdits {
  /// Environment, in order; names unique within one edits block.
  std::vector<std::pair<std::string, std::string>> env;
  /// Device nodes (path in the container, host path, cgroup permissions).
  std::vector<kube::DeviceNodeSpec> device_nodes;
  /// Bind mounts.
  std::vector<kube::MountSpec> mounts;

  bool empty() const { return env.empty() && device_nodes.empty() && mounts.empty(); }
};

/// One CDI device of a spec.
struct CdiDevice {
  std::string name;  ///< unqualified: "<claim uid>-<device>"
  CdiEdits edits;
};

/// One spec file.
struct CdiSpec {
  std::string kind;  ///< "<vendor>/<class>", e.g. "k8s.accel.io/claim"
  std::vector<CdiDevice> devices;
  /// Applied whenever any device of the spec is injected: claim-wide env.
  CdiEdits edits;
};

/// "k8s.<driver>/claim".
std::string ClaimCdiKind(const std::string& driver);
/// "<claim uid>-<device>".
std::string ClaimCdiDeviceName(const std::string& claim_uid, const std::string& device);
/// "<kind>=<name>": the id the kubelet hands to the runtime.
std::string QualifiedCdiName(const std::string& kind, const std::string& name);
/// "<vendor>-<class>_<uid>.json" for kind "<vendor>/<class>" ('/' in the uid becomes '_').
std::string CdiSpecFileName(const std::string& kind, const std::string& claim_uid);

/// The spec as CDI JSON: {"cdiVersion", "kind", "devices": [{"name", "containerEdits"}],
/// "containerEdits"}; empty edits and empty lists are left out; env as "NAME=value"; mounts
/// as bind mounts with options ["ro" or "rw", "nosuid", "nodev", "bind"].
nlohmann::ordered_json CdiSpecJson(const CdiSpec& spec);

/// Writes the spec of claim `claim_uid` atomically as `dir`/CdiSpecFileName (creating `dir`
/// when missing, mode 0644) and returns the path. Throws SystemError (the directory is not
/// writable, disk full, ...): then no file and no temporary file is left.
std::string WriteCdiSpec(const std::string& dir, const CdiSpec& spec, const std::string& claim_uid);

/// Removes a spec file; a missing file is success (idempotent). Throws SystemError for any
/// other failure.
void RemoveCdiSpec(const std::string& path);

/// Where device nodes' identities are looked up.
struct DeviceNodeOptions {
  /// The host's root as the agent sees it ("/" on the host; e.g. "/host" in a container with
  /// the host's /sys and /proc mounted there). Only /sys and /proc are read under it.
  std::string host_root = "/";
};

/// N of /dev/infiniband/uverbsN of RDMA device `rdma_device` ("mlx5_0"): from
/// ROOT/sys/class/infiniband/<dev>/device/infiniband_verbs/uverbsN, else the
/// ROOT/sys/class/infiniband_verbs/uverbs*/ibdev naming it. −1 when neither says (ib_uverbs
/// not loaded, or no such device).
int FindUverbsIndex(const std::string& host_root, const std::string& rdma_device);

/// The minors of /dev/nvidia-caps/nvidia-cap<N> a MIG device needs (its GPU instance's, then
/// its compute instance's "DeviceFileMinor"), read under ROOT/proc/driver/nvidia/capabilities.
/// Empty when unreadable (the NVIDIA container runtime then adds them itself).
std::vector<int> MigCapabilityMinors(const std::string& host_root, int gpu_minor,
                                     unsigned gpu_instance, unsigned compute_instance);

/// The containerEdits of one published device, and its contribution to claim-wide env.
struct DeviceCdi {
  CdiEdits edits;
  /// The vendor's visible-devices variable and this device's entry ("" when none), merged
  /// claim-wide by the caller in allocation order.
  std::string visible_env;
  std::string visible_value;
};

/// The edits of `device` (of `inventory`): accelerators through kube::EditsOfDevice (the
/// device plugin's conventions: NVIDIA /dev/nvidiaN + nvidiactl + nvidia-uvm(-tools) and
/// NVIDIA_VISIBLE_DEVICES=<uuid>; a MIG device its GPU's node plus its nvidia-caps nodes when
/// readable; AMD /dev/kfd + /dev/dri/cardN + renderD<minor>; Gaudi accelN + accel_controlDN and
/// HABANA_VISIBLE_DEVICES=<minor>); RDMA NICs /dev/infiniband/uverbsN + /dev/infiniband/rdma_cm.
/// Throws SystemError when a node cannot be named: an AMD/Gaudi device without a minor, a NIC
/// whose uverbs device is not found; InputError when `device` points outside the inventory.
DeviceCdi DeviceCdiEdits(const Inventory& inventory, const DraDevice& device,
                         const DeviceNodeOptions& options);

}  // namespace accel::dra
