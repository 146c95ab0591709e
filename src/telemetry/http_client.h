// HttpCall: one HTTP/1.1 request to an accel service (`accel fleet ... --server URL`), over a
// POSIX socket, with TLS (OpenSSL, verifying the server against the system CAs or a given CA
// file) for https:// URLs and basic auth from the URL's user:password. One request per
// connection (Connection: close). The counterpart of MetricsServer, kept as small.
//
// Stateless; safe from any thread.
#pragma once

#include <chrono>
#include <string>

namespace accel::telemetry {

struct HttpCallOptions {
  std::string ca_file;  ///< PEM CA bundle for https; "" = the system's CAs
  bool insecure = false;  ///< https without verifying the server (tests, labs)
  std::chrono::milliseconds timeout{30000};  ///< connect, send and receive, each
};

struct HttpResponse {
  int status = 0;            ///< e.g. 200
  std::string content_type;  ///< the Content-Type header value
  std::string body;
};

/// Sends `method` `path_and_query` (e.g. "/api/v1/hosts?where=az%3Da") with `body` (sent as
/// application/json when not empty) to the server at `base_url` ("http://host:port",
/// "https://user:pass@host:port"). Returns the response, whatever its status. Throws InputError
/// for a malformed URL; SystemError naming the URL when the server cannot be reached, TLS fails
/// or the answer is not HTTP.
HttpResponse HttpCall(const std::string& base_url, const std::string& method, const std::string& path_and_query,
                      const std::string& body = "", const HttpCallOptions& options = {});

/// Parses a whole HTTP/1.x answer read until the server closed: the status line, the
/// Content-Type header, and the body (everything after the head; Content-Length and chunking
/// are not needed with Connection: close). Throws SystemError naming `from` when `raw` is not an
/// HTTP answer.
HttpResponse ParseHttpResponse(const std::string& raw, const std::string& from);

}  // namespace accel::telemetry
