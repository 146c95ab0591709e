// Applies a TlsServerConfig to an OpenSSL server context: certificate chain, key, client CA and
// client-certificate policy (including client_allowed_sans), protocol versions, ciphers, curves.
//
// Used twice with the same code: by ParseWebConfig on a scratch context (so a bad config fails at
// load, not at the first handshake) and by HttpServer on the live one. Stateless; safe from
// any thread as long as each call has its own SSL_CTX.
#pragma once

#include <openssl/ssl.h>

#include <string>

#include "http/web_config.h"

namespace accel::http {

/// Why a TLS config could not be applied.
struct TlsSetupError {
  std::string field;    ///< key path in the web config, e.g. "tls_server_config.key_file"
  std::string problem;  ///< what went wrong, with OpenSSL's reason when there is one
};

/// Configures `ctx` (not owned; must be a server or generic TLS context) from `config`.
/// Returns true on success. On failure returns false and fills `*error`; `ctx` is then half
/// configured and must be freed, not used. Leaves OpenSSL's thread-local error queue empty.
bool ConfigureTlsContext(const TlsServerConfig& config, SSL_CTX* ctx, TlsSetupError* error);

}  // namespace accel::http
