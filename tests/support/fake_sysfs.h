// Fake machines on disk: a sysfs/procfs tree written from a HostTopology, for tests of
// everything that reads through a filesystem root (the sysfs topology source, accel doctor,
// the fabric NIC-port reader).
//
// WriteFakeSysfs lays out what Linux would show for `host`: real directory nesting under
// sys/devices/pciDDDD:BB/..., relative symlinks in sys/bus/pci/devices and sys/class/{net,
// infiniband}, node and CPU directories. Tests then add or overwrite single files (WriteFakeFile)
// to shape the case they test: a kernel command line, a port that is down, a link trained low.
#pragma once

#include <string>

#include "topology/host.h"

namespace accel::testing {

/// What WriteFakeSysfs writes beyond the topology itself. Defaults describe a healthy,
/// well-tuned bare-metal machine.
struct FakeSysfsOptions {
  /// Contents of proc/cmdline.
  std::string cmdline = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro";
  /// State of every RDMA port: sys/class/infiniband/DEV/ports/1/state ("4: ACTIVE", "1: DOWN").
  std::string rdma_port_state = "4: ACTIVE";
  /// Link layer of every RDMA port: "InfiniBand" or "Ethernet".
  std::string rdma_link_layer = "InfiniBand";
  /// Port rate written to ports/1/rate, e.g. "400 Gb/sec (4X NDR)".
  std::string rdma_rate = "400 Gb/sec (4X NDR)";
  /// Show a KVM guest: "hypervisor" among the proc/cpuinfo flags and QEMU in
  /// sys/class/dmi/id/{sys_vendor,product_name} (else a Supermicro server).
  bool vm_guest = false;
};

/// Creates (or adds to) a sysfs/procfs tree under `root` describing `host`. For each PCI
/// function: class (0xCCSS00), vendor, device, numa_node, current/max_link_speed and width
/// derived from link_gbps (Gen5/Gen4/Gen3 x16 ...), resource, sriov files, infiniband/DEV
/// (ports/1/{state,phys_state,link_layer,rate}) and net/IF; for each NUMA node: cpulist,
/// meminfo, distance, hugepages; for each CPU: topology files and a proc/cpuinfo entry (model
/// name, physical id, flags); proc/cmdline (and sys/devices/system/cpu/{isolated,nohz_full} as
/// the kernel derives them from it); the hostname; proc/meminfo, global hugepage pools,
/// transparent_hugepage, numa_balancing 0 and DMI names.
/// Throws std::runtime_error when a file cannot be written.
void WriteFakeSysfs(const topology::HostTopology& host, const std::string& root,
                    const FakeSysfsOptions& options = {});

/// Writes `text` to ROOT/relative_path, creating directories; replaces an existing file.
void WriteFakeFile(const std::string& root, const std::string& relative_path,
                   const std::string& text);

/// The sysfs directory of a PCI function under `root` (ROOT/sys/devices/pci.../ADDR) as
/// WriteFakeSysfs lays it out; throws std::runtime_error when `address` is not in `host`.
std::string FakePciDir(const topology::HostTopology& host, const std::string& root,
                       const std::string& address);

}  // namespace accel::testing
