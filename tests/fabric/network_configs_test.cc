// The device plugin configs and the NicClusterPolicy, parsed back (nlohmann-json, yaml-cpp) and
// checked field by field against the plugins' own names (fabric-doctor.md §3).
#include "fabric/network_configs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "topology/sources.h"

namespace accel::fabric {
namespace network_configs_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

std::string Src(const std::string& rel) { return std::string(ACCEL_SOURCE_DIR) + "/" + rel; }

topology::HostTopology HgxHost() {
  return topology::LoadTopology(Src("fixtures/hosts/hgx-h100.json"));
}

// The fixture's pairing, by hand: GPU i with the compute NIC behind its switch; the storage
// NICs are in the list but excluded (no pair uses them).
Fabric HgxFabric() {
  const topology::HostTopology host = HgxHost();
  Fabric f;
  for (const topology::PciDevice& d : host.pci) {
    if (!d.is_rdma()) continue;
    FabricNic n;
    n.pci_address = d.address;
    n.rdma_device = d.rdma_devices.front();
    n.netdev = d.netdevs.empty() ? "" : d.netdevs.front();
    n.numa_node = d.numa_node;
    n.link_layer = d.class_id == 0x0207 ? "InfiniBand" : "Ethernet";
    if (d.class_id != 0x0207) n.excluded = "storage/management NIC";
    f.nics.push_back(n);
  }
  const char* gpus[] = {"0000:1b:00.0", "0000:43:00.0", "0000:52:00.0", "0000:61:00.0",
                        "0000:9d:00.0", "0000:c3:00.0", "0000:d1:00.0", "0000:df:00.0"};
  const char* nics[] = {"mlx5_0", "mlx5_3", "mlx5_4",  "mlx5_5",
                        "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"};
  for (int i = 0; i < 8; ++i) {
    GpuNicPair p;
    p.gpu_address = gpus[i];
    p.gpu_index = i;
    for (size_t k = 0; k < f.nics.size(); ++k)
      if (f.nics[k].rdma_device == nics[i]) p.nic = static_cast<int>(k);
    f.gpus.push_back(gpus[i]);
    f.pairs.push_back(p);
  }
  return f;
}

const char* kRailNics[] = {"0000:18:00.0", "0000:40:00.0", "0000:4f:00.0", "0000:5e:00.0",
                           "0000:9a:00.0", "0000:c0:00.0", "0000:ce:00.0", "0000:dc:00.0"};
const char* kRailNetdevs[] = {"ibp24s0",  "ibp64s0",  "ibp79s0",  "ibp94s0",
                              "ibp154s0", "ibp192s0", "ibp206s0", "ibp220s0"};

TEST(SriovDevicePluginConfig, OneRdmaResourcePerRail) {
  const Json doc = Json::parse(RenderSriovDevicePluginConfig(HgxHost(), HgxFabric(), {}));
  ASSERT_EQ(doc.size(), 1u);
  const Json& list = doc.at("resourceList");
  ASSERT_EQ(list.size(), 8u);
  for (int k = 0; k < 8; ++k) {
    SCOPED_TRACE(k);
    const Json& r = list[k];
    EXPECT_EQ(r.at("resourceName"), "rdma_rail" + std::to_string(k));
    EXPECT_EQ(r.at("resourcePrefix"), "nvidia.com");
    EXPECT_EQ(r.at("deviceType"), "netDevice");
    ASSERT_TRUE(r.at("selectors").is_array());
    ASSERT_EQ(r.at("selectors").size(), 1u);
    const Json& s = r.at("selectors")[0];
    EXPECT_EQ(s.at("vendors"), Json::array({"15b3"}));
    EXPECT_EQ(s.at("devices"), Json::array({"101e"}));  // ConnectX-7 PF 1021 -> VF 101e
    EXPECT_EQ(s.at("rootDevices"), Json::array({kRailNics[k]}));
    EXPECT_EQ(s.at("linkTypes"), Json::array({"infiniband"}));
    EXPECT_EQ(s.at("isRdma"), true);
    EXPECT_FALSE(s.contains("pfNames"));
  }
}

TEST(SriovDevicePluginConfig, OptionsAndVfsFromTheTopology) {
  topology::HostTopology host = HgxHost();
  topology::PciDevice vf = *host.FindPci("0000:18:00.0");
  vf.address = "0000:18:00.1";
  vf.device_id = 0xabcd;  // a VF the topology shows wins over the built-in table
  vf.physfn = "0000:18:00.0";
  host.pci.push_back(vf);
  NetworkConfigOptions o;
  o.resource_prefix = "example.com";
  o.rail_name = "gpu%d_nic";
  const Json doc = Json::parse(RenderSriovDevicePluginConfig(host, HgxFabric(), o));
  EXPECT_EQ(doc["resourceList"][0]["resourceName"], "gpu0_nic");
  EXPECT_EQ(doc["resourceList"][7]["resourceName"], "gpu7_nic");
  EXPECT_EQ(doc["resourceList"][0]["resourcePrefix"], "example.com");
  EXPECT_EQ(doc["resourceList"][0]["selectors"][0]["devices"], Json::array({"abcd"}));
  EXPECT_EQ(doc["resourceList"][1]["selectors"][0]["devices"], Json::array({"101e"}));
}

TEST(SriovDevicePluginConfig, VfInUseIsSelectedByAddressAndUnknownPfHasNoDevices) {
  topology::HostTopology host = HgxHost();
  topology::PciDevice* pf = const_cast<topology::PciDevice*>(host.FindPci("0000:40:00.0"));
  pf->device_id = 0x9999;  // not in the PF -> VF table
  Fabric f = HgxFabric();
  for (FabricNic& n : f.nics)
    if (n.pci_address == "0000:18:00.0") n.is_vf = true;
  const Json doc = Json::parse(RenderSriovDevicePluginConfig(host, f, {}));
  const Json& s0 = doc["resourceList"][0]["selectors"][0];
  EXPECT_EQ(s0["pciAddresses"], Json::array({"0000:18:00.0"}));
  EXPECT_FALSE(s0.contains("rootDevices"));
  const Json& s1 = doc["resourceList"][1]["selectors"][0];
  EXPECT_FALSE(s1.contains("devices"));
  EXPECT_EQ(s1["rootDevices"], Json::array({"0000:40:00.0"}));
}

TEST(RdmaSharedDevicePluginConfig, RailsByIfNameThenPerNuma) {
  NetworkConfigOptions o;
  o.rdma_hca_max = 8;
  const Json doc = Json::parse(RenderRdmaSharedDevicePluginConfig(HgxFabric(), o));
  ASSERT_EQ(doc.size(), 1u);
  const Json& list = doc.at("configList");
  ASSERT_EQ(list.size(), 10u);
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(list[k].at("resourceName"), "rdma_rail" + std::to_string(k));
    EXPECT_EQ(list[k].at("resourcePrefix"), "rdma");
    EXPECT_EQ(list[k].at("rdmaHcaMax"), 8);
    EXPECT_EQ(list[k].at("selectors"), Json({{"ifNames", {kRailNetdevs[k]}}}));
  }
  EXPECT_EQ(list[8].at("resourceName"), "rdma_numa0");
  EXPECT_EQ(list[8].at("selectors").at("ifNames"),
            Json::array({"ibp24s0", "ibp64s0", "ibp79s0", "ibp94s0"}));
  EXPECT_EQ(list[9].at("resourceName"), "rdma_numa1");
  EXPECT_EQ(list[9].at("selectors").at("ifNames"),
            Json::array({"ibp154s0", "ibp192s0", "ibp206s0", "ibp220s0"}));
  o.per_numa = false;
  EXPECT_EQ(Json::parse(RenderRdmaSharedDevicePluginConfig(HgxFabric(), o))["configList"].size(),
            8u);
}

TEST(RdmaSharedDevicePluginConfig, NicWithoutNetdevIsLeftOutAndNoted) {
  Fabric f = HgxFabric();
  f.nics[f.pairs[2].nic].netdev = "";
  const Json doc = Json::parse(RenderRdmaSharedDevicePluginConfig(f, {}));
  EXPECT_EQ(doc["configList"].size(), 9u);
  for (const Json& e : doc["configList"]) EXPECT_NE(e["resourceName"], "rdma_rail2");
  EXPECT_THAT(NetworkConfigNotes(HgxHost(), f),
              ::testing::Contains(HasSubstr("no netdev on mlx5_4")));
}

TEST(NicClusterPolicy, EmbedsBothConfigsAndNvIpam) {
  NetworkConfigOptions o;
  const std::string text = RenderNicClusterPolicy(HgxHost(), HgxFabric(), o);
  EXPECT_EQ(text.rfind("# Generated by accel fabric netconf", 0), 0u);
  const YAML::Node doc = YAML::Load(text);
  EXPECT_EQ(doc["apiVersion"].as<std::string>(), "mellanox.com/v1alpha1");
  EXPECT_EQ(doc["kind"].as<std::string>(), "NicClusterPolicy");
  EXPECT_EQ(doc["metadata"]["name"].as<std::string>(), "nic-cluster-policy");
  const YAML::Node spec = doc["spec"];
  const YAML::Node rdma = spec["rdmaSharedDevicePlugin"];
  EXPECT_EQ(rdma["image"].as<std::string>(), "k8s-rdma-shared-dev-plugin");
  EXPECT_EQ(rdma["repository"].as<std::string>(), "nvcr.io/nvidia/mellanox");
  EXPECT_EQ(rdma["version"].as<std::string>(), o.version);
  EXPECT_EQ(rdma["config"].as<std::string>(), RenderRdmaSharedDevicePluginConfig(HgxFabric(), o));
  const YAML::Node sriov = spec["sriovDevicePlugin"];
  EXPECT_EQ(sriov["image"].as<std::string>(), "sriov-network-device-plugin");
  EXPECT_EQ(sriov["config"].as<std::string>(),
            RenderSriovDevicePluginConfig(HgxHost(), HgxFabric(), o));
  EXPECT_NO_THROW(Json::parse(sriov["config"].as<std::string>()));
  const YAML::Node ipam = spec["nvIpam"];
  EXPECT_EQ(ipam["image"].as<std::string>(), "nvidia-k8s-ipam");
  EXPECT_EQ(ipam["enableWebhook"].as<bool>(), false);
  EXPECT_FALSE(spec["secondaryNetwork"]) << "no Whereabouts (gone since v25.10), no other network";
  // The configs are readable blocks, not one escaped line.
  EXPECT_THAT(text, HasSubstr("    config: |\n      {\n"));
}

TEST(NetworkConfigs, NotesAndRailNames) {
  const std::vector<std::string> notes = NetworkConfigNotes(HgxHost(), HgxFabric());
  ASSERT_EQ(notes.size(), 1u);  // the fixture's NICs can do SR-IOV but have no VFs yet
  EXPECT_THAT(notes[0], HasSubstr("no VFs yet on mlx5_0, mlx5_3"));
  EXPECT_THAT(RailResourceNames(HgxFabric(), {}),
              ElementsAre("rdma_rail0", "rdma_rail1", "rdma_rail2", "rdma_rail3", "rdma_rail4",
                          "rdma_rail5", "rdma_rail6", "rdma_rail7"));
  NetworkConfigOptions o;
  o.rail_name = "nic";
  EXPECT_EQ(RailResourceNames(HgxFabric(), o)[3], "nic3");
  Fabric none = HgxFabric();
  for (GpuNicPair& p : none.pairs) p.nic = -1;
  EXPECT_THAT(NetworkConfigNotes(HgxHost(), none), ElementsAre(HasSubstr("no NIC is paired")));
  EXPECT_EQ(Json::parse(RenderSriovDevicePluginConfig(HgxHost(), none, {}))["resourceList"].size(),
            0u);
  EXPECT_NO_THROW(YAML::Load(RenderNicClusterPolicy(HgxHost(), none, {})));
}

}  // namespace
}  // namespace accel::fabric
