#include "common/base64.h"

#include <gtest/gtest.h>

#include <string>

namespace accel {
namespace base64_test {

TEST(Base64, EncodesWithPadding) {
  EXPECT_EQ(EncodeBase64(""), "");
  EXPECT_EQ(EncodeBase64("f"), "Zg==");
  EXPECT_EQ(EncodeBase64("fo"), "Zm8=");
  EXPECT_EQ(EncodeBase64("foo"), "Zm9v");
  EXPECT_EQ(EncodeBase64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(EncodeBase64("user:pa ss"), "dXNlcjpwYSBzcw==");
  EXPECT_EQ(EncodeBase64(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST(Base64, RoundTripsEveryByte) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  for (size_t n = 0; n <= bytes.size(); n += 37) {
    const std::string in = bytes.substr(0, n);
    EXPECT_EQ(DecodeBase64(EncodeBase64(in), Base64Rules::kStrict), in) << n;
    EXPECT_EQ(DecodeBase64(EncodeBase64(in), Base64Rules::kLenient), in) << n;
  }
}

TEST(Base64, StrictIsGoStdEncoding) {
  EXPECT_EQ(DecodeBase64("Zm8=", Base64Rules::kStrict), "fo");
  EXPECT_EQ(DecodeBase64("Zg==", Base64Rules::kStrict), "f");
  EXPECT_EQ(DecodeBase64("", Base64Rules::kStrict), "");
  for (const char* bad : {"Zm8", "Zg=", "Zg", "Z===", "====", "Zm 9v", "Zm9v\n", "Zg==Zg==", "Zm=v", "Zm9-", "Zm9_"}) {
    EXPECT_EQ(DecodeBase64(bad, Base64Rules::kStrict), std::nullopt) << bad;
  }
}

TEST(Base64, LenientIsWhatKubectlReads) {
  EXPECT_EQ(DecodeBase64("Zm8", Base64Rules::kLenient), "fo");  // padding optional
  EXPECT_EQ(DecodeBase64("Zm9v\nYmFy\n", Base64Rules::kLenient), "foobar");
  EXPECT_EQ(DecodeBase64(" Zg== ", Base64Rules::kLenient), "f");
  for (const char* bad : {"Z", "Zm9vY", "Z===", "Zg==Zg", "Zm9-", "Zm9v!"}) {
    EXPECT_EQ(DecodeBase64(bad, Base64Rules::kLenient), std::nullopt) << bad;
  }
}

}  // namespace base64_test
}  // namespace accel
