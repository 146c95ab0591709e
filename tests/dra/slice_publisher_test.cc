#include "dra/slice_publisher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "support/fake_apiserver.h"

namespace accel::dra {
namespace slice_publisher_test {

using nlohmann::json;
using test_support::FakeApiServer;

const std::string kSlices = "/apis/resource.k8s.io/v1/resourceslices";

kubeapi::KubeClientOptions Fast() {
  kubeapi::KubeClientOptions o;
  o.attempts = 2;
  o.initial_backoff = std::chrono::milliseconds(0);
  o.sleep = [](std::chrono::milliseconds) {};
  return o;
}

json Slice(const std::string& name, const std::vector<std::string>& devices) {
  json d = json::array();
  for (const std::string& n : devices) d.push_back({{"name", n}, {"attributes", {{"accel.io/rail", {{"int", 0}}}}}});
  return {{"metadata", {{"name", name}}},
          {"spec", {{"driver", "accel.io"}, {"nodeName", "n1"}, {"pool", {{"name", "n1"}, {"generation", 0}, {"resourceSliceCount", 2}}},
                    {"devices", d}}}};
}

class SlicePublisherTest : public ::testing::Test {
 protected:
  SlicePublisherTest() : client_(server_.Config(), Fast()), publisher_(&client_, "accel.io", "n1", [this](const std::string& l) { logs_.push_back(l); }) {
    server_.Put("/api/v1/nodes/n1", {{"apiVersion", "v1"}, {"kind", "Node"}});
    node_uid_ = server_.Get("/api/v1/nodes/n1")->at("metadata").at("uid");
  }

  FakeApiServer server_;
  kubeapi::KubeClient client_;
  std::vector<std::string> logs_;
  SlicePublisher publisher_;
  std::string node_uid_;
};

TEST_F(SlicePublisherTest, FirstPublishCreatesOwnedSlicesAtGenerationOne) {
  const PublishResult r = publisher_.Publish({Slice("n1-accel.io-0", {"gpu-0"}), Slice("n1-accel.io-1", {"nic-0"})});
  EXPECT_EQ(r.created, 2);
  EXPECT_EQ(r.updated + r.deleted, 0);
  EXPECT_EQ(r.generation, 1);
  EXPECT_TRUE(r.owner_set);
  const auto stored = server_.List(kSlices);
  ASSERT_EQ(stored.size(), 2u);
  for (const json& s : stored) {
    EXPECT_EQ(s["apiVersion"], "resource.k8s.io/v1");
    EXPECT_EQ(s["kind"], "ResourceSlice");
    EXPECT_EQ(s["spec"]["pool"]["generation"], 1);
    EXPECT_EQ(s["spec"]["pool"]["resourceSliceCount"], 2);
    const json& owner = s["metadata"]["ownerReferences"][0];
    EXPECT_EQ(owner["kind"], "Node");
    EXPECT_EQ(owner["apiVersion"], "v1");
    EXPECT_EQ(owner["name"], "n1");
    EXPECT_EQ(owner["uid"], node_uid_);
  }
  // It listed only its own node's and driver's slices.
  const auto lists = server_.requests("GET", kSlices);
  ASSERT_EQ(lists.size(), 1u);
  EXPECT_EQ(lists[0].query.find("fieldSelector")->second, "spec.nodeName=n1,spec.driver=accel.io");
  EXPECT_TRUE(logs_.empty());
}

TEST_F(SlicePublisherTest, UnchangedPublishWritesNothing) {
  const std::vector<json> desired = {Slice("s0", {"gpu-0"}), Slice("s1", {"nic-0"})};
  publisher_.Publish(desired);
  server_.ClearRequests();
  const PublishResult r = publisher_.Publish(desired);
  EXPECT_EQ(r.created + r.updated + r.deleted, 0);
  EXPECT_EQ(r.unchanged, 2);
  EXPECT_EQ(r.generation, 1);
  EXPECT_TRUE(server_.writes().empty());
  // The Node was read once, on the first publish.
  EXPECT_TRUE(server_.requests("GET", "/api/v1/nodes").empty());
}

TEST_F(SlicePublisherTest, ChangedDeviceBumpsGenerationAndDeletesStaleSlices) {
  publisher_.Publish({Slice("s0", {"gpu-0", "gpu-1"}), Slice("s1", {"nic-0"})});
  // Another driver's slice and another node's slice on the same server stay untouched.
  json foreign = Slice("other", {"x"});
  foreign["spec"]["driver"] = "gpu.nvidia.com";
  server_.Put(kSlices + "/other", foreign);
  json other_node = Slice("n2-s0", {"x"});
  other_node["spec"]["nodeName"] = "n2";
  server_.Put(kSlices + "/n2-s0", other_node);
  server_.ClearRequests();

  const PublishResult r = publisher_.Publish({Slice("s0", {"gpu-0"})});  // gpu-1 lost, NIC slice gone
  EXPECT_EQ(r.updated, 1);
  EXPECT_EQ(r.deleted, 1);
  EXPECT_EQ(r.created, 0);
  EXPECT_EQ(r.generation, 2);
  const json s0 = *server_.Get(kSlices + "/s0");
  EXPECT_EQ(s0["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(s0["spec"]["pool"]["resourceSliceCount"], 1);
  EXPECT_EQ(s0["spec"]["devices"].size(), 1u);
  EXPECT_FALSE(server_.Get(kSlices + "/s1"));
  EXPECT_TRUE(server_.Get(kSlices + "/other"));
  EXPECT_TRUE(server_.Get(kSlices + "/n2-s0"));
  // Written before deleting: the pool is never without its current slices.
  const auto writes = server_.writes();
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes[0].method, "PUT");
  EXPECT_EQ(writes[1].method, "DELETE");

  // A slice added back: generation 3, one create; nothing published: all deleted.
  EXPECT_EQ(publisher_.Publish({Slice("s0", {"gpu-0"}), Slice("s1", {"nic-0"})}).generation, 3);
  const PublishResult gone = publisher_.Publish({});
  EXPECT_EQ(gone.deleted, 2);
  EXPECT_EQ(gone.generation, 0);
  EXPECT_EQ(server_.List(kSlices).size(), 2u);  // the foreign ones
}

TEST_F(SlicePublisherTest, ConflictOnUpdateIsPublishedAgainFromAFreshList) {
  publisher_.Publish({Slice("s0", {"gpu-0"})});
  FakeApiServer::Failure conflict;
  conflict.method = "PUT";
  conflict.path = kSlices + "/s0";
  conflict.status = 409;
  server_.FailNext(conflict);
  const PublishResult r = publisher_.Publish({Slice("s0", {"gpu-0", "gpu-1"})});
  EXPECT_EQ(r.updated, 1);
  EXPECT_EQ(r.generation, 2);
  EXPECT_EQ(server_.Get(kSlices + "/s0")->at("spec").at("devices").size(), 2u);
  EXPECT_EQ(server_.requests("PUT", kSlices).size(), 2u);
  EXPECT_EQ(logs_.size(), 1u);

  // Conflicts every pass: the conflict reaches the caller.
  conflict.count = 10;
  server_.FailNext(conflict);
  try {
    publisher_.Publish({Slice("s0", {"gpu-2"})});
    FAIL();
  } catch (const kubeapi::ApiError& e) {
    EXPECT_TRUE(e.IsConflict());
  }
}

TEST_F(SlicePublisherTest, ForbiddenIsAClearError) {
  server_.Forbid("create", "resourceslices.resource.k8s.io");
  try {
    publisher_.Publish({Slice("s0", {"gpu-0"})});
    FAIL();
  } catch (const SystemError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("needs create on resourceslices.resource.k8s.io"), std::string::npos) << what;
  }
  EXPECT_TRUE(server_.List(kSlices).empty());
}

TEST_F(SlicePublisherTest, UnreadableNodePublishesWithoutOwnerAndLogs) {
  server_.Remove("/api/v1/nodes/n1");
  const PublishResult r = publisher_.Publish({Slice("s0", {"gpu-0"})});
  EXPECT_FALSE(r.owner_set);
  EXPECT_FALSE(server_.Get(kSlices + "/s0")->at("metadata").contains("ownerReferences"));
  ASSERT_EQ(logs_.size(), 1u);
  EXPECT_NE(logs_[0].find("Node n1"), std::string::npos);
  // The Node appears: the next publish adds the owner (an update) and the generation moves on.
  server_.Put("/api/v1/nodes/n1", json::object());
  const PublishResult again = publisher_.Publish({Slice("s0", {"gpu-0"})});
  EXPECT_TRUE(again.owner_set);
  EXPECT_EQ(again.updated, 1);
  EXPECT_TRUE(server_.Get(kSlices + "/s0")->at("metadata").contains("ownerReferences"));
}

TEST_F(SlicePublisherTest, BadDesiredSlicesAreRefusedBeforeAnyWrite) {
  EXPECT_THROW(publisher_.Publish({json{{"spec", json::object()}}}), InputError);
  EXPECT_THROW(publisher_.Publish({Slice("s", {"a"}), Slice("s", {"b"})}), InputError);
  EXPECT_THROW(publisher_.Publish({json::array()}), InputError);
  EXPECT_TRUE(server_.writes().empty());
}

TEST_F(SlicePublisherTest, DeleteAllRemovesOnlyThisNodesSlices) {
  publisher_.Publish({Slice("s0", {"gpu-0"}), Slice("s1", {"gpu-1"})});
  json other_node = Slice("n2-s0", {"x"});
  other_node["spec"]["nodeName"] = "n2";
  server_.Put(kSlices + "/n2-s0", other_node);
  EXPECT_EQ(publisher_.DeleteAll(), 2);
  EXPECT_EQ(server_.List(kSlices).size(), 1u);
}

}  // namespace
}  // namespace accel::dra
