#include "dra/resource_slices.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/strings.h"
#include "dra/device_names.h"
#include "dra/inventory_fixtures.h"
#include "support/crd_validate.h"

namespace accel::dra {
namespace resource_slices_test {

using nlohmann::json;

// Checks what the API server would: one-of devices/sharedCounters, the per-slice limits, the
// pool fields, and that every consumed counter set exists in the pool.
void ExpectValidPool(const Inventory& inv, const std::vector<json>& slices, int64_t generation) {
  ASSERT_FALSE(slices.empty());
  std::set<std::string> names, devices, sets;
  std::vector<std::pair<std::string, std::string>> consumed;  // device, set
  size_t device_count = 0;
  for (const json& s : slices) {
    EXPECT_EQ(s["apiVersion"], "resource.k8s.io/v1");
    EXPECT_EQ(s["kind"], "ResourceSlice");
    const std::string name = s["metadata"]["name"];
    EXPECT_TRUE(IsDnsSubdomain(name)) << name;
    EXPECT_TRUE(names.insert(name).second) << name;
    const json& spec = s["spec"];
    EXPECT_EQ(spec["driver"], inv.driver);
    EXPECT_EQ(spec["nodeName"], inv.node_name);
    EXPECT_EQ(spec["pool"]["name"], inv.node_name);
    EXPECT_EQ(spec["pool"]["generation"], generation);
    EXPECT_EQ(spec["pool"]["resourceSliceCount"], static_cast<int64_t>(slices.size()));
    EXPECT_NE(spec.contains("devices"), spec.contains("sharedCounters")) << name;
    if (spec.contains("sharedCounters")) {
      EXPECT_LE(spec["sharedCounters"].size(), kMaxCounterSetsPerSlice);
      for (const json& set : spec["sharedCounters"]) {
        EXPECT_TRUE(sets.insert(set["name"].get<std::string>()).second);
        EXPECT_LE(set["counters"].size(), 32u);
      }
      continue;
    }
    bool uses_counters = false;
    for (const json& d : spec["devices"]) {
      EXPECT_TRUE(devices.insert(d["name"].get<std::string>()).second) << d["name"];
      ++device_count;
      if (d.contains("consumesCounters")) {
        uses_counters = true;
        for (const json& c : d["consumesCounters"]) consumed.emplace_back(d["name"], c["counterSet"]);
      }
      EXPECT_LE(d.value("attributes", json::object()).size() +
                    d.value("capacity", json::object()).size(),
                32u);
    }
    EXPECT_LE(spec["devices"].size(),
              uses_counters ? kMaxDevicesPerSliceWithCounters : kMaxDevicesPerSlice)
        << name;
  }
  EXPECT_EQ(device_count, inv.devices.size());
  for (const auto& [device, set] : consumed) EXPECT_TRUE(sets.count(set)) << device << " " << set;
}

TEST(ResourceSlices, HgxPoolIsOneCounterSliceAndOneDeviceSlice) {
  const Inventory inv = testing::Hgx();
  const std::vector<json> slices = BuildResourceSlices(inv, 7);
  ExpectValidPool(inv, slices, 7);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0]["metadata"]["name"], "node-a-accel.io-0");
  EXPECT_EQ(slices[1]["metadata"]["name"], "node-a-accel.io-1");
  EXPECT_EQ(slices[0]["spec"]["sharedCounters"].size(), 4u);
  EXPECT_EQ(slices[0]["metadata"]["labels"][kSliceManagedByLabel], "accel");

  // The device JSON as the API expects it.
  const json& gpu0 = slices[1]["spec"]["devices"][0];
  EXPECT_EQ(gpu0["name"], "gpu-0");
  EXPECT_EQ(gpu0["attributes"]["type"], json({{"string", "gpu"}}));
  EXPECT_EQ(gpu0["attributes"]["rail"], json({{"int", 0}}));
  EXPECT_EQ(gpu0["attributes"]["migEnabled"], json({{"bool", false}}));
  EXPECT_EQ(gpu0["attributes"]["driverVersion"], json({{"version", "580.95.5"}}));
  EXPECT_EQ(gpu0["attributes"]["resource.kubernetes.io/pcieRoot"], json({{"string", "pci0000:15"}}));
  EXPECT_EQ(gpu0["capacity"]["memory"], json({{"value", "81559Mi"}}));
  EXPECT_FALSE(gpu0.contains("consumesCounters"));
  bool found_mig = false;
  for (const json& d : slices[1]["spec"]["devices"]) {
    if (d["attributes"]["type"]["string"] == "mig") {
      found_mig = true;
      ASSERT_EQ(d["consumesCounters"].size(), 1u);
      EXPECT_TRUE(d["consumesCounters"][0]["counters"].contains("memory-slices"));
      EXPECT_TRUE(d["consumesCounters"][0]["counters"]["memory-slices"].contains("value"));
    }
  }
  EXPECT_TRUE(found_mig);
}

TEST(ResourceSlices, BigInventorySplitsWithinTheLimits) {
  const Inventory inv = testing::BigHgx(16);  // 64 counter-consuming + 140 NIC devices
  const std::vector<json> slices = BuildResourceSlices(inv, 1);
  ExpectValidPool(inv, slices, 1);
  // 8 counter sets (one slice), 64 GPU/MIG devices (one slice), 140 NICs (128 + 12).
  ASSERT_EQ(slices.size(), 4u);
  EXPECT_EQ(slices[1]["spec"]["devices"].size(), 64u);
  EXPECT_EQ(slices[2]["spec"]["devices"].size(), 128u);
  EXPECT_EQ(slices[3]["spec"]["devices"].size(), 12u);
}

TEST(ResourceSlices, MoreThanEightCounterSetsTakeSeveralSlices) {
  Inventory inv;
  inv.driver = "accel.io";
  inv.node_name = "n";
  for (int i = 0; i < 10; ++i) inv.counter_sets.push_back({GpuCounterSetName(i), {{"memory", "1Gi"}}});
  for (int i = 0; i < 70; ++i) {
    DraDevice d;
    d.name = "gpu-" + std::to_string(i % 10) + "-x-" + std::to_string(i);
    d.consumes_counters.push_back({GpuCounterSetName(i % 10), {{"memory", "1Mi"}}});
    inv.devices.push_back(d);
  }
  const std::vector<json> slices = BuildResourceSlices(inv, 0);
  ExpectValidPool(inv, slices, 0);
  ASSERT_EQ(slices.size(), 4u);  // 8 + 2 sets, 64 + 6 devices
}

TEST(ResourceSlices, EmptyInventoryStillPublishesThePool) {
  Inventory inv;
  inv.driver = "accel.io";
  inv.node_name = "n";
  const std::vector<json> slices = BuildResourceSlices(inv, 2);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_TRUE(slices[0]["spec"]["devices"].empty());
  EXPECT_EQ(slices[0]["spec"]["pool"]["resourceSliceCount"], 1);
}

TEST(ResourceSlices, NamesAreValidAndStableForLongNodeNames) {
  const std::string node = std::string(60, 'a') + "." + std::string(60, 'b') + "." +
                           std::string(60, 'c') + "." + std::string(60, 'd');
  ASSERT_TRUE(IsDnsSubdomain(node));
  std::set<std::string> names;
  for (int n = 0; n < 12; ++n) {
    const std::string name = ResourceSliceName(node, "accel.io", n);
    EXPECT_TRUE(IsDnsSubdomain(name)) << name;
    EXPECT_EQ(name, ResourceSliceName(node, "accel.io", n));
    names.insert(name);
  }
  EXPECT_EQ(names.size(), 12u);
  EXPECT_NE(ResourceSliceName(node, "accel.io", 0), ResourceSliceName(node + "x", "accel.io", 0));
  EXPECT_EQ(ResourceSliceName("node-a", "accel.io", 3), "node-a-accel.io-3");
}

TEST(ResourceSlices, YamlAndListForms) {
  const Inventory inv = testing::Gaudi();
  const std::vector<json> slices = BuildResourceSlices(inv, 1);
  const std::string yaml = ResourceSlicesYaml(slices);
  EXPECT_EQ(yaml.rfind("apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\n", 0), 0u) << yaml;
  EXPECT_NE(yaml.find("\"0000:19:00.0\""), std::string::npos);  // quoted: not a base-60 number
  const json list = ResourceSliceList(slices);
  EXPECT_EQ(list["kind"], "ResourceSliceList");
  EXPECT_EQ(list["items"].size(), slices.size());
}

TEST(ResourceSlices, EverySliceValidatesAgainstTheV1OpenApi) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  const std::vector<std::pair<std::string, Inventory>> cases = {
      {"hgx", testing::Hgx()},  {"amd", testing::Amd()},       {"gaudi", testing::Gaudi()},
      {"vm", testing::VmGuest()}, {"big", testing::BigHgx(16)}};
  for (const auto& [label, inv] : cases) {
    const test_support::CrdResult r =
        test_support::ValidateObjects(ResourceSlicesYaml(BuildResourceSlices(inv, 1)),
                                      "dra-slices-" + label);
    EXPECT_EQ(r.exit_code, 0) << label << ": " << r.output;
  }
}

}  // namespace
}  // namespace accel::dra
