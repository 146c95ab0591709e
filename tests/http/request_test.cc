// The request-head parser HttpServer reads every request with, then the server's limits as a
// raw loopback socket sees them (what httplib's client cannot send).
#include "http/request.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <string_view>

#include "http/server.h"

namespace accel::http {
namespace http_request_test {

// Takes string literals: the parsed views point into `text`, which must outlive `*head`.
HeadError Parse(std::string_view text, RequestHead* head) { return ParseRequestHead(text, head); }

HeadError Error(const std::string& text) {
  RequestHead head;
  return ParseRequestHead(text, &head);
}

TEST(RequestHead, ParsesAPrometheusScrape) {
  const std::string text =
      "GET /metrics?collect%5B%5D=x HTTP/1.1\r\n"
      "Host: 10.0.0.7:9400\r\n"
      "User-Agent: Prometheus/2.45.0\r\n"
      "Accept-Encoding: gzip\r\n"
      "Authorization:   Basic cHJvbTpz  \r\n"
      "\r\n";
  RequestHead h;
  ASSERT_EQ(Parse(text, &h), HeadError::kNone);
  EXPECT_EQ(h.method, "GET");
  EXPECT_EQ(h.target, "/metrics?collect%5B%5D=x");
  EXPECT_EQ(h.path, "/metrics");
  EXPECT_EQ(h.minor_version, 1);
  EXPECT_EQ(h.field_count, 4u);
  EXPECT_TRUE(h.has_host);
  EXPECT_TRUE(h.accepts_gzip);
  EXPECT_EQ(h.authorization, "Basic cHJvbTpz");
  EXPECT_FALSE(h.connection_close);
  EXPECT_FALSE(h.has_content_length);
  EXPECT_EQ(FindHeadEnd(text), text.size());
  EXPECT_EQ(FindHeadEnd(text + "GET / HTTP/1.1\r\n"), text.size());  // pipelined request
}

TEST(RequestHead, FindHeadEndWaitsForTheEmptyLine) {
  EXPECT_EQ(FindHeadEnd(""), 0u);
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\n"), 0u);
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\nHost: a\r\n\r"), 0u);
  EXPECT_EQ(FindHeadEnd("\r\n\r\n"), 0u);  // empty lines before the request line are skipped
  EXPECT_EQ(FindHeadEnd("\r\nGET / HTTP/1.0\r\n\r\n"), 20u);
}

TEST(RequestHead, NamesAreCaseInsensitive) {
  RequestHead h;
  ASSERT_EQ(Parse("GET / HTTP/1.1\r\nhOsT: a\r\nCONTENT-LENGTH: 3\r\nconnection: Keep-Alive, "
                  "CLOSE\r\nACCEPT-ENCODING: GZip\r\nauthorization: x\r\n\r\n",
                  &h),
            HeadError::kNone);
  EXPECT_TRUE(h.has_host);
  EXPECT_TRUE(h.has_content_length);
  EXPECT_EQ(h.content_length, 3u);
  EXPECT_TRUE(h.connection_close);
  EXPECT_TRUE(h.connection_keep_alive);
  EXPECT_TRUE(h.accepts_gzip);
  EXPECT_EQ(h.authorization, "x");
}

TEST(RequestHead, BareLfIsALineEndEverywhere) {
  const std::string text = "\nHEAD /health HTTP/1.0\nConnection: keep-alive\r\nX: y\n\n";
  RequestHead h;
  ASSERT_EQ(Parse(text, &h), HeadError::kNone);
  EXPECT_EQ(h.method, "HEAD");
  EXPECT_EQ(h.minor_version, 0);
  EXPECT_TRUE(h.connection_keep_alive);
  EXPECT_EQ(FindHeadEnd(text), text.size());
  // A CR that does not precede an LF is refused, in the request line and in a field.
  EXPECT_EQ(Error("GET /\r HTTP/1.1\r\nHost: a\r\n\r\n"), HeadError::kBadRequestLine);
  EXPECT_EQ(Error("GET / HTTP/1.1\rHost: a\r\n\r\n"), HeadError::kBadRequestLine);
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n"), HeadError::kBadHeaderField);
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\r\n\r\n"), HeadError::kBadHeaderField);
}

TEST(RequestHead, MalformedRequestLines) {
  for (const char* line : {
           "GET",                      // no target
           "GET /",                    // no version
           "GET  / HTTP/1.1",          // two spaces
           "GET / HTTP/1.1 ",          // trailing space
           " GET / HTTP/1.1",          // leading space
           "G(T / HTTP/1.1",           // method is not a token
           "GET metrics HTTP/1.1",     // not origin, absolute or asterisk form
           "GET // HTTP/1.1x",         // junk after the version
           "GET / http/1.1",           // the version name is case-sensitive
           "GET / HTTP/1",             // no minor version
           "GET / HTTP/11.1",          // two-digit major
           "GET /a\tb HTTP/1.1",       // control byte in the target
           "GET /\x80 HTTP/1.1",       // non-ASCII target
           "GET http:///x HTTP/1.1",   // absolute form without authority
           "CONNECT host:443 HTTP/1.1",
       }) {
    EXPECT_EQ(Error(std::string(line) + "\r\nHost: a\r\n\r\n"), HeadError::kBadRequestLine)
        << line;
  }
  EXPECT_EQ(Error("GET / HTTP/2.0\r\nHost: a\r\n\r\n"), HeadError::kUnsupportedVersion);
  EXPECT_EQ(Error("GET / HTTP/0.9\r\n\r\n"), HeadError::kUnsupportedVersion);
  EXPECT_EQ(HeadErrorStatus(HeadError::kUnsupportedVersion), 505);
  EXPECT_EQ(HeadErrorStatus(HeadError::kBadRequestLine), 400);
}

TEST(RequestHead, TargetForms) {
  RequestHead h;
  ASSERT_EQ(Parse("GET HTTP://exporter:9400/metrics?a=b HTTP/1.1\r\nHost: x\r\n\r\n", &h),
            HeadError::kNone);
  EXPECT_EQ(h.path, "/metrics");
  ASSERT_EQ(Parse("GET https://exporter:9400?a HTTP/1.1\r\nHost: x\r\n\r\n", &h), HeadError::kNone);
  EXPECT_EQ(h.path, "/");
  ASSERT_EQ(Parse("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", &h), HeadError::kNone);
  EXPECT_EQ(h.path, "*");
  ASSERT_EQ(Parse("GET /? HTTP/1.1\r\nHost: x\r\n\r\n", &h), HeadError::kNone);
  EXPECT_EQ(h.path, "/");
}

TEST(RequestHead, ObsoleteLineFoldingIsRefused) {
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\nX-Long: one\r\n two\r\n\r\n"),
            HeadError::kObsoleteLineFolding);
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\nX-Long: one\r\n\ttwo\r\n\r\n"),
            HeadError::kObsoleteLineFolding);
  // A folded first field line too (it would otherwise continue the request line).
  EXPECT_EQ(Error("GET / HTTP/1.1\r\n Host: a\r\n\r\n"), HeadError::kObsoleteLineFolding);
}

TEST(RequestHead, MalformedFields) {
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n"), HeadError::kBadHeaderField);
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost : a\r\n\r\n"), HeadError::kBadHeaderField);
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\n: empty-name\r\n\r\n"),
            HeadError::kBadHeaderField);
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\nX: a" + std::string(1, '\0') + "b\r\n\r\n"),
            HeadError::kBadHeaderField);
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\nX: \x7f\r\n\r\n"), HeadError::kBadHeaderField);
  // obs-text and tabs inside a value are allowed.
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\tlatte\r\nEmpty:\r\n\r\n"),
            HeadError::kNone);
}

TEST(RequestHead, HostRules) {
  EXPECT_EQ(Error("GET / HTTP/1.1\r\n\r\n"), HeadError::kMissingHost);
  EXPECT_EQ(Error("GET / HTTP/1.0\r\n\r\n"), HeadError::kNone);
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), HeadError::kDuplicateField);
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: x\r\nAuthorization: y\r\n\r\n"),
            HeadError::kDuplicateField);
}

TEST(RequestHead, ContentLength) {
  RequestHead h;
  ASSERT_EQ(Parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\ncontent-length: 12\r\n\r\n",
                  &h),
            HeadError::kNone);
  EXPECT_EQ(h.content_length, 12u);
  for (const char* value : {"12, 12", "-1", "+5", "0x10", "", "1 2", "99999999999999999999"}) {
    EXPECT_EQ(Error(std::string("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: ") + value +
                    "\r\n\r\n"),
              HeadError::kBadContentLength)
        << value;
  }
  EXPECT_EQ(Error("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            HeadError::kBadContentLength);
  ASSERT_EQ(Parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", &h),
            HeadError::kNone);
  EXPECT_TRUE(h.has_transfer_encoding);
}

TEST(RequestHead, HugeHeads) {
  std::string many = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (size_t i = 1; i < kMaxHeaderFields; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(Error(many + "\r\n"), HeadError::kNone);
  EXPECT_EQ(Error(many + "One-More: v\r\n\r\n"), HeadError::kTooManyFields);
  EXPECT_EQ(HeadErrorStatus(HeadError::kTooManyFields), 431);
  // A long value is the server's 16 KiB limit to enforce, not the parser's.
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\nCookie: " + std::string(100000, 'c') + "\r\n\r\n"),
            HeadError::kNone);
}

TEST(RequestHead, IncompleteOrTrailingBytes) {
  EXPECT_EQ(Error(""), HeadError::kIncomplete);
  EXPECT_EQ(Error("GET / HTTP/1.1"), HeadError::kIncomplete);
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\n"), HeadError::kIncomplete);
  EXPECT_EQ(Error("GET / HTTP/1.1\r\nHost: a\r\n\r\nbody"), HeadError::kIncomplete);
  for (HeadError e : {HeadError::kIncomplete, HeadError::kBadHeaderField, HeadError::kMissingHost}) {
    EXPECT_EQ(HeadErrorStatus(e), 400);
    EXPECT_NE(std::string(HeadErrorText(e)), "");
  }
}

TEST(AcceptsGzip, FollowsTheQValue) {
  for (const char* yes : {"gzip", "GZIP", "x-gzip", "*", "br;q=1, gzip;q=0.5", " gzip ; q=1",
                          "deflate, gzip;q=0.8", "gzip;level=1"}) {
    EXPECT_TRUE(AcceptsGzip(yes)) << yes;
  }
  for (const char* no : {"", "identity", "gzip;q=0", "gzip;q=0.0", "br", "deflate", "gzipx",
                         "gzip;q=abc", ",,,"}) {
    EXPECT_FALSE(AcceptsGzip(no)) << no;
  }
}

// ---- HttpServer on the wire ----------------------------------------------------------------

class MetricsServerWire : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<HttpServer>(
        WebConfig{}, [] { return std::make_shared<const std::string>("up 1\n"); },
        [] { return true; });
    server_->Start(ParseListenAddress("127.0.0.1:0"));
  }

  // Sends `request` on a new connection, then reads until the server closes it (or 2 s pass).
  std::string Exchange(const std::string& request) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) out.append(buf, static_cast<size_t>(n));
    close(fd);
    return out;
  }

  static size_t Count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }

  std::unique_ptr<HttpServer> server_;
};

TEST_F(MetricsServerWire, PipelinedRequestsAreAnsweredInOrder) {
  std::string out = Exchange(
      "GET /health HTTP/1.1\r\nHost: a\r\n\r\n"
      "POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbody"
      "GET /metrics HTTP/1.1\nHost: a\nConnection: close\n\n");  // bare LF
  ASSERT_EQ(Count(out, "HTTP/1.1 "), 3u) << out;
  EXPECT_LT(out.find("HTTP/1.1 200 OK"), out.find("HTTP/1.1 405"));
  EXPECT_NE(out.find("\r\n\r\nup 1\n"), std::string::npos) << out;
  EXPECT_EQ(Count(out, "Connection: close"), 1u);
}

TEST_F(MetricsServerWire, Http10ClosesUnlessKeepAlive) {
  std::string out = Exchange("GET /health HTTP/1.0\r\n\r\n");
  EXPECT_EQ(out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << out;
  EXPECT_NE(out.find("Connection: close\r\n"), std::string::npos);
  out = Exchange(
      "GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
      "GET /health HTTP/1.0\r\n\r\n");
  EXPECT_EQ(Count(out, "HTTP/1.1 200 OK"), 2u) << out;
  EXPECT_EQ(Count(out, "Connection: keep-alive"), 1u);
}

TEST_F(MetricsServerWire, RefusedRequestsCloseTheConnection) {
  const std::string big_field = "X-Big: " + std::string(17 * 1024, 'x') + "\r\n";
  struct Case {
    std::string request;
    const char* status;
  } cases[] = {
      {"GET / HTTP/1.1\r\nHost: a\r\n" + big_field + "\r\n", "HTTP/1.1 431 "},
      {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n", "HTTP/1.1 413 "},
      {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
       "HTTP/1.1 411 "},
      {"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "},  // no Host
      {"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n", "HTTP/1.1 400 "},
      {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", "HTTP/1.1 505 "},
  };
  for (const Case& c : cases) {
    // Followed by a valid request that must not be answered: the connection is closed.
    std::string out = Exchange(c.request + "GET /health HTTP/1.1\r\nHost: a\r\n\r\n");
    EXPECT_EQ(out.rfind(c.status, 0), 0u) << c.request.substr(0, 60) << " -> " << out;
    EXPECT_EQ(Count(out, "HTTP/1.1 "), 1u) << out;
    EXPECT_NE(out.find("Connection: close\r\n"), std::string::npos);
    EXPECT_NE(out.find("Content-Length: "), std::string::npos);
  }
}

}  // namespace
}  // namespace accel::http
