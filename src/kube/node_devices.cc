// Discovery of the units the node agent advertises: one read per physical device gives its
// memory and, for MIG-enabled NVIDIA GPUs, the MIG devices.
#include "kube/node_devices.h"

#include <exception>
#include <utility>

namespace accel::kube {

namespace {

// The kubelet-facing ID of a physical device, in the vendor's own plugin's convention.
std::string DeviceId(const devices::DeviceIdentity& identity) {
  std::string id;
  switch (identity.vendor) {
    case devices::Vendor::kNvidia: id = identity.uuid; break;
    case devices::Vendor::kAmd: id = identity.pci_address; break;
    case devices::Vendor::kHabana:
      id = identity.serial.empty() ? identity.uuid : identity.serial;
      break;
  }
  if (id.empty()) id = identity.pci_address;
  if (id.empty()) {
    id = std::string(devices::VendorName(identity.vendor)) + "-" + std::to_string(identity.index);
  }
  return id;
}

// A read that never throws: a vendor library fault leaves the reading empty (no MIG devices,
// unknown memory), which is the most the plugin can say about such a device.
devices::DeviceReading SafeRead(devices::DeviceBackend* backend, size_t position) {
  try {
    return backend->Read(position);
  } catch (const std::exception&) {
    return {};
  }
}

NodeDevice WholeDevice(const devices::DeviceIdentity& identity, size_t position,
                       const std::string& backend_driver) {
  NodeDevice d;
  d.vendor = identity.vendor;
  d.id = DeviceId(identity);
  d.index = identity.index;
  d.physical_id = d.id;
  d.position = position;
  d.numa_node = identity.numa_node;
  d.pci_address = identity.pci_address;
  d.model = identity.model;
  d.minor = identity.minor;
  d.driver_version = identity.driver_version.empty() ? backend_driver : identity.driver_version;
  return d;
}

NodeDevice MigDevice(const NodeDevice& gpu, const devices::MigInstance& instance,
                     unsigned mig_index) {
  NodeDevice d = gpu;
  d.id = instance.uuid.empty() ? "MIG-" + gpu.id + "/" + std::to_string(instance.gpu_instance_id) +
                                     "/" + std::to_string(instance.compute_instance_id)
                               : instance.uuid;
  d.mig_profile = instance.profile;
  d.gpu_instance_id = instance.gpu_instance_id;
  d.compute_instance_id = instance.compute_instance_id;
  d.mig_index = mig_index;
  d.memory_bytes = instance.sample.memory_total_bytes.value_or(0);
  return d;
}

}  // namespace

std::vector<NodeDevice> DiscoverNodeDevices(const std::vector<devices::DeviceBackend*>& backends) {
  std::vector<NodeDevice> out;
  for (devices::DeviceBackend* backend : backends) {
    if (backend == nullptr) continue;
    const auto& identities = backend->devices();
    for (size_t position = 0; position < identities.size(); ++position) {
      NodeDevice gpu = WholeDevice(identities[position], position, backend->driver_version());
      devices::DeviceReading reading = SafeRead(backend, position);
      gpu.memory_bytes = reading.sample.memory_total_bytes.value_or(0);
      gpu.mig_enabled = reading.mig_enabled && gpu.vendor == devices::Vendor::kNvidia;
      out.push_back(gpu);
      if (!gpu.mig_enabled) continue;
      for (size_t k = 0; k < reading.mig.size(); ++k) {
        out.push_back(MigDevice(gpu, reading.mig[k], static_cast<unsigned>(k)));
      }
    }
  }
  return out;
}

void JoinNodeTopology(std::vector<NodeDevice>* devices, const topology::HostTopology& host) {
  for (NodeDevice& d : *devices) {
    const topology::PciDevice* pci = d.pci_address.empty() ? nullptr : host.FindPci(d.pci_address);
    if (pci != nullptr && pci->numa_node >= 0) d.numa_node = pci->numa_node;
  }
}

}  // namespace accel::kube
