// PCI role classification: what a PCI function is, from its vendor, device and class codes.
//
// The rules are those of docs/schemas.md ("Classification"), plus two that real exports need:
// InfiniBand controllers (class 0c06, e.g. ConnectX-2 VPI) are NICs, and the ATI/AMD VGA chips
// that server boards carry for their BMC console (ES1000, Rage XL, Radeon 7000) are not GPUs.
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "topology/host.h"

namespace accel::topology {

/// PCI vendor ids accel recognizes.
inline constexpr uint16_t kVendorNvidia = 0x10de;
inline constexpr uint16_t kVendorAmd = 0x1002;
inline constexpr uint16_t kVendorHabana = 0x1da3;
inline constexpr uint16_t kVendorMellanox = 0x15b3;  ///< Mellanox, now NVIDIA Networking (ConnectX, BlueField)
inline constexpr uint16_t kVendorIntel = 0x8086;

/// Returns the role of a PCI function (never kHostBridge; the caller knows root complexes).
/// `hwloc_subtype` is hwloc's subtype of the object when known: "NVSwitch" marks an NVSwitch
/// even when its config space reads as zeros (as one of the DGX-2 export's switches does).
PciRole ClassifyPci(uint16_t vendor_id, uint16_t device_id, uint16_t class_id,
                    std::string_view hwloc_subtype = {});

/// True for the (vendor, device) pairs of SR-IOV virtual functions accel knows by id, for sources
/// that do not say which functions are VFs (hwloc XML): Intel, Mellanox/NVIDIA, Broadcom VFs and
/// Cisco VIC usNIC functions. A device name containing "Virtual Function" also marks a VF.
bool LooksLikeVirtualFunction(uint16_t vendor_id, uint16_t device_id, std::string_view name);

/// Where an OS device of a PCI function goes in PciDevice.
enum class OsDeviceKind {
  kRdma,    ///< an RDMA (OpenFabrics) device: mlx5_0, hfi1_0, usnic_0, efa_0, irdma0, ...
  kNetdev,  ///< a network interface: eth0, ib0, ibp24s0, ens1f0, enp3s0, ...
  kOther,   ///< anything else: nvml0, cuda0, rsmi0, card1, renderD128, sda, accel0, ...
};

/// Classifies an OS device by its name alone, for sources whose type code is missing or
/// ambiguous. Returns kOther for names it does not recognize.
OsDeviceKind ClassifyOsDeviceName(std::string_view name);

}  // namespace accel::topology
