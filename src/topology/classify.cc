#include "topology/classify.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace accel::topology {

namespace {

// Base classes and the class codes used below.
constexpr uint8_t kClassStorage = 0x01;
constexpr uint8_t kClassNetwork = 0x02;
constexpr uint8_t kClassDisplay = 0x03;
constexpr uint8_t kClassAccelerator = 0x12;  // "processing accelerators" (MI300X, Gaudi)
constexpr uint16_t kClassPciBridge = 0x0604;
constexpr uint16_t kClassOtherBridge = 0x0680;  // what NVSwitches report
constexpr uint16_t kClassInfiniBand = 0x0c06;

// ATI/AMD display chips soldered on server boards for the BMC console, not accelerators.
constexpr uint16_t kAmdBoardVga[] = {0x515e /* ES1000 */, 0x5159 /* Radeon 7000/VE */,
                                     0x4752 /* Rage XL */};

// SR-IOV virtual-function device ids (lspci calls them "... Virtual Function").
constexpr std::pair<uint16_t, uint16_t> kKnownVfs[] = {
    {0x8086, 0x10ca}, {0x8086, 0x10ed},
    {0x8086, 0x1515}, {0x8086, 0x1520},  // 82576/82599/X540/I350
    {0x8086, 0x154c}, {0x8086, 0x1565},
    {0x8086, 0x1889}, {0x8086, 0x37cd},  // X710/X550/E810/X722
    {0x15b3, 0x1002}, {0x15b3, 0x1004},
    {0x15b3, 0x1012}, {0x15b3, 0x1014},  // ConnectX-2..4
    {0x15b3, 0x1016}, {0x15b3, 0x1018},
    {0x15b3, 0x101a}, {0x15b3, 0x101c},  // ConnectX-4 Lx..6
    {0x15b3, 0x101e}, {0x15b3, 0xa2d3},  // CX family, BlueField
    {0x14e4, 0x16dc}, {0x14e4, 0x16d3},
    {0x14e4, 0x1806}, {0x14e4, 0x1807},  // Broadcom NetXtreme
    {0x1137, 0x00cf},                    // Cisco VIC usNIC
};

}  // namespace

PciRole ClassifyPci(uint16_t vendor_id, uint16_t device_id, uint16_t class_id,
                    std::string_view hwloc_subtype) {
  uint8_t base = class_id >> 8;
  if (hwloc_subtype == "NVSwitch") return PciRole::kNvSwitch;
  if (vendor_id == kVendorNvidia) {
    if (base == kClassDisplay) return PciRole::kGpu;
    if (class_id == kClassOtherBridge) return PciRole::kNvSwitch;
  }
  if (vendor_id == kVendorAmd && (base == kClassDisplay || base == kClassAccelerator)) {
    bool board_vga = std::find(std::begin(kAmdBoardVga), std::end(kAmdBoardVga), device_id) !=
                     std::end(kAmdBoardVga);
    if (!board_vga) return PciRole::kGpu;
  }
  if (vendor_id == kVendorHabana && base == kClassAccelerator) return PciRole::kHpu;
  if (base == kClassNetwork || class_id == kClassInfiniBand) return PciRole::kNic;
  if (base == kClassStorage) return PciRole::kStorage;
  if (class_id == kClassPciBridge) return PciRole::kBridge;
  return PciRole::kOther;
}

bool LooksLikeVirtualFunction(uint16_t vendor_id, uint16_t device_id, std::string_view name) {
  if (name.find("Virtual Function") != std::string_view::npos) return true;
  for (const auto& [vendor, device] : kKnownVfs)
    if (vendor == vendor_id && device == device_id) return true;
  return false;
}

OsDeviceKind ClassifyOsDeviceName(std::string_view name) {
  auto starts = [&](std::string_view prefix) { return name.substr(0, prefix.size()) == prefix; };
  auto digit_at = [&](size_t i) { return i < name.size() && name[i] >= '0' && name[i] <= '9'; };
  static constexpr std::string_view kRdmaPrefixes[] = {
      "mlx4_", "mlx5_", "hfi1_", "qib",  "usnic_", "bnxt_re", "irdma", "i40iw",
      "efa_",  "rxe",   "siw",   "qedr", "ionic_", "erdma",   "mana_", "hns_"};
  for (std::string_view p : kRdmaPrefixes)
    if (starts(p)) return OsDeviceKind::kRdma;
  // ib0 / ibp24s0 / ibs1: IPoIB interfaces; eth*/en*/bond*/hsn*: Ethernet and Slingshot.
  if (starts("ib") && (digit_at(2) || starts("ibp") || starts("ibs"))) return OsDeviceKind::kNetdev;
  static constexpr std::string_view kNetPrefixes[] = {"eth", "en", "bond", "hsn", "wl"};
  for (std::string_view p : kNetPrefixes)
    if (starts(p)) return OsDeviceKind::kNetdev;
  return OsDeviceKind::kOther;
}

}  // namespace accel::topology
