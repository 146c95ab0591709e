// Nova's view of a host's usage, as the Nova filter (deploy/openstack/accel_nova_filter.py)
// sends it with POST /api/v1/filter: for hosts where Nova places the VMs, accel's store holds no
// claims, so the filter hands over what nova-scheduler's HostState says is used.
//
//   {"cells": [{"id": 0, "pinned_cpus": [2, 3], "cpu_usage": 6,
//               "mempages": [{"size_kb": 4, "used": 0}, {"size_kb": 1048576, "used": 16}]}],
//    "pci":   [{"vendor_id": "10de", "product_id": "2330", "numa_node": 0, "used": 1}]}
//
// or, with Nova's PCI pools as nova-scheduler holds them (their counts are FREE devices; the
// scheduler cannot know a pool's total), "pci_free" instead of "pci":
//
//    "pci_free": [{"vendor_id": "10de", "product_id": "2330", "numa_node": 0, "free": 3},
//                 {"vendor_id": "10de", "product_id": "2330", "numa_node": null, "free": 2}]
//
// A PCI entry stands for one of Nova's pools: its vendor/product on one NUMA node. In both forms
// an integer numa_node means the devices on that node, and null, -1 or no numa_node means ONLY the
// devices whose NUMA node is unknown (topology::PciDevice::numa_node < 0) — never "any node".
// That is Nova's pool of devices without NUMA affinity (libvirt reports no node, nova-compute
// keeps them in a pool with numa_node None), which hw:pci_numa_affinity_policy treats apart:
// legacy and preferred may use them, required and socket may not (placement/pci_fit.h).
//
// cpu_usage is pinned CPUs + floating vCPUs of the cell; Nova 26's NUMACell.cpu_usage counts only
// the floating ones, so the filter sends cpu_usage + len(pinned_cpus).
// Stateless; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "placement/usage.h"
#include "topology/host.h"

namespace accel::fleet {

/// The HostUsage that `nova` describes on `host`:
///   - a cell's pinned_cpus are held CPUs of that node; cpu_usage beyond them is shared vCPUs;
///   - mempages[].used are pages of that size held on the node (size_kb 4 = base pages);
///   - a PCI pool's `used` devices are the first that many devices with its vendor/product in
///     its pool (on its node; numa_node null, -1 or absent: of unknown NUMA node), in address
///     order (Nova counts per pool, not per address: for fitting, which ones are held does not
///     matter);
///   - with pci_free instead: every PCI device of the host is held except, per entry, the first
///     `free` devices with its vendor/product in its pool (as above), in address order — an
///     empty list holds them all. Nova drops a pool when its last device is taken and lists no
///     device outside [pci]device_spec, so a device in no entry is one Nova cannot give.
/// Entries of the same pool add up. Throws InputError naming `where` and the field for a
/// malformed document (numa_node neither a node id, null nor -1), a cell the host lacks, or more
/// used (or free) devices than the host has in the pool (e.g. a null pool of 2 on a host whose
/// devices all have a NUMA node), or both pci and pci_free.
placement::HostUsage UsageFromNova(const nlohmann::json& nova, const topology::HostTopology& host,
                                   const std::string& where);

}  // namespace accel::fleet
