// The NCCL topology file for a VM: the guest sees a flat PCI tree with NUMA node -1, so its
// NCCL mis-detects every path; the hypervisor knows the truth and writes it down.
//
// Input: the host topology, its pairing, and the placement's libvirt domain XML (host BDF →
// guest BDF of each passed-through device, guest NUMA cell of each expander bus). Output: a
// <system version="1"> XML with one <cpu numaid> per guest cell, and under it one virtual
// PCIe switch per GPU holding the GPU and its paired NIC (guest addresses), ready for
// /var/run/nvidia-topologyd/virtualTopology.xml (NCCL's default path). Thread-safe.
//
// Guest bus numbers. libvirt names a device's bus by the *controller index* of the bridge it
// sits behind; the guest sees the number its firmware (SeaBIOS or OVMF) gave that bridge's
// secondary bus. Both firmwares number depth-first: on each root bus they walk slots and
// functions in ascending order and give every PCI-to-PCI bridge (pcie-root-port, switch
// ports, pci-bridge, dmi-to-pci-bridge, pcie-to-pci-bridge) the next free number, then
// number the buses below it before moving on. pcie-root starts at 0; a pcie-expander-bus
// (QEMU pxb-pcie) is a separate root bus starting at its <target busNr>. So a device behind
// root port k (slot k) of an expander with busNr B is at guest bus B+1+k, and a device behind
// the n-th root port of pcie-root is at bus n — which equals that port's controller index
// only when the ports were added in slot order with nothing before them (libvirt's usual
// layout, but not guaranteed: a pci-bridge, a hand-placed controller or a hot-plugged port
// shifts it). A guest kernel booted with pci=assign-busses, or a device hot-plugged later,
// may differ again; --guest-map HOST=GUEST overrides any address.
#pragma once

#include <string>
#include <vector>

#include "common/cpuset.h"
#include "fabric/pairing.h"
#include "topology/host.h"

namespace accel::fabric {

/// One PCI device passed through to a guest.
struct GuestDevice {
  std::string host_address;   ///< canonical host PCI address (<hostdev><source><address>)
  std::string guest_address;  ///< canonical guest PCI address, as the guest's lspci shows it
  int guest_cell = -1;        ///< guest NUMA cell (from its pcie-expander-bus); -1 none
};

/// The passed-through devices of a libvirt domain, in document order.
struct GuestDeviceMap {
  std::string domain;   ///< <name>
  int guest_cells = 0;  ///< <cpu><numa><cell> count (0 = no guest NUMA)
  std::vector<GuestDevice> devices;
  /// Guest NUMA cell → the host NUMA node its memory is bound to (<numatune><memnode>); -1.
  std::vector<int> cell_host_node;
  /// Guest NUMA cell → its vCPUs (<cpu><numa><cell cpus>); guest CPU n is vCPU n.
  std::vector<CpuSet> cell_cpus;
  int vcpus = 0;                ///< <vcpu> count; 0 when absent
  std::string arch = "x86_64";  ///< <os><type arch>, "x86_64" when absent
  /// What the reader could not resolve, one sentence each: "hostdev 0000:1b:00.0 (line 40):
  /// its guest bus 0x07 names no PCI controller; pass --guest-map".
  std::vector<std::string> notes;
};

/// Largest domain XML ReadLibvirtDomain accepts (libvirt's own documents are a few KiB).
inline constexpr size_t kMaxDomainXmlBytes = 8 << 20;

/// Reads a libvirt domain XML (as `accel place -o libvirt` or `virsh dumpxml` writes it).
/// Devices: <hostdev mode='subsystem' type='pci'> and <interface type='hostdev'> (SR-IOV VFs).
/// Guest addresses: an explicit <address type='pci'> on the device is resolved through the
/// domain's PCI controllers as the file comment describes (a device behind root port k of a
/// pcie-expander-bus with busNr B is at guest bus B+1+k); a device without one, or behind a
/// bus that cannot be numbered, gets "" and a note (the caller must pass --guest-map).
/// The document is parsed by libxml2 without network access, DTD loading or entity
/// substitution; one with a DOCTYPE is refused. Throws accel::InputError (where = `where`,
/// plus ":line" when known) on malformed XML, a root other than <domain>, a document larger
/// than kMaxDomainXmlBytes, a malformed number or address, or a hostdev without a host
/// <source><address>.
GuestDeviceMap ReadLibvirtDomain(const std::string& xml, const std::string& where);

/// Writes NCCL's topology XML for the guest. `overrides` are "HOST=GUEST" address pairs from
/// the command line that replace or supply guest addresses (short forms "1b:00.0" allowed).
/// Each <cpu> carries numaid (the guest cell), affinity (the cell's vCPUs as a Linux cpumap),
/// arch and, on x86 when the host's CPU model names Intel or AMD, vendor; familyid and modelid
/// are left for NCCL to read from the guest's CPUID. Each GPU gets a virtual switch
/// "ffff:ff:NN.0" (class 0x060400, vendor 0x0000 so NCCL never mistakes it for a Broadcom
/// switch to flatten) holding the GPU (class 0x030200) and its paired NIC (0x020700 InfiniBand,
/// 0x020000 Ethernet), each with the host's PCIe link speed and width. When the host pairs
/// the GPU with a physical function that is not passed through, a passed-through virtual
/// function of it takes its place. GPUs and NICs not passed through are left out; a NIC
/// passed through without a GPU partner sits directly under its cell's <cpu>. A pair whose
/// GPU and NIC sit in different guest cells gets a warning in `warnings` (the guest cannot
/// keep them on one NUMA node) and the NIC goes under its own cell. Guest cells come from the
/// expander bus, else from the host NUMA node through cell_host_node, else cell 0 (with a
/// warning when the guest has several). Throws accel::InputError (where "--guest-map") for a
/// malformed override, and (where "--domain") when a passed-through GPU has no guest address.
std::string WriteNcclTopologyXml(const topology::HostTopology& host, const Fabric& fabric,
                                 const GuestDeviceMap& guest,
                                 const std::vector<std::string>& overrides,
                                 std::vector<std::string>* warnings);

}  // namespace accel::fabric
