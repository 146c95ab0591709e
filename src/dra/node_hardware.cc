#include "dra/node_hardware.h"

#include <exception>
#include <filesystem>
#include <set>

#include "devices/nvml_links.h"
#include "topology/sources.h"

namespace accel::dra {

namespace {

/// The directory a topology spec reads a sysfs copy from ("sysfs:DIR", or a directory DIR);
/// "" for "live", "none" and files.
std::string SysfsCopyOf(const std::string& topology) {
  if (topology.rfind("sysfs:", 0) == 0) return topology.substr(6);
  if (topology == "live" || topology == "none" || topology.empty()) return "";
  std::error_code ec;
  return std::filesystem::is_directory(topology, ec) ? topology : "";
}

/// Canonical PCI addresses of the physical devices, once each, in device order.
std::vector<std::string> PhysicalDeviceAddresses(const std::vector<kube::NodeDevice>& devices) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& d : devices) {
    if (!d.pci_address.empty() && seen.insert(d.pci_address).second) out.push_back(d.pci_address);
  }
  return out;
}

/// Pairs among `positions` of `interconnect` with at least one link.
int NvlinkedPairs(const devices::Interconnect& interconnect, const std::vector<size_t>& positions) {
  int pairs = 0;
  for (size_t a = 0; a < positions.size(); ++a) {
    for (size_t b = a + 1; b < positions.size(); ++b) {
      pairs += interconnect.links[positions[a] * interconnect.size() + positions[b]] > 0;
    }
  }
  return pairs;
}

/// Adds the NVIDIA GPUs' NVLink / NVSwitch links (from NVML) to `interconnect`; one log line
/// says what was found.
void AddNvmlPeerLinks(const std::vector<devices::DeviceBackend*>& backends,
                      const std::vector<kube::NodeDevice>& devices,
                      devices::Interconnect* interconnect,
                      const std::function<void(const std::string&)>& log) {
  const devices::DeviceBackend* nvml = nullptr;
  for (const devices::DeviceBackend* b : backends) {
    if (b && b->vendor() == devices::Vendor::kNvidia) nvml = b;
  }
  std::set<std::string> gpus;
  for (const auto& d : devices) {
    if (d.vendor == devices::Vendor::kNvidia) gpus.insert(d.pci_address);
  }
  std::vector<std::string> addresses;  // the NVIDIA part of interconnect->devices
  std::vector<size_t> positions;
  for (size_t i = 0; i < interconnect->size(); ++i) {
    if (!gpus.count(interconnect->devices[i])) continue;
    addresses.push_back(interconnect->devices[i]);
    positions.push_back(i);
  }
  if (!nvml || addresses.empty()) return;
  auto found = devices::ReadNvmlPeerLinks(nvml->library_path(), addresses);
  std::vector<std::vector<devices::PeerLink>> links(interconnect->size());
  for (size_t k = 0; k < positions.size(); ++k) links[positions[k]] = std::move(found[k]);
  devices::AddPeerLinks(*interconnect, links);
  int pairs = NvlinkedPairs(*interconnect, positions);
  if (log)
    log("interconnect: " + std::to_string(pairs) + " NVLink-connected GPU pair(s) among " +
        std::to_string(addresses.size()) + " GPU(s)" +
        (interconnect->nvswitch ? ", through NVSwitch" : pairs ? "" : "; PCIe only"));
}

}  // namespace

std::string RdmaPortRoot(const NodeSource& source) {
  if (!source.sysfs_root.empty()) return source.sysfs_root;
  if (std::string copy = SysfsCopyOf(source.topology); !copy.empty()) return copy;
  if (source.topology == "live" || source.host_root != "/") return source.host_root;
  return "";
}

NodeHardware ReadNodeHardware(const NodeSource& source,
                              const std::vector<devices::DeviceBackend*>& backends,
                              const std::function<void(const std::string&)>& log) {
  NodeHardware hw;
  if (source.topology != "none") {
    if (source.topology_required) {
      hw.host = topology::LoadTopology(source.topology);
    } else {
      try {
        hw.host = topology::LoadTopology(source.topology);
      } catch (const std::exception& e) {
        // The agent keeps serving: a host we cannot read only loses NUMA nodes, interconnect
        // levels and the pairing.
        if (log) log(std::string("warning: no host topology (NUMA nodes, PCIe levels): ") + e.what());
        hw.host = {};
      }
    }
  }

  std::vector<devices::DeviceBackend*> present;
  for (devices::DeviceBackend* b : backends) {
    if (b) present.push_back(b);
  }
  if (!present.empty()) {
    hw.devices = kube::DiscoverNodeDevices(present);
    if (!hw.host.pci.empty()) kube::JoinNodeTopology(&hw.devices, hw.host);
    hw.interconnect = devices::PcieInterconnect(hw.host, PhysicalDeviceAddresses(hw.devices));
    if (source.nvlink) AddNvmlPeerLinks(present, hw.devices, &hw.interconnect, log);
  }

  hw.rdma_root = RdmaPortRoot(source);
  if (!hw.rdma_root.empty()) {
    try {
      hw.ports = fabric::ReadNicPorts(hw.rdma_root);
    } catch (const std::exception& e) {  // a sysfs that vanishes under the directory walk
      if (log) log("RDMA ports under " + hw.rdma_root + " unreadable, every port counted as up: " + e.what());
      hw.ports.clear();
    }
  }
  hw.pairing = fabric::PairGpusWithNics(hw.host, hw.ports, source.pairing);
  return hw;
}

}  // namespace accel::dra
