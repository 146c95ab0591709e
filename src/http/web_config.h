// WebConfig: the Prometheus exporter-toolkit web configuration file (--web.config.file), the one
// node_exporter and dcgm-exporter read: TLS, client certificates, basic auth, extra headers.
//
// Loading is strict like exporter-toolkit (unknown keys are errors) and complete: every file
// named is read, every PEM is parsed and the TLS settings are tried on a scratch OpenSSL
// context, so a config that loads is one the server can serve. docs/web-config.md lists what is
// honoured and what is refused. Plain structs and stateless functions; safe from any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace accel::http {

/// Client certificate policy (Go crypto/tls ClientAuthType names).
enum class ClientAuth {
  kNoClientCert,                ///< never ask for a client certificate
  kRequestClientCert,           ///< ask; accept none or any, unverified
  kRequireAnyClientCert,        ///< require one; do not verify it
  kVerifyClientCertIfGiven,     ///< accept none; verify one if sent
  kRequireAndVerifyClientCert,  ///< require one and verify it against the client CA (real mTLS)
};

/// tls_server_config. TLS is on when `enabled`; every PEM is already read into memory.
struct TlsServerConfig {
  bool enabled = false;       ///< true when any of cert/key/client CA/client_auth_type was given
  std::string cert_source;    ///< the cert_file path (resolved), or "cert" when given inline
  std::string cert_pem;       ///< server certificate chain, PEM (leaf first)
  std::string key_source;     ///< the key_file path (resolved), or "key" when given inline
  std::string key_pem;        ///< server private key, PEM (unencrypted)
  std::string client_ca_source;  ///< the client_ca_file path, "client_ca", or empty
  std::string client_ca_pem;  ///< CA certificates that sign client certificates, PEM; may be empty
  ClientAuth client_auth = ClientAuth::kNoClientCert;  ///< client_auth_type
  /// client_allowed_sans: the client certificate must carry one of these DNS/IP/e-mail/URI SANs.
  std::vector<std::string> client_allowed_sans;
  int min_version = 0x0303;   ///< min_version as a TLS protocol number (0x0303 = TLS 1.2)
  int max_version = 0x0304;   ///< max_version (0x0304 = TLS 1.3)
  /// cipher_suites as OpenSSL names (TLS <= 1.2 only; empty = OpenSSL defaults).
  std::vector<std::string> cipher_suites;
  bool prefer_server_cipher_suites = true;  ///< prefer_server_cipher_suites
  /// curve_preferences as OpenSSL group names ("P-256", "X25519"); empty = OpenSSL defaults.
  std::vector<std::string> curve_preferences;
};

/// The whole web config file.
struct WebConfig {
  TlsServerConfig tls;  ///< tls_server_config
  /// http_server_config.http2: accepted for compatibility; the server speaks HTTP/1.1 only.
  bool http2 = true;
  /// http_server_config.headers: added to every response (only exporter-toolkit's five names).
  std::map<std::string, std::string> headers;
  /// basic_auth_users: user name -> bcrypt hash ($2a$/$2b$/$2y$). Empty = no authentication.
  std::map<std::string, std::string> basic_auth_users;
};

/// Reads and checks the web config file at `path`; relative file names inside it are taken
/// relative to the file's directory (as exporter-toolkit does). An empty path returns the
/// default WebConfig (plain HTTP, no authentication).
/// Throws InputError (where = the file, field = the key path) for an unreadable file and for
/// everything ParseWebConfig refuses.
WebConfig LoadWebConfig(const std::string& path);

/// Parses web config text; `where` names it in errors, `base_dir` anchors relative file names
/// ("" = the working directory). Throws InputError for: bad YAML, a document that is not a
/// mapping, an unknown key, a value of the wrong type, cert without key (or key without cert),
/// both an inline PEM and its *_file, a missing/unreadable/unparsable cert, key or CA file, a key
/// that does not match the cert, a client_auth_type that needs a client CA without one, a client
/// CA with NoClientCert, client_allowed_sans without a required client certificate, an unknown
/// or unsupported TLS version (TLS10/TLS11 are refused), min_version above max_version, an
/// unknown cipher suite or curve, a header exporter-toolkit does not allow or a bad value for
/// it, a password hash that is not bcrypt, and rate_limit (not supported).
WebConfig ParseWebConfig(const std::string& yaml_text, const std::string& where,
                         const std::string& base_dir = "");

}  // namespace accel::http
