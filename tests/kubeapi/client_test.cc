#include "kubeapi/client.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "support/fake_apiserver.h"

namespace accel::kubeapi {
namespace client_test {

using nlohmann::json;
using test_support::FakeApiServer;

const std::string kSlices = "/apis/resource.k8s.io/v1/resourceslices";

// Records the waits a client would make instead of sleeping.
struct Waits {
  std::mutex mu;
  std::vector<long long> ms;
  std::function<void(std::chrono::milliseconds)> Hook() {
    return [this](std::chrono::milliseconds w) {
      std::lock_guard<std::mutex> lock(mu);
      ms.push_back(w.count());
    };
  }
};

KubeClientOptions Fast(Waits* waits = nullptr) {
  KubeClientOptions o;
  o.attempts = 3;
  o.initial_backoff = std::chrono::milliseconds(10);
  o.max_backoff = std::chrono::milliseconds(1000);
  o.max_total_wait = std::chrono::milliseconds(60000);
  o.timeout = std::chrono::milliseconds(5000);
  o.sleep = waits ? waits->Hook() : [](std::chrono::milliseconds) {};
  return o;
}

json Slice(const std::string& name, const std::string& node) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", name}, {"labels", {{"accel.io/node", node}}}}},
          {"spec", {{"driver", "accel.io"}, {"nodeName", node}, {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}}}}};
}

template <typename E, typename F>
E Catch(F f) {
  try {
    f();
  } catch (const E& e) {
    return e;
  }
  ADD_FAILURE() << "expected an exception";
  throw std::logic_error("no exception");
}

TEST(ApiPathTest, CoreGroupsAndNamespaces) {
  EXPECT_EQ(ApiPath("resource.k8s.io/v1", "resourceslices"), kSlices);
  EXPECT_EQ(ApiPath("v1", "nodes", "", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(ApiPath("resource.k8s.io/v1", "resourceclaims", "ns", "c"),
            "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c");
}

TEST(KubeClientTest, GetAnswersNulloptOn404AndSendsTheToken) {
  FakeApiServer server;
  server.RequireToken("s3cret");
  server.Put("/api/v1/nodes/n1", {{"apiVersion", "v1"}, {"kind", "Node"}});
  KubeClient client(server.Config("s3cret"), Fast());
  const std::optional<json> node = client.Get("/api/v1/nodes/n1");
  ASSERT_TRUE(node);
  EXPECT_EQ((*node)["metadata"]["name"], "n1");
  EXPECT_FALSE((*node)["metadata"]["uid"].get<std::string>().empty());
  EXPECT_FALSE(client.Get("/api/v1/nodes/n2"));
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].headers.at("authorization"), "Bearer s3cret");
  EXPECT_EQ(requests[0].headers.at("accept"), "application/json");
  EXPECT_EQ(requests[1].status, 404);
}

TEST(KubeClientTest, CreateUpdateDeleteRoundTrip) {
  FakeApiServer server;
  KubeClient client(server.Config(), Fast());
  const json created = client.Create(kSlices, Slice("s1", "n1"));
  EXPECT_EQ(created["metadata"]["generation"], 1);
  const std::string rv = created["metadata"]["resourceVersion"];
  EXPECT_EQ(server.requests().back().headers.at("content-type"), "application/json");

  const ApiError exists = Catch<ApiError>([&] { client.Create(kSlices, Slice("s1", "n1")); });
  EXPECT_TRUE(exists.IsAlreadyExists());
  EXPECT_FALSE(exists.IsConflict());

  json changed = created;
  changed["spec"]["pool"]["generation"] = 2;
  const json updated = client.Update(kSlices + "/s1", changed);
  EXPECT_EQ(updated["metadata"]["generation"], 2);
  EXPECT_NE(updated["metadata"]["resourceVersion"], rv);
  EXPECT_EQ(server.Get(kSlices + "/s1")->at("spec").at("pool").at("generation"), 2);

  // The stale resourceVersion is a conflict the caller can tell apart, with the API's message.
  const ApiError conflict = Catch<ApiError>([&] { client.Update(kSlices + "/s1", changed); });
  EXPECT_TRUE(conflict.IsConflict());
  EXPECT_EQ(conflict.http_status(), 409);
  EXPECT_NE(conflict.status_message().find("the object has been modified"), std::string::npos);
  EXPECT_NE(std::string(conflict.what()).find("PUT " + kSlices + "/s1"), std::string::npos) << conflict.what();

  const json patched = client.Patch(kSlices + "/s1", {{"metadata", {{"labels", {{"extra", "yes"}}}}}});
  EXPECT_EQ(patched["metadata"]["labels"]["extra"], "yes");
  EXPECT_EQ(server.requests().back().headers.at("content-type"), "application/merge-patch+json");

  EXPECT_TRUE(client.Delete(kSlices + "/s1"));
  EXPECT_FALSE(client.Delete(kSlices + "/s1"));  // idempotent
  EXPECT_FALSE(server.Get(kSlices + "/s1"));
}

TEST(KubeClientTest, ListFiltersBySelectorsAndFollowsPages) {
  FakeApiServer server;
  for (int i = 0; i < 5; ++i) server.Put(kSlices + "/a" + std::to_string(i), Slice("", "n1"));
  server.Put(kSlices + "/b0", Slice("", "n2"));
  json other = Slice("", "n1");
  other["spec"]["driver"] = "gpu.nvidia.com";
  other["metadata"]["labels"]["vendor"] = "nvidia";
  server.Put(kSlices + "/c0", other);
  server.SetPageSize(2);
  KubeClient client(server.Config(), Fast());

  const auto all = client.List(kSlices);
  EXPECT_EQ(all.size(), 7u);
  EXPECT_EQ(server.requests().size(), 4u);  // pages of 2

  server.ClearRequests();
  const auto mine = client.List(kSlices, "", "spec.nodeName=n1,spec.driver=accel.io");
  ASSERT_EQ(mine.size(), 5u);
  EXPECT_EQ(mine[0]["metadata"]["name"], "a0");
  const auto first = server.requests().front();
  EXPECT_EQ(first.query.find("fieldSelector")->second, "spec.nodeName=n1,spec.driver=accel.io");
  EXPECT_EQ(first.query.find("limit")->second, "500");

  EXPECT_EQ(client.List(kSlices, "accel.io/node=n2").size(), 1u);
  EXPECT_EQ(client.List(kSlices, "accel.io/node=n1,!vendor").size(), 5u);
  EXPECT_EQ(client.List(kSlices, "vendor").size(), 1u);
  EXPECT_EQ(client.List(kSlices, "accel.io/node!=n1").size(), 1u);
  EXPECT_TRUE(client.List("/apis/resource.k8s.io/v1/namespaces/x/resourceclaims").empty());
}

TEST(KubeClientTest, UpdateWithRetryStartsOverOnConflict) {
  FakeApiServer server;
  server.Put("/api/v1/nodes/n1", {{"metadata", {{"labels", {{"a", "1"}}}}}});
  KubeClient client(server.Config(), Fast());
  FakeApiServer::Failure conflict;
  conflict.method = "PUT";
  conflict.path = "/api/v1/nodes/n1";
  conflict.status = 409;
  conflict.count = 2;
  server.FailNext(conflict);
  int calls = 0;
  const json stored = client.UpdateWithRetry("/api/v1/nodes/n1", [&calls](json& node) {
    ++calls;
    node["metadata"]["labels"]["b"] = "2";
    return true;
  });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(stored["metadata"]["labels"]["b"], "2");
  EXPECT_EQ(server.requests("PUT", "/").size(), 3u);
  EXPECT_EQ(server.requests("GET", "/").size(), 3u);

  // Nothing to change: no write.
  server.ClearRequests();
  client.UpdateWithRetry("/api/v1/nodes/n1", [](json&) { return false; });
  EXPECT_TRUE(server.writes().empty());

  // Conflicts every time: the conflict reaches the caller.
  conflict.count = 100;
  server.FailNext(conflict);
  const ApiError e = Catch<ApiError>([&] { client.UpdateWithRetry("/api/v1/nodes/n1", [](json&) { return true; }); });
  EXPECT_TRUE(e.IsConflict());
  EXPECT_TRUE(Catch<ApiError>([&] { client.UpdateWithRetry("/api/v1/nodes/gone", [](json&) { return true; }); }).IsNotFound());
}

TEST(KubeClientTest, BacksOffOn429HonouringRetryAfterAnd5xx) {
  FakeApiServer server;
  server.Put("/api/v1/nodes/n1", json::object());
  Waits waits;
  KubeClient client(server.Config(), Fast(&waits));
  FakeApiServer::Failure busy;
  busy.status = 429;
  busy.retry_after = "3";
  server.FailNext(busy);
  server.FailNext("/api/v1/nodes/n1", 503);
  ASSERT_TRUE(client.Get("/api/v1/nodes/n1"));
  EXPECT_EQ(waits.ms, (std::vector<long long>{3000, 20}));  // Retry-After, then the doubled backoff

  // Every try fails: the last answer is the error, with the Status message and the tries.
  waits.ms.clear();
  FakeApiServer::Failure down;
  down.status = 500;
  down.count = 10;
  down.message = "etcdserver: request timed out";
  server.FailNext(down);
  const ApiError e = Catch<ApiError>([&] { client.Get("/api/v1/nodes/n1"); });
  EXPECT_EQ(e.http_status(), 500);
  EXPECT_NE(std::string(e.what()).find("etcdserver: request timed out"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("after 3 tries"), std::string::npos) << e.what();
  EXPECT_EQ(waits.ms, (std::vector<long long>{10, 20}));
}

TEST(KubeClientTest, TotalWaitIsBounded) {
  FakeApiServer server;
  Waits waits;
  KubeClientOptions o = Fast(&waits);
  o.attempts = 10;
  o.max_total_wait = std::chrono::milliseconds(5000);
  KubeClient client(server.Config(), o);
  FakeApiServer::Failure busy;
  busy.status = 429;
  busy.retry_after = "4";
  busy.count = 10;
  server.FailNext(busy);
  EXPECT_EQ(Catch<ApiError>([&] { client.Get("/api/v1/nodes/n1"); }).http_status(), 429);
  EXPECT_EQ(waits.ms, (std::vector<long long>{4000}));  // a second 4 s wait would pass 5 s
}

TEST(KubeClientTest, UnreachableServerIsRetriedThenASystemError) {
  // A port nothing listens on: bind one, learn it, close it.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  KubeConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  config.source = "test";
  Waits waits;
  KubeClient client(config, Fast(&waits));
  const SystemError e = Catch<SystemError>([&] { client.Get("/api/v1/nodes/n1"); });
  EXPECT_NE(std::string(e.what()).find("/api/v1/nodes/n1"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("3 tries"), std::string::npos) << e.what();
  EXPECT_EQ(waits.ms.size(), 2u);
}

TEST(KubeClientTest, UnauthorizedAndForbiddenSayWhoWasRefusedWhatAndTheFix) {
  FakeApiServer server;
  server.RequireToken("right");
  KubeConfig config = server.Config("wrong");
  config.identity = "service account accel-system/accel-dra";
  KubeClient wrong(config, Fast());
  const ApiError unauthorized = Catch<ApiError>([&] { wrong.Get("/api/v1/nodes/n1"); });
  EXPECT_EQ(unauthorized.http_status(), 401);
  EXPECT_TRUE(unauthorized.IsAuthError());
  const std::string u = unauthorized.what();
  EXPECT_NE(u.find("service account accel-system/accel-dra"), std::string::npos) << u;
  EXPECT_NE(u.find("get nodes"), std::string::npos) << u;

  server.Forbid("create", "resourceslices.resource.k8s.io");
  config.token = "right";
  KubeClient right(config, Fast());
  const ApiError forbidden = Catch<ApiError>([&] { right.Create(kSlices, Slice("s1", "n1")); });
  EXPECT_EQ(forbidden.http_status(), 403);
  EXPECT_EQ(forbidden.status_reason(), "Forbidden");
  const std::string f = forbidden.what();
  EXPECT_NE(f.find("service account accel-system/accel-dra"), std::string::npos) << f;
  EXPECT_NE(f.find("the service account needs create on resourceslices.resource.k8s.io: see deploy/kubernetes/"),
            std::string::npos)
      << f;
  EXPECT_NE(f.find("cannot create resource \"resourceslices\""), std::string::npos) << f;  // the API's message
  EXPECT_FALSE(server.Get(kSlices + "/s1"));
  // Other verbs still work.
  EXPECT_TRUE(right.List(kSlices).empty());
}

TEST(KubeClientTest, GarbageAnswersNameThePath) {
  FakeApiServer server;
  KubeClient client(server.Config(), Fast());
  FakeApiServer::Failure html;
  html.status = 200;
  html.garbage = true;
  server.FailNext(html);
  // A SystemError, not an ApiError: the answer carried no Status to report.
  std::string what;
  try {
    client.Get("/api/v1/nodes/n1");
    ADD_FAILURE() << "no error";
  } catch (const ApiError& e) {
    ADD_FAILURE() << "an ApiError: " << e.what();
  } catch (const SystemError& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("GET /api/v1/nodes/n1"), std::string::npos) << what;
  EXPECT_NE(what.find("not a JSON object"), std::string::npos) << what;

  html.status = 404;  // a proxy's HTML 404 on a list is not "no items"
  server.FailNext(html);
  EXPECT_THROW(client.List(kSlices), ApiError);
  html.status = 400;
  server.FailNext(html);
  const ApiError bad = Catch<ApiError>([&] { client.Create(kSlices, Slice("s", "n")); });
  EXPECT_NE(std::string(bad.what()).find("<html>"), std::string::npos) << bad.what();
}

class TokenFile {
 public:
  TokenFile() {
    char tmpl[] = "/tmp/accel-token-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  ~TokenFile() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string path() const { return dir_ + "/token"; }
  // Replaces the file the way the kubelet rotates projected tokens: a new file renamed over.
  void Write(const std::string& token) const {
    std::ofstream(dir_ + "/.new") << token << "\n";
    std::filesystem::rename(dir_ + "/.new", path());
  }

 private:
  std::string dir_;
};

TEST(KubeClientTest, RotatedTokenIsReadAgainOn401) {
  FakeApiServer server;
  server.Put("/api/v1/nodes/n1", json::object());
  TokenFile token;
  token.Write("first");
  server.RequireToken("first");
  KubeConfig config = server.Config();
  config.token_file = token.path();
  KubeClient client(config, Fast());  // re-reads only every minute
  ASSERT_TRUE(client.Get("/api/v1/nodes/n1"));

  token.Write("second");
  server.RequireToken("second");
  server.ClearRequests();
  ASSERT_TRUE(client.Get("/api/v1/nodes/n1"));
  const auto requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].status, 401);
  EXPECT_EQ(requests[1].headers.at("authorization"), "Bearer second");

  // A token that is really wrong: one re-read, then the 401 reaches the caller.
  server.RequireToken("third");
  server.ClearRequests();
  EXPECT_EQ(Catch<ApiError>([&] { client.Get("/api/v1/nodes/n1"); }).http_status(), 401);
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(KubeClientTest, TokenIsReadAgainAfterTheInterval) {
  FakeApiServer server;
  TokenFile token;
  token.Write("first");
  KubeConfig config = server.Config();
  config.token_file = token.path();
  KubeClientOptions o = Fast();
  o.token_reread = std::chrono::milliseconds(0);
  KubeClient client(config, o);
  client.Get("/api/v1/nodes/n1");
  token.Write("second");
  client.Get("/api/v1/nodes/n1");
  EXPECT_EQ(server.requests()[1].headers.at("authorization"), "Bearer second");

  std::filesystem::remove(token.path());  // mid-rotation: the last good token is kept
  client.Get("/api/v1/nodes/n1");
  EXPECT_EQ(server.requests()[2].headers.at("authorization"), "Bearer second");

  config.token_file = token.path() + ".missing";
  KubeClient never(config, o);
  EXPECT_THROW(never.Get("/api/v1/nodes/n1"), InputError);
}

TEST(KubeClientTest, ServerPathPrefixIsKept) {
  FakeApiServer server;
  KubeConfig config = server.Config();
  config.server += "/k8s/clusters/c-1/";
  KubeClient client(config, Fast());
  EXPECT_FALSE(client.Get("/api/v1/nodes/n1"));
  EXPECT_EQ(server.requests().back().path, "/k8s/clusters/c-1/api/v1/nodes/n1");
  config.server = "ftp://x";
  EXPECT_THROW(KubeClient bad(config), InputError);
}

TEST(KubeClientTest, ManyThreadsShareOneClient) {
  FakeApiServer server;
  TokenFile token;
  token.Write("t");
  server.RequireToken("t");
  KubeConfig config = server.Config();
  config.token_file = token.path();
  KubeClientOptions o = Fast();
  o.token_reread = std::chrono::milliseconds(0);
  KubeClient client(config, o);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {  // within cpp-httplib's listen backlog of 5
    threads.emplace_back([&client, t] {
      for (int i = 0; i < 10; ++i) client.Create(kSlices, Slice("s" + std::to_string(t) + "-" + std::to_string(i), "n"));
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(client.List(kSlices).size(), 40u);
}

}  // namespace
}  // namespace accel::kubeapi
