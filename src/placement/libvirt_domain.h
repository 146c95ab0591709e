// The libvirt domain XML that realizes a placement: what Nova's libvirt driver would write
// for the same guest (nova-numa.md §5: <vcpu>, <cputune>, <numatune>, <memoryBacking>,
// <cpu><topology>/<numa>, <hostdev>), plus what Nova leaves out: each passed-through device
// sits behind a pcie-expander-bus that tells the guest which of its NUMA nodes the device is
// near. The result passes `virt-xml-validate FILE domain`. Pure function, thread-safe.
#pragma once

#include <optional>
#include <string>

#include "common/cpuset.h"
#include "placement/placement.h"
#include "placement/request.h"
#include "topology/host.h"

namespace accel::placement {

/// How to dress the domain; everything here is independent of the placement.
struct DomainOptions {
  /// Domain name; "" = the flavor name, with '/' and control characters (which libvirt refuses
  /// in names) turned into '_'.
  std::string name;
  /// Domain UUID, 32 hex digits with or without dashes; unset = none (libvirt makes one).
  std::optional<std::string> uuid;
  /// QEMU binary, <devices><emulator>.
  std::string emulator = "/usr/bin/qemu-system-x86_64";
  /// QEMU machine type; PCI expander buses are only added on q35 ("q35", "pc-q35-*").
  std::string machine = "q35";
  /// <domain type=>: "kvm"; "qemu" without KVM; "test" for libvirt's test driver.
  std::string domain_type = "kvm";
  /// Disk image for a virtio disk (vda); qcow2 when the name ends in ".qcow2", else raw.
  /// Unset = no disk.
  std::optional<std::string> disk_image;
  /// <hostdev managed='yes'>: libvirt unbinds the device from its host driver for the guest.
  bool managed_hostdevs = true;
  /// The host's [compute]cpu_shared_set (HostPolicy::cpu_shared_set). When set, as in Nova, a
  /// guest with no NUMA topology floats over it (<vcpu cpuset=>), and emulator threads of a
  /// guest with emulator policy "share" run on it instead of on the guest's own pCPUs.
  std::optional<CpuSet> cpu_shared_set;
  /// Put devices local to a guest cell behind a pcie-expander-bus for that cell (q35 only).
  /// false = Nova's layout: no guest address, the guest sees no NUMA node for the device.
  bool pci_expander_buses = true;
  /// Major version of the libvirt that will read the XML; from 8 on <topology> gets dies='1'.
  int libvirt_major = 9;
};

/// XML namespace of accel's <metadata> element.
inline constexpr const char* kAccelMetadataNamespace = "urn:accel:libvirt:domain:1";

/// Returns the domain XML (a complete document ending in a newline) for `placement` of
/// `request` on `host`. Throws accel::InputError (where "placement", "request" or
/// "options") when they disagree or cannot be written: vCPUs of the cells not exactly
/// 0..vcpus-1, cell memory not adding up, shared vCPUs without shared CPUs, emulator isolate
/// without emulator CPUs, a malformed device address or UUID, an unusable name.
std::string RenderDomainXml(const topology::HostTopology& host, const PlacementRequest& request,
                            const Placement& placement, const DomainOptions& options);

}  // namespace accel::placement
