// ReadLibvirtDomain against accel's own libvirt output (the captured example and random
// placements rendered by the placement layer, checked against its LayoutGuestPci) and against
// plain libvirt layouts; WriteNcclTopologyXml on the HGX H100 fixture, read back with libxml2.
#include "fabric/guest_topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "common/error.h"
#include "placement/libvirt_domain.h"
#include "placement/libvirt_pci_layout.h"
#include "support/shared_fixture.h"
#include "topology/sources.h"

namespace accel::fabric {
namespace guest_topology_test {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Src(const std::string& rel) { return std::string(ACCEL_SOURCE_DIR) + "/" + rel; }

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int Validate(const std::string& xml, std::string* output) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("accel-guest-topo-" + std::to_string(getpid()) + ".xml"))
                               .string();
  std::ofstream(path) << xml;
  FILE* pipe = popen(("virt-xml-validate '" + path + "' domain 2>&1").c_str(), "r");
  std::array<char, 512> buf;
  size_t n;
  while (pipe && (n = fread(buf.data(), 1, buf.size(), pipe)) > 0) output->append(buf.data(), n);
  const int status = pipe ? pclose(pipe) : -1;
  std::remove(path.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Message of the InputError `f` throws, or "" when it throws none.
template <typename F>
std::string ErrorOf(F f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::map<std::string, GuestDevice> ByHost(const GuestDeviceMap& map) {
  std::map<std::string, GuestDevice> out;
  for (const GuestDevice& d : map.devices) out[d.host_address] = d;
  return out;
}

// ---------------------------------------------------------------------------------------------
// accel's own output: examples/fabric/hgx-8gpu.libvirt.xml is `accel place -o libvirt` of the
// 8 GPU + 8 NIC flavor on fixtures/hosts/hgx-h100.json.

const char* kExample = "examples/fabric/hgx-8gpu.libvirt.xml";

TEST(ReadLibvirtDomain, AccelExampleResolvesExpanderBuses) {
  const GuestDeviceMap map = ReadLibvirtDomain(ReadText(Src(kExample)), kExample);
  EXPECT_EQ(map.domain, "hgx-8gpu");
  EXPECT_EQ(map.guest_cells, 2);
  EXPECT_EQ(map.vcpus, 64);
  EXPECT_EQ(map.arch, "x86_64");
  EXPECT_THAT(map.cell_host_node, ElementsAre(0, 1));
  ASSERT_EQ(map.cell_cpus.size(), 2u);
  EXPECT_EQ(map.cell_cpus[0].ToString(), "0-31");
  EXPECT_EQ(map.cell_cpus[1].ToString(), "32-63");
  EXPECT_TRUE(map.notes.empty()) << map.notes.front();
  ASSERT_EQ(map.devices.size(), 16u);
  // Cell 0's expander has busNr 247 and root ports at slots 0..7: buses 248..255, in the
  // order of the devices (GPUs first, then NICs); cell 1's has busNr 238.
  const std::map<std::string, std::pair<std::string, int>> want = {
      {"0000:1b:00.0", {"0000:f8:00.0", 0}}, {"0000:43:00.0", {"0000:f9:00.0", 0}},
      {"0000:52:00.0", {"0000:fa:00.0", 0}}, {"0000:61:00.0", {"0000:fb:00.0", 0}},
      {"0000:18:00.0", {"0000:fc:00.0", 0}}, {"0000:40:00.0", {"0000:fd:00.0", 0}},
      {"0000:4f:00.0", {"0000:fe:00.0", 0}}, {"0000:5e:00.0", {"0000:ff:00.0", 0}},
      {"0000:9d:00.0", {"0000:ef:00.0", 1}}, {"0000:c3:00.0", {"0000:f0:00.0", 1}},
      {"0000:d1:00.0", {"0000:f1:00.0", 1}}, {"0000:df:00.0", {"0000:f2:00.0", 1}},
      {"0000:9a:00.0", {"0000:f3:00.0", 1}}, {"0000:c0:00.0", {"0000:f4:00.0", 1}},
      {"0000:ce:00.0", {"0000:f5:00.0", 1}}, {"0000:dc:00.0", {"0000:f6:00.0", 1}}};
  for (const GuestDevice& d : map.devices) {
    SCOPED_TRACE(d.host_address);
    ASSERT_TRUE(want.count(d.host_address));
    EXPECT_EQ(d.guest_address, want.at(d.host_address).first);
    EXPECT_EQ(d.guest_cell, want.at(d.host_address).second);
  }
}

TEST(ReadLibvirtDomain, AccelExamplePassesLibvirtSchema) {
  ACCEL_REQUIRE_TOOL("/usr/bin/virt-xml-validate", "libvirt-clients");
  std::string out;
  EXPECT_EQ(Validate(ReadText(Src(kExample)), &out), 0) << out;
}

// Random placements rendered by the placement layer: the firmware numbering over the XML must
// agree with the layout the writer chose (expander busNr B, root port at slot k -> B+1+k).
topology::HostTopology TwoByTwoHost(int nodes) {
  topology::HostTopology host;
  host.hostname = "h";
  for (int n = 0; n < nodes; ++n) {
    topology::NumaNode node;
    node.id = n;
    node.package = n;
    for (int c = 0; c < 8; ++c) {
      node.cpus.Add(n * 8 + c);
      node.cores.push_back(CpuSet{n * 8 + c});
    }
    node.memory_kib = 64ull << 20;
    host.numa_nodes.push_back(node);
  }
  return host;
}

TEST(ReadLibvirtDomainProperty, AgreesWithPlacementLayoutOnRandomPlacements) {
  std::mt19937 rng(42);
  for (int iter = 0; iter < 300; ++iter) {
    SCOPED_TRACE(iter);
    const int cells = std::uniform_int_distribution<int>(1, 4)(rng);
    const topology::HostTopology host = TwoByTwoHost(cells);
    placement::PlacementRequest request;
    request.flavor = "f" + std::to_string(iter);
    request.vcpus = 2 * cells;
    request.memory_mib = 1024ull * cells;
    request.cpu_policy = placement::CpuPolicy::kDedicated;
    placement::Placement placement;
    for (int c = 0; c < cells; ++c) {
      placement::CellPlacement cell;
      cell.guest_cell = c;
      cell.host_node = c;
      cell.pinning = {{2 * c, 8 * c}, {2 * c + 1, 8 * c + 1}};
      cell.memory_mib = 1024;
      cell.page_size_kib = 4;
      placement.cells.push_back(cell);
    }
    const int devices = std::uniform_int_distribution<int>(0, 20)(rng);
    std::set<std::string> used;
    for (int d = 0; d < devices; ++d) {
      placement::DevicePlacement dev;
      char addr[32];
      do {
        std::snprintf(addr, sizeof addr, "0000:%02x:%02x.%d", static_cast<int>(rng() % 256),
                      static_cast<int>(rng() % 32), static_cast<int>(rng() % 8));
      } while (!used.insert(addr).second);
      dev.address = addr;
      dev.guest_cell = std::uniform_int_distribution<int>(-1, cells - 1)(rng);
      placement.devices.push_back(dev);
    }
    const std::string xml = placement::RenderDomainXml(host, request, placement, {});
    const placement::GuestPciLayout layout = placement::LayoutGuestPci(placement);
    std::map<int, std::pair<int, int>> port_bus;  // root port index -> (guest bus, cell)
    for (const placement::ExpanderBus& e : layout.expanders)
      for (size_t k = 0; k < e.root_port_indexes.size(); ++k)
        port_bus[e.root_port_indexes[k]] = {e.bus_nr + 1 + static_cast<int>(k), e.guest_cell};

    const GuestDeviceMap map = ReadLibvirtDomain(xml, "random.xml");
    ASSERT_EQ(map.devices.size(), placement.devices.size());
    int unresolved = 0;
    for (size_t i = 0; i < map.devices.size(); ++i) {
      const GuestDevice& got = map.devices[i];
      ASSERT_EQ(got.host_address, placement.devices[i].address);
      const int port = layout.device_bus[i];
      if (port < 0) {
        ASSERT_EQ(got.guest_address, "");
        ASSERT_EQ(got.guest_cell, -1);
        ++unresolved;
        continue;
      }
      char want[32];
      std::snprintf(want, sizeof want, "0000:%02x:00.0", port_bus.at(port).first);
      ASSERT_EQ(got.guest_address, want);
      ASSERT_EQ(got.guest_cell, port_bus.at(port).second);
    }
    ASSERT_EQ(map.notes.size(), static_cast<size_t>(unresolved));
  }
}

// ---------------------------------------------------------------------------------------------
// Plain libvirt layouts.

// Root ports added out of slot order, a PCIe-to-PCI bridge behind one of them, a hostdev
// without a guest address and an SR-IOV VF given as <interface type='hostdev'>.
const char* kPlainDomain = R"(<domain type='kvm'>
  <name>plain</name>
  <memory unit='KiB'>4194304</memory>
  <vcpu placement='static'>4</vcpu>
  <os>
    <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>
  </os>
  <devices>
    <controller type='pci' index='0' model='pcie-root'/>
    <controller type='pci' index='1' model='pcie-root-port'>
      <address type='pci' domain='0x0000' bus='0x00' slot='0x03' function='0x0'/>
    </controller>
    <controller type='pci' index='2' model='pcie-root-port'>
      <address type='pci' domain='0x0000' bus='0x00' slot='0x02' function='0x0' multifunction='on'/>
    </controller>
    <controller type='pci' index='3' model='pcie-to-pci-bridge'>
      <address type='pci' domain='0x0000' bus='0x02' slot='0x00' function='0x0'/>
    </controller>
    <controller type='pci' index='4' model='pcie-root-port'>
      <address type='pci' domain='0x0000' bus='0x00' slot='0x02' function='0x1'/>
    </controller>
    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source>
        <address domain='0x0000' bus='0x1b' slot='0x00' function='0x0'/>
      </source>
      <address type='pci' domain='0x0000' bus='0x01' slot='0x00' function='0x0'/>
    </hostdev>
    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source>
        <address domain='0x0000' bus='0x43' slot='0x00' function='0x0'/>
      </source>
      <address type='pci' domain='0x0000' bus='0x04' slot='0x00' function='0x0'/>
    </hostdev>
    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source>
        <address domain='0x0000' bus='0x52' slot='0x00' function='0x0'/>
      </source>
      <address type='pci' domain='0x0000' bus='0x03' slot='0x01' function='0x0'/>
    </hostdev>
    <hostdev mode='subsystem' type='pci' managed='yes'>
      <source>
        <address domain='0x0000' bus='0x61' slot='0x00' function='0x0'/>
      </source>
    </hostdev>
    <interface type='hostdev' managed='yes'>
      <source>
        <address type='pci' domain='0x0000' bus='0x18' slot='0x00' function='0x2'/>
      </source>
      <address type='pci' domain='0x0000' bus='0x00' slot='0x05' function='0x0'/>
    </interface>
  </devices>
</domain>
)";

TEST(ReadLibvirtDomain, PlainRootPortsNumberedByFirmwareNotByIndex) {
  const GuestDeviceMap map = ReadLibvirtDomain(kPlainDomain, "plain.xml");
  EXPECT_EQ(map.guest_cells, 0);
  EXPECT_EQ(map.vcpus, 4);
  const auto by = ByHost(map);
  ASSERT_EQ(by.size(), 5u);
  // Bus 0 bridges in slot order: index 2 (02.0) -> 1, its bridge index 3 -> 2, index 4
  // (02.1) -> 3, index 1 (03.0) -> 4. Controller index 1 is NOT guest bus 1.
  EXPECT_EQ(by.at("0000:1b:00.0").guest_address, "0000:04:00.0");
  EXPECT_EQ(by.at("0000:43:00.0").guest_address, "0000:03:00.0");
  EXPECT_EQ(by.at("0000:52:00.0").guest_address, "0000:02:01.0");
  EXPECT_EQ(by.at("0000:61:00.0").guest_address, "");
  EXPECT_EQ(by.at("0000:18:00.2").guest_address, "0000:00:05.0");
  for (const auto& [addr, d] : by) EXPECT_EQ(d.guest_cell, -1) << addr;
  ASSERT_EQ(map.notes.size(), 1u);
  EXPECT_THAT(map.notes[0], HasSubstr("hostdev 0000:61:00.0"));
  EXPECT_THAT(map.notes[0], HasSubstr("--guest-map"));
}

TEST(ReadLibvirtDomain, PlainDomainPassesLibvirtSchema) {
  ACCEL_REQUIRE_TOOL("/usr/bin/virt-xml-validate", "libvirt-clients");
  std::string out;
  EXPECT_EQ(Validate(kPlainDomain, &out), 0) << out;
}

TEST(ReadLibvirtDomain, UnknownControllerAndExpanderWithoutBusNrGiveNotes) {
  const std::string xml = R"(<domain type='kvm'><name>x</name><devices>
    <controller type='pci' index='1' model='pcie-expander-bus'>
      <target><node>0</node></target>
      <address type='pci' domain='0x0000' bus='0x00' slot='0x10' function='0x0'/>
    </controller>
    <controller type='pci' index='2' model='pcie-root-port'>
      <address type='pci' domain='0x0000' bus='0x01' slot='0x00' function='0x0'/>
    </controller>
    <hostdev mode='subsystem' type='pci'><source><address domain='0' bus='0x1b' slot='0' function='0'/></source>
      <address type='pci' domain='0x0000' bus='0x02' slot='0x00' function='0x0'/></hostdev>
    <hostdev mode='subsystem' type='pci'><source><address domain='0' bus='0x43' slot='0' function='0'/></source>
      <address type='pci' domain='0x0000' bus='0x09' slot='0x00' function='0x0'/></hostdev>
    <hostdev mode='subsystem' type='usb'><source><vendor id='0x1234'/><product id='0xbeef'/></source></hostdev>
  </devices></domain>)";
  const GuestDeviceMap map = ReadLibvirtDomain(xml, "x.xml");
  ASSERT_EQ(map.devices.size(), 2u);  // the USB hostdev is not a PCI device
  EXPECT_EQ(map.devices[0].guest_address, "");
  EXPECT_EQ(map.devices[1].guest_address, "");
  ASSERT_EQ(map.notes.size(), 2u);
  EXPECT_THAT(map.notes[0], HasSubstr("unknown"));
  EXPECT_THAT(map.notes[1], HasSubstr("names no PCI controller"));
}

// ---------------------------------------------------------------------------------------------
// Refused input.

TEST(ReadLibvirtDomain, MalformedXmlNamesTheLine) {
  const std::string msg = ErrorOf(
      [] { ReadLibvirtDomain("<domain>\n  <name>x</name>\n  <devices>\n</domain>\n", "bad.xml"); });
  EXPECT_THAT(msg, HasSubstr("bad.xml:"));
  EXPECT_THAT(msg, HasSubstr("malformed XML"));
  EXPECT_THAT(ErrorOf([] { ReadLibvirtDomain("", "empty.xml"); }), HasSubstr("empty.xml"));
  EXPECT_THAT(ErrorOf([] { ReadLibvirtDomain("\xff\xfe<domain/>", "enc.xml"); }),
              HasSubstr("enc.xml"));
}

TEST(ReadLibvirtDomain, HostdevWithoutSourceAddressIsRefused) {
  const std::string msg = ErrorOf([] {
    ReadLibvirtDomain(
        "<domain>\n<devices>\n<hostdev mode='subsystem' type='pci'>\n"
        "<source/>\n</hostdev>\n</devices>\n</domain>\n",
        "nosrc.xml");
  });
  EXPECT_THAT(msg, HasSubstr("nosrc.xml:3"));
  EXPECT_THAT(msg, HasSubstr("hostdev/source/address"));
  EXPECT_THAT(msg, HasSubstr("no host PCI address"));
}

TEST(ReadLibvirtDomain, BadNumbersAndRootAndDoctypeAreRefused) {
  EXPECT_THAT(ErrorOf([] {
                ReadLibvirtDomain(
                    "<domain><devices><hostdev mode='subsystem' type='pci'><source>"
                    "<address domain='0' bus='0x1ff' slot='0' function='0'/>"
                    "</source></hostdev></devices></domain>",
                    "n.xml");
              }),
              HasSubstr("'0x1ff' is not a number in 0..255"));
  EXPECT_THAT(ErrorOf([] {
                ReadLibvirtDomain(
                    "<domain><devices><hostdev mode='subsystem' type='pci'><source>"
                    "<address domain='0' bus='-1' slot='0' function='0'/>"
                    "</source></hostdev></devices></domain>",
                    "n.xml");
              }),
              HasSubstr("'-1' is not a number"));
  EXPECT_THAT(ErrorOf([] { ReadLibvirtDomain("<network><name>x</name></network>", "net.xml"); }),
              HasSubstr("not <domain>"));
  const std::string laughs =
      "<?xml version='1.0'?>\n<!DOCTYPE domain [<!ENTITY a 'aaaaaaaaaa'>"
      "<!ENTITY b '&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;'>]>\n<domain><name>&b;</name></domain>\n";
  EXPECT_THAT(ErrorOf([&] { ReadLibvirtDomain(laughs, "dtd.xml"); }), HasSubstr("DOCTYPE"));
  const std::string external = "<!DOCTYPE domain SYSTEM 'http://example.com/x.dtd'><domain/>";
  EXPECT_THAT(ErrorOf([&] { ReadLibvirtDomain(external, "ext.xml"); }), HasSubstr("DOCTYPE"));
  const std::string big(kMaxDomainXmlBytes + 1, ' ');
  EXPECT_THAT(ErrorOf([&] { ReadLibvirtDomain(big, "big.xml"); }), HasSubstr("at most"));
  EXPECT_THAT(ErrorOf([] {
                ReadLibvirtDomain(
                    "<domain><cpu><numa><cell id='3' cpus='0'/></numa></cpu></domain>", "cell.xml");
              }),
              HasSubstr("cell id 3"));
}

// ---------------------------------------------------------------------------------------------
// WriteNcclTopologyXml.

topology::HostTopology HgxHost() {
  return topology::LoadTopology(Src("fixtures/hosts/hgx-h100.json"));
}

// Hand-built pairing of the fixture (no pairing code): GPU i with the NIC behind its switch.
Fabric HgxFabric() {
  const char* gpus[] = {"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
                        "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"};
  const char* nics[] = {"0000:18:00.0", "0000:40:00.0", "0000:4f:00.0", "0000:5e:00.0",
                        "0000:9a:00.0", "0000:c0:00.0", "0000:ce:00.0", "0000:dc:00.0"};
  const char* rdma[] = {"mlx5_0", "mlx5_3", "mlx5_4",  "mlx5_5",
                        "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"};
  Fabric f;
  for (int i = 0; i < 8; ++i) {
    FabricNic n;
    n.pci_address = nics[i];
    n.rdma_device = rdma[i];
    n.numa_node = i < 4 ? 0 : 1;
    n.link_layer = "InfiniBand";
    f.nics.push_back(n);
    GpuNicPair p;
    p.gpu_address = gpus[i];
    p.gpu_index = i;
    p.numa_node = n.numa_node;
    p.nic = i;
    p.path.type = PathType::kPix;
    f.gpus.push_back(gpus[i]);
    f.pairs.push_back(p);
  }
  return f;
}

// The NCCL XML as a tree of (name, attributes, children), read with libxml2.
struct Elem {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<Elem> children;
};

Elem ToElem(const xmlNode* node) {
  Elem e;
  e.name = reinterpret_cast<const char*>(node->name);
  for (const xmlAttr* a = node->properties; a; a = a->next) {
    xmlChar* v = xmlNodeListGetString(node->doc, a->children, 1);
    e.attrs[reinterpret_cast<const char*>(a->name)] = v ? reinterpret_cast<const char*>(v) : "";
    xmlFree(v);
  }
  for (const xmlNode* c = node->children; c; c = c->next)
    if (c->type == XML_ELEMENT_NODE) e.children.push_back(ToElem(c));
  return e;
}

Elem ParseNcclXml(const std::string& text) {
  xmlDoc* doc = xmlReadMemory(text.data(), static_cast<int>(text.size()), "nccl.xml", nullptr,
                              XML_PARSE_NONET);
  EXPECT_NE(doc, nullptr) << text;
  if (!doc) return {};
  Elem root = ToElem(xmlDocGetRootElement(doc));
  xmlFreeDoc(doc);
  return root;
}

TEST(WriteNcclTopologyXml, HgxGuestGetsOneSwitchPerGpuNicPair) {
  const GuestDeviceMap map = ReadLibvirtDomain(ReadText(Src(kExample)), kExample);
  std::vector<std::string> warnings;
  const std::string text = WriteNcclTopologyXml(HgxHost(), HgxFabric(), map, {}, &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  const Elem system = ParseNcclXml(text);
  EXPECT_EQ(system.name, "system");
  EXPECT_EQ(system.attrs.at("version"), "1");
  ASSERT_EQ(system.children.size(), 2u);
  const char* affinity[] = {"00000000,ffffffff", "ffffffff,00000000"};
  const char* gpu_bus[2][4] = {{"f8", "f9", "fa", "fb"}, {"ef", "f0", "f1", "f2"}};
  const char* nic_bus[2][4] = {{"fc", "fd", "fe", "ff"}, {"f3", "f4", "f5", "f6"}};
  int switch_no = 1;
  for (int cell = 0; cell < 2; ++cell) {
    const Elem& cpu = system.children[cell];
    EXPECT_EQ(cpu.name, "cpu");
    EXPECT_EQ(cpu.attrs.at("numaid"), std::to_string(cell));
    EXPECT_EQ(cpu.attrs.at("affinity"), affinity[cell]);
    EXPECT_EQ(cpu.attrs.at("arch"), "x86_64");
    EXPECT_EQ(cpu.attrs.at("vendor"), "GenuineIntel");
    EXPECT_EQ(cpu.attrs.count("familyid"), 0u) << "left to NCCL's CPUID read in the guest";
    ASSERT_EQ(cpu.children.size(), 4u);
    for (int i = 0; i < 4; ++i, ++switch_no) {
      const Elem& sw = cpu.children[i];
      char busid[32];
      std::snprintf(busid, sizeof busid, "ffff:ff:%02x.0", switch_no);
      EXPECT_EQ(sw.attrs.at("busid"), busid);
      EXPECT_EQ(sw.attrs.at("class"), "0x060400");
      EXPECT_EQ(sw.attrs.at("vendor"), "0x0000");
      EXPECT_EQ(sw.attrs.at("link_speed"), "32.0 GT/s PCIe");
      EXPECT_EQ(sw.attrs.at("link_width"), "16");
      ASSERT_EQ(sw.children.size(), 2u);
      EXPECT_EQ(sw.children[0].attrs.at("busid"),
                std::string("0000:") + gpu_bus[cell][i] + ":00.0");
      EXPECT_EQ(sw.children[0].attrs.at("class"), "0x030200");
      EXPECT_EQ(sw.children[1].attrs.at("busid"),
                std::string("0000:") + nic_bus[cell][i] + ":00.0");
      EXPECT_EQ(sw.children[1].attrs.at("class"), "0x020700");
      for (const Elem& leaf : sw.children) {
        EXPECT_EQ(leaf.attrs.at("link_speed"), "32.0 GT/s PCIe");
        EXPECT_EQ(leaf.attrs.at("link_width"), "16");
        EXPECT_TRUE(leaf.children.empty());
      }
    }
  }
  // Exactly the format NCCL reads: double-quoted attributes, no declaration or comments.
  EXPECT_EQ(text.rfind("<system version=\"1\">\n  <cpu numaid=\"0\" affinity=", 0), 0u);
  EXPECT_EQ(text.find("<!--"), std::string::npos);
}

TEST(WriteNcclTopologyXml, PairSplitAcrossGuestCellsWarns) {
  GuestDeviceMap map = ReadLibvirtDomain(ReadText(Src(kExample)), kExample);
  for (GuestDevice& d : map.devices)
    if (d.host_address == "0000:18:00.0") d.guest_cell = 1;  // mlx5_0 moved to cell 1
  std::vector<std::string> warnings;
  const Elem system =
      ParseNcclXml(WriteNcclTopologyXml(HgxHost(), HgxFabric(), map, {}, &warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("0000:1b:00.0 is in guest cell 0"));
  EXPECT_THAT(warnings[0], HasSubstr("0000:18:00.0 is in cell 1"));
  // The GPU's switch holds only the GPU; the NIC hangs directly off cell 1's CPU.
  EXPECT_EQ(system.children[0].children[0].children.size(), 1u);
  const Elem& cpu1 = system.children[1];
  ASSERT_EQ(cpu1.children.size(), 5u);
  EXPECT_EQ(cpu1.children[4].attrs.at("busid"), "0000:fc:00.0");
  EXPECT_EQ(cpu1.children[4].attrs.at("class"), "0x020700");
}

TEST(WriteNcclTopologyXml, GpuWithoutGuestAddressNeedsGuestMap) {
  GuestDeviceMap map = ReadLibvirtDomain(ReadText(Src(kExample)), kExample);
  map.devices[0].guest_address = "";  // GPU 1b
  std::vector<std::string> warnings;
  const std::string msg =
      ErrorOf([&] { WriteNcclTopologyXml(HgxHost(), HgxFabric(), map, {}, &warnings); });
  EXPECT_THAT(msg, HasSubstr("--domain"));
  EXPECT_THAT(msg, HasSubstr("--guest-map 0000:1b:00.0=GUEST_ADDRESS"));
  // A short-form override supplies it.
  const std::string text =
      WriteNcclTopologyXml(HgxHost(), HgxFabric(), map, {"1B:00.0=0000:07:00.0"}, &warnings);
  EXPECT_THAT(text, HasSubstr("<pci busid=\"0000:07:00.0\" class=\"0x030200\""));
}

TEST(WriteNcclTopologyXml, MalformedOverridesAreRefused) {
  const GuestDeviceMap map = ReadLibvirtDomain(ReadText(Src(kExample)), kExample);
  for (const char* bad : {"0000:1b:00.0", "0000:1b:00.0=", "=0000:07:00.0", "1b:00.0=zz:00.0",
                          "1b:00.9=07:00.0", "0x1b:00.0=07:00.0", "1b:20.0=07:00.0"}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(ErrorOf([&] { WriteNcclTopologyXml(HgxHost(), HgxFabric(), map, {bad}, nullptr); }),
                HasSubstr("--guest-map"));
  }
}

TEST(WriteNcclTopologyXml, FlatDomainUsesOverridesAndHostNodes) {
  // Nova's layout: no expander buses, so no guest cells from the PCI tree; the cells' memory
  // nodes still tell which host node each guest cell is.
  GuestDeviceMap map;
  map.guest_cells = 2;
  map.vcpus = 8;
  map.cell_cpus = {CpuSet{0, 1, 2, 3}, CpuSet{4, 5, 6, 7}};
  map.cell_host_node = {1, 0};  // guest cell 0 is host node 1
  map.devices = {{"0000:1b:00.0", "", -1},
                 {"0000:18:00.0", "", -1},
                 {"0000:9d:00.0", "", -1},
                 {"0000:9a:00.0", "", -1}};
  std::vector<std::string> warnings;
  const Elem system = ParseNcclXml(WriteNcclTopologyXml(
      HgxHost(), HgxFabric(), map,
      {"1b:00.0=00:05.0", "18:00.0=00:06.0", "9d:00.0=00:07.0", "9a:00.0=00:08.0"}, &warnings));
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  ASSERT_EQ(system.children.size(), 2u);
  // Host node 0 devices (1b, 18) are in guest cell 1, host node 1 devices in guest cell 0.
  EXPECT_EQ(system.children[0].attrs.at("numaid"), "0");
  EXPECT_EQ(system.children[0].attrs.at("affinity"), "0000000f");
  EXPECT_EQ(system.children[0].children[0].children[0].attrs.at("busid"), "0000:00:07.0");
  EXPECT_EQ(system.children[0].children[0].children[1].attrs.at("busid"), "0000:00:08.0");
  EXPECT_EQ(system.children[1].attrs.at("affinity"), "000000f0");
  EXPECT_EQ(system.children[1].children[0].children[0].attrs.at("busid"), "0000:00:05.0");
}

TEST(WriteNcclTopologyXml, NoGuestNumaIsOneCpuWithAllVcpus) {
  GuestDeviceMap map;
  map.vcpus = 40;
  map.devices = {{"0000:1b:00.0", "0000:00:05.0", -1}, {"0000:18:00.0", "0000:00:06.0", -1}};
  const Elem system = ParseNcclXml(WriteNcclTopologyXml(HgxHost(), HgxFabric(), map, {}, nullptr));
  ASSERT_EQ(system.children.size(), 1u);
  EXPECT_EQ(system.children[0].attrs.at("numaid"), "0");
  EXPECT_EQ(system.children[0].attrs.at("affinity"), "000000ff,ffffffff");
  ASSERT_EQ(system.children[0].children.size(), 1u);
  EXPECT_EQ(system.children[0].children[0].children.size(), 2u);
}

TEST(WriteNcclTopologyXml, VirtualFunctionStandsInForItsPf) {
  topology::HostTopology host = HgxHost();
  topology::PciDevice vf = *host.FindPci("0000:18:00.0");
  vf.address = "0000:18:00.2";
  vf.device_id = 0x101e;
  vf.physfn = "0000:18:00.0";
  vf.rdma_devices = {"mlx5_12"};
  host.pci.push_back(vf);
  GuestDeviceMap map;
  map.vcpus = 4;
  map.devices = {{"0000:1b:00.0", "0000:01:00.0", -1},
                 {"0000:18:00.2", "0000:02:00.0", -1},
                 {"0000:43:00.0", "0000:03:00.0", -1}};
  std::vector<std::string> warnings;
  const Elem system = ParseNcclXml(WriteNcclTopologyXml(host, HgxFabric(), map, {}, &warnings));
  const Elem& cpu = system.children.at(0);
  ASSERT_EQ(cpu.children.size(), 2u);
  ASSERT_EQ(cpu.children[0].children.size(), 2u);
  EXPECT_EQ(cpu.children[0].children[1].attrs.at("busid"), "0000:02:00.0");
  // GPU 43's NIC mlx5_3 is not in the guest: its switch holds the GPU alone, with a warning.
  EXPECT_EQ(cpu.children[1].children.size(), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("mlx5_3"));
}

TEST(WriteNcclTopologyXml, UnknownLinkSpeedIsLeftOutWithWarning) {
  topology::HostTopology host = HgxHost();
  for (topology::PciDevice& d : host.pci) d.link_gbps = 0;
  GuestDeviceMap map;
  map.devices = {{"0000:1b:00.0", "0000:01:00.0", -1}};
  std::vector<std::string> warnings;
  const std::string text = WriteNcclTopologyXml(host, HgxFabric(), map, {}, &warnings);
  EXPECT_EQ(text.find("link_speed"), std::string::npos);
  EXPECT_THAT(warnings, Contains(HasSubstr("no PCIe link speed known for 0000:1b:00.0")));
}

}  // namespace
}  // namespace accel::fabric
