#include "http/tls_context.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace accel::http {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct NamesFree {
  void operator()(GENERAL_NAMES* n) const { GENERAL_NAMES_free(n); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

// The client-certificate policy the verify callback needs; owned by the SSL_CTX (ex_data), freed
// with it.
struct ClientPolicy {
  bool verify_chain = true;
  std::vector<std::string> allowed_sans;
};

void FreePolicy(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<ClientPolicy*>(ptr);
}

int PolicyIndex() {
  static const int index =
      SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, &FreePolicy);
  return index;
}

std::string OpenSslReason() {
  unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) return "";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof(buf));
  return std::string(": ") + buf;
}

bool Fail(TlsSetupError* error, std::string field, std::string problem) {
  error->field = std::move(field);
  error->problem = std::move(problem) + OpenSslReason();
  return false;
}

// Every certificate in a PEM text, in order.
std::vector<X509Ptr> ReadCertificates(const std::string& pem) {
  std::vector<X509Ptr> certs;
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  ERR_clear_error();  // the loop ends on a "no start line" error
  return certs;
}

// Refuses to prompt for a passphrase: an encrypted key fails to load instead of blocking.
int NoPassphrase(char*, int, int, void*) { return 0; }

std::string AsString(const ASN1_STRING* s) {
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                     static_cast<size_t>(ASN1_STRING_length(s)));
}

// The certificate's subject alternative names written the way Go's x509 package writes them.
std::vector<std::string> SubjectAltNames(X509* cert) {
  std::vector<std::string> out;
  std::unique_ptr<GENERAL_NAMES, NamesFree> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (!names) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type == GEN_DNS || name->type == GEN_EMAIL || name->type == GEN_URI) {
      out.push_back(AsString(name->d.ia5));
    } else if (name->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = name->d.iPAddress;
      char text[INET6_ADDRSTRLEN] = {};
      int family = ASN1_STRING_length(ip) == 4 ? AF_INET : AF_INET6;
      if (ASN1_STRING_length(ip) == 4 || ASN1_STRING_length(ip) == 16) {
        if (inet_ntop(family, ASN1_STRING_get0_data(ip), text, sizeof(text))) out.push_back(text);
      }
    }
  }
  return out;
}

int VerifyClient(int preverify_ok, X509_STORE_CTX* store) {
  auto* ssl = static_cast<SSL*>(
      X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  const auto* policy = ssl == nullptr ? nullptr
                                      : static_cast<const ClientPolicy*>(SSL_CTX_get_ex_data(
                                            SSL_get_SSL_CTX(ssl), PolicyIndex()));
  if (policy == nullptr) return preverify_ok;
  // RequestClientCert / RequireAnyClientCert take any certificate, as Go does.
  if (!policy->verify_chain) preverify_ok = 1;
  if (!preverify_ok) return 0;
  if (policy->allowed_sans.empty() || X509_STORE_CTX_get_error_depth(store) != 0) return 1;
  for (const std::string& san : SubjectAltNames(X509_STORE_CTX_get_current_cert(store))) {
    if (std::find(policy->allowed_sans.begin(), policy->allowed_sans.end(), san) !=
        policy->allowed_sans.end()) {
      return 1;
    }
  }
  X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
  return 0;
}

bool UseCertificateAndKey(const TlsServerConfig& config, SSL_CTX* ctx, TlsSetupError* error) {
  std::vector<X509Ptr> chain = ReadCertificates(config.cert_pem);
  const std::string cert_field = "tls_server_config." +
                                 std::string(config.cert_source == "cert" ? "cert" : "cert_file");
  const std::string key_field = "tls_server_config." +
                                std::string(config.key_source == "key" ? "key" : "key_file");
  if (chain.empty()) {
    return Fail(error, cert_field, config.cert_source + " holds no PEM certificate");
  }
  if (SSL_CTX_use_certificate(ctx, chain[0].get()) != 1) {
    return Fail(error, cert_field, "cannot use the certificate in " + config.cert_source);
  }
  for (size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(ctx, chain[i].get()) != 1) {
      return Fail(error, cert_field, "cannot use the chain certificates in " + config.cert_source);
    }
  }
  std::unique_ptr<BIO, BioFree> bio(
      BIO_new_mem_buf(config.key_pem.data(), static_cast<int>(config.key_pem.size())));
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, &NoPassphrase, nullptr) : nullptr);
  if (!key) {
    return Fail(error, key_field,
                config.key_source + " holds no usable PEM private key (encrypted keys are not "
                                    "supported)");
  }
  if (SSL_CTX_use_PrivateKey(ctx, key.get()) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    return Fail(error, key_field,
                "the key in " + config.key_source + " does not match the certificate in " +
                    config.cert_source);
  }
  return true;
}

bool UseClientPolicy(const TlsServerConfig& config, SSL_CTX* ctx, TlsSetupError* error) {
  const std::string ca_field =
      "tls_server_config." +
      std::string(config.client_ca_source == "client_ca" ? "client_ca" : "client_ca_file");
  if (!config.client_ca_pem.empty()) {
    std::vector<X509Ptr> cas = ReadCertificates(config.client_ca_pem);
    if (cas.empty()) {
      return Fail(error, ca_field, config.client_ca_source + " holds no PEM certificate");
    }
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    for (const X509Ptr& ca : cas) {
      if (X509_STORE_add_cert(store, ca.get()) != 1 || SSL_CTX_add_client_CA(ctx, ca.get()) != 1) {
        return Fail(error, ca_field, "cannot use the CA certificates in " + config.client_ca_source);
      }
    }
  }
  int mode = SSL_VERIFY_NONE;
  switch (config.client_auth) {
    case ClientAuth::kNoClientCert: break;
    case ClientAuth::kRequestClientCert:
    case ClientAuth::kVerifyClientCertIfGiven: mode = SSL_VERIFY_PEER; break;
    case ClientAuth::kRequireAnyClientCert:
    case ClientAuth::kRequireAndVerifyClientCert:
      mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
      break;
  }
  if (mode == SSL_VERIFY_NONE) {
    SSL_CTX_set_verify(ctx, mode, nullptr);
    return true;
  }
  auto policy = std::make_unique<ClientPolicy>();
  policy->verify_chain = config.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
                         config.client_auth == ClientAuth::kRequireAndVerifyClientCert;
  policy->allowed_sans = config.client_allowed_sans;
  if (PolicyIndex() < 0 || SSL_CTX_set_ex_data(ctx, PolicyIndex(), policy.get()) != 1) {
    return Fail(error, "tls_server_config.client_auth_type", "cannot attach the client policy");
  }
  policy.release();  // owned by ctx now; FreePolicy deletes it
  SSL_CTX_set_verify(ctx, mode, &VerifyClient);
  // Session resumption with client verification needs an id context.
  static const unsigned char kContext[] = "accel-exporter";
  SSL_CTX_set_session_id_context(ctx, kContext, sizeof(kContext) - 1);
  return true;
}

bool UseProtocolSettings(const TlsServerConfig& config, SSL_CTX* ctx, TlsSetupError* error) {
  if (SSL_CTX_set_min_proto_version(ctx, config.min_version) != 1) {
    return Fail(error, "tls_server_config.min_version", "OpenSSL refuses this minimum version");
  }
  if (SSL_CTX_set_max_proto_version(ctx, config.max_version) != 1) {
    return Fail(error, "tls_server_config.max_version", "OpenSSL refuses this maximum version");
  }
  if (!config.cipher_suites.empty()) {
    std::string list;
    for (const std::string& c : config.cipher_suites) list += (list.empty() ? "" : ":") + c;
    if (SSL_CTX_set_cipher_list(ctx, list.c_str()) != 1) {
      return Fail(error, "tls_server_config.cipher_suites",
                  "OpenSSL accepts none of the cipher suites");
    }
  }
  if (!config.curve_preferences.empty()) {
    std::string list;
    for (const std::string& c : config.curve_preferences) list += (list.empty() ? "" : ":") + c;
    if (SSL_CTX_set1_groups_list(ctx, list.c_str()) != 1) {
      return Fail(error, "tls_server_config.curve_preferences", "OpenSSL refuses these curves");
    }
  }
  if (config.prefer_server_cipher_suites) {
    SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  } else {
    SSL_CTX_clear_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  return true;
}

}  // namespace

bool ConfigureTlsContext(const TlsServerConfig& config, SSL_CTX* ctx, TlsSetupError* error) {
  ERR_clear_error();
  bool ok = UseCertificateAndKey(config, ctx, error) && UseClientPolicy(config, ctx, error) &&
            UseProtocolSettings(config, ctx, error);
  ERR_clear_error();
  return ok;
}

}  // namespace accel::http
