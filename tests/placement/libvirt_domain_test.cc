// RenderDomainXml against hand-built placements: the elements that carry the placement, the
// Nova examples of nova-numa.md §5, and libvirt's own checks (virt-xml-validate with the
// domain schema, `virsh define` on the test driver) for every generated domain.
#include "placement/libvirt_domain.h"

#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <regex>
#include <set>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "support/shared_fixture.h"

namespace accel::placement {
namespace libvirt_domain_test {

using ::testing::HasSubstr;
using ::testing::Not;
using topology::HostTopology;

// ---------------------------------------------------------------------------------------------
// Hosts and placements, built by hand.

// The host of nova_fit_demo.py: `cells` nodes x 8 cores x 2 threads, CPU t*(8*cells)+8*n+c
// (siblings {i, i+8*cells}), 4K/2M/1G pools, 128 GiB per node.
HostTopology NovaDemoHost(int cells) {
  HostTopology host;
  host.hostname = "compute-0";
  const int total_cores = 8 * cells;
  for (int n = 0; n < cells; ++n) {
    topology::NumaNode node;
    node.id = n;
    node.package = n;
    for (int c = 0; c < 8; ++c) {
      CpuSet core{n * 8 + c, total_cores + n * 8 + c};
      node.cores.push_back(core);
      node.cpus = node.cpus.Union(core);
    }
    node.memory_kib = 128ull << 20;
    node.pages = {{4, (88ull << 20) / 4, (88ull << 20) / 4}, {2048, 4096, 4096}, {1048576, 32, 32}};
    host.numa_nodes.push_back(node);
  }
  return host;
}

// Dedicated vCPUs first..first+pcpus.size()-1 pinned in order to pcpus.
std::map<int, int> Pins(int first, std::initializer_list<int> pcpus) {
  std::map<int, int> pins;
  for (int p : pcpus) pins[first++] = p;
  return pins;
}

CellPlacement Cell(int guest, int node, std::map<int, int> pinning, uint64_t memory_mib,
                   uint64_t page_kib) {
  CellPlacement c;
  c.guest_cell = guest;
  c.host_node = node;
  c.pinning = std::move(pinning);
  for (const auto& [v, p] : c.pinning) c.consumed_cpus.Add(p);
  c.memory_mib = memory_mib;
  c.page_size_kib = page_kib;
  c.pages = memory_mib * 1024 / page_kib;
  return c;
}

DevicePlacement Gpu(const std::string& address, int node, int guest_cell) {
  return {"h100", address, 0x10de, 0x2330, node, guest_cell};
}

PlacementRequest Request(const std::string& flavor, int vcpus, uint64_t memory_mib,
                         CpuPolicy policy) {
  PlacementRequest r;
  r.flavor = flavor;
  r.vcpus = vcpus;
  r.memory_mib = memory_mib;
  r.cpu_policy = policy;
  return r;
}

// The "requested demo" of nova-numa.md §5/§6: dedicated, 4 vCPUs, 8 GiB, 1G pages, one GPU
// with policy required; lands on host cell 1 with pinning {0:9, 1:25, 2:10, 3:26}.
struct Scenario {
  HostTopology host;
  PlacementRequest request;
  Placement placement;
};

Scenario NovaDemoDedicated() {
  Scenario s{NovaDemoHost(2), Request("accel.demo", 4, 8192, CpuPolicy::kDedicated), {}};
  s.request.page_size = {PageSizeRequest::kExplicit, 1048576};
  s.request.cells = {{CpuSet{0, 1, 2, 3}, {}, 8192}};
  s.request.extra_specs = {{"hw:cpu_policy", "dedicated"}, {"hw:mem_page_size", "1GB"},
                           {"hw:pci_numa_affinity_policy", "required"}};
  s.placement.host = "compute-0";
  s.placement.flavor = "accel.demo";
  s.placement.cells = {Cell(0, 1, Pins(0, {9, 25, 10, 26}), 8192, 1048576)};
  s.placement.devices = {Gpu("0000:41:00.0", 1, 0)};
  return s;
}

// ---------------------------------------------------------------------------------------------
// libvirt's checks.

struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr
};

CommandResult RunCommand(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  std::array<char, 512> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) r.output.append(buf.data(), n);
  r.status = pclose(pipe);
  return r;
}

std::string WriteTempFile(const std::string& tag, const std::string& text) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string path = ::testing::TempDir() + "accel_libvirt_" + std::to_string(getpid()) + "_" +
                     info->name() + tag + ".xml";
  std::ofstream(path) << text;
  return path;
}

// ---------------------------------------------------------------------------------------------
// Guest PCI addressing, which libvirt's test driver does not check (it accepts two devices at
// one address, or an expander reporting a NUMA node the guest lacks): every guest address is
// unique and on an existing controller; expanders sit on pcie-root, root ports on an expander,
// devices at slot 0 of a root port; each controller's index is above its parent's; expander
// bus-number ranges (own bus + one per root port) are disjoint and within 1..255.

struct GuestPciNode {
  std::string kind;   // controller model, or "hostdev"
  int index = -1;     // controllers only
  int bus = -1, slot = -1, function = -1;
  int bus_nr = -1, numa_node = -1;  // expanders only
};

std::vector<GuestPciNode> ParseGuestPci(const std::string& xml) {
  static const std::regex controller(R"(<controller type='pci' index='(\d+)' model='([a-z-]+)')");
  static const std::regex address(
      R"(<address type='pci' domain='0x0000' bus='0x([0-9a-f]+)' slot='0x([0-9a-f]+)' function='0x([0-7])'/>)");
  static const std::regex bus_nr(R"(<target busNr='(\d+)'>)");
  static const std::regex node(R"(<node>(\d+)</node>)");
  std::vector<GuestPciNode> nodes;
  std::stringstream lines(xml);
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, m, controller)) {
      nodes.push_back({m[2], std::stoi(m[1])});
    } else if (line.find("<hostdev ") != std::string::npos ||
               line.find("<disk ") != std::string::npos) {
      nodes.push_back({line.find("<disk ") != std::string::npos ? "disk" : "hostdev"});
    } else if (std::regex_search(line, m, address) && !nodes.empty()) {
      nodes.back().bus = std::stoi(m[1], nullptr, 16);
      nodes.back().slot = std::stoi(m[2], nullptr, 16);
      nodes.back().function = std::stoi(m[3]);
    } else if (std::regex_search(line, m, bus_nr) && !nodes.empty()) {
      nodes.back().bus_nr = std::stoi(m[1]);
    } else if (std::regex_search(line, m, node) && !nodes.empty()) {
      nodes.back().numa_node = std::stoi(m[1]);
    }
  }
  return nodes;
}

void ExpectValidGuestPci(const std::string& xml, int guest_cells) {
  const std::vector<GuestPciNode> nodes = ParseGuestPci(xml);
  std::map<int, const GuestPciNode*> controllers;
  for (const GuestPciNode& n : nodes) {
    if (n.index >= 0) {
      EXPECT_TRUE(controllers.emplace(n.index, &n).second) << "index " << n.index;
    }
  }
  std::set<std::tuple<int, int, int>> used;
  std::map<int, int> ports_on;  // expander index -> root ports on it
  for (const GuestPciNode& n : nodes) {
    if (n.bus < 0) {
      EXPECT_NE(n.kind, "pcie-expander-bus") << "an expander needs a fixed address";
      EXPECT_NE(n.kind, "pcie-root-port") << "a root port needs a fixed address";
      continue;
    }
    EXPECT_TRUE(used.insert({n.bus, n.slot, n.function}).second)
        << "two devices at bus " << n.bus << " slot " << n.slot;
    ASSERT_TRUE(controllers.count(n.bus)) << n.kind << " on missing bus " << n.bus;
    const std::string& parent = controllers.at(n.bus)->kind;
    if (n.index >= 0) {
      EXPECT_GT(n.index, n.bus) << n.kind;
    }
    if (n.kind == "pcie-expander-bus") {
      EXPECT_EQ(parent, "pcie-root");
      EXPECT_TRUE(n.slot != 0 && n.slot != 1 && n.slot != 0x1f) << "reserved slot " << n.slot;
      EXPECT_GE(n.numa_node, 0);
      EXPECT_LT(n.numa_node, guest_cells);
    } else if (n.kind == "pcie-root-port") {
      EXPECT_EQ(parent, "pcie-expander-bus");
      ++ports_on[n.bus];
    } else {
      EXPECT_EQ(parent, "pcie-root-port") << n.kind;
      EXPECT_EQ(n.slot, 0) << "a root port has one slot";
    }
  }
  std::set<int> bus_numbers;
  for (const auto& [index, n] : controllers) {
    if (n->kind != "pcie-expander-bus") continue;
    EXPECT_GE(n->bus_nr, 1);
    EXPECT_LE(n->bus_nr + ports_on[index], 255);
    for (int b = n->bus_nr; b <= n->bus_nr + ports_on[index]; ++b)
      EXPECT_TRUE(bus_numbers.insert(b).second) << "bus number " << b << " twice";
  }
}

#define REQUIRE_LIBVIRT_TOOLS()                                       \
  ACCEL_REQUIRE_TOOL("/usr/bin/virt-xml-validate", "libvirt-clients"); \
  ACCEL_REQUIRE_TOOL("/usr/bin/virsh", "libvirt-clients")

// Renders `s` and checks its guest PCI addressing.
std::string Render(const Scenario& s, const DomainOptions& options) {
  std::string xml = RenderDomainXml(s.host, s.request, s.placement, options);
  ExpectValidGuestPci(xml, static_cast<int>(s.placement.cells.size()));
  return xml;
}

// Checks the domain with libvirt's schema and defines it on the test driver; returns the
// define output (it names the domain as libvirt parsed it). Callers first skip without the
// tools (REQUIRE_LIBVIRT_TOOLS). The files stay in the temp dir only when a check failed.
std::string ExpectLibvirtAccepts(const Scenario& s, const DomainOptions& options) {
  const std::string path = WriteTempFile("", Render(s, options));
  CommandResult valid = RunCommand("virt-xml-validate '" + path + "' domain");
  EXPECT_EQ(valid.status, 0) << path << ": " << valid.output;
  CommandResult define = RunCommand("virsh -c test:///default define '" + path + "'");
  if (define.status != 0) {
    // libvirt 9.0's test driver takes type='kvm'; other versions may want type='test'. The
    // schema check above used the real type; only the define check falls back.
    DomainOptions as_test = options;
    as_test.domain_type = "test";
    const std::string test_path = WriteTempFile("_test", Render(s, as_test));
    define = RunCommand("virsh -c test:///default define '" + test_path + "'");
    if (define.status == 0) std::remove(test_path.c_str());
  }
  EXPECT_EQ(define.status, 0) << path << ": " << define.output;
  if (valid.status == 0 && define.status == 0) std::remove(path.c_str());
  return define.output;
}

// The text of the first <tag ...>...</tag> block (with its indentation stripped off the
// first line), or "" when absent.
std::string Block(const std::string& xml, const std::string& tag) {
  const size_t start = xml.find("<" + tag + " ");
  if (start == std::string::npos) return "";
  const size_t end = xml.find("</" + tag + ">", start);
  return end == std::string::npos ? "" : xml.substr(start, end + tag.size() + 3 - start);
}

// ---------------------------------------------------------------------------------------------
// Nova's examples (nova-numa.md §5).

TEST(LibvirtDomain, ReproducesNovasDedicatedGpuExample) {
  Scenario s = NovaDemoDedicated();
  DomainOptions nova_like;
  nova_like.pci_expander_buses = false;  // Nova gives the hostdev no guest address
  const std::string xml = Render(s, nova_like);

  // Emulator policy share and no cpu_shared_set: the union of the vCPUs' pCPUs.
  EXPECT_THAT(xml, HasSubstr("<emulatorpin cpuset='9-10,25-26'/>"));
  EXPECT_THAT(xml, HasSubstr("<vcpupin vcpu='0' cpuset='9'/>\n"
                             "    <vcpupin vcpu='1' cpuset='25'/>\n"
                             "    <vcpupin vcpu='2' cpuset='10'/>\n"
                             "    <vcpupin vcpu='3' cpuset='26'/>\n"));
  EXPECT_THAT(xml, HasSubstr("<numatune>\n"
                             "    <memory mode='strict' nodeset='1'/>\n"
                             "    <memnode cellid='0' mode='strict' nodeset='1'/>\n"
                             "  </numatune>\n"));
  EXPECT_THAT(xml, HasSubstr("<cell id='0' cpus='0-3' memory='8388608' unit='KiB' "
                             "memAccess='shared'/>"));
  EXPECT_THAT(xml, HasSubstr("<memoryBacking>\n"
                             "    <hugepages>\n"
                             "      <page size='1048576' unit='KiB' nodeset='0'/>\n"
                             "    </hugepages>\n"
                             "  </memoryBacking>\n"));
  EXPECT_EQ(Block(xml, "hostdev"),
            "<hostdev mode='subsystem' type='pci' managed='yes'>\n"
            "      <source>\n"
            "        <address domain='0x0000' bus='0x41' slot='0x00' function='0x0'/>\n"
            "      </source>\n"
            "    </hostdev>");
  // No cpu_shared_set and a NUMA topology: no cpuset on <vcpu>; Nova's default topology for
  // 4 vCPUs with no preference is 4 sockets.
  EXPECT_THAT(xml, HasSubstr("<vcpu placement='static'>4</vcpu>"));
  EXPECT_THAT(xml, HasSubstr("<topology sockets='4' dies='1' cores='1' threads='1'/>"));
  EXPECT_THAT(xml, Not(HasSubstr("<controller")));
  EXPECT_THAT(xml, Not(HasSubstr("<locked/>")));  // Nova locks memory only for realtime/SEV
  EXPECT_THAT(xml, HasSubstr("<memory unit='KiB'>8388608</memory>"));
  REQUIRE_LIBVIRT_TOOLS();
  ExpectLibvirtAccepts(s, nova_like);
}

TEST(LibvirtDomain, ReproducesNovasMixedIsolateExample) {
  // 8 vCPUs, vCPUs 0-1 shared, hw:numa_nodes=2, emulator isolate, 2M pages.
  Scenario s{NovaDemoHost(2), Request("mixed", 8, 8192, CpuPolicy::kMixed), {}};
  s.request.emulator_policy = EmulatorPolicy::kIsolate;
  s.request.page_size = {PageSizeRequest::kExplicit, 2048};
  s.request.cells = {{CpuSet{2, 3}, CpuSet{0, 1}, 4096}, {CpuSet{4, 5, 6, 7}, {}, 4096}};
  s.placement.host = "compute-0";
  CellPlacement c0 = Cell(0, 0, Pins(2, {1, 17}), 4096, 2048);
  c0.shared_vcpus = CpuSet{0, 1};
  c0.shared_cpus = CpuSet{0, 16};  // core 0 of node 0 is the shared set
  s.placement.cells = {c0, Cell(1, 1, Pins(4, {9, 25, 10, 26}), 4096, 2048)};
  s.placement.emulator_cpus = CpuSet{2};
  s.placement.emulator_consumed_cpus = CpuSet{2};
  const std::string xml = Render(s, {});

  EXPECT_THAT(xml, HasSubstr("<emulatorpin cpuset='2'/>"));
  EXPECT_THAT(xml, HasSubstr("<vcpupin vcpu='0' cpuset='0,16'/>"));
  EXPECT_THAT(xml, HasSubstr("<vcpupin vcpu='1' cpuset='0,16'/>"));
  EXPECT_THAT(xml, HasSubstr("<vcpupin vcpu='2' cpuset='1'/>"));
  EXPECT_THAT(xml, HasSubstr("<vcpupin vcpu='3' cpuset='17'/>"));
  EXPECT_THAT(xml, HasSubstr("<vcpupin vcpu='7' cpuset='26'/>"));
  EXPECT_THAT(xml, HasSubstr("<memory mode='strict' nodeset='0-1'/>"));
  EXPECT_THAT(xml, HasSubstr("<memnode cellid='0' mode='strict' nodeset='0'/>"));
  EXPECT_THAT(xml, HasSubstr("<memnode cellid='1' mode='strict' nodeset='1'/>"));
  EXPECT_THAT(xml, HasSubstr("<page size='2048' unit='KiB' nodeset='0'/>\n"
                             "      <page size='2048' unit='KiB' nodeset='1'/>"));
  EXPECT_THAT(xml, HasSubstr("<cell id='0' cpus='0-3' memory='4194304' unit='KiB' "
                             "memAccess='shared'/>"));
  EXPECT_THAT(xml, HasSubstr("<cell id='1' cpus='4-7' memory='4194304' unit='KiB' "
                             "memAccess='shared'/>"));
  EXPECT_THAT(xml, HasSubstr("<topology sockets='8' dies='1' cores='1' threads='1'/>"));
  REQUIRE_LIBVIRT_TOOLS();
  ExpectLibvirtAccepts(s, {});
}

// ---------------------------------------------------------------------------------------------
// accel's scenarios.

TEST(LibvirtDomain, DedicatedOneCellGigPagesGpuEmulatorIsolate) {
  Scenario s = NovaDemoDedicated();
  s.request.emulator_policy = EmulatorPolicy::kIsolate;
  s.placement.emulator_cpus = CpuSet{11};
  s.placement.emulator_consumed_cpus = CpuSet{11};
  DomainOptions options;
  options.uuid = "C7A5FDBDCDAF9455926AD65C16DB1809";
  options.disk_image = "/var/lib/accel/images/guest.qcow2";
  const std::string xml = Render(s, options);

  EXPECT_THAT(xml, HasSubstr("<uuid>c7a5fdbd-cdaf-9455-926a-d65c16db1809</uuid>"));
  EXPECT_THAT(xml, HasSubstr("<emulatorpin cpuset='11'/>"));
  EXPECT_THAT(xml, HasSubstr("<vcpupin vcpu='3' cpuset='26'/>"));
  EXPECT_THAT(xml, HasSubstr("<page size='1048576' unit='KiB' nodeset='0'/>"));
  // The GPU behind an expander that reports guest node 0, then a root port on it.
  EXPECT_THAT(xml, HasSubstr("<controller type='pci' index='0' model='pcie-root'/>\n"
                             "    <controller type='pci' index='1' model='pcie-expander-bus'>\n"
                             "      <model name='pxb-pcie'/>\n"
                             "      <target busNr='254'>\n"
                             "        <node>0</node>\n"
                             "      </target>\n"
                             "      <address type='pci' domain='0x0000' bus='0x00' slot='0x10' "
                             "function='0x0'/>\n"
                             "    </controller>\n"
                             "    <controller type='pci' index='2' model='pcie-root-port'>\n"
                             "      <address type='pci' domain='0x0000' bus='0x01' slot='0x00' "
                             "function='0x0'/>\n"
                             "    </controller>\n"));
  EXPECT_THAT(Block(xml, "hostdev"),
              HasSubstr("<address domain='0x0000' bus='0x41' slot='0x00' function='0x0'/>\n"
                        "      </source>\n"
                        "      <address type='pci' domain='0x0000' bus='0x02' slot='0x00' "
                        "function='0x0'/>"));
  EXPECT_THAT(xml, HasSubstr("<driver name='qemu' type='qcow2'/>"));
  EXPECT_THAT(xml, HasSubstr("<target dev='vda' bus='virtio'/>"));
  EXPECT_THAT(xml, HasSubstr("<accel:flavor name='accel.demo' vcpus='4' memoryMiB='8192'/>"));
  EXPECT_THAT(xml, HasSubstr("<accel:host name='compute-0'/>"));
  EXPECT_THAT(xml, HasSubstr("<accel:extraSpec key='hw:mem_page_size'>1GB</accel:extraSpec>"));
  REQUIRE_LIBVIRT_TOOLS();
  ExpectLibvirtAccepts(s, options);
}

TEST(LibvirtDomain, TwoCellsTwoMegPagesTwoGpus) {
  Scenario s{NovaDemoHost(2), Request("g2", 8, 16384, CpuPolicy::kDedicated), {}};
  s.host.hostname = "compute-1";
  s.request.page_size = {PageSizeRequest::kExplicit, 2048};
  s.request.guest_topology = {2, 0, 0};  // hw:cpu_sockets=2
  s.request.cells = {{CpuSet{0, 1, 2, 3}, {}, 8192}, {CpuSet{4, 5, 6, 7}, {}, 8192}};
  s.placement.cells = {Cell(0, 0, Pins(0, {1, 17, 2, 18}), 8192, 2048),
                       Cell(1, 1, Pins(4, {9, 25, 10, 26}), 8192, 2048)};
  s.placement.devices = {Gpu("0000:1b:00.0", 0, 0), Gpu("0000:41:00.0", 1, 1)};
  DomainOptions options;
  options.managed_hostdevs = false;
  const std::string xml = Render(s, options);

  EXPECT_THAT(xml, HasSubstr("<accel:host name='compute-1'/>"));  // placement.host unset
  EXPECT_THAT(xml, HasSubstr("<emulatorpin cpuset='1-2,9-10,17-18,25-26'/>"));
  EXPECT_THAT(xml, HasSubstr("<memory mode='strict' nodeset='0-1'/>"));
  EXPECT_THAT(xml, HasSubstr("<memnode cellid='1' mode='strict' nodeset='1'/>"));
  EXPECT_THAT(xml, HasSubstr("<page size='2048' unit='KiB' nodeset='0'/>"));
  EXPECT_THAT(xml, HasSubstr("<page size='2048' unit='KiB' nodeset='1'/>"));
  EXPECT_THAT(xml, HasSubstr("<cell id='1' cpus='4-7' memory='8388608' unit='KiB' "
                             "memAccess='shared'/>"));
  EXPECT_THAT(xml, HasSubstr("<topology sockets='2' dies='1' cores='4' threads='1'/>"));
  // One expander per guest cell; bus numbers from the top, as libvirt hands them out.
  EXPECT_THAT(xml, HasSubstr("<target busNr='254'>\n        <node>0</node>"));
  EXPECT_THAT(xml, HasSubstr("<target busNr='252'>\n        <node>1</node>"));
  EXPECT_THAT(xml, HasSubstr("<controller type='pci' index='3' model='pcie-expander-bus'>"));
  EXPECT_THAT(xml, HasSubstr("<controller type='pci' index='4' model='pcie-root-port'>\n"
                             "      <address type='pci' domain='0x0000' bus='0x03' slot='0x00'"));
  EXPECT_THAT(xml, HasSubstr("<hostdev mode='subsystem' type='pci' managed='no'>"));
  EXPECT_THAT(xml, HasSubstr("<address domain='0x0000' bus='0x1b' slot='0x00' function='0x0'/>\n"
                             "      </source>\n"
                             "      <address type='pci' domain='0x0000' bus='0x02'"));
  EXPECT_THAT(xml, HasSubstr("<address domain='0x0000' bus='0x41' slot='0x00' function='0x0'/>\n"
                             "      </source>\n"
                             "      <address type='pci' domain='0x0000' bus='0x04'"));
  REQUIRE_LIBVIRT_TOOLS();
  ExpectLibvirtAccepts(s, options);
}

TEST(LibvirtDomain, IsolateThreadsTwoLocalGpusAndARemoteOne) {
  // Thread policy isolate: each vCPU on one thread of a whole core; the siblings are consumed
  // (kept free) but not pinned, so they show up nowhere in the XML.
  Scenario s{NovaDemoHost(2), Request("iso", 4, 4096, CpuPolicy::kDedicated), {}};
  s.request.thread_policy = ThreadPolicy::kIsolate;
  s.request.cells = {{CpuSet{0, 1, 2, 3}, {}, 4096}};
  CellPlacement c = Cell(0, 1, Pins(0, {9, 10, 11, 12}), 4096, 4);
  c.consumed_cpus = CpuSet{9, 10, 11, 12, 25, 26, 27, 28};
  s.placement.cells = {c};
  s.placement.devices = {Gpu("0000:41:00.0", 1, 0), Gpu("0000:42:00.0", 1, 0),
                         Gpu("0000:1b:00.0", 0, -1)};
  const std::string xml = Render(s, {});

  EXPECT_THAT(xml, HasSubstr("<emulatorpin cpuset='9-12'/>"));
  EXPECT_THAT(xml, HasSubstr("<vcpupin vcpu='2' cpuset='11'/>"));
  EXPECT_THAT(xml, Not(HasSubstr("memoryBacking")));  // base pages
  EXPECT_THAT(xml, HasSubstr("<cell id='0' cpus='0-3' memory='4194304' unit='KiB'/>"));
  // One expander with two root ports (slots 0 and 1), bus numbers 253..255.
  EXPECT_THAT(xml, HasSubstr("<target busNr='253'>"));
  EXPECT_THAT(xml, HasSubstr("<controller type='pci' index='3' model='pcie-root-port'>\n"
                             "      <address type='pci' domain='0x0000' bus='0x01' slot='0x01'"));
  // The remote GPU gets no guest address: libvirt plugs it in, as Nova's would be.
  EXPECT_THAT(xml, HasSubstr("<address domain='0x0000' bus='0x1b' slot='0x00' function='0x0'/>\n"
                             "      </source>\n"
                             "    </hostdev>"));
  REQUIRE_LIBVIRT_TOOLS();
  ExpectLibvirtAccepts(s, {});
}

TEST(LibvirtDomain, MixedSharedVcpusFloatOverTheirNodesSharedSet) {
  Scenario s{NovaDemoHost(2), Request("mix", 6, 4096, CpuPolicy::kMixed), {}};
  s.request.cells = {{CpuSet{2, 3, 4, 5}, CpuSet{0, 1}, 4096}};
  CellPlacement c = Cell(0, 1, Pins(2, {9, 25, 10, 26}), 4096, 4);
  c.shared_vcpus = CpuSet{0, 1};
  c.shared_cpus = CpuSet{8, 24};
  s.placement.cells = {c};
  const std::string xml = Render(s, {});
  EXPECT_THAT(xml, HasSubstr("<vcpupin vcpu='0' cpuset='8,24'/>"));
  EXPECT_THAT(xml, HasSubstr("<vcpupin vcpu='1' cpuset='8,24'/>"));
  EXPECT_THAT(xml, HasSubstr("<vcpupin vcpu='2' cpuset='9'/>"));
  EXPECT_THAT(xml, HasSubstr("<emulatorpin cpuset='8-10,24-26'/>"));
  EXPECT_THAT(xml, HasSubstr("<cell id='0' cpus='0-5' memory='4194304' unit='KiB'/>"));
  EXPECT_THAT(xml, HasSubstr("<topology sockets='6' dies='1' cores='1' threads='1'/>"));

  // With [compute]cpu_shared_set, Nova runs emulator threads of a "share" guest on that set.
  DomainOptions with_shared;
  with_shared.cpu_shared_set = CpuSet{0, 8, 16, 24, 200};  // 200: not on this host
  const std::string xml2 = Render(s, with_shared);
  EXPECT_THAT(xml2, HasSubstr("<emulatorpin cpuset='0,8,16,24'/>"));
  EXPECT_THAT(xml2, HasSubstr("<vcpu placement='static'>6</vcpu>"));  // NUMA guest: no cpuset
  REQUIRE_LIBVIRT_TOOLS();
  ExpectLibvirtAccepts(s, {});
  ExpectLibvirtAccepts(s, with_shared);
}

TEST(LibvirtDomain, SharedFloatingGuestWithoutNumaTopology) {
  Scenario s{NovaDemoHost(2), Request("m1.small", 2, 2048, CpuPolicy::kShared), {}};
  s.placement.host = "compute-0";
  s.placement.floating_vcpus = 2;
  s.placement.floating_memory_mib = 2048;
  s.placement.devices = {Gpu("0000:41:00.0", 1, -1)};
  DomainOptions options;
  options.cpu_shared_set = CpuSet{0, 8, 16, 24};
  options.disk_image = "/images/cirros.img";
  const std::string xml = Render(s, options);
  EXPECT_THAT(xml, HasSubstr("<vcpu placement='static' cpuset='0,8,16,24'>2</vcpu>"));
  EXPECT_THAT(xml, HasSubstr("<memory unit='KiB'>2097152</memory>"));
  EXPECT_THAT(xml, HasSubstr("<topology sockets='2' dies='1' cores='1' threads='1'/>"));
  EXPECT_THAT(xml, Not(HasSubstr("<cputune>")));
  EXPECT_THAT(xml, Not(HasSubstr("<numatune>")));
  EXPECT_THAT(xml, Not(HasSubstr("<numa>")));
  EXPECT_THAT(xml, Not(HasSubstr("<controller")));  // no guest NUMA node to report
  EXPECT_THAT(xml, HasSubstr("<driver name='qemu' type='raw'/>"));

  // Without a shared set Nova lets the guest float over the whole host: no cpuset.
  const std::string plain = Render(s, {});
  EXPECT_THAT(plain, HasSubstr("<vcpu placement='static'>2</vcpu>"));
  REQUIRE_LIBVIRT_TOOLS();
  ExpectLibvirtAccepts(s, options);
  ExpectLibvirtAccepts(s, {});
}

TEST(LibvirtDomain, OptionsShapeTheDomain) {
  Scenario s = NovaDemoDedicated();
  DomainOptions options;
  options.name = "instance-0000002a";
  options.domain_type = "qemu";
  options.machine = "pc-q35-7.2";
  options.emulator = "/usr/libexec/qemu-kvm";
  options.libvirt_major = 7;
  const std::string xml = Render(s, options);
  EXPECT_THAT(xml, HasSubstr("<domain type='qemu'>\n  <name>instance-0000002a</name>\n"));
  EXPECT_THAT(xml, HasSubstr("<type arch='x86_64' machine='pc-q35-7.2'>hvm</type>"));
  EXPECT_THAT(xml, HasSubstr("<emulator>/usr/libexec/qemu-kvm</emulator>"));
  EXPECT_THAT(xml, HasSubstr("<topology sockets='4' cores='1' threads='1'/>"));
  EXPECT_THAT(xml, HasSubstr("model='pcie-expander-bus'"));

  // i440fx has no PCIe root complex: no pxb-pcie, the Nova layout.
  options.machine = "pc";
  const std::string pc = Render(s, options);
  EXPECT_THAT(pc, Not(HasSubstr("<controller")));
  REQUIRE_LIBVIRT_TOOLS();
  ExpectLibvirtAccepts(s, options);
}

TEST(LibvirtDomain, OddFlavorNamesAreEscapedAndStillDefine) {
  Scenario s = NovaDemoDedicated();
  const std::string odd = "gpu&co <big> 'x' \"y\"/z";
  s.request.flavor = odd;
  s.request.extra_specs = {{"note", "a<b & \"c\"\x01"}};
  const std::string xml = Render(s, {});
  // '/' is not allowed in libvirt names; it becomes '_' in the derived name only.
  EXPECT_THAT(xml, HasSubstr("<name>gpu&amp;co &lt;big&gt; 'x' \"y\"_z</name>"));
  EXPECT_THAT(xml, HasSubstr("<accel:flavor name='gpu&amp;co &lt;big&gt; &apos;x&apos; "
                             "&quot;y&quot;/z'"));
  EXPECT_THAT(xml, HasSubstr("<accel:extraSpec key='note'>a&lt;b &amp; \"c\"\xEF\xBF\xBD"
                             "</accel:extraSpec>"));
  REQUIRE_LIBVIRT_TOOLS();
  const std::string out = ExpectLibvirtAccepts(s, {});
  EXPECT_THAT(out, HasSubstr("Domain 'gpu&co <big> 'x' \"y\"_z' defined"));
}

TEST(LibvirtDomain, EightCellsWithEightGpusEach) {
  // The largest layout accel meets (an 8-node host, one guest cell per node, 8 GPUs each):
  // 8 expanders, 64 root ports, bus numbers 184-255.
  Scenario s{NovaDemoHost(8), Request("big", 64, 65536, CpuPolicy::kDedicated), {}};
  for (int cell = 0; cell < 8; ++cell) {
    std::map<int, int> pins;
    for (int c = 0; c < 8; ++c) pins[cell * 8 + c] = cell * 8 + c;
    s.placement.cells.push_back(Cell(cell, cell, pins, 8192, 1048576));
    for (int gpu = 0; gpu < 8; ++gpu) {
      char address[16];
      std::snprintf(address, sizeof address, "0000:%02x:00.0", 0x10 * cell + gpu + 1);
      s.placement.devices.push_back(Gpu(address, cell, cell));
    }
  }
  const std::string xml = Render(s, {});
  EXPECT_THAT(xml, HasSubstr("<target busNr='184'>\n        <node>7</node>"));
  EXPECT_THAT(xml, HasSubstr("<controller type='pci' index='72' model='pcie-root-port'>"));
  EXPECT_THAT(xml, HasSubstr("<memory mode='strict' nodeset='0-7'/>"));
  REQUIRE_LIBVIRT_TOOLS();
  ExpectLibvirtAccepts(s, {});
}

TEST(LibvirtDomain, GuestPciCheckCatchesBadAddressing) {
  // The check above is what vouches for guest PCI addressing; make sure it can fail.
  Scenario s = NovaDemoDedicated();
  s.placement.devices.push_back(Gpu("0000:42:00.0", 1, 0));
  std::string xml = Render(s, {});
  const std::string second_port = "bus='0x03' slot='0x00'";
  ASSERT_NE(xml.find(second_port), std::string::npos) << xml;
  std::string clash = xml;
  clash.replace(clash.find(second_port), second_port.size(), "bus='0x02' slot='0x00'");
  EXPECT_NONFATAL_FAILURE(ExpectValidGuestPci(clash, 1), "two devices at bus 2");
  EXPECT_NONFATAL_FAILURE(ExpectValidGuestPci(xml, 0), "numa_node");  // guest has no cell 0
}

// ---------------------------------------------------------------------------------------------
// Inconsistent input.

TEST(LibvirtDomain, RejectsPlacementsThatDoNotMatchTheRequest) {
  auto render = [](const Scenario& s, const DomainOptions& o = {}) {
    return Render(s, o);
  };
  {
    Scenario s = NovaDemoDedicated();
    s.placement.cells[0].pinning.erase(3);  // vCPU 3 nowhere
    EXPECT_THROW(render(s), InputError);
  }
  {
    Scenario s = NovaDemoDedicated();
    s.placement.cells[0].pinning[-1] = 11;  // a vCPU the guest cannot have
    EXPECT_THROW(render(s), InputError);
  }
  {
    Scenario s = NovaDemoDedicated();
    s.request.vcpus = 1 << 30;
    EXPECT_THROW(render(s), InputError);
  }
  {
    Scenario s = NovaDemoDedicated();
    s.placement.cells[0].memory_mib = 4096;  // cells != flavor memory
    EXPECT_THROW(render(s), InputError);
  }
  {
    Scenario s = NovaDemoDedicated();
    s.placement.cells[0].guest_cell = 1;  // ids must be 0..k-1
    EXPECT_THROW(render(s), InputError);
  }
  {
    Scenario s = NovaDemoDedicated();
    s.placement.cells[0].host_node = 7;  // not a node of the host
    EXPECT_THROW(render(s), InputError);
  }
  {
    Scenario s = NovaDemoDedicated();
    s.request.emulator_policy = EmulatorPolicy::kIsolate;  // but no emulator CPU placed
    EXPECT_THROW(render(s), InputError);
  }
  {
    Scenario s = NovaDemoDedicated();
    s.placement.devices[0].guest_cell = 3;
    EXPECT_THROW(render(s), InputError);
  }
  for (const char* bad : {"41:00.0", "0000:41:00", "0000:41:20.0", "0000:41:00.8", "zz"}) {
    Scenario s = NovaDemoDedicated();
    s.placement.devices[0].address = bad;
    EXPECT_THROW(render(s), InputError) << bad;
  }
  {
    Scenario s = NovaDemoDedicated();
    s.placement.cells.clear();  // the flavor has a NUMA topology
    EXPECT_THROW(render(s), InputError);
  }
  {
    Scenario s = NovaDemoDedicated();
    s.placement.cells[0].shared_vcpus = CpuSet{3};  // pinned and shared
    EXPECT_THROW(render(s), InputError);
  }
  DomainOptions bad_uuid;
  bad_uuid.uuid = "not-a-uuid";
  EXPECT_THROW(render(NovaDemoDedicated(), bad_uuid), InputError);
  DomainOptions bad_name;
  bad_name.name = "a/b";
  EXPECT_THROW(render(NovaDemoDedicated(), bad_name), InputError);
  DomainOptions off_host;
  off_host.cpu_shared_set = CpuSet{500};
  EXPECT_THROW(render(NovaDemoDedicated(), off_host), InputError);
}

TEST(LibvirtDomain, InputErrorNamesTheField) {
  Scenario s = NovaDemoDedicated();
  s.placement.devices[0].address = "0000:41:00";
  try {
    Render(s, {});
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "placement");
    EXPECT_EQ(e.field(), "devices[0].address");
    EXPECT_THAT(e.hint(), HasSubstr("dddd:bb:dd.f"));
  }
}

}  // namespace
}  // namespace accel::placement
