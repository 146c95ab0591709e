// HttpCall: one HTTP/1.1 request to an accel service (`accel fleet ... --server URL`) or the
// Kubernetes API server (kubeapi::KubeClient), over a POSIX socket, with TLS (OpenSSL, verifying
// the server against the system CAs or a given CA file or PEM text, optionally presenting a
// client certificate) for https:// URLs, basic auth from the URL's user:password and extra
// request headers (a bearer token). One request per connection (Connection: close). The
// counterpart of HttpServer, kept as small.
//
// Stateless; safe from any thread.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace accel::http {

struct HttpCallOptions {
  std::string ca_file;  ///< PEM CA bundle for https; "" = the system's CAs (or ca_pem)
  std::string ca_pem;   ///< PEM CA certificates given in memory; used instead of ca_file when set
  bool insecure = false;  ///< https without verifying the server (tests, labs)
  std::chrono::milliseconds timeout{30000};  ///< connect, send and receive, each
  /// Client certificate (chain, leaf first) and its unencrypted private key for https, as PEM
  /// files or PEM text (the *_pem fields win when set); all empty = no client certificate.
  std::string client_cert_file, client_key_file;
  std::string client_cert_pem, client_key_pem;
  /// Extra request headers, sent as given ("Authorization", "Bearer ..."). One named Accept or
  /// Content-Type replaces the default (application/json). Names and values must not hold CR/LF.
  std::vector<std::pair<std::string, std::string>> headers;
  /// Appended to the error when the server cannot be reached or the TLS handshake fails;
  /// "" = the fleet server's hints (`accel fleet serve`, --server-ca).
  std::string connect_hint;
  std::string tls_hint;
};

struct HttpResponse {
  int status = 0;            ///< e.g. 200
  std::string content_type;  ///< the Content-Type header value
  std::string body;          ///< the body, de-chunked when the answer was chunked
  /// Every response header in order, names as sent (look up with Header()).
  std::vector<std::pair<std::string, std::string>> headers;

  /// The value of the first header named `name` (case-insensitive), "" when absent.
  std::string Header(const std::string& name) const;
};

/// Sends `method` `path_and_query` (e.g. "/api/v1/hosts?where=az%3Da") with `body` (sent as
/// application/json when not empty, unless options.headers names another Content-Type) to the
/// server at `base_url` ("http://host:port", "https://user:pass@host:port", "https://[::1]:6443").
/// Returns the response, whatever its status. Throws InputError for a malformed URL, a header with
/// CR/LF, or a CA / client certificate / key that cannot be loaded; SystemError naming the URL when
/// the server cannot be reached, TLS fails or the answer is not HTTP.
HttpResponse HttpCall(const std::string& base_url, const std::string& method, const std::string& path_and_query,
                      const std::string& body = "", const HttpCallOptions& options = {});

/// Parses a whole HTTP/1.x answer read until the server closed: the status line, the headers,
/// and the body: everything after the head, cut to Content-Length when given, de-chunked when
/// Transfer-Encoding is chunked (Go servers such as the Kubernetes API server chunk HTTP/1.1
/// answers of unknown length even with Connection: close). Throws SystemError naming `from`
/// when `raw` is not an HTTP answer or its chunking is malformed.
HttpResponse ParseHttpResponse(const std::string& raw, const std::string& from);

}  // namespace accel::http
