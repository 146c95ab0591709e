#include "http/client.h"

#include <netdb.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "common/base64.h"
#include "common/error.h"
#include "common/strings.h"

namespace accel::http {

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
      throw SystemError("cannot connect to", t.display, last,
                        o.connect_hint.empty() ? "is `accel fleet serve` running there?" : o.connect_hint);
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
      if (!o.ca_pem.empty()) {
        LoadCaPem(o.ca_pem);
      } else {
        int ok = o.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx_)
                                   : SSL_CTX_load_verify_locations(ctx_, o.ca_file.c_str(), nullptr);
        if (ok != 1) throw InputError("--server-ca", "", "cannot load CA file '" + o.ca_file + "': " + OpenSslError());
      }
    }
    LoadClientCertificate(o);
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
                        o.tls_hint.empty() ? "pass --server-ca with the CA that signed the server's certificate" : o.tls_hint);
  }

  // Every certificate in `pem` becomes a trusted CA of this connection.
  void LoadCaPem(const std::string& pem) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
    X509_STORE* store = SSL_CTX_get_cert_store(ctx_);
    int added = 0;
    while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      if (X509_STORE_add_cert(store, cert) == 1) ++added;
      X509_free(cert);
    }
    ERR_clear_error();  // the read that ends the loop leaves "no start line"
    if (added == 0) throw InputError("certificate authority data", "", "holds no PEM certificate");
  }

  // The client certificate chain (leaf first) and key, from PEM text or files.
  void LoadClientCertificate(const HttpCallOptions& o) {
    const bool cert_given = !o.client_cert_pem.empty() || !o.client_cert_file.empty();
    const bool key_given = !o.client_key_pem.empty() || !o.client_key_file.empty();
    if (!cert_given && !key_given) return;
    const std::string cert_source = o.client_cert_pem.empty() ? o.client_cert_file : "client certificate data";
    const std::string key_source = o.client_key_pem.empty() ? o.client_key_file : "client key data";
    if (!cert_given || !key_given)
      throw InputError(cert_given ? cert_source : key_source, "",
                       "a client certificate needs both the certificate and its key");
    std::string cert_pem = o.client_cert_pem, key_pem = o.client_key_pem;
    if (cert_pem.empty()) cert_pem = ReadPemFile(o.client_cert_file);
    if (key_pem.empty()) key_pem = ReadPemFile(o.client_key_file);
    std::unique_ptr<BIO, decltype(&BIO_free)> cbio(BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())),
                                                   BIO_free);
    X509* leaf = PEM_read_bio_X509(cbio.get(), nullptr, nullptr, nullptr);
    if (leaf == nullptr) throw InputError(cert_source, "", "not a PEM certificate: " + OpenSslError());
    const int used = SSL_CTX_use_certificate(ctx_, leaf);
    X509_free(leaf);
    if (used != 1) throw InputError(cert_source, "", "certificate refused: " + OpenSslError());
    while (X509* extra = PEM_read_bio_X509(cbio.get(), nullptr, nullptr, nullptr)) {
      if (SSL_CTX_add0_chain_cert(ctx_, extra) != 1) X509_free(extra);
    }
    ERR_clear_error();
    std::unique_ptr<BIO, decltype(&BIO_free)> kbio(BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())),
                                                   BIO_free);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(kbio.get(), nullptr, nullptr, nullptr);
    if (key == nullptr) throw InputError(key_source, "", "not an unencrypted PEM private key: " + OpenSslError());
    const int key_used = SSL_CTX_use_PrivateKey(ctx_, key);
    EVP_PKEY_free(key);
    if (key_used != 1 || SSL_CTX_check_private_key(ctx_) != 1)
      throw InputError(key_source, "", "does not match the client certificate " + cert_source + ": " + OpenSslError());
  }

  static std::string ReadPemFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path, "", std::string("cannot read: ") + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  const Target& target_;
  int timeout_ms_;
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

}  // namespace

std::string HttpResponse::Header(const std::string& name) const {
  for (const auto& [key, value] : headers) {
    if (key.size() == name.size() && strncasecmp(key.c_str(), name.c_str(), key.size()) == 0) return value;
  }
  return "";
}

HttpResponse HttpCall(const std::string& base_url, const std::string& method, const std::string& path_and_query,
                      const std::string& body, const HttpCallOptions& options) {
  const Target t = ParseBaseUrl(base_url);
  bool accept_given = false, content_type_given = false;
  std::string extra;
  for (const auto& [name, value] : options.headers) {
    if (name.empty() || name.find_first_of("\r\n:") != std::string::npos || value.find_first_of("\r\n") != std::string::npos)
      throw InputError("HTTP header", name, "has an empty name, a colon in its name or a line break");
    if (strcasecmp(name.c_str(), "accept") == 0) accept_given = true;
    if (strcasecmp(name.c_str(), "content-type") == 0) content_type_given = true;
    extra += name + ": " + value + "\r\n";
  }
  // IPv6 literals go back in brackets in the Host header.
  const std::string host = t.host.find(':') != std::string::npos ? "[" + t.host + "]" : t.host;
  std::string request = method + " " + path_and_query + " HTTP/1.1\r\nHost: " + host + ":" + t.port +
                        "\r\nUser-Agent: accel\r\n" + (accept_given ? "" : "Accept: application/json\r\n") +
                        "Connection: close\r\n" + extra;
  if (!t.userinfo.empty()) request += "Authorization: Basic " + EncodeBase64(PercentDecode(t.userinfo)) + "\r\n";
  if (!body.empty() && !content_type_given) request += "Content-Type: application/json\r\n";
  request += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  Connection c(t, options);
  c.WriteAll(request);
  return ParseHttpResponse(c.ReadAll(), t.display);
}

namespace {

// The body of a Transfer-Encoding: chunked answer: hex size lines (extensions after ';'
// ignored), data, CRLF; ends at the zero chunk (trailers ignored).
std::string Dechunk(const std::string& raw, size_t pos, const std::string& from) {
  std::string out;
  for (;;) {
    const size_t eol = raw.find("\r\n", pos);
    if (eol == std::string::npos) throw SystemError("malformed chunked answer from", from, "a chunk size line has no end");
    std::string size_text = raw.substr(pos, eol - pos);
    if (const size_t semi = size_text.find(';'); semi != std::string::npos) size_text.resize(semi);
    while (!size_text.empty() && (size_text.back() == ' ' || size_text.back() == '\t')) size_text.pop_back();
    if (size_text.empty() || size_text.size() > 8 ||
        size_text.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
      throw SystemError("malformed chunked answer from", from, "bad chunk size '" + size_text.substr(0, 20) + "'");
    const size_t size = std::stoul(size_text, nullptr, 16);
    pos = eol + 2;
    if (size == 0) return out;
    if (raw.size() - pos < size) throw SystemError("malformed chunked answer from", from, "the answer ends inside a chunk");
    out.append(raw, pos, size);
    pos += size;
    if (raw.compare(pos, 2, "\r\n") != 0) throw SystemError("malformed chunked answer from", from, "a chunk does not end in CRLF");
    pos += 2;
  }
}

}  // namespace

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
    if (colon == std::string::npos || colon == 0) continue;
    const size_t value_start = line.find_first_not_of(" \t", colon + 1);
    std::string value = value_start == std::string::npos ? "" : line.substr(value_start);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
    r.headers.emplace_back(line.substr(0, colon), value);
  }
  r.content_type = r.Header("Content-Type");
  const std::string encoding = r.Header("Transfer-Encoding");
  if (strcasestr(encoding.c_str(), "chunked") != nullptr) {
    r.body = Dechunk(raw, head_end + 4, from);
    return r;
  }
  r.body = raw.substr(head_end + 4);
  const std::string length = r.Header("Content-Length");
  if (!length.empty() && length.size() <= 12 && length.find_first_not_of("0123456789") == std::string::npos) {
    const size_t n = std::stoull(length);
    if (n < r.body.size()) r.body.resize(n);
  }
  return r;
}

}  // namespace accel::http
