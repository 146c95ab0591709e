// The fleet page of `accel fleet serve` in a real browser: headless Chromium (Debian's chromium)
// loads http://127.0.0.1:PORT/ from a running service over a small fleet of the fixture hosts, and
// the DOM it renders (--dump-dom) shows every host with its state and free accelerators, and the
// capacity of the service's flavor exactly as `accel fleet capacity` counts it. The screenshot of
// a host picture is tests/cli/topo_svg_test.cc's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <libxml/HTMLparser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "support/fleet_service.h"
#include "support/shared_fixture.h"

namespace accel::cli {
namespace fleet_page_test {

using ::testing::HasSubstr;
using testing::FreshDir;
using testing::HeadlessChromium;
using testing::RunAccel;
using testing::Shell;
using testing::Src;
using json = nlohmann::json;

// An HTML document parsed by libxml2's HTML parser, queried with XPath.
class Html {
 public:
  explicit Html(const std::string& text)
      : doc_(htmlReadMemory(text.data(), static_cast<int>(text.size()), "dom.html", "utf-8",
                            HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET)) {}
  ~Html() {
    if (doc_) xmlFreeDoc(doc_);
  }
  Html(const Html&) = delete;
  Html& operator=(const Html&) = delete;
  bool ok() const { return doc_ != nullptr; }

  /// The nodes `xpath` selects.
  std::vector<xmlNodePtr> Nodes(const std::string& xpath) const {
    std::vector<xmlNodePtr> out;
    xmlXPathContextPtr ctx = xmlXPathNewContext(doc_);
    xmlXPathObjectPtr res = xmlXPathEvalExpression(reinterpret_cast<const xmlChar*>(xpath.c_str()), ctx);
    if (res && res->nodesetval)
      for (int i = 0; i < res->nodesetval->nodeNr; ++i) out.push_back(res->nodesetval->nodeTab[i]);
    xmlXPathFreeObject(res);
    xmlXPathFreeContext(ctx);
    return out;
  }
  /// The text of the first node `xpath` selects ("" when none).
  std::string Text(const std::string& xpath) const {
    std::vector<xmlNodePtr> nodes = Nodes(xpath);
    return nodes.empty() ? "" : Content(nodes[0]);
  }
  static std::string Content(xmlNodePtr node) {
    xmlChar* c = xmlNodeGetContent(node);
    std::string s = c ? reinterpret_cast<const char*>(c) : "";
    xmlFree(c);
    return s;
  }
  static std::string Attr(xmlNodePtr node, const char* name) {
    xmlChar* c = xmlGetProp(node, reinterpret_cast<const xmlChar*>(name));
    std::string s = c ? reinterpret_cast<const char*>(c) : "";
    xmlFree(c);
    return s;
  }

 private:
  xmlDocPtr doc_;
};

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string Accel(const std::string& args) {
  testing::RunResult r = RunAccel(args, false);
  EXPECT_EQ(r.exit_code, 0) << "accel " << args << "\n" << r.output;
  return r.output;
}

TEST(FleetPageCli, HeadlessChromiumRendersTheHostsAndTheCapacityOfTheFleet) {
  ACCEL_REQUIRE_TOOL("/usr/bin/chromium", "chromium");
  const std::filesystem::path dir = FreshDir("fleet-page");
  const std::string store = "sqlite:" + (dir / "fleet.db").string();
  const std::string flavor = Src("examples/flavors/gpu-1g.yaml");
  const std::string aliases = Src("examples/flavors/aliases.json");
  // The fleet: two HGX H100 (one with a claim), an HGX H200, a Gaudi 2 host in maintenance.
  for (const auto& [name, fixture, extra] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"h100-a", "hgx-h100", "--label az=a"},
           {"h100-b", "hgx-h100", "--label az=b"},
           {"h200-a", "hgx-h200", "--label az=a"},
           {"hpu-a", "gaudi2-8hpu", "--label az=b --state maintenance"}})
    Accel("fleet host add --store '" + store + "' --topology " + Src("fixtures/hosts/" + fixture + ".json") +
          " --name " + name + " " + extra);
  Accel("fleet place --store '" + store + "' --flavor " + flavor + " --aliases " + aliases + " --claim");
  const json capacity =
      json::parse(Accel("fleet capacity --store '" + store + "' --flavor " + flavor + " --aliases " + aliases + " -o json"));
  const int expected_count = capacity["flavors"][0]["count"];
  ASSERT_GT(expected_count, 0);

  test_support::FleetServe serve(ACCEL_BINARY, {"--store", store, "--capacity-flavor", flavor, "--aliases", aliases},
                                 (dir / "serve.log").string());
  // What the API says of each host, to compare with what the browser shows.
  test_support::ApiClient api(serve.Url());
  const json hosts = api.Get("/api/v1/hosts").Json();
  ASSERT_TRUE(hosts.is_object()) << serve.Log();
  std::map<std::string, json> by_name;
  for (const json& h : hosts["hosts"]) by_name[h["name"].get<std::string>()] = h;
  ASSERT_EQ(by_name.size(), 4u);

  const std::string cmd = HeadlessChromium(dir) + "--virtual-time-budget=5000 --dump-dom '" + serve.Url() +
                          "/' > '" + (dir / "dom.html").string() + "' 2> '" + (dir / "chromium.log").string() + "'";
  ASSERT_EQ(Shell(cmd), 0) << cmd << "\n" << ReadAll(dir / "chromium.log");
  const std::string dom = ReadAll(dir / "dom.html");
  Html page(dom);
  ASSERT_TRUE(page.ok()) << dom;

  // Every host, once, with its state, its free/total accelerators and claims.
  std::set<std::string> shown;
  for (xmlNodePtr row : page.Nodes("//table[@id='hosts']//tr[@data-host]")) {
    const std::string name = Html::Attr(row, "data-host");
    EXPECT_TRUE(shown.insert(name).second) << name << " shown twice";
    ASSERT_TRUE(by_name.count(name)) << "unknown host " << name << " on the page";
    const json& h = by_name[name];
    const std::string at = "//table[@id='hosts']//tr[@data-host='" + name + "']";
    EXPECT_EQ(page.Text(at + "/td[@class='name']"), name);
    EXPECT_THAT(page.Text(at + "/td[@class='state']"), HasSubstr(h["state"].get<std::string>())) << name;
    EXPECT_EQ(page.Text(at + "/td[@class='gpus']"), std::to_string(h["accelerators"]["free"].get<int>()) + "/" +
                                                        std::to_string(h["accelerators"]["total"].get<int>()))
        << name;
    EXPECT_EQ(page.Text(at + "/td[@class='claims']"), std::to_string(h["claims"].size())) << name;
  }
  EXPECT_EQ(shown, (std::set<std::string>{"h100-a", "h100-b", "h200-a", "hpu-a"})) << dom;
  EXPECT_EQ(page.Text("//tr[@data-host='hpu-a']/td[@class='state']"), "maintenance");
  EXPECT_EQ(page.Nodes("//table[@id='hosts']//tr[@data-host]/td[@class='gpus'][text()='7/8']").size(), 1u)
      << "the claimed GPU is not free on exactly one host\n" << dom;
  EXPECT_THAT(page.Text("//tr[@data-host='h100-a']/td[@class='labels']"), HasSubstr("az=a"));

  // The capacity of the flavor, exactly the CLI's count.
  EXPECT_EQ(page.Text("//table[@id='capacity']//tr[@data-flavor='gpu-1g']/td[@class='count']"),
            std::to_string(expected_count))
      << dom;

  // A picture per host, served by the service itself; no script, nothing from elsewhere.
  std::set<std::string> pictured;
  for (xmlNodePtr img : page.Nodes("//img[@class='host-picture']")) {
    const std::string src = Html::Attr(img, "src");
    EXPECT_EQ(src.rfind("/hosts/", 0), 0u) << src;
    test_support::ApiReply svg = api.Get(src);
    EXPECT_EQ(svg.status, 200) << src;
    EXPECT_EQ(svg.content_type, "image/svg+xml") << src;
    EXPECT_THAT(svg.body, HasSubstr("<svg")) << src;
    pictured.insert(Html::Attr(img, "alt"));
  }
  EXPECT_EQ(pictured, shown);
  EXPECT_TRUE(page.Nodes("//script").empty()) << "the page runs no script";
  for (xmlNodePtr n : page.Nodes("//*[@src or @href]")) {
    const std::string url = Html::Attr(n, "src") + Html::Attr(n, "href");
    EXPECT_EQ(url.find("://"), std::string::npos) << "loads from elsewhere: " << url;
  }
  EXPECT_EQ(serve.Stop(), 0) << serve.Log();
}

}  // namespace
}  // namespace accel::cli
