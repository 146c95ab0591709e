#include "devices/topology_join.h"

#include <cctype>
#include <cstdio>
#include <unordered_map>

namespace accel::devices {

std::string CanonicalPciAddress(const std::string& text) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  // domain:bus:dev.fn with a domain of up to 8 hex digits; nothing may follow.
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) != 4) return "";
  size_t colon = text.find(':');
  if (colon == 0 || colon > 8 || domain > 0xffff || bus > 0xff || dev > 0x1f || fn > 7) return "";
  char out[16];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", domain, bus, dev, fn);
  return out;
}

std::string NvmlPciBusId(const std::string& canonical) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(canonical.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return canonical;
  char out[24];
  std::snprintf(out, sizeof out, "%08X:%02X:%02X.%X", domain, bus, dev, fn);
  return out;
}

void JoinTopology(std::vector<DeviceIdentity>* devices, const topology::HostTopology& host) {
  std::unordered_map<std::string, int> numa_by_address;
  for (const auto& pci : host.pci) numa_by_address[pci.address] = pci.numa_node;
  for (DeviceIdentity& d : *devices) {
    auto it = numa_by_address.find(CanonicalPciAddress(d.pci_address));
    if (it != numa_by_address.end() && it->second >= 0) d.numa_node = it->second;
  }
}

}  // namespace accel::devices
