// LayoutGuestPci: one pcie-expander-bus per guest cell with local devices, a root port per
// device, libvirt-style bus numbers from the top, and clear errors past PCI limits.
#include "placement/libvirt_pci_layout.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace accel::placement {
namespace libvirt_pci_layout_test {

Placement WithCells(int cells) {
  Placement p;
  for (int i = 0; i < cells; ++i) {
    CellPlacement c;
    c.guest_cell = i;
    c.host_node = i;
    p.cells.push_back(c);
  }
  return p;
}

void AddDevice(Placement& p, int guest_cell) {
  DevicePlacement d;
  d.address = "0000:" + std::to_string(10 + p.devices.size()) + ":00.0";
  d.guest_cell = guest_cell;
  p.devices.push_back(d);
}

TEST(LibvirtPciLayout, OneExpanderPerCellWithLocalDevices) {
  Placement p = WithCells(3);
  AddDevice(p, 2);
  AddDevice(p, 0);
  AddDevice(p, -1);  // remote: libvirt places it
  AddDevice(p, 2);
  const GuestPciLayout layout = LayoutGuestPci(p);
  ASSERT_EQ(layout.expanders.size(), 2u);  // cell 1 has no device
  const ExpanderBus& cell0 = layout.expanders[0];
  EXPECT_EQ(cell0.guest_cell, 0);
  EXPECT_EQ(cell0.index, 1);
  EXPECT_EQ(cell0.bus_nr, 254);  // 254 own bus, 255 its root port
  EXPECT_EQ(cell0.root_port_indexes, std::vector<int>({2}));
  const ExpanderBus& cell2 = layout.expanders[1];
  EXPECT_EQ(cell2.guest_cell, 2);
  EXPECT_EQ(cell2.index, 3);
  EXPECT_EQ(cell2.bus_nr, 251);  // 251 own bus, 252-253 root ports
  EXPECT_EQ(cell2.root_port_indexes, std::vector<int>({4, 5}));
  EXPECT_NE(cell0.root_slot, cell2.root_slot);
  EXPECT_EQ(layout.device_bus, std::vector<int>({4, 2, -1, 5}));
}

TEST(LibvirtPciLayout, FlatLayoutFixesNothing) {
  Placement p = WithCells(1);
  AddDevice(p, 0);
  const GuestPciLayout layout = FlatGuestPci(p);
  EXPECT_TRUE(layout.expanders.empty());
  EXPECT_EQ(layout.device_bus, std::vector<int>({-1}));
}

TEST(LibvirtPciLayout, EightCellsOfEightGpusFit) {
  Placement p = WithCells(8);
  for (int cell = 0; cell < 8; ++cell)
    for (int gpu = 0; gpu < 8; ++gpu) AddDevice(p, cell);
  const GuestPciLayout layout = LayoutGuestPci(p);
  ASSERT_EQ(layout.expanders.size(), 8u);
  EXPECT_EQ(layout.expanders.back().bus_nr, 256 - 8 * 9);
  EXPECT_EQ(layout.expanders.back().root_port_indexes.back(), 8 * 9);
}

TEST(LibvirtPciLayout, RejectsWhatPciCannotHold) {
  Placement unknown = WithCells(1);
  AddDevice(unknown, 4);
  EXPECT_THROW(LayoutGuestPci(unknown), InputError);

  Placement crowded = WithCells(1);
  for (int i = 0; i < 33; ++i) AddDevice(crowded, 0);
  EXPECT_THROW(LayoutGuestPci(crowded), InputError);
}

}  // namespace
}  // namespace accel::placement
