// A throwaway PKI for TLS tests, made with OpenSSL's API (no openssl CLI, no fixtures on disk):
// a CA, a server certificate for 127.0.0.1/localhost, a client certificate signed by the CA with
// SAN DNS:scraper.example, and a "rogue" client certificate signed by an unrelated CA.
// P-256 keys, so making one takes about a millisecond. Files live in a fresh temp directory.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

namespace accel::test_support {

struct PemPair {
  std::string cert_pem;
  std::string key_pem;
  std::string cert_path;
  std::string key_path;
};

namespace internal {

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;

inline void Check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test PKI: ") + what);
}

inline Pkey NewKey() {
  Pkey key(EVP_EC_gen("P-256"));
  Check(key != nullptr, "EVP_EC_gen");
  return key;
}

inline void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  Check(ext != nullptr, "X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key`, signed by `issuer_key` (self-signed when issuer is null).
inline Cert NewCert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
                    bool ca, const std::string& sans) {
  static long serial = 1;
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer ? issuer : cert.get();
  AddExtension(cert.get(), signer, NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
  if (ca) AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  if (!sans.empty()) AddExtension(cert.get(), signer, NID_subject_alt_name, sans);
  Check(X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256()) > 0, "X509_sign");
  return cert;
}

inline std::string CertPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

inline std::string KeyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace internal

class TestPki {
 public:
  TestPki() {
    using namespace internal;
    char tmpl[] = "/tmp/accel-pki-XXXXXX";
    Check(mkdtemp(tmpl) != nullptr, "mkdtemp");
    dir_ = tmpl;

    Pkey ca_key = NewKey();
    Cert ca_cert = NewCert(ca_key.get(), "accel test CA", nullptr, nullptr, true, "");
    ca_ = Save("ca", ca_cert.get(), ca_key.get());

    Pkey server_key = NewKey();
    Cert server_cert = NewCert(server_key.get(), "localhost", ca_cert.get(), ca_key.get(), false,
                               "DNS:localhost,IP:127.0.0.1,IP:::1");
    server_ = Save("server", server_cert.get(), server_key.get());

    Pkey client_key = NewKey();
    Cert client_cert = NewCert(client_key.get(), "scraper", ca_cert.get(), ca_key.get(), false,
                               "DNS:scraper.example");
    client_ = Save("client", client_cert.get(), client_key.get());

    Pkey rogue_ca_key = NewKey();
    Cert rogue_ca = NewCert(rogue_ca_key.get(), "rogue CA", nullptr, nullptr, true, "");
    Pkey rogue_key = NewKey();
    Cert rogue_cert = NewCert(rogue_key.get(), "rogue", rogue_ca.get(), rogue_ca_key.get(), false,
                              "DNS:scraper.example");
    rogue_ = Save("rogue", rogue_cert.get(), rogue_key.get());
  }

  ~TestPki() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  const std::string& dir() const { return dir_; }
  const PemPair& ca() const { return ca_; }
  const PemPair& server() const { return server_; }
  const PemPair& client() const { return client_; }
  const PemPair& rogue() const { return rogue_; }

  /// A fresh client certificate signed by the test CA with the given SANs ("DNS:a,IP:1.2.3.4").
  PemPair ClientWithSans(const std::string& name, const std::string& sans) const {
    using namespace internal;
    BIO* bio = BIO_new_mem_buf(ca_.key_pem.data(), static_cast<int>(ca_.key_pem.size()));
    Pkey ca_key(PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr));
    BIO_free(bio);
    bio = BIO_new_mem_buf(ca_.cert_pem.data(), static_cast<int>(ca_.cert_pem.size()));
    Cert ca_cert(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr));
    BIO_free(bio);
    Pkey key = NewKey();
    Cert cert = NewCert(key.get(), name, ca_cert.get(), ca_key.get(), false, sans);
    PemPair p{CertPem(cert.get()), KeyPem(key.get()), dir_ + "/" + name + ".crt",
              dir_ + "/" + name + ".key"};
    WriteFile(p.cert_path, p.cert_pem);
    WriteFile(p.key_path, p.key_pem);
    return p;
  }

 private:
  PemPair Save(const std::string& name, X509* cert, EVP_PKEY* key) {
    PemPair p{internal::CertPem(cert), internal::KeyPem(key), dir_ + "/" + name + ".crt",
              dir_ + "/" + name + ".key"};
    internal::WriteFile(p.cert_path, p.cert_pem);
    internal::WriteFile(p.key_path, p.key_pem);
    return p;
  }

  std::string dir_;
  PemPair ca_, server_, client_, rogue_;
};

}  // namespace accel::test_support
