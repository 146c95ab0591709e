// PCI configuration space as read from /sys/bus/pci/devices/<BDF>/config: the standard and the
// PCIe extended capability lists, the ACS (Access Control Services) control word that decides
// whether peer-to-peer traffic between a GPU and a NIC goes straight through a PCIe switch or is
// redirected up to the root complex, and the PCI Express capability's Device Capabilities and
// Device Control registers (Max Payload Size, Max Read Request Size, Relaxed Ordering).
//
// Linux returns only the first 64 bytes of config space to unprivileged readers, and every
// capability lies beyond them, so callers must check IsTruncatedConfig before concluding "no
// ACS" or "no PCIe capability". Pure functions over bytes; safe from any thread; never throw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace accel::doctor {

/// What an unprivileged read of config space returns (the standard header only).
constexpr size_t kUnprivilegedConfigBytes = 64;
/// Where the PCIe extended capability list starts, and the extended config size.
constexpr size_t kExtendedConfigStart = 0x100;
constexpr size_t kExtendedConfigSize = 4096;

/// Extended capability id of ACS.
constexpr uint16_t kExtCapAcs = 0x000D;

/// ACS control bits (offset +6 of the capability): Source Validation, Translation Blocking,
/// P2P Request Redirect, P2P Completion Redirect, Upstream Forwarding, P2P Egress Control,
/// Direct Translated P2P.
enum AcsBit : uint16_t {
  kAcsSv = 1 << 0,
  kAcsTb = 1 << 1,
  kAcsRr = 1 << 2,
  kAcsCr = 1 << 3,
  kAcsUf = 1 << 4,
  kAcsEc = 1 << 5,
  kAcsDt = 1 << 6,
};
/// The bits that send peer-to-peer traffic up to the root complex.
constexpr uint16_t kAcsRedirectBits = kAcsRr | kAcsCr | kAcsEc;

/// True when `config` holds only what an unprivileged reader gets (≤ 64 bytes): whether an
/// ACS capability exists cannot be told.
bool IsTruncatedConfig(std::string_view config);

/// Offset of the extended capability `id` in `config`, walking the list from 0x100 (header:
/// id bits 15:0, version 19:16, next offset 31:20). std::nullopt when the space is shorter than
/// 0x104, the list is empty (header 0 or all ones), loops, points outside the data or below
/// 0x100, or has no such capability.
std::optional<size_t> FindExtendedCapability(std::string_view config, uint16_t id);

/// The ACS control word, or std::nullopt when the device has no readable ACS capability.
std::optional<uint16_t> ReadAcsControl(std::string_view config);

/// The set bits by name, "SV RR CR UF", or "none".
std::string AcsBitNames(uint16_t control);

/// Standard capability id of the PCI Express capability (setpci's CAP_EXP).
constexpr uint8_t kCapPciExpress = 0x10;

/// Offset of the standard capability `id`, walking the list from the pointer at 0x34 (each
/// entry: id at +0, next pointer at +1; the low two bits of pointers are reserved). Requires
/// the Capabilities List bit (bit 4 of the Status register at 0x06). std::nullopt when the
/// space is too short, the bit is clear, the list is empty, loops, points below 0x40 or
/// outside the data, or has no such capability.
std::optional<size_t> FindCapability(std::string_view config, uint8_t id);

/// Device Control (PCI Express capability + 8) bits and fields.
constexpr uint16_t kDevCtlRelaxedOrdering = 1 << 4;  ///< Enable Relaxed Ordering
constexpr int kDevCtlMpsShift = 5;                   ///< bits 7:5, Max_Payload_Size
constexpr int kDevCtlMrrsShift = 12;                 ///< bits 14:12, Max_Read_Request_Size
constexpr uint16_t kDevCtlMpsMask = 0x7 << kDevCtlMpsShift;
constexpr uint16_t kDevCtlMrrsMask = 0x7 << kDevCtlMrrsShift;

/// Bytes of a Max_Payload_Size / Max_Read_Request_Size / Max_Payload_Size Supported encoding:
/// 0..5 = 128..4096; 0 for the reserved encodings 6 and 7.
int PcieSizeBytes(unsigned code);

/// The encoding of `bytes` (128, 256, ..., 4096), or -1 for any other value.
int PcieSizeCode(int bytes);

/// The PCI Express capability's device registers.
struct PcieDeviceRegs {
  size_t cap_offset = 0;          ///< where the capability is (setpci's CAP_EXP)
  uint32_t device_caps = 0;       ///< Device Capabilities (cap + 4)
  uint16_t device_control = 0;    ///< Device Control (cap + 8)

  int max_payload_supported() const { return PcieSizeBytes(device_caps & 0x7); }  ///< bytes
  int max_payload() const {  ///< bytes; 0 when reserved
    return PcieSizeBytes((device_control & kDevCtlMpsMask) >> kDevCtlMpsShift);
  }
  int max_read_request() const {  ///< bytes; 0 when reserved
    return PcieSizeBytes((device_control & kDevCtlMrrsMask) >> kDevCtlMrrsShift);
  }
  bool relaxed_ordering() const { return (device_control & kDevCtlRelaxedOrdering) != 0; }
};

/// The device registers of the PCI Express capability, or std::nullopt when the device has
/// none that can be read (truncated space, conventional PCI, a broken list).
std::optional<PcieDeviceRegs> ReadPcieDevice(std::string_view config);

/// `control` with its Max_Read_Request_Size field set to `bytes` (a valid size), other bits kept.
uint16_t WithMaxReadRequest(uint16_t control, int bytes);

/// As lspci's DevCtl line: "MaxPayload 256 bytes, MaxReadReq 4096 bytes, RlxdOrd+".
std::string DevCtlText(const PcieDeviceRegs& regs);

}  // namespace accel::doctor
