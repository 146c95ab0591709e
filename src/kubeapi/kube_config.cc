#include "kubeapi/kube_config.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/base64.h"
#include "common/error.h"
#include "common/json_text.h"
#include "common/small_file.h"
#include "common/yaml_config.h"

namespace accel::kubeapi {

namespace {

constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

std::string Trim(std::string s) {
  const size_t start = s.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  s.erase(0, start);
  s.erase(s.find_last_not_of(" \t\r\n") + 1);
  return s;
}

// Who a service account token says it is: the JWT's subject, "system:serviceaccount:NS:NAME"
// read as "service account NS/NAME". Tokens that are not a readable JWT are named by file.
std::string TokenIdentity(const std::string& token, const std::string& file) {
  const std::string fallback = "the service account whose token is " + file;
  const size_t first = token.find('.');
  const size_t second = first == std::string::npos ? std::string::npos : token.find('.', first + 1);
  if (second == std::string::npos) return fallback;
  std::string payload = token.substr(first + 1, second - first - 1);
  for (char& ch : payload) {
    if (ch == '-') ch = '+';
    if (ch == '_') ch = '/';
  }
  const std::optional<std::string> decoded = DecodeBase64(payload, Base64Rules::kLenient);
  if (!decoded) return fallback;
  nlohmann::json claims;
  try {
    claims = ParseJsonText(*decoded, file);
  } catch (const InputError&) {
    return fallback;
  }
  if (!claims.is_object() || !claims.contains("sub") || !claims["sub"].is_string()) return fallback;
  const std::string sub = claims["sub"].get<std::string>();
  const std::string prefix = "system:serviceaccount:";
  if (sub.rfind(prefix, 0) == 0 && sub.find(':', prefix.size()) != std::string::npos) {
    const size_t colon = sub.find(':', prefix.size());
    return "service account " + sub.substr(prefix.size(), colon - prefix.size()) + "/" + sub.substr(colon + 1);
  }
  return "'" + sub + "'";
}

std::string Resolve(const std::string& path, const std::string& base_dir) {
  if (path.empty() || base_dir.empty() || path[0] == '/') return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

// Checks the server URL: http(s)://host[:port][/prefix]; returns it without a trailing slash.
std::string CheckServer(const std::string& where, const std::string& field, std::string server) {
  std::string rest;
  if (server.rfind("https://", 0) == 0) {
    rest = server.substr(8);
  } else if (server.rfind("http://", 0) == 0) {
    rest = server.substr(7);
  } else {
    throw InputError(where, field, "'" + server + "' is not an https:// or http:// URL",
                     "e.g. https://10.0.0.1:6443");
  }
  const std::string authority = rest.substr(0, rest.find('/'));
  if (authority.empty() || authority[0] == ':' || authority.find('@') != std::string::npos ||
      authority.find_first_of(" \t\r\n?#") != std::string::npos ||
      (authority[0] == '[' && authority.find(']') == std::string::npos))
    throw InputError(where, field, "'" + server + "' names no valid host", "e.g. https://10.0.0.1:6443");
  while (!server.empty() && server.back() == '/') server.pop_back();
  return server;
}

// The mapping `key` of the named entry `name` in the list `list_key` (contexts, clusters, users).
YAML::Node FindNamed(const std::string& where, const YAML::Node& root, const std::string& list_key,
                     const std::string& entry_key, const std::string& name, const std::string& needed_by) {
  const YAML::Node list = root[list_key];
  if (!list || list.IsNull())
    throw InputError(where, list_key, "missing, but " + needed_by + " names " + entry_key + " '" + name + "'");
  if (!list.IsSequence()) throw InputError(where, list_key, "must be a list");
  std::string known;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node entry = list[i];
    const std::string field = list_key + "[" + std::to_string(i) + "]";
    if (!entry.IsMap()) throw InputError(where, field, "must be a mapping with name and " + entry_key);
    const YAML::Node n = entry["name"];
    if (!n) throw InputError(where, field + ".name", "missing");
    const std::string entry_name = YamlString(where, n, field + ".name");
    if (entry_name != name) {
      known += (known.empty() ? "" : ", ") + entry_name;
      continue;
    }
    const YAML::Node body = entry[entry_key];
    if (!body || body.IsNull()) return YAML::Node(YAML::NodeType::Map);
    if (!body.IsMap()) throw InputError(where, list_key + "[" + name + "]." + entry_key, "must be a mapping");
    return body;
  }
  throw InputError(where, list_key, "has no " + entry_key + " named '" + name + "' (" + needed_by + " names it)",
                   known.empty() ? "" : "known: " + known);
}

std::string OptionalString(const std::string& where, const YAML::Node& map, const std::string& key,
                           const std::string& path) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return "";
  return YamlString(where, v, path.empty() ? key : path + "." + key);
}

std::string DecodedData(const std::string& where, const YAML::Node& map, const std::string& key,
                        const std::string& path) {
  const std::string text = OptionalString(where, map, key, path);
  if (text.empty()) return "";
  std::optional<std::string> decoded = DecodeBase64(text, Base64Rules::kLenient);
  if (!decoded || decoded->empty())
    throw InputError(where, path + "." + key, "is not base64", "the *-data fields hold base64 of the PEM text");
  return std::move(*decoded);
}

KubeConfig ParseYaml(const std::string& text, const std::string& where, const std::string& base_dir,
                     const std::string& wanted_context) {
  const YAML::Node root = LoadYamlText(text, where);
  if (!root.IsMap()) throw InputError(where, "", "is not a kubeconfig (expected a mapping with clusters, users, contexts)");
  std::string context_name = wanted_context;
  if (context_name.empty()) {
    context_name = OptionalString(where, root, "current-context", "");
    if (context_name.empty())
      throw InputError(where, "current-context", "missing or empty", "set it with `kubectl config use-context NAME`");
  }
  const YAML::Node context = FindNamed(where, root, "contexts", "context", context_name, "the context");
  const std::string context_path = "contexts[" + context_name + "].context";
  const std::string cluster_name = OptionalString(where, context, "cluster", context_path);
  if (cluster_name.empty()) throw InputError(where, context_path + ".cluster", "missing or empty");
  const std::string user_name = OptionalString(where, context, "user", context_path);

  KubeConfig c;
  c.source = where;
  if (std::string ns = OptionalString(where, context, "namespace", context_path); !ns.empty()) c.default_namespace = ns;

  const YAML::Node cluster =
      FindNamed(where, root, "clusters", "cluster", cluster_name, "context '" + context_name + "'");
  const std::string cluster_path = "clusters[" + cluster_name + "].cluster";
  const std::string server = OptionalString(where, cluster, "server", cluster_path);
  if (server.empty()) throw InputError(where, cluster_path + ".server", "missing or empty", "e.g. https://10.0.0.1:6443");
  c.server = CheckServer(where, cluster_path + ".server", server);
  c.ca_file = Resolve(OptionalString(where, cluster, "certificate-authority", cluster_path), base_dir);
  c.ca_pem = DecodedData(where, cluster, "certificate-authority-data", cluster_path);
  if (!c.ca_file.empty() && !c.ca_pem.empty())
    throw InputError(where, cluster_path, "has both certificate-authority and certificate-authority-data",
                     "keep one");
  if (const YAML::Node v = cluster["insecure-skip-tls-verify"]; v && !v.IsNull())
    c.insecure = YamlBool(where, v, cluster_path + ".insecure-skip-tls-verify");
  if (c.insecure && (!c.ca_file.empty() || !c.ca_pem.empty()))
    throw InputError(where, cluster_path, "insecure-skip-tls-verify and a certificate authority exclude each other",
                     "drop one");

  c.identity = "user '" + user_name + "' of kubeconfig " + where;
  if (user_name.empty()) {
    c.identity = "anonymous (kubeconfig " + where + " context '" + context_name + "' names no user)";
    return c;
  }
  const YAML::Node user = FindNamed(where, root, "users", "user", user_name, "context '" + context_name + "'");
  const std::string user_path = "users[" + user_name + "].user";
  const char* supported =
      "accel supports token, tokenFile, client-certificate(-data) with client-key(-data); "
      "put a token in the kubeconfig or use a service account";
  for (const char* plugin : {"exec", "auth-provider"}) {
    if (const YAML::Node v = user[plugin]; v && !v.IsNull())
      throw InputError(where, user_path + "." + plugin, "credential plugins are not supported", supported);
  }
  for (const char* basic : {"username", "password"}) {
    if (const YAML::Node v = user[basic]; v && !v.IsNull())
      throw InputError(where, user_path + "." + basic, "basic auth is not supported", supported);
  }
  c.token = OptionalString(where, user, "token", user_path);
  c.token_file = Resolve(OptionalString(where, user, "tokenFile", user_path), base_dir);
  c.client_cert_file = Resolve(OptionalString(where, user, "client-certificate", user_path), base_dir);
  c.client_key_file = Resolve(OptionalString(where, user, "client-key", user_path), base_dir);
  c.client_cert_pem = DecodedData(where, user, "client-certificate-data", user_path);
  c.client_key_pem = DecodedData(where, user, "client-key-data", user_path);
  if (!c.client_cert_file.empty() && !c.client_cert_pem.empty())
    throw InputError(where, user_path, "has both client-certificate and client-certificate-data", "keep one");
  if (!c.client_key_file.empty() && !c.client_key_pem.empty())
    throw InputError(where, user_path, "has both client-key and client-key-data", "keep one");
  const bool cert = !c.client_cert_file.empty() || !c.client_cert_pem.empty();
  const bool key = !c.client_key_file.empty() || !c.client_key_pem.empty();
  if (cert != key)
    throw InputError(where, user_path + (cert ? ".client-key" : ".client-certificate"),
                     "missing: a client certificate needs its key", "set client-key(-data) with client-certificate(-data)");
  if (cert && c.server.rfind("http://", 0) == 0)
    throw InputError(where, cluster_path + ".server", "a client certificate needs an https:// server");
  return c;
}

std::string ReadServiceAccountFile(const std::string& path, const std::string& what) {
  std::string why;
  std::optional<std::string> text = ReadSmallFile(path, &why);
  if (!text)
    throw InputError(path, "", what + " cannot be read: " + why,
                     "is accel running in a pod with a service account? Otherwise pass --kubeconfig FILE");
  return *text;
}

}  // namespace

KubeConfig InClusterConfig(const std::string& root) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  const char* hint = "set inside a pod by the kubelet; outside a cluster pass --kubeconfig FILE";
  if (host == nullptr || *host == '\0') throw InputError("in-cluster config", "KUBERNETES_SERVICE_HOST", "not set", hint);
  if (port == nullptr || *port == '\0') throw InputError("in-cluster config", "KUBERNETES_SERVICE_PORT", "not set", hint);
  const std::string port_text = port;
  if (port_text.size() > 5 || port_text.find_first_not_of("0123456789") != std::string::npos)
    throw InputError("in-cluster config", "KUBERNETES_SERVICE_PORT", "'" + port_text + "' is not a port number");
  std::string host_text = host;
  if (host_text.find(':') != std::string::npos && host_text[0] != '[') host_text = "[" + host_text + "]";
  KubeConfig c;
  c.source = "in-cluster config";
  c.server = "https://" + host_text + ":" + port_text;
  const std::string dir = root + kServiceAccountDir;
  c.token_file = dir + "/token";
  const std::string token = Trim(ReadServiceAccountFile(c.token_file, "the service account token"));
  if (token.empty()) throw InputError(c.token_file, "", "the service account token is empty");
  std::error_code ec;
  if (std::filesystem::exists(dir + "/ca.crt", ec)) c.ca_file = dir + "/ca.crt";
  if (std::ifstream ns(dir + "/namespace"); ns) {
    std::string text((std::istreambuf_iterator<char>(ns)), std::istreambuf_iterator<char>());
    if (!Trim(text).empty()) c.default_namespace = Trim(text);
  }
  c.identity = TokenIdentity(token, c.token_file);
  return c;
}

KubeConfig ParseKubeconfig(const std::string& text, const std::string& where, const std::string& base_dir,
                           const std::string& context) {
  try {
    return ParseYaml(text, where, base_dir, context);
  } catch (const YAML::Exception& e) {
    // A shape yaml-cpp itself refuses while walking (it should not, the walk checks kinds).
    throw InputError(where, "", std::string("not a valid kubeconfig: ") + e.what());
  }
}

KubeConfig LoadKubeconfig(const std::string& path, const std::string& context) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", std::string("cannot read the kubeconfig: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return ParseKubeconfig(text.str(), path, dir.empty() ? "." : dir, context);
}

}  // namespace accel::kubeapi
