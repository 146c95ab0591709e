// `accel fleet serve` as an operator runs it: the real binary on an ephemeral port over a fleet of
// the fixture hosts added with `accel fleet host add`, called over real HTTP(S), every response it
// gives checked against docs/fleet-api.yaml (tests/support/openapi_check.py, python3-jsonschema):
// every route, place + claim + release as the CLI sees them, bad input (400 naming the field),
// wrong methods (405 with Allow), unknown paths and names (404), /metrics through promtool, TLS and
// basic auth from the exporter's web config file, and two replicas on one PostgreSQL that see each
// other's claims and never double-book.
#include <arpa/inet.h>
#include <crypt.h>
#include <gmock/gmock.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "common/structured_file.h"
#include "fleet/scheduler.h"
#include "support/fleet_service.h"
#include "support/postgres_server.h"
#include "support/shared_fixture.h"
#include "support/test_pki.h"

namespace accel::cli {
namespace fleet_serve_test {

using ::testing::HasSubstr;
using testing::FreshDir;
using testing::RunAccel;
using testing::RunShellCapture;
using testing::Src;
using testing::WriteFile;
using json = nlohmann::json;

const std::string kPython = "/usr/bin/python3";
const std::string kSpec = Src("docs/fleet-api.yaml");
const std::string kChecker = Src("tests/support/openapi_check.py");
const std::string kAliasesFile = Src("examples/flavors/aliases.json");

// Skips unless the checker can run: python3 with Debian's python3-jsonschema and python3-yaml
// (directories, so the executable test of ACCEL_REQUIRE_TOOL holds for them).
#define REQUIRE_SPEC_CHECKER()                                                                \
  do {                                                                                        \
    ACCEL_REQUIRE_TOOL(kPython, "python3");                                                   \
    ACCEL_REQUIRE_TOOL("/usr/lib/python3/dist-packages/jsonschema", "python3-jsonschema");    \
    ACCEL_REQUIRE_TOOL("/usr/lib/python3/dist-packages/yaml", "python3-yaml");                \
  } while (0)

json Flavor(const std::string& file) { return ReadStructuredFile(Src("examples/flavors/" + file)); }
json Aliases() { return ReadStructuredFile(kAliasesFile); }

// A flavor that takes a whole HGX H100 host: its 8 GPUs over two guest cells.
json WholeH100Host() {
  return {{"name", "gpu-8"},
          {"vcpus", 16},
          {"ram", 16384},
          {"extra_specs", {{"hw:cpu_policy", "dedicated"}, {"hw:numa_nodes", "2"}, {"pci_passthrough:alias", "h100:8"}}}};
}

std::string PlaceBody(const json& flavor, json extra = json::object()) {
  json body = {{"flavor", flavor}, {"aliases", Aliases()}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body.dump();
}

// `accel ARGS`, stdout only; fails the test on a non-zero exit.
std::string Accel(const std::string& args) {
  testing::RunResult r = RunAccel(args, false);
  EXPECT_EQ(r.exit_code, 0) << "accel " << args << "\n" << r.output;
  return r.output;
}

// Adds the test fleet: two HGX H100 hosts (az a and b; h100-b with a Nova host policy written to
// `dir`), an HGX H200 (az a), a Gaudi 2 host in maintenance (az b).
void AddFleet(const std::string& store, const std::filesystem::path& dir) {
  WriteFile(dir / "policy.yaml",
            "cpu_dedicated_set: \"2-111,114-223\"\ncpu_shared_set: \"0-1,112-113\"\ncpu_allocation_ratio: 4.0\n"
            "reserved_host_memory_mb: 4096\npacking_host_numa_cells_allocation_strategy: false\n");
  Accel("fleet host add --store '" + store + "' --topology " + Src("fixtures/hosts/hgx-h100.json") +
        " --name h100-a --label az=a --label gpu=h100");
  Accel("fleet host add --store '" + store + "' --topology " + Src("fixtures/hosts/hgx-h100.json") +
        " --name h100-b --label az=b --label gpu=h100 --policy " + (dir / "policy.yaml").string());
  Accel("fleet host add --store '" + store + "' --topology " + Src("fixtures/hosts/hgx-h200.json") +
        " --name h200-a --label az=a --label gpu=h200");
  Accel("fleet host add --store '" + store + "' --topology " + Src("fixtures/hosts/gaudi2-8hpu.json") +
        " --name hpu-a --label az=b --label gpu=gaudi2 --state maintenance");
}

// host name -> the host object of an accel.fleet-hosts/v1 document.
std::map<std::string, json> HostsByName(const json& doc) {
  std::map<std::string, json> out;
  if (doc.is_object() && doc.contains("hosts"))
    for (const json& h : doc["hosts"]) out[h["name"].get<std::string>()] = h;
  return out;
}

std::set<std::string> ClaimIds(const json& doc) {
  std::set<std::string> ids;
  if (doc.is_object() && doc.contains("claims"))
    for (const json& c : doc["claims"]) ids.insert(c["id"].get<std::string>());
  return ids;
}

// The value of the first sample line `name{labels} value` (labels exactly as written); -1 when
// there is none.
double Sample(const std::string& exposition, const std::string& series) {
  const std::string prefix = series + " ";
  size_t at = 0;
  while ((at = exposition.find(prefix, at)) != std::string::npos) {
    if (at == 0 || exposition[at - 1] == '\n') {
      const size_t end = exposition.find('\n', at);
      return std::stod(exposition.substr(at + prefix.size(), end - at - prefix.size()));
    }
    at += prefix.size();
  }
  return -1;
}

// Sends `head`, waits a moment so the server reads it alone, then `body`, on one TCP connection to
// 127.0.0.1:port; returns the whole response (the request should say Connection: close).
std::string SplitPost(int port, const std::string& head, const std::string& body) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (fd >= 0) close(fd);
    return "cannot connect";
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::string response;
  if (send(fd, head.data(), head.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(head.size())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // not a timing assertion: a gap
    if (send(fd, body.data(), body.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(body.size())) {
      timeval timeout{60, 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
      char buf[4096];
      ssize_t n;
      while ((n = recv(fd, buf, sizeof buf, 0)) > 0) response.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return response;
}

std::string Bcrypt(const std::string& password) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn("$2b$", 5, nullptr, 0, setting, sizeof setting) == nullptr) return "";
  crypt_data data{};
  const char* hash = crypt_r(password.c_str(), setting, &data);
  return hash ? hash : "";
}

class FleetServeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    REQUIRE_SPEC_CHECKER();
    dir_ = FreshDir(std::string("fleet-serve-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    store_ = "sqlite:" + (dir_ / "fleet.db").string();
  }

  // Starts the service on store_ with `args` after it.
  std::unique_ptr<test_support::FleetServe> Serve(std::vector<std::string> args = {}, const std::string& name = "serve") {
    args.insert(args.begin(), {"--store", store_});
    return std::make_unique<test_support::FleetServe>(ACCEL_BINARY, args, (dir_ / (name + ".log")).string());
  }

  // Every exchange of `api` conforms to the spec; returns what the checker matched.
  std::set<std::string> ExpectConforms(const test_support::ApiClient& api) {
    test_support::SpecCheck check = test_support::CheckExchanges(kPython, kChecker, kSpec, api.exchanges(), dir_);
    EXPECT_TRUE(check.ok) << check.output;
    return check.matched;
  }

  std::filesystem::path dir_;
  std::string store_;
};

// ---- The spec itself ---------------------------------------------------------------------------

TEST_F(FleetServeCli, SpecIsWellFormedAndListsEveryRoute) {
  testing::RunResult lint = RunShellCapture(kPython + " " + kChecker + " " + kSpec + " --lint 2>&1");
  EXPECT_EQ(lint.exit_code, 0) << lint.output;
  // The routes src/fleet/service.h lists, plus the server's own /metrics and /health.
  const std::set<std::string> routes = {
      "GET /api/v1/hosts",       "GET /api/v1/hosts/{name}", "GET /api/v1/claims",    "DELETE /api/v1/claims/{id}",
      "POST /api/v1/release",    "POST /api/v1/place",       "POST /api/v1/capacity", "POST /api/v1/filter",
      "POST /scheduler/filter",  "POST /scheduler/prioritize", "POST /scheduler/bind",
      "GET /metrics",            "GET /health",              "GET /",                 "GET /index.html",
      "GET /hosts/{name}.svg"};
  EXPECT_EQ(test_support::SpecOperations(kPython, kChecker, kSpec), routes);
}

// The checker is not a rubber stamp: a field the spec does not know, a missing field, a wrong
// Allow and an undocumented status are each refused.
TEST_F(FleetServeCli, CheckerRefusesDrift) {
  auto reply = [](const std::string& method, const std::string& path, int status, const std::string& type,
                  const std::string& allow, const std::string& body) {
    test_support::ApiReply r;
    r.method = method;
    r.path = path;
    r.status = status;
    r.content_type = type;
    r.allow = allow;
    r.body = body;
    return r;
  };
  const std::vector<test_support::ApiReply> bad = {
      reply("GET", "/api/v1/claims", 200, "application/json", "", R"({"schema": "accel.claims/v1", "claims": [], "total": 0})"),
      reply("POST", "/api/v1/release", 200, "application/json", "", R"({"released": []})"),
      reply("GET", "/api/v1/place", 405, "application/json", "GET, HEAD", R"({"error": "x"})"),
      reply("GET", "/api/v1/hosts", 500, "text/plain; charset=utf-8", "", "internal error\n")};
  for (size_t i = 0; i < bad.size(); ++i) {
    test_support::SpecCheck c = test_support::CheckExchanges(kPython, kChecker, kSpec, {bad[i]}, dir_);
    EXPECT_FALSE(c.ok) << "exchange " << i << " should not conform:\n" << c.output;
    EXPECT_THAT(c.output, HasSubstr("FAIL [0]")) << c.output;
  }
}

// ---- Every route -----------------------------------------------------------------------------

TEST_F(FleetServeCli, EveryRouteAnswersAsTheSpecSays) {
  AddFleet(store_, dir_);
  auto serve = Serve({"--capacity-flavor", Src("examples/flavors/gpu-1g.yaml"), "--aliases", kAliasesFile});
  test_support::ApiClient api(serve->Url());

  // Hosts: all four, the where filter, HEAD.
  test_support::ApiReply r = api.Get("/api/v1/hosts");
  ASSERT_EQ(r.status, 200) << r.body << serve->Log();
  std::map<std::string, json> hosts = HostsByName(r.Json());
  ASSERT_EQ(hosts.size(), 4u) << r.body;
  EXPECT_EQ(hosts["hpu-a"]["state"], "maintenance");
  EXPECT_EQ(hosts["h100-a"]["accelerators"]["free"], 8);
  EXPECT_EQ(hosts["h100-a"]["labels"]["az"], "a");
  EXPECT_EQ(hosts["h100-a"]["topology"], hosts["h100-b"]["topology"]) << "one SKU, one topology";
  EXPECT_EQ(hosts["h100-a"]["policy"], json::object());
  EXPECT_EQ(hosts["h100-b"]["policy"]["cpu_shared_set"], "0-1,112-113") << hosts["h100-b"].dump();
  EXPECT_EQ(hosts["h100-b"]["policy"]["reserved_host_memory_mb"], 4096) << hosts["h100-b"].dump();
  r = api.Get("/api/v1/hosts?where=az%3Da&where=gpu");
  ASSERT_EQ(r.status, 200) << r.body;
  std::set<std::string> names;
  for (const auto& [name, h] : HostsByName(r.Json())) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"h100-a", "h200-a"}));
  r = api.Head("/api/v1/hosts");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "");
  r = api.Get("/api/v1/hosts/h100-a");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["claims"], json::array());

  // Place + claim: the claim is in the API and in `accel fleet claims`, the same placement.
  r = api.Post("/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"claim", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  json placed = r.Json();
  ASSERT_EQ(placed["placed"], true) << r.body;
  ASSERT_EQ(placed["instances"].size(), 1u);
  const std::string host = placed["instances"][0]["host"];
  const std::string id = placed["instances"][0]["claim"];
  EXPECT_THAT(host, ::testing::AnyOf("h100-a", "h100-b"));
  EXPECT_EQ(placed["retries"], 0);
  r = api.Get("/api/v1/claims");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(ClaimIds(r.Json()), std::set<std::string>{id});
  r = api.Get("/api/v1/claims?host=" + host);
  EXPECT_EQ(ClaimIds(r.Json()), std::set<std::string>{id});
  r = api.Get("/api/v1/claims?host=h200-a");
  EXPECT_EQ(ClaimIds(r.Json()), std::set<std::string>{});
  json cli_claims = json::parse(Accel("fleet claims --store '" + store_ + "' -o json"));
  ASSERT_EQ(ClaimIds(cli_claims), std::set<std::string>{id}) << cli_claims.dump(1);
  EXPECT_EQ(cli_claims["claims"][0]["host"], host);
  EXPECT_EQ(cli_claims["claims"][0]["placement"], placed["instances"][0]["placement"]);
  r = api.Get("/api/v1/hosts/" + host);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["accelerators"]["free"], 7);
  EXPECT_EQ(ClaimIds(r.Json()), std::set<std::string>{id});
  hosts = HostsByName(api.Get("/api/v1/hosts").Json());
  EXPECT_EQ(hosts[host]["accelerators"]["free"], 7) << "the replica's own claim shows at once";
  EXPECT_EQ(hosts[host]["claims"], json::array({id}));

  // Place without claiming, two instances on different hosts, spread; and one that cannot fit.
  r = api.Post("/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"count", 2},
                                                                    {"different_hosts", true},
                                                                    {"where", {"gpu=h100"}},
                                                                    {"strategy", "spread"},
                                                                    {"alternates", 2},
                                                                    {"seed", "replica-x"}}));
  ASSERT_EQ(r.status, 200) << r.body;
  json two = r.Json();
  ASSERT_EQ(two["placed"], true) << r.body;
  ASSERT_EQ(two["instances"].size(), 2u);
  EXPECT_NE(two["instances"][0]["host"], two["instances"][1]["host"]);
  EXPECT_FALSE(two["instances"][0].contains("claim"));
  EXPECT_FALSE(two.contains("retries")) << "retries are reported for claims only";
  r = api.Post("/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"count", 1000}, {"claim", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["placed"], false);
  EXPECT_FALSE(r.Json()["why_not"].empty()) << r.body;
  EXPECT_EQ(ClaimIds(api.Get("/api/v1/claims").Json()), std::set<std::string>{id}) << "nothing claimed";

  // Capacity: the same counts as `accel fleet capacity` on the same store.
  r = api.Post("/api/v1/capacity", json({{"flavors", {Flavor("gpu-1g.yaml"), Flavor("gpu-4-2cell.yaml")}},
                                         {"aliases", Aliases()},
                                         {"group_by", "az"}})
                                       .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json cap = r.Json();
  json cli_cap = json::parse(Accel("fleet capacity --store '" + store_ + "' --flavor " + Src("examples/flavors/gpu-1g.yaml") +
                                   " --flavor " + Src("examples/flavors/gpu-4-2cell.yaml") + " --aliases " +
                                   kAliasesFile + " --group-by az -o json"));
  ASSERT_EQ(cap["flavors"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(cap["flavors"][i]["flavor"], cli_cap["flavors"][i]["flavor"]);
    EXPECT_EQ(cap["flavors"][i]["count"], cli_cap["flavors"][i]["count"]) << cap.dump(1);
    EXPECT_EQ(cap["flavors"][i]["by_az"], cli_cap["flavors"][i]["by_az"]);
  }
  EXPECT_GT(cap["flavors"][0]["count"].get<int>(), 0);
  EXPECT_EQ(cap["hosts"], 3) << "the host in maintenance is not counted";

  // Filter: which candidates take the flavor, and why not the others.
  r = api.Post("/api/v1/filter", json({{"flavor", Flavor("gpu-1g.yaml")},
                                       {"aliases", Aliases()},
                                       {"hosts", {"h100-a", "h100-b", "h200-a", "hpu-a", "nope"}},
                                       {"count", 1}})
                                     .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json filtered = r.Json();
  EXPECT_EQ(filtered["hosts"], json::array({"h100-a", "h100-b"}));
  EXPECT_THAT(filtered["rejected"]["hpu-a"].get<std::string>(), HasSubstr("maintenance"));
  EXPECT_THAT(filtered["rejected"]["h200-a"].get<std::string>(), HasSubstr("h100"));
  EXPECT_TRUE(filtered["rejected"].contains("nope"));
  // With Nova's usage for a host (all its H100s used: 4 per node), that host no longer takes it.
  const json all_h100_used = {{"pci", {{{"vendor_id", "10de"}, {"product_id", "2330"}, {"numa_node", 0}, {"used", 4}},
                                       {{"vendor_id", "10de"}, {"product_id", "2330"}, {"numa_node", 1}, {"used", 4}}}}};
  r = api.Post("/api/v1/filter", json({{"flavor", Flavor("gpu-1g.yaml")},
                                       {"aliases", Aliases()},
                                       {"hosts", {"h100-a", "h100-b"}},
                                       {"usage", {{"h100-b", all_h100_used}}}})
                                     .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["hosts"], json::array({"h100-a"})) << r.body;
  EXPECT_THAT(r.Json()["rejected"]["h100-b"].get<std::string>(), HasSubstr("h100")) << r.body;

  // The page, its pictures, metrics, health.
  r = api.Get("/");
  ASSERT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("data-host=\"h100-a\""));
  EXPECT_THAT(r.body, HasSubstr("data-flavor=\"gpu-1g\""));
  EXPECT_EQ(api.Get("/index.html").body, r.body);
  r = api.Get("/hosts/" + host + ".svg");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, HasSubstr("<svg"));
  EXPECT_THAT(r.body, HasSubstr(id)) << "the claim is drawn";
  r = api.Get("/hosts/h200-a.svg");
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(api.Get("/metrics").body, HasSubstr("accel_fleet_claims 1"));
  EXPECT_EQ(api.Get("/health").status, 200);

  // Release: DELETE one; POST several (one unknown).
  r = api.Delete("/api/v1/claims/" + id);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["released"], json::array({id}));
  EXPECT_EQ(ClaimIds(api.Get("/api/v1/claims").Json()), std::set<std::string>{});
  EXPECT_EQ(ClaimIds(json::parse(Accel("fleet claims --store '" + store_ + "' -o json"))), std::set<std::string>{});
  EXPECT_EQ(HostsByName(api.Get("/api/v1/hosts").Json())[host]["accelerators"]["free"], 8);
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    r = api.Post("/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"claim", true}}));
    ASSERT_EQ(r.Json()["placed"], true) << r.body;
    ids.push_back(r.Json()["instances"][0]["claim"]);
  }
  r = api.Post("/api/v1/release", json({{"ids", {ids[0], ids[1], "c-000000000000"}}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["released"], json(ids));
  EXPECT_EQ(r.Json()["missing"], json::array({"c-000000000000"}));
  r = api.Delete("/api/v1/claims/" + ids[0]);
  EXPECT_EQ(r.status, 404) << "released already";

  // kube-scheduler's extender (tests/cli/fleet_extender_cli_test.cc has it in depth): without
  // API server access the bind answers 200 with the error saying how to give it.
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "uid-p"}}},
                    {"spec", {{"containers", {{{"name", "c"}, {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}};
  r = api.Post("/scheduler/filter", json({{"Pod", pod}, {"NodeNames", {"h100-a", "hpu-a", "k8s-only"}}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["NodeNames"], json::array({"h100-a"})) << r.body;
  EXPECT_EQ(r.Json()["FailedAndUnresolvableNodes"]["k8s-only"], "accel: not an accel fleet host") << r.body;
  r = api.Post("/scheduler/prioritize", json({{"Pod", pod}, {"NodeNames", {"h100-a"}}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json(), json::parse(R"([{"Host": "h100-a", "Score": 10}])")) << r.body;
  r = api.Post("/scheduler/bind", json({{"PodName", "p"}, {"PodNamespace", "ml"}, {"PodUID", "uid-p"}, {"Node", "h100-a"}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.Json()["Error"].get<std::string>(), HasSubstr("--kubeconfig")) << r.body;

  testing::RunResult audit = RunAccel("fleet audit --store '" + store_ + "'");
  EXPECT_EQ(audit.exit_code, 0) << audit.output;
  EXPECT_THAT(audit.output, HasSubstr("consistent"));

  // Every response conforms, and every operation of the spec was seen answering 200.
  const std::set<std::string> matched = ExpectConforms(api);
  for (const std::string& op : test_support::SpecOperations(kPython, kChecker, kSpec))
    EXPECT_TRUE(matched.count(op + " 200")) << "no 200 of " << op << " was checked";
  EXPECT_EQ(serve->Stop(), 0) << serve->Log();
}

// ---- Errors ----------------------------------------------------------------------------------

TEST_F(FleetServeCli, BadInputIs400NamingTheField) {
  AddFleet(store_, dir_);
  auto serve = Serve();
  test_support::ApiClient api(serve->Url());
  json bogus = Flavor("gpu-1g.yaml");
  bogus["extra_specs"]["hw:cpu_policy"] = "bogus";
  json no_vcpus = Flavor("gpu-1g.yaml");
  no_vcpus["vcpus"] = "sixteen";
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"/api/v1/place", "{\"flavor\": ", "JSON"},
      {"/api/v1/place", "", "empty"},
      {"/api/v1/place", "[1, 2]", "JSON object"},
      {"/api/v1/place", "{}", "flavor"},
      {"/api/v1/place", PlaceBody(no_vcpus), "vcpus"},
      {"/api/v1/place", PlaceBody(bogus), "hw:cpu_policy"},
      {"/api/v1/place", json({{"flavor", Flavor("gpu-1g.yaml")}}).dump(), "h100"},  // alias not defined
      {"/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"count", "two"}}), "count"},
      {"/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"count", 0}}), "count"},
      {"/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"strategy", "random"}}), "strategy"},
      {"/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"where", {"=rack-3"}}}), "where"},
      {"/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"where", "az=a"}}), "where"},
      {"/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"claim", "yes"}}), "claim"},
      {"/api/v1/place", PlaceBody(json::array({Flavor("gpu-1g.yaml"), Flavor("gpu-4-2cell.yaml")})), "one flavor"},
      {"/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"aliases", json::array({{{"name", "h100"}}})}}), "vendor_id"},
      {"/api/v1/capacity", "{}", "flavors"},
      {"/api/v1/capacity", json({{"flavors", {no_vcpus}}, {"aliases", Aliases()}}).dump(), "vcpus"},
      {"/api/v1/filter", json({{"flavor", Flavor("gpu-1g.yaml")}, {"aliases", Aliases()}, {"hosts", "h100-a"}}).dump(), "hosts"},
      {"/api/v1/filter", json({{"flavor", Flavor("gpu-1g.yaml")}, {"aliases", Aliases()}, {"hosts", {"h100-a"}},
                               {"usage", "none"}}).dump(), "usage"},
      {"/api/v1/release", "{\"ids\": []}", "ids"},
      {"/api/v1/release", "{\"ids\": \"c-1\"}", "ids"},
  };
  for (const auto& [path, body, field] : cases) {
    test_support::ApiReply r = api.Post(path, body, false);
    ASSERT_EQ(r.status, 400) << path << " " << body << "\n" << r.body;
    const json error = r.Json();
    ASSERT_TRUE(error.is_object() && error.contains("error")) << r.body;
    EXPECT_THAT(error["error"].get<std::string>(), HasSubstr(field)) << path << " " << body;
  }
  // Nova's usage that does not match the host rejects that host only, with the reason.
  {
    test_support::ApiReply f = api.Post(
        "/api/v1/filter",
        json({{"flavor", Flavor("gpu-1g.yaml")}, {"aliases", Aliases()}, {"hosts", {"h100-a"}},
              {"usage", {{"h100-a", {{"cells", {{{"id", 7}}}}}}}}}).dump(),
        false);
    ASSERT_EQ(f.status, 200) << f.body;
    EXPECT_THAT(f.Json()["rejected"]["h100-a"].get<std::string>(), HasSubstr("usage.h100-a")) << f.body;
  }
  // A pool with numa_node null holds devices whose NUMA node is unknown, not any node: every H100
  // of h100-a has a node, so Nova's null pool of 2 does not match the host.
  {
    const json null_pool = {{"cells", json::array()},
                            {"pci_free", {{{"vendor_id", "10de"}, {"product_id", "2330"}, {"numa_node", nullptr}, {"free", 2}}}}};
    test_support::ApiReply f = api.Post(
        "/api/v1/filter",
        json({{"flavor", Flavor("gpu-1g.yaml")}, {"aliases", Aliases()}, {"hosts", {"h100-a"}},
              {"usage", {{"h100-a", null_pool}}}}).dump(),
        false);
    ASSERT_EQ(f.status, 200) << f.body;
    EXPECT_EQ(f.Json()["hosts"], json::array()) << f.body;
    EXPECT_THAT(f.Json()["rejected"]["h100-a"].get<std::string>(),
                HasSubstr("usage.h100-a: pci_free[0].free: 2 free, but the host has 0 10de:2330 devices whose NUMA node is unknown"))
        << f.body;
  }
  test_support::ApiReply r = api.Get("/api/v1/hosts?where=%3Drack-3");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_THAT(r.body, HasSubstr("where"));
  EXPECT_EQ(ClaimIds(api.Get("/api/v1/claims").Json()), std::set<std::string>{}) << "nothing was claimed";
  ExpectConforms(api);
}

TEST_F(FleetServeCli, WrongMethodIs405WithTheMethodsTheSpecLists) {
  AddFleet(store_, dir_);
  auto serve = Serve();
  test_support::ApiClient api(serve->Url());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"POST", "/api/v1/hosts"},   {"DELETE", "/api/v1/hosts/h100-a"}, {"PUT", "/api/v1/claims"},
      {"GET", "/api/v1/claims/c-1"}, {"GET", "/api/v1/release"},      {"GET", "/api/v1/place"},
      {"PUT", "/api/v1/capacity"}, {"DELETE", "/api/v1/filter"},      {"POST", "/metrics"},
      {"POST", "/health"},         {"POST", "/"},                      {"DELETE", "/index.html"},
      {"DELETE", "/hosts/h100-a.svg"}};
  for (const auto& [method, path] : cases) {
    test_support::ApiReply r = api.Other(method, path);
    EXPECT_EQ(r.status, 405) << method << " " << path << "\n" << r.body;
    EXPECT_FALSE(r.allow.empty()) << method << " " << path;
  }
  ExpectConforms(api);  // the checker compares each Allow with the spec's methods of the path
}

TEST_F(FleetServeCli, UnknownPathsHostsAndClaimsAre404) {
  AddFleet(store_, dir_);
  auto serve = Serve();
  test_support::ApiClient api(serve->Url());
  for (const char* path : {"/api/v2/hosts", "/api/v1", "/favicon.ico", "/api/v1/hosts/nope", "/hosts/nope.svg"}) {
    test_support::ApiReply r = api.Get(path);
    EXPECT_EQ(r.status, 404) << path << "\n" << r.body;
  }
  test_support::ApiReply r = api.Delete("/api/v1/claims/c-ffffffffffff");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_THAT(r.body, HasSubstr("c-ffffffffffff"));
  EXPECT_THAT(api.Get("/api/v1/hosts/nope").body, HasSubstr("nope"));
  ExpectConforms(api);
}

// Was a bug, fixed (src/fleet/service.cc: Place, Capacity, Filter and /api/v1/release read the keys they know
// and ignore the rest): a client that misspells "claim" gets a placement that is not held, with
// 200, and "group-by" or "host" are silently dropped. The flavor and alias readers refuse unknown
// keys, and docs/fleet-api.yaml gives these bodies additionalProperties: false; the service
// should answer 400 naming the key.
TEST_F(FleetServeCli, UnknownRequestKeysAreRefusedNotIgnored) {
  AddFleet(store_, dir_);
  auto serve = Serve();
  test_support::ApiClient api(serve->Url());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"claimed", true}})},
      {"/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"different-hosts", true}, {"count", 2}})},
      {"/api/v1/capacity", json({{"flavors", {Flavor("gpu-1g.yaml")}}, {"aliases", Aliases()}, {"group-by", "az"}}).dump()},
      {"/api/v1/filter", json({{"flavor", Flavor("gpu-1g.yaml")}, {"aliases", Aliases()}, {"host", {"h100-a"}}}).dump()},
  };
  for (const auto& [path, body] : cases) {
    test_support::ApiReply r = api.Post(path, body, false);
    EXPECT_EQ(r.status, 400) << path << " " << body << "\n" << r.body;
  }
  EXPECT_THAT(api.Post(cases[0].first, cases[0].second, false).body, HasSubstr("claimed"));
  ExpectConforms(api);
}

// Was a bug, fixed (src/fleet/service.cc, Field<int>): integer fields are read with nlohmann's get<int>(),
// which narrows without a check: "count": 4294967297 becomes 1 and places one instance with 200,
// and "count": 1.5 is truncated to 1. A count that is not a whole number in range should be 400
// naming the field, as "count": 0 is.
TEST_F(FleetServeCli, CountThatIsNotAWholeNumberInRangeIsRefusedNotNarrowed) {
  AddFleet(store_, dir_);
  auto serve = Serve();
  test_support::ApiClient api(serve->Url());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"count", 4294967297LL}})},
      {"/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"count", 1.5}})},
      {"/api/v1/filter", json({{"flavor", Flavor("gpu-1g.yaml")}, {"aliases", Aliases()}, {"hosts", {"h100-a"}},
                               {"count", 4294967297LL}}).dump()},
  };
  for (const auto& [path, body] : cases) {
    test_support::ApiReply r = api.Post(path, body, false);
    EXPECT_EQ(r.status, 400) << path << " " << body.substr(body.find("count")) << "\n" << r.body.substr(0, 200);
    EXPECT_THAT(r.body, HasSubstr("count")) << path;
  }
  ExpectConforms(api);
}

// ---- Metrics ---------------------------------------------------------------------------------

TEST_F(FleetServeCli, MetricsPassPromtoolAndHoldCapacityFreeStrandedClaimsLatencyAndRetries) {
  ACCEL_REQUIRE_TOOL("/usr/bin/promtool", "prometheus");
  AddFleet(store_, dir_);
  const json cli_cap = json::parse(Accel("fleet capacity --store '" + store_ + "' --flavor " +
                                         Src("examples/flavors/gpu-1g.yaml") + " --aliases " + kAliasesFile + " -o json"));
  auto serve = Serve({"--capacity-flavor", Src("examples/flavors/gpu-1g.yaml"), "--aliases", kAliasesFile});
  test_support::ApiClient api(serve->Url());
  test_support::ApiReply placed = api.Post("/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"claim", true}}));
  ASSERT_EQ(placed.Json()["placed"], true) << placed.body;
  const std::string host = placed.Json()["instances"][0]["host"];
  ASSERT_EQ(api.Post("/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"count", 1000}})).Json()["placed"], false);

  test_support::ApiReply r = api.Get("/metrics");
  ASSERT_EQ(r.status, 200);
  const std::string& m = r.body;
  WriteFile(dir_ / "metrics.txt", m);
  testing::RunResult lint = RunShellCapture("/usr/bin/promtool check metrics < '" + (dir_ / "metrics.txt").string() + "' 2>&1");
  EXPECT_EQ(lint.exit_code, 0) << lint.output << "\n" << m;

  // Capacity per flavor (computed at start, before the claim): what the CLI said then.
  EXPECT_EQ(Sample(m, "accel_fleet_capacity_instances{flavor=\"gpu-1g\"}"), cli_cap["flavors"][0]["count"].get<double>()) << m;
  // Free and stranded accelerators per host.
  for (const char* h : {"h100-a", "h100-b", "h200-a", "hpu-a"}) {
    const std::string label = std::string("{host=\"") + h + "\"}";
    EXPECT_EQ(Sample(m, "accel_fleet_host_accelerators_free" + label), h == host ? 7 : 8) << h << "\n" << m;
    EXPECT_GE(Sample(m, "accel_fleet_host_accelerators_stranded" + label), 0) << h << "\n" << m;
  }
  EXPECT_EQ(Sample(m, "accel_fleet_host_accelerators_unwanted{host=\"h200-a\"}"), 8) << "no capacity flavor uses an H200\n" << m;
  EXPECT_EQ(Sample(m, "accel_fleet_host_accelerators_stranded{host=\"h200-a\"}"), 0) << "not wanted is not stranded\n" << m;
  EXPECT_GE(Sample(m, "accel_fleet_gpus_unwanted"), 8) << m;
  EXPECT_GE(Sample(m, "accel_fleet_gpus_free"), Sample(m, "accel_fleet_gpus_fragmented") + Sample(m, "accel_fleet_gpus_unwanted")) << m;
  // Claims, placements, the latency histogram, retries and conflicts.
  EXPECT_EQ(Sample(m, "accel_fleet_claims"), 1) << m;
  EXPECT_EQ(Sample(m, "accel_fleet_placements_total{result=\"placed\"}"), 1) << m;
  EXPECT_EQ(Sample(m, "accel_fleet_placements_total{result=\"no_fit\"}"), 1) << m;
  EXPECT_THAT(m, HasSubstr("# TYPE accel_fleet_placement_duration_seconds histogram"));
  EXPECT_EQ(Sample(m, "accel_fleet_placement_duration_seconds_count"), 2) << m;
  EXPECT_EQ(Sample(m, "accel_fleet_placement_duration_seconds_bucket{le=\"+Inf\"}"), 2) << m;
  EXPECT_EQ(Sample(m, "accel_fleet_claim_retries_total"), 0) << m;
  EXPECT_EQ(Sample(m, "accel_fleet_claim_conflicts_total"), 0) << m;
  EXPECT_EQ(Sample(m, "accel_fleet_hosts{state=\"maintenance\"}"), 1) << m;
  EXPECT_EQ(Sample(m, "accel_fleet_store_up"), 1) << m;
  ExpectConforms(api);
}

// ---- TLS and basic auth ----------------------------------------------------------------------

TEST_F(FleetServeCli, TlsAndBasicAuthFromTheExportersWebConfigFile) {
  AddFleet(store_, dir_);
  test_support::TestPki pki;
  const std::string hash = Bcrypt("s3cret");
  ASSERT_FALSE(hash.empty());
  WriteFile(dir_ / "web.yml", "tls_server_config:\n  cert_file: " + pki.server().cert_path + "\n  key_file: " +
                                  pki.server().key_path + "\nbasic_auth_users:\n  scheduler: '" + hash + "'\n");
  auto serve = Serve({"--web.config.file", (dir_ / "web.yml").string()});

  test_support::ApiClient plain(serve->Url(false));
  EXPECT_EQ(plain.Get("/api/v1/hosts").status, 0) << "plain HTTP to a TLS port must not be answered";
  test_support::ApiClient anonymous(serve->Url(true), pki.ca().cert_path);
  test_support::ApiClient wrong(serve->Url(true), pki.ca().cert_path, "scheduler", "guess");
  test_support::ApiClient right(serve->Url(true), pki.ca().cert_path, "scheduler", "s3cret");
  for (const char* path : {"/api/v1/hosts", "/metrics", "/", "/hosts/h100-a.svg", "/health"}) {
    test_support::ApiReply r = anonymous.Get(path);
    EXPECT_EQ(r.status, 401) << path << "\n" << r.error;
    EXPECT_THAT(r.www_authenticate, HasSubstr("Basic")) << path;
    EXPECT_EQ(wrong.Get(path).status, 401) << path;
    EXPECT_EQ(right.Get(path).status, 200) << path << "\n" << serve->Log();
  }
  EXPECT_EQ(anonymous.Post("/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"claim", true}})).status, 401);
  EXPECT_EQ(wrong.Post("/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"claim", true}})).status, 401);
  EXPECT_EQ(ClaimIds(right.Get("/api/v1/claims").Json()), std::set<std::string>{}) << "a refused request claims nothing";
  // Place + claim and release over TLS with the password.
  test_support::ApiReply r = right.Post("/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"claim", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  const std::set<std::string> ids = ClaimIds(right.Get("/api/v1/claims").Json());
  ASSERT_EQ(ids, std::set<std::string>{r.Json()["instances"][0]["claim"].get<std::string>()});
  EXPECT_EQ(anonymous.Delete("/api/v1/claims/" + *ids.begin()).status, 401);
  EXPECT_EQ(right.Delete("/api/v1/claims/" + *ids.begin()).status, 200);
  EXPECT_EQ(ClaimIds(right.Get("/api/v1/claims").Json()), std::set<std::string>{});
  ExpectConforms(anonymous);
  ExpectConforms(wrong);
  ExpectConforms(right);
}

// Basic auth on requests with a body: the server must keep the Authorization header of the head
// while it reads a body that arrives in a later read (it once kept a view into the buffer the body
// overwrote, and answered such POSTs 401; fixed in 5b69e06).
TEST_F(FleetServeCli, BasicAuthAcceptsAPostWhoseBodyArrivesAfterItsHead) {
  AddFleet(store_, dir_);
  const std::string hash = Bcrypt("s3cret");
  ASSERT_FALSE(hash.empty());
  WriteFile(dir_ / "web.yml", "basic_auth_users:\n  scheduler: '" + hash + "'\n");
  auto serve = Serve({"--web.config.file", (dir_ / "web.yml").string()});
  test_support::ApiClient right(serve->Url(), "", "scheduler", "s3cret");
  ASSERT_EQ(right.Get("/api/v1/hosts").status, 200) << serve->Log();
  // The bug needs the body to arrive after the server has read the head: send them apart.
  const std::string body = json({{"flavors", {Flavor("gpu-1g.yaml")}}, {"aliases", Aliases()}}).dump();
  const std::string head = "POST /api/v1/capacity HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                           "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                           "\r\nAuthorization: Basic " + std::string("c2NoZWR1bGVyOnMzY3JldA==") /* scheduler:s3cret */ + "\r\n\r\n";
  EXPECT_THAT(SplitPost(serve->port(), head, body), ::testing::StartsWith("HTTP/1.1 200"));
  // The same with an ordinary client, several times (whether it splits depends on timing).
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(right.Post("/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"))).status, 200) << i;
  ExpectConforms(right);
}

// ---- Partitions: --replica INDEX/COUNT ------------------------------------------------------------

// The hosts h100-a .. h100-f that replica `index` of `count` prefers (fleet::PartitionOfHost).
std::set<std::string> ShareOf(int index, int count, int hosts = 6) {
  std::set<std::string> share;
  for (int i = 0; i < hosts; ++i) {
    const std::string name = "h100-" + std::string(1, static_cast<char>('a' + i));
    if (fleet::PartitionOfHost(name, count) == index) share.insert(name);
  }
  return share;
}

// A replica started with --replica prefers its share of the hosts; a request's "partition"
// overrides it ({"index": 0, "count": 1}: none); `accel fleet place --replica` does the same with
// --server and on the store; /metrics counts the share; bad partitions are refused (exit 2, 400).
TEST_F(FleetServeCli, ReplicaPrefersItsShareOfTheHosts) {
  for (int i = 0; i < 6; ++i)
    Accel("fleet host add --store '" + store_ + "' --topology " + Src("fixtures/hosts/hgx-h100.json") + " --name h100-" +
          std::string(1, static_cast<char>('a' + i)) + " --label gpu=h100");
  const std::set<std::string> share0 = ShareOf(0, 2), share1 = ShareOf(1, 2);
  ASSERT_FALSE(share0.empty());
  ASSERT_FALSE(share1.empty());
  auto serve = Serve({"--replica", "1/2"});
  EXPECT_THAT(serve->Log(), HasSubstr("replica 1/2"));
  test_support::ApiClient api(serve->Url());
  const std::string m = api.Get("/metrics").body;
  EXPECT_EQ(Sample(m, "accel_fleet_partition_hosts{partition=\"1/2\"}"), static_cast<double>(share1.size())) << m;
  EXPECT_EQ(Sample(m, "accel_fleet_partition_fallbacks_total"), 0) << m;

  auto host_of = [](const test_support::ApiReply& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    const json doc = r.Json();
    EXPECT_EQ(doc.value("placed", false), true) << r.body;
    return doc.contains("instances") && !doc["instances"].empty() ? doc["instances"][0]["host"].get<std::string>() : "";
  };
  EXPECT_TRUE(share1.count(host_of(api.Post("/api/v1/place", PlaceBody(WholeH100Host()))))) << "the replica's own share";
  EXPECT_TRUE(share0.count(host_of(
      api.Post("/api/v1/place", PlaceBody(WholeH100Host(), {{"partition", {{"index", 0}, {"count", 2}}}})))));
  EXPECT_EQ(host_of(api.Post("/api/v1/place", PlaceBody(WholeH100Host(), {{"partition", {{"index", 0}, {"count", 1}}}}))),
            "h100-a")
      << "no partition: pack, equal hosts by name";

  // The CLI: through the service, and on the store itself.
  WriteFile(dir_ / "gpu-8.json", WholeH100Host().dump());
  const std::string flavor = " --flavor " + (dir_ / "gpu-8.json").string() + " --aliases " + kAliasesFile;
  json out = json::parse(Accel("fleet place --server " + serve->Url() + flavor + " --replica 0/2 -o json"));
  EXPECT_TRUE(share0.count(out["instances"][0]["host"].get<std::string>())) << out.dump(1);
  for (int index : {0, 1}) {
    out = json::parse(Accel("fleet place --store '" + store_ + "'" + flavor + " --replica " + std::to_string(index) + "/2 -o json"));
    EXPECT_TRUE(ShareOf(index, 2).count(out["instances"][0]["host"].get<std::string>())) << index << out.dump(1);
  }

  // Bad partitions: 400 naming the field; exit 2 naming the flag; nothing claimed anywhere.
  for (const json& bad : {json({{"index", 2}, {"count", 2}}), json("0/2"), json({{"index", 0}, {"count", 2}, {"of", 1}}),
                          json({{"count", 2}}), json({{"index", 0}, {"count", 0}})}) {
    test_support::ApiReply r =
        api.Post("/api/v1/place", PlaceBody(WholeH100Host(), {{"partition", bad}, {"claim", true}}), false);
    EXPECT_EQ(r.status, 400) << bad.dump() << "\n" << r.body;
    EXPECT_THAT(r.body, HasSubstr("partition")) << bad.dump();
  }
  for (const char* bad : {"2/2", "1", "x/2", "0/0"}) {
    testing::RunResult r = RunAccel("fleet place --store '" + store_ + "'" + flavor + " --claim --replica " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("--replica")) << bad;
    r = RunAccel("fleet serve --store '" + store_ + "' --once --web.listen-address 127.0.0.1:0 --replica " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("--replica")) << bad;
  }
  EXPECT_EQ(ClaimIds(api.Get("/api/v1/claims").Json()), std::set<std::string>{});
  ExpectConforms(api);
}

// ---- Replicas on one PostgreSQL --------------------------------------------------------------

class FleetServePostgres : public FleetServeCli {
 protected:
  void SetUp() override {
    FleetServeCli::SetUp();
    if (IsSkipped()) return;
    ACCEL_REQUIRE_POSTGRES();
    pg_ = std::make_unique<test_support::PostgresServer>();
    pg_->CreateDatabase("fleet");
    store_ = pg_->Url("fleet");
    testing::RunResult m = RunAccel("fleet store migrate --store '" + store_ + "'");
    ASSERT_EQ(m.exit_code, 0) << m.output;
  }

  // Adds `n` HGX H100 hosts h100-a, h100-b, ...
  void AddH100Hosts(int n) {
    for (int i = 0; i < n; ++i)
      Accel("fleet host add --store '" + store_ + "' --topology " + Src("fixtures/hosts/hgx-h100.json") +
            " --name h100-" + std::string(1, static_cast<char>('a' + i)) + " --label gpu=h100");
  }

  std::unique_ptr<test_support::PostgresServer> pg_;
};

TEST_F(FleetServePostgres, TwoReplicasSeeEachOthersClaimsAndNeverDoubleBook) {
  AddH100Hosts(2);
  auto a = Serve({"--seed", "replica-a"}, "replica-a");
  auto b = Serve({"--seed", "replica-b"}, "replica-b");
  test_support::ApiClient api_a(a->Url()), api_b(b->Url());
  ASSERT_EQ(HostsByName(api_b.Get("/api/v1/hosts").Json()).size(), 2u);

  // A claims a whole host.
  test_support::ApiReply r = api_a.Post("/api/v1/place", PlaceBody(WholeH100Host(), {{"claim", true}}));
  ASSERT_EQ(r.status, 200) << r.body << a->Log();
  ASSERT_EQ(r.Json()["placed"], true) << r.body;
  const std::string first = r.Json()["instances"][0]["host"];
  const std::string first_id = r.Json()["instances"][0]["claim"];

  // B's view shows it after its refresh (every 500 ms). The deadline is generous: what is tested
  // is that the refresh path works, not how fast.
  bool seen = test_support::WaitUntil(
      [&] { return HostsByName(api_b.Get("/api/v1/hosts").Json())[first]["accelerators"]["free"] == 0; },
      std::chrono::seconds(30));
  ASSERT_TRUE(seen) << "replica B never saw replica A's claim on " << first << "\n" << b->Log();
  EXPECT_EQ(HostsByName(api_b.Get("/api/v1/hosts").Json())[first]["claims"], json::array({first_id}));
  EXPECT_EQ(ClaimIds(api_b.Get("/api/v1/claims").Json()), std::set<std::string>{first_id});

  // B places the same flavor: the other host; then nothing is left for either.
  r = api_b.Post("/api/v1/place", PlaceBody(WholeH100Host(), {{"claim", true}}));
  ASSERT_EQ(r.Json()["placed"], true) << r.body;
  const std::string second = r.Json()["instances"][0]["host"];
  EXPECT_NE(second, first);
  EXPECT_EQ(api_a.Post("/api/v1/place", PlaceBody(WholeH100Host(), {{"claim", true}})).Json()["placed"], false);
  EXPECT_EQ(api_b.Post("/api/v1/place", PlaceBody(WholeH100Host(), {{"claim", true}})).Json()["placed"], false);
  json claims = json::parse(Accel("fleet claims --store '" + store_ + "' -o json"));
  ASSERT_EQ(claims["claims"].size(), 2u) << claims.dump(1);
  std::set<std::string> claimed_hosts;
  for (const json& c : claims["claims"]) claimed_hosts.insert(c["host"].get<std::string>());
  EXPECT_EQ(claimed_hosts, (std::set<std::string>{first, second}));
  testing::RunResult audit = RunAccel("fleet audit --store '" + store_ + "'");
  EXPECT_EQ(audit.exit_code, 0) << audit.output;

  // The database goes away: requests that need it fail clearly (503, validated) and the replicas
  // say so in /metrics; once it is back they work again, without restarting the service.
  pg_->Stop();
  for (const char* path : {"/api/v1/claims", "/api/v1/hosts/h100-a", "/hosts/h100-a.svg"}) {
    r = api_a.Get(path);
    EXPECT_EQ(r.status, 503) << path << "\n" << r.body;
    EXPECT_THAT(r.body, HasSubstr("error")) << path;
  }
  EXPECT_EQ(api_a.Delete("/api/v1/claims/" + first_id).status, 503);
  EXPECT_EQ(api_a.Post("/api/v1/release", json({{"ids", {first_id}}}).dump()).status, 503);
  EXPECT_EQ(api_b.Post("/api/v1/place", PlaceBody(Flavor("gpu-1g.yaml"), {{"claim", true}})).Json()["placed"], false)
      << "no GPU is free in B's view: nothing to claim, so no store needed";
  seen = test_support::WaitUntil([&] { return Sample(api_b.Get("/metrics").body, "accel_fleet_store_up") == 0; },
                                 std::chrono::seconds(30));
  EXPECT_TRUE(seen) << "replica B's refresher should report the store down\n" << b->Log();
  pg_->Start();
  bool back = test_support::WaitUntil([&] { return api_a.Get("/api/v1/claims").status == 200; }, std::chrono::seconds(60));
  ASSERT_TRUE(back) << a->Log();
  EXPECT_EQ(ClaimIds(api_a.Get("/api/v1/claims").Json()).size(), 2u) << "the refused release released nothing";
  seen = test_support::WaitUntil([&] { return Sample(api_b.Get("/metrics").body, "accel_fleet_store_up") == 1; },
                                 std::chrono::seconds(30));
  EXPECT_TRUE(seen) << "replica B's refresher should find the store again\n" << b->Log();
  r = api_a.Delete("/api/v1/claims/" + first_id);
  EXPECT_EQ(r.status, 200) << r.body;
  seen = test_support::WaitUntil(
      [&] { return HostsByName(api_b.Get("/api/v1/hosts").Json())[first]["accelerators"]["free"] == 8; },
      std::chrono::seconds(30));
  EXPECT_TRUE(seen) << "replica B never saw the release\n" << b->Log();
  audit = RunAccel("fleet audit --store '" + store_ + "'");
  EXPECT_EQ(audit.exit_code, 0) << audit.output;
  EXPECT_THAT(audit.output, HasSubstr("consistent"));
  ExpectConforms(api_a);
  ExpectConforms(api_b);
}

// A replica that has not yet seen the others' claims (its refresh interval is made very long)
// picks hosts already taken: the store refuses them and it falls back to its ranked alternates,
// reporting the retries in the answer and in /metrics.
TEST_F(FleetServePostgres, AStaleReplicaFallsBackToItsAlternatesAndCountsTheRetries) {
  AddH100Hosts(3);
  auto stale = Serve({"--refresh-ms", "600000"}, "stale");
  auto fresh = Serve({}, "fresh");
  test_support::ApiClient api_stale(stale->Url()), api_fresh(fresh->Url());
  for (const char* expected : {"h100-a", "h100-b"}) {
    test_support::ApiReply r = api_fresh.Post("/api/v1/place", PlaceBody(WholeH100Host(), {{"claim", true}}));
    ASSERT_EQ(r.Json()["placed"], true) << r.body;
    EXPECT_EQ(r.Json()["instances"][0]["host"], expected) << "pack, equal hosts by name";
  }
  EXPECT_EQ(HostsByName(api_stale.Get("/api/v1/hosts").Json())["h100-a"]["accelerators"]["free"], 8)
      << "the stale replica should not have looked yet";

  test_support::ApiReply r = api_stale.Post("/api/v1/place", PlaceBody(WholeH100Host(), {{"claim", true}}));
  ASSERT_EQ(r.status, 200) << r.body;
  json out = r.Json();
  ASSERT_EQ(out["placed"], true) << r.body;
  EXPECT_EQ(out["instances"][0]["host"], "h100-c");
  EXPECT_EQ(out["retries"], 2) << r.body;
  EXPECT_EQ(out["conflicts"].size(), 2u) << r.body;
  const std::string m = api_stale.Get("/metrics").body;
  EXPECT_EQ(Sample(m, "accel_fleet_claim_retries_total"), 2) << m;
  EXPECT_EQ(Sample(m, "accel_fleet_claim_conflicts_total"), 1) << m;
  // After the conflicts it looked at those hosts again.
  EXPECT_EQ(HostsByName(api_stale.Get("/api/v1/hosts").Json())["h100-a"]["accelerators"]["free"], 0);
  testing::RunResult audit = RunAccel("fleet audit --store '" + store_ + "'");
  EXPECT_EQ(audit.exit_code, 0) << audit.output;
  ExpectConforms(api_stale);
  ExpectConforms(api_fresh);
}

// Was a bug, fixed (src/fleet/service.cc, FleetService::Place): when every candidate of an instance was taken
// meanwhile, PlaceInFleet runs another schedule round "looking at the fleet again" — but the
// service's round schedules on the same unrefreshed view, so rounds 2 and 3 pick the same taken
// hosts and the request ends lost_race although a free host exists. The CLI's rounds reload a
// snapshot and do not have this problem.
TEST_F(FleetServePostgres, AReplicaWhoseCandidatesWereAllTakenLooksAtTheFleetAgain) {
  AddH100Hosts(3);
  auto stale = Serve({"--refresh-ms", "600000"}, "stale");
  auto fresh = Serve({}, "fresh");
  test_support::ApiClient api_stale(stale->Url()), api_fresh(fresh->Url());
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(api_fresh.Post("/api/v1/place", PlaceBody(WholeH100Host(), {{"claim", true}})).Json()["placed"], true);

  // One alternate: the stale view offers h100-a then h100-b, both taken; h100-c is free.
  test_support::ApiReply r =
      api_stale.Post("/api/v1/place", PlaceBody(WholeH100Host(), {{"claim", true}, {"alternates", 1}}));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["placed"], true) << "a fresh look at the fleet finds h100-c free:\n" << r.body;
  EXPECT_EQ(r.Json()["instances"].size(), 1u) << r.body;
  if (!r.Json()["instances"].empty()) {
    EXPECT_EQ(r.Json()["instances"][0]["host"], "h100-c");
  }
  testing::RunResult audit = RunAccel("fleet audit --store '" + store_ + "'");
  EXPECT_EQ(audit.exit_code, 0) << audit.output;
  ExpectConforms(api_stale);
}

// Two replicas, --replica 0/2 and 1/2, claiming whole hosts: each fills its own share first, with
// no conflict; the one whose share is full falls back to the other's hosts (counted in /metrics),
// and the other then places on what is left of its share. Nothing is double-booked.
TEST_F(FleetServePostgres, ReplicasFillTheirSharesThenFallBack) {
  AddH100Hosts(6);
  const std::set<std::string> share0 = ShareOf(0, 2), share1 = ShareOf(1, 2);
  ASSERT_FALSE(share0.empty());
  ASSERT_FALSE(share1.empty());
  auto a = Serve({"--replica", "0/2"}, "replica-0");
  auto b = Serve({"--replica", "1/2"}, "replica-1");
  test_support::ApiClient api_a(a->Url()), api_b(b->Url());
  auto claim = [](test_support::ApiClient& api) {
    test_support::ApiReply r = api.Post("/api/v1/place", PlaceBody(WholeH100Host(), {{"claim", true}}));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json();
  };
  // Turn by turn while both shares have room: every claim in its replica's share, no retries.
  std::set<std::string> taken;
  for (size_t k = 0; k < std::min(share0.size(), share1.size()); ++k)
    for (auto* api : {&api_a, &api_b}) {
      const json r = claim(*api);
      ASSERT_EQ(r["placed"], true) << r.dump(1);
      const std::string host = r["instances"][0]["host"];
      EXPECT_TRUE((api == &api_a ? share0 : share1).count(host)) << host;
      EXPECT_EQ(r["retries"], 0) << r.dump(1);
      EXPECT_TRUE(taken.insert(host).second) << host << " twice";
    }
  // The replica with the smaller share runs out first and falls back to the other's hosts.
  test_support::ApiClient& small = share0.size() <= share1.size() ? api_a : api_b;
  test_support::ApiClient& large = share0.size() <= share1.size() ? api_b : api_a;
  const std::set<std::string>& large_share = share0.size() <= share1.size() ? share1 : share0;
  json r = claim(small);
  ASSERT_EQ(r["placed"], true) << r.dump(1);
  const std::string fallback = r["instances"][0]["host"];
  EXPECT_TRUE(large_share.count(fallback)) << fallback;
  EXPECT_TRUE(taken.insert(fallback).second) << fallback << " twice";
  EXPECT_EQ(Sample(small.Get("/metrics").body, "accel_fleet_partition_fallbacks_total"), 1);
  // The larger share's replica places on the rest of its share (after seeing the fallback claim,
  // or by a retry on its alternates), then nothing fits for either.
  while (taken.size() < 6) {
    r = claim(large);
    ASSERT_EQ(r["placed"], true) << r.dump(1);
    const std::string host = r["instances"][0]["host"];
    EXPECT_TRUE(large_share.count(host)) << host;
    EXPECT_TRUE(taken.insert(host).second) << host << " twice";
  }
  EXPECT_EQ(claim(api_a)["placed"], false);
  EXPECT_EQ(claim(api_b)["placed"], false);
  EXPECT_EQ(Sample(large.Get("/metrics").body, "accel_fleet_partition_fallbacks_total"), 0);
  json claims = json::parse(Accel("fleet claims --store '" + store_ + "' -o json"));
  EXPECT_EQ(claims["claims"].size(), 6u) << claims.dump(1);
  testing::RunResult audit = RunAccel("fleet audit --store '" + store_ + "'");
  EXPECT_EQ(audit.exit_code, 0) << audit.output;
  ExpectConforms(api_a);
  ExpectConforms(api_b);
}

}  // namespace
}  // namespace accel::cli
