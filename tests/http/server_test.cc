// Real HTTP(S) over loopback: a HttpServer on an ephemeral port, httplib clients.
#include "http/server.h"

#include <crypt.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "support/telemetry_workloads.h"
#include "support/test_pki.h"

namespace accel::http {
namespace http_server_test {

using ::testing::HasSubstr;

constexpr char kMetricsType[] = "text/plain; version=0.0.4; charset=utf-8";

std::string Inflate(const std::string& gz) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out;
  char buf[65536];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof(buf) - z.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&z);
  return out;
}

std::string Exposition(size_t bytes) { return test_support::SampleExposition(bytes); }

std::string BcryptHash(const std::string& password) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  EXPECT_NE(crypt_gensalt_rn("$2b$", 5, nullptr, 0, setting, sizeof(setting)), nullptr);
  crypt_data data{};
  return crypt_r(password.c_str(), setting, &data);
}

std::string BasicHeader(const std::string& credentials) {
  std::string out(4 * ((credentials.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(credentials.data()),
                          static_cast<int>(credentials.size()));
  out.resize(static_cast<size_t>(n));
  return "Basic " + out;
}

// The body and health a test controls, plus the server that serves them.
class Exporter {
 public:
  explicit Exporter(WebConfig config = {})
      : body_(std::make_shared<const std::string>("up 1\n")),
        server_(
            std::move(config),
            [this] {
              std::lock_guard<std::mutex> lock(mu_);
              ++body_calls_;
              if (throw_) throw std::runtime_error("secret detail");
              return body_;
            },
            [this] { return healthy_.load(); }) {}

  void Start(const std::string& address = "127.0.0.1:0") {
    server_.Start(ParseListenAddress(address));
  }
  void SetBody(std::shared_ptr<const std::string> body) {
    std::lock_guard<std::mutex> lock(mu_);
    body_ = std::move(body);
  }
  void SetHealthy(bool healthy) { healthy_ = healthy; }
  void SetThrow(bool t) {
    std::lock_guard<std::mutex> lock(mu_);
    throw_ = t;
  }
  HttpServer& server() { return server_; }
  int port() const { return const_cast<HttpServer&>(server_).port(); }

 private:
  std::mutex mu_;
  std::shared_ptr<const std::string> body_;
  int body_calls_ = 0;
  bool throw_ = false;
  std::atomic<bool> healthy_{true};
  HttpServer server_;
};

httplib::Headers Identity() { return {{"Accept-Encoding", "identity"}}; }

std::unique_ptr<httplib::Client> PlainClient(int port) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_connection_timeout(30);
  c->set_read_timeout(30);
  c->set_decompress(false);  // the tests inflate themselves
  c->set_tcp_nodelay(true);   // else a request body waits ~40 ms for the server's delayed ACK
  return c;
}

TEST(HttpServer, ServesMetricsWithPrometheusContentType) {
  Exporter e;
  e.SetBody(std::make_shared<const std::string>("a 1\nb 2\n"));
  e.Start();
  ASSERT_GT(e.port(), 0);
  auto res = PlainClient(e.port())->Get("/metrics", Identity());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), kMetricsType);
  EXPECT_EQ(res->get_header_value("Content-Encoding"), "");
  EXPECT_EQ(res->body, "a 1\nb 2\n");
}

TEST(HttpServer, EmptyOrMissingBodyIsAnEmpty200) {
  Exporter e;
  e.SetBody(nullptr);
  e.Start();
  auto client = PlainClient(e.port());
  auto res = client->Get("/metrics", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "");
  e.SetBody(std::make_shared<const std::string>());
  res = client->Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "");
}

TEST(HttpServer, GzipRoundTrip) {
  Exporter e;
  auto body = std::make_shared<const std::string>(Exposition(200 * 1024));
  e.SetBody(body);
  e.Start();
  auto res = PlainClient(e.port())->Get("/metrics", {{"Accept-Encoding", "deflate, gzip;q=0.8"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(res->get_header_value("Content-Type"), kMetricsType);
  EXPECT_EQ(res->get_header_value("Vary"), "Accept-Encoding");
  EXPECT_LT(res->body.size(), body->size() / 5);
  EXPECT_EQ(Inflate(res->body), *body);
}

TEST(HttpServer, GzipOnlyWhenAccepted) {
  Exporter e;
  e.Start();
  auto client = PlainClient(e.port());
  for (const char* accept : {"identity", "gzip;q=0", "br", "deflate", "gzip;q=0.0"}) {
    auto res = client->Get("/metrics", {{"Accept-Encoding", accept}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->get_header_value("Content-Encoding"), "") << accept;
    EXPECT_EQ(res->body, "up 1\n") << accept;
  }
  for (const char* accept : {"gzip", "GZIP", "x-gzip", "*", "br;q=1, gzip;q=0.5"}) {
    auto res = client->Get("/metrics", {{"Accept-Encoding", accept}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->get_header_value("Content-Encoding"), "gzip") << accept;
    EXPECT_EQ(Inflate(res->body), "up 1\n") << accept;
  }
}

TEST(HttpServer, CompressesEachBodyOnce) {
  Exporter e;
  e.SetBody(std::make_shared<const std::string>(Exposition(50 * 1024)));
  e.Start();
  auto client = PlainClient(e.port());
  const httplib::Headers gzip = {{"Accept-Encoding", "gzip"}};
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(client->Get("/metrics", gzip));
  EXPECT_EQ(e.server().gzip_compressions(), 1u);
  ASSERT_TRUE(client->Get("/metrics", Identity()));
  EXPECT_EQ(e.server().gzip_compressions(), 1u);

  // A new snapshot, even with the same text, is a new pointer: compressed once more.
  auto next = std::make_shared<const std::string>(Exposition(50 * 1024));
  e.SetBody(next);
  std::vector<std::thread> scrapers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    scrapers.emplace_back([&] {
      auto c = PlainClient(e.port());
      for (int i = 0; i < 10; ++i) {
        auto res = c->Get("/metrics", gzip);
        if (!res || Inflate(res->body) != *next) ++bad;
      }
    });
  }
  for (auto& t : scrapers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(e.server().gzip_compressions(), 2u);
}

TEST(HttpServer, HeadHasHeadersButNoBody) {
  Exporter e;
  e.Start();
  auto res = PlainClient(e.port())->Head("/metrics", Identity());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Length"), "5");
  EXPECT_EQ(res->body, "");
}

TEST(HttpServer, HealthFollowsTheHealthSource) {
  Exporter e;
  e.Start();
  auto client = PlainClient(e.port());
  auto res = client->Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "OK");
  e.SetHealthy(false);
  res = client->Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 503);
}

TEST(HttpServer, IndexNotFoundAndMethodNotAllowed) {
  Exporter e;
  e.Start();
  auto client = PlainClient(e.port());
  client->set_keep_alive(true);
  auto res = client->Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_THAT(res->get_header_value("Content-Type"), HasSubstr("text/html"));
  EXPECT_THAT(res->body, HasSubstr("href=\"/metrics\""));
  EXPECT_THAT(res->body, HasSubstr("href=\"/health\""));

  for (const char* path : {"/nope", "/metrics/", "/metricsx", "/index.html"}) {
    res = client->Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << path;
  }
  // A refused POST with a body must not break the kept-alive connection.
  res = client->Post("/metrics", std::string(10000, 'x'), "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
  EXPECT_EQ(res->get_header_value("Allow"), "GET, HEAD");
  res = client->Get("/metrics", Identity());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, "up 1\n");
  auto expect_405 = [](const httplib::Result& r) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405);
  };
  expect_405(client->Put("/metrics", "x", "text/plain"));
  expect_405(client->Delete("/metrics"));
  expect_405(client->Options("/metrics"));
  expect_405(client->Patch("/", "x", "text/plain"));
}

TEST(HttpServer, BodySourceFailureIsA500WithoutDetail) {
  Exporter e;
  e.SetThrow(true);
  e.Start();
  auto res = PlainClient(e.port())->Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 500);
  EXPECT_FALSE(res->has_header("EXCEPTION_WHAT"));
  EXPECT_EQ(res->body.find("secret"), std::string::npos);
}

TEST(HttpServer, ConfiguredHeadersOnEveryResponse) {
  WebConfig config;
  config.headers = {{"X-Frame-Options", "deny"}, {"X-Content-Type-Options", "nosniff"}};
  Exporter e(config);
  e.Start();
  auto client = PlainClient(e.port());
  for (const char* path : {"/metrics", "/health", "/", "/missing"}) {
    auto res = client->Get(path);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->get_header_value("X-Frame-Options"), "deny") << path;
    EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff") << path;
  }
  auto res = client->Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("X-Frame-Options"), "deny");
}

TEST(HttpServer, BasicAuthProtectsEveryRoute) {
  WebConfig config;
  config.basic_auth_users = {{"prometheus", BcryptHash("s3cret")}};
  Exporter e(config);
  e.Start();
  auto client = PlainClient(e.port());
  const httplib::Headers right = {{"Authorization", BasicHeader("prometheus:s3cret")}};
  const httplib::Headers wrong = {{"Authorization", BasicHeader("prometheus:guess")}};
  const httplib::Headers nobody = {{"Authorization", BasicHeader("root:s3cret")}};
  for (const char* path : {"/metrics", "/health", "/", "/missing"}) {
    for (const httplib::Headers& h : {httplib::Headers{}, wrong, nobody}) {
      auto res = client->Get(path, h);
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 401) << path;
      EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Basic realm=\"accel\"");
    }
  }
  auto res = client->Get("/metrics", right);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "up 1\n");
  res = client->Get("/missing", right);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  // Unauthenticated writes learn nothing about which methods exist.
  res = client->Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  httplib::Headers post_auth = right;
  res = client->Post("/metrics", post_auth, "x", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 405);
}

// Every scrape serves the same rendered text: plain, or gzip compressed once per snapshot.
// (How fast a scrape is: bench/telemetry_bench, BM_ScrapeCopy.)
TEST(HttpServer, ScrapesServeOneRenderCompressedOnce) {
  Exporter e;
  auto body = std::make_shared<const std::string>(Exposition(200 * 1024));
  e.SetBody(body);
  e.Start();
  auto client = PlainClient(e.port());
  client->set_keep_alive(true);
  for (const char* encoding : {"identity", "gzip"}) {
    const httplib::Headers h = {{"Accept-Encoding", encoding}};
    for (int i = 0; i < 20; ++i) {
      auto res = client->Get("/metrics", h);
      ASSERT_TRUE(res);
      ASSERT_EQ(res->status, 200);
      ASSERT_EQ(std::string(encoding) == "gzip" ? Inflate(res->body) : res->body, *body) << encoding;
    }
  }
  EXPECT_EQ(e.server().gzip_compressions(), 1u);
}

TEST(HttpServer, ListenErrorsAndLifecycle) {
  Exporter a;
  a.Start();
  Exporter b;
  try {
    b.Start("127.0.0.1:" + std::to_string(a.port()));
    FAIL() << "a second server bound a busy port";
  } catch (const std::runtime_error& err) {
    EXPECT_THAT(err.what(), HasSubstr("cannot listen on 127.0.0.1:" + std::to_string(a.port())));
    EXPECT_THAT(err.what(), HasSubstr("in use"));
  }
  Exporter c;
  EXPECT_THROW(c.Start("192.0.2.1:0"), std::runtime_error);  // TEST-NET-1: not a local address

  EXPECT_THROW(a.Start(), std::logic_error);
  a.server().Stop();
  a.server().Stop();
  EXPECT_EQ(a.port(), 0);
  a.Start();  // again after Stop
  auto res = PlainClient(a.port())->Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HttpServer, EmptyHostListensOnEveryInterface) {
  Exporter e;
  e.Start(":0");
  auto res = PlainClient(e.port())->Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HttpServer, StopIsQuickWithAnIdleKeptAliveClient) {
  Exporter e;
  e.Start();
  auto client = PlainClient(e.port());
  client->set_keep_alive(true);
  ASSERT_TRUE(client->Get("/health"));
  // Stop must not wait for the idle client to hang up. A generous watchdog catches a Stop that
  // blocks on it; how fast it returns is not this test's business.
  std::promise<void> stopped;
  std::future<void> done = stopped.get_future();
  std::thread stopper([&] {
    e.server().Stop();
    stopped.set_value();
  });
  bool returned = done.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  EXPECT_TRUE(returned) << "Stop waits for an idle keep-alive client";
  if (!returned) client.reset();  // hang up, so the thread can finish
  stopper.join();
}

// SetWorkers: as many kept-alive connections served at once as workers (`accel fleet serve
// --concurrency`). The handler holds every request until all clients are inside it, which only
// happens when each connection has a worker; the 60 s wait only bounds a failure.
TEST(HttpServer, SetWorkersServesThatManyConnectionsAtOnce) {
  Exporter e;
  constexpr int kClients = 6;  // more than the default four
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  e.server().AddHandler("/wait", [&](const HttpServer::Request&) {
    std::unique_lock<std::mutex> lock(mu);
    ++inside;
    cv.notify_all();
    const bool all = cv.wait_for(lock, std::chrono::seconds(60), [&] { return inside >= kClients; });
    return HttpServer::Reply{all ? 200 : 504, "text/plain; charset=utf-8", all ? "together\n" : "alone\n", ""};
  });
  EXPECT_THROW(e.server().SetWorkers(0), std::logic_error);
  e.server().SetWorkers(kClients);
  e.Start();
  EXPECT_THROW(e.server().SetWorkers(8), std::logic_error);  // after Start
  std::atomic<int> together{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&] {
      auto c = PlainClient(e.port());
      c->set_keep_alive(true);
      c->set_read_timeout(90);
      if (auto res = c->Get("/wait"); res && res->status == 200) ++together;
    });
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(together.load(), kClients);
}

// ---- TLS -------------------------------------------------------------------------------------

class MetricsServerTls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new test_support::TestPki(); }
  static void TearDownTestSuite() {
    delete pki_;
    pki_ = nullptr;
  }

  static WebConfig Config(const std::string& extra = "") {
    return ParseWebConfig("tls_server_config:\n  cert_file: " + pki_->server().cert_path +
                              "\n  key_file: " + pki_->server().key_path + "\n" + extra,
                          "web.yml");
  }

  // A client that verifies the server against the test CA, optionally presenting a cert.
  static std::unique_ptr<httplib::SSLClient> Client(int port, const test_support::PemPair* cert) {
    auto c = cert ? std::make_unique<httplib::SSLClient>("127.0.0.1", port, cert->cert_path,
                                                         cert->key_path)
                  : std::make_unique<httplib::SSLClient>("127.0.0.1", port);
    c->set_ca_cert_path(pki_->ca().cert_path.c_str());
    c->enable_server_certificate_verification(true);
    c->set_connection_timeout(2);
    c->set_read_timeout(2);
    return c;
  }

  static bool Scrapes(int port, const test_support::PemPair* cert) {
    auto res = Client(port, cert)->Get("/metrics");
    return res && res->status == 200 && res->body == "up 1\n";
  }

  static test_support::TestPki* pki_;
};

test_support::TestPki* MetricsServerTls::pki_ = nullptr;

TEST_F(MetricsServerTls, ServesHttpsAndRefusesPlainHttp) {
  Exporter e(Config());
  e.Start();
  EXPECT_TRUE(Scrapes(e.port(), nullptr));
  EXPECT_TRUE(Scrapes(e.port(), &pki_->client()));  // NoClientCert ignores a sent cert
  auto plain = PlainClient(e.port())->Get("/metrics");
  EXPECT_TRUE(!plain || plain->status != 200);
}

// A scraper that gives up mid-response (scrape timeout) must not kill the exporter: OpenSSL writes
// with write(2), which raises SIGPIPE on a closed connection.
TEST_F(MetricsServerTls, SurvivesAClientThatHangsUpMidResponse) {
  Exporter e(Config());
  e.SetBody(std::make_shared<const std::string>(Exposition(4 * 1024 * 1024)));
  e.Start();
  for (int i = 0; i < 3; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(e.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    ASSERT_EQ(SSL_connect(ssl), 1);
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_GT(SSL_write(ssl, request.data(), static_cast<int>(request.size())), 0);
    char first[1024];
    ASSERT_GT(SSL_read(ssl, first, sizeof(first)), 0);  // the response has started
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);  // hang up with megabytes still to come
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto res = Client(e.port(), nullptr)->Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(MetricsServerTls, GzipAndBasicAuthOverTls) {
  WebConfig config = Config();
  config.basic_auth_users = {{"prometheus", BcryptHash("s3cret")}};
  Exporter e(config);
  auto body = std::make_shared<const std::string>(Exposition(100 * 1024));
  e.SetBody(body);
  e.Start();
  auto client = Client(e.port(), nullptr);
  client->set_decompress(false);
  auto res = client->Get("/metrics", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = client->Get("/metrics", {{"Accept-Encoding", "gzip"},
                                 {"Authorization", BasicHeader("prometheus:s3cret")}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(Inflate(res->body), *body);
}

TEST_F(MetricsServerTls, RequireAndVerifyClientCertIsMutualTls) {
  Exporter e(Config("  client_ca_file: " + pki_->ca().cert_path +
                    "\n  client_auth_type: RequireAndVerifyClientCert\n"));
  e.Start();
  EXPECT_FALSE(Scrapes(e.port(), nullptr));
  EXPECT_FALSE(Scrapes(e.port(), &pki_->rogue()));
  EXPECT_TRUE(Scrapes(e.port(), &pki_->client()));
}

TEST_F(MetricsServerTls, VerifyClientCertIfGiven) {
  Exporter e(Config("  client_ca_file: " + pki_->ca().cert_path +
                    "\n  client_auth_type: VerifyClientCertIfGiven\n"));
  e.Start();
  EXPECT_TRUE(Scrapes(e.port(), nullptr));
  EXPECT_FALSE(Scrapes(e.port(), &pki_->rogue()));
  EXPECT_TRUE(Scrapes(e.port(), &pki_->client()));
}

TEST_F(MetricsServerTls, RequireAnyClientCertDoesNotVerify) {
  Exporter e(Config("  client_auth_type: RequireAnyClientCert\n"));
  e.Start();
  EXPECT_FALSE(Scrapes(e.port(), nullptr));
  EXPECT_TRUE(Scrapes(e.port(), &pki_->rogue()));
}

TEST_F(MetricsServerTls, RequestClientCertAcceptsAnything) {
  Exporter e(Config("  client_auth_type: RequestClientCert\n"));
  e.Start();
  EXPECT_TRUE(Scrapes(e.port(), nullptr));
  EXPECT_TRUE(Scrapes(e.port(), &pki_->rogue()));
}

TEST_F(MetricsServerTls, ClientAllowedSans) {
  Exporter e(Config("  client_ca_file: " + pki_->ca().cert_path +
                    "\n  client_auth_type: RequireAndVerifyClientCert\n"
                    "  client_allowed_sans: [scraper.example, 10.1.2.3]\n"));
  e.Start();
  test_support::PemPair by_ip = pki_->ClientWithSans("by-ip", "IP:10.1.2.3");
  test_support::PemPair other = pki_->ClientWithSans("other", "DNS:other.example,IP:10.9.9.9");
  EXPECT_TRUE(Scrapes(e.port(), &pki_->client()));
  EXPECT_TRUE(Scrapes(e.port(), &by_ip));
  EXPECT_FALSE(Scrapes(e.port(), &other));
  EXPECT_FALSE(Scrapes(e.port(), &pki_->rogue()));  // right SAN, wrong CA
}

TEST_F(MetricsServerTls, MinVersionIsEnforced) {
  Exporter e(Config("  min_version: TLS13\n"));
  e.Start();
  EXPECT_TRUE(Scrapes(e.port(), nullptr));
  auto old = Client(e.port(), nullptr);
  SSL_CTX_set_max_proto_version(old->ssl_context(), TLS1_2_VERSION);
  auto res = old->Get("/metrics");
  EXPECT_FALSE(res);
}

TEST_F(MetricsServerTls, MaxVersionIsEnforced) {
  Exporter e(Config("  max_version: TLS12\n"));
  e.Start();
  EXPECT_TRUE(Scrapes(e.port(), nullptr));
  auto modern = Client(e.port(), nullptr);
  SSL_CTX_set_min_proto_version(modern->ssl_context(), TLS1_3_VERSION);
  EXPECT_FALSE(modern->Get("/metrics"));
}

}  // namespace
}  // namespace accel::http
