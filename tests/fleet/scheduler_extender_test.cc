// kube-scheduler's scheduler extender over the fleet (fleet/scheduler_extender.h), as
// kube-scheduler uses it: a stand-in kube-scheduler written from the published types
// (tests/support/stand_in_kube_scheduler.h, configured from the deploy file's own extender block)
// sends real HTTP requests to a real FleetService behind the real HTTP server on loopback, over a
// SQLite fleet of fixture hosts (two HGX H100, an HGX H200, an MI300X, a Gaudi 2 in maintenance),
// and the service binds through kubeapi::KubeClient to the in-test API server
// (tests/support/fake_apiserver.h), which keeps the pods and answers their binding subresource as
// the real one does.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/structured_file.h"
#include "fleet/fleet_store.h"
#include "fleet/pod_ask.h"
#include "fleet/scheduler.h"
#include "fleet/scheduler_extender.h"
#include "fleet/service.h"
#include "http/client.h"
#include "http/listen_address.h"
#include "http/server.h"
#include "http/web_config.h"
#include "kubeapi/client.h"
#include "support/crd_validate.h"
#include "support/fake_apiserver.h"
#include "support/stand_in_kube_scheduler.h"
#include "topology/sources.h"

namespace accel::fleet {
namespace scheduler_extender_test {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test_support::PodSpec;
using test_support::StandInKubeScheduler;

const std::string kDeploy = std::string(ACCEL_SOURCE_DIR) + "/deploy/kubernetes/scheduler-extender/";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The extender block kube-scheduler is given in deploy/ (kube-scheduler-config.yaml).
test_support::ExtenderConfig DeployedExtender() {
  return test_support::ExtenderConfig::FromSchedulerConfig(
      test_support::SchedulerConfig(ReadFile(kDeploy + "kube-scheduler-config.yaml"), "kube-scheduler-config.yaml"));
}

// H100 1g.10gb as the MIG catalog has it (sharing/mig_geometry.cc): 1 of 8 memory slices.
std::vector<placement::MigShape> H100Mig(const std::string& profile) {
  if (profile != "1g.10gb") return {};
  placement::MigShape s;
  s.model_profile = "H100-SXM5-80GB/1g.10gb";
  s.vendor_id = 0x10de;
  s.device_id = 0x2330;
  s.gpu_slices = 8;
  s.memory_slices = 1;
  s.starts = {0, 1, 2, 3, 4, 5, 6};
  return {s};
}

class SchedulerExtenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::path(::testing::TempDir()) / "extender-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    url_ = "sqlite:" + (dir_ / "fleet.db").string();
    auto store = FleetStore::Open(url_);
    auto add = [&](const std::string& name, const std::string& fixture, HostAdminState state) {
      HostSpec spec;
      spec.name = name;
      spec.topology = topology::LoadTopology(std::string(ACCEL_SOURCE_DIR) + "/fixtures/hosts/" + fixture + ".json");
      spec.state = state;
      store->AddHost(spec);
    };
    add("gpu-a", "hgx-h100", HostAdminState::kEnabled);
    add("gpu-b", "hgx-h100", HostAdminState::kEnabled);
    add("h200-a", "hgx-h200", HostAdminState::kEnabled);
    add("mi-a", "epyc-nps4-mi300x", HostAdminState::kEnabled);
    add("hpu-a", "gaudi2-8hpu", HostAdminState::kMaintenance);
    for (const char* n : {"gpu-a", "gpu-b", "h200-a", "mi-a", "hpu-a", "worker-9"}) nodes_.push_back(test_support::NodeJson(n));
  }

  void TearDown() override {
    if (server_) server_->Stop();
    if (service_) service_->Stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Starts the service behind the HTTP server; `api` = false: without API server access.
  void Start(bool api = true, GpuPolicy policy = GpuPolicy::kAccel,
             std::chrono::milliseconds release_gone_every = std::chrono::milliseconds(0)) {
    ServiceOptions o;
    o.store_url = url_;
    o.connections = 2;
    o.extender.policy = policy;
    o.extender.mig_shapes = H100Mig;
    o.extender.release_gone_every = release_gone_every;
    if (api) {
      kubeapi::KubeClientOptions ko;
      ko.sleep = [](std::chrono::milliseconds) {};  // no real waits between retries
      kube_ = std::make_shared<kubeapi::KubeClient>(api_.Config(), ko);
      auto kube = kube_;
      // As kube-scheduler's DefaultBinder builds a Binding.
      o.extender.bind = [kube](const PodBinding& b) {
        kube->Create(kubeapi::ApiPath("v1", "pods", b.ns, b.name) + "/binding",
                     {{"apiVersion", "v1"},
                      {"kind", "Binding"},
                      {"metadata", {{"name", b.name}, {"namespace", b.ns}, {"uid", b.uid}}},
                      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", b.node}}}});
      };
      o.extender.read_pod = [kube](const std::string& ns, const std::string& name) {
        return kube->Get(kubeapi::ApiPath("v1", "pods", ns, name));
      };
    }
    service_ = std::make_unique<FleetService>(o);
    FleetService* svc = service_.get();
    server_ = std::make_unique<http::HttpServer>(
        http::LoadWebConfig(""), [svc] { return std::make_shared<const std::string>(svc->Metrics()); }, [] { return true; });
    server_->AddHandler("/", [svc](const http::HttpServer::Request& r) {
      ServiceReply reply = svc->Handle({r.method, r.path, r.query, r.body});
      return http::HttpServer::Reply{reply.status, reply.content_type, std::move(reply.body), reply.allow};
    });
    server_->Start(http::ParseListenAddress("127.0.0.1:0"));
    service_->Start();
    base_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }

  // The stand-in kube-scheduler with the deployed extender config (node names, or whole nodes).
  StandInKubeScheduler Scheduler(bool node_cache_capable = true) {
    test_support::ExtenderConfig c = DeployedExtender();
    c.node_cache_capable = node_cache_capable;
    return StandInKubeScheduler(base_, c);
  }

  // A pod in namespace ml, stored in the API server as well (bind and the release of gone pods
  // read it there).
  json Pod(const std::string& name, std::map<std::string, std::string> limits,
           std::map<std::string, std::string> annotations = {}) {
    PodSpec p;
    p.ns = "ml";
    p.name = name;
    p.uid = "uid-" + name;
    p.limits = std::move(limits);
    p.requests = {{"cpu", "2"}, {"memory", "8Gi"}};
    p.annotations = std::move(annotations);
    json pod = p.Json();
    api_.Put("/api/v1/namespaces/ml/pods/" + name, pod);
    return pod;
  }

  std::vector<Claim> Claims() { return FleetStore::Open(url_)->ListClaims(); }

  std::vector<json> Nodes(std::initializer_list<const char*> names) {
    std::vector<json> out;
    for (const char* n : names) out.push_back(test_support::NodeJson(n));
    return out;
  }

  fs::path dir_;
  std::string url_;
  std::vector<json> nodes_;
  test_support::FakeApiServer api_;
  std::shared_ptr<kubeapi::KubeClient> kube_;
  std::unique_ptr<FleetService> service_;
  std::unique_ptr<http::HttpServer> server_;
  std::string base_;
};

const std::map<std::string, std::string> kH100 = {{"accel.dev/gpu-models", "H100"}};

// ---- filter --------------------------------------------------------------------------------

TEST_F(SchedulerExtenderTest, FilterPassesTheHostsWhereTheShareFitsAndSaysWhyNotForTheOthers) {
  Start();
  test_support::FilterOutcome f = Scheduler().Filter(Pod("p1", {{"accel.dev/gpu-milli", "470"}}), nodes_);
  ASSERT_TRUE(f.ok) << f.error << "\n" << f.answer.dump(2);
  // A share of any GPU: every enabled GPU host.
  EXPECT_EQ(f.passed, (std::vector<std::string>{"gpu-a", "gpu-b", "h200-a", "mi-a"})) << f.answer.dump(2);
  EXPECT_TRUE(f.failed.empty()) << f.answer.dump(2);
  ASSERT_EQ(f.unresolvable.size(), 2u) << f.answer.dump(2);
  EXPECT_EQ(f.unresolvable["worker-9"], "accel: not an accel fleet host");
  EXPECT_EQ(f.unresolvable["hpu-a"], "accel: the fleet host's state is maintenance");

  // Only H100s: the H200 and the MI300X can never take it.
  f = Scheduler().Filter(Pod("p2", {{"accel.dev/gpu-milli", "470"}}, kH100), nodes_);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_EQ(f.passed, (std::vector<std::string>{"gpu-a", "gpu-b"})) << f.answer.dump(2);
  EXPECT_EQ(f.unresolvable["h200-a"], "accel: no accel.dev/gpu-milli GPU here of model H100");
  EXPECT_EQ(f.unresolvable["mi-a"], "accel: no accel.dev/gpu-milli GPU here of model H100");
}

TEST_F(SchedulerExtenderTest, WholeGpusGoToHostsOfTheirVendorOnly) {
  Start();
  test_support::FilterOutcome f = Scheduler().Filter(Pod("n8", {{"nvidia.com/gpu", "8"}}), nodes_);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_EQ(f.passed, (std::vector<std::string>{"gpu-a", "gpu-b", "h200-a"})) << f.answer.dump(2);
  EXPECT_EQ(f.unresolvable["mi-a"], "accel: no nvidia.com/gpu GPU here") << f.answer.dump(2);

  f = Scheduler().Filter(Pod("a1", {{"amd.com/gpu", "1"}}), nodes_);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_EQ(f.passed, (std::vector<std::string>{"mi-a"})) << f.answer.dump(2);

  // More than a host has: a no for now (FailedNodes), with the fleet's reason.
  f = Scheduler().Filter(Pod("n9", {{"nvidia.com/gpu", "9"}}), nodes_);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_TRUE(f.passed.empty()) << f.answer.dump(2);
  ASSERT_EQ(f.failed.count("gpu-a"), 1u) << f.answer.dump(2);
  EXPECT_EQ(f.failed["gpu-a"].rfind("accel: ", 0), 0u) << f.failed["gpu-a"];
  EXPECT_GT(f.failed["gpu-a"].size(), std::string("accel: ").size());

  // Init containers count as kube-scheduler counts them: max(init, sum of the app containers).
  PodSpec p;
  p.ns = "ml";
  p.name = "init";
  p.uid = "uid-init";
  p.limits = {{"nvidia.com/gpu", "2"}};
  p.init_limits = {{"nvidia.com/gpu", "9"}};
  f = Scheduler().Filter(p.Json(), nodes_);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_TRUE(f.passed.empty()) << "an init container asking 9 makes the pod ask 9: " << f.answer.dump(2);
}

TEST_F(SchedulerExtenderTest, AShareAbove1000IsRefusedOnEveryNode) {
  Start();
  const json pod = Pod("big", {{"accel.dev/gpu-milli", "1500"}});
  test_support::FilterOutcome f = Scheduler().Filter(pod, nodes_);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_TRUE(f.passed.empty());
  ASSERT_EQ(f.unresolvable.size(), nodes_.size()) << f.answer.dump(2);
  EXPECT_NE(f.unresolvable["gpu-a"].find("accel.dev/gpu-milli is 1500: a share is 1..1000 thousandths of one GPU"),
            std::string::npos)
      << f.unresolvable["gpu-a"];
  // Two forms at once, too.
  f = Scheduler().Filter(Pod("both", {{"accel.dev/gpu-milli", "500"}, {"nvidia.com/gpu", "1"}}), nodes_);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_NE(f.unresolvable["gpu-b"].find("asks for nvidia.com/gpu: 1 and accel.dev/gpu-milli: 500"), std::string::npos)
      << f.answer.dump(2);
  // And bind refuses it without claiming anything.
  EXPECT_NE(Scheduler().Bind(pod, "gpu-a").find("a share is 1..1000"), std::string::npos);
  EXPECT_TRUE(Claims().empty());
}

TEST_F(SchedulerExtenderTest, NodeNamesAndWholeNodesGiveTheSameAnswerEachInItsOwnForm) {
  Start();
  const json pod = Pod("p1", {{"accel.dev/gpu-milli", "300"}}, kH100);
  test_support::FilterOutcome names = Scheduler(true).Filter(pod, nodes_);
  test_support::FilterOutcome whole = Scheduler(false).Filter(pod, nodes_);
  ASSERT_TRUE(names.ok) << names.error;
  ASSERT_TRUE(whole.ok) << whole.error;
  EXPECT_EQ(names.passed, whole.passed);
  EXPECT_EQ(names.unresolvable, whole.unresolvable);
  EXPECT_TRUE(names.answer["Nodes"].is_null());
  EXPECT_TRUE(whole.answer["NodeNames"].is_null());
  // The whole-node answer hands back the node objects as they were sent.
  ASSERT_EQ(whole.answer["Nodes"]["items"].size(), 2u) << whole.answer.dump(2);
  EXPECT_EQ(whole.answer["Nodes"]["items"][0], nodes_[0]);
  EXPECT_EQ(whole.answer["Nodes"]["items"][1], nodes_[1]);
  // Prioritize in both forms.
  auto a = Scheduler(true).Prioritize(pod, Nodes({"gpu-a", "gpu-b"}));
  auto b = Scheduler(false).Prioritize(pod, Nodes({"gpu-a", "gpu-b"}));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(*a, *b);
}

TEST_F(SchedulerExtenderTest, PodsThatAskForNoGpuPassEveryNodeUnchangedAndBindWithoutAClaim) {
  Start();
  const json pod = Pod("web", {{"memory", "16Gi"}});
  StandInKubeScheduler s = Scheduler();
  EXPECT_FALSE(s.IsInterested(pod)) << "managedResources keep kube-scheduler from asking at all";
  test_support::FilterOutcome f = s.Filter(pod, nodes_);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_EQ(f.passed.size(), nodes_.size()) << f.answer.dump(2);
  EXPECT_TRUE(f.failed.empty() && f.unresolvable.empty());
  auto scores = s.Prioritize(pod, nodes_);
  ASSERT_TRUE(scores);
  for (const auto& [node, score] : *scores) EXPECT_EQ(score, 0) << node;
  EXPECT_EQ(s.Bind(pod, "worker-9"), "");
  EXPECT_EQ(api_.Get("/api/v1/namespaces/ml/pods/web")->at("spec").value("nodeName", ""), "worker-9");
  EXPECT_TRUE(Claims().empty());
}

// ---- prioritize ----------------------------------------------------------------------------

TEST_F(SchedulerExtenderTest, PrioritizeIsThePolicysScoreScaledToKubesRange) {
  // The packing policy: a host whose GPUs already hold shares before an idle one.
  Start(true, GpuPolicy::kPacking);
  EXPECT_EQ(kMaxExtenderPriority, 10);
  StandInKubeScheduler s = Scheduler();
  std::string why;
  ASSERT_EQ(s.ScheduleOne(Pod("p1", {{"accel.dev/gpu-milli", "470"}}, kH100), Nodes({"gpu-a", "gpu-b"}), &why), "gpu-a")
      << why;
  const json p2 = Pod("p2", {{"accel.dev/gpu-milli", "470"}}, kH100);
  auto scores = s.Prioritize(p2, Nodes({"gpu-a", "gpu-b", "worker-9"}));
  ASSERT_TRUE(scores);
  // Exactly the fleet's verdicts, 0..100 rounded to 0..10; 0 where the pod does not go.
  std::vector<HostVerdict> verdicts;
  FleetView view = FleetView::FromSnapshot(FleetStore::Open(url_)->Snapshot());
  ScheduleOptions so;
  so.now_unix = NowUnix();
  so.gpu_policy = GpuPolicy::kPacking;
  PodAsk ask = ReadPodAsk(p2);
  std::string unused;
  std::optional<placement::PlacementRequest> request = PodPlacementRequest(ask, view, nullptr, &unused);
  ASSERT_TRUE(request);
  verdicts = JudgeHosts(view, *request, so,
                        {static_cast<size_t>(view.IndexOf("gpu-a")), static_cast<size_t>(view.IndexOf("gpu-b"))});
  EXPECT_EQ((*scores)["gpu-a"], (verdicts[0].score * 10 + 50) / 100);
  EXPECT_EQ((*scores)["gpu-b"], (verdicts[1].score * 10 + 50) / 100);
  EXPECT_EQ((*scores)["worker-9"], 0);
  EXPECT_EQ((*scores)["gpu-a"], 10) << "the host already sharing a GPU first";
  EXPECT_LT((*scores)["gpu-b"], (*scores)["gpu-a"]);
  for (const auto& [node, score] : *scores) {
    EXPECT_GE(score, 0);
    EXPECT_LE(score, 10);
  }
}

// ---- bind ----------------------------------------------------------------------------------

TEST_F(SchedulerExtenderTest, BindClaimsThenCreatesTheBindingAndSharesPackOntoOneGpu) {
  Start(true, GpuPolicy::kPacking);
  StandInKubeScheduler s = Scheduler();
  std::string why;
  ASSERT_EQ(s.ScheduleOne(Pod("p1", {{"accel.dev/gpu-milli", "470"}}, kH100), nodes_, &why), "gpu-a") << why;
  std::vector<Claim> claims = Claims();
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].host, "gpu-a");
  EXPECT_EQ(claims[0].flavor, "pod/ml/p1");
  EXPECT_NE(std::find(claims[0].placement.notes.begin(), claims[0].placement.notes.end(), "pod uid uid-p1"),
            claims[0].placement.notes.end());
  ASSERT_EQ(claims[0].placement.gpus.size(), 1u);
  EXPECT_EQ(claims[0].placement.gpus[0].milli, 470);
  EXPECT_EQ(claims[0].placement.floating_cpu_milli, 2000);
  // The Binding: metadata.uid set (the API server's precondition), target the node.
  std::vector<test_support::FakeApiServer::Request> posts = api_.requests("POST", "/api/v1/namespaces/ml/pods/p1/binding");
  ASSERT_EQ(posts.size(), 1u);
  const json binding = json::parse(posts[0].body);
  EXPECT_EQ(binding["metadata"]["uid"], "uid-p1");
  EXPECT_EQ(binding["target"]["name"], "gpu-a");
  EXPECT_EQ(api_.Get("/api/v1/namespaces/ml/pods/p1")->at("spec")["nodeName"], "gpu-a");

  // A second share that fits beside the first lands on the same GPU; one that does not, on another.
  ASSERT_EQ(s.ScheduleOne(Pod("p2", {{"accel.dev/gpu-milli", "470"}}, kH100), nodes_, &why), "gpu-a") << why;
  ASSERT_EQ(s.ScheduleOne(Pod("p3", {{"accel.dev/gpu-milli", "600"}}, kH100), nodes_, &why), "gpu-a") << why;
  std::map<std::string, std::string> gpu_of;
  for (const Claim& c : Claims()) gpu_of[c.flavor] = c.placement.gpus.at(0).address;
  EXPECT_EQ(gpu_of["pod/ml/p2"], gpu_of["pod/ml/p1"]);
  EXPECT_NE(gpu_of["pod/ml/p3"], gpu_of["pod/ml/p1"]);
  EXPECT_EQ(FleetStore::Open(url_)->Audit(), std::vector<std::string>{});
  EXPECT_NE(service_->Metrics().find("accel_fleet_extender_requests_total{verb=\"bind\",result=\"ok\"} 3\n"),
            std::string::npos);
}

TEST_F(SchedulerExtenderTest, BindingOnePodTwiceKeepsOneClaim) {
  Start();
  StandInKubeScheduler s = Scheduler();
  const json pod = Pod("p1", {{"nvidia.com/gpu", "2"}});
  ASSERT_EQ(s.Bind(pod, "gpu-b"), "");
  ASSERT_EQ(Claims().size(), 1u);
  // kube-scheduler retries a bind whose answer it lost: the pod's claim is found, the API server
  // says the pod is bound there already, and that is success.
  EXPECT_EQ(s.Bind(pod, "gpu-b"), "");
  std::vector<Claim> claims = Claims();
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].placement.gpus.size(), 2u);
  EXPECT_EQ(api_.requests("POST", "/api/v1/namespaces/ml/pods/p1/binding").size(), 2u);
  // Bound elsewhere: the claim on this other node is released again.
  EXPECT_NE(s.Bind(pod, "gpu-a").find("already assigned to node"), std::string::npos);
  ASSERT_EQ(Claims().size(), 1u);
  EXPECT_EQ(Claims()[0].host, "gpu-b");
}

TEST_F(SchedulerExtenderTest, AFailedBindingReleasesTheClaim) {
  Start();
  StandInKubeScheduler s = Scheduler();
  const json pod = Pod("p1", {{"accel.dev/gpu-milli", "250"}});
  ASSERT_TRUE(s.Filter(pod, nodes_).ok);
  api_.FailNext({"POST", "/api/v1/namespaces/ml/pods/p1/binding", 403, 1, false, "", "pods \"p1\" is forbidden"});
  const std::string error = s.Bind(pod, "gpu-a");
  EXPECT_NE(error.find("cannot bind pod ml/p1 to node gpu-a"), std::string::npos) << error;
  EXPECT_NE(error.find("released"), std::string::npos) << error;
  EXPECT_TRUE(Claims().empty());
  // A pod that is gone by the time of its bind: nothing claimed either.
  const json gone = Pod("gone", {{"accel.dev/gpu-milli", "250"}});
  ASSERT_TRUE(s.Filter(gone, nodes_).ok);
  api_.Remove("/api/v1/namespaces/ml/pods/gone");
  EXPECT_NE(s.Bind(gone, "gpu-a"), "");
  EXPECT_TRUE(Claims().empty());
  // The view forgot the released claim too: the host takes a whole 8-GPU pod.
  test_support::FilterOutcome f = s.Filter(Pod("n8", {{"nvidia.com/gpu", "8"}}), Nodes({"gpu-a"}));
  EXPECT_EQ(f.passed, std::vector<std::string>{"gpu-a"}) << f.answer.dump(2);
}

TEST_F(SchedulerExtenderTest, ConcurrentBindsOnOneNodeNeverOverfillAGpu) {
  Start();
  // kube-scheduler binds in parallel goroutines. Binds to one node refuse each other's first tries
  // (the host's generation moved), look at the store again and try again (kBindRounds): each
  // bind succeeds, and no GPU holds more than 1000 thousandths.
  constexpr int kPods = 12;
  std::vector<json> pods;
  for (int i = 0; i < kPods; ++i) pods.push_back(Pod("c" + std::to_string(i), {{"accel.dev/gpu-milli", "400"}}));
  std::vector<std::string> errors(kPods);
  std::vector<std::thread> threads;
  for (int i = 0; i < kPods; ++i) threads.emplace_back([&, i] { errors[i] = Scheduler().Bind(pods[i], "gpu-a"); });
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kPods; ++i) EXPECT_EQ(errors[i], "") << "pod " << i;
  std::map<std::string, int> milli;  // per GPU
  for (const Claim& c : Claims()) milli[c.placement.gpus.at(0).address] += c.placement.gpus.at(0).milli;
  EXPECT_EQ(Claims().size(), static_cast<size_t>(kPods));
  for (const auto& [gpu, m] : milli) EXPECT_LE(m, 1000) << gpu;
  EXPECT_EQ(FleetStore::Open(url_)->Audit(), std::vector<std::string>{});
}

TEST_F(SchedulerExtenderTest, BindReadsAPodItsFilterDidNotSeeFromTheApiServer) {
  Start();
  // Another replica filtered it: this one never saw the pod.
  const json pod = Pod("p1", {{"nvidia.com/gpu", "1"}}, kH100);
  EXPECT_EQ(Scheduler().Bind(pod, "gpu-a"), "");
  ASSERT_EQ(Claims().size(), 1u);
  EXPECT_EQ(Claims()[0].placement.gpus.size(), 1u);
  // A stale UID (the pod was deleted and created again under the name) is refused.
  PodSpec old;
  old.ns = "ml";
  old.name = "p1";
  old.uid = "uid-old";
  EXPECT_NE(Scheduler().Bind(old.Json(), "gpu-a").find("is now another pod"), std::string::npos);
}

TEST_F(SchedulerExtenderTest, WithoutApiServerAccessBindSaysSoAndClaimsNothing) {
  Start(false);
  const std::string error = Scheduler().Bind(Pod("p1", {{"nvidia.com/gpu", "1"}}), "gpu-a");
  EXPECT_NE(error.find("--kubeconfig"), std::string::npos) << error;
  EXPECT_TRUE(Claims().empty());
}

TEST_F(SchedulerExtenderTest, AMigSliceIsPlacedWithTheCatalogsShape) {
  Start();
  StandInKubeScheduler s = Scheduler();
  const json pod = Pod("mig", {{"nvidia.com/mig-1g.10gb", "1"}});
  test_support::FilterOutcome f = s.Filter(pod, nodes_);
  ASSERT_TRUE(f.ok) << f.error;
  EXPECT_EQ(f.passed, (std::vector<std::string>{"gpu-a", "gpu-b"})) << f.answer.dump(2);
  // The H200's MIG profiles are others (1g.18gb, ...): never there.
  EXPECT_EQ(f.unresolvable["h200-a"], "accel: no nvidia.com/mig-1g.10gb GPU here") << f.answer.dump(2);
  EXPECT_EQ(f.unresolvable["mi-a"], "accel: no nvidia.com/mig-1g.10gb GPU here") << f.answer.dump(2);
  // A profile no model of the fleet has: nowhere.
  f = s.Filter(Pod("mig2", {{"nvidia.com/mig-2g.20gb", "1"}}), nodes_);
  EXPECT_NE(f.unresolvable["gpu-a"].find("no GPU in the fleet has MIG profile 2g.20gb"), std::string::npos)
      << f.answer.dump(2);
  ASSERT_EQ(s.Bind(pod, "gpu-b"), "");
  std::vector<Claim> claims = Claims();
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].placement.gpus.at(0).mig_profile, "1g.10gb");
  EXPECT_EQ(claims[0].placement.gpus.at(0).mig_slices, 1);
}

TEST_F(SchedulerExtenderTest, ClaimsOfPodsThatAreGoneAreReleased) {
  Start(true, GpuPolicy::kAccel, std::chrono::milliseconds(20));
  StandInKubeScheduler s = Scheduler();
  ASSERT_EQ(s.Bind(Pod("stays", {{"nvidia.com/gpu", "1"}}), "gpu-a"), "");
  ASSERT_EQ(s.Bind(Pod("goes", {{"nvidia.com/gpu", "1"}}), "gpu-a"), "");
  ASSERT_EQ(s.Bind(Pod("done", {{"nvidia.com/gpu", "1"}}), "gpu-a"), "");
  ASSERT_EQ(Claims().size(), 3u);
  api_.Remove("/api/v1/namespaces/ml/pods/goes");
  json done = *api_.Get("/api/v1/namespaces/ml/pods/done");
  done["status"]["phase"] = "Succeeded";
  api_.Put("/api/v1/namespaces/ml/pods/done", done);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (Claims().size() != 1u && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::vector<Claim> claims = Claims();
  ASSERT_EQ(claims.size(), 1u);
  EXPECT_EQ(claims[0].flavor, "pod/ml/stays");
}

// ---- the protocol's errors -----------------------------------------------------------------

TEST_F(SchedulerExtenderTest, MalformedBodiesAre400WithTheResultsErrorSet) {
  Start();
  StandInKubeScheduler s = Scheduler();
  for (const char* verb : {"filter", "prioritize", "bind"}) {
    for (const std::string& body : {std::string("{not json"), std::string("[]"), std::string("null")}) {
      http::HttpResponse r = s.Send(verb, body);
      EXPECT_EQ(r.status, 400) << verb << " " << body << ": " << r.body;
      const json doc = json::parse(r.body, nullptr, false);
      ASSERT_TRUE(doc.is_object()) << r.body;
      EXPECT_NE(doc.value("Error", ""), "") << r.body;
    }
  }
  http::HttpResponse r = s.Send("filter", R"({"NodeNames": ["gpu-a"]})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("Pod: is missing"), std::string::npos) << r.body;
  r = s.Send("filter", R"({"Pod": {"metadata": {"name": "x", "namespace": "ml"}}, "NodeNames": []})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("metadata.uid"), std::string::npos) << r.body;
  r = s.Send("bind", R"({"PodName": "x", "PodNamespace": "ml", "Node": "gpu-a"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("PodUID: is missing"), std::string::npos) << r.body;
  // Go's decoder matches keys ignoring case; so does the extender.
  r = s.Send("filter", R"({"pod": )" + Pod("lower", {{"nvidia.com/gpu", "1"}}).dump() + R"(, "nodenames": ["gpu-a"]})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["NodeNames"], json::array({"gpu-a"})) << r.body;
  // Only POST.
  r = http::HttpCall(base_, "GET", "/scheduler/filter");
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.Header("Allow"), "POST");
  // Counted: 5 bad filter bodies, 3 bad prioritize and 4 bad bind bodies, one good filter.
  const std::string metrics = service_->Metrics();
  for (const char* sample : {"accel_fleet_extender_requests_total{verb=\"filter\",result=\"bad_request\"} 5\n",
                             "accel_fleet_extender_requests_total{verb=\"prioritize\",result=\"bad_request\"} 3\n",
                             "accel_fleet_extender_requests_total{verb=\"bind\",result=\"bad_request\"} 4\n",
                             "accel_fleet_extender_requests_total{verb=\"filter\",result=\"ok\"} 1\n"})
    EXPECT_NE(metrics.find(sample), std::string::npos) << sample << metrics;
}

// ---- the deploy files ----------------------------------------------------------------------

TEST(SchedulerExtenderDeploy, TheSchedulerConfigNamesWhatTheExtenderServes) {
  for (const char* name : {"kube-scheduler-config.yaml", "second-scheduler.yaml"}) {
    const std::string file = name;
    json config;
    if (file == "second-scheduler.yaml") {
      // The KubeSchedulerConfiguration inside the second scheduler's ConfigMap.
      for (const YAML::Node& doc : YAML::LoadAll(ReadFile(kDeploy + file)))
        if (doc["kind"].as<std::string>() == "ConfigMap")
          config = ParseStructuredText(doc["data"]["accel-scheduler-config.yaml"].as<std::string>(), file);
    } else {
      config = test_support::SchedulerConfig(ReadFile(kDeploy + file), file);
    }
    ASSERT_EQ(config.value("apiVersion", ""), "kubescheduler.config.k8s.io/v1") << file;
    ASSERT_EQ(config.value("kind", ""), "KubeSchedulerConfiguration") << file;
    ASSERT_EQ(config["extenders"].size(), 1u) << file;
    const json& e = config["extenders"][0];
    for (auto it = e.begin(); it != e.end(); ++it)
      EXPECT_TRUE(test_support::ExtenderConfigFields().count(it.key())) << file << ": " << it.key() << " is not an Extender field";
    const test_support::ExtenderConfig c = test_support::ExtenderConfig::FromSchedulerConfig(config);
    // The verbs are the extender's, under the route prefix, at the Service of accel-fleet-serve.yaml.
    EXPECT_EQ(c.url_prefix + "/", "http://accel-fleet.accel-system.svc:9470" + std::string(SchedulerExtender::kPrefix)) << file;
    for (const std::string& verb : {c.filter_verb, c.prioritize_verb, c.bind_verb})
      EXPECT_TRUE(SchedulerExtender::IsVerb(verb)) << file << ": " << verb;
    EXPECT_TRUE(c.node_cache_capable);
    // kube-scheduler's validation (validateExtenders): a positive weight with prioritizeVerb,
    // extended resource names, no name twice.
    EXPECT_GT(c.weight, 0);
    std::set<std::string> seen;
    for (const json& r : e["managedResources"]) {
      const std::string name = r["name"];
      EXPECT_TRUE(seen.insert(name).second) << name << " twice";
      EXPECT_NE(name.find('/'), std::string::npos) << name;
      EXPECT_EQ(name.find("kubernetes.io/"), std::string::npos) << name;
    }
    for (const char* r : {"nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi", "accel.dev/gpu-milli"})
      EXPECT_TRUE(c.managed_resources.count(r)) << file << ": " << r;
    EXPECT_EQ(c.ignored_by_scheduler, std::set<std::string>{"accel.dev/gpu-milli"}) << file;
  }
}

TEST(SchedulerExtenderDeploy, ManifestsValidateAgainstTheV1OpenApi) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  for (const char* file : {"accel-fleet-serve.yaml", "second-scheduler.yaml"}) {
    const test_support::CrdResult r = test_support::ValidateObjects(ReadFile(kDeploy + file), std::string("extender-") + file);
    EXPECT_EQ(r.exit_code, 0) << file << ": " << r.output;
  }
}

TEST_F(SchedulerExtenderTest, TheStandInsPodsAndTheBindingsSentAreValidV1Objects) {
  ACCEL_REQUIRE_CRD_VALIDATOR();
  Start();
  json pod = Pod("p1", {{"accel.dev/gpu-milli", "470"}}, kH100);
  ASSERT_EQ(Scheduler().Bind(pod, "gpu-a"), "");
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  pod["metadata"].erase("creationTimestamp");
  std::string yaml = pod.dump() + "\n---\n";
  for (const auto& r : api_.requests("POST", "/api/v1/namespaces/ml/pods/p1/binding")) yaml += r.body + "\n---\n";
  const test_support::CrdResult r = test_support::ValidateObjects(yaml, "extender-objects");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace scheduler_extender_test
}  // namespace accel::fleet
