#include "http/web_config.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <optional>
#include <regex>

#include "common/error.h"
#include "common/json_reader.h"
#include "common/structured_file.h"
#include "http/tls_context.h"

namespace accel::http {
namespace {

using nlohmann::json;

// exporter-toolkit lets only these response headers be configured; a non-empty list is the set
// of values it accepts (compared exactly, as Go does).
const std::map<std::string, std::vector<std::string>>& AllowedHeaders() {
  static const std::map<std::string, std::vector<std::string>> headers = {
      {"Strict-Transport-Security", {}},
      {"X-Content-Type-Options", {"nosniff"}},
      {"X-Frame-Options", {"deny", "sameorigin"}},
      {"X-XSS-Protection", {}},
      {"Content-Security-Policy", {}},
  };
  return headers;
}

// The web config's conventions on the common reader: YAML's words in messages, a key with no value
// (null) reads as unset, and files it names are relative to the config's directory.
class WebConfigReader : public JsonReader {
 public:
  WebConfigReader(std::string where, std::string base_dir)
      : JsonReader(std::move(where), JsonWords::kYaml), base_dir_(std::move(base_dir)) {}

  // `node` as a mapping (null = empty) whose keys are all in `known`.
  const json& Section(const json& node, const std::string& field,
                      std::initializer_list<std::string_view> known) const {
    static const json kEmpty = json::object();
    return node.is_null() ? kEmpty : Object(node, field, known);
  }

  // A string value; absent, null and "" all read as "".
  std::string OptionalString(const json& obj, const std::string& field, const char* key) const {
    const json* v = FindNonNull(obj, key);
    return v ? String(*v, {field, key}) : "";
  }

  std::optional<bool> OptionalBool(const json& obj, const std::string& field, const char* key) const {
    const json* v = FindNonNull(obj, key);
    return v ? std::optional<bool>(Bool(*v, {field, key})) : std::nullopt;
  }

  std::vector<std::string> OptionalStrings(const json& obj, const std::string& field, const char* key) const {
    const json* v = FindNonNull(obj, key);
    return v ? Strings(*v, {field, key}) : std::vector<std::string>{};
  }

  // The contents of a file named in the config, relative to the config's directory.
  std::string ReadNamedFile(const std::string& field, const std::string& name,
                            std::string* resolved) const {
    std::filesystem::path path(name);
    if (path.is_relative() && !base_dir_.empty()) path = std::filesystem::path(base_dir_) / path;
    *resolved = path.string();
    // A device or FIFO (/dev/zero, /dev/stdin) would be read forever; secrets mounted by
    // Kubernetes are symlinks to regular files, which this follows.
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_directory(path, ec) &&
        !std::filesystem::is_regular_file(path, ec)) {
      Fail(field, "\"" + *resolved + "\" is not a regular file");
    }
    try {
      return ReadWholeFile(*resolved);
    } catch (const InputError& e) {
      Fail(field, "\"" + *resolved + "\" " + e.problem(), e.hint());
    }
  }

 private:
  std::string base_dir_;
};

int TlsVersion(const WebConfigReader& r, const std::string& field, const std::string& name, int fallback) {
  if (name.empty()) return fallback;
  if (name == "TLS13") return TLS1_3_VERSION;
  if (name == "TLS12") return TLS1_2_VERSION;
  if (name == "TLS10" || name == "TLS11") {
    r.Fail(field, "\"" + name + "\" is not supported",
           "OpenSSL 3 refuses TLS 1.0 and 1.1 at its default security level; use TLS12 or TLS13");
  }
  r.Fail(field, "unknown TLS version \"" + name + "\"", "use TLS12 or TLS13");
}

ClientAuth ParseClientAuth(const WebConfigReader& r, const std::string& field, const std::string& name) {
  if (name.empty() || name == "NoClientCert") return ClientAuth::kNoClientCert;
  if (name == "RequestClientCert") return ClientAuth::kRequestClientCert;
  // "RequireClientCert" is exporter-toolkit's backwards-compatible spelling.
  if (name == "RequireAnyClientCert" || name == "RequireClientCert") {
    return ClientAuth::kRequireAnyClientCert;
  }
  if (name == "VerifyClientCertIfGiven") return ClientAuth::kVerifyClientCertIfGiven;
  if (name == "RequireAndVerifyClientCert") return ClientAuth::kRequireAndVerifyClientCert;
  r.Fail(field, "unknown client_auth_type \"" + name + "\"",
         "use NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven or "
         "RequireAndVerifyClientCert");
}

// Go's IANA cipher suite names -> OpenSSL names. TLS 1.3 suites are accepted and ignored, as Go
// ignores them (they are not configurable there either).
std::vector<std::string> CipherSuites(const WebConfigReader& r, const std::string& field,
                                      const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& name : names) {
    if (name.rfind("TLS_AES_", 0) == 0 || name == "TLS_CHACHA20_POLY1305_SHA256") continue;
    std::string openssl = OPENSSL_cipher_name(name.c_str());
    // Go also spells the ChaCha20 suites without the _SHA256 suffix.
    if (openssl == "(NONE)") openssl = OPENSSL_cipher_name((name + "_SHA256").c_str());
    if (openssl == "(NONE)") {
      r.Fail(field, "unknown cipher suite \"" + name + "\"",
             "use IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
    }
    out.push_back(openssl);
  }
  return out;
}

std::vector<std::string> Curves(const WebConfigReader& r, const std::string& field,
                                const std::vector<std::string>& names) {
  static const std::map<std::string, std::string> kCurves = {
      {"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}, {"X25519", "X25519"}};
  std::vector<std::string> out;
  for (const std::string& name : names) {
    auto it = kCurves.find(name);
    if (it == kCurves.end()) {
      r.Fail(field, "unknown curve \"" + name + "\"", "use CurveP256, CurveP384, CurveP521 or X25519");
    }
    out.push_back(it->second);
  }
  return out;
}

// One PEM from either its inline key or its *_file key; `source` says which.
std::string Pem(const WebConfigReader& r, const json& tls, const char* inline_key, const char* file_key,
                std::string* source) {
  const std::string field = "tls_server_config";
  std::string text = r.OptionalString(tls, field, inline_key);
  std::string file = r.OptionalString(tls, field, file_key);
  if (!text.empty() && !file.empty()) {
    r.Fail(JsonReader::Join(field, inline_key), std::string("is given together with ") + file_key,
           "give the PEM inline or as a file, not both");
  }
  if (!file.empty()) return r.ReadNamedFile(JsonReader::Join(field, file_key), file, source);
  *source = text.empty() ? "" : inline_key;
  return text;
}

void CheckClientPolicy(const WebConfigReader& r, const TlsServerConfig& tls) {
  const std::string field = "tls_server_config.client_auth_type";
  const bool has_ca = !tls.client_ca_pem.empty();
  if (has_ca && tls.client_auth == ClientAuth::kNoClientCert) {
    r.Fail(field, "a client CA is configured but client_auth_type is NoClientCert",
           "set client_auth_type: RequireAndVerifyClientCert to require client certificates");
  }
  if (!has_ca && (tls.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
                  tls.client_auth == ClientAuth::kRequireAndVerifyClientCert)) {
    r.Fail(field, "verifying client certificates needs a client CA",
           "set client_ca_file to the CA that signs the scrapers' certificates");
  }
  if (!tls.client_allowed_sans.empty() && tls.client_auth != ClientAuth::kRequireAnyClientCert &&
      tls.client_auth != ClientAuth::kRequireAndVerifyClientCert) {
    r.Fail("tls_server_config.client_allowed_sans",
           "needs client_auth_type RequireAnyClientCert or RequireAndVerifyClientCert",
           "without a required client certificate there is no SAN to match");
  }
}

// Tries the settings on a scratch OpenSSL context so bad PEM, a key that does not match its
// certificate or a cipher OpenSSL rejects fail now, with the key that caused it.
void TryTlsSettings(const WebConfigReader& r, const TlsServerConfig& tls) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_server_method()),
                                                        &SSL_CTX_free);
  if (!ctx) r.Fail("tls_server_config", "OpenSSL cannot create a TLS context");
  TlsSetupError error;
  if (!ConfigureTlsContext(tls, ctx.get(), &error)) r.Fail(error.field, error.problem);
}

TlsServerConfig ParseTls(const WebConfigReader& r, const json& node) {
  const std::string f = "tls_server_config";
  const json& tls_node = r.Section(
      node, f,
      {"cert", "key", "client_ca", "cert_file", "key_file", "client_auth_type", "client_ca_file",
       "client_allowed_sans", "min_version", "max_version", "cipher_suites",
       "prefer_server_cipher_suites", "curve_preferences"});
  TlsServerConfig tls;
  tls.cert_pem = Pem(r, tls_node, "cert", "cert_file", &tls.cert_source);
  tls.key_pem = Pem(r, tls_node, "key", "key_file", &tls.key_source);
  tls.client_ca_pem = Pem(r, tls_node, "client_ca", "client_ca_file", &tls.client_ca_source);
  const std::string auth = r.OptionalString(tls_node, f, "client_auth_type");
  tls.client_auth = ParseClientAuth(r, JsonReader::Join(f, "client_auth_type"), auth);
  tls.client_allowed_sans = r.OptionalStrings(tls_node, f, "client_allowed_sans");
  tls.min_version = TlsVersion(r, JsonReader::Join(f, "min_version"),
                               r.OptionalString(tls_node, f, "min_version"), TLS1_2_VERSION);
  tls.max_version = TlsVersion(r, JsonReader::Join(f, "max_version"),
                               r.OptionalString(tls_node, f, "max_version"), TLS1_3_VERSION);
  tls.cipher_suites = CipherSuites(r, JsonReader::Join(f, "cipher_suites"),
                                   r.OptionalStrings(tls_node, f, "cipher_suites"));
  tls.curve_preferences = Curves(r, JsonReader::Join(f, "curve_preferences"),
                                 r.OptionalStrings(tls_node, f, "curve_preferences"));
  tls.prefer_server_cipher_suites =
      r.OptionalBool(tls_node, f, "prefer_server_cipher_suites").value_or(true);

  tls.enabled = !tls.cert_source.empty() || !tls.key_source.empty() ||
                !tls.client_ca_source.empty() || !auth.empty();
  if (!tls.enabled) {
    if (!tls_node.empty()) {
      r.Fail(f, "sets TLS options but no certificate", "add cert_file and key_file to turn TLS on");
    }
    return tls;
  }
  if (tls.cert_source.empty()) r.Fail(JsonReader::Join(f, "cert_file"), "is missing", "TLS needs a certificate and its key");
  if (tls.key_source.empty()) r.Fail(JsonReader::Join(f, "key_file"), "is missing", "TLS needs a certificate and its key");
  if (tls.min_version > tls.max_version) {
    r.Fail(JsonReader::Join(f, "min_version"), "is above max_version");
  }
  CheckClientPolicy(r, tls);
  TryTlsSettings(r, tls);
  return tls;
}

void ParseHttp(const WebConfigReader& r, const json& node, WebConfig* config) {
  const std::string f = "http_server_config";
  const json& http = r.Section(node, f, {"http2", "headers"});
  config->http2 = r.OptionalBool(http, f, "http2").value_or(true);
  auto it = http.find("headers");
  if (it == http.end() || it->is_null()) return;
  if (!it->is_object()) r.Fail(JsonReader::Join(f, "headers"), "must be a mapping of header: value");
  for (const auto& [name, value] : it->items()) {
    const std::string field = JsonReader::Join(f, "headers." + name);
    auto allowed = AllowedHeaders().find(name);
    if (allowed == AllowedHeaders().end()) {
      r.Fail(field, "this header cannot be configured",
             "exporter-toolkit allows Strict-Transport-Security, X-Content-Type-Options, "
             "X-Frame-Options, X-XSS-Protection and Content-Security-Policy");
    }
    if (!value.is_string()) r.Fail(field, "must be a string");
    const std::string text = value.get<std::string>();
    if (text.find_first_of(std::string("\r\n\0", 3)) != std::string::npos) {
      r.Fail(field, "contains a line break or NUL");
    }
    const std::vector<std::string>& values = allowed->second;
    if (!text.empty() && !values.empty() &&
        std::find(values.begin(), values.end(), text) == values.end()) {
      std::string list;
      for (const std::string& v : values) list += (list.empty() ? "" : ", ") + v;
      r.Fail(field, "invalid value \"" + text + "\"", "expected one of: " + list);
    }
    if (!text.empty()) config->headers[name] = text;  // blank = unset, as in exporter-toolkit
  }
}

void ParseUsers(const WebConfigReader& r, const json& node, WebConfig* config) {
  const std::string f = "basic_auth_users";
  if (node.is_null()) return;
  if (!node.is_object()) r.Fail(f, "must be a mapping of user: bcrypt hash");
  static const std::regex kBcrypt(R"(\$2[aby]\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53})");
  for (const auto& [user, hash] : node.items()) {
    const std::string field = JsonReader::Join(f, user);
    if (!hash.is_string() || !std::regex_match(hash.get<std::string>(), kBcrypt)) {
      r.Fail(field, "is not a bcrypt hash ($2a$, $2b$ or $2y$, cost 04-31, 60 characters)",
             "make one with: htpasswd -nBC 10 \"\" | tr -d ':\\n'");
    }
    config->basic_auth_users[user] = hash.get<std::string>();
  }
}

}  // namespace

WebConfig ParseWebConfig(const std::string& yaml_text, const std::string& where,
                         const std::string& base_dir) {
  const WebConfigReader r(where, base_dir);
  const json doc = ParseStructuredText(yaml_text, where);
  const json& top = r.Section(doc, "", {"tls_server_config", "http_server_config",
                                        "basic_auth_users", "rate_limit"});
  if (auto it = top.find("rate_limit"); it != top.end() && !it->is_null()) {
    r.Fail("rate_limit", "is not supported", "remove it, or rate-limit in a reverse proxy");
  }
  WebConfig config;
  auto section = [&](const char* key) -> const json& {
    static const json kNull;
    auto it = top.find(key);
    return it == top.end() ? kNull : *it;
  };
  config.tls = ParseTls(r, section("tls_server_config"));
  ParseHttp(r, section("http_server_config"), &config);
  ParseUsers(r, section("basic_auth_users"), &config);
  return config;
}

WebConfig LoadWebConfig(const std::string& path) {
  if (path.empty()) return WebConfig{};
  const std::string text = ReadWholeFile(path);
  return ParseWebConfig(text, path, std::filesystem::path(path).parent_path().string());
}

}  // namespace accel::http
