// ParseClaimAllocation: a resource.k8s.io/v1 ResourceClaim's allocation for our driver.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "dra/claim_allocation.h"

namespace accel::dra {
namespace claim_allocation_test {

using ::testing::HasSubstr;
using Json = nlohmann::json;

const ClaimRef kRef{"team-a", "uid-1", "train-0-gpus"};

Json Claim() {
  return Json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"namespace": "team-a", "name": "train-0-gpus", "uid": "uid-1"},
    "spec": {"devices": {"requests": [{"name": "gpu"}, {"name": "nic"}]}},
    "status": {"allocation": {
      "devices": {
        "results": [
          {"request": "gpu", "driver": "accel.io", "pool": "node-1", "device": "gpu-0"},
          {"request": "nic", "driver": "dra.net", "pool": "node-1", "device": "eth1"},
          {"request": "nic", "driver": "accel.io", "pool": "node-1", "device": "nic-0",
           "adminAccess": true, "shareID": "future-field"}
        ],
        "config": [
          {"source": "FromClass", "opaque": {"driver": "accel.io",
            "parameters": {"apiVersion": "accel.io/v1alpha1", "kind": "ClaimParameters",
                           "ncclSocketIfname": "eth9"}}},
          {"source": "FromClaim", "opaque": {"driver": "dra.net", "parameters": {"anything": 1}}},
          {"source": "FromClaim", "requests": ["gpu"], "opaque": {"driver": "accel.io",
            "parameters": {"ncclSocketIfname": "net1"}}}
        ]
      },
      "nodeSelector": {}
    }}
  })");
}

std::string FieldOf(const Json& claim, const ClaimRef& ref = kRef) {
  try {
    ParseClaimAllocation(claim, ref, "accel.io");
  } catch (const InputError& e) {
    return e.field() + ": " + e.problem();
  }
  return "no error";
}

TEST(ClaimAllocation, ReadsOurResultsAndSkipsOtherDrivers) {
  ClaimAllocation a = ParseClaimAllocation(Claim(), kRef, "accel.io");
  EXPECT_EQ(a.uid, "uid-1");
  EXPECT_EQ(a.namespace_, "team-a");
  EXPECT_EQ(a.name, "train-0-gpus");
  ASSERT_EQ(a.devices.size(), 2u);
  EXPECT_EQ(a.devices[0].request, "gpu");
  EXPECT_EQ(a.devices[0].driver, "accel.io");
  EXPECT_EQ(a.devices[0].pool, "node-1");
  EXPECT_EQ(a.devices[0].device, "gpu-0");
  EXPECT_FALSE(a.devices[0].admin_access);
  EXPECT_EQ(a.devices[1].device, "nic-0");
  EXPECT_TRUE(a.devices[1].admin_access);
  // The claim's own config comes after the class's and wins; dra.net's is not ours.
  EXPECT_EQ(a.parameters.socket_ifname, "net1");
  EXPECT_TRUE(a.parameters.nccl);
}

TEST(ClaimAllocation, TextAndEmptyUidFromTheKubelet) {
  ClaimAllocation a = ParseClaimAllocationText(Claim().dump(), ClaimRef{"team-a", "", "x"}, "accel.io");
  EXPECT_EQ(a.uid, "uid-1");
  EXPECT_THROW(ParseClaimAllocationText(std::string_view("{\"metadata\":"), kRef, "accel.io"),
               InputError);
  EXPECT_THROW(ParseClaimAllocationText(std::string_view(""), kRef, "accel.io"), InputError);
}

TEST(ClaimAllocation, NoDeviceOfOursIsAnEmptyList) {
  Json c = Claim();
  c["status"]["allocation"]["devices"].erase("config");
  ClaimAllocation a = ParseClaimAllocation(c, kRef, "other.example.com");
  EXPECT_TRUE(a.devices.empty());
  c["status"]["allocation"].erase("devices");
  EXPECT_TRUE(ParseClaimAllocation(c, kRef, "accel.io").devices.empty());
}

TEST(ClaimAllocation, NotAllocated) {
  Json c = Claim();
  c["status"].erase("allocation");
  EXPECT_THAT(FieldOf(c), HasSubstr("status.allocation: is missing: the claim is not allocated"));
  c.erase("status");
  EXPECT_THAT(FieldOf(c), HasSubstr("status.allocation: is missing"));
  c["status"] = nullptr;
  EXPECT_THAT(FieldOf(c), HasSubstr("status.allocation: is missing"));
}

TEST(ClaimAllocation, UidMismatchIsAStaleClaim) {
  ClaimRef stale = kRef;
  stale.uid = "uid-0";
  std::string e = FieldOf(Claim(), stale);
  EXPECT_THAT(e, HasSubstr("metadata.uid: is uid-1, not uid-0"));
  EXPECT_THAT(e, HasSubstr("re-created"));
}

TEST(ClaimAllocation, MalformedFieldsNameTheirPath) {
  EXPECT_THAT(FieldOf(Json::array()), HasSubstr("is not a JSON object"));
  Json c = Claim();
  c.erase("metadata");
  EXPECT_THAT(FieldOf(c), HasSubstr("metadata: is missing"));
  c = Claim();
  c["metadata"]["uid"] = 7;
  EXPECT_THAT(FieldOf(c), HasSubstr("metadata.uid: expected a string, got an integer"));
  c = Claim();
  c["status"]["allocation"]["devices"]["results"] = "gpu-0";
  EXPECT_THAT(FieldOf(c), HasSubstr("status.allocation.devices.results: expected an array, got a string"));
  c = Claim();
  c["status"]["allocation"]["devices"]["results"][2]["device"] = "";
  EXPECT_THAT(FieldOf(c), HasSubstr("status.allocation.devices.results[2].device: is empty"));
  c = Claim();
  c["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = "yes";
  EXPECT_THAT(FieldOf(c), HasSubstr("results[0].adminAccess: expected true or false, got a string"));
  c = Claim();
  c["status"]["allocation"]["devices"]["results"][0].erase("driver");
  EXPECT_THAT(FieldOf(c), HasSubstr("results[0].driver: is missing"));
  c = Claim();
  c["status"]["allocation"]["devices"]["results"][1] = 3;
  EXPECT_THAT(FieldOf(c), HasSubstr("results[1]: expected an object, got an integer"));
  c = Claim();
  c["status"]["allocation"] = "yes";
  EXPECT_THAT(FieldOf(c), HasSubstr("status.allocation: expected an object, got a string"));
}

TEST(ClaimAllocation, OurParametersAreChecked) {
  Json c = Claim();
  auto& params = c["status"]["allocation"]["devices"]["config"][2]["opaque"]["parameters"];
  params = {{"ncclSocketIfnam", "eth0"}};
  EXPECT_THAT(FieldOf(c), HasSubstr("config[2].opaque.parameters.ncclSocketIfnam: unknown key"));
  params = {{"ncclSocketIfname", "eth0; rm -rf /"}};
  EXPECT_THAT(FieldOf(c), HasSubstr("ncclSocketIfname: has a character"));
  params = {{"apiVersion", "accel.io/v2"}};
  EXPECT_THAT(FieldOf(c), HasSubstr("apiVersion: is not \"accel.io/v1alpha1\""));
  params = {{"nccl", false}, {"ncclSocketIfname", ""}};
  ClaimAllocation a = ParseClaimAllocation(c, kRef, "accel.io");
  EXPECT_FALSE(a.parameters.nccl);
  EXPECT_EQ(a.parameters.socket_ifname, "");  // set, to nothing: NCCL_SOCKET_IFNAME unset
  params = {{"nccl", "no"}};
  EXPECT_THAT(FieldOf(c), HasSubstr("nccl: expected true or false, got a string"));
  params = "text";
  EXPECT_THAT(FieldOf(c), HasSubstr("parameters: expected an object, got a string"));
}

}  // namespace
}  // namespace accel::dra
