// NodeDevice: one unit the node agent can hand to a container — a whole GPU/HPU, or one MIG
// device of a MIG-enabled GPU — with what the device plugin, labels and allocation need.
//
// Discovered from the opened vendor backends (devices layer). Plain data; the discovery
// function reads each backend once and is not thread-safe with concurrent Read()s of the same
// backend.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "devices/backend.h"
#include "devices/device.h"
#include "topology/host.h"

namespace accel::kube {

struct NodeDevice {
  devices::Vendor vendor = devices::Vendor::kNvidia;
  /// Stable ID the kubelet sees: NVIDIA "GPU-…"/"MIG-…" UUID; AMD the PCI address
  /// ("0000:c1:00.0", as AMD's plugin does); Gaudi the serial (HLML UUID when no serial).
  std::string id;
  /// Vendor index of the physical device (NVML index, rsmi dv_ind, hlml index).
  unsigned index = 0;
  /// The physical device's ID (equals `id` for whole devices; the GPU's UUID for MIG devices).
  std::string physical_id;
  /// Position of the physical device in its backend's devices() list.
  size_t position = 0;
  /// MIG profile ("1g.10gb", "1g.10gb+me"); empty for a whole device.
  std::string mig_profile;
  /// MIG GPU-instance / compute-instance ids (0 for whole devices).
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  /// Position of this MIG device among its GPU's MIG devices (the "<gpu>:<mig>" index form).
  unsigned mig_index = 0;
  /// The physical GPU has MIG mode on (whole devices of such GPUs are not allocatable under
  /// the single and mixed strategies).
  bool mig_enabled = false;
  /// NUMA node of the physical device; -1 unknown.
  int numa_node = -1;
  /// Canonical PCI address of the physical device.
  std::string pci_address;
  /// Product name, e.g. "NVIDIA H100 80GB HBM3".
  std::string model;
  /// Memory of this unit (whole device, or the MIG instance) in bytes; 0 unknown.
  uint64_t memory_bytes = 0;
  /// Device node minor of the physical device (/dev/nvidiaN, /dev/dri/renderDN, accelN); -1.
  int minor = -1;
  /// Driver version string of its backend.
  std::string driver_version;

  /// A MIG device (not a whole physical device).
  bool is_mig() const { return id != physical_id; }
};

/// Every allocatable unit of the given backends (null entries skipped), in backend order, each
/// physical device followed by its MIG devices. Reads each device once (for MIG instances and
/// memory). Never throws for device faults: a lost device is listed (and will be unhealthy).
/// A device whose vendor ID is empty gets its PCI address, else "<vendor>-<index>"; a MIG
/// device without a UUID gets the legacy "MIG-<gpu uuid>/<gi>/<ci>" form.
std::vector<NodeDevice> DiscoverNodeDevices(const std::vector<devices::DeviceBackend*>& backends);

/// Sets numa_node on each device whose pci_address `host` knows with a NUMA node (backends do
/// not report it); others keep theirs.
void JoinNodeTopology(std::vector<NodeDevice>* devices, const topology::HostTopology& host);

}  // namespace accel::kube
