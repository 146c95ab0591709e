#include "kubeapi/client.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/json_text.h"
#include "common/strings.h"
#include "http/client.h"

namespace accel::kubeapi {

namespace {

// What a path addresses, for error messages: "create resourceslices.resource.k8s.io",
// "get nodes", "in namespace ns".
struct Target {
  std::string resource;  ///< "resourceslices.resource.k8s.io", "nodes", "resourceclaims.resource.k8s.io/status"
  std::string name;
  std::string ns;
};

Target Describe(const std::string& path_and_query) {
  const std::string path = path_and_query.substr(0, path_and_query.find('?'));
  std::vector<std::string> parts;
  std::stringstream in(path);
  for (std::string part; std::getline(in, part, '/');) {
    if (!part.empty()) parts.push_back(part);
  }
  Target t;
  size_t i;
  std::string group;
  if (parts.size() >= 2 && parts[0] == "api") {
    i = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    group = parts[1];
    i = 3;
  } else {
    t.resource = path;
    return t;
  }
  if (parts.size() >= i + 3 && parts[i] == "namespaces") {
    t.ns = parts[i + 1];
    i += 2;
  }
  if (i < parts.size()) t.resource = parts[i];
  if (i + 1 < parts.size()) t.name = parts[i + 1];
  if (!group.empty()) t.resource += "." + group;
  if (i + 2 < parts.size()) t.resource += "/" + parts[i + 2];
  return t;
}

std::string Verb(const std::string& method, const Target& t) {
  if (method == "GET") return t.name.empty() ? "list" : "get";
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return t.name.empty() ? "deletecollection" : "delete";
  return method;
}

std::string Excerpt(const std::string& body) {
  std::string s = body.substr(0, 80);
  for (char& c : s) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (body.size() > 80) s += "...";
  return s.empty() ? "(empty)" : "'" + s + "'";
}

}  // namespace

struct KubeClient::Answer {
  int status = 0;
  std::string content_type;
  std::string body;
  int tries = 0;  ///< how many times the request was sent
};

std::string ApiPath(const std::string& api_version, const std::string& resource, const std::string& ns,
                    const std::string& name) {
  std::string path = api_version.find('/') == std::string::npos ? "/api/" + api_version : "/apis/" + api_version;
  if (!ns.empty()) path += "/namespaces/" + PercentEncode(ns);
  path += "/" + resource;
  if (!name.empty()) path += "/" + PercentEncode(name);
  return path;
}

KubeClient::KubeClient(KubeConfig config, KubeClientOptions options)
    : config_(std::move(config)), options_(std::move(options)) {
  const std::string& s = config_.server;
  const size_t scheme = s.rfind("https://", 0) == 0 ? 8 : s.rfind("http://", 0) == 0 ? 7 : 0;
  if (scheme == 0)
    throw InputError(config_.source, "server", "'" + s + "' is not an https:// or http:// URL", "e.g. https://10.0.0.1:6443");
  const size_t slash = s.find('/', scheme);
  base_url_ = s.substr(0, slash);
  if (slash != std::string::npos) prefix_ = s.substr(slash);
  while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
}

void KubeClient::Sleep(std::chrono::milliseconds wait) const {
  if (options_.sleep) {
    options_.sleep(wait);
  } else if (wait.count() > 0) {
    std::this_thread::sleep_for(wait);
  }
}

std::string KubeClient::Token(bool force_reread) {
  if (config_.token_file.empty()) return config_.token;
  std::lock_guard<std::mutex> lock(token_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (token_read_ && !force_reread && now - token_read_at_ < options_.token_reread) return token_;
  std::ifstream in(config_.token_file, std::ios::binary);
  std::string text;
  if (in) {
    std::ostringstream buf;
    buf << in.rdbuf();
    text = buf.str();
    text.erase(0, std::min(text.size(), text.find_first_not_of(" \t\r\n")));
    text.erase(text.find_last_not_of(" \t\r\n") + 1);
  }
  if (text.empty()) {
    // A rotation replaces the file by a symlink swap; a read in between may miss it. Keep
    // using the last good token; with none, the configuration is wrong.
    if (token_read_) return token_;
    throw InputError(config_.token_file, "", in ? "the token file is empty" : std::string("cannot read the token file: ") + std::strerror(errno));
  }
  token_ = text;
  token_read_ = true;
  token_read_at_ = now;
  return token_;
}

KubeClient::Answer KubeClient::Send(const std::string& method, const std::string& path_and_query,
                                    const std::string& body, const std::string& content_type) {
  http::HttpCallOptions http;
  http.ca_file = config_.ca_file;
  http.ca_pem = config_.ca_pem;
  http.insecure = config_.insecure;
  http.timeout = options_.timeout;
  http.client_cert_file = config_.client_cert_file;
  http.client_key_file = config_.client_key_file;
  http.client_cert_pem = config_.client_cert_pem;
  http.client_key_pem = config_.client_key_pem;
  http.connect_hint = "is the Kubernetes API server " + config_.server + " (from " + config_.source + ") reachable?";
  http.tls_hint = "the API server's certificate must be signed by the certificate authority of " + config_.source;
  if (!content_type.empty()) http.headers.emplace_back("Content-Type", content_type);

  const int attempts = std::max(1, options_.attempts);
  std::chrono::milliseconds waited{0};
  std::chrono::milliseconds backoff = options_.initial_backoff;
  bool reread_after_401 = false;
  std::string last_failure;
  for (int attempt = 1;; ++attempt) {
    const std::string token = Token(false);
    http.headers.erase(std::remove_if(http.headers.begin(), http.headers.end(),
                                      [](const auto& h) { return h.first == "Authorization"; }),
                       http.headers.end());
    if (!token.empty()) http.headers.emplace_back("Authorization", "Bearer " + token);
    std::optional<http::HttpResponse> response;
    try {
      response = http::HttpCall(base_url_, method, prefix_ + path_and_query, body, http);
    } catch (const InputError&) {
      throw;
    } catch (const SystemError& e) {
      last_failure = e.what();
    }
    std::chrono::milliseconds wait = backoff;
    if (response) {
      if (response->status == 401 && !config_.token_file.empty() && !reread_after_401) {
        // The token may have rotated under us: read it again and retry once, at once.
        reread_after_401 = true;
        if (Token(true) != token) {
          --attempt;
          continue;
        }
      }
      const bool retryable = response->status == 429 || (response->status >= 500 && response->status != 501);
      if (!retryable) return Answer{response->status, response->content_type, std::move(response->body), attempt};
      const std::string retry_after = response->Header("Retry-After");
      if (!retry_after.empty() && retry_after.size() <= 6 &&
          retry_after.find_first_not_of("0123456789") == std::string::npos)
        wait = std::max(wait, std::chrono::milliseconds(std::stoll(retry_after) * 1000));
      if (attempt >= attempts || waited + wait > options_.max_total_wait)
        return Answer{response->status, response->content_type, std::move(response->body), attempt};
    } else if (attempt >= attempts || waited + wait > options_.max_total_wait) {
      throw SystemError("cannot " + method + " " + path_and_query + " on the Kubernetes API server", config_.server,
                        last_failure + " (" + std::to_string(attempt) + (attempt == 1 ? " try" : " tries") + ")");
    }
    Sleep(wait);
    waited += wait;
    backoff = std::min(options_.max_backoff, backoff * 2);
  }
}

void KubeClient::ThrowStatus(const Answer& a, const std::string& method, const std::string& path) const {
  std::string reason, message;
  nlohmann::json status;  // null unless the body is JSON: the error is then told from the HTTP status
  try {
    status = ParseJsonText(a.body, "answer");
  } catch (const InputError&) {
  }
  if (status.is_object() && status.value("kind", "") == "Status") {
    if (status.contains("reason") && status["reason"].is_string()) reason = status["reason"].get<std::string>();
    if (status.contains("message") && status["message"].is_string()) message = status["message"].get<std::string>();
  }
  const Target t = Describe(path);
  const std::string verb = Verb(method, t);
  const std::string scope = t.ns.empty() ? "" : " in namespace " + t.ns;
  std::string detail = "HTTP " + std::to_string(a.status) + (reason.empty() ? "" : " " + reason);
  if (!message.empty()) {
    detail += ": " + message;
  } else if (!status.is_object()) {
    detail += ": " + Excerpt(a.body);
  }
  if (a.tries > 1) detail += " (after " + std::to_string(a.tries) + " tries)";
  if (a.status == 401)
    throw ApiError(a.status, reason, message, "the Kubernetes API server " + config_.server + " did not accept the credentials of",
                   config_.identity, "refused " + verb + " " + t.resource + scope + " (" + method + " " + path + "): " + detail,
                   "the token or client certificate from " + config_.source + " is wrong or expired");
  if (a.status == 403)
    throw ApiError(a.status, reason, message, "the Kubernetes API server refused", config_.identity,
                   "forbidden to " + verb + " " + t.resource + scope + " (" + method + " " + path + "): " + detail,
                   "the service account needs " + verb + " on " + t.resource.substr(0, t.resource.find('/')) +
                       ": see " + options_.rbac_manifest);
  throw ApiError(a.status, reason, message, "the Kubernetes API server refused", method + " " + path, detail);
}

nlohmann::json KubeClient::JsonOf(const Answer& a, const std::string& method, const std::string& path) const {
  nlohmann::json j;
  std::string problem;  // why the body is not JSON (a syntax error, a key given twice)
  try {
    j = ParseJsonText(a.body, "body");
  } catch (const InputError& e) {
    problem = e.what();
  }
  if (!problem.empty() || !j.is_object())
    throw SystemError("the Kubernetes API server's answer to " + method + " " + path + " is not a JSON object",
                      config_.server,
                      "HTTP " + std::to_string(a.status) + (a.content_type.empty() ? "" : ", " + a.content_type) + ": " +
                          (problem.empty() ? Excerpt(a.body) : problem));
  return j;
}

std::optional<nlohmann::json> KubeClient::Get(const std::string& path) {
  const Answer a = Send("GET", path, "", "");
  if (a.status == 404) return std::nullopt;
  if (a.status != 200) ThrowStatus(a, "GET", path);
  return JsonOf(a, "GET", path);
}

std::vector<nlohmann::json> KubeClient::List(const std::string& path, const std::string& label_selector,
                                             const std::string& field_selector) {
  std::vector<nlohmann::json> items;
  std::string query;
  if (!label_selector.empty()) query += "&labelSelector=" + PercentEncode(label_selector);
  if (!field_selector.empty()) query += "&fieldSelector=" + PercentEncode(field_selector);
  query += "&limit=500";
  std::string next;
  for (int page = 0; page < 100000; ++page) {
    const std::string request = path + "?" + query.substr(1) + (next.empty() ? "" : "&continue=" + PercentEncode(next));
    const Answer a = Send("GET", request, "", "");
    if (a.status != 200) ThrowStatus(a, "GET", request);
    nlohmann::json list = JsonOf(a, "GET", request);
    if (!list.contains("items") || !(list["items"].is_array() || list["items"].is_null()))
      throw SystemError("the Kubernetes API server's answer to GET " + request + " is not a list", config_.server,
                        "no items array: " + Excerpt(a.body));
    if (list["items"].is_array()) {
      for (nlohmann::json& item : list["items"]) items.push_back(std::move(item));
    }
    next.clear();
    if (list.contains("metadata") && list["metadata"].is_object() && list["metadata"].contains("continue") &&
        list["metadata"]["continue"].is_string())
      next = list["metadata"]["continue"].get<std::string>();
    if (next.empty()) return items;
  }
  throw SystemError("the Kubernetes API server's answer to GET " + path + " never ends", config_.server,
                    "more than 100000 pages");
}

nlohmann::json KubeClient::Create(const std::string& collection_path, const nlohmann::json& object) {
  const Answer a = Send("POST", collection_path, object.dump(), "application/json");
  if (a.status != 200 && a.status != 201 && a.status != 202) ThrowStatus(a, "POST", collection_path);
  return JsonOf(a, "POST", collection_path);
}

nlohmann::json KubeClient::Update(const std::string& path, const nlohmann::json& object) {
  const Answer a = Send("PUT", path, object.dump(), "application/json");
  if (a.status != 200 && a.status != 201) ThrowStatus(a, "PUT", path);
  return JsonOf(a, "PUT", path);
}

nlohmann::json KubeClient::Patch(const std::string& path, const nlohmann::json& merge_patch) {
  const Answer a = Send("PATCH", path, merge_patch.dump(), "application/merge-patch+json");
  if (a.status != 200) ThrowStatus(a, "PATCH", path);
  return JsonOf(a, "PATCH", path);
}

bool KubeClient::Delete(const std::string& path) {
  const Answer a = Send("DELETE", path, "", "");
  if (a.status == 404) return false;
  if (a.status != 200 && a.status != 202) ThrowStatus(a, "DELETE", path);
  return true;
}

nlohmann::json KubeClient::UpdateWithRetry(const std::string& path, const std::function<bool(nlohmann::json&)>& mutate) {
  const int attempts = std::max(1, options_.conflict_attempts);
  for (int attempt = 1;; ++attempt) {
    std::optional<nlohmann::json> current = Get(path);
    if (!current)
      throw ApiError(404, "NotFound", "", "the Kubernetes API server has no", path, "cannot update what does not exist");
    if (!mutate(*current)) return *current;
    try {
      return Update(path, *current);
    } catch (const ApiError& e) {
      if (!e.IsConflict() || attempt >= attempts) throw;
    }
  }
}

}  // namespace accel::kubeapi
