// Kubernetes quantities and Go durations (common/quantity.h), against apimachinery's and Go's
// documented examples.
#include "common/quantity.h"

#include <gtest/gtest.h>

namespace accel {
namespace quantity_test {

int64_t Milli(const std::string& text) {
  std::string error;
  std::optional<Quantity> q = ParseQuantity(text, &error);
  EXPECT_TRUE(q) << text << ": " << error;
  return q ? q->milli : -424242;
}

std::string QuantityError(const std::string& text) {
  std::string error;
  EXPECT_FALSE(ParseQuantity(text, &error)) << text;
  return error;
}

TEST(Quantity, Suffixes) {
  EXPECT_EQ(Milli("0"), 0);
  EXPECT_EQ(Milli("2"), 2000);
  EXPECT_EQ(Milli("500m"), 500);
  EXPECT_EQ(Milli("1.5"), 1500);
  EXPECT_EQ(Milli("100Mi"), 100LL * 1024 * 1024 * 1000);
  EXPECT_EQ(Milli("1Gi"), 1073741824000LL);
  EXPECT_EQ(Milli("1.5Gi"), 1610612736000LL);
  EXPECT_EQ(Milli("1k"), 1000000);
  EXPECT_EQ(Milli("1M"), 1000000000LL);
  EXPECT_EQ(Milli("2e3"), 2000000);
  EXPECT_EQ(Milli("2E3"), 2000000);
  EXPECT_EQ(Milli("1P"), 1000000000000000000LL);  // peta: 10^15 units in thousandths
  EXPECT_NE(QuantityError("1E").find("too large"), std::string::npos);  // exa: 10^21 thousandths
  EXPECT_EQ(Milli("+3"), 3000);
  EXPECT_EQ(Milli("-3"), -3000);
  EXPECT_EQ(Milli(".5"), 500);
  EXPECT_EQ(Milli("5."), 5000);
  EXPECT_EQ(Milli("0.001"), 1);
  EXPECT_EQ(Milli("00100Mi"), Milli("100Mi"));
  // Below a thousandth rounds up, as MilliValue does.
  EXPECT_EQ(Milli("1n"), 1);
  EXPECT_EQ(Milli("1u"), 1);
  EXPECT_EQ(Milli("1500u"), 2);
  EXPECT_EQ(Milli("-1500u"), -1);
  EXPECT_EQ(Milli("0.0000000000000000000000000000000001Ei"), 1);
  EXPECT_EQ(Quantity{1500}.Value(), 2);
  EXPECT_EQ(Quantity{-1500}.Value(), -1);
  EXPECT_EQ(Quantity{2000}.Value(), 2);
}

TEST(Quantity, Refusals) {
  EXPECT_NE(QuantityError("1GB").find("use G (decimal) or Gi (binary)"), std::string::npos);
  EXPECT_NE(QuantityError("1K").find("k (10^3) or Ki"), std::string::npos);
  EXPECT_NE(QuantityError("1GiB").find("drop the B: Gi"), std::string::npos);
  EXPECT_NE(QuantityError("1 Gi").find("without a space"), std::string::npos);
  EXPECT_NE(QuantityError("").find("empty"), std::string::npos);
  for (const char* bad : {"Gi", ".", "-", "1.2.3", "1e", "1e+", "1ki", "0x10", "1e99999", "abc", "1Gi ", "--1"})
    QuantityError(bad);
  EXPECT_NE(QuantityError("10Ei").find("too large"), std::string::npos);
  EXPECT_NE(QuantityError("1e30").find("too large"), std::string::npos);
  EXPECT_NE(QuantityError("1234567890123456789012345").find("significant digits"), std::string::npos);
  EXPECT_EQ(Milli("9e15"), 9000000000000000000LL);
}

TEST(Quantity, FormatBinary) {
  EXPECT_EQ(FormatBinaryQuantity(0), "0");
  EXPECT_EQ(FormatBinaryQuantity(3221225472LL), "3Gi");
  EXPECT_EQ(FormatBinaryQuantity(2252341248LL), "2148Mi");
  EXPECT_EQ(FormatBinaryQuantity(104857600LL), "100Mi");
  EXPECT_EQ(FormatBinaryQuantity(1000), "1000");
  EXPECT_EQ(FormatBinaryQuantity(-1073741824LL), "-1Gi");
  for (int64_t v : {1LL, 1024LL, 1536LL, 7LL << 40, 123456789LL}) {
    std::string error;
    EXPECT_EQ(ParseQuantity(FormatBinaryQuantity(v), &error)->Value(), v);
  }
}

TEST(GoDuration, ParsesGoExamples) {
  std::string error;
  EXPECT_EQ(ParseGoDuration("0", &error), 0);
  EXPECT_EQ(ParseGoDuration("10s", &error), 10000000000LL);
  EXPECT_EQ(ParseGoDuration("300ms", &error), 300000000LL);
  EXPECT_EQ(ParseGoDuration("-1.5h", &error), -5400000000000LL);
  EXPECT_EQ(ParseGoDuration("2h45m", &error), 9900000000000LL);
  EXPECT_EQ(ParseGoDuration("1m30s", &error), 90000000000LL);
  EXPECT_EQ(ParseGoDuration("5us", &error), 5000);
  EXPECT_EQ(ParseGoDuration("\xC2\xB5s", &error), std::nullopt);
  for (const char* bad : {"", "10", "s", "1x", "1.s5", "1h 2m", "100000000h", "-"}) {
    EXPECT_FALSE(ParseGoDuration(bad, &error)) << bad;
    EXPECT_NE(error.find("not a duration"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace accel
