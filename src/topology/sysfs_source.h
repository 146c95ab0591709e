// A topology source that reads Linux sysfs under a filesystem root, with no hwloc.
//
// accel's doctor and fabric commands must run against fake machines in tests (and against a
// copy of another host's /sys gathered for a support case), so this source reads only files
// under ROOT/sys: NUMA nodes, CPUs, hugepages and the PCI tree (with RDMA devices, netdevs and
// SR-IOV state). The live host still comes from hwloc (hwloc_source.h); on a real machine both
// agree on everything this source fills in. Plain functions; safe from any thread.
#pragma once

#include <string>

#include "topology/host.h"

namespace accel::topology {

/// Returns the machine described under `root` (a filesystem root: "/" for this host, or a
/// directory holding sys/...), source "sysfs:ROOT". It reads
///  - ROOT/sys/devices/system/node/nodeN/{cpulist,meminfo,distance,hugepages/*} (nodes),
///  - ROOT/sys/devices/system/cpu/cpuN/topology/{physical_package_id,thread_siblings_list}
///    (packages and SMT sibling sets), model names from ROOT/proc/cpuinfo when present,
///  - the PCI tree by walking ROOT/sys/devices/pciDDDD:BB/ (a function's parent is the
///    directory holding it): class, vendor, device, numa_node, current_link_speed/width
///    (→ link_gbps, NCCL's per-lane rates), infiniband/ and net/ subdirectories,
///    sriov_totalvfs, sriov_numvfs, physfn; os_devices are the DRM nodes (drm/cardN,
///    renderDN), accel/accelN, NVMe namespaces (nvme/nvmeX/nvmeXnY) and block/ devices; net/
///    and block/ are also read under a virtioN/ child (virtio-net, virtio-blk). On a machine
///    with one NUMA node every function is local to it, as hwloc reports. A function with
///    functions below it is a bridge; a pciDDDD:BB directory below a function (Intel VMD) is
///    a host bridge of its own. Names (lspci's strings) are left empty.
///  - hostname from ROOT/proc/sys/kernel/hostname, else ROOT/etc/hostname, else "localhost".
/// Base pages are this process's page size when ROOT is "/", else 4 KiB (64 KiB when
/// ROOT/proc/cpuinfo names a POWER CPU). Unreadable or garbled files read as absent (a
/// numa_node naming no node becomes -1). A machine without NUMA directories (some VMs,
/// containers) becomes one node 0 holding every online CPU, with /proc/meminfo's memory and the
/// global hugepage pools. Throws accel::InputError naming ROOT when it does not exist, is not
/// a directory or has no sys/, or when the result breaks an invariant of host.h
/// (CheckInvariants).
HostTopology LoadSysfsHost(const std::string& root);

}  // namespace accel::topology
