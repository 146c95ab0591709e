// The extended capability walk and the ACS control word, on hand-built and random config spaces.
#include "doctor/pci_config.h"

#include <gtest/gtest.h>

#include <random>

#include "doctor/doctor_test_util.h"

namespace accel::doctor {
namespace {

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

}  // namespace
}  // namespace accel::doctor
