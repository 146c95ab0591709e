// The guest PCI tree accel builds so a guest sees which of its NUMA nodes each device is near.
//
// Nova plugs passed-through devices wherever libvirt puts them, so the guest reads "NUMA node
// -1" for every GPU. On q35, accel instead gives each guest cell that has local devices a
// pcie-expander-bus (QEMU pxb-pcie, which reports a NUMA node to the guest through ACPI) on
// pcie-root, and behind it one pcie-root-port per device. Pure functions, thread-safe.
#pragma once

#include <vector>

#include "placement/placement.h"

namespace accel::placement {

/// One pcie-expander-bus controller and the root ports on it.
struct ExpanderBus {
  int guest_cell = 0;   ///< guest NUMA cell it reports (<target><node>)
  int index = 0;        ///< libvirt controller index (what a child's address bus= names)
  int bus_nr = 0;       ///< first guest bus number it owns (<target busNr>)
  int root_slot = 0;    ///< its slot on pcie-root (bus 0x00)
  /// Controller indexes of its pcie-root-ports, plugged at slots 0, 1, ... of this bus.
  std::vector<int> root_port_indexes;
};

/// Where every device of a placement goes in the guest.
struct GuestPciLayout {
  std::vector<ExpanderBus> expanders;  ///< ascending by guest cell
  /// Per Placement::devices entry: the controller index of the root port the device sits
  /// behind (at slot 0), or -1 to leave its guest address to libvirt (as Nova does).
  std::vector<int> device_bus;
};

/// Lays out the devices of `placement`: those with guest_cell >= 0 go behind an expander of
/// their cell, others get no fixed address. Expanders take controller indexes from 1 up
/// (index 0 is pcie-root), each followed by its root ports; bus numbers are handed out from
/// 255 down, as libvirt's own busNr default does, leaving low numbers to pcie-root's ports.
/// Throws accel::InputError when a device names a guest cell the placement does not have, or
/// the layout does not fit PCI limits (32 ports per expander, bus numbers, root slots).
GuestPciLayout LayoutGuestPci(const Placement& placement);

/// The same, with no expanders: every device_bus entry is -1 (Nova's layout).
GuestPciLayout FlatGuestPci(const Placement& placement);

}  // namespace accel::placement
