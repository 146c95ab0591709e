// PodResourcesClient against FakeKubelet, a real gRPC server on a unix socket in a temp dir.
#include "kube/pod_resources.h"

#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <thread>

#include "k8s/podresources/v1/api.grpc.pb.h"
#include "support/fake_kubelet.h"

namespace accel::kube {

// Found by argument-dependent lookup from gmock, so they live in the type's namespace.
bool operator==(const ContainerDevices& a, const ContainerDevices& b) {
  return a.namespace_name == b.namespace_name && a.pod == b.pod && a.container == b.container &&
         a.resource == b.resource && a.device_ids == b.device_ids;
}

void PrintTo(const ContainerDevices& c, std::ostream* os) {
  *os << c.namespace_name << "/" << c.pod << "/" << c.container << " " << c.resource << " ["
      << ::testing::PrintToString(c.device_ids) << "]";
}

namespace pod_resources_test {

using std::chrono::milliseconds;
using test_support::FakeKubelet;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The deadline of calls that should succeed (or fail at once): generous, so that a loaded
// machine never turns a slow answer into a failure. Only SlowKubeletHitsDeadline waits on one.
constexpr milliseconds kTimeout{30000};

class PodResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/accel-kube-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/kubelet.sock";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  std::string socket_;
};

TEST_F(PodResourcesTest, ListFlattensPodsContainersAndResources) {
  FakeKubelet kubelet(socket_);
  std::vector<ContainerDevices> pods = {
      {"ml", "train-0", "main", "nvidia.com/gpu", {"GPU-aaa", "GPU-bbb"}},
      {"ml", "train-0", "main", "nvidia.com/mig-1g.10gb", {"MIG-ccc"}},
      {"ml", "train-0", "sidecar", "nvidia.com/gpu", {"GPU-ddd::2"}},
      {"default", "infer", "cuda", "amd.com/gpu", {"0000:c1:00.0"}},
  };
  kubelet.SetPods(pods);
  PodResourcesClient client(socket_);
  std::vector<ContainerDevices> out;
  std::string error;
  ASSERT_TRUE(client.List(kTimeout, &out, &error)) << error;
  EXPECT_EQ(out, pods);
  EXPECT_EQ(kubelet.list_calls(), 1u);
}

TEST_F(PodResourcesTest, ContainersWithoutDevicesAreSkipped) {
  FakeKubelet kubelet(socket_);
  kubelet.SetPods({
      {"ns", "web", "nginx", "", {}},                  // a container with no devices at all
      {"ns", "web", "init", "nvidia.com/gpu", {}},     // a resource entry with no IDs
      {"ns", "job", "worker", "habana.ai/gaudi", {"AM1234"}},
  });
  PodResourcesClient client(socket_);
  std::vector<ContainerDevices> out = {{"stale", "stale", "stale", "x", {"y"}}};
  std::string error;
  ASSERT_TRUE(client.List(kTimeout, &out, &error)) << error;
  EXPECT_THAT(out,
              ElementsAre(ContainerDevices{"ns", "job", "worker", "habana.ai/gaudi", {"AM1234"}}));
}

TEST_F(PodResourcesTest, EmptyNodeGivesEmptyList) {
  FakeKubelet kubelet(socket_);
  PodResourcesClient client(socket_);
  std::vector<ContainerDevices> out = {{"stale", "stale", "stale", "x", {"y"}}};
  std::string error;
  ASSERT_TRUE(client.List(kTimeout, &out, &error)) << error;
  EXPECT_TRUE(out.empty());
}

TEST_F(PodResourcesTest, AcceptsUnixScheme) {
  FakeKubelet kubelet(socket_);
  kubelet.SetPods({{"a", "b", "c", "nvidia.com/gpu", {"GPU-1"}}});
  PodResourcesClient client("unix://" + socket_);
  EXPECT_EQ(client.socket_path(), socket_);
  std::vector<ContainerDevices> out;
  std::string error;
  ASSERT_TRUE(client.List(kTimeout, &out, &error)) << error;
  EXPECT_EQ(out.size(), 1u);
}

TEST_F(PodResourcesTest, MissingSocketIsAClearError) {
  PodResourcesClient client(socket_);
  std::vector<ContainerDevices> out = {{"keep", "keep", "keep", "x", {"y"}}};
  std::string error;
  EXPECT_FALSE(client.List(kTimeout, &out, &error));
  EXPECT_EQ(error, "socket " + socket_ + " does not exist");
  EXPECT_EQ(out.size(), 1u);  // untouched
}

TEST_F(PodResourcesTest, RegularFileIsNotASocket) {
  std::ofstream(socket_) << "not a socket";
  PodResourcesClient client(socket_);
  std::vector<ContainerDevices> out;
  std::string error;
  EXPECT_FALSE(client.List(kTimeout, &out, &error));
  EXPECT_THAT(error, HasSubstr("is not a unix socket"));
}

TEST_F(PodResourcesTest, ServerFailureCarriesStatus) {
  FakeKubelet kubelet(socket_);
  kubelet.SetPods({{"a", "b", "c", "nvidia.com/gpu", {"GPU-1"}}});
  kubelet.FailNext(grpc::StatusCode::RESOURCE_EXHAUSTED, "rejected by rate limit");
  PodResourcesClient client(socket_);
  std::vector<ContainerDevices> out = {{"keep", "keep", "keep", "x", {"y"}}};
  std::string error;
  EXPECT_FALSE(client.List(kTimeout, &out, &error));
  EXPECT_THAT(error, HasSubstr("RESOURCE_EXHAUSTED"));
  EXPECT_THAT(error, HasSubstr("rejected by rate limit"));
  EXPECT_THAT(error, HasSubstr(socket_));
  EXPECT_EQ(out[0].pod, "keep");
  // Only the next call failed.
  ASSERT_TRUE(client.List(kTimeout, &out, &error)) << error;
  EXPECT_EQ(out[0].pod, "b");
  EXPECT_EQ(kubelet.list_calls(), 2u);
}

TEST_F(PodResourcesTest, PersistentFailureUntilCleared) {
  FakeKubelet kubelet(socket_);
  kubelet.SetFailure(grpc::StatusCode::PERMISSION_DENIED, "no access");
  PodResourcesClient client(socket_);
  std::vector<ContainerDevices> out;
  std::string error;
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(client.List(kTimeout, &out, &error));
    EXPECT_THAT(error, HasSubstr("PERMISSION_DENIED: no access"));
  }
  kubelet.ClearFailure();
  EXPECT_TRUE(client.List(kTimeout, &out, &error)) << error;
}

// The client gives up at its deadline instead of waiting for a kubelet that does not answer.
// The kubelet here would answer only after ten minutes, so the only way List can return in the
// test's time is by its own 100 ms deadline; the 60 s wait merely keeps a broken client from
// hanging the test (no upper bound on how fast it gives up is asserted: that is speed, not
// the contract).
TEST_F(PodResourcesTest, SlowKubeletHitsDeadline) {
  auto kubelet = std::make_unique<FakeKubelet>(socket_);
  kubelet->SetDelay(std::chrono::minutes(10));
  PodResourcesClient client(socket_);
  std::vector<ContainerDevices> out;
  std::string error;
  std::promise<bool> listed;
  std::thread caller([&] { listed.set_value(client.List(milliseconds(100), &out, &error)); });
  std::future<bool> result = listed.get_future();
  bool returned = result.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  if (!returned) kubelet.reset();  // a stopping kubelet ends the call, so the thread can be joined
  caller.join();
  ASSERT_TRUE(returned) << "List waited for the kubelet past its 100 ms deadline";
  EXPECT_FALSE(result.get());
  EXPECT_THAT(error, HasSubstr("DEADLINE_EXCEEDED"));
  kubelet->SetDelay(milliseconds(0));
  EXPECT_TRUE(client.List(kTimeout, &out, &error)) << error;
}

TEST_F(PodResourcesTest, KubeletRestartIsPickedUp) {
  auto kubelet = std::make_unique<FakeKubelet>(socket_);
  kubelet->SetPods({{"a", "old", "c", "nvidia.com/gpu", {"GPU-1"}}});
  PodResourcesClient client(socket_);
  std::vector<ContainerDevices> out;
  std::string error;
  ASSERT_TRUE(client.List(kTimeout, &out, &error)) << error;

  kubelet.reset();  // kubelet stops: its socket goes away
  EXPECT_FALSE(client.List(kTimeout, &out, &error));
  EXPECT_THAT(error, HasSubstr("does not exist"));

  kubelet = std::make_unique<FakeKubelet>(socket_);  // new socket inode, same path
  kubelet->SetPods({{"a", "new", "c", "nvidia.com/gpu", {"GPU-1"}}});
  ASSERT_TRUE(client.List(kTimeout, &out, &error)) << error;
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].pod, "new");
}

TEST_F(PodResourcesTest, RestartBetweenCallsWithoutAFailedCall) {
  auto kubelet = std::make_unique<FakeKubelet>(socket_);
  PodResourcesClient client(socket_);
  std::vector<ContainerDevices> out;
  std::string error;
  ASSERT_TRUE(client.List(kTimeout, &out, &error)) << error;
  kubelet.reset();
  kubelet = std::make_unique<FakeKubelet>(socket_);
  kubelet->SetPods({{"a", "new", "c", "nvidia.com/gpu", {"GPU-1"}}});
  // The old connection died with the old kubelet; the channel redials on the next call.
  ASSERT_TRUE(client.List(kTimeout, &out, &error)) << error;
  EXPECT_EQ(out[0].pod, "new");
}

TEST_F(PodResourcesTest, ConnectionRefusedIsUnavailableThenRecovers) {
  // A socket file that nobody listens on: a kubelet that died without cleaning up.
  {
    FakeKubelet kubelet(socket_);
  }
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);  // bound, never listening: connect() is refused

  PodResourcesClient client(socket_);
  std::vector<ContainerDevices> out;
  std::string error;
  EXPECT_FALSE(client.List(kTimeout, &out, &error));  // refused at once, not at the deadline
  EXPECT_THAT(error, HasSubstr("UNAVAILABLE"));

  FakeKubelet kubelet(socket_);  // replaces the stale socket file
  kubelet.SetPods({{"a", "b", "c", "nvidia.com/gpu", {"GPU-1"}}});
  ASSERT_TRUE(client.List(kTimeout, &out, &error)) << error;
  EXPECT_EQ(out.size(), 1u);
}

TEST_F(PodResourcesTest, FakeServesAllocatableResources) {
  FakeKubelet kubelet(socket_);
  kubelet.SetAllocatable({{"", "", "", "nvidia.com/gpu", {"GPU-1", "GPU-2"}}});
  auto channel = grpc::CreateChannel("unix://" + socket_, grpc::InsecureChannelCredentials());
  auto stub = v1::PodResourcesLister::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kTimeout);
  v1::AllocatableResourcesResponse response;
  ASSERT_TRUE(stub->GetAllocatableResources(&context, {}, &response).ok());
  ASSERT_EQ(response.devices_size(), 1);
  EXPECT_EQ(response.devices(0).resource_name(), "nvidia.com/gpu");
  EXPECT_EQ(response.devices(0).device_ids_size(), 2);
}

}  // namespace
}  // namespace accel::kube
