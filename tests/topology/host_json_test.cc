#include "topology/host_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "topology/sample_host.h"

namespace accel::topology {
namespace host_json_test {

using ::testing::HasSubstr;
using Json = nlohmann::ordered_json;

// The example of docs/schemas.md, completed so its PCI tree is whole (it elides the switch).
constexpr const char* kDocExample = R"({
  "schema": "accel.host/v1",
  "hostname": "hgx-h100",
  "source": "fixture: 2-socket HGX H100 8-GPU, hand written",
  "packages": [
    {"id": 0, "cpus": "0-55,112-167", "model": "Intel(R) Xeon(R) Platinum 8480+"}
  ],
  "numa_nodes": [
    {
      "id": 0,
      "package": 0,
      "cpus": "0-55,112-167",
      "cores": ["0,112", "1-55,113-167"],
      "memory_kib": 1056964608,
      "hugepages": [
        {"size_kib": 4, "total": 130023424, "free": 120000000},
        {"size_kib": 2048, "total": 0, "free": 0},
        {"size_kib": 1048576, "total": 512, "free": 512}
      ],
      "distances": []
    }
  ],
  "pci": [
    {"address": "pci0000:15", "parent": "", "role": "host_bridge"},
    {"address": "0000:15:01.0", "parent": "pci0000:15", "role": "bridge",
     "vendor_id": "8086", "device_id": "352a", "class": "0604", "numa_node": 0, "link_gbps": 63.015},
    {"address": "0000:18:00.0", "parent": "0000:15:01.0", "role": "gpu",
     "vendor_id": "10de", "device_id": "2330", "class": "0302", "numa_node": 0, "link_gbps": 63.015,
     "name": "NVIDIA H100 80GB HBM3", "os_devices": ["nvml0"]},
    {"address": "0000:19:00.0", "parent": "0000:15:01.0", "role": "nic",
     "vendor_id": "15b3", "device_id": "1021", "class": "0207", "numa_node": 0, "link_gbps": 63.015,
     "name": "MT2910 Family [ConnectX-7]", "rdma_devices": ["mlx5_0"], "netdevs": ["ibp25s0"],
     "sriov_total_vfs": 16, "sriov_num_vfs": 0}
  ]
}
)";

TEST(HostJson, DocumentedLayoutRoundTripsByteForByte) {
  HostTopology host = HostFromJson(kDocExample, "doc.json");
  EXPECT_EQ(ToJson(host), kDocExample);
  EXPECT_EQ(host.hostname, "hgx-h100");
  ASSERT_EQ(host.pci.size(), 4u);
  EXPECT_EQ(host.pci[2].role, PciRole::kGpu);
  EXPECT_DOUBLE_EQ(host.pci[2].link_gbps, 63.015);
  EXPECT_EQ(host.pci[3].sriov_total_vfs, 16);
  EXPECT_EQ(host.numa_nodes[0].pages[2].size_kib, 1048576u);
}

TEST(HostJson, SampleHostRoundTripsExactly) {
  HostTopology host = testing::SampleHost();
  ASSERT_EQ(CheckInvariants(host), "");
  std::string once = ToJson(host);
  HostTopology back = HostFromJson(once, "sample.json");
  EXPECT_EQ(ToJson(back), once);
  // Field by field for what the text does not show at a glance.
  EXPECT_EQ(back.source, host.source);
  EXPECT_EQ(back.packages[1].model, "");
  EXPECT_EQ(back.numa_nodes[1].cores, host.numa_nodes[1].cores);
  EXPECT_EQ(back.pci[4].physfn, "0000:19:00.0");
  EXPECT_EQ(back.pci[6].numa_node, -1);
  EXPECT_EQ(back.pci[2].os_devices, (std::vector<std::string>{"nvml0", "card1"}));
  EXPECT_DOUBLE_EQ(back.pci[3].link_gbps, 0.1);
}

TEST(HostJson, OptionalFieldsOnlyWhenSet) {
  std::string json = ToJson(testing::SampleHost());
  EXPECT_THAT(json, HasSubstr("{\"id\": 1, \"cpus\": \"4-7\"}"));  // no empty model
  EXPECT_THAT(json, HasSubstr("\"link_gbps\": 0}"));               // integral: no ".0"
  EXPECT_THAT(json, HasSubstr("{\"address\": \"pci0000:80\", \"parent\": \"\", "
                              "\"role\": \"host_bridge\"},"));
  EXPECT_THAT(json, HasSubstr("\"sriov_total_vfs\": 16, \"sriov_num_vfs\": 1"));
  EXPECT_THAT(json, ::testing::Not(HasSubstr("\"physfn\": \"\"")));
  EXPECT_EQ(json.back(), '\n');
}

TEST(HostJson, LinkSpeedsRoundTripForAwkwardDoubles) {
  for (double v : {15.753846, 0.1 + 0.2, 1e-7, 123456.789, 3.0}) {
    HostTopology host = testing::SampleHost();
    host.pci[1].link_gbps = v;
    std::string once = ToJson(host);
    HostTopology back = HostFromJson(once, "x.json");
    EXPECT_EQ(back.pci[1].link_gbps, v);
    EXPECT_EQ(ToJson(back), once);
  }
}

TEST(HostJson, EmptyHostWritesEmptyArrays) {
  HostTopology host;
  host.hostname = "empty";
  std::string json = ToJson(host);
  EXPECT_THAT(json, HasSubstr("\"packages\": [],\n  \"numa_nodes\": [],\n  \"pci\": []\n}"));
  EXPECT_EQ(ToJson(HostFromJson(json, "e.json")), json);
}

TEST(HostJson, AcceptsMissingDefaultsAndAnyKeyOrder) {
  Json doc = Json::parse(ToJson(testing::SampleHost()));
  doc.erase("source");
  doc["numa_nodes"][0].erase("distances");
  doc["numa_nodes"][1].erase("distances");
  doc["numa_nodes"][0].erase("package");
  doc["pci"][2].erase("numa_node");
  doc["pci"][2].erase("link_gbps");
  Json reordered;
  for (const char* key : {"pci", "numa_nodes", "packages", "hostname", "schema"})
    reordered[key] = doc[key];
  HostTopology host = HostFromJson(reordered.dump(), "r.json");
  EXPECT_EQ(host.source, "");
  EXPECT_TRUE(host.numa_nodes[0].distances.empty());
  EXPECT_EQ(host.numa_nodes[0].package, -1);
  EXPECT_EQ(host.pci[2].numa_node, -1);
  EXPECT_EQ(host.pci[2].link_gbps, 0);
}

// Applies `mutate` to the sample document and expects an InputError whose field and message
// contain the given text.
void ExpectError(const std::function<void(Json&)>& mutate, const std::string& field,
                 const std::string& message) {
  Json doc = Json::parse(ToJson(testing::SampleHost()));
  mutate(doc);
  try {
    HostFromJson(doc.dump(2), "host.json");
    ADD_FAILURE() << "accepted; expected an error at " << field;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "host.json");
    EXPECT_THAT(e.field(), HasSubstr(field));
    EXPECT_THAT(std::string(e.what()), HasSubstr(message));
  }
}

TEST(HostJsonErrors, SyntaxAndTopLevel) {
  for (const char* text : {"", "{", "{\"schema\": }", "[1, 2]", "\"host\"", "{} trailing"}) {
    try {
      HostFromJson(text, "bad.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      // The file, and the line:column where the JSON went wrong when it is not JSON at all.
      EXPECT_THAT(e.where(), ::testing::StartsWith("bad.json"));
      EXPECT_THAT(e.what(), HasSubstr("bad.json"));
    }
  }
  EXPECT_THROW(HostFromJson("{", "x"), InputError);
  ExpectError([](Json& d) { d.erase("schema"); }, "schema", "is missing");
  ExpectError([](Json& d) { d["schema"] = "accel.host/v2"; }, "schema", "accel.host/v1");
  ExpectError([](Json& d) { d["schema"] = 1; }, "schema", "expected a string, got an integer");
  ExpectError([](Json& d) { d.erase("hostname"); }, "hostname", "is missing");
  ExpectError([](Json& d) { d["hostname"] = ""; }, "", "hostname: is empty");
  ExpectError([](Json& d) { d["source"] = nullptr; }, "source", "got null");
  ExpectError([](Json& d) { d["hostnmae"] = "typo"; }, "hostnmae", "unknown key");
  ExpectError([](Json& d) { d["packages"] = Json::object(); }, "packages", "expected an array");
  ExpectError([](Json& d) { d.erase("pci"); }, "pci", "is missing");
}

TEST(HostJsonErrors, Packages) {
  ExpectError([](Json& d) { d["packages"][0]["id"] = -1; }, "packages[0].id", "out of range");
  ExpectError([](Json& d) { d["packages"][0]["id"] = 1.5; }, "packages[0].id",
              "expected an integer, got a fractional number");
  ExpectError([](Json& d) { d["packages"][1]["id"] = 0; }, "", "unique and ascending");
  ExpectError([](Json& d) { d["packages"][1]["cpus"] = "4-x"; }, "packages[1].cpus", "'4-x'");
  ExpectError([](Json& d) { d["packages"][1]["socket"] = 1; }, "packages[1].socket",
              "known here: id, cpus, model");
  ExpectError([](Json& d) { d["packages"][0].erase("cpus"); }, "packages[0].cpus", "missing");
}

TEST(HostJsonErrors, NumaNodes) {
  ExpectError([](Json& d) { d["numa_nodes"][1]["cpus"] = "3-7"; }, "",
              "CPU 3 is in both numa_nodes[0] (node 0) and numa_nodes[1] (node 1)");
  ExpectError([](Json& d) { d["numa_nodes"][1]["cpus"] = "0-7,^2"; }, "numa_nodes[1].cpus",
              "exclusion");
  ExpectError([](Json& d) { d["numa_nodes"][0]["cores"] = "0,2"; }, "numa_nodes[0].cores",
              "expected an array");
  ExpectError([](Json& d) { d["numa_nodes"][0]["cores"][1] = 7; }, "numa_nodes[0].cores[1]",
              "expected a string");
  ExpectError([](Json& d) { d["numa_nodes"][0]["cores"] = Json::array({"0,2"}); }, "",
              "numa_nodes[0] (node 0).cores: the sibling sets cover \"0,2\"");
  ExpectError([](Json& d) { d["numa_nodes"][0]["memory_kib"] = -5; }, "numa_nodes[0].memory_kib",
              "is negative");
  ExpectError([](Json& d) { d["numa_nodes"][0]["hugepages"][1]["size_kib"] = "2M"; },
              "numa_nodes[0].hugepages[1].size_kib", "expected a non-negative integer");
  ExpectError([](Json& d) { d["numa_nodes"][0]["hugepages"][1]["free"] = 1000; }, "", "exceed");
  ExpectError([](Json& d) { d["numa_nodes"][0]["hugepages"][1]["size_kib"] = 4; }, "",
              "ascending by size");
  ExpectError([](Json& d) { d["numa_nodes"][0]["hugepages"][0]["count"] = 1; },
              "numa_nodes[0].hugepages[0].count", "unknown key");
  ExpectError([](Json& d) { d["numa_nodes"][1]["distances"] = Json::array({21}); }, "",
              "has 1 entries but the host has 2 nodes");
  ExpectError([](Json& d) { d["numa_nodes"][1]["distances"][0] = "21"; },
              "numa_nodes[1].distances[0]", "expected an integer");
  ExpectError([](Json& d) { d["numa_nodes"][1]["package"] = 7; }, "", "no package has id 7");
  ExpectError([](Json& d) { d["numa_nodes"][1]["id"] = 0; }, "", "unique and ascending");
  ExpectError([](Json& d) { d["numa_nodes"][0]["id"] = 1e12; }, "numa_nodes[0].id",
              "expected an integer");
  ExpectError([](Json& d) { d["numa_nodes"][0]["id"] = 5000000000; }, "numa_nodes[0].id",
              "out of range");
}

TEST(HostJsonErrors, Pci) {
  ExpectError([](Json& d) { d["pci"][2]["role"] = "tpu"; }, "pci[2].role",
              "\"tpu\" is not a PCI role");
  ExpectError([](Json& d) { d["pci"][2]["vendor_id"] = "10d"; }, "pci[2].vendor_id",
              "not 4 hex digits");
  ExpectError([](Json& d) { d["pci"][2]["class"] = 770; }, "pci[2].class", "expected a string");
  ExpectError([](Json& d) { d["pci"][2].erase("device_id"); }, "pci[2].device_id", "missing");
  ExpectError([](Json& d) { d["pci"][0]["vendor_id"] = "8086"; }, "pci[0].vendor_id",
              "does not apply to a host bridge");
  ExpectError([](Json& d) { d["pci"][2]["link_gbps"] = -1; }, "pci[2].link_gbps",
              "not a bandwidth");
  ExpectError([](Json& d) { d["pci"][2]["link_gbps"] = "fast"; }, "pci[2].link_gbps",
              "expected a number");
  ExpectError([](Json& d) { d["pci"][3]["rdma_devices"] = Json::array({1}); },
              "pci[3].rdma_devices[0]", "expected a string");
  ExpectError([](Json& d) { d["pci"][3]["netdevs"] = "ib0"; }, "pci[3].netdevs",
              "expected an array");
  ExpectError([](Json& d) { d["pci"][3]["sriov_num_vfs"] = -1; }, "pci[3].sriov_num_vfs",
              "out of range");
  ExpectError([](Json& d) { d["pci"][3]["sriov_num_vfs"] = 17; }, "", "exceed sriov_total_vfs 16");
  ExpectError([](Json& d) { d["pci"][4]["physfn"] = "0000:99:00.0"; }, "",
              "physfn: no PCI function has address");
  ExpectError([](Json& d) { d["pci"][2]["numa_node"] = 5; }, "", "no NUMA node has id 5");
  ExpectError([](Json& d) { d["pci"][3]["parent"] = "0000:18:00.0"; }, "",
              "is not a bridge or host bridge");
  ExpectError([](Json& d) { d["pci"][2]["parent"] = "0000:77:00.0"; }, "",
              "is not listed before it");
  ExpectError([](Json& d) { d["pci"][2]["parent"] = ""; }, "", "only host bridges");
  ExpectError([](Json& d) { d["pci"][3]["address"] = "0000:18:00.0"; }, "", "appears twice");
  ExpectError([](Json& d) { d["pci"][2]["address"] = "0000:18:00.8"; }, "", "is not a PCI address");
  ExpectError([](Json& d) { d["pci"][2]["address"] = "0000:1A:00.0"; }, "", "lower-case");
  ExpectError([](Json& d) { d["pci"][0]["address"] = "0000:15"; }, "", "root bus name");
  ExpectError([](Json& d) { d["pci"][2]["numa"] = 0; }, "pci[2].numa", "unknown key");
}

TEST(HostJsonErrors, MessageNamesFileFieldAndHint) {
  try {
    HostFromJson(R"({"schema": "accel.host/v1", "hostname": "h", "packages": [],
                     "numa_nodes": [], "pci": [], "extra": 1})",
                 "hosts/h.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "hosts/h.json: extra: unknown key (known here: schema, hostname, "
              "source, packages, numa_nodes, pci)");
  }
}

}  // namespace
}  // namespace accel::topology
