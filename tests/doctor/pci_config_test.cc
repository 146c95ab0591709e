// The standard and extended capability walks, the ACS control word and the PCI Express device
// registers, on hand-built and random config spaces.
#include "doctor/pci_config.h"

#include <gtest/gtest.h>

#include <random>

#include "support/healthy_host_tree.h"

namespace accel::doctor {
namespace pci_config_test {

TEST(PciConfigTest, FindsAcsAfterAnotherCapability) {
  std::string c = testing::ConfigSpace(uint16_t{kAcsSv | kAcsRr | kAcsCr | kAcsUf});
  EXPECT_EQ(FindExtendedCapability(c, 0x0001), 0x100u);
  EXPECT_EQ(FindExtendedCapability(c, kExtCapAcs), 0x148u);
  EXPECT_EQ(ReadAcsControl(c), 0x001d);
  EXPECT_EQ(AcsBitNames(0x001d), "SV RR CR UF");
  EXPECT_EQ(AcsBitNames(0), "none");
  EXPECT_FALSE(IsTruncatedConfig(c));
}

TEST(PciConfigTest, NoAcsNoExtendedSpaceAndTruncation) {
  EXPECT_FALSE(ReadAcsControl(testing::ConfigSpace(std::nullopt)).has_value());
  EXPECT_FALSE(ReadAcsControl(std::string(256, '\0')).has_value());  // conventional PCI
  EXPECT_TRUE(IsTruncatedConfig(std::string(64, '\0')));
  EXPECT_FALSE(ReadAcsControl(std::string(64, '\0')).has_value());
  std::string ones(4096, '\xff');
  EXPECT_FALSE(ReadAcsControl(ones).has_value());
}

TEST(PciConfigTest, LoopsAndBadPointersEnd) {
  std::string c(4096, '\0');
  // header at 0x100 pointing to itself
  c[0x100] = 0x01;
  c[0x102] = 0x01;
  c[0x103] = 0x10;  // next = 0x100
  EXPECT_FALSE(FindExtendedCapability(c, kExtCapAcs).has_value());
  c[0x103] = 0x00;
  c[0x102] = 0x31;  // next = 0x003 (below 0x100, unaligned)
  EXPECT_FALSE(FindExtendedCapability(c, kExtCapAcs).has_value());
}

TEST(PciConfigTest, RandomBytesNeverReadOutOfBounds) {
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    std::string c(rng() % 4200, '\0');
    for (char& ch : c) ch = static_cast<char>(rng());
    std::optional<size_t> at = FindExtendedCapability(c, kExtCapAcs);
    if (at) {
      ASSERT_LE(*at + 4, c.size());
    }
    (void)ReadAcsControl(c);
  }
}

TEST(PciConfigTest, FindsThePciExpressCapabilityAfterPowerManagement) {
  std::string c = testing::ConfigSpace(std::nullopt, 0x2937, 2);
  EXPECT_EQ(FindCapability(c, 0x01), 0x40u);
  EXPECT_EQ(FindCapability(c, kCapPciExpress), 0x60u);
  EXPECT_FALSE(FindCapability(c, 0x05).has_value());  // no MSI
  std::optional<PcieDeviceRegs> regs = ReadPcieDevice(c);
  ASSERT_TRUE(regs.has_value());
  EXPECT_EQ(regs->cap_offset, 0x60u);
  EXPECT_EQ(regs->device_control, 0x2937);
  EXPECT_EQ(regs->max_payload_supported(), 512);
  EXPECT_EQ(regs->max_payload(), 256);
  EXPECT_EQ(regs->max_read_request(), 512);
  EXPECT_TRUE(regs->relaxed_ordering());
  EXPECT_EQ(DevCtlText(*regs), "MaxPayload 256 bytes, MaxReadReq 512 bytes, RlxdOrd+");
  // lspci's "DevCtl: ... RlxdOrd- ... MaxPayload 128 bytes, MaxReadReq 4096 bytes"
  regs = ReadPcieDevice(testing::ConfigSpace(std::nullopt, 0x500f, 0));
  ASSERT_TRUE(regs.has_value());
  EXPECT_EQ(DevCtlText(*regs), "MaxPayload 128 bytes, MaxReadReq 4096 bytes, RlxdOrd-");
  EXPECT_EQ(regs->max_payload_supported(), 128);
}

TEST(PciConfigTest, NoCapabilityListTruncationAndLoops) {
  std::string c = testing::ConfigSpace(std::nullopt);
  EXPECT_FALSE(ReadPcieDevice(c.substr(0, 64)).has_value());  // what other users get
  EXPECT_FALSE(ReadPcieDevice(c.substr(0, 0x69)).has_value());  // Device Control cut in half
  std::string no_list = c;
  no_list[0x06] = 0;  // Status: no capabilities list
  EXPECT_FALSE(FindCapability(no_list, kCapPciExpress).has_value());
  std::string loop = c;
  loop[0x41] = 0x40;  // PM points to itself
  EXPECT_FALSE(FindCapability(loop, kCapPciExpress).has_value());
  std::string low = c;
  low[0x34] = 0x20;  // inside the header
  EXPECT_FALSE(FindCapability(low, kCapPciExpress).has_value());
  std::string reserved_bits = c;
  reserved_bits[0x34] = 0x43;  // low two bits are reserved: still 0x40
  EXPECT_EQ(FindCapability(reserved_bits, kCapPciExpress), 0x60u);
  EXPECT_FALSE(ReadPcieDevice(std::string(4096, '\xff')).has_value());
}

TEST(PciConfigTest, SizeEncodings) {
  for (unsigned code = 0; code <= 5; ++code) {
    EXPECT_EQ(PcieSizeBytes(code), 128 << code);
    EXPECT_EQ(PcieSizeCode(128 << code), static_cast<int>(code));
  }
  EXPECT_EQ(PcieSizeBytes(6), 0);
  EXPECT_EQ(PcieSizeBytes(7), 0);
  EXPECT_EQ(PcieSizeCode(1000), -1);
  EXPECT_EQ(PcieSizeCode(8192), -1);
}

// Every Device Control value: only the MRRS field changes, and it then decodes to the target.
TEST(PciConfigTest, WithMaxReadRequestKeepsEveryOtherBit) {
  for (uint32_t v = 0; v <= 0xffff; ++v) {
    uint16_t control = static_cast<uint16_t>(v);
    for (int bytes : {128, 512, 4096}) {
      uint16_t out = WithMaxReadRequest(control, bytes);
      ASSERT_EQ(out & ~kDevCtlMrrsMask, control & ~kDevCtlMrrsMask) << std::hex << control;
      PcieDeviceRegs regs;
      regs.device_control = out;
      ASSERT_EQ(regs.max_read_request(), bytes) << std::hex << control;
    }
    ASSERT_EQ(WithMaxReadRequest(control, 3000), control);
  }
  EXPECT_EQ(WithMaxReadRequest(0x2937, 4096), 0x5937);
}

TEST(PciConfigTest, RandomBytesNeverReadOutOfBoundsInTheStandardList) {
  std::mt19937 rng(17);
  for (int i = 0; i < 5000; ++i) {
    std::string c(rng() % 300, '\0');
    for (char& ch : c) ch = static_cast<char>(rng());
    if (c.size() > 6 && rng() % 2) c[6] |= 0x10;  // often claim a capability list
    std::optional<size_t> at = FindCapability(c, kCapPciExpress);
    if (at) {
      ASSERT_GE(*at, 0x40u);
      ASSERT_LE(*at + 2, c.size());
      ASSERT_EQ(static_cast<unsigned char>(c[*at]), kCapPciExpress);
    }
    std::optional<PcieDeviceRegs> regs = ReadPcieDevice(c);
    if (regs) {
      ASSERT_LE(regs->cap_offset + 10, c.size());
    }
  }
}

}  // namespace
}  // namespace accel::doctor
