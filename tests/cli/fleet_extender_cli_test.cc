// `accel fleet serve` as kube-scheduler's scheduler extender, run as an operator runs it: the real
// binary with --kubeconfig pointing at the in-test API server (tests/support/fake_apiserver.h),
// over a fleet added with `accel fleet host add`; the stand-in kube-scheduler
// (tests/support/stand_in_kube_scheduler.h, configured from deploy/'s extender block) schedules
// pods through it; the claims show in `accel fleet claims`, the Bindings in the API server; every
// answer of the three verbs is checked against docs/fleet-api.yaml.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "support/fake_apiserver.h"
#include "support/fleet_service.h"
#include "support/stand_in_kube_scheduler.h"

namespace accel::cli {
namespace fleet_extender_cli_test {

using testing::FreshDir;
using testing::RunAccel;
using testing::Src;
using testing::WriteFile;
using json = nlohmann::json;

const std::string kPython = "/usr/bin/python3";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class FleetExtenderCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDir(std::string("fleet-extender-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    store_ = "sqlite:" + (dir_ / "fleet.db").string();
    for (const auto& [name, fixture] : std::vector<std::pair<std::string, std::string>>{
             {"gpu-a", "hgx-h100"}, {"mi-a", "epyc-nps4-mi300x"}}) {
      testing::RunResult r = RunAccel("fleet host add --store '" + store_ + "' --topology " +
                                      Src("fixtures/hosts/" + fixture + ".json") + " --name " + name, false);
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    kubeconfig_ = (dir_ / "kubeconfig").string();
    WriteFile(kubeconfig_,
              "apiVersion: v1\nkind: Config\n"
              "clusters:\n- name: fake\n  cluster:\n    server: " + api_.url() + "\n"
              "users:\n- name: scheduler\n  user:\n    token: t0ken\n"
              "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: scheduler\n"
              "current-context: fake\n");
    nodes_ = {test_support::NodeJson("gpu-a"), test_support::NodeJson("mi-a"), test_support::NodeJson("worker-1")};
  }

  std::unique_ptr<test_support::FleetServe> Serve(std::vector<std::string> args) {
    args.insert(args.begin(), {"--store", store_});
    return std::make_unique<test_support::FleetServe>(ACCEL_BINARY, args, (dir_ / "serve.log").string());
  }

  test_support::StandInKubeScheduler Scheduler(const test_support::FleetServe& serve) {
    return test_support::StandInKubeScheduler(
        serve.Url(), test_support::ExtenderConfig::FromSchedulerConfig(test_support::SchedulerConfig(
                         ReadFile(Src("deploy/kubernetes/scheduler-extender/kube-scheduler-config.yaml")), "config")));
  }

  json Pod(const std::string& name, std::map<std::string, std::string> limits) {
    test_support::PodSpec p;
    p.ns = "ml";
    p.name = name;
    p.uid = "uid-" + name;
    p.limits = std::move(limits);
    p.requests = {{"cpu", "500m"}, {"memory", "4Gi"}};
    json pod = p.Json();
    api_.Put("/api/v1/namespaces/ml/pods/" + name, pod);
    return pod;
  }

  std::filesystem::path dir_;
  std::string store_, kubeconfig_;
  test_support::FakeApiServer api_;
  std::vector<json> nodes_;
};

TEST_F(FleetExtenderCli, KubeSchedulerPlacesPodsThroughTheExtenderAndTheClaimsShow) {
  auto serve = Serve({"--kubeconfig", kubeconfig_});
  EXPECT_NE(serve->Log().find("scheduler extender /scheduler/ (binds pods)"), std::string::npos) << serve->Log();
  test_support::StandInKubeScheduler s = Scheduler(*serve);
  std::string why;
  EXPECT_EQ(s.ScheduleOne(Pod("share", {{"accel.dev/gpu-milli", "470"}}), nodes_, &why), "gpu-a") << why << serve->Log();
  // An AMD GPU: only the MI300X host.
  EXPECT_EQ(s.ScheduleOne(Pod("amd", {{"amd.com/gpu", "2"}}), nodes_, &why), "mi-a") << why;
  // A MIG slice, with the MIG catalog `accel fleet serve` carries.
  EXPECT_EQ(s.ScheduleOne(Pod("mig", {{"nvidia.com/mig-3g.40gb", "1"}}), nodes_, &why), "gpu-a") << why;
  // The API server has the Bindings: each pod's nodeName.
  for (const auto& [pod, node] : std::map<std::string, std::string>{{"share", "gpu-a"}, {"amd", "mi-a"}, {"mig", "gpu-a"}})
    EXPECT_EQ(api_.Get("/api/v1/namespaces/ml/pods/" + pod)->at("spec").value("nodeName", ""), node) << pod;
  for (const auto& r : api_.requests("POST", "/api/v1/namespaces/ml/pods/"))
    EXPECT_EQ(r.headers.at("authorization"), "Bearer t0ken") << "the kubeconfig's credentials";

  testing::RunResult claims = RunAccel("fleet claims --store '" + store_ + "'", false);
  ASSERT_EQ(claims.exit_code, 0) << claims.output;
  EXPECT_NE(claims.output.find("pod/ml/share"), std::string::npos) << claims.output;
  EXPECT_NE(claims.output.find("@470m"), std::string::npos) << claims.output;
  EXPECT_NE(claims.output.find("pod/ml/amd"), std::string::npos) << claims.output;
  EXPECT_NE(claims.output.find("@3g.40gb"), std::string::npos) << claims.output;
  EXPECT_NE(claims.output.find("(500m shared)"), std::string::npos) << claims.output;
  // And through the service.
  claims = RunAccel("fleet claims --server " + serve->Url() + " -o json", false);
  ASSERT_EQ(claims.exit_code, 0) << claims.output;
  const json doc = json::parse(claims.output);
  ASSERT_EQ(doc["claims"].size(), 3u) << claims.output;
  EXPECT_EQ(serve->Stop(), 0) << serve->Log();
}

TEST_F(FleetExtenderCli, EveryExtenderAnswerIsWhatTheSpecSays) {
  ACCEL_REQUIRE_TOOL(kPython, "python3");
  ACCEL_REQUIRE_TOOL("/usr/lib/python3/dist-packages/jsonschema", "python3-jsonschema");
  auto serve = Serve({"--kubeconfig", kubeconfig_});
  test_support::StandInKubeScheduler s = Scheduler(*serve);
  test_support::ApiClient api(serve->Url());
  const json pod = Pod("p1", {{"nvidia.com/gpu", "1"}});
  // Both node forms, a pod that is refused, prioritize, bind (twice), bad bodies, the claim.
  test_support::ExtenderConfig whole = s.config();
  whole.node_cache_capable = false;
  const test_support::StandInKubeScheduler full(serve->Url(), whole);
  EXPECT_EQ(api.Post("/scheduler/filter", s.Args(pod, nodes_).dump()).status, 200);
  EXPECT_EQ(api.Post("/scheduler/filter", full.Args(pod, nodes_).dump()).status, 200);
  EXPECT_EQ(api.Post("/scheduler/filter", s.Args(Pod("big", {{"accel.dev/gpu-milli", "2000"}}), nodes_).dump()).status, 200);
  EXPECT_EQ(api.Post("/scheduler/prioritize", s.Args(pod, nodes_).dump()).status, 200);
  const json bind = {{"PodName", "p1"}, {"PodNamespace", "ml"}, {"PodUID", "uid-p1"}, {"Node", "gpu-a"}};
  test_support::ApiReply r = api.Post("/scheduler/bind", bind.dump());
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Json()["Error"], "") << r.body;
  r = api.Post("/scheduler/bind", bind.dump());
  EXPECT_EQ(r.Json()["Error"], "") << "bound already, to that node: " << r.body;
  r = api.Post("/scheduler/bind", json{{"PodName", "nope"}, {"PodNamespace", "ml"}, {"PodUID", "u"}, {"Node", "gpu-a"}}.dump());
  EXPECT_NE(r.Json()["Error"], "") << r.body;
  for (const char* verb : {"filter", "prioritize", "bind"})
    EXPECT_EQ(api.Post(std::string("/scheduler/") + verb, "{\"Pod\": ", false).status, 400);
  EXPECT_EQ(api.Get("/scheduler/bind").status, 405);
  EXPECT_EQ(api.Get("/api/v1/claims").status, 200);
  const test_support::SpecCheck check = test_support::CheckExchanges(
      kPython, Src("tests/support/openapi_check.py"), Src("docs/fleet-api.yaml"), api.exchanges(), dir_);
  EXPECT_TRUE(check.ok) << check.output;
  for (const char* op : {"POST /scheduler/filter 200", "POST /scheduler/prioritize 200", "POST /scheduler/bind 200",
                         "POST /scheduler/filter 400", "POST /scheduler/bind 400", "GET /api/v1/claims 200"})
    EXPECT_TRUE(check.matched.count(op)) << op << "\n" << check.output;
}

TEST_F(FleetExtenderCli, WithoutApiServerAccessTheExtenderFiltersButDoesNotBind) {
  auto serve = Serve({});
  EXPECT_NE(serve->Log().find("no API server access: does not bind"), std::string::npos) << serve->Log();
  test_support::StandInKubeScheduler s = Scheduler(*serve);
  const json pod = Pod("p1", {{"nvidia.com/gpu", "1"}});
  EXPECT_EQ(s.Filter(pod, nodes_).passed, std::vector<std::string>{"gpu-a"});
  const std::string error = s.Bind(pod, "gpu-a");
  EXPECT_NE(error.find("--kubeconfig FILE or --in-cluster"), std::string::npos) << error;
  testing::RunResult claims = RunAccel("fleet claims --store '" + store_ + "'", false);
  EXPECT_NE(claims.output.find("no claims"), std::string::npos) << claims.output;
}

TEST_F(FleetExtenderCli, BadExtenderFlagsExit2) {
  for (const std::string& flags :
       {std::string("--in-cluster --kubeconfig ") + kubeconfig_, std::string("--gpu-policy nope"),
        std::string("--kubeconfig ") + (dir_ / "missing").string()}) {
    testing::RunResult r = RunAccel("fleet serve --once --web.listen-address 127.0.0.1:0 --store '" + store_ + "' " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.output;
  }
}

}  // namespace fleet_extender_cli_test
}  // namespace accel::cli
