// accel topo -o svg end to end: the picture of a fixture host, the claims `accel place --claim`
// made in a state database coloured in it, bad input, and one screenshot of the picture in
// headless Chromium (Debian's chromium) whose pixels are decoded and checked.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli/cli_test_util.h"
#include "placement/host_picture.h"
#include "support/shared_fixture.h"

namespace accel::cli {
namespace topo_svg_test {

using ::testing::HasSubstr;
using testing::FreshDir;
using testing::HeadlessChromium;
using testing::RunAccel;
using testing::Shell;
using testing::Src;
using testing::WriteFile;

const std::string kHgx = Src("fixtures/hosts/hgx-h100.json");
const std::string kAliases = Src("examples/flavors/aliases.json");

// An SVG document parsed by libxml2, queried with XPath (prefix s: the SVG namespace).
class Svg {
 public:
  explicit Svg(const std::string& text) {
    doc_ = xmlReadMemory(text.data(), static_cast<int>(text.size()), "stdout.svg", nullptr, XML_PARSE_NONET);
    if (doc_) {
      ctx_ = xmlXPathNewContext(doc_);
      xmlXPathRegisterNs(ctx_, BAD_CAST "s", BAD_CAST "http://www.w3.org/2000/svg");
    }
  }
  ~Svg() {
    if (ctx_) xmlXPathFreeContext(ctx_);
    if (doc_) xmlFreeDoc(doc_);
  }
  Svg(const Svg&) = delete;
  Svg& operator=(const Svg&) = delete;

  bool ok() const { return doc_ != nullptr; }
  /// The string values of the nodes `xpath` selects (attributes or elements), in document order.
  std::vector<std::string> Values(const std::string& xpath) const {
    std::vector<std::string> out;
    xmlXPathObjectPtr r = xmlXPathEvalExpression(BAD_CAST xpath.c_str(), ctx_);
    EXPECT_NE(r, nullptr) << xpath;
    if (!r) return out;
    if (r->nodesetval)
      for (int i = 0; i < r->nodesetval->nodeNr; ++i) {
        xmlChar* v = xmlNodeGetContent(r->nodesetval->nodeTab[i]);
        out.push_back(v ? reinterpret_cast<const char*>(v) : "");
        xmlFree(v);
      }
    xmlXPathFreeObject(r);
    return out;
  }
  size_t Count(const std::string& xpath) const { return Values(xpath).size(); }

 private:
  xmlDocPtr doc_ = nullptr;
  xmlXPathContextPtr ctx_ = nullptr;
};

// XPath for elements whose class list holds `cls`.
std::string WithClass(const std::string& cls) {
  return "//*[contains(concat(' ', normalize-space(@class), ' '), ' " + cls + " ')]";
}

std::string Place(const std::string& flavor, const std::string& state, const std::string& topology = kHgx) {
  return "place --topology " + topology + " --flavor " + Src("examples/flavors/" + flavor) + " --aliases " + kAliases +
         " --state " + state + " --claim -o json";
}

TEST(TopoSvgCli, DrawsAFixtureHostWithoutClaims) {
  auto dir = FreshDir("topo-svg-plain");
  const std::string state = (dir / "none.db").string();
  auto r = RunAccel("topo --topology " + kHgx + " -o svg --state " + state, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Svg svg(r.output);
  ASSERT_TRUE(svg.ok()) << r.output.substr(0, 400);
  EXPECT_EQ(svg.Values("/s:svg/@data-host"), std::vector<std::string>{"hgx-h100"});
  EXPECT_EQ(svg.Count(WithClass("ah-cpu")), 224u);
  EXPECT_EQ(svg.Count(WithClass("ah-cpu") + "[contains(@class, 'ah-free')]"), 224u);
  EXPECT_EQ(svg.Count(WithClass("ah-node")), 2u);
  EXPECT_EQ(svg.Count(WithClass("ah-gpu")), 8u);
  EXPECT_EQ(svg.Count(WithClass("ah-nvswitch")), 4u);
  EXPECT_EQ(svg.Count(WithClass("ah-legend-claim")), 0u);
  EXPECT_FALSE(std::filesystem::exists(state)) << "a picture must not create the claim database";
  // The note about the missing database goes to stderr, not into the SVG.
  auto merged = RunAccel("topo --topology " + kHgx + " -o svg --state " + state);
  EXPECT_THAT(merged.output, HasSubstr("no claim database at " + state));
  std::filesystem::remove_all(dir);
}

TEST(TopoSvgCli, ClaimsMadeByPlaceAreColouredAndReleasedOnesAreNot) {
  auto dir = FreshDir("topo-svg-claims");
  const std::string state = (dir / "s.db").string();
  std::vector<nlohmann::json> placed;
  for (const std::string flavor : {"gpu-1g.yaml", "isolate.yaml", "numa2.yaml"}) {
    auto r = RunAccel(Place(flavor, state), false);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    placed.push_back(nlohmann::json::parse(r.output));
  }
  // A claim on another host stays out of this host's picture.
  auto other = RunAccel(Place("isolate.yaml", state, Src("fixtures/hosts/hgx-h200.json")), false);
  ASSERT_EQ(other.exit_code, 0) << other.output;

  auto r = RunAccel("topo --topology " + kHgx + " -o svg --state " + state, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Svg svg(r.output);
  ASSERT_TRUE(svg.ok());
  std::vector<std::string> ids;
  for (const auto& p : placed) ids.push_back(p["claim"].get<std::string>());
  // The legend lists the host's claims in the store's order (oldest first, to the second), and
  // the n-th of them has the n-th colour.
  const std::vector<std::string> legend = svg.Values(WithClass("ah-legend-claim") + "/@data-claim");
  EXPECT_EQ(std::set<std::string>(legend.begin(), legend.end()), std::set<std::string>(ids.begin(), ids.end()));
  for (size_t i = 0; i < ids.size(); ++i) {
    SCOPED_TRACE(ids[i]);
    const nlohmann::json& pl = placed[i]["placement"];
    const size_t position = std::find(legend.begin(), legend.end(), ids[i]) - legend.begin();
    ASSERT_LT(position, legend.size());
    const std::string color = placement::HostPictureColor(position);
    EXPECT_EQ(svg.Values(WithClass("ah-legend-claim") + "[@data-claim='" + ids[i] + "']/@data-color"),
              std::vector<std::string>{color});
    // Every pinned CPU of the claim carries its class and colour.
    std::set<std::string> pinned;
    for (const auto& cell : pl["cells"])
      for (const auto& [vcpu, cpu] : cell["pinning"].items()) pinned.insert(std::to_string(cpu.get<int>()));
    ASSERT_FALSE(pinned.empty());
    for (const std::string& cpu : pinned) {
      const std::string el = WithClass("ah-cpu") + "[@data-cpu='" + cpu + "']";
      EXPECT_EQ(svg.Values(el + "/@data-claim"), std::vector<std::string>{ids[i]}) << cpu;
      EXPECT_EQ(svg.Values(el + "/s:rect/@fill"), std::vector<std::string>{color}) << cpu;
    }
    for (const auto& dev : pl["devices"]) {
      const std::string el = WithClass("ah-pci") + "[@data-pci='" + dev["address"].get<std::string>() + "']";
      EXPECT_EQ(svg.Values(el + "/@data-claim"), std::vector<std::string>{ids[i]});
      EXPECT_EQ(svg.Values(el + "/s:rect/@fill"), std::vector<std::string>{color});
    }
    EXPECT_GE(svg.Count(WithClass("ah-pages") + "[@data-claim='" + ids[i] + "']"), 1u);
  }
  const std::string other_id = nlohmann::json::parse(other.output)["claim"].get<std::string>();
  EXPECT_EQ(svg.Count(WithClass("ah-claim-" + other_id)), 0u);

  // A released claim disappears; the others keep their order.
  ASSERT_EQ(RunAccel("release " + ids[0] + " --state " + state).exit_code, 0);
  auto after = RunAccel("topo --topology " + kHgx + " -o svg --state " + state, false);
  ASSERT_EQ(after.exit_code, 0);
  Svg svg2(after.output);
  std::vector<std::string> kept = legend;
  kept.erase(std::find(kept.begin(), kept.end(), ids[0]));
  EXPECT_EQ(svg2.Values(WithClass("ah-legend-claim") + "/@data-claim"), kept);
  EXPECT_EQ(svg2.Count(WithClass("ah-claim-" + ids[0])), 0u);
  std::filesystem::remove_all(dir);
}

TEST(TopoSvgCli, BadStateOrStoreIsBadInput) {
  auto dir = FreshDir("topo-svg-bad");
  WriteFile(dir / "not.db", "this is not a database, it is a text file long enough to be read as one\n");
  auto r = RunAccel("topo --topology " + kHgx + " -o svg --state " + (dir / "not.db").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("not.db"));
  EXPECT_EQ(r.output.find("<svg"), std::string::npos) << "nothing half-written on stdout";
  auto url = RunAccel("topo --topology " + kHgx + " -o svg --store bogus://x");
  EXPECT_EQ(url.exit_code, 2) << url.output;
  auto fmt = RunAccel("topo --topology " + kHgx + " -o png");
  EXPECT_EQ(fmt.exit_code, 2) << fmt.output;
  std::filesystem::remove_all(dir);
}

TEST(TopoSvgCli, HelpTeachesThePicture) {
  auto r = RunAccel("topo --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("accel topo --topology fixtures/hosts/hgx-h100.json -o svg > host.svg"));
  EXPECT_THAT(r.output, HasSubstr("--state"));
  EXPECT_THAT(r.output, HasSubstr("svg"));
}

// ---- The screenshot --------------------------------------------------------------------------

struct Png {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  ///< width * height * 3, row by row
  std::string error;         ///< "" when decoded
};

uint32_t BigEndian(const std::string& s, size_t at) {
  return uint32_t(uint8_t(s[at])) << 24 | uint32_t(uint8_t(s[at + 1])) << 16 | uint32_t(uint8_t(s[at + 2])) << 8 |
         uint32_t(uint8_t(s[at + 3]));
}

// Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium's screenshots are).
Png DecodePng(const std::string& file) {
  Png png;
  if (file.size() < 33 || file.compare(0, 8, "\x89PNG\r\n\x1a\n", 8) != 0) return {0, 0, {}, "no PNG signature"};
  if (file.compare(12, 4, "IHDR") != 0) return {0, 0, {}, "first chunk is not IHDR"};
  png.width = BigEndian(file, 16);
  png.height = BigEndian(file, 20);
  const int depth = uint8_t(file[24]), color = uint8_t(file[25]), interlace = uint8_t(file[28]);
  if (depth != 8 || (color != 2 && color != 6) || interlace != 0)
    return {png.width, png.height, {}, "unsupported PNG: depth " + std::to_string(depth) + " colour type " + std::to_string(color)};
  const size_t bpp = color == 6 ? 4 : 3;
  std::string idat;
  for (size_t at = 8; at + 8 <= file.size();) {
    const uint32_t len = BigEndian(file, at);
    if (file.compare(at + 4, 4, "IDAT") == 0) idat += file.substr(at + 8, len);
    at += 12 + len;
  }
  const size_t stride = png.width * bpp;
  std::vector<uint8_t> raw(png.height * (stride + 1));
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK ||
      raw_len != raw.size())
    return {png.width, png.height, {}, "IDAT does not inflate to the image size"};
  std::vector<uint8_t> prev(stride, 0), cur(stride);
  png.rgb.reserve(size_t(png.width) * png.height * 3);
  for (uint32_t y = 0; y < png.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= bpp ? cur[x - bpp] : 0, b = prev[x], c = x >= bpp ? prev[x - bpp] : 0;
      int pred = 0;
      switch (filter) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: return {png.width, png.height, {}, "bad filter type"};
      }
      cur[x] = uint8_t(in[x] + pred);
    }
    for (uint32_t x = 0; x < png.width; ++x)
      for (int k = 0; k < 3; ++k) png.rgb.push_back(cur[x * bpp + k]);
    std::swap(prev, cur);
  }
  return png;
}

// Pixels within `tolerance` of colour "#rrggbb" in every channel.
size_t PixelsNear(const Png& png, const std::string& hex, int tolerance = 6) {
  const int want[3] = {std::stoi(hex.substr(1, 2), nullptr, 16), std::stoi(hex.substr(3, 2), nullptr, 16),
                       std::stoi(hex.substr(5, 2), nullptr, 16)};
  size_t n = 0;
  for (size_t i = 0; i + 2 < png.rgb.size(); i += 3)
    n += std::abs(png.rgb[i] - want[0]) <= tolerance && std::abs(png.rgb[i + 1] - want[1]) <= tolerance &&
         std::abs(png.rgb[i + 2] - want[2]) <= tolerance;
  return n;
}

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Screenshots `html` (a file in `dir`) at 1400x1000 with a private profile. Returns the PNG bytes.
std::string Screenshot(const std::filesystem::path& dir, const std::string& html) {
  const std::filesystem::path out = dir / (html + ".png");
  const std::string cmd = HeadlessChromium(dir) + "--hide-scrollbars --force-device-scale-factor=1 --screenshot='" +
                          out.string() + "' --window-size=1400,1000 'file://" + (dir / html).string() + "' > '" +
                          (dir / (html + ".log")).string() + "' 2>&1";
  const int rc = Shell(cmd);
  EXPECT_EQ(rc, 0) << cmd << "\n" << ReadAll(dir / (html + ".log"));
  return ReadAll(out);
}

TEST(TopoSvgCli, ScreenshotInHeadlessChromiumShowsTheClaims) {
  ACCEL_REQUIRE_TOOL("/usr/bin/chromium", "chromium");
  auto dir = FreshDir("topo-svg-shot");
  const std::string state = (dir / "s.db").string();
  ASSERT_EQ(RunAccel(Place("gpu-1g.yaml", state), false).exit_code, 0);
  ASSERT_EQ(RunAccel(Place("isolate.yaml", state), false).exit_code, 0);
  auto r = RunAccel("topo --topology " + kHgx + " -o svg --state " + state, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;

  // The SVG inline in HTML, as the fleet page will embed it; and the same page without it.
  const std::string head = "<!DOCTYPE html><html><head><meta charset='utf-8'><title>host</title></head>"
                           "<body style='margin:0;background:#ffffff'>";
  WriteFile(dir / "host.html", head + r.output + "</body></html>\n");
  WriteFile(dir / "blank.html", head + "</body></html>\n");
  const std::string shot = Screenshot(dir, "host.html");
  const std::string blank = Screenshot(dir, "blank.html");

  const Png png = DecodePng(shot), empty = DecodePng(blank);
  ASSERT_EQ(png.error, "") << shot.size() << " bytes";
  ASSERT_EQ(empty.error, "");
  EXPECT_EQ(png.width, 1400u);
  EXPECT_EQ(png.height, 1000u);
  EXPECT_EQ(empty.width, 1400u);
  EXPECT_EQ(empty.height, 1000u);
  EXPECT_GT(shot.size(), 4 * blank.size()) << "the picture's screenshot should be far larger than a blank page's";

  // The blank page is white; the picture is not, and shows both claims' colours: gpu-1g's 17
  // CPUs and GPU in the first colour, isolate's 8 CPUs in the second.
  EXPECT_EQ(PixelsNear(empty, "#ffffff", 0), size_t(1400) * 1000);
  const size_t white = PixelsNear(png, "#ffffff", 0);
  EXPECT_LT(white, size_t(1400) * 1000 * 9 / 10);
  const size_t first = PixelsNear(png, placement::HostPictureColor(0));
  const size_t second = PixelsNear(png, placement::HostPictureColor(1));
  EXPECT_GT(first, 17u * 150) << "pixels in " << placement::HostPictureColor(0);
  EXPECT_GT(second, 8u * 150) << "pixels in " << placement::HostPictureColor(1);
  // The node boxes' tan fill is on screen too.
  EXPECT_GT(PixelsNear(png, "#f6eedb"), 50000u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace accel::cli
