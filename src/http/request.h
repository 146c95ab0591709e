// HTTP/1.x request heads (RFC 9112 section 2-3, 5), parsed without allocating: the request line
// and the few header fields HttpServer acts on, as views into the caller's buffer.
//
// Strict where leniency is a smuggling risk (obs-fold, whitespace before a colon, bare CR,
// conflicting Content-Length, control bytes) and lenient where RFC 9112 allows it (a bare LF
// ends a line anywhere in the head; empty lines before the request line are skipped).
// FindHeadEnd and ParseRequestHead apply the same line rules. Stateless; safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace accel::http {

/// A parsed request head. Every view points into the text given to ParseRequestHead, except a
/// `path` of "/" for an absolute-form target without a path.
struct RequestHead {
  std::string_view method;  ///< a token, case-sensitive: "GET"
  std::string_view target;  ///< the request-target as sent: "/metrics?x=1", "http://h/", "*"
  std::string_view path;    ///< the target's path without the query: "/metrics"; "*" for "*"
  int minor_version = 1;    ///< 0 for HTTP/1.0, 1 for HTTP/1.1 (and any later HTTP/1.x)
  size_t field_count = 0;   ///< how many header fields the head has
  bool has_host = false;    ///< a Host field was present
  std::string_view authorization;  ///< the Authorization value (trimmed); empty when absent
  bool accepts_gzip = false;       ///< an Accept-Encoding value allows gzip (see AcceptsGzip)
  bool connection_close = false;   ///< Connection lists "close"
  bool connection_keep_alive = false;  ///< Connection lists "keep-alive"
  bool has_content_length = false;     ///< a (valid) Content-Length was present
  uint64_t content_length = 0;         ///< its value; 0 when absent
  bool has_transfer_encoding = false;  ///< a Transfer-Encoding field was present (any value)
};

/// Why a head was refused. HeadErrorStatus maps each to the HTTP status to answer with.
enum class HeadError {
  kNone,                 ///< parsed
  kIncomplete,           ///< the text does not end with the head's empty line
  kBadRequestLine,       ///< not "METHOD SP target SP HTTP/x.y"
  kUnsupportedVersion,   ///< a well-formed version other than HTTP/1.x
  kBadHeaderField,       ///< a field without a colon, a bad name or value byte, a bare CR
  kObsoleteLineFolding,  ///< a line starting with SP or HTAB (obs-fold)
  kTooManyFields,        ///< more than kMaxHeaderFields fields
  kBadContentLength,     ///< not decimal digits, too large, or two different values
  kDuplicateField,       ///< a second Authorization or Host field
  kMissingHost,          ///< an HTTP/1.1 request without Host
};

/// The most header fields a head may carry (a real scraper sends fewer than ten).
inline constexpr size_t kMaxHeaderFields = 100;

/// Returns the length of the request head at the start of `buffer`, up to and including the
/// empty line that ends it (CRLF or a bare LF), or 0 when `buffer` does not hold a complete head
/// yet. Leading empty lines are part of the returned length.
size_t FindHeadEnd(std::string_view buffer);

/// Parses `text`, a complete head as measured by FindHeadEnd. Returns kNone and fills `*head`
/// (views into `text`), or an error; `*head` is then unspecified.
HeadError ParseRequestHead(std::string_view text, RequestHead* head);

/// The status code to answer a refused head with: 400, 431 (kTooManyFields), 505
/// (kUnsupportedVersion); 200 for kNone.
int HeadErrorStatus(HeadError error);

/// A short English description of `error`, e.g. "malformed request line".
const char* HeadErrorText(HeadError error);

/// Whether an Accept-Encoding value allows gzip: "gzip", "x-gzip" or "*" (any case), without a
/// q parameter or with a non-zero one.
bool AcceptsGzip(std::string_view accept_encoding);

}  // namespace accel::http
