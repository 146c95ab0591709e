#include "http/web_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include <fstream>

#include "common/error.h"
#include "support/test_pki.h"

namespace accel::http {
namespace web_config_test {

using ::testing::HasSubstr;

constexpr char kHash[] = "$2y$10$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze";

class WebConfigTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new test_support::TestPki(); }
  static void TearDownTestSuite() {
    delete pki_;
    pki_ = nullptr;
  }

  // tls_server_config with the test server's cert and key plus `extra` lines (2-space indented).
  static std::string Tls(const std::string& extra = "") {
    return "tls_server_config:\n  cert_file: " + pki_->server().cert_path +
           "\n  key_file: " + pki_->server().key_path + "\n" + extra;
  }

  // Parses `text` and expects an InputError whose field and problem contain the given parts.
  static void ExpectRefused(const std::string& text, const std::string& field,
                            const std::string& problem) {
    SCOPED_TRACE(text);
    try {
      ParseWebConfig(text, "web.yml");
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().rfind("web.yml", 0), 0u) << e.what();
      EXPECT_THAT(e.field(), HasSubstr(field)) << e.what();
      EXPECT_THAT(e.problem(), HasSubstr(problem)) << e.what();
    }
  }

  static test_support::TestPki* pki_;
};

test_support::TestPki* WebConfigTest::pki_ = nullptr;

TEST_F(WebConfigTest, EmptyPathAndEmptyFileMeanPlainHttpWithoutAuth) {
  for (const WebConfig& c : {LoadWebConfig(""), ParseWebConfig("", "web.yml"),
                             ParseWebConfig("# nothing\n", "web.yml"),
                             ParseWebConfig("tls_server_config:\nbasic_auth_users:\n", "w")}) {
    EXPECT_FALSE(c.tls.enabled);
    EXPECT_TRUE(c.basic_auth_users.empty());
    EXPECT_TRUE(c.headers.empty());
    EXPECT_TRUE(c.http2);
  }
}

TEST_F(WebConfigTest, ReadsEveryKey) {
  const std::string text = Tls(
      "  client_ca_file: " + pki_->ca().cert_path +
      "\n"
      "  client_auth_type: RequireAndVerifyClientCert\n"
      "  client_allowed_sans: [scraper.example, 10.0.0.1]\n"
      "  min_version: TLS13\n"
      "  max_version: TLS13\n"
      "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "
      "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305, TLS_AES_128_GCM_SHA256]\n"
      "  prefer_server_cipher_suites: false\n"
      "  curve_preferences: [X25519, CurveP256]\n"
      "http_server_config:\n"
      "  http2: false\n"
      "  headers:\n"
      "    X-Frame-Options: deny\n"
      "    X-Content-Type-Options: nosniff\n"
      "    Strict-Transport-Security: max-age=31536000\n"
      "    Content-Security-Policy: \"\"\n"
      "basic_auth_users:\n"
      "  alice: " + std::string(kHash) + "\n"
      "  bob: '$2b$05$ADcYpfCFdXzphZXituKbB.rSoSkQbRTxVX63hRibZDrp8PiEtzyHm'\n");
  WebConfig c = ParseWebConfig(text, "web.yml");
  EXPECT_TRUE(c.tls.enabled);
  EXPECT_EQ(c.tls.cert_source, pki_->server().cert_path);
  EXPECT_EQ(c.tls.cert_pem, pki_->server().cert_pem);
  EXPECT_EQ(c.tls.key_pem, pki_->server().key_pem);
  EXPECT_EQ(c.tls.client_ca_pem, pki_->ca().cert_pem);
  EXPECT_EQ(c.tls.client_auth, ClientAuth::kRequireAndVerifyClientCert);
  EXPECT_EQ(c.tls.client_allowed_sans, (std::vector<std::string>{"scraper.example", "10.0.0.1"}));
  EXPECT_EQ(c.tls.min_version, TLS1_3_VERSION);
  EXPECT_EQ(c.tls.max_version, TLS1_3_VERSION);
  // Go names map to OpenSSL names; TLS 1.3 suites are ignored, as in Go.
  EXPECT_EQ(c.tls.cipher_suites, (std::vector<std::string>{"ECDHE-ECDSA-AES128-GCM-SHA256",
                                                           "ECDHE-ECDSA-CHACHA20-POLY1305"}));
  EXPECT_FALSE(c.tls.prefer_server_cipher_suites);
  EXPECT_EQ(c.tls.curve_preferences, (std::vector<std::string>{"X25519", "P-256"}));
  EXPECT_FALSE(c.http2);
  EXPECT_EQ(c.headers, (std::map<std::string, std::string>{
                           {"X-Frame-Options", "deny"},
                           {"X-Content-Type-Options", "nosniff"},
                           {"Strict-Transport-Security", "max-age=31536000"}}));
  EXPECT_EQ(c.basic_auth_users.size(), 2u);
  EXPECT_EQ(c.basic_auth_users.at("alice"), kHash);
}

TEST_F(WebConfigTest, DefaultsMatchExporterToolkit) {
  WebConfig c = ParseWebConfig(Tls(), "web.yml");
  EXPECT_EQ(c.tls.client_auth, ClientAuth::kNoClientCert);
  EXPECT_EQ(c.tls.min_version, TLS1_2_VERSION);
  EXPECT_EQ(c.tls.max_version, TLS1_3_VERSION);
  EXPECT_TRUE(c.tls.prefer_server_cipher_suites);
  EXPECT_TRUE(c.tls.cipher_suites.empty());
}

TEST_F(WebConfigTest, RelativeFilesAreFoundNextToTheConfigFile) {
  const std::string path = pki_->dir() + "/web.yml";
  std::ofstream(path) << "tls_server_config:\n  cert_file: server.crt\n  key_file: ./server.key\n"
                         "  client_ca_file: ca.crt\n  client_auth_type: RequireClientCert\n";
  WebConfig c = LoadWebConfig(path);
  EXPECT_EQ(c.tls.cert_source, pki_->dir() + "/server.crt");
  EXPECT_EQ(c.tls.key_pem, pki_->server().key_pem);
  EXPECT_EQ(c.tls.client_auth, ClientAuth::kRequireAnyClientCert);  // the old spelling
}

TEST_F(WebConfigTest, InlinePemWorksLikeFiles) {
  auto block = [](const std::string& pem) {
    std::string out = "|\n";
    size_t pos = 0;
    while (pos < pem.size()) {
      size_t nl = pem.find('\n', pos);
      out += "    " + pem.substr(pos, nl - pos) + "\n";
      pos = nl + 1;
    }
    return out;
  };
  WebConfig c = ParseWebConfig("tls_server_config:\n  cert: " + block(pki_->server().cert_pem) +
                                   "  key: " + block(pki_->server().key_pem),
                               "web.yml");
  EXPECT_TRUE(c.tls.enabled);
  EXPECT_EQ(c.tls.cert_source, "cert");
  EXPECT_EQ(c.tls.cert_pem, pki_->server().cert_pem);
}

TEST_F(WebConfigTest, UnreadableConfigFileNamesIt) {
  try {
    LoadWebConfig("/nonexistent/web.yml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "/nonexistent/web.yml");
  }
}

TEST_F(WebConfigTest, RefusesBadDocuments) {
  ExpectRefused("tls_server_config: [\n", "", "");
  ExpectRefused("- just\n- a list\n", "", "mapping");
  ExpectRefused("tls_config: {}\n", "tls_config", "unknown key");
  ExpectRefused("tls_server_config:\n  certfile: a\n", "tls_server_config.certfile", "unknown key");
  ExpectRefused("http_server_config:\n  http3: true\n", "http_server_config.http3", "unknown key");
  ExpectRefused("tls_server_config: yes\n", "tls_server_config", "mapping");
  ExpectRefused("tls_server_config:\n  cert_file: [a]\n", "tls_server_config.cert_file", "string");
  ExpectRefused("http_server_config:\n  http2: yes\n", "http_server_config.http2", "true or false");
  ExpectRefused(Tls("  cipher_suites: TLS_X\n"), "tls_server_config.cipher_suites", "list");
  ExpectRefused("basic_auth_users: [alice]\n", "basic_auth_users", "mapping");
  ExpectRefused("rate_limit:\n  interval: 1s\n  burst: 20\n", "rate_limit", "not supported");
}

TEST_F(WebConfigTest, RefusesIncompleteOrConflictingCertificates) {
  const std::string cert = "  cert_file: " + pki_->server().cert_path + "\n";
  const std::string key = "  key_file: " + pki_->server().key_path + "\n";
  ExpectRefused("tls_server_config:\n" + cert, "tls_server_config.key_file", "missing");
  ExpectRefused("tls_server_config:\n" + key, "tls_server_config.cert_file", "missing");
  ExpectRefused("tls_server_config:\n  client_auth_type: NoClientCert\n",
                "tls_server_config.cert_file", "missing");
  ExpectRefused(Tls("  cert: x\n"), "tls_server_config.cert", "together with cert_file");
  ExpectRefused("tls_server_config:\n  min_version: TLS13\n", "tls_server_config", "no certificate");
}

TEST_F(WebConfigTest, RefusesMissingUnreadableOrBadFiles) {
  const std::string key = "  key_file: " + pki_->server().key_path + "\n";
  const std::string cert = "  cert_file: " + pki_->server().cert_path + "\n";
  ExpectRefused("tls_server_config:\n  cert_file: /nonexistent/server.crt\n" + key,
                "tls_server_config.cert_file", "/nonexistent/server.crt");
  ExpectRefused("tls_server_config:\n" + cert + "  key_file: " + pki_->dir() + "\n",
                "tls_server_config.key_file", "directory");
  ExpectRefused(Tls("  client_ca_file: /nonexistent/ca.crt\n  client_auth_type: "
                    "RequireAndVerifyClientCert\n"),
                "tls_server_config.client_ca_file", "/nonexistent/ca.crt");
  ExpectRefused("tls_server_config:\n  cert_file: /dev/zero\n" + key,
                "tls_server_config.cert_file", "not a regular file");
  // Files that exist but hold the wrong thing.
  ExpectRefused("tls_server_config:\n  cert_file: " + pki_->server().key_path + "\n" + key,
                "tls_server_config.cert_file", "no PEM certificate");
  ExpectRefused("tls_server_config:\n" + cert + "  key_file: " + pki_->server().cert_path + "\n",
                "tls_server_config.key_file", "no usable PEM private key");
  ExpectRefused("tls_server_config:\n" + cert + "  key_file: " + pki_->client().key_path + "\n",
                "tls_server_config.key_file", "does not match");
  ExpectRefused(Tls("  client_ca_file: " + pki_->server().key_path +
                    "\n  client_auth_type: RequireAndVerifyClientCert\n"),
                "tls_server_config.client_ca_file", "no PEM certificate");
}

TEST_F(WebConfigTest, RefusesInconsistentClientAuth) {
  const std::string ca = "  client_ca_file: " + pki_->ca().cert_path + "\n";
  ExpectRefused(Tls("  client_auth_type: RequireAndVerifyClientCert\n"),
                "tls_server_config.client_auth_type", "needs a client CA");
  ExpectRefused(Tls("  client_auth_type: VerifyClientCertIfGiven\n"),
                "tls_server_config.client_auth_type", "needs a client CA");
  ExpectRefused(Tls(ca), "tls_server_config.client_auth_type", "NoClientCert");
  ExpectRefused(Tls(ca + "  client_auth_type: RequireAndVerify\n"),
                "tls_server_config.client_auth_type", "unknown client_auth_type");
  ExpectRefused(Tls(ca + "  client_auth_type: VerifyClientCertIfGiven\n"
                         "  client_allowed_sans: [a]\n"),
                "tls_server_config.client_allowed_sans", "RequireAnyClientCert");
  // The policies that need no CA load without one.
  EXPECT_NO_THROW(ParseWebConfig(Tls("  client_auth_type: RequestClientCert\n"), "web.yml"));
  EXPECT_NO_THROW(ParseWebConfig(Tls("  client_auth_type: RequireAnyClientCert\n"), "web.yml"));
}

TEST_F(WebConfigTest, RefusesUnsupportedProtocolSettings) {
  ExpectRefused(Tls("  min_version: TLS11\n"), "tls_server_config.min_version", "not supported");
  ExpectRefused(Tls("  min_version: TLS10\n"), "tls_server_config.min_version", "not supported");
  ExpectRefused(Tls("  min_version: TLS14\n"), "tls_server_config.min_version", "unknown");
  ExpectRefused(Tls("  max_version: TLS11\n"), "tls_server_config.max_version", "not supported");
  ExpectRefused(Tls("  min_version: TLS13\n  max_version: TLS12\n"),
                "tls_server_config.min_version", "above max_version");
  ExpectRefused(Tls("  cipher_suites: [TLS_MADE_UP]\n"), "tls_server_config.cipher_suites",
                "unknown cipher suite");
  ExpectRefused(Tls("  curve_preferences: [CurveP224]\n"), "tls_server_config.curve_preferences",
                "unknown curve");
}

TEST_F(WebConfigTest, RefusesHeadersExporterToolkitRefuses) {
  ExpectRefused("http_server_config:\n  headers:\n    X-Custom: 1\n",
                "http_server_config.headers.X-Custom", "cannot be configured");
  ExpectRefused("http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
                "http_server_config.headers.X-Frame-Options", "invalid value");
  ExpectRefused("http_server_config:\n  headers:\n    X-XSS-Protection: \"1\\r\\nSet-Cookie: a\"\n",
                "http_server_config.headers.X-XSS-Protection", "line break");
  ExpectRefused("http_server_config:\n  headers: [a]\n", "http_server_config.headers", "mapping");
  ExpectRefused("http_server_config:\n  headers:\n    X-XSS-Protection: [1]\n",
                "http_server_config.headers.X-XSS-Protection", "string");
}

TEST_F(WebConfigTest, RefusesPasswordHashesThatAreNotBcrypt) {
  for (const char* hash : {
           "plaintext",
           "$1$abcdefgh$abcdefghijklmnopqrstuv",                          // md5-crypt
           "$6$salt$abc",                                                 // sha512-crypt
           "$2x$10$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze",  // $2x$: not Go's
           "$2y$03$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze",  // cost below 4
           "$2y$10$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPz",   // one short
           "$2y$10$mDwo.lAisC94iLAyP81MCesa29IzH37oigHC/42V2pdJlUprsJPze!",
           "12345",
       }) {
    ExpectRefused(std::string("basic_auth_users:\n  alice: '") + hash + "'\n",
                  "basic_auth_users.alice", "not a bcrypt hash");
  }
  ExpectRefused("basic_auth_users:\n  alice: 12345\n", "basic_auth_users.alice", "bcrypt");
  ExpectRefused("basic_auth_users:\n  alice:\n", "basic_auth_users.alice", "bcrypt");
}

}  // namespace
}  // namespace accel::http
