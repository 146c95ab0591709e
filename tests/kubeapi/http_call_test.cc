// What KubeClient needs from http::HttpCall beyond the fleet client's use: chunked answers
// (Go's HTTP/1.1 server chunks long ones), response headers (Retry-After), TLS with a CA given
// in memory and a client certificate (kubeconfig *-data fields), against accel's own TLS server.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"
#include "kubeapi/client.h"
#include "http/client.h"
#include "http/server.h"
#include "http/listen_address.h"
#include "support/test_pki.h"
#include "http/web_config.h"

namespace accel::kubeapi {
namespace http_call_test {

using http::HttpResponse;
using http::ParseHttpResponse;

TEST(ParseHttpResponseTest, DechunksAndKeepsHeaders) {
  const HttpResponse r = ParseHttpResponse(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nRetry-After:  7 \r\n\r\n"
      "4\r\n{\"a\"\r\n5;ext=1\r\n:1234\r\n1\r\n}\r\n0\r\nTrailer: x\r\n\r\n",
      "test");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"a\":1234}");
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.Header("retry-after"), "7");
  EXPECT_EQ(r.Header("X-Missing"), "");
  EXPECT_EQ(r.headers.size(), 3u);
}

TEST(ParseHttpResponseTest, ContentLengthCutsTheBody) {
  EXPECT_EQ(ParseHttpResponse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", "t").body, "ok");
  EXPECT_EQ(ParseHttpResponse("HTTP/1.1 200 OK\r\n\r\nall of it", "t").body, "all of it");
}

TEST(ParseHttpResponseTest, MalformedChunkingIsASystemError) {
  for (const char* raw : {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nshort",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n0\r\n\r\n",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n"}) {
    EXPECT_THROW(ParseHttpResponse(raw, "t"), SystemError) << raw;
  }
}

std::string Base64(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// An https API server that demands a client certificate signed by the test CA: accel's own
// HttpServer with a handler answering JSON, so the TLS code on both ends is exercised.
class TlsApiServer {
 public:
  explicit TlsApiServer(const test_support::TestPki& pki)
      : server_(http::ParseWebConfig("tls_server_config:\n  cert_file: " + pki.server().cert_path +
                                              "\n  key_file: " + pki.server().key_path +
                                              "\n  client_ca_file: " + pki.ca().cert_path +
                                              "\n  client_auth_type: RequireAndVerifyClientCert\n",
                                          "web.yml"),
                nullptr, [] { return true; }) {
    server_.AddHandler("/api", [](const http::HttpServer::Request& r) {
      http::HttpServer::Reply reply;
      reply.body = nlohmann::json{{"kind", "Node"}, {"metadata", {{"name", "n1"}}}, {"path", r.path}}.dump();
      return reply;
    });
    server_.Start(http::ParseListenAddress("127.0.0.1:0"));
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(server_.port()); }

 private:
  http::HttpServer server_;
};

KubeClientOptions Once() {
  KubeClientOptions o;
  o.attempts = 1;
  o.timeout = std::chrono::milliseconds(5000);
  return o;
}

TEST(KubeClientTlsTest, KubeconfigWithCaDataAndClientCertificate) {
  test_support::TestPki pki;
  TlsApiServer server(pki);
  // Certificate files relative to the kubeconfig, the CA inline.
  std::filesystem::copy_file(pki.client().cert_path, pki.dir() + "/me.crt");
  std::filesystem::copy_file(pki.client().key_path, pki.dir() + "/me.key");
  const std::string path = pki.dir() + "/kubeconfig";
  std::ofstream(path) << "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: me}\n"
                      << "clusters:\n- name: k\n  cluster:\n    server: " << server.url()
                      << "\n    certificate-authority-data: " << Base64(pki.ca().cert_pem) << "\n"
                      << "users:\n- name: me\n  user:\n    client-certificate: me.crt\n    client-key: me.key\n";
  KubeClient client(LoadKubeconfig(path), Once());
  const std::optional<nlohmann::json> node = client.Get("/api/v1/nodes/n1");
  ASSERT_TRUE(node);
  EXPECT_EQ((*node)["path"], "/api/v1/nodes/n1");

  // The same with everything in memory.
  KubeConfig inline_config;
  inline_config.server = server.url();
  inline_config.source = "test";
  inline_config.ca_pem = pki.ca().cert_pem;
  inline_config.client_cert_pem = pki.client().cert_pem;
  inline_config.client_key_pem = pki.client().key_pem;
  EXPECT_TRUE(KubeClient(inline_config, Once()).Get("/api/v1/nodes/n1"));

  // No client certificate: the server refuses the handshake.
  KubeConfig anonymous = inline_config;
  anonymous.client_cert_pem.clear();
  anonymous.client_key_pem.clear();
  EXPECT_THROW(KubeClient(anonymous, Once()).Get("/api/v1/nodes/n1"), SystemError);

  // A server certificate from another CA: the error says where the CA came from.
  KubeConfig wrong_ca = inline_config;
  wrong_ca.ca_pem = pki.rogue().cert_pem;
  try {
    KubeClient(wrong_ca, Once()).Get("/api/v1/nodes/n1");
    FAIL();
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find("TLS handshake failed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("certificate authority of test"), std::string::npos) << e.what();
  }

  // A key that does not belong to the certificate, and CA data that is no PEM: InputError.
  KubeConfig mismatched = inline_config;
  mismatched.client_key_pem = pki.rogue().key_pem;
  EXPECT_THROW(KubeClient(mismatched, Once()).Get("/api/v1/nodes/n1"), InputError);
  KubeConfig bad_ca = inline_config;
  bad_ca.ca_pem = "not a certificate";
  EXPECT_THROW(KubeClient(bad_ca, Once()).Get("/api/v1/nodes/n1"), InputError);
}

}  // namespace
}  // namespace accel::kubeapi
