#include "placement/libvirt_pci_layout.h"

#include <map>
#include <set>
#include <string>

#include "common/error.h"

namespace accel::placement {

namespace {

// Slots of pcie-root an expander may take. Skipped: 0x00 (host bridge), 0x01 (libvirt's
// primary video), 0x1b (ICH9 sound), 0x1d (ICH9 USB), 0x1f (LPC/SATA/SMBus); the high ones
// first so libvirt's own root ports (from 0x02 up) stay where they usually are.
constexpr int kRootSlots[] = {0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
                              0x19, 0x1a, 0x1c, 0x1e, 0x02, 0x03, 0x04, 0x05, 0x06,
                              0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f};
constexpr int kSlotsPerBus = 32;
constexpr int kHighestBusNr = 255;
// Buses below this stay free for controllers on pcie-root (libvirt adds root ports for disks,
// memballoon, USB, ...); expanders are numbered above it.
constexpr int kLowestExpanderBusNr = 32;

// Guest cell -> positions in placement.devices of the devices local to it.
std::map<int, std::vector<size_t>> DevicesByCell(const Placement& placement) {
  std::set<int> cells;
  for (const CellPlacement& c : placement.cells) cells.insert(c.guest_cell);
  std::map<int, std::vector<size_t>> by_cell;
  for (size_t i = 0; i < placement.devices.size(); ++i) {
    const DevicePlacement& d = placement.devices[i];
    if (d.guest_cell < 0) continue;
    if (!cells.count(d.guest_cell))
      throw InputError("placement", "devices[" + std::to_string(i) + "].guest_cell",
                       "device " + d.address + " is local to guest cell " +
                           std::to_string(d.guest_cell) + ", which the placement does not have",
                       "use -1 for a device with no local guest cell");
    by_cell[d.guest_cell].push_back(i);
  }
  return by_cell;
}

void CheckFits(size_t expanders, size_t ports, int bus_nr) {
  if (expanders > std::size(kRootSlots))
    throw InputError("placement", "devices",
                     "devices are local to " + std::to_string(expanders) +
                         " guest cells; pcie-root has room for " +
                         std::to_string(std::size(kRootSlots)) + " expander buses",
                     "render without PCI expander buses");
  if (ports > kSlotsPerBus)
    throw InputError("placement", "devices",
                     std::to_string(ports) + " devices are local to one guest cell; an expander "
                     "bus has " + std::to_string(kSlotsPerBus) + " slots",
                     "render without PCI expander buses");
  if (bus_nr < kLowestExpanderBusNr)
    throw InputError("placement", "devices", "too many devices for guest PCI bus numbers",
                     "render without PCI expander buses");
}

}  // namespace

GuestPciLayout FlatGuestPci(const Placement& placement) {
  GuestPciLayout layout;
  layout.device_bus.assign(placement.devices.size(), -1);
  return layout;
}

GuestPciLayout LayoutGuestPci(const Placement& placement) {
  GuestPciLayout layout = FlatGuestPci(placement);
  int next_index = 1;           // 0 is pcie-root
  int top_bus = kHighestBusNr;  // highest bus number not yet handed out
  for (const auto& [cell, devices] : DevicesByCell(placement)) {
    ExpanderBus bus;
    bus.guest_cell = cell;
    // The expander's own bus, then one secondary bus per root port, all in [bus_nr, top_bus].
    bus.bus_nr = top_bus - static_cast<int>(devices.size());
    CheckFits(layout.expanders.size() + 1, devices.size(), bus.bus_nr);
    bus.root_slot = kRootSlots[layout.expanders.size()];
    bus.index = next_index++;
    for (size_t device : devices) {
      bus.root_port_indexes.push_back(next_index);
      layout.device_bus[device] = next_index++;
    }
    top_bus = bus.bus_nr - 1;
    layout.expanders.push_back(std::move(bus));
  }
  return layout;
}

}  // namespace accel::placement
