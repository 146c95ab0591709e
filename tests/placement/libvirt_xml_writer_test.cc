// XmlWriter and its escaping: any string must give well-formed XML that reads back the same.
#include "placement/libvirt_xml_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "support/shared_fixture.h"

namespace accel::placement {
namespace libvirt_xml_writer_test {

TEST(XmlEscape, TextEscapesMarkupOnly) {
  EXPECT_EQ(EscapeXmlText("a&b<c>d'e\"f"), "a&amp;b&lt;c&gt;d'e\"f");
  EXPECT_EQ(EscapeXmlText("tab\tline\n"), "tab\tline\n");
  EXPECT_EQ(EscapeXmlText("cr\r"), "cr&#13;");
}

TEST(XmlEscape, AttributesEscapeBothQuotesAndWhitespace) {
  EXPECT_EQ(EscapeXmlAttribute("a&b<c>d'e\"f"), "a&amp;b&lt;c&gt;d&apos;e&quot;f");
  EXPECT_EQ(EscapeXmlAttribute("x\ty\nz\r"), "x&#9;y&#10;z&#13;");
}

TEST(XmlEscape, KeepsUtf8AndReplacesWhatXmlCannotCarry) {
  EXPECT_EQ(EscapeXmlText("Zürich ✓ 𝄞"), "Zürich ✓ 𝄞");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(EscapeXmlText(std::string("a\x01" "b\x1f", 4)), "a" + fffd + "b" + fffd);
  EXPECT_EQ(EscapeXmlText(std::string("nul\0", 4)), "nul" + fffd);
  EXPECT_EQ(EscapeXmlText("\xC3"), fffd);              // truncated sequence
  EXPECT_EQ(EscapeXmlText("\xC0\xAF"), fffd + fffd);   // overlong '/'
  EXPECT_EQ(EscapeXmlText("\xED\xA0\x80"), fffd + fffd + fffd);  // surrogate
  EXPECT_EQ(EscapeXmlText("\xEF\xBF\xBE"), fffd + fffd + fffd);  // U+FFFE
  EXPECT_EQ(EscapeXmlText("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // > U+10FFFF
  EXPECT_EQ(EscapeXmlText("\x80x"), fffd + "x");       // stray continuation byte
}

TEST(XmlWriter, IndentsAndClosesEverything) {
  XmlWriter w;
  w.Open("domain", {{"type", "kvm"}});
  w.Text("name", "a<b");
  w.Open("devices");
  w.Empty("x", {{"k", "it's"}});
  std::string doc = w.Finish();  // closes devices and domain
  EXPECT_EQ(doc,
            "<domain type='kvm'>\n"
            "  <name>a&lt;b</name>\n"
            "  <devices>\n"
            "    <x k='it&apos;s'/>\n"
            "  </devices>\n"
            "</domain>\n");
  XmlWriter empty;
  empty.Close();  // nothing open: no-op
  EXPECT_EQ(empty.Finish(), "");
}

TEST(XmlWriter, RandomBytesStayWellFormed) {
  ACCEL_REQUIRE_TOOL("/usr/bin/xmllint", "libxml2-utils");
  std::mt19937 rng(7);
  XmlWriter w;
  w.Open("root");
  for (int i = 0; i < 200; ++i) {
    std::string junk(1 + rng() % 12, '\0');
    for (char& c : junk) c = static_cast<char>(rng() % 256);
    w.Text("t", junk, {{"a", junk}});
  }
  const std::string path = ::testing::TempDir() + "accel_xml_writer_" + std::to_string(getpid()) + ".xml";
  std::ofstream(path) << w.Finish();
  EXPECT_EQ(std::system(("/usr/bin/xmllint --noout '" + path + "'").c_str()), 0) << path;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace accel::placement
