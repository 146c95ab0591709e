// RenderHostSvg: every CPU drawn once in its core and node, claims in their colours, devices in
// their node, the legend, escaping, determinism, and a layout that stays readable on large hosts
// (no overlapping boxes, everything inside its parent). Well-formedness is checked by xmllint;
// the structure by a small reader of the writer's own output (below), which is enough because
// the renderer writes only elements, single-quoted attributes and escaped text.
#include "placement/host_picture.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "placement/engine.h"
#include "placement/flavor.h"
#include "placement/pci_alias.h"
#include "placement/test_hosts.h"
#include "support/shared_fixture.h"
#include "topology/sources.h"

namespace accel::placement {
namespace host_picture_test {

// ---- A reader of the renderer's SVG ---------------------------------------------------------

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;  ///< entity-decoded
  std::string text;                          ///< entity-decoded character data directly inside
  std::vector<std::unique_ptr<Element>> children;
  const Element* parent = nullptr;

  std::string Attr(const std::string& k) const {
    auto it = attrs.find(k);
    return it == attrs.end() ? "" : it->second;
  }
  bool HasClass(const std::string& c) const {
    const std::string cls = " " + Attr("class") + " ";
    return cls.find(" " + c + " ") != std::string::npos;
  }
  int Int(const std::string& k) const { return std::stoi(Attr(k)); }
  /// The first child element named `n`, or nullptr.
  const Element* Child(const std::string& n) const {
    for (const auto& c : children)
      if (c->name == n) return c.get();
    return nullptr;
  }
  /// Nearest ancestor with class `c`, or nullptr.
  const Element* Ancestor(const std::string& c) const {
    for (const Element* e = parent; e; e = e->parent)
      if (e->HasClass(c)) return e;
    return nullptr;
  }
};

std::string Decode(const std::string& s) {
  static const std::vector<std::pair<std::string, std::string>> kEntities = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&apos;", "'"}, {"&quot;", "\""}, {"&#9;", "\t"}, {"&#10;", "\n"}, {"&#13;", "\r"}, {"&amp;", "&"}};
  std::string out;
  for (size_t i = 0; i < s.size();) {
    bool matched = false;
    if (s[i] == '&')
      for (const auto& [e, c] : kEntities)
        if (s.compare(i, e.size(), e) == 0) {
          out += c;
          i += e.size();
          matched = true;
          break;
        }
    if (!matched) out += s[i++];
  }
  return out;
}

// Parses the renderer's output (elements, single-quoted attributes, text). Fails the test on
// anything else, so a change of format shows up here.
std::unique_ptr<Element> Parse(const std::string& svg) {
  auto root = std::make_unique<Element>();
  Element* cur = root.get();
  size_t i = 0;
  while (i < svg.size()) {
    if (svg[i] != '<') {
      const size_t end = svg.find('<', i);
      cur->text += Decode(svg.substr(i, end - i));
      i = end == std::string::npos ? svg.size() : end;
      continue;
    }
    if (svg.compare(i, 2, "</") == 0) {
      const size_t end = svg.find('>', i);
      EXPECT_EQ(svg.substr(i + 2, end - i - 2), cur->name) << "mismatched end tag at " << i;
      cur = const_cast<Element*>(cur->parent);
      i = end + 1;
      continue;
    }
    auto e = std::make_unique<Element>();
    size_t j = i + 1;
    while (j < svg.size() && svg[j] != ' ' && svg[j] != '>' && svg[j] != '/') e->name += svg[j++];
    bool empty = false;
    while (j < svg.size()) {
      if (svg[j] == ' ') { ++j; continue; }
      if (svg[j] == '>') { ++j; break; }
      if (svg.compare(j, 2, "/>") == 0) { empty = true; j += 2; break; }
      const size_t eq = svg.find('=', j);
      EXPECT_EQ(svg[eq + 1], '\'') << "attribute not single-quoted at " << j;
      const size_t close = svg.find('\'', eq + 2);
      const std::string key = svg.substr(j, eq - j);
      EXPECT_FALSE(e->attrs.count(key)) << "attribute " << key << " twice at " << j;
      e->attrs[key] = Decode(svg.substr(eq + 2, close - eq - 2));
      j = close + 1;
    }
    e->parent = cur;
    Element* raw = e.get();
    cur->children.push_back(std::move(e));
    if (!empty) cur = raw;
    i = j;
  }
  EXPECT_EQ(cur, root.get()) << "unclosed elements";
  return root;
}

void Walk(const Element& e, const std::function<void(const Element&)>& f) {
  f(e);
  for (const auto& c : e.children) Walk(*c, f);
}

std::vector<const Element*> All(const Element& root, const std::string& cls) {
  std::vector<const Element*> out;
  Walk(root, [&](const Element& e) {
    if (e.HasClass(cls)) out.push_back(&e);
  });
  return out;
}

struct Box {
  int x, y, w, h;
  bool Inside(const Box& o) const { return x >= o.x && y >= o.y && x + w <= o.x + o.w && y + h <= o.y + o.h; }
  bool Overlaps(const Box& o) const { return x < o.x + o.w && o.x < x + w && y < o.y + o.h && o.y < y + h; }
};

// The box of a group: its first <rect>.
Box BoxOf(const Element& g) {
  const Element* r = g.name == "rect" ? &g : g.Child("rect");
  EXPECT_NE(r, nullptr) << g.Attr("class");
  if (!r) return {0, 0, 0, 0};
  return {r->Int("x"), r->Int("y"), r->Int("width"), r->Int("height")};
}

std::string Fixture(const std::string& name) { return std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/" + name + ".json"; }

void ExpectWellFormed(const std::string& svg, const std::string& what) {
  ACCEL_REQUIRE_TOOL("/usr/bin/xmllint", "libxml2-utils");
  const std::string path = ::testing::TempDir() + "accel_host_picture_" + std::to_string(getpid()) + ".svg";
  std::ofstream(path) << svg;
  EXPECT_EQ(std::system(("/usr/bin/xmllint --noout '" + path + "'").c_str()), 0) << what;
  std::remove(path.c_str());
}

// Claims made by the engine on `host`, one per flavor file, as `accel place --claim` would.
std::vector<PictureClaim> PlaceAll(const topology::HostTopology& host, const std::vector<std::string>& flavors) {
  const std::string examples = std::string(ACCEL_SOURCE_DIR) + "/examples/flavors/";
  const PciAliasTable aliases = LoadPciAliases(examples + "aliases.json");
  HostUsage usage;
  std::vector<PictureClaim> claims;
  for (const std::string& file : flavors) {
    for (const Flavor& f : LoadFlavors(examples + file)) {
      PlaceResult r = Place(host, usage, {}, BuildRequest(f, aliases, file));
      EXPECT_TRUE(r.fits()) << file;
      if (!r.fits()) continue;
      EXPECT_EQ(usage.Apply(*r.placement), "");
      claims.push_back({"c-00000000000" + std::to_string(claims.size()), f.name, *r.placement});
    }
  }
  return claims;
}

// ---- Tests ------------------------------------------------------------------------------------

// Every host we have: the repo fixtures and the real machines of ../shared.
std::vector<std::string> AllHosts() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts"))
    out.push_back(e.path().string());
  const std::string shared = test_support::SharedPath("fixtures/hwloc");
  if (std::filesystem::exists(shared))
    for (const auto& e : std::filesystem::directory_iterator(shared))
      if (e.path().extension() == ".xml") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(HostPicture, EveryCpuOnceInItsCoreAndNodeOnEveryHost) {
  ACCEL_REQUIRE_SHARED(test_support::SharedPath("fixtures/hwloc"));
  const std::vector<std::string> hosts = AllHosts();
  ASSERT_GE(hosts.size(), 15u);
  for (const std::string& path : hosts) {
    SCOPED_TRACE(path);
    const topology::HostTopology host = topology::LoadTopology(path);
    const std::string svg = RenderHostSvg(host, {});
    ExpectWellFormed(svg, path);
    const auto doc = Parse(svg);
    const Element& root = *doc->children.at(0);
    EXPECT_EQ(root.name, "svg");
    EXPECT_EQ(root.Attr("xmlns"), "http://www.w3.org/2000/svg");
    EXPECT_EQ(root.Attr("data-host"), host.hostname);
    EXPECT_EQ(root.Attr("viewBox"), "0 0 " + root.Attr("width") + " " + root.Attr("height"));

    std::map<int, int> seen;
    for (const Element* cpu : All(root, "ah-cpu")) {
      const int id = cpu->Int("data-cpu");
      ++seen[id];
      EXPECT_TRUE(cpu->HasClass("ah-free"));
      const Element* node = cpu->Ancestor("ah-node");
      ASSERT_NE(node, nullptr);
      const int node_index = host.NodeIndex(node->Int("data-node"));
      ASSERT_GE(node_index, 0);
      EXPECT_TRUE(host.numa_nodes[node_index].cpus.Contains(id)) << "CPU " << id;
      // SMT siblings share one core box.
      const Element* core = cpu->Ancestor("ah-core");
      ASSERT_NE(core, nullptr);
      CpuSet siblings;
      std::string err;
      ASSERT_TRUE(CpuSet::Parse(core->Attr("data-cpus"), &siblings, &err)) << err;
      EXPECT_TRUE(siblings.Contains(id));
      EXPECT_EQ(cpu->Child("title")->text.rfind("CPU " + std::to_string(id) + " ", 0), 0u);
    }
    std::map<int, int> expected;
    for (int cpu : host.AllCpus().ToVector()) expected[cpu] = 1;
    EXPECT_EQ(seen, expected);
    EXPECT_EQ(All(root, "ah-node").size(), host.numa_nodes.size());
    EXPECT_EQ(All(root, "ah-package").size(), host.packages.size());
  }
}

TEST(HostPicture, ClaimsColourTheirCpusPagesAndDevices) {
  const topology::HostTopology host = topology::LoadTopology(Fixture("hgx-h100"));
  const std::vector<PictureClaim> claims = PlaceAll(host, {"gpu-1g.yaml", "isolate.yaml", "numa2.yaml"});
  ASSERT_EQ(claims.size(), 3u);
  const std::string svg = RenderHostSvg(host, claims);
  ExpectWellFormed(svg, "hgx with claims");
  const auto doc = Parse(svg);
  const Element& root = *doc->children.at(0);

  std::map<int, const Element*> cpus;
  for (const Element* e : All(root, "ah-cpu")) cpus[e->Int("data-cpu")] = e;
  std::set<int> held;
  for (size_t i = 0; i < claims.size(); ++i) {
    SCOPED_TRACE(claims[i].id);
    const Placement& p = claims[i].placement;
    const std::string cls = "ah-claim-" + claims[i].id, color = HostPictureColor(i);
    auto expect_cpu = [&](int cpu, const std::string& use) {
      held.insert(cpu);
      const Element* e = cpus.at(cpu);
      EXPECT_TRUE(e->HasClass(cls) && e->HasClass("ah-claimed")) << cpu;
      EXPECT_EQ(e->Attr("data-claim"), claims[i].id);
      EXPECT_EQ(e->Attr("data-use"), use) << cpu;
      EXPECT_EQ(e->Child("rect")->Attr("fill"), color) << cpu;
      EXPECT_NE(e->Child("title")->text.find(claims[i].id + " (" + claims[i].label + ")"), std::string::npos);
    };
    for (const CellPlacement& cell : p.cells) {
      for (const auto& [vcpu, cpu] : cell.pinning) expect_cpu(cpu, "vcpu");
      CpuSet pinned;
      for (const auto& [vcpu, cpu] : cell.pinning) pinned.Add(cpu);
      for (int cpu : cell.consumed_cpus.Minus(pinned).ToVector()) expect_cpu(cpu, "sibling");
      // Its share of the node's pool.
      bool found = false;
      for (const Element* pool : All(root, "ah-pool")) {
        if (pool->Int("data-node") != cell.host_node || std::stoull(pool->Attr("data-page-kib")) != cell.page_size_kib)
          continue;
        for (const auto& c : pool->children)
          if (c->HasClass(cls)) {
            found = true;
            EXPECT_EQ(std::stoull(c->Attr("data-pages")), cell.pages);
            EXPECT_EQ(c->Attr("fill"), color);
          }
      }
      EXPECT_TRUE(found) << "node " << cell.host_node << " pool " << cell.page_size_kib;
    }
    for (int cpu : p.emulator_cpus.ToVector()) expect_cpu(cpu, "emulator");
    for (const DevicePlacement& d : p.devices) {
      const std::vector<const Element*> devs = All(root, cls);
      const auto it = std::find_if(devs.begin(), devs.end(), [&](const Element* e) { return e->Attr("data-pci") == d.address; });
      ASSERT_NE(it, devs.end()) << d.address;
      EXPECT_TRUE((*it)->HasClass("ah-pci") && (*it)->HasClass("ah-gpu"));
      EXPECT_EQ((*it)->Child("rect")->Attr("fill"), color);
      EXPECT_EQ((*it)->Ancestor("ah-node")->Int("data-node"), d.numa_node);
    }
  }
  EXPECT_GT(held.size(), 40u);
  for (const auto& [cpu, e] : cpus)
    if (!held.count(cpu)) {
      EXPECT_TRUE(e->HasClass("ah-free")) << cpu;
      EXPECT_EQ(e->Child("rect")->Attr("fill"), "#ffffff");
    }

  // The legend: one entry per claim, in order, in its colour, naming it and its flavor.
  const std::vector<const Element*> legend = All(root, "ah-legend-claim");
  ASSERT_EQ(legend.size(), claims.size());
  for (size_t i = 0; i < claims.size(); ++i) {
    EXPECT_EQ(legend[i]->Attr("data-claim"), claims[i].id);
    EXPECT_EQ(legend[i]->Attr("data-color"), HostPictureColor(i));
    EXPECT_EQ(legend[i]->Child("rect")->Attr("fill"), HostPictureColor(i));
    EXPECT_EQ(legend[i]->Child("text")->text, claims[i].id + "  " + claims[i].label);
  }
  EXPECT_NE(legend[0]->Child("title")->text.find("16 pinned vCPUs"), std::string::npos);
}

TEST(HostPicture, EveryDeviceIsDrawnInItsNodeAndNvSwitchesAndNicsToo) {
  const topology::HostTopology host = topology::LoadTopology(Fixture("hgx-h100"));
  const auto doc = Parse(RenderHostSvg(host, {}));
  std::map<std::string, const Element*> drawn;
  for (const Element* e : All(*doc, "ah-pci")) drawn[e->Attr("data-pci")] = e;
  int gpus = 0, switches = 0, nics = 0;
  for (const topology::PciDevice& dev : host.pci) {
    const bool listed = dev.is_accelerator() || dev.role == topology::PciRole::kNvSwitch ||
                        dev.role == topology::PciRole::kNic || dev.role == topology::PciRole::kStorage;
    ASSERT_EQ(drawn.count(dev.address), listed ? 1u : 0u) << dev.address;
    if (!listed) continue;
    const Element* e = drawn[dev.address];
    EXPECT_TRUE(e->HasClass(std::string("ah-") + topology::PciRoleName(dev.role))) << dev.address;
    EXPECT_TRUE(e->HasClass("ah-free"));
    const Element* node = e->Ancestor("ah-node");
    if (dev.numa_node >= 0) {
      ASSERT_NE(node, nullptr) << dev.address;
      EXPECT_EQ(node->Int("data-node"), dev.numa_node) << dev.address;
    } else {
      EXPECT_EQ(node, nullptr);
      EXPECT_NE(e->Ancestor("ah-pci-unplaced"), nullptr);
    }
    EXPECT_NE(e->Child("title")->text.find(dev.address), std::string::npos);
    gpus += e->HasClass("ah-gpu");
    switches += e->HasClass("ah-nvswitch");
    nics += e->HasClass("ah-nic");
  }
  EXPECT_EQ(gpus, 8);
  EXPECT_EQ(switches, 4);
  EXPECT_EQ(nics, 13);
}

TEST(HostPicture, VfsAreCountedOnTheirPfUnlessClaimed) {
  const std::string path = test_support::SharedPath("fixtures/hwloc/16intel64-manyVFs.xml");
  ACCEL_REQUIRE_SHARED(path);
  const topology::HostTopology host = topology::LoadTopology(path);
  const topology::PciDevice* vf = nullptr;
  for (const topology::PciDevice& d : host.pci)
    if (d.is_vf() && !vf) vf = &d;
  ASSERT_NE(vf, nullptr);
  {
    const auto doc = Parse(RenderHostSvg(host, {}));
    for (const Element* e : All(*doc, "ah-pci")) EXPECT_FALSE(host.FindPci(e->Attr("data-pci"))->is_vf());
    const std::vector<const Element*> pf = All(*doc, "ah-pci");
    const auto it = std::find_if(pf.begin(), pf.end(), [&](const Element* e) { return e->Attr("data-pci") == vf->physfn; });
    ASSERT_NE(it, pf.end());
    EXPECT_NE((*it)->Child("title")->text.find(" VF"), std::string::npos);
  }
  Placement p;
  p.devices.push_back({"nic-vf", vf->address, vf->vendor_id, vf->device_id, vf->numa_node, -1});
  const auto doc = Parse(RenderHostSvg(host, {{"c-vf", "sriov", p}}));
  const std::vector<const Element*> held = All(*doc, "ah-claim-c-vf");
  ASSERT_EQ(held.size(), 2u);  // the legend entry and the VF
  EXPECT_EQ(held[1]->Attr("data-pci"), vf->address);
}

TEST(HostPicture, HostileNamesAreEscaped) {
  const topology::HostTopology host = topology::LoadTopology(Fixture("devbox"));
  Placement p;
  CellPlacement cell;
  cell.host_node = host.numa_nodes[0].id;
  cell.pinning = {{0, host.numa_nodes[0].cpus.First()}};
  cell.consumed_cpus = CpuSet{host.numa_nodes[0].cpus.First()};
  p.cells.push_back(cell);
  const std::string label = "<a&\"b>' </svg><script>x</script>";
  const std::string id = "c-'x<y&\"z";
  const std::string svg = RenderHostSvg(host, {{id, label, p}});
  ExpectWellFormed(svg, "hostile names");
  EXPECT_EQ(svg.find("<a&"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
  const auto doc = Parse(svg);
  const std::vector<const Element*> legend = All(*doc, "ah-legend-claim");
  ASSERT_EQ(legend.size(), 1u);
  EXPECT_EQ(legend[0]->Attr("data-claim"), id);
  EXPECT_NE(legend[0]->Child("title")->text.find(label), std::string::npos);
  // Class names carry only [A-Za-z0-9_-].
  EXPECT_TRUE(legend[0]->HasClass("ah-claim-c-_x_y__z"));
  EXPECT_EQ(All(*doc, "ah-claim-c-_x_y__z").size(), 2u);  // legend + the CPU

  // Invalid UTF-8 and control characters in a host name still give well-formed XML.
  topology::HostTopology odd = host;
  odd.hostname = std::string("h\x01\xC3\x28\xFF", 5) + "&";
  ExpectWellFormed(RenderHostSvg(odd, {}), "odd host name");
}

TEST(HostPicture, SameInputSameBytes) {
  const topology::HostTopology host = topology::LoadTopology(Fixture("hgx-h100"));
  const std::vector<PictureClaim> claims = PlaceAll(host, {"gpu-1g.yaml", "mixed.yaml"});
  const std::string a = RenderHostSvg(host, claims);
  const topology::HostTopology copy = topology::LoadTopology(Fixture("hgx-h100"));
  const std::vector<PictureClaim> claims_copy = claims;
  EXPECT_EQ(a, RenderHostSvg(copy, claims_copy));
  EXPECT_EQ(a.back(), '\n');
  EXPECT_EQ(a.rfind("<svg ", 0), 0u);  // no XML declaration: also fine inline in HTML
  EXPECT_EQ(a.find("<style"), std::string::npos);
  EXPECT_EQ(a.find(" id="), std::string::npos);  // ids would clash with several pictures on a page
  EXPECT_EQ(a.find("href"), std::string::npos);
}

TEST(HostPicture, PaletteIsDistinctAndCycles) {
  std::set<std::string> colors;
  for (size_t i = 0; i < 12; ++i) {
    const std::string c = HostPictureColor(i);
    EXPECT_EQ(c.size(), 7u);
    EXPECT_EQ(c[0], '#');
    EXPECT_NE(c, "#ffffff");
    colors.insert(c);
  }
  EXPECT_EQ(colors.size(), 12u);
  EXPECT_EQ(HostPictureColor(12), HostPictureColor(0));

  // 13 one-CPU claims: the 13th takes the first colour again.
  topology::HostTopology host = testing::MakeHost({{8, 2}, {8, 2}});
  std::vector<PictureClaim> claims;
  for (int i = 0; i < 13; ++i) {
    Placement p;
    p.emulator_cpus = CpuSet{i};
    claims.push_back({"c-" + std::to_string(i), "one", p});
  }
  const auto doc = Parse(RenderHostSvg(host, claims));
  for (const Element* e : All(*doc, "ah-cpu"))
    if (e->Int("data-cpu") == 12) {
      EXPECT_EQ(e->Child("rect")->Attr("fill"), HostPictureColor(0));
    }
}

TEST(HostPicture, OverlapsAndResourcesOffTheHostAreShown) {
  const topology::HostTopology host = testing::MakeHost({{4, 2, 8192, 0, 0, 0, 1}, {4, 2}});
  Placement a, b;
  a.emulator_cpus = CpuSet{1, 2};
  b.emulator_cpus = CpuSet{2, 9999};
  b.devices.push_back({"x", "0000:ff:1f.7", 0x10de, 0x2330, 0, -1});
  CellPlacement cell;
  cell.host_node = 7;  // no such node
  cell.page_size_kib = 2048;
  cell.pages = 4;
  b.cells.push_back(cell);
  const std::string svg = RenderHostSvg(host, {{"c-a", "a", a}, {"c-b", "b", b}});
  const auto doc = Parse(svg);
  const std::vector<const Element*> conflict = All(*doc, "ah-conflict");
  ASSERT_EQ(conflict.size(), 1u);
  EXPECT_EQ(conflict[0]->Attr("data-cpu"), "2");
  EXPECT_TRUE(conflict[0]->HasClass("ah-claim-c-a") && conflict[0]->HasClass("ah-claim-c-b"));
  EXPECT_EQ(conflict[0]->Child("rect")->Attr("fill"), HostPictureColor(0));
  EXPECT_EQ(svg.find("data-cpu='9999'"), std::string::npos);
  const std::vector<const Element*> legend = All(*doc, "ah-legend-claim");
  ASSERT_EQ(legend.size(), 2u);
  EXPECT_NE(legend[1]->Child("title")->text.find("3 not on this host"), std::string::npos);
}

// Large hosts stay readable: nothing overlaps, everything sits inside its node, package and
// picture, and the picture stays within a screen or two.
TEST(HostPicture, LargeHostsLayOutWithoutOverlap) {
  for (const std::string name : {"192em64t-24n8c2t.xml", "nvidiaDGX2.xml", "64intel64-heteromem.xml"}) {
    SCOPED_TRACE(name);
    const std::string path = test_support::SharedPath("fixtures/hwloc/" + std::string(name));
    ACCEL_REQUIRE_SHARED(path);
    const topology::HostTopology host = topology::LoadTopology(path);
    const auto doc = Parse(RenderHostSvg(host, {}));
    const Element& root = *doc->children.at(0);
    const Box picture{0, 0, root.Int("width"), root.Int("height")};
    EXPECT_LE(picture.w, 2400);
    EXPECT_LE(picture.h, 2400);
    for (const std::string cls : {"ah-cpu", "ah-node", "ah-pci", "ah-package", "ah-core"}) {
      const std::vector<const Element*> items = All(root, cls);
      std::vector<Box> boxes;
      for (const Element* e : items) boxes.push_back(BoxOf(*e));
      for (size_t i = 0; i < boxes.size(); ++i) {
        EXPECT_TRUE(boxes[i].Inside(picture)) << cls << " " << i;
        if (cls != "ah-package" && cls != "ah-node" && items[i]->Ancestor("ah-node")) {
          EXPECT_TRUE(boxes[i].Inside(BoxOf(*items[i]->Ancestor("ah-node")))) << cls << " " << i;
        }
        if (const Element* pkg = items[i]->Ancestor("ah-package")) {
          EXPECT_TRUE(boxes[i].Inside(BoxOf(*pkg)));
        }
        for (size_t j = i + 1; j < boxes.size(); ++j) ASSERT_FALSE(boxes[i].Overlaps(boxes[j])) << cls << " " << i << " " << j;
      }
    }
  }
  // The 24-node machine is a grid, not a column or a row.
  const std::string path = test_support::SharedPath("fixtures/hwloc/192em64t-24n8c2t.xml");
  const auto doc = Parse(RenderHostSvg(topology::LoadTopology(path), {}));
  std::set<int> xs, ys;
  for (const Element* e : All(*doc, "ah-node")) {
    xs.insert(BoxOf(*e).x);
    ys.insert(BoxOf(*e).y);
  }
  EXPECT_GE(xs.size(), 3u);
  EXPECT_GE(ys.size(), 3u);
}

TEST(HostPicture, MemoryOnlyNodesAndOptions) {
  const topology::HostTopology host = topology::LoadTopology(Fixture("hgx-h100"));
  HostPictureOptions opts;
  opts.cores_per_row = 4;
  opts.scale = 0.5;
  const auto doc = Parse(RenderHostSvg(host, {}, opts));
  const Element& root = *doc->children.at(0);
  const std::string view = root.Attr("viewBox");
  const int view_w = std::stoi(view.substr(4, view.find(' ', 4) - 4));
  EXPECT_EQ(root.Int("width"), (view_w + 1) / 2);
  std::set<int> rows;
  for (const Element* e : All(root, "ah-core"))
    if (e->Ancestor("ah-node")->Int("data-node") == 0) rows.insert(BoxOf(*e).y);
  EXPECT_EQ(rows.size(), 14u);  // 56 cores, 4 a row

  // Nodes without CPUs are drawn, in the box of nodes of no single package.
  const std::string het = test_support::SharedPath("fixtures/hwloc/64intel64-heteromem.xml");
  ACCEL_REQUIRE_SHARED(het);
  const topology::HostTopology mem = topology::LoadTopology(het);
  const auto mdoc = Parse(RenderHostSvg(mem, {}));
  int memory_only = 0;
  for (const Element* e : All(*mdoc, "ah-node")) {
    const auto& node = mem.numa_nodes[mem.NodeIndex(e->Int("data-node"))];
    if (!node.cpus.Empty()) continue;
    ++memory_only;
    EXPECT_NE(e->Ancestor("ah-nodes-other"), nullptr);
    EXPECT_EQ(All(*e, "ah-pool").size(), 1u);
  }
  EXPECT_EQ(memory_only, 4);
}

}  // namespace
}  // namespace accel::placement
