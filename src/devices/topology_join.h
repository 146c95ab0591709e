// Joins vendor-reported devices to the host topology model by PCI address.
#pragma once

#include <string>
#include <vector>

#include "devices/device.h"
#include "topology/host.h"

namespace accel::devices {

/// Canonical PCI address "dddd:bb:dd.f", lower case, from any of the vendor spellings:
/// NVML "00000000:3B:00.0" (8-digit domain), "0000:3b:00.0", HLML "0000:b3:00.0", or a packed
/// rsmi BDF rendered by the backend. Returns "" when `text` is not a PCI address.
std::string CanonicalPciAddress(const std::string& text);

/// dcgm-exporter's pci_bus_id spelling: "%08X:%02X:%02X.%X" (NVML busId), from a canonical
/// address. Returns `canonical` unchanged when it does not parse.
std::string NvmlPciBusId(const std::string& canonical);

/// Sets numa_node (and nothing else) on each device whose pci_address is in `host`; devices the
/// topology does not know keep what the backend reported.
void JoinTopology(std::vector<DeviceIdentity>* devices, const topology::HostTopology& host);

}  // namespace accel::devices
