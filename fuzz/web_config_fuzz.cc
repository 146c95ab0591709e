// libFuzzer target: arbitrary bytes as an exporter-toolkit web config (--web.config.file).
//
// Only accel::InputError may leave http::ParseWebConfig; anything else is a bug, and so is a config it
// accepts that breaks what http::HttpServer relies on. File names in the input are looked up for
// real (relative ones under a directory that does not exist), so most TLS inputs end in an
// InputError about a missing file; that is expected.
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -Isrc fuzz/web_config_fuzz.cc \
//     src/common/*.cc src/telemetry/{web_config,tls_context}.cc -lyaml-cpp -lssl -lcrypto \
//     -o web_config_fuzz
//   ./web_config_fuzz -max_len=8192 fuzz/corpus/web_config
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/error.h"
#include "http/web_config.h"

namespace {

using namespace accel;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckConfig(const http::WebConfig& c) {
  const http::TlsServerConfig& tls = c.tls;
  if (tls.enabled) {
    Check(!tls.cert_pem.empty() && !tls.key_pem.empty());
    Check(tls.min_version <= tls.max_version);
    Check(tls.min_version >= 0x0303 && tls.max_version <= 0x0304);
    const bool verifies = tls.client_auth == http::ClientAuth::kVerifyClientCertIfGiven ||
                          tls.client_auth == http::ClientAuth::kRequireAndVerifyClientCert;
    Check(!verifies || !tls.client_ca_pem.empty());
    Check(tls.client_auth != http::ClientAuth::kNoClientCert || tls.client_ca_pem.empty());
  }
  for (const auto& [user, hash] : c.basic_auth_users) {
    Check(hash.size() == 60 && hash.compare(0, 2, "$2") == 0);
  }
  for (const auto& [name, value] : c.headers) {
    Check(!value.empty() && value.find_first_of("\r\n") == std::string::npos);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    CheckConfig(http::ParseWebConfig(text, "fuzz input", "/nonexistent-accel-fuzz-dir"));
  } catch (const accel::InputError&) {
  }
  return 0;
}
