#include "http/server.h"

#include <netdb.h>
#include <openssl/err.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <vector>

#include "common/error.h"
#include "http/basic_auth.h"
#include "http/request.h"
#include "http/stream.h"
#include "http/tls_context.h"

namespace accel::http {

// A scrape is a buffer write and a node has one or two Prometheus servers scraping it, so a few
// threads serve it and keep RSS down (SetWorkers raises it for an API server).
constexpr size_t kDefaultWorkers = 4;
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kMetricsType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kTextType[] = "text/plain; charset=utf-8";
constexpr char kHtmlType[] = "text/html; charset=utf-8";
constexpr char kIndexPage[] =
    "<html>\n<head><title>accel exporter</title></head>\n<body>\n<h1>accel exporter</h1>\n"
    "<p><a href=\"/metrics\">Metrics</a></p>\n<p><a href=\"/health\">Health</a></p>\n"
    "</body>\n</html>\n";

// A request head must fit here (else 431); it is also the buffer request bodies are read into
// and discarded from.
constexpr size_t kMaxRequestHead = 16 * 1024;
// Pages and /metrics use no body; a bigger one is refused (413) rather than read. Handlers
// (AddHandler) get bodies up to kMaxHandlerBody.
constexpr size_t kMaxRequestBody = 64 * 1024;
constexpr size_t kMaxHandlerBody = 1024 * 1024;
// Accepted connections waiting for a worker; beyond this new ones are closed at once.
constexpr size_t kMaxQueued = 64;
// Prometheus scrapes every 15 s or more, so a longer keep-alive would not save it a connection,
// and an idle connection holds one of the few workers.
constexpr auto kIdleTimeout = seconds(2);
// From a connection's accept (TLS handshake included), or a later request's first byte, to the
// end of its head and body.
constexpr auto kRequestTimeout = seconds(10);
// A response write gives up after this long without progress.
constexpr auto kWriteStall = milliseconds(10000);

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

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

// RFC 9110 IMF-fixdate, written without the locale ("Sun, 06 Nov 1994 08:49:37 GMT").
void AppendDate(std::string& out) {
  static constexpr char kDays[] = "SunMonTueWedThuFriSat";
  static constexpr char kMonths[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.3s, %02d %.3s %04d %02d:%02d:%02d GMT", kDays + 3 * tm.tm_wday,
                tm.tm_mday, kMonths + 3 * tm.tm_mon, tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                tm.tm_sec);
  out += buf;
}

// What a request is answered with. `body` points into `owner` or into static text.
struct Response {
  int status = 200;                           ///< status code
  const char* content_type = kTextType;       ///< Content-Type value
  std::string_view body;                      ///< the payload (also for HEAD: its length)
  std::shared_ptr<const std::string> owner;   ///< keeps a source's body alive while writing
  bool gzip = false;                          ///< Content-Encoding: gzip
  bool vary = false;                          ///< Vary: Accept-Encoding
  const char* extra = nullptr;                ///< one more "Name: value" header line, or null
};

Response Text(int status, std::string_view text) {
  Response r;
  r.status = status;
  r.body = text;
  return r;
}

// Per-worker buffers, reused for every request the worker serves.
struct WorkerBuffers {
  std::array<char, kMaxRequestHead> in;  ///< request head, pipelined bytes, discarded bodies
  std::string head;                      ///< the response head being written
};

// Opens a listening socket on `host`:`port`. Returns the descriptor, or -1 with `*reason` set.
int ListenOn(const std::string& host, int port, std::string* reason) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    *reason = rc == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      *reason = std::strerror(errno);
      continue;
    }
    // SO_REUSEADDR only skips TIME_WAIT; SO_REUSEPORT would let a second exporter bind the same
    // port and silently take half the scrapes.
    int yes = 1, no = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    // "::" serves IPv4 too (dual stack), whatever the host's bindv6only default.
    if (ai->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof(no));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      *reason = std::strerror(errno);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0 && reason->empty()) *reason = "the host does not resolve to a local address";
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

}  // namespace

struct HttpServer::Impl {
  Impl(WebConfig c, BodySource b, HealthSource h)
      : config(std::move(c)), body(std::move(b)), health(std::move(h)),
        auth(config.basic_auth_users) {
    for (const auto& [name, value] : config.headers) {
      configured_headers += name + ": " + value + "\r\n";
    }
  }

  SSL_CTX* MakeTlsContext() const;
  void AcceptLoop();
  void WorkLoop();
  bool Enqueue(int fd);
  void Serve(int fd, WorkerBuffers& buffers);
  bool SkipBody(HttpStream& stream, WorkerBuffers& buffers, size_t* have, size_t head_size,
                uint64_t body_size, Clock::time_point deadline);
  Response Route(const RequestHead& request);
  /// The handler for `path`, or nullptr (longest prefix wins).
  const Handler* HandlerFor(std::string_view path) const;
  bool ReadBody(HttpStream& stream, WorkerBuffers& buffers, size_t* have, size_t head_size,
                uint64_t body_size, Clock::time_point deadline, std::string* body);
  Response Handle(const RequestHead& request, const Handler& handler, std::string body);
  Response ServeMetrics(const RequestHead& request);
  std::shared_ptr<const std::string> Gzipped(const std::shared_ptr<const std::string>& text);
  bool Send(HttpStream& stream, WorkerBuffers& buffers, const Response& response, bool head_only,
            int connection);
  void Refuse(HttpStream& stream, WorkerBuffers& buffers, int status, const char* text) {
    Send(stream, buffers, Text(status, text), false, -1);
    stream.Close(true);  // unread input may follow: drain it, so no reset destroys the answer
  }
  bool Authorized(const RequestHead& request) {
    return !auth.enabled() || auth.Verify(request.authorization);
  }

  const WebConfig config;
  const BodySource body;
  const HealthSource health;
  BasicAuthenticator auth;
  std::string configured_headers;  // "Name: value\r\n" for each configured header
  /// AddPage's pages by path: content type and body. Written only before Start.
  std::map<std::string, std::pair<std::string, std::shared_ptr<const std::string>>> pages;
  /// AddHandler's handlers by path prefix. Written only before Start.
  std::map<std::string, Handler, std::less<>> handlers;

  std::mutex lifecycle_mu;  // serializes Start and Stop
  bool running = false;     // guarded by lifecycle_mu
  int listen_fd = -1;
  int stop_fd = -1;          // eventfd, readable once Stop has begun
  SSL_CTX* tls = nullptr;    // null for plain HTTP
  std::thread acceptor;
  size_t worker_count = kDefaultWorkers;  // SetWorkers; guarded by lifecycle_mu
  std::vector<std::thread> workers;
  std::atomic<bool> stopping{false};
  std::atomic<int> port{0};

  std::mutex queue_mu;
  std::condition_variable queue_cv;
  std::array<int, kMaxQueued> queue{};  // ring of accepted sockets, guarded by queue_mu
  size_t queue_front = 0;               // guarded by queue_mu
  size_t queue_size = 0;                // guarded by queue_mu
  bool queue_closed = false;            // guarded by queue_mu; set once the acceptor has ended

  std::mutex gzip_mu;  // held while compressing, so concurrent scrapes compress once
  std::shared_ptr<const std::string> gzip_source;  // guarded by gzip_mu
  std::shared_ptr<const std::string> gzip_body;    // guarded by gzip_mu
  std::atomic<uint64_t> gzip_compressions{0};
};

SSL_CTX* HttpServer::Impl::MakeTlsContext() const {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    ERR_clear_error();
    throw SystemError("cannot set up TLS", "", "no OpenSSL context");
  }
  TlsSetupError e;
  if (!ConfigureTlsContext(config.tls, ctx, &e)) {
    SSL_CTX_free(ctx);
    throw SystemError("cannot set up TLS", e.field, e.problem, "check the web config's certificate and key");
  }
  return ctx;
}

void HttpServer::Impl::AcceptLoop() {
  pollfd fds[2] = {{listen_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) break;
    if (fds[0].revents == 0) continue;
    for (;;) {
      int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        // Out of descriptors: back off rather than spin on a readable listening socket.
        if (errno == EMFILE || errno == ENFILE) std::this_thread::sleep_for(milliseconds(50));
        break;
      }
      // The TLS path writes head and body as separate records; without this the second waits
      // for the client's delayed ACK (~40 ms).
      int yes = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
      if (!Enqueue(fd)) close(fd);
    }
  }
  std::lock_guard<std::mutex> lock(queue_mu);
  queue_closed = true;
  queue_cv.notify_all();
}

bool HttpServer::Impl::Enqueue(int fd) {
  std::lock_guard<std::mutex> lock(queue_mu);
  if (queue_size == kMaxQueued) return false;
  queue[(queue_front + queue_size) % kMaxQueued] = fd;
  ++queue_size;
  queue_cv.notify_one();
  return true;
}

void HttpServer::Impl::WorkLoop() {
  auto buffers = std::make_unique<WorkerBuffers>();
  buffers->head.reserve(1024);
  for (;;) {
    int fd;
    {
      std::unique_lock<std::mutex> lock(queue_mu);
      queue_cv.wait(lock, [&] { return queue_size > 0 || queue_closed; });
      if (queue_size == 0) return;
      fd = queue[queue_front];
      queue_front = (queue_front + 1) % kMaxQueued;
      --queue_size;
    }
    Serve(fd, *buffers);
  }
}

// Serves requests on one connection until it closes, idles out, or the server stops.
void HttpServer::Impl::Serve(int fd, WorkerBuffers& buffers) {
  HttpStream stream(fd, stop_fd);
  Clock::time_point deadline = Clock::now() + kRequestTimeout;
  if (tls != nullptr && !stream.AcceptTls(tls, deadline)) return;
  char* in = buffers.in.data();
  size_t have = 0;  // bytes in `in`: the next request's beginning (pipelined) or nothing
  for (bool first = true;; first = false) {
    if (!first) deadline = Clock::now() + (have > 0 ? kRequestTimeout : kIdleTimeout);
    size_t head_size;
    while ((head_size = FindHeadEnd(std::string_view(in, have))) == 0) {
      if (have == kMaxRequestHead) {
        return Refuse(stream, buffers, 431, "request head too large\n");
      }
      size_t n = stream.Read(in + have, kMaxRequestHead - have, deadline, true);
      if (n == 0) return;
      if (have == 0 && !first) deadline = Clock::now() + kRequestTimeout;
      have += n;
    }
    RequestHead request;
    if (HeadError e = ParseRequestHead(std::string_view(in, head_size), &request);
        e != HeadError::kNone) {
      return Refuse(stream, buffers, HeadErrorStatus(e), HeadErrorText(e));
    }
    if (request.has_transfer_encoding) {
      return Refuse(stream, buffers, 411, "a request body needs a Content-Length\n");
    }
    const Handler* handler = HandlerFor(request.path);
    if (request.content_length > (handler ? kMaxHandlerBody : kMaxRequestBody)) {
      return Refuse(stream, buffers, 413, "request body too large\n");
    }
    const bool head_only = request.method == "HEAD";
    const bool keep_alive = (request.minor_version >= 1 ? !request.connection_close
                                                         : request.connection_keep_alive) &&
                            !stopping;
    // 0: no Connection header (HTTP/1.1 keep-alive), 1: "keep-alive" (HTTP/1.0), -1: "close".
    const int connection = !keep_alive ? -1 : request.minor_version == 0 ? 1 : 0;
    Response response;
    if (handler != nullptr) {
      // The head's views die when the body is read over them: copy what the handler needs first.
      RequestHead copy = request;
      std::string method(request.method), target(request.target), path(request.path),
          authorization(request.authorization);
      copy.method = method;
      copy.target = target;
      copy.path = path;
      copy.authorization = authorization;
      std::string body;
      if (!ReadBody(stream, buffers, &have, head_size, request.content_length, deadline, &body)) return;
      response = Handle(copy, *handler, std::move(body));
    } else {
      // Route reads the head's views; the body is skipped (over those bytes) only afterwards.
      response = Route(request);
      if (!SkipBody(stream, buffers, &have, head_size, request.content_length, deadline)) return;
    }
    if (!Send(stream, buffers, response, head_only, connection) || !keep_alive) return;
  }
}

// Drops the request head and `body_size` body bytes from the front of `in`, reading what has not
// arrived yet; pipelined bytes after the body stay. Returns false when the connection ended.
bool HttpServer::Impl::SkipBody(HttpStream& stream, WorkerBuffers& buffers, size_t* have,
                                   size_t head_size, uint64_t body_size,
                                   Clock::time_point deadline) {
  char* in = buffers.in.data();
  size_t consumed = head_size + static_cast<size_t>(body_size);
  while (*have < consumed) {
    consumed -= *have;
    *have = stream.Read(in, kMaxRequestHead, deadline, false);
    if (*have == 0) return false;
  }
  std::memmove(in, in + consumed, *have - consumed);
  *have -= consumed;
  return true;
}

// Like SkipBody, but keeps the body's bytes in *body.
bool HttpServer::Impl::ReadBody(HttpStream& stream, WorkerBuffers& buffers, size_t* have,
                                   size_t head_size, uint64_t body_size, Clock::time_point deadline,
                                   std::string* body) {
  char* in = buffers.in.data();
  const size_t wanted = static_cast<size_t>(body_size);
  body->clear();
  body->reserve(wanted);
  size_t start = head_size;  // where the body's bytes begin in `in`
  while (body->size() < wanted) {
    if (*have > start) {
      const size_t take = std::min(*have - start, wanted - body->size());
      body->append(in + start, take);
      start += take;
      continue;
    }
    *have = stream.Read(in, kMaxRequestHead, deadline, false);
    start = 0;
    if (*have == 0) return false;
  }
  std::memmove(in, in + start, *have - start);
  *have -= start;
  return true;
}

const HttpServer::Handler* HttpServer::Impl::HandlerFor(std::string_view path) const {
  if (path == "/metrics" || path == "/health") return nullptr;
  const Handler* best = nullptr;
  size_t best_length = 0;
  for (const auto& [prefix, handler] : handlers) {
    const bool match = prefix == "/" || path == prefix ||
                       (path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix &&
                        path[prefix.size()] == '/');
    if (match && (best == nullptr || prefix.size() > best_length)) {
      best = &handler;
      best_length = prefix.size();
    }
  }
  return best;
}

const char* StaticContentType(const std::string& type) {
  static const char* const kKnown[] = {"application/json", "text/html; charset=utf-8", "image/svg+xml",
                                       "text/plain; charset=utf-8", "application/yaml"};
  for (const char* known : kKnown)
    if (type == known) return known;
  return "application/octet-stream";
}

const char* StaticAllow(const std::string& allow) {
  static const char* const kKnown[] = {"Allow: GET, HEAD", "Allow: POST", "Allow: GET, HEAD, POST",
                                       "Allow: DELETE", "Allow: GET, HEAD, DELETE"};
  for (const char* known : kKnown)
    if (allow == known + 7) return known;
  return "Allow: GET, HEAD, POST, DELETE";
}

Response HttpServer::Impl::Handle(const RequestHead& request, const Handler& handler, std::string body) {
  try {
    if (!Authorized(request)) {
      Response r = Text(401, "Unauthorized\n");
      r.extra = "WWW-Authenticate: Basic realm=\"accel\"";
      return r;
    }
    Request req;
    req.method = std::string(request.method);
    req.path = std::string(request.path);
    const size_t q = request.target.find('?');
    if (q != std::string_view::npos) req.query = std::string(request.target.substr(q + 1));
    req.body = std::move(body);
    Reply reply = handler(req);
    Response r;
    r.status = reply.status;
    r.content_type = StaticContentType(reply.content_type);
    if (!reply.allow.empty()) r.extra = StaticAllow(reply.allow);
    r.owner = std::make_shared<const std::string>(std::move(reply.body));
    r.body = *r.owner;
    return r;
  } catch (...) {
    return Text(500, "internal error\n");  // the text may name files or hosts: keep it in
  }
}

Response HttpServer::Impl::Route(const RequestHead& request) {
  try {
    const bool readonly = request.method == "GET" || request.method == "HEAD";
    if (!Authorized(request)) {
      Response r = Text(401, "Unauthorized\n");
      r.extra = "WWW-Authenticate: Basic realm=\"accel\"";
      return r;
    }
    if (!readonly) {
      Response r = Text(405, "Method Not Allowed\n");
      r.extra = "Allow: GET, HEAD";
      return r;
    }
    if (request.path == "/metrics") return ServeMetrics(request);
    if (request.path == "/health") return health() ? Text(200, "OK") : Text(503, "unhealthy\n");
    if (auto page = pages.find(std::string(request.path)); page != pages.end()) {
      Response r;
      r.content_type = page->second.first.c_str();
      r.owner = page->second.second;
      r.body = *r.owner;
      return r;
    }
    if (request.path == "/") {
      Response r = Text(200, kIndexPage);
      r.content_type = kHtmlType;
      return r;
    }
    return Text(404, "404 page not found\n");
  } catch (...) {
    // A source's exception text stays in the process: it may name files or hosts.
    return Text(500, "internal error\n");
  }
}

Response HttpServer::Impl::ServeMetrics(const RequestHead& request) {
  Response r;
  r.content_type = kMetricsType;
  r.vary = true;
  std::shared_ptr<const std::string> text = body();
  if (!text || text->empty()) return r;
  r.owner = text;
  if (request.accepts_gzip) {
    r.owner = Gzipped(text);
    r.gzip = true;
  }
  r.body = *r.owner;
  return r;
}

std::shared_ptr<const std::string> HttpServer::Impl::Gzipped(
    const std::shared_ptr<const std::string>& text) {
  std::lock_guard<std::mutex> lock(gzip_mu);
  if (text != gzip_source) {
    gzip_body = std::make_shared<const std::string>(Gzip(*text));
    gzip_source = text;  // holding it keeps its address from being reused by a later body
    ++gzip_compressions;
  }
  return gzip_body;
}

// Writes the status line, headers and (unless `head_only`) body in one gathered write.
bool HttpServer::Impl::Send(HttpStream& stream, WorkerBuffers& buffers,
                               const Response& response, bool head_only, int connection) {
  std::string& out = buffers.head;
  out.clear();
  char number[24];
  out += "HTTP/1.1 ";
  out.append(number, std::to_chars(number, number + sizeof(number), response.status).ptr);
  out += ' ';
  out += Reason(response.status);
  out += "\r\nContent-Type: ";
  out += response.content_type;
  out += "\r\nContent-Length: ";
  out.append(number, std::to_chars(number, number + sizeof(number), response.body.size()).ptr);
  if (response.gzip) out += "\r\nContent-Encoding: gzip";
  if (response.vary) out += "\r\nVary: Accept-Encoding";
  if (response.extra != nullptr) {
    out += "\r\n";
    out += response.extra;
  }
  if (connection != 0) out += connection < 0 ? "\r\nConnection: close" : "\r\nConnection: keep-alive";
  out += "\r\nDate: ";
  AppendDate(out);
  out += "\r\n";
  out += configured_headers;
  out += "\r\n";
  iovec iov[2] = {{out.data(), out.size()},
                  {const_cast<char*>(response.body.data()), head_only ? 0 : response.body.size()}};
  return stream.Write(iov, 2, kWriteStall);
}

HttpServer::HttpServer(WebConfig config, BodySource body, HealthSource health)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(body), std::move(health))) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::AddPage(const std::string& path, const std::string& content_type,
                            std::string body) {
  std::lock_guard<std::mutex> lock(impl_->lifecycle_mu);
  if (impl_->running) throw std::logic_error("HttpServer::AddPage after Start");
  impl_->pages[path] = {content_type, std::make_shared<const std::string>(std::move(body))};
}

void HttpServer::AddHandler(const std::string& prefix, Handler handler) {
  std::lock_guard<std::mutex> lock(impl_->lifecycle_mu);
  if (impl_->running) throw std::logic_error("HttpServer::AddHandler after Start");
  impl_->handlers[prefix] = std::move(handler);
}

void HttpServer::SetWorkers(int workers) {
  std::lock_guard<std::mutex> lock(impl_->lifecycle_mu);
  if (impl_->running) throw std::logic_error("HttpServer::SetWorkers after Start");
  if (workers < 1) throw std::logic_error("HttpServer::SetWorkers: needs at least one worker");
  impl_->worker_count = static_cast<size_t>(workers);
}

void HttpServer::Start(const ListenAddress& address) {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.lifecycle_mu);
  if (s.running) throw std::logic_error("HttpServer::Start: already started");
  // OpenSSL is touched only here and only for TLS: a plain exporter never initialises it.
  SSL_CTX* tls = s.config.tls.enabled ? s.MakeTlsContext() : nullptr;

  // An empty host means every interface: "::" is dual-stack; a host without IPv6 falls back to
  // 0.0.0.0.
  const std::vector<std::string> hosts =
      address.host.empty() ? std::vector<std::string>{"::", "0.0.0.0"}
                           : std::vector<std::string>{address.host};
  int fd = -1;
  std::string reason;
  for (size_t i = 0; i < hosts.size() && fd < 0; ++i) {
    reason.clear();
    fd = ListenOn(hosts[i], address.port, &reason);
  }
  int stop_fd = fd < 0 ? -1 : eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd >= 0 && stop_fd < 0) reason = std::strerror(errno);
  if (stop_fd < 0) {
    if (fd >= 0) close(fd);
    if (tls != nullptr) SSL_CTX_free(tls);
    throw SystemError("cannot listen on", FormatListenAddress(address), reason,
                      "is another exporter on this port? choose another with the listen address");
  }

  s.listen_fd = fd;
  s.stop_fd = stop_fd;
  s.tls = tls;
  s.stopping = false;
  s.queue_closed = false;
  s.port = BoundPort(fd);
  // The socket is listening already: connections queue in the kernel until the acceptor polls.
  s.acceptor = std::thread([&s] { s.AcceptLoop(); });
  for (size_t i = 0; i < s.worker_count; ++i) s.workers.emplace_back([&s] { s.WorkLoop(); });
  s.running = true;
}

void HttpServer::Stop() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.lifecycle_mu);
  if (!s.running) return;
  s.stopping = true;
  const uint64_t one = 1;
  // Wakes the acceptor and every idle connection's read; it stays readable until closed.
  [[maybe_unused]] ssize_t n = write(s.stop_fd, &one, sizeof(one));
  s.acceptor.join();
  close(s.listen_fd);
  for (std::thread& t : s.workers) t.join();  // queued connections are served or closed first
  s.workers.clear();
  close(s.stop_fd);
  if (s.tls != nullptr) SSL_CTX_free(s.tls);
  s.listen_fd = s.stop_fd = -1;
  s.tls = nullptr;
  s.port = 0;
  s.running = false;
}

int HttpServer::port() const { return impl_->port; }

uint64_t HttpServer::gzip_compressions() const { return impl_->gzip_compressions; }

}  // namespace accel::http
