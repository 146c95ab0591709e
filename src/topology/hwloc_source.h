// Topology sources backed by libhwloc (2.x): the live host and hwloc XML exports.
//
// hwloc gives packages, NUMA nodes, cores, distances and the PCI tree (with all bridges and OS
// devices: I/O filter KEEP_ALL). The live source adds what hwloc does not carry: hugepage
// pools (sysfs_hugepages.h) and SR-IOV state from sysfs. XML written by hwloc 3.0
// (topology version="3.0"), which Debian's hwloc 2.9 refuses, is downgraded in memory first.
// Each call builds and destroys its own hwloc topology: safe from several threads. hwloc's XML
// warnings stay off stderr unless HWLOC_XML_VERBOSE=1 is set (hwloc's own default).
#pragma once

#include <string>
#include <string_view>

#include "topology/host.h"

namespace accel::topology {

/// Returns this machine's topology (source "live"): hwloc discovery, including CPUs outside
/// this process's cgroup, merged with sysfs hugepages and SR-IOV state.
/// Throws accel::InputError (where "live") when hwloc cannot load or the result breaks an
/// invariant of host.h.
HostTopology LoadLiveHost();

/// Returns the topology in the hwloc XML file at `path` (source "hwloc-xml:PATH"). The
/// hostname is the export's HostName info, else the file's base name without extension.
/// SR-IOV virtual functions are inferred by device id (see classify.h). A PCI address listed
/// twice (only hand-edited exports do that) is kept once: its first occurrence in tree order.
/// Throws accel::InputError naming `path` when the file is missing, unreadable, not hwloc XML,
/// or describes an inconsistent machine.
HostTopology LoadHwlocXml(const std::string& path);

/// As LoadHwlocXml, from XML text already in memory. `where` names it in errors and in
/// `source`; `fallback_hostname` is used when the export has no HostName.
HostTopology LoadHwlocXmlText(const std::string& xml, const std::string& where,
                              const std::string& fallback_hostname);

/// Returns `xml` rewritten so that hwloc 2.x imports it when it is a version 3.x export:
/// version="2.0", OS device types mapped from v3's bitmask to v2's enum
/// (MapOsdevTypeV3ToV2), and the topology-level <info> (HostName, ...) moved into the root
/// object where v2 keeps it. Any other input is returned unchanged.
std::string DowngradeHwlocXml(const std::string& xml);

/// Maps a v3 osdev_type bitmask (STORAGE 1, MEMORY 2, GPU 4, COPROC 8, NETWORK 16,
/// OPENFABRICS 32, DMA 64) to the v2 enum (BLOCK 0, GPU 1, NETWORK 2, OPENFABRICS 3, DMA 4,
/// COPROC 5). GPU|COPROC devices (12) are GPU for nvml/rsmi names and COPROC otherwise, as
/// hwloc 3's own v2 export does.
int MapOsdevTypeV3ToV2(unsigned v3_type, std::string_view name);

/// Sets the SR-IOV fields of every PCI function of `host` from
/// SYSFS_ROOT/bus/pci/devices/ADDR/{sriov_totalvfs,sriov_numvfs,physfn}. Functions missing
/// from sysfs are left as they are.
void MergeSysfsSriov(const std::string& sysfs_root, HostTopology* host);

}  // namespace accel::topology
