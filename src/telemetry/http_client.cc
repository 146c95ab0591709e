#include "telemetry/http_client.h"

#include <netdb.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "common/error.h"
#include "common/strings.h"

namespace accel::telemetry {

namespace {

struct Target {
  bool tls = false;
  std::string userinfo;  ///< "user:pass" or ""
  std::string host;
  std::string port;
  std::string display;   ///< the URL without the password
};

Target ParseBaseUrl(const std::string& url) {
  Target t;
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8);
    t.tls = true;
  } else {
    throw InputError("--server", "", "'" + url + "' is not an http:// or https:// URL", "e.g. --server http://fleet.example:9470");
  }
  if (const size_t slash = rest.find('/'); slash != std::string::npos) rest = rest.substr(0, slash);
  if (const size_t at = rest.rfind('@'); at != std::string::npos) {
    t.userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
  }
  if (!rest.empty() && rest[0] == '[') {  // [v6]:port
    const size_t close = rest.find(']');
    if (close == std::string::npos) throw InputError("--server", "", "'" + url + "': unclosed [", "");
    t.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') t.port = rest.substr(close + 2);
  } else if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
    t.host = rest.substr(0, colon);
    t.port = rest.substr(colon + 1);
  } else {
    t.host = rest;
  }
  if (t.port.empty()) t.port = t.tls ? "443" : "80";
  if (t.host.empty()) throw InputError("--server", "", "'" + url + "' names no host", "e.g. http://127.0.0.1:9470");
  const std::string user = t.userinfo.substr(0, t.userinfo.find(':'));
  t.display = std::string(t.tls ? "https://" : "http://") + (user.empty() ? "" : user + "@") + rest;
  return t;
}

std::string Base64(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return e ? buf : "unknown TLS error";
}

// A connected socket (and TLS session), closed on destruction.
class Connection {
 public:
  Connection(const Target& t, const HttpCallOptions& o) : target_(t), timeout_ms_(static_cast<int>(o.timeout.count())) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = getaddrinfo(t.host.c_str(), t.port.c_str(), &hints, &found); rc != 0)
      throw SystemError("cannot resolve", t.display, gai_strerror(rc));
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> list(found, freeaddrinfo);
    std::string last = "no address";
    for (addrinfo* a = found; a != nullptr && fd_ < 0; a = a->ai_next) {
      int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      timeval tv{static_cast<time_t>(timeout_ms_ / 1000), static_cast<suseconds_t>((timeout_ms_ % 1000) * 1000)};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        fd_ = fd;
      } else {
        last = std::strerror(errno);
        close(fd);
      }
    }
    if (fd_ < 0)
      throw SystemError("cannot connect to", t.display, last, "is `accel fleet serve` running there?");
    if (t.tls) StartTls(o);
  }
  ~Connection() {
    if (ssl_) {
      SSL_shutdown(ssl_);
      SSL_free(ssl_);
    }
    if (ctx_) SSL_CTX_free(ctx_);
    if (fd_ >= 0) close(fd_);
  }

  void WriteAll(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      long n = ssl_ ? SSL_write(ssl_, data.data() + done, static_cast<int>(data.size() - done))
                    : send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n <= 0) throw SystemError("cannot send to", target_.display, ssl_ ? OpenSslError() : std::strerror(errno));
      done += static_cast<size_t>(n);
    }
  }

  // Reads until the peer closes (Connection: close).
  std::string ReadAll() {
    std::string out;
    char buf[16384];
    for (;;) {
      long n = ssl_ ? SSL_read(ssl_, buf, sizeof buf) : recv(fd_, buf, sizeof buf, 0);
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
        if (out.size() > (64u << 20)) throw SystemError("cannot read from", target_.display, "answer over 64 MiB");
        continue;
      }
      if (n == 0) return out;
      if (ssl_) {
        int err = SSL_get_error(ssl_, static_cast<int>(n));
        if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && errno == 0)) return out;
        throw SystemError("cannot read from", target_.display, OpenSslError());
      }
      if (errno == EINTR) continue;
      throw SystemError("cannot read from", target_.display,
                        errno == EAGAIN || errno == EWOULDBLOCK ? "timed out" : std::strerror(errno));
    }
  }

 private:
  void StartTls(const HttpCallOptions& o) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (!ctx_) throw SystemError("cannot set up TLS for", target_.display, OpenSslError());
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    if (!o.insecure) {
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
      int ok = o.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx_)
                                 : SSL_CTX_load_verify_locations(ctx_, o.ca_file.c_str(), nullptr);
      if (ok != 1) throw InputError("--server-ca", "", "cannot load CA file '" + o.ca_file + "': " + OpenSslError());
    }
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, target_.host.c_str());
    if (!o.insecure) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
      X509_VERIFY_PARAM_set1_host(param, target_.host.c_str(), 0);
      if (X509_VERIFY_PARAM_set1_ip_asc(param, target_.host.c_str()) == 1) X509_VERIFY_PARAM_set1_host(param, nullptr, 0);
    }
    if (SSL_connect(ssl_) != 1)
      throw SystemError("TLS handshake failed with", target_.display, OpenSslError(),
                        "pass --server-ca with the CA that signed the server's certificate");
  }

  const Target& target_;
  int timeout_ms_;
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

}  // namespace

HttpResponse HttpCall(const std::string& base_url, const std::string& method, const std::string& path_and_query,
                      const std::string& body, const HttpCallOptions& options) {
  const Target t = ParseBaseUrl(base_url);
  std::string request = method + " " + path_and_query + " HTTP/1.1\r\nHost: " + t.host + ":" + t.port +
                        "\r\nUser-Agent: accel\r\nAccept: application/json\r\nConnection: close\r\n";
  if (!t.userinfo.empty()) request += "Authorization: Basic " + Base64(PercentDecode(t.userinfo)) + "\r\n";
  if (!body.empty()) request += "Content-Type: application/json\r\n";
  request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  Connection c(t, options);
  c.WriteAll(request);
  return ParseHttpResponse(c.ReadAll(), t.display);
}

HttpResponse ParseHttpResponse(const std::string& raw, const std::string& from) {
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos || head_end < 12 || raw[8] != ' ' ||
      !std::isdigit(static_cast<unsigned char>(raw[9])))
    throw SystemError("not an HTTP answer from", from, raw.substr(0, 40));
  HttpResponse r;
  r.status = std::atoi(raw.c_str() + 9);
  const std::string head = raw.substr(0, head_end);
  size_t pos = 0;
  while ((pos = head.find("\r\n", pos)) != std::string::npos) {
    pos += 2;
    const size_t end = head.find("\r\n", pos);
    const std::string line = head.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    const size_t colon = line.find(':');
    if (colon == 12 && strncasecmp(line.c_str(), "content-type", 12) == 0) {
      const size_t value = line.find_first_not_of(' ', colon + 1);
      r.content_type = value == std::string::npos ? "" : line.substr(value);
    }
  }
  r.body = raw.substr(head_end + 4);
  return r;
}

}  // namespace accel::telemetry
