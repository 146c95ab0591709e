// HttpServer: the exporter's HTTP(S) endpoint, a small HTTP/1.1 server on POSIX sockets (and
// OpenSSL only when TLS is configured: a plain server never initialises it). Serves the latest
// rendered exposition at /metrics (gzip when asked, compressed once per rendered body), /health,
// a small index page at /, and static pages added with AddPage; applies a WebConfig (TLS, client certificates, basic auth, headers).
//
// A scrape never renders or waits on a device: it takes the body source's current pointer and
// writes that buffer out, so its cost is the socket write. Thread-safe: Start/Stop may be called
// from any thread; one acceptor thread hands connections to a pool of workers (four unless
// SetWorkers says otherwise), each serving one kept-alive connection at a time. The sources are
// called from those workers, concurrently, and must be thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "http/listen_address.h"
#include "http/web_config.h"

namespace accel::http {

class HttpServer {
 public:
  /// Returns the latest exposition text (Prometheus text format 0.0.4). The pointer must change
  /// only when a new body was rendered: the gzip copy is cached per pointer. nullptr = empty body.
  using BodySource = std::function<std::shared_ptr<const std::string>()>;
  /// Returns whether the exporter is healthy (/health answers 200 "OK", else 503).
  using HealthSource = std::function<bool()>;

  /// A request a Handler answers: the method, the path without the query, the query (after
  /// '?', undecoded) and the whole body (at most 1 MiB; bigger ones get 413 unread).
  struct Request {
    std::string method;
    std::string path;
    std::string query;
    std::string body;
  };
  /// A Handler's answer. content_type: "application/json", "text/html; charset=utf-8",
  /// "image/svg+xml", "text/plain; charset=utf-8" or "application/yaml" (anything else is sent
  /// as application/octet-stream). allow: the Allow header of a 405, else "".
  struct Reply {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
    std::string allow;
  };
  /// Answers one request; called from the worker threads concurrently, so it must be
  /// thread-safe. An exception becomes a 500 whose body names no detail.
  using Handler = std::function<Reply(const Request&)>;

  /// Nothing is bound until Start. `config` must come from LoadWebConfig/ParseWebConfig.
  HttpServer(WebConfig config, BodySource body, HealthSource health);
  /// Calls Stop.
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Serves `body` at `path` (exact match, GET/HEAD, same auth as /metrics) with the given
  /// Content-Type, e.g. the node agent's /topology. Call before Start; a second call for the same
  /// path replaces the page. Throws std::logic_error when already started.
  void AddPage(const std::string& path, const std::string& content_type, std::string body);

  /// Hands every request whose path is `prefix` or starts with `prefix` + "/" (any method, with
  /// its body) to `handler`, after authentication; the longest matching prefix wins; "/" takes
  /// everything not otherwise served. /metrics and /health stay the server's own. Call before
  /// Start; throws std::logic_error when already started.
  void AddHandler(const std::string& prefix, Handler handler);

  /// Serves with `workers` threads instead of four: each serves one kept-alive connection at a
  /// time, so an API whose clients keep connections open needs one per concurrent client (`accel
  /// fleet serve --concurrency`). Call before Start; throws std::logic_error when already started
  /// or `workers` < 1.
  void SetWorkers(int workers);

  /// Binds `address` (an empty host = every interface, IPv6 and IPv4; port 0 = an ephemeral
  /// port) and serves on a background thread until Stop. Returns once the server accepts
  /// connections. Throws SystemError("cannot listen on ADDR: reason") when the address
  /// cannot be bound, or "cannot set up TLS: ..." when OpenSSL refuses the config; throws
  /// std::logic_error when already started.
  void Start(const ListenAddress& address);

  /// Stops accepting, finishes requests in flight, joins the thread. Idempotent; after it,
  /// Start may be called again.
  void Stop();

  /// The bound port (the kernel's choice for port 0); 0 before Start.
  int port() const;

  /// How many times a body was gzip-compressed (once per distinct body pointer scraped with
  /// Accept-Encoding: gzip).
  uint64_t gzip_compressions() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace accel::http
