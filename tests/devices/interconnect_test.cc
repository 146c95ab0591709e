// Interconnect: PCIe levels from the topology model's PCI tree (accel fixtures, a hand-built
// tree and hwloc's real machine exports) and NVLink counts from peer link reports.
#include "devices/interconnect.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/shared_fixture.h"
#include "topology/sources.h"

namespace accel::devices {
namespace interconnect_test {

using topology::PciDevice;
using topology::PciRole;

std::vector<std::string> Accelerators(const topology::HostTopology& host) {
  std::vector<std::string> out;
  for (const PciDevice& d : host.pci)
    if (d.is_accelerator()) out.push_back(d.address);
  return out;
}

PcieLink Level(const Interconnect& ic, size_t i, size_t j) { return ic.pcie[i * ic.size() + j]; }
int Links(const Interconnect& ic, size_t i, size_t j) { return ic.links[i * ic.size() + j]; }

topology::HostTopology HgxH100() {
  return topology::LoadTopology(ACCEL_SOURCE_DIR "/fixtures/hosts/hgx-h100.json");
}

// 18 NVLinks per H100 spread over the baseboard's four NVSwitches (5, 4, 4, 5).
std::vector<PeerLink> H100SwitchLinks() {
  std::vector<PeerLink> links;
  const char* switches[] = {"0000:03:00.0", "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"};
  int per_switch[] = {5, 4, 4, 5};
  for (int s = 0; s < 4; ++s)
    for (int k = 0; k < per_switch[s]; ++k) links.push_back({switches[s], true});
  return links;
}

TEST(InterconnectPcie, HgxH100GpusEachBehindTheirOwnHostBridge) {
  topology::HostTopology host = HgxH100();
  std::vector<std::string> gpus = Accelerators(host);
  ASSERT_EQ(gpus.size(), 8u);
  Interconnect ic = PcieInterconnect(host, gpus);
  ASSERT_EQ(ic.size(), 8u);
  EXPECT_FALSE(ic.nvswitch);
  for (size_t i = 0; i < 8; ++i) {
    for (size_t j = 0; j < 8; ++j) {
      if (i == j) continue;
      PcieLink want = (i < 4) == (j < 4) ? PcieLink::kSameNuma : PcieLink::kCrossSocket;
      EXPECT_EQ(Level(ic, i, j), want) << i << "-" << j;
      EXPECT_EQ(Links(ic, i, j), 0);
    }
    EXPECT_EQ(ic.PairScore(i, i), 0);
  }
  EXPECT_EQ(ic.PairScore(0, 1), 20);
  EXPECT_EQ(ic.PairScore(0, 7), 10);
}

TEST(InterconnectPcie, HgxH100SwitchNicAndOneDevicesFunctions) {
  topology::HostTopology host = HgxH100();
  // GPU and NIC behind one PCIe switch; two NVSwitches behind one switch; two functions of one
  // dual-port NIC; a GPU and a device under different root ports of one host bridge.
  Interconnect ic = PcieInterconnect(host, {"0000:1b:00.0", "0000:18:00.0", "0000:03:00.0",
                                            "0000:04:00.0", "0000:27:00.0", "0000:27:00.1",
                                            "0000:08:00.0", "0000:09:00.0"});
  EXPECT_EQ(Level(ic, 0, 1), PcieLink::kSingleSwitch);
  EXPECT_EQ(Level(ic, 2, 3), PcieLink::kSingleSwitch);
  EXPECT_EQ(Level(ic, 4, 5), PcieLink::kSameBoard);
  EXPECT_EQ(Level(ic, 6, 7), PcieLink::kHostBridge);
  EXPECT_EQ(Level(ic, 0, 4), PcieLink::kSameNuma);
}

// pci0000:00 (node 0) ─ 00:01.0 ─ switch 01:00.0 ┬ 02:00.0 ─ gpu 03:00.0
//                                                ├ 02:02.0 ─ gpu 07:00.0
//                                                └ 02:01.0 ─ switch 04:00.0 ─ 05:00.0 ─ gpu 06:00.0 (+ .1)
//                   └ 00:02.0 ─ gpu 08:00.0
// pci0000:80 (node 1) ─ 80:01.0 ─ gpu 81:00.0
topology::HostTopology HandBuiltTree() {
  topology::HostTopology host;
  host.numa_nodes.resize(2);
  host.numa_nodes[1].id = 1;
  auto add = [&](const std::string& address, const std::string& parent, PciRole role, int numa) {
    PciDevice d;
    d.address = address;
    d.parent = parent;
    d.role = role;
    d.numa_node = numa;
    host.pci.push_back(d);
  };
  add("pci0000:00", "", PciRole::kHostBridge, -1);
  add("0000:00:01.0", "pci0000:00", PciRole::kBridge, 0);
  add("0000:01:00.0", "0000:00:01.0", PciRole::kBridge, 0);
  add("0000:02:00.0", "0000:01:00.0", PciRole::kBridge, 0);
  add("0000:03:00.0", "0000:02:00.0", PciRole::kGpu, 0);
  add("0000:02:02.0", "0000:01:00.0", PciRole::kBridge, 0);
  add("0000:07:00.0", "0000:02:02.0", PciRole::kGpu, 0);
  add("0000:02:01.0", "0000:01:00.0", PciRole::kBridge, 0);
  add("0000:04:00.0", "0000:02:01.0", PciRole::kBridge, 0);
  add("0000:05:00.0", "0000:04:00.0", PciRole::kBridge, 0);
  add("0000:06:00.0", "0000:05:00.0", PciRole::kGpu, 0);
  add("0000:06:00.1", "0000:05:00.0", PciRole::kGpu, 0);
  add("0000:00:02.0", "pci0000:00", PciRole::kBridge, 0);
  add("0000:08:00.0", "0000:00:02.0", PciRole::kGpu, -1);  // NUMA from the bridges above: 0
  add("pci0000:80", "", PciRole::kHostBridge, -1);
  add("0000:80:01.0", "pci0000:80", PciRole::kBridge, 1);
  add("0000:81:00.0", "0000:80:01.0", PciRole::kGpu, 1);
  return host;
}

TEST(InterconnectPcie, EveryLevelOnAHandBuiltTree) {
  // NVML spellings are accepted and stored canonical.
  Interconnect ic = PcieInterconnect(HandBuiltTree(),
                                     {"00000000:03:00.0", "0000:07:00.0", "0000:06:00.0",
                                      "0000:06:00.1", "0000:08:00.0", "0000:81:00.0",
                                      "0000:99:00.0"});
  EXPECT_EQ(ic.devices[0], "0000:03:00.0");
  EXPECT_EQ(Level(ic, 0, 1), PcieLink::kSingleSwitch);
  EXPECT_EQ(Level(ic, 0, 2), PcieLink::kMultiSwitch);
  EXPECT_EQ(Level(ic, 1, 2), PcieLink::kMultiSwitch);
  EXPECT_EQ(Level(ic, 2, 3), PcieLink::kSameBoard);
  EXPECT_EQ(Level(ic, 0, 4), PcieLink::kHostBridge);
  EXPECT_EQ(Level(ic, 4, 5), PcieLink::kCrossSocket);
  // Unknown to the tree: the lowest level to everything, still a usable matrix.
  for (size_t j = 0; j < 6; ++j) EXPECT_EQ(Level(ic, 6, j), PcieLink::kCrossSocket);
  for (size_t i = 0; i < ic.size(); ++i)
    for (size_t j = 0; j < ic.size(); ++j) EXPECT_EQ(Level(ic, i, j), Level(ic, j, i));
}

TEST(InterconnectPeerLinks, NvSwitchLinksEveryPairWithTheSmallerCount) {
  topology::HostTopology host = HgxH100();
  Interconnect ic = PcieInterconnect(host, Accelerators(host));
  std::vector<std::vector<PeerLink>> links(8, H100SwitchLinks());
  links[7].resize(12);  // a GPU with six links down
  AddPeerLinks(ic, links);
  EXPECT_TRUE(ic.nvswitch);
  EXPECT_EQ(Links(ic, 0, 1), 18);
  EXPECT_EQ(Links(ic, 0, 7), 12);
  EXPECT_EQ(Links(ic, 7, 0), 12);
  EXPECT_EQ(ic.PairScore(0, 1), 1820);
  EXPECT_EQ(ic.PairScore(0, 4), 1810);
  EXPECT_EQ(ic.PairScore(2, 7), 1210);
}

TEST(InterconnectPeerLinks, DirectLinksAsymmetricUnknownAndMissingReports) {
  Interconnect ic = PcieInterconnect(HandBuiltTree(), {"0000:03:00.0", "0000:07:00.0",
                                                       "0000:06:00.0", "0000:81:00.0"});
  std::vector<std::vector<PeerLink>> links(3);  // the fourth device reported nothing
  // 0↔1: two links seen from 0, one from 1 (the go-gpuallocator panic case): one counts.
  links[0] = {{"00000000:07:00.0", false}, {"0000:07:00.0", false}, {"0000:06:00.0", false},
              {"0000:81:00.0", false}, {"0000:aa:00.0", false}, {"0000:03:00.0", false}};
  links[1] = {{"0000:03:00.0", false}};
  links[2] = {{"0000:03:00.0", false}, {"0000:03:00.0", false}};
  AddPeerLinks(ic, links);
  EXPECT_FALSE(ic.nvswitch);
  EXPECT_EQ(Links(ic, 0, 1), 1);
  EXPECT_EQ(Links(ic, 1, 0), 1);
  EXPECT_EQ(Links(ic, 0, 2), 1);
  EXPECT_EQ(Links(ic, 0, 3), 0);  // only one side reports it
  EXPECT_EQ(Links(ic, 1, 2), 0);
  EXPECT_EQ(Links(ic, 0, 0), 0);  // a self link is ignored
  EXPECT_EQ(ic.PairScore(0, 1), 150);
}

TEST(InterconnectPairScore, EmptyMatricesScoreAsNothingKnown) {
  Interconnect ic;
  ic.devices = {"a", "b"};
  EXPECT_EQ(ic.PairScore(0, 1), 10);
  EXPECT_EQ(ic.PairScore(1, 1), 0);
}

// hwloc's real machine exports (tests skip where the shared fixtures are absent).
std::string HwlocXml(const std::string& name) { return test_support::SharedPath("fixtures/hwloc/" + name); }

TEST(InterconnectHwloc, Dgx2PlxPairsQuadsAndSockets) {
  std::string path = HwlocXml("nvidiaDGX2.xml");
  ACCEL_REQUIRE_SHARED(path);
  topology::HostTopology host = topology::LoadTopology(path);
  std::vector<std::string> gpus = Accelerators(host);
  ASSERT_EQ(gpus.size(), 16u);
  Interconnect ic = PcieInterconnect(host, gpus);
  // Two V100s per second-level PLX switch, two such switches per first-level one.
  EXPECT_EQ(ic.devices[0], "0000:34:00.0");
  EXPECT_EQ(Level(ic, 0, 1), PcieLink::kSingleSwitch);
  EXPECT_EQ(Level(ic, 0, 2), PcieLink::kMultiSwitch);
  EXPECT_EQ(Level(ic, 0, 4), PcieLink::kSameNuma);
  EXPECT_EQ(Level(ic, 0, 8), PcieLink::kCrossSocket);
  for (size_t i = 0; i < 16; ++i) {
    int pix = 0, pxb = 0, node = 0, sys = 0;
    for (size_t j = 0; j < 16; ++j) {
      if (i == j) continue;
      PcieLink l = Level(ic, i, j);
      pix += l == PcieLink::kSingleSwitch;
      pxb += l == PcieLink::kMultiSwitch;
      node += l == PcieLink::kSameNuma;
      sys += l == PcieLink::kCrossSocket;
    }
    EXPECT_EQ(pix, 1) << gpus[i];
    EXPECT_EQ(pxb, 2) << gpus[i];
    EXPECT_EQ(node, 4) << gpus[i];
    EXPECT_EQ(sys, 8) << gpus[i];
  }
}

TEST(InterconnectHwloc, HostBridgeSameBoardAndNodeOnOlderMachines) {
  std::string wholeio = HwlocXml("32em64t-2n8c2t-pci-wholeio.xml");
  std::string power8 = HwlocXml("power8gpudistances.xml");
  ACCEL_REQUIRE_SHARED(wholeio);
  ACCEL_REQUIRE_SHARED(power8);
  topology::HostTopology host = topology::LoadTopology(wholeio);
  Interconnect ic = PcieInterconnect(host, Accelerators(host));
  ASSERT_EQ(ic.devices, (std::vector<std::string>{"0000:03:00.0", "0000:83:00.0",
                                                  "0000:84:00.0", "0000:84:00.1"}));
  EXPECT_EQ(Level(ic, 0, 1), PcieLink::kCrossSocket);
  EXPECT_EQ(Level(ic, 1, 2), PcieLink::kHostBridge);
  EXPECT_EQ(Level(ic, 2, 3), PcieLink::kSameBoard);

  // POWER8: every GPU on its own PHB; two per socket.
  topology::HostTopology p8 = topology::LoadTopology(power8);
  Interconnect ic8 = PcieInterconnect(p8, Accelerators(p8));
  ASSERT_EQ(ic8.size(), 4u);
  EXPECT_EQ(Level(ic8, 0, 1), PcieLink::kSameNuma);
  EXPECT_EQ(Level(ic8, 2, 3), PcieLink::kSameNuma);
  EXPECT_EQ(Level(ic8, 1, 2), PcieLink::kCrossSocket);
}

}  // namespace
}  // namespace accel::devices
