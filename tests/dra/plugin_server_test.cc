// DraPluginServer against an in-test kubelet (FakeDraKubelet) on real unix sockets: the
// registration handshake, Prepare/Unprepare through DRA v1 and v1beta1, health streams v1 and
// v1alpha1, and the socket lifecycle (stale files, deleted sockets, Stop).
#include "dra/plugin_server.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "common/error.h"
#include "support/fake_dra_kubelet.h"

namespace accel::dra {
namespace plugin_server_test {

namespace fs = std::filesystem;
using test_support::DraHealthVersion;
using test_support::DraVersion;
using test_support::FakeDraKubelet;

// Generous bounds for waits on another thread; tests never sleep for a fixed time.
constexpr std::chrono::seconds kWait{10};

/// Prepares claim "<uid>" as one GPU; uids starting with "bad" fail, "throw" throws (a handler
/// bug the server must contain).
class TestHandler : public ClaimHandler {
 public:
  PrepareResult Prepare(const ClaimRef& claim) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      prepared_.push_back(claim.uid);
    }
    if (claim.uid.rfind("throw", 0) == 0) throw std::runtime_error("handler bug");
    PrepareResult result;
    if (claim.uid.rfind("bad", 0) == 0) {
      result.error = "device gpu-9 is not on this node";
      return result;
    }
    PreparedDevice gpu;
    gpu.request_names = {"gpu"};
    gpu.pool_name = "node-a";
    gpu.device_name = "gpu-" + claim.name;
    gpu.cdi_device_ids = {"k8s.accel.io/claim=" + claim.uid + "-gpu"};
    PreparedDevice nic;
    nic.request_names = {"nic"};
    nic.pool_name = "node-a";
    nic.device_name = "nic-" + claim.name;
    result.devices = {gpu, nic};
    return result;
  }
  std::string Unprepare(const ClaimRef& claim) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      unprepared_.push_back(claim.uid);
    }
    if (claim.uid.rfind("throw", 0) == 0) throw std::runtime_error("handler bug");
    return claim.uid.rfind("bad", 0) == 0 ? "cannot remove the CDI spec" : "";
  }
  std::vector<std::string> prepared() const {
    std::lock_guard<std::mutex> lock(mu_);
    return prepared_;
  }
  std::vector<std::string> unprepared() const {
    std::lock_guard<std::mutex> lock(mu_);
    return unprepared_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> prepared_;
  std::vector<std::string> unprepared_;
};

DeviceHealthEntry Health(const std::string& device, DeviceHealthState state, int64_t at,
                         const std::string& message = "") {
  return DeviceHealthEntry{"node-a", device, state, at, message};
}

bool IsSocket(const std::string& path) {
  std::error_code ec;
  return fs::is_socket(path, ec);
}

class DraPluginServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/accel-dra-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    options_.registry_dir = dir_ + "/plugins_registry";
    options_.plugin_dir = dir_ + "/plugins/accel.io";
    options_.socket_check_interval = std::chrono::milliseconds(0);  // tests call CheckSockets
    options_.health_resend_interval = std::chrono::milliseconds(0);
    options_.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_.push_back(line);
    };
  }
  void TearDown() override {
    kubelet_.reset();
    server_.reset();
    fs::remove_all(dir_);
  }

  void StartServer() {
    server_ = std::make_unique<DraPluginServer>(options_, &handler_);
    server_->Start();
    kubelet_ = std::make_unique<FakeDraKubelet>(options_.registry_dir);
  }
  void StartAndRegister() {
    StartServer();
    ASSERT_EQ(kubelet_->Scan(), 1) << kubelet_->last_error();
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return log_;
  }

  std::string dir_;
  DraPluginOptions options_;
  TestHandler handler_;
  std::mutex log_mu_;
  std::vector<std::string> log_;
  std::unique_ptr<DraPluginServer> server_;
  std::unique_ptr<FakeDraKubelet> kubelet_;
};

TEST(DraPluginOptionsTest, DefaultsFollowTheKubeletsLayout) {
  DraPluginOptions options;
  EXPECT_EQ(options.driver_name, "accel.io");
  EXPECT_EQ(options.RegistrationSocket(), "/var/lib/kubelet/plugins_registry/accel.io-reg.sock");
  EXPECT_EQ(options.PluginDir(), "/var/lib/kubelet/plugins/accel.io");
  EXPECT_EQ(options.DraSocket(), "/var/lib/kubelet/plugins/accel.io/dra.sock");
  options.driver_name = "gpu.example.com";
  EXPECT_EQ(options.DraSocket(), "/var/lib/kubelet/plugins/gpu.example.com/dra.sock");
}

TEST_F(DraPluginServerTest, RegistrationHandshakeAnswersExactPluginInfo) {
  StartAndRegister();
  EXPECT_TRUE(IsSocket(dir_ + "/plugins_registry/accel.io-reg.sock"));
  EXPECT_TRUE(IsSocket(dir_ + "/plugins/accel.io/dra.sock"));
  auto info = kubelet_->plugin();
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->registration_socket, dir_ + "/plugins_registry/accel.io-reg.sock");
  EXPECT_EQ(info->type, "DRAPlugin");
  EXPECT_EQ(info->name, "accel.io");
  EXPECT_EQ(info->endpoint, dir_ + "/plugins/accel.io/dra.sock");
  EXPECT_EQ(info->supported_versions,
            (std::vector<std::string>{"v1.DRAPlugin", "v1beta1.DRAPlugin"}));
  EXPECT_EQ(info->chosen_version, "v1.DRAPlugin");
  EXPECT_TRUE(server_->running());
  EXPECT_TRUE(server_->registered());
  EXPECT_EQ(server_->registration_error(), "");
  EXPECT_EQ(server_->registration_notifications(), 1);
  // A second pass of the watcher finds nothing new.
  EXPECT_EQ(kubelet_->Scan(), 0);
  EXPECT_EQ(kubelet_->registrations(), 1);
}

TEST_F(DraPluginServerTest, CustomDriverNameNamesSocketAndPlugin) {
  options_.driver_name = "gpu.test.io";
  options_.plugin_dir = dir_ + "/plugins/gpu.test.io";  // the default is under /var/lib
  StartAndRegister();
  EXPECT_TRUE(IsSocket(dir_ + "/plugins_registry/gpu.test.io-reg.sock"));
  EXPECT_EQ(kubelet_->plugin()->name, "gpu.test.io");
}

TEST_F(DraPluginServerTest, KubeletRefusalIsRecorded) {
  StartServer();
  // The endpoint vanished: the kubelet cannot dial it and says so in NotifyRegistrationStatus.
  fs::remove(options_.DraSocket());
  std::string reason = kubelet_->Register(options_.RegistrationSocket());
  EXPECT_NE(reason, "");
  EXPECT_FALSE(server_->registered());
  EXPECT_EQ(server_->registration_error(), reason);
  EXPECT_EQ(server_->registration_notifications(), 1);
  bool logged = false;
  for (const std::string& line : log()) logged |= line.find("refused") != std::string::npos;
  EXPECT_TRUE(logged);
}

class DraPrepareTest : public DraPluginServerTest,
                       public ::testing::WithParamInterface<DraVersion> {};

TEST_P(DraPrepareTest, EveryClaimAnsweredAndFailuresStayWithTheirClaim) {
  StartAndRegister();
  std::vector<ClaimRef> claims = {
      {"team-a", "uid-1", "one"},
      {"team-a", "bad-2", "two"},
      {"team-b", "uid-3", "three"},
      {"team-b", "throw-4", "four"},
      {"team-b", "uid-5", ""},  // malformed: no name
  };
  std::map<std::string, PrepareResult> results;
  grpc::Status status = kubelet_->Prepare(claims, GetParam(), &results);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(results.size(), 5u);
  for (const ClaimRef& c : claims) EXPECT_EQ(results.count(c.uid), 1u) << c.uid;

  const PrepareResult& one = results["uid-1"];
  EXPECT_EQ(one.error, "");
  ASSERT_EQ(one.devices.size(), 2u);
  EXPECT_EQ(one.devices[0].request_names, std::vector<std::string>{"gpu"});
  EXPECT_EQ(one.devices[0].pool_name, "node-a");
  EXPECT_EQ(one.devices[0].device_name, "gpu-one");
  EXPECT_EQ(one.devices[0].cdi_device_ids,
            std::vector<std::string>{"k8s.accel.io/claim=uid-1-gpu"});
  EXPECT_EQ(one.devices[1].device_name, "nic-one");
  EXPECT_TRUE(one.devices[1].cdi_device_ids.empty());
  EXPECT_EQ(results["uid-3"].devices.size(), 2u);
  EXPECT_EQ(results["uid-3"].devices[0].device_name, "gpu-three");

  EXPECT_EQ(results["bad-2"].error, "device gpu-9 is not on this node");
  EXPECT_TRUE(results["bad-2"].devices.empty());
  EXPECT_NE(results["throw-4"].error.find("handler bug"), std::string::npos);
  EXPECT_NE(results["throw-4"].error.find("team-b/four"), std::string::npos);
  EXPECT_NE(results["uid-5"].error.find("no name"), std::string::npos);
  // The malformed claim never reached the handler.
  EXPECT_EQ(handler_.prepared(),
            (std::vector<std::string>{"uid-1", "bad-2", "uid-3", "throw-4"}));

  std::map<std::string, std::string> errors;
  status = kubelet_->Unprepare(claims, GetParam(), &errors);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(errors.size(), 5u);
  EXPECT_EQ(errors["uid-1"], "");
  EXPECT_EQ(errors["uid-3"], "");
  EXPECT_EQ(errors["bad-2"], "cannot remove the CDI spec");
  EXPECT_NE(errors["throw-4"].find("handler bug"), std::string::npos);
  EXPECT_NE(errors["uid-5"].find("no name"), std::string::npos);
  EXPECT_EQ(handler_.unprepared(),
            (std::vector<std::string>{"uid-1", "bad-2", "uid-3", "throw-4"}));
}

TEST_P(DraPrepareTest, ClaimListedTwiceIsPreparedOnce) {
  StartAndRegister();
  std::map<std::string, PrepareResult> results;
  ASSERT_TRUE(kubelet_
                  ->Prepare({{"ns", "uid-1", "one"}, {"ns", "uid-1", "one"}}, GetParam(),
                            &results)
                  .ok());
  EXPECT_EQ(results.size(), 1u);
  EXPECT_EQ(handler_.prepared(), std::vector<std::string>{"uid-1"});
}

TEST_P(DraPrepareTest, EmptyRequestGetsEmptyAnswer) {
  StartAndRegister();
  std::map<std::string, PrepareResult> results{{"stale", {}}};
  ASSERT_TRUE(kubelet_->Prepare({}, GetParam(), &results).ok());
  EXPECT_TRUE(results.empty());
}

TEST_P(DraPrepareTest, ConcurrentCallsAreEachAnsweredInFull) {
  StartAndRegister();
  constexpr int kThreads = 4;
  constexpr int kClaims = 8;
  std::atomic<int> incomplete{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<ClaimRef> claims;
      for (int c = 0; c < kClaims; ++c) {
        std::string id = std::to_string(t) + "-" + std::to_string(c);
        claims.push_back({"ns", "uid-" + id, "c" + id});
      }
      std::map<std::string, PrepareResult> results;
      if (!kubelet_->Prepare(claims, GetParam(), &results).ok() ||
          results.size() != claims.size()) {
        ++incomplete;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(incomplete.load(), 0);
  EXPECT_EQ(handler_.prepared().size(), static_cast<size_t>(kThreads * kClaims));
}

INSTANTIATE_TEST_SUITE_P(Versions, DraPrepareTest,
                         ::testing::Values(DraVersion::kV1, DraVersion::kV1beta1),
                         [](const auto& info) {
                           return info.param == DraVersion::kV1 ? "v1" : "v1beta1";
                         });

TEST_F(DraPluginServerTest, PrepareBeforeAnyRegistrationIsRefusedByTheFake) {
  kubelet_ = std::make_unique<FakeDraKubelet>();
  std::map<std::string, PrepareResult> results;
  EXPECT_EQ(kubelet_->Prepare({{"ns", "u", "n"}}, DraVersion::kV1, &results).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_FALSE(kubelet_->WatchHealth());
}

TEST_F(DraPluginServerTest, HealthStreamV1SendsCurrentListThenEachChangeAndEndsOnStop) {
  StartAndRegister();
  server_->SetHealth({Health("gpu-1", DeviceHealthState::kHealthy, 100),
                      Health("gpu-0", DeviceHealthState::kHealthy, 100)});
  ASSERT_TRUE(kubelet_->WatchHealth(DraHealthVersion::kV1));
  ASSERT_TRUE(kubelet_->WaitForHealthMessages(1, kWait));
  auto messages = kubelet_->health_messages();
  ASSERT_EQ(messages[0].devices.size(), 2u);
  EXPECT_EQ(messages[0].devices[0].device_name, "gpu-0");  // sorted by pool, device
  EXPECT_EQ(messages[0].devices[0].pool_name, "node-a");
  EXPECT_EQ(messages[0].devices[0].health, DeviceHealthState::kHealthy);
  EXPECT_EQ(messages[0].devices[0].last_updated_time, 100);

  // Same health with a new timestamp: no news. Then gpu-1 falls off the bus.
  server_->SetHealth({Health("gpu-0", DeviceHealthState::kHealthy, 105),
                      Health("gpu-1", DeviceHealthState::kHealthy, 105)});
  server_->SetHealth({Health("gpu-0", DeviceHealthState::kHealthy, 110),
                      Health("gpu-1", DeviceHealthState::kUnhealthy, 110, "XID 79")});
  ASSERT_TRUE(kubelet_->WaitForHealthMessages(2, kWait));
  messages = kubelet_->health_messages();
  ASSERT_EQ(messages.size(), 2u);
  // Every message is the complete list.
  ASSERT_EQ(messages[1].devices.size(), 2u);
  const DeviceHealthEntry* gpu1 = messages[1].Find("node-a", "gpu-1");
  ASSERT_NE(gpu1, nullptr);
  EXPECT_EQ(gpu1->health, DeviceHealthState::kUnhealthy);
  EXPECT_EQ(gpu1->message, "XID 79");
  EXPECT_EQ(gpu1->last_updated_time, 110);
  EXPECT_EQ(messages[1].Find("node-a", "gpu-0")->health, DeviceHealthState::kHealthy);
  EXPECT_EQ(server_->health().size(), 2u);
  EXPECT_EQ(server_->open_health_streams(), 1);

  server_->Stop();
  auto end = kubelet_->WaitForHealthEnd(kWait);
  ASSERT_TRUE(end.has_value());
  EXPECT_TRUE(end->ok()) << end->error_message();
  EXPECT_EQ(server_->open_health_streams(), 0);
}

TEST_F(DraPluginServerTest, HealthStreamV1alpha1HasNoMessage) {
  StartAndRegister();
  server_->SetHealth({Health("gpu-0", DeviceHealthState::kUnhealthy, 7, "XID 48")});
  ASSERT_TRUE(kubelet_->WatchHealth(DraHealthVersion::kV1alpha1));
  ASSERT_TRUE(kubelet_->WaitForHealthMessages(1, kWait));
  auto first = kubelet_->health_messages()[0];
  ASSERT_EQ(first.devices.size(), 1u);
  EXPECT_EQ(first.devices[0].health, DeviceHealthState::kUnhealthy);
  EXPECT_EQ(first.devices[0].last_updated_time, 7);
  EXPECT_EQ(first.devices[0].message, "");
  // A device removed from the list is a change too.
  server_->SetHealth({});
  ASSERT_TRUE(kubelet_->WaitForHealthMessages(2, kWait));
  EXPECT_TRUE(kubelet_->health_messages()[1].devices.empty());
}

TEST_F(DraPluginServerTest, HealthStreamOpenedBeforeAnyHealthSendsEmptyList) {
  StartAndRegister();
  ASSERT_TRUE(kubelet_->WatchHealth());
  ASSERT_TRUE(kubelet_->WaitForHealthMessages(1, kWait));
  EXPECT_TRUE(kubelet_->health_messages()[0].devices.empty());
  kubelet_->StopWatchingHealth();  // the kubelet going away ends the stream on the server
}

TEST_F(DraPluginServerTest, HealthResendCarriesUnchangedList) {
  options_.health_resend_interval = std::chrono::milliseconds(20);
  StartAndRegister();
  server_->SetHealth({Health("gpu-0", DeviceHealthState::kHealthy, 1)});
  ASSERT_TRUE(kubelet_->WatchHealth());
  // Nothing changes; the stream still sends the list again.
  ASSERT_TRUE(kubelet_->WaitForHealthMessages(3, kWait));
  for (const auto& m : kubelet_->health_messages()) EXPECT_EQ(m.devices.size(), 1u);
}

TEST_F(DraPluginServerTest, StaleSocketsAndFilesAreReplaced) {
  fs::create_directories(options_.registry_dir);
  fs::create_directories(options_.PluginDir());
  // A plain file where the registration socket goes, and a dead socket where the DRA one goes.
  std::ofstream(options_.RegistrationSocket()) << "stale";
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", options_.DraSocket().c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::close(fd);
  ASSERT_TRUE(IsSocket(options_.DraSocket()));

  StartAndRegister();
  std::map<std::string, PrepareResult> results;
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "uid-1", "one"}}, DraVersion::kV1, &results).ok());
  EXPECT_EQ(results["uid-1"].error, "");
}

TEST_F(DraPluginServerTest, DeletedRegistrationSocketIsRecreatedAndRegisteredAgain) {
  StartAndRegister();
  EXPECT_EQ(server_->CheckSockets(), 0);  // nothing to do while both exist

  // The kubelet cleans its registry directory.
  fs::remove(options_.RegistrationSocket());
  EXPECT_EQ(server_->CheckSockets(), 1);
  EXPECT_TRUE(IsSocket(options_.RegistrationSocket()));
  EXPECT_FALSE(server_->registered());  // until the kubelet answers the new socket
  EXPECT_EQ(server_->socket_recreations(), 1);

  EXPECT_EQ(kubelet_->Scan(), 1) << kubelet_->last_error();
  EXPECT_EQ(kubelet_->registrations(), 2);
  EXPECT_TRUE(server_->registered());
  EXPECT_EQ(server_->registration_notifications(), 2);
}

TEST_F(DraPluginServerTest, DeletedDraSocketIsRecreatedAndServes) {
  StartAndRegister();
  fs::remove(options_.DraSocket());
  EXPECT_EQ(server_->CheckSockets(), 1);
  ASSERT_TRUE(IsSocket(options_.DraSocket()));
  std::map<std::string, PrepareResult> results;
  // A fresh channel to the new socket (the kubelet's channel reconnects on its own, after a
  // backoff a test should not wait out).
  ASSERT_TRUE(kubelet_->Register(options_.RegistrationSocket()).empty());
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "uid-1", "one"}}, DraVersion::kV1, &results).ok());
  EXPECT_EQ(results["uid-1"].devices.size(), 2u);
}

TEST_F(DraPluginServerTest, BackgroundCheckerRecreatesTheRegistrationSocket) {
  options_.socket_check_interval = std::chrono::milliseconds(20);
  StartAndRegister();
  fs::remove(options_.RegistrationSocket());
  auto deadline = std::chrono::steady_clock::now() + kWait;
  while (server_->socket_recreations() < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(server_->socket_recreations(), 1);
  EXPECT_EQ(kubelet_->Scan(), 1) << kubelet_->last_error();
  EXPECT_TRUE(server_->registered());
}

TEST_F(DraPluginServerTest, StopIsIdempotentRemovesSocketsAndAllowsRestart) {
  StartAndRegister();
  server_->Stop();
  EXPECT_FALSE(server_->running());
  EXPECT_FALSE(server_->registered());
  EXPECT_FALSE(fs::exists(options_.RegistrationSocket()));
  EXPECT_FALSE(fs::exists(options_.DraSocket()));
  server_->Stop();
  EXPECT_EQ(server_->CheckSockets(), 0);  // stopped: nothing is re-created
  EXPECT_FALSE(fs::exists(options_.RegistrationSocket()));

  server_->Start();
  EXPECT_EQ(kubelet_->Scan(), 1) << kubelet_->last_error();
  std::map<std::string, PrepareResult> results;
  ASSERT_TRUE(kubelet_->Prepare({{"ns", "uid-1", "one"}}, DraVersion::kV1beta1, &results).ok());
  EXPECT_EQ(results.size(), 1u);
  server_->Stop();
  server_->Stop();
}

TEST_F(DraPluginServerTest, StopWithoutStartIsHarmless) {
  DraPluginServer server(options_, &handler_);
  server.Stop();
  EXPECT_FALSE(server.running());
  EXPECT_FALSE(fs::exists(options_.registry_dir));
}

TEST_F(DraPluginServerTest, UnusableDirectoryIsASystemErrorNamingIt) {
  std::ofstream(dir_ + "/file") << "x";
  options_.registry_dir = dir_ + "/file/plugins_registry";
  DraPluginServer server(options_, &handler_);
  try {
    server.Start();
    FAIL() << "Start succeeded";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find(dir_ + "/file/plugins_registry"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(server.running());
}

TEST_F(DraPluginServerTest, SocketPathTooLongIsASystemErrorAndNothingServes) {
  options_.plugin_dir = dir_ + "/" + std::string(120, 'p');
  DraPluginServer server(options_, &handler_);
  try {
    server.Start();
    FAIL() << "Start succeeded";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find("dra.sock"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(server.running());
  EXPECT_FALSE(fs::exists(options_.RegistrationSocket()));
}

TEST(DraConversionTest, ErrorDropsDevices) {
  PrepareResult result;
  result.devices.push_back(PreparedDevice{{"gpu"}, "p", "d", {"x"}});
  result.error = "boom";
  k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourceResponse out;
  PrepareResultToProto(result, &out);
  EXPECT_EQ(out.error(), "boom");
  EXPECT_EQ(out.devices_size(), 0);
  result.error = "";
  k8s::io::kubelet::pkg::apis::dra::v1beta1::NodePrepareResourceResponse beta;
  PrepareResultToProto(result, &beta);
  ASSERT_EQ(beta.devices_size(), 1);
  EXPECT_EQ(beta.devices(0).cdi_device_ids(0), "x");
}

TEST(DraConversionTest, ClaimValidationNamesMissingFields) {
  EXPECT_EQ(ValidateClaim({"ns", "uid", "name"}), "");
  std::string error = ValidateClaim({"", "", "name"});
  EXPECT_NE(error.find("uid, namespace"), std::string::npos) << error;
  k8s::io::kubelet::pkg::apis::dra::v1::Claim claim;
  claim.set_namespace_("ns");
  claim.set_uid("u");
  claim.set_name("n");
  ClaimRef ref = ClaimFromProto(claim);
  EXPECT_EQ(ref.namespace_, "ns");
  EXPECT_EQ(ref.uid, "u");
  EXPECT_EQ(ref.name, "n");
}

TEST(DraConversionTest, HealthEnumsMatchTheWire) {
  ::v1::DeviceHealth v1;
  HealthToProto({"p", "d", DeviceHealthState::kUnhealthy, 5, "why"}, &v1);
  EXPECT_EQ(v1.health(), ::v1::UNHEALTHY);
  EXPECT_EQ(v1.device().pool_name(), "p");
  EXPECT_EQ(v1.message(), "why");
  EXPECT_EQ(v1.health_check_timeout_seconds(), 0);  // the kubelet's default
  ::v1alpha1::DeviceHealth alpha;
  HealthToProto({"p", "d", DeviceHealthState::kHealthy, 5, ""}, &alpha);
  EXPECT_EQ(alpha.health(), ::v1alpha1::HEALTHY);
  HealthToProto({"p", "d", DeviceHealthState::kUnknown, 5, ""}, &alpha);
  EXPECT_EQ(alpha.health(), ::v1alpha1::UNKNOWN);
}

TEST(DraConversionTest, MethodPathsAreWireExact) {
  EXPECT_EQ(k8s::io::kubelet::pkg::apis::dra::v1::NodePrepareResourcesRequest::descriptor()
                ->file()
                ->service(0)
                ->method(0)
                ->full_name(),
            "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin.NodePrepareResources");
  EXPECT_EQ(k8s::io::kubelet::pkg::apis::dra::v1beta1::Claim::descriptor()->file()->service(0)
                ->full_name(),
            "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin");
  EXPECT_EQ(pluginregistration::PluginInfo::descriptor()->file()->service(0)->full_name(),
            "pluginregistration.Registration");
  EXPECT_EQ(::v1::DeviceHealth::descriptor()->file()->service(0)->method(0)->full_name(),
            "v1.DRAResourceHealth.NodeWatchResources");
  EXPECT_EQ(::v1alpha1::DeviceHealth::descriptor()->file()->service(0)->full_name(),
            "v1alpha1.DRAResourceHealth");
}

}  // namespace
}  // namespace accel::dra
