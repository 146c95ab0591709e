#include "telemetry/http_server.h"

#include <httplib.h>
#include <sys/socket.h>
#include <zlib.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "telemetry/basic_auth.h"
#include "telemetry/tls_context.h"

namespace accel::telemetry {

constexpr size_t kServerThreads = 4;
namespace {

constexpr char kMetricsType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kTextType[] = "text/plain; charset=utf-8";
constexpr char kIndexPage[] =
    "<html>\n<head><title>accel exporter</title></head>\n<body>\n<h1>accel exporter</h1>\n"
    "<p><a href=\"/metrics\">Metrics</a></p>\n<p><a href=\"/health\">Health</a></p>\n"
    "</body>\n</html>\n";
// Request bodies are never used; a bigger one is refused (413) rather than buffered.
constexpr size_t kMaxRequestBody = 64 * 1024;

// Whether an Accept-Encoding value allows gzip ("gzip", "x-gzip" or "*" with a non-zero q).
bool AcceptsGzip(const std::string& header) {
  size_t pos = 0;
  while (pos <= header.size()) {
    size_t end = header.find(',', pos);
    if (end == std::string::npos) end = header.size();
    std::string item = header.substr(pos, end - pos);
    pos = end + 1;
    size_t semi = item.find(';');
    std::string name = item.substr(0, semi);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name != "gzip" && name != "x-gzip" && name != "*") continue;
    if (semi == std::string::npos) return true;
    std::string params = item.substr(semi + 1);
    size_t q = params.find("q=");
    if (q == std::string::npos) return true;
    if (std::strtod(params.c_str() + q + 2, nullptr) > 0) return true;
  }
  return false;
}

// One gzip member (RFC 1952) of `text`. Level 1: compression happens once per rendered body,
// but the first scrape after a render waits for it, and exposition text compresses well at any
// level.
std::string Gzip(const std::string& text) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("zlib: deflateInit2 failed");
  }
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib: deflate did not finish");
  return out;
}

void SetText(httplib::Response& res, int status, const char* text) {
  res.status = status;
  res.set_content(text, kTextType);
}

}  // namespace

struct MetricsServer::Impl {
  Impl(WebConfig c, BodySource b, HealthSource h)
      : config(std::move(c)), body(std::move(b)), health(std::move(h)),
        auth(config.basic_auth_users) {}

  std::unique_ptr<httplib::Server> MakeServer();
  void Route(httplib::Server& server);
  bool Authorized(const httplib::Request& req) {
    return !auth.enabled() || auth.Verify(req.get_header_value("Authorization"));
  }
  static void Unauthorized(httplib::Response& res) {
    res.set_header("WWW-Authenticate", "Basic realm=\"accel\"");
    SetText(res, 401, "Unauthorized\n");
  }
  static void MethodNotAllowed(httplib::Response& res) {
    res.set_header("Allow", "GET, HEAD");
    SetText(res, 405, "Method Not Allowed\n");
  }
  void ServeMetrics(const httplib::Request& req, httplib::Response& res);
  std::shared_ptr<const std::string> Gzipped(const std::shared_ptr<const std::string>& text);

  const WebConfig config;
  const BodySource body;
  const HealthSource health;
  BasicAuthenticator auth;

  std::mutex lifecycle_mu;  // serializes Start and Stop
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
  std::atomic<int> port{0};

  std::mutex gzip_mu;  // held while compressing, so concurrent scrapes compress once
  std::shared_ptr<const std::string> gzip_source;  // guarded by gzip_mu
  std::shared_ptr<const std::string> gzip_body;    // guarded by gzip_mu
  std::atomic<uint64_t> gzip_compressions{0};
};

std::unique_ptr<httplib::Server> MetricsServer::Impl::MakeServer() {
  if (!config.tls.enabled) return std::make_unique<httplib::Server>();
  std::string error;
  auto server = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
    TlsSetupError e;
    if (ConfigureTlsContext(config.tls, &ctx, &e)) return true;
    error = e.field + ": " + e.problem;
    return false;
  });
  if (!server->is_valid()) {
    throw std::runtime_error("cannot set up TLS: " + (error.empty() ? "no OpenSSL context" : error));
  }
  return server;
}

void MetricsServer::Impl::Route(httplib::Server& server) {
  using httplib::Request;
  using httplib::Response;
  using Outcome = httplib::Server::HandlerResponse;

  // Methods that carry a body go through the catch-all handlers below, after httplib has read the
  // body, so a refused request does not leave stray bytes on a kept-alive connection.
  server.set_pre_routing_handler([this](const Request& req, Response& res) {
    const std::string& m = req.method;
    if (m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE" || m == "OPTIONS") {
      return Outcome::Unhandled;
    }
    if (!Authorized(req)) {
      Unauthorized(res);
      return Outcome::Handled;
    }
    if (m != "GET" && m != "HEAD") {
      MethodNotAllowed(res);
      return Outcome::Handled;
    }
    return Outcome::Unhandled;
  });
  auto refuse = [this](const Request& req, Response& res) {
    if (!Authorized(req)) {
      Unauthorized(res);
    } else {
      MethodNotAllowed(res);
    }
  };
  server.Post(".*", refuse).Put(".*", refuse).Patch(".*", refuse).Delete(".*", refuse);
  server.Options(".*", refuse);

  server.Get("/metrics", [this](const Request& req, Response& res) { ServeMetrics(req, res); });
  server.Get("/health", [this](const Request&, Response& res) {
    if (health()) {
      SetText(res, 200, "OK");
    } else {
      SetText(res, 503, "unhealthy\n");
    }
  });
  server.Get("/", [](const Request&, Response& res) {
    res.set_content(kIndexPage, "text/html; charset=utf-8");
  });
  server.Get(".*", [](const Request&, Response& res) { SetText(res, 404, "404 page not found\n"); });

  // Without this httplib would put the exception text in a response header.
  server.set_exception_handler([](const Request&, Response& res, std::exception_ptr) {
    SetText(res, 500, "internal error\n");
  });
}

void MetricsServer::Impl::ServeMetrics(const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<const std::string> text = body();
  res.status = 200;
  res.set_header("Vary", "Accept-Encoding");
  if (!text || text->empty()) {
    res.set_content("", kMetricsType);
    return;
  }
  std::shared_ptr<const std::string> payload = text;
  if (AcceptsGzip(req.get_header_value("Accept-Encoding"))) {
    payload = Gzipped(text);
    res.set_header("Content-Encoding", "gzip");
  }
  // A provider with a known length is written as is: httplib neither copies nor re-compresses it
  // (it compresses only `res.body` and chunked providers).
  res.set_content_provider(payload->size(), kMetricsType,
                           [payload](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(payload->data() + offset, length);
                           });
}

std::shared_ptr<const std::string> MetricsServer::Impl::Gzipped(
    const std::shared_ptr<const std::string>& text) {
  std::lock_guard<std::mutex> lock(gzip_mu);
  if (text != gzip_source) {
    gzip_body = std::make_shared<const std::string>(Gzip(*text));
    gzip_source = text;  // holding it keeps its address from being reused by a later body
    ++gzip_compressions;
  }
  return gzip_body;
}

MetricsServer::MetricsServer(WebConfig config, BodySource body, HealthSource health)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(body), std::move(health))) {}

MetricsServer::~MetricsServer() { Stop(); }

void MetricsServer::Start(const ListenAddress& address) {
  std::lock_guard<std::mutex> lock(impl_->lifecycle_mu);
  if (impl_->server) throw std::logic_error("MetricsServer::Start: already started");
  std::unique_ptr<httplib::Server> server = impl_->MakeServer();
  impl_->Route(*server);
  httplib::Headers headers(impl_->config.headers.begin(), impl_->config.headers.end());
  server->set_default_headers(std::move(headers));
  server->set_keep_alive_max_count(100);
  // httplib's default pool has max(8, cores - 1) threads; a scrape is a buffer write, and a node
  // has one or two Prometheus servers scraping it, so a few threads serve it and keep RSS down.
  server->new_task_queue = [] { return new httplib::ThreadPool(kServerThreads); };
  // httplib's idle wait does not notice stop(), so this bounds how long Stop takes with an idle
  // kept-alive connection. Prometheus scrapes every 15 s or more, so a longer timeout would not
  // save it a connection anyway.
  server->set_keep_alive_timeout(2);
  // Headers and body go out in separate writes; with Nagle the body of a small (gzip) response
  // waits for the client's delayed ACK, ~40 ms.
  server->set_tcp_nodelay(true);
  server->set_payload_max_length(kMaxRequestBody);
  // httplib's default sets SO_REUSEPORT, which lets a second exporter bind the same port and
  // silently take half the scrapes; SO_REUSEADDR alone only skips TIME_WAIT.
  server->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });

  // An empty host means every interface: "::" is dual-stack (httplib clears IPV6_V6ONLY); a host
  // without IPv6 falls back to 0.0.0.0. (httplib itself would bind loopback for "".)
  std::vector<std::string> hosts =
      address.host.empty() ? std::vector<std::string>{"::", "0.0.0.0"}
                           : std::vector<std::string>{address.host};
  int bound = -1;
  int bind_errno = 0;
  for (const std::string& host : hosts) {
    errno = 0;
    bound = address.port == 0 ? server->bind_to_any_port(host)
                              : (server->bind_to_port(host, address.port) ? address.port : -1);
    if (bound >= 0) break;
    bind_errno = errno;
  }
  if (bound < 0) {
    std::string reason = bind_errno != 0 ? std::strerror(bind_errno)
                                         : "the host does not resolve to a local address";
    throw std::runtime_error("cannot listen on " + FormatListenAddress(address) + ": " + reason);
  }
  httplib::Server* raw = server.get();
  impl_->thread = std::thread([raw] { raw->listen_after_bind(); });
  // stop() is a no-op until the loop runs, so Stop right after Start must wait for it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!raw->is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  impl_->server = std::move(server);
  impl_->port = bound;
}

void MetricsServer::Stop() {
  std::lock_guard<std::mutex> lock(impl_->lifecycle_mu);
  if (!impl_->server) return;
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->server.reset();
  impl_->port = 0;
}

int MetricsServer::port() const { return impl_->port; }

uint64_t MetricsServer::gzip_compressions() const { return impl_->gzip_compressions; }

}  // namespace accel::telemetry
