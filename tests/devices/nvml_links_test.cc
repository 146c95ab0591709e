// ReadNvmlPeerLinks over the fake libnvidia-ml.so.1 ("nvlink_peers", docs/fake-nvml.md): direct
// GPU links, asymmetric reports, NVSwitch ports with and without the remote-type function, and
// every way NVML can fail to say (which must give empty lists, never an error).
#include "devices/nvml_links.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "devices/backend.h"
#include "devices/interconnect.h"
#include "support/fake_nvml_setup.h"
#include "topology/host.h"

namespace accel::devices {
namespace nvml_links_test {

using nlohmann::json;
using test_support::FakeGpu;

// Canonical addresses of FakeGpu(0..n-1): 0000:1b:00.0, 0000:1c:00.0, ...
std::vector<std::string> Addresses(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    char text[32];
    std::snprintf(text, sizeof text, "0000:%02x:00.0", 0x1b + i);
    out.push_back(text);
  }
  return out;
}

json WithPeers(int i, std::vector<std::string> peers) {
  json gpu = FakeGpu(i);
  gpu["nvlink_peers"] = peers;
  return gpu;
}

// "address" for a GPU link, "switch@address" for an NVSwitch port: one string per link.
std::vector<std::string> Describe(const std::vector<PeerLink>& links) {
  std::vector<std::string> out;
  for (const PeerLink& l : links) {
    out.push_back((l.remote_is_switch ? "switch@" : "") + l.remote_pci_address);
  }
  return out;
}

// The link matrix AddPeerLinks builds from `links` on a PCIe-less interconnect.
Interconnect Linked(const std::vector<std::string>& addresses,
                    const std::vector<std::vector<PeerLink>>& links) {
  Interconnect ic = PcieInterconnect(topology::HostTopology{}, addresses);
  AddPeerLinks(ic, links);
  return ic;
}

class NvmlLinksTest : public ::testing::Test {
 protected:
  std::vector<std::vector<PeerLink>> Read(const std::vector<json>& devices, int n) {
    config_.WriteDevices(devices);
    return ReadNvmlPeerLinks(ACCEL_FAKE_NVML, Addresses(n));
  }
  static bool AllEmpty(const std::vector<std::vector<PeerLink>>& links) {
    for (const auto& l : links) {
      if (!l.empty()) return false;
    }
    return true;
  }
  test_support::FakeNvmlConfigFile config_;
};

TEST_F(NvmlLinksTest, DirectGpuLinksInLinkOrder) {
  // RTX 8000-style bridges: 0↔3 with two links, 1↔2 with one; link 1 of GPU 1 is down.
  auto links = Read({WithPeers(0, {"0000:1e:00.0", "00000000:1E:00.0"}),
                     WithPeers(1, {"0000:1d:00.0", "down"}), WithPeers(2, {"0000:1c:00.0"}),
                     WithPeers(3, {"0000:1b:00.0", "0000:1b:00.0", "down"})},
                    4);
  ASSERT_EQ(links.size(), 4u);
  EXPECT_THAT(Describe(links[0]), ::testing::ElementsAre("0000:1e:00.0", "0000:1e:00.0"));
  EXPECT_THAT(Describe(links[1]), ::testing::ElementsAre("0000:1d:00.0"));
  EXPECT_THAT(Describe(links[2]), ::testing::ElementsAre("0000:1c:00.0"));
  EXPECT_THAT(Describe(links[3]), ::testing::ElementsAre("0000:1b:00.0", "0000:1b:00.0"));

  Interconnect ic = Linked(Addresses(4), links);
  EXPECT_EQ(ic.links[0 * 4 + 3], 2);
  EXPECT_EQ(ic.links[1 * 4 + 2], 1);
  EXPECT_EQ(ic.links[0 * 4 + 1], 0);
  EXPECT_FALSE(ic.nvswitch);
  EXPECT_GT(ic.PairScore(0, 3), ic.PairScore(1, 2));
  EXPECT_GT(ic.PairScore(1, 2), ic.PairScore(0, 1));
}

TEST_F(NvmlLinksTest, AddressesInAnySpellingAndOrder) {
  config_.WriteDevices({WithPeers(0, {"0000:1c:00.0"}), WithPeers(1, {"0000:1b:00.0"})});
  auto links = ReadNvmlPeerLinks(ACCEL_FAKE_NVML, {"00000000:1C:00.0", "0000:1b:00.0"});
  ASSERT_EQ(links.size(), 2u);
  EXPECT_THAT(Describe(links[0]), ::testing::ElementsAre("0000:1b:00.0"));  // GPU 1 first
  EXPECT_THAT(Describe(links[1]), ::testing::ElementsAre("0000:1c:00.0"));
}

TEST_F(NvmlLinksTest, AsymmetricReportsAreKeptAsReportedAndSymmetrisedByMinimum) {
  auto links = Read({WithPeers(0, {"0000:1c:00.0", "0000:1c:00.0", "0000:1c:00.0"}),
                     WithPeers(1, {"0000:1b:00.0"}), WithPeers(2, {"0000:1b:00.0"})},
                    3);
  EXPECT_EQ(links[0].size(), 3u);
  EXPECT_EQ(links[1].size(), 1u);
  Interconnect ic = Linked(Addresses(3), links);
  EXPECT_EQ(ic.links[0 * 3 + 1], 1);
  EXPECT_EQ(ic.links[1 * 3 + 0], 1);
  EXPECT_EQ(ic.links[0 * 3 + 2], 0);  // GPU 2 says it links to 0; GPU 0 does not agree
}

TEST_F(NvmlLinksTest, NvSwitchPortsMakeEveryPairLinked) {
  std::vector<json> gpus;
  for (int i = 0; i < 8; ++i) {
    gpus.push_back(WithPeers(i, std::vector<std::string>(18, i == 7 ? "switch:0000:c0:00.0"
                                                                    : "switch")));
  }
  auto links = Read(gpus, 8);
  for (const auto& l : links) {
    ASSERT_EQ(l.size(), 18u);
    for (const PeerLink& p : l) EXPECT_TRUE(p.remote_is_switch);
  }
  EXPECT_EQ(links[0][0].remote_pci_address, "0000:ff:00.0");  // the fake's default port address
  EXPECT_EQ(links[7][0].remote_pci_address, "0000:c0:00.0");
  Interconnect ic = Linked(Addresses(8), links);
  EXPECT_TRUE(ic.nvswitch);
  for (size_t i = 0; i < 8; ++i) {
    for (size_t j = 0; j < 8; ++j) EXPECT_EQ(ic.links[i * 8 + j], i == j ? 0 : 18) << i << j;
  }
}

TEST_F(NvmlLinksTest, WithoutTheRemoteTypeAnUnknownFarEndIsASwitch) {
  std::vector<json> gpus = {WithPeers(0, {"0000:1c:00.0", "switch:0000:c0:00.0"}),
                            WithPeers(1, {"0000:1b:00.0", "switch:0000:c0:00.0"})};
  for (json& g : gpus) g["not_supported"] = json::array({"nvmlDeviceGetNvLinkRemoteDeviceType"});
  auto links = Read(gpus, 2);
  EXPECT_THAT(Describe(links[0]), ::testing::ElementsAre("0000:1c:00.0", "switch@0000:c0:00.0"));
  EXPECT_THAT(Describe(links[1]), ::testing::ElementsAre("0000:1b:00.0", "switch@0000:c0:00.0"));
  // With the type function, a switch port at a GPU's address is still a switch.
  gpus = {WithPeers(0, {"switch:0000:1c:00.0"}), WithPeers(1, {})};
  EXPECT_THAT(Describe(Read(gpus, 2)[0]), ::testing::ElementsAre("switch@0000:1c:00.0"));
}

TEST_F(NvmlLinksTest, NothingToSayGivesEmptyListsNeverAnError) {
  std::vector<json> peers = {WithPeers(0, {"0000:1c:00.0"}), WithPeers(1, {"0000:1b:00.0"})};
  ASSERT_FALSE(AllEmpty(Read(peers, 2)));

  // No nvlink_peers: link state from nvlink_links, remote info NOT_SUPPORTED.
  json old0 = FakeGpu(0), old1 = FakeGpu(1);
  old0["metrics"] = old1["metrics"] = json{{"nvlink_links", 18}};
  EXPECT_TRUE(AllEmpty(Read({old0, old1}, 2)));
  // The remote-PCI function refused, NVLink state refused, or the GPU lost.
  for (const char* refusal : {"nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkState"}) {
    std::vector<json> refused = peers;
    for (json& g : refused) g["not_supported"] = json::array({refusal});
    EXPECT_TRUE(AllEmpty(Read(refused, 2))) << refusal;
  }
  std::vector<json> lost = peers;
  lost[0]["faults"] =
      json::array({json{{"function", "nvmlDeviceGetNvLinkState"}, {"error", "GPU_IS_LOST"}}});
  auto one_lost = Read(lost, 2);
  EXPECT_TRUE(one_lost[0].empty());
  EXPECT_EQ(one_lost[1].size(), 1u);
  // NVML does not initialise.
  config_.Write({{"init_error", "DRIVER_NOT_LOADED"}, {"devices", peers}});
  EXPECT_TRUE(AllEmpty(ReadNvmlPeerLinks(ACCEL_FAKE_NVML, Addresses(2))));
  config_.WriteDevices(peers);
  // No library, not NVML, an address NVML does not know or that is not an address.
  EXPECT_TRUE(AllEmpty(ReadNvmlPeerLinks("", Addresses(2))));
  EXPECT_TRUE(AllEmpty(ReadNvmlPeerLinks("/nonexistent/libnvidia-ml.so.1", Addresses(2))));
  EXPECT_TRUE(AllEmpty(ReadNvmlPeerLinks("libc.so.6", Addresses(2))));
  auto partial = ReadNvmlPeerLinks(ACCEL_FAKE_NVML, {"0000:99:00.0", "gpu0", "0000:1c:00.0"});
  ASSERT_EQ(partial.size(), 3u);
  EXPECT_TRUE(partial[0].empty());
  EXPECT_TRUE(partial[1].empty());
  EXPECT_EQ(partial[2].size(), 1u);
  EXPECT_TRUE(ReadNvmlPeerLinks(ACCEL_FAKE_NVML, {}).empty());
}

TEST_F(NvmlLinksTest, LeavesAnOpenBackendWorking) {
  config_.WriteDevices({WithPeers(0, {"0000:1c:00.0"}), WithPeers(1, {"0000:1b:00.0"})});
  std::unique_ptr<DeviceBackend> backend = OpenNvml(ACCEL_FAKE_NVML);
  ASSERT_NE(backend, nullptr);
  auto links = ReadNvmlPeerLinks(backend->library_path(), Addresses(2));
  EXPECT_EQ(links[0].size(), 1u);
  // Our nvmlShutdown only dropped our reference: the backend's NVML still answers.
  DeviceReading reading = backend->Read(0);
  EXPECT_TRUE(reading.error.empty()) << reading.error;
  EXPECT_FALSE(reading.lost);
}

}  // namespace
}  // namespace accel::devices
