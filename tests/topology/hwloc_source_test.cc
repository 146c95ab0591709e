#include "topology/hwloc_source.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "common/error.h"
#include "support/hwloc_importers.h"
#include "support/scoped_env.h"
#include "support/shared_fixture.h"
#include "topology/host_json.h"

namespace accel::topology {
namespace hwloc_source_test {

using ::testing::HasSubstr;

std::string FixturePath(const std::string& name) { return test_support::SharedPath("fixtures/hwloc/" + name); }

#define LOAD_FIXTURE_OR_SKIP(var, name) \
  ACCEL_REQUIRE_SHARED(FixturePath(name));   \
  HostTopology var = LoadHwlocXml(FixturePath(name))

int CountRole(const HostTopology& h, PciRole role) {
  return static_cast<int>(std::count_if(h.pci.begin(), h.pci.end(),
                                        [&](const PciDevice& d) { return d.role == role; }));
}

const PciDevice& Find(const HostTopology& h, const std::string& address) {
  const PciDevice* d = h.FindPci(address);
  if (d == nullptr) throw std::runtime_error("no PCI " + address);
  return *d;
}

const char* const kFixtures[] = {
    "16amd64-8n2c-cpusets.xml",
    "16intel64-manyVFs.xml",
    "192em64t-24n8c2t.xml",
    "24em64t-2n6c2t-pci.xml",
    "32em64t-2n8c2t-pci-wholeio.xml",
    "40intel64-2g2n4c+pcilocality.xml",
    "64intel64-heteromem.xml",
    "96em64t-4n4d3ca2co-pci.xml",
    "nvidiaDGX2.xml",
    "power8gpudistances.xml",
};

// Each fixture under each of hwloc's XML importers (tests/support/hwloc_importers.h): a user
// gets the same host whether or not libhwloc-plugins is installed.
class EveryFixture
    : public ::testing::TestWithParam<std::tuple<const char*, test_support::HwlocImporter>> {};

TEST_P(EveryFixture, LoadsConsistentlyAndRoundTripsThroughJson) {
  std::string path = FixturePath(std::get<0>(GetParam()));
  ACCEL_REQUIRE_SHARED(path);
  // The import runs in a forked child, which reads the variable on its first import.
  test_support::ScopedEnv importer("HWLOC_LIBXML", std::get<1>(GetParam()).hwloc_libxml);
  HostTopology host = LoadHwlocXml(path);
  EXPECT_EQ(CheckInvariants(host), "");
  EXPECT_EQ(host.source, "hwloc-xml:" + path);
  EXPECT_FALSE(host.numa_nodes.empty());
  EXPECT_FALSE(host.AllCpus().Empty());
  for (const NumaNode& n : host.numa_nodes) {
    ASSERT_FALSE(n.pages.empty());
    EXPECT_EQ(n.pages[0].total * n.pages[0].size_kib / 1024, n.memory_kib / 1024);
  }
  std::string json = ToJson(host);
  EXPECT_EQ(ToJson(HostFromJson(json, "again.json")), json);
}

INSTANTIATE_TEST_SUITE_P(SharedXml, EveryFixture,
                         ::testing::Combine(::testing::ValuesIn(kFixtures),
                                            ::testing::ValuesIn(test_support::kHwlocImporters)),
                         [](const auto& info) {
                           std::string name = std::get<0>(info.param);
                           name = name.substr(0, name.find('.'));
                           std::replace_if(
                               name.begin(), name.end(), [](char c) { return !isalnum(c); }, '_');
                           return name + "_" + std::get<1>(info.param).name;
                         });

TEST(HwlocXml, NvidiaDgx2) {
  LOAD_FIXTURE_OR_SKIP(host, "nvidiaDGX2.xml");
  EXPECT_EQ(host.packages.size(), 2u);
  EXPECT_EQ(host.packages[0].model, "Intel(R) Xeon(R) Platinum 8174 CPU @ 3.10GHz");
  EXPECT_EQ(host.hostname, "nvidiaDGX2");  // no HostName info: the file name
  EXPECT_EQ(CountRole(host, PciRole::kGpu), 16);
  // 11 NVSwitches by class 0680 plus one whose config space reads zero (hwloc subtype).
  EXPECT_EQ(CountRole(host, PciRole::kNvSwitch), 12);
  int per_node[2] = {0, 0};
  for (const PciDevice& d : host.pci) {
    if (d.role != PciRole::kGpu) continue;
    EXPECT_EQ(d.vendor_id, 0x10de);
    EXPECT_EQ(d.class_id, 0x0302);
    EXPECT_EQ(d.name, "Tesla V100-SXM3-32GB-H");  // from NVML's GPUModel
    EXPECT_EQ(d.os_devices.size(), 1u);
    EXPECT_THAT(d.os_devices[0], ::testing::StartsWith("nvml"));
    EXPECT_NEAR(d.link_gbps, 15.754, 1e-9);
    ASSERT_TRUE(d.numa_node == 0 || d.numa_node == 1);
    ++per_node[d.numa_node];
    EXPECT_EQ(AcceleratorVendor(d), "nvidia");
  }
  EXPECT_EQ(per_node[0], 8);
  EXPECT_EQ(per_node[1], 8);
  // Two levels of PLX switches: GPU -> downstream port -> upstream port -> ... -> root port.
  const PciDevice& gpu = Find(host, "0000:34:00.0");
  int depth = 0;
  for (const PciDevice* d = &gpu; !d->parent.empty(); d = host.FindPci(d->parent)) ++depth;
  EXPECT_GE(depth, 5);
}

TEST(HwlocXml, TwoSocketWithInfinibandAndGpus) {
  LOAD_FIXTURE_OR_SKIP(host, "24em64t-2n6c2t-pci.xml");
  EXPECT_EQ(host.hostname, "mirage004");
  EXPECT_EQ(CountRole(host, PciRole::kGpu), 3);  // the ES1000 BMC VGA is not one
  EXPECT_EQ(Find(host, "0000:01:03.0").role, PciRole::kOther);
  const PciDevice& hca = Find(host, "0000:05:00.0");
  EXPECT_EQ(hca.role, PciRole::kNic);
  EXPECT_EQ(hca.numa_node, 0);
  EXPECT_EQ(hca.rdma_devices, std::vector<std::string>{"mlx4_0"});
  EXPECT_EQ(hca.netdevs, (std::vector<std::string>{"eth2", "ib0"}));
  EXPECT_EQ(hca.name, "Mellanox Technologies Device 6746");
  EXPECT_EQ(Find(host, "0000:00:1f.2").os_devices, std::vector<std::string>{"sda"});
  EXPECT_EQ(Find(host, "0000:14:00.0").numa_node, 1);
  ASSERT_EQ(host.numa_nodes.size(), 2u);
  EXPECT_EQ(host.numa_nodes[0].distances, (std::vector<int>{10, 20}));
  EXPECT_EQ(host.numa_nodes[1].distances, (std::vector<int>{20, 10}));
  EXPECT_EQ(host.numa_nodes[0].cores.size(), 6u);
  EXPECT_EQ(host.numa_nodes[0].cores[0], (CpuSet{0, 12}));
  EXPECT_EQ(host.numa_nodes[1].package, 1);
  // Host bridges are named after their root bus and come first in tree order.
  EXPECT_EQ(host.pci[0].address, "pci0000:00");
  EXPECT_EQ(Find(host, "0000:00:01.0").parent, "pci0000:00");
  EXPECT_NE(host.FindPci("pci0000:10"), nullptr);
}

TEST(HwlocXml, TwentyFourNodesWithFullDistanceMatrix) {
  LOAD_FIXTURE_OR_SKIP(host, "192em64t-24n8c2t.xml");
  EXPECT_EQ(host.hostname, "uv2000");
  ASSERT_EQ(host.numa_nodes.size(), 24u);
  EXPECT_EQ(host.AllCpus().Count(), 384);
  for (size_t i = 0; i < 24; ++i) {
    const NumaNode& n = host.numa_nodes[i];
    ASSERT_EQ(n.distances.size(), 24u) << i;
    EXPECT_EQ(n.distances[i], 10);
    EXPECT_EQ(n.cores.size(), 8u);
    EXPECT_EQ(n.package, n.id);
    for (size_t j = 0; j < 24; ++j) EXPECT_EQ(n.distances[j], host.numa_nodes[j].distances[i]);
  }
  EXPECT_EQ(host.numa_nodes[0].distances[1], 50);
  EXPECT_EQ(host.numa_nodes[0].distances[23], 79);
}

TEST(HwlocXml, ManyVirtualFunctionsAreLinkedToTheirPf) {
  LOAD_FIXTURE_OR_SKIP(host, "16intel64-manyVFs.xml");
  int vfs = 0;
  for (const PciDevice& d : host.pci) {
    if (!d.is_vf()) continue;
    ++vfs;
    const PciDevice* pf = host.FindPci(d.physfn);
    ASSERT_NE(pf, nullptr);
    EXPECT_GT(pf->sriov_num_vfs, 0);
    EXPECT_EQ(pf->parent, d.parent);
  }
  EXPECT_EQ(vfs, 10);
  EXPECT_EQ(Find(host, "0000:0b:00.1").physfn, "0000:0b:00.0");
  EXPECT_EQ(Find(host, "0000:0b:00.0").sriov_num_vfs, 3);
  EXPECT_EQ(Find(host, "0000:0b:00.0").rdma_devices, std::vector<std::string>{"usnic_0"});
  EXPECT_FALSE(Find(host, "0000:0c:00.2").is_vf());  // vendor 1138 in the export: not a VF id
}

TEST(HwlocXml, HeterogeneousMemoryNodesHaveNoCpus) {
  LOAD_FIXTURE_OR_SKIP(host, "64intel64-heteromem.xml");
  ASSERT_EQ(host.numa_nodes.size(), 8u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(host.numa_nodes[i].cpus.Count(), 16) << i;
  for (int i = 4; i < 8; ++i) {
    EXPECT_TRUE(host.numa_nodes[i].cpus.Empty()) << i;
    EXPECT_EQ(host.numa_nodes[i].package, -1);
    EXPECT_EQ(host.numa_nodes[i].memory_kib, 2u * 1048576);
  }
  EXPECT_EQ(host.AllCpus().Count(), 64);
  EXPECT_EQ(host.numa_nodes[0].cores[0].Count(), 4);
}

TEST(HwlocXml, RestrictedCpusetsKeepOnlyAllowedNodes) {
  LOAD_FIXTURE_OR_SKIP(host, "16amd64-8n2c-cpusets.xml");
  std::vector<int> ids;
  for (const NumaNode& n : host.numa_nodes) ids.push_back(n.id);
  EXPECT_EQ(ids, (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(host.hostname, "16amd64-8n2c-cpusets");
  EXPECT_EQ(host.numa_nodes[0].distances.size(), 5u);
}

TEST(HwlocXml, Power8UsesSixtyFourKibBasePages) {
  LOAD_FIXTURE_OR_SKIP(host, "power8gpudistances.xml");
  EXPECT_EQ(host.numa_nodes[0].pages[0].size_kib, 64u);
  EXPECT_EQ(CountRole(host, PciRole::kGpu), 4);
  const PciDevice& gpu = Find(host, "0002:01:00.0");
  EXPECT_EQ(gpu.os_devices, (std::vector<std::string>{"cuda0", "opencl0d0", "nvml0"}));
}

TEST(HwlocXml, HandEditedDuplicateAddressIsKeptOnce) {
  LOAD_FIXTURE_OR_SKIP(host, "32em64t-2n8c2t-pci-wholeio.xml");
  EXPECT_EQ(std::count_if(host.pci.begin(), host.pci.end(),
                          [](const PciDevice& d) { return d.address == "0000:04:00.0"; }),
            1);
  EXPECT_EQ(Find(host, "0000:84:00.0").os_devices, (std::vector<std::string>{"cuda0", "card0"}));
}

// ---------------------------------------------------------------------------------------------
// The v3 -> v2 downgrade.

TEST(DowngradeHwlocXml, MapsOsdevBitmaskToV2Enum) {
  EXPECT_EQ(MapOsdevTypeV3ToV2(12, "nvml0"), 1);  // GPU|COPROC, management -> GPU
  EXPECT_EQ(MapOsdevTypeV3ToV2(12, "rsmi0"), 1);
  EXPECT_EQ(MapOsdevTypeV3ToV2(12, "cuda0"), 5);  // GPU|COPROC compute -> COPROC
  EXPECT_EQ(MapOsdevTypeV3ToV2(8, "ze0"), 5);
  EXPECT_EQ(MapOsdevTypeV3ToV2(4, "card0"), 1);
  EXPECT_EQ(MapOsdevTypeV3ToV2(48, "mlx5_0"), 3);  // NETWORK|OPENFABRICS -> OPENFABRICS
  EXPECT_EQ(MapOsdevTypeV3ToV2(32, "hfi1_0"), 3);
  EXPECT_EQ(MapOsdevTypeV3ToV2(16, "eth0"), 2);
  EXPECT_EQ(MapOsdevTypeV3ToV2(1, "sda"), 0);
  EXPECT_EQ(MapOsdevTypeV3ToV2(2, "dax0.0"), 0);
  EXPECT_EQ(MapOsdevTypeV3ToV2(64, "dma0chan0"), 4);
  EXPECT_EQ(MapOsdevTypeV3ToV2(0, "x"), 0);
}

constexpr const char* kV3Topology = R"(<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="3.0">
  <object type="Machine" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" allowed_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">
    <object type="Package" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="2">
      <info name="CPUModel" value="Test CPU"/>
      <object type="NUMANode" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="3" local_memory="8589934592">
        <page_type size="4096" count="0"/>
        <page_type size="2097152" count="512"/>
      </object>
      <object type="Core" os_index="0" cpuset="0x00000003" complete_cpuset="0x00000003" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="4">
        <object type="PU" os_index="0" cpuset="0x00000001" complete_cpuset="0x00000001" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="5"/>
        <object type="PU" os_index="1" cpuset="0x00000002" complete_cpuset="0x00000002" nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="6"/>
      </object>
      <object type="Bridge" gp_index="7" bridge_type="0-1" depth="0" bridge_pci="0000:[40-41]">
        <object type="Bridge" gp_index="8" bridge_type="1-1" depth="1" bridge_pci="0000:[41-41]" pci_busid="0000:40:01.0" pci_type="0604 [8086:352a] [0000:0000] 04 00" pci_link_speed="31.507692">
          <object type="PCIDev" gp_index="9" pci_busid="0000:41:00.0" pci_type="0302 [10de:2330] [10de:16c1] a1 00" pci_link_speed="31.507692">
            <info name="PCIDevice" value="GH100 [H100 SXM5 80GB]"/>
            <object type="OSDev" gp_index="10" name="cuda0" osdev_type="12"/>
            <object type="OSDev" gp_index="11" name="nvml0" osdev_type="12"/>
          </object>
          <object type="PCIDev" gp_index="12" pci_busid="0000:41:00.1" pci_type="0207 [15b3:1021] [15b3:0041] 00 00" pci_link_speed="31.507692">
            <object type="OSDev" gp_index="13" name="mlx5_0" osdev_type="48"/>
            <object type="OSDev" gp_index="14" name="ibp65s0f1" osdev_type="16"/>
          </object>
        </object>
      </object>
    </object>
  </object>
  <info name="Backend" value="Linux"/>
  <info name="HostName" value="v3-box"/>
</topology>
)";

TEST(DowngradeHwlocXml, RewritesVersionOsdevTypesAndTopLevelInfo) {
  std::string v2 = DowngradeHwlocXml(kV3Topology);
  EXPECT_THAT(v2, HasSubstr("<topology version=\"2.0\">"));
  EXPECT_THAT(v2, HasSubstr("name=\"cuda0\" osdev_type=\"5\""));
  EXPECT_THAT(v2, HasSubstr("name=\"nvml0\" osdev_type=\"1\""));
  EXPECT_THAT(v2, HasSubstr("name=\"mlx5_0\" osdev_type=\"3\""));
  EXPECT_THAT(v2, HasSubstr("name=\"ibp65s0f1\" osdev_type=\"2\""));
  // The topology-level infos now open the root object.
  size_t root = v2.find("<object type=\"Machine\"");
  size_t info = v2.find("<info name=\"HostName\" value=\"v3-box\"/>");
  size_t package = v2.find("<object type=\"Package\"");
  ASSERT_NE(info, std::string::npos);
  EXPECT_LT(root, info);
  EXPECT_LT(info, package);
  EXPECT_EQ(v2.find("<info name=\"HostName\"", info + 1), std::string::npos);
}

TEST(DowngradeHwlocXml, LeavesOtherVersionsAndGarbageAlone) {
  std::string v2 = DowngradeHwlocXml(kV3Topology);
  EXPECT_EQ(DowngradeHwlocXml(v2), v2);
  for (const char* text : {"", "<", "not xml", "<topology version=\"3.0\"", "<a b=\"c>",
                           "<topology><object osdev_type=\"99999999999\"/></topology>"})
    EXPECT_NO_THROW(DowngradeHwlocXml(text)) << text;
}

TEST(HwlocXml, LoadsAVersion3ExportEndToEnd) {
  HostTopology host = LoadHwlocXmlText(kV3Topology, "mem.xml", "fallback");
  EXPECT_EQ(host.hostname, "v3-box");
  EXPECT_EQ(host.source, "hwloc-xml:mem.xml");
  ASSERT_EQ(host.numa_nodes.size(), 1u);
  const NumaNode& node = host.numa_nodes[0];
  EXPECT_EQ(node.cores, std::vector<CpuSet>{(CpuSet{0, 1})});
  ASSERT_EQ(node.pages.size(), 2u);
  EXPECT_EQ(node.pages[1].size_kib, 2048u);
  EXPECT_EQ(node.pages[1].total, 512u);
  EXPECT_EQ(node.pages[0].total, (8u * 1048576 - 512 * 2048) / 4);
  const PciDevice& gpu = Find(host, "0000:41:00.0");
  EXPECT_EQ(gpu.role, PciRole::kGpu);
  EXPECT_EQ(gpu.parent, "0000:40:01.0");
  EXPECT_EQ(gpu.os_devices, (std::vector<std::string>{"cuda0", "nvml0"}));
  EXPECT_DOUBLE_EQ(gpu.link_gbps, 31.508);
  EXPECT_EQ(gpu.name, "GH100 [H100 SXM5 80GB]");
  const PciDevice& nic = Find(host, "0000:41:00.1");
  EXPECT_EQ(nic.rdma_devices, std::vector<std::string>{"mlx5_0"});
  EXPECT_EQ(nic.netdevs, std::vector<std::string>{"ibp65s0f1"});
  EXPECT_EQ(nic.numa_node, 0);
  EXPECT_EQ(Find(host, "pci0000:40").role, PciRole::kHostBridge);
}

TEST(HwlocXml, FallbackHostnameWhenExportHasNone) {
  std::string text = kV3Topology;
  text.erase(text.find("  <info name=\"HostName\""),
             std::string("  <info name=\"HostName\" value=\"v3-box\"/>\n").size());
  EXPECT_EQ(LoadHwlocXmlText(text, "m.xml", "from-file").hostname, "from-file");
}

TEST(HwlocXml, BadInputIsAnInputErrorNamingTheFile) {
  for (const char* text : {"", "<topology>", "<topology version=\"2.0\"><object type=\"Bogus\"/>",
                           "<html><body>hi</body></html>", "<<<>>>"}) {
    try {
      LoadHwlocXmlText(text, "broken.xml", "x");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "broken.xml");
    }
  }
  try {
    LoadHwlocXml("/nonexistent/topology.xml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/topology.xml"));
    EXPECT_THAT(e.what(), HasSubstr("No such file"));
  }
}

// ---------------------------------------------------------------------------------------------
// Live host and SR-IOV from sysfs.

TEST(LiveHost, LoadsAndPassesInvariants) {
  // The one test of LoadLiveHost on the machine that runs it: it asserts only what holds on every
  // machine (a consistent host, at least one CPU, a name), never this machine's shape. The
  // readers it combines are tested on fixtures: hwloc XML above, sysfs on fake trees.
  HostTopology host = LoadLiveHost();
  EXPECT_EQ(CheckInvariants(host), "");
  EXPECT_EQ(host.source, "live");
  EXPECT_FALSE(host.hostname.empty());  // gethostname, else "localhost"
  EXPECT_FALSE(host.AllCpus().Empty());
  std::string json = ToJson(host);
  EXPECT_EQ(ToJson(HostFromJson(json, "live.json")), json);
}

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("accel-sriov-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "bus/pci/devices");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    std::filesystem::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  std::filesystem::path root_;
};

TEST_F(FakeSysfs, SriovFromSysfs) {
  HostTopology host;
  host.hostname = "h";
  PciDevice hb;
  hb.address = "pci0000:00";
  hb.role = PciRole::kHostBridge;
  PciDevice pf;
  pf.address = "0000:3b:00.0";
  pf.parent = "pci0000:00";
  pf.role = PciRole::kNic;
  PciDevice vf = pf;
  vf.address = "0000:3b:00.2";
  host.pci = {hb, pf, vf};
  Write("bus/pci/devices/0000:3b:00.0/sriov_totalvfs", "64\n");
  Write("bus/pci/devices/0000:3b:00.0/sriov_numvfs", "8\n");
  std::filesystem::create_directories(root_ / "bus/pci/devices/0000:3b:00.2");
  std::filesystem::create_directory_symlink("../0000:3b:00.0",
                                            root_ / "bus/pci/devices/0000:3b:00.2/physfn");
  MergeSysfsSriov(root_.string(), &host);
  EXPECT_EQ(host.pci[1].sriov_total_vfs, 64);
  EXPECT_EQ(host.pci[1].sriov_num_vfs, 8);
  EXPECT_EQ(host.pci[2].physfn, "0000:3b:00.0");
  EXPECT_EQ(host.pci[2].sriov_total_vfs, 0);
  EXPECT_EQ(CheckInvariants(host), "");
}

}  // namespace
}  // namespace accel::topology
