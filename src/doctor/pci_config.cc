#include "doctor/pci_config.h"

namespace accel::doctor {

namespace {

uint32_t Le32(std::string_view s, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(s[at])) |
         static_cast<uint32_t>(static_cast<unsigned char>(s[at + 1])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[at + 2])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(s[at + 3])) << 24;
}

}  // namespace

bool IsTruncatedConfig(std::string_view config) {
  return config.size() <= kUnprivilegedConfigBytes;
}

std::optional<size_t> FindExtendedCapability(std::string_view config, uint16_t id) {
  size_t offset = kExtendedConfigStart;
  // 4096 bytes hold at most (4096 - 256) / 4 capabilities; more steps means a loop.
  for (int steps = 0; steps < 960; ++steps) {
    if (offset < kExtendedConfigStart || offset % 4 != 0 || offset + 4 > config.size()) {
      return std::nullopt;
    }
    uint32_t header = Le32(config, offset);
    if (header == 0 || header == 0xffffffffu) return std::nullopt;
    if ((header & 0xffff) == id) return offset;
    size_t next = header >> 20;
    if (next == 0) return std::nullopt;
    offset = next;
  }
  return std::nullopt;
}

std::optional<uint16_t> ReadAcsControl(std::string_view config) {
  std::optional<size_t> at = FindExtendedCapability(config, kExtCapAcs);
  if (!at || *at + 8 > config.size()) return std::nullopt;
  return static_cast<uint16_t>(static_cast<unsigned char>(config[*at + 6]) |
                               static_cast<unsigned char>(config[*at + 7]) << 8);
}

std::string AcsBitNames(uint16_t control) {
  static constexpr struct {
    uint16_t bit;
    const char* name;
  } kNames[] = {{kAcsSv, "SV"}, {kAcsTb, "TB"}, {kAcsRr, "RR"}, {kAcsCr, "CR"},
                {kAcsUf, "UF"}, {kAcsEc, "EC"}, {kAcsDt, "DT"}};
  std::string out;
  for (const auto& n : kNames)
    if (control & n.bit) out += (out.empty() ? "" : " ") + std::string(n.name);
  return out.empty() ? "none" : out;
}

std::optional<size_t> FindCapability(std::string_view config, uint8_t id) {
  constexpr size_t kStatus = 0x06, kCapPointer = 0x34, kFirstCap = 0x40;
  if (config.size() <= kCapPointer) return std::nullopt;
  if (!(static_cast<unsigned char>(config[kStatus]) & 0x10)) return std::nullopt;
  size_t offset = static_cast<unsigned char>(config[kCapPointer]) & 0xfc;
  // 256 bytes hold at most (256 - 64) / 4 capabilities; more steps means a loop.
  for (int steps = 0; steps < 48; ++steps) {
    if (offset < kFirstCap || offset + 2 > config.size()) return std::nullopt;
    if (static_cast<unsigned char>(config[offset]) == id) return offset;
    offset = static_cast<unsigned char>(config[offset + 1]) & 0xfc;
  }
  return std::nullopt;
}

int PcieSizeBytes(unsigned code) { return code <= 5 ? 128 << code : 0; }

int PcieSizeCode(int bytes) {
  for (int code = 0; code <= 5; ++code)
    if (bytes == 128 << code) return code;
  return -1;
}

std::optional<PcieDeviceRegs> ReadPcieDevice(std::string_view config) {
  std::optional<size_t> at = FindCapability(config, kCapPciExpress);
  if (!at || *at + 10 > config.size()) return std::nullopt;
  PcieDeviceRegs regs;
  regs.cap_offset = *at;
  regs.device_caps = Le32(config, *at + 4);
  regs.device_control = static_cast<uint16_t>(static_cast<unsigned char>(config[*at + 8]) |
                                              static_cast<unsigned char>(config[*at + 9]) << 8);
  return regs;
}

uint16_t WithMaxReadRequest(uint16_t control, int bytes) {
  int code = PcieSizeCode(bytes);
  if (code < 0) return control;
  return static_cast<uint16_t>((control & ~kDevCtlMrrsMask) | (code << kDevCtlMrrsShift));
}

std::string DevCtlText(const PcieDeviceRegs& regs) {
  auto size = [](int bytes) { return bytes > 0 ? std::to_string(bytes) + " bytes" : std::string("reserved"); };
  return "MaxPayload " + size(regs.max_payload()) + ", MaxReadReq " + size(regs.max_read_request()) +
         ", RlxdOrd" + (regs.relaxed_ordering() ? "+" : "-");
}

}  // namespace accel::doctor
