#include "support/fake_apiserver.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cctype>
#include <deque>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace accel::test_support {

namespace {

using nlohmann::json;

// What a path addresses. Items are stored under their canonical path (prefix/[namespaces/ns/]
// resource/name).
struct Address {
  bool ok = false;
  std::string prefix;       ///< "/api/v1" or "/apis/group/version"
  std::string group;        ///< "" for the core group
  std::string ns;
  std::string resource;     ///< plural
  std::string name;         ///< "" for a collection
  std::string subresource;  ///< "status" or ""

  std::string Qualified() const { return group.empty() ? resource : resource + "." + group; }
  std::string ItemKey() const {
    return prefix + (ns.empty() ? "" : "/namespaces/" + ns) + "/" + resource + "/" + name;
  }
};

Address Parse(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  for (std::string part; std::getline(in, part, '/');) {
    if (!part.empty()) parts.push_back(part);
  }
  Address a;
  size_t i;
  if (parts.size() >= 2 && parts[0] == "api") {
    a.prefix = "/api/" + parts[1];
    i = 2;
  } else if (parts.size() >= 3 && parts[0] == "apis") {
    a.group = parts[1];
    a.prefix = "/apis/" + parts[1] + "/" + parts[2];
    i = 3;
  } else {
    return a;
  }
  if (parts.size() >= i + 3 && parts[i] == "namespaces") {
    a.ns = parts[i + 1];
    i += 2;
  }
  if (i >= parts.size() || parts.size() > i + 3) return a;
  a.resource = parts[i];
  if (i + 1 < parts.size()) a.name = parts[i + 1];
  if (i + 2 < parts.size()) a.subresource = parts[i + 2];
  a.ok = true;
  return a;
}

std::string Verb(const std::string& method, const Address& a) {
  if (method == "GET") return a.name.empty() ? "list" : "get";
  if (method == "POST") return "create";
  if (method == "PUT") return "update";
  if (method == "PATCH") return "patch";
  if (method == "DELETE") return a.name.empty() ? "deletecollection" : "delete";
  return method;
}

json Status(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"},   {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Failure"},
          {"message", message}, {"reason", reason},   {"code", code}};
}

// The field at a dotted path as selector text ("" when absent).
std::string FieldText(const json& object, const std::string& dotted) {
  const json* at = &object;
  std::stringstream in(dotted);
  for (std::string key; std::getline(in, key, '.');) {
    if (!at->is_object() || !at->contains(key)) return "";
    at = &(*at)[key];
  }
  if (at->is_string()) return at->get<std::string>();
  if (at->is_null()) return "";
  return at->dump();
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');) {
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

// One requirement "k=v", "k==v", "k!=v", "k", "!k" against a value getter.
template <typename Lookup>
bool Matches(const std::string& selector, Lookup lookup, bool existence_ok) {
  for (const std::string& req : SplitComma(selector)) {
    if (const size_t ne = req.find("!="); ne != std::string::npos) {
      const auto v = lookup(req.substr(0, ne));
      if (v && *v == req.substr(ne + 2)) return false;
    } else if (const size_t eq = req.find('='); eq != std::string::npos) {
      const size_t value_at = req.compare(eq, 2, "==") == 0 ? eq + 2 : eq + 1;
      const auto v = lookup(req.substr(0, eq));
      if (!v || *v != req.substr(value_at)) return false;
    } else if (existence_ok && req[0] == '!') {
      if (lookup(req.substr(1))) return false;
    } else if (existence_ok) {
      if (!lookup(req)) return false;
    } else {
      return false;
    }
  }
  return true;
}

std::string Now() {
  return "2026-01-01T00:00:00Z";  // fixed: tests must not depend on the clock
}

// Everything but metadata and status: what a generation bump tracks.
json SpecPart(json o) {
  if (o.is_object()) {
    o.erase("metadata");
    o.erase("status");
  }
  return o;
}

}  // namespace

struct FakeApiServer::Impl {
  httplib::Server http;
  std::thread thread;
  int port = 0;

  mutable std::mutex mu;
  std::map<std::string, json> objects;  // by canonical item path
  std::vector<Request> log;
  std::deque<Failure> failures;
  std::string token;
  struct Forbidden {
    std::string verb, resource, user;
  };
  std::vector<Forbidden> forbidden;
  int page_size = 0;
  long long resource_version = 100;
  long long uid_counter = 0;

  std::string NextVersion() { return std::to_string(++resource_version); }
  std::string NextUid() {
    char buf[64];
    snprintf(buf, sizeof buf, "00000000-0000-4000-8000-%012lld", ++uid_counter);
    return buf;
  }

  // Stores `object` at `a` as a fresh object (create semantics).
  json StoreNew(const Address& a, json object) {
    json& meta = object["metadata"];
    if (!meta.is_object()) meta = json::object();
    meta["name"] = a.name;
    if (!a.ns.empty()) meta["namespace"] = a.ns;
    if (!meta.contains("uid")) meta["uid"] = NextUid();
    if (!meta.contains("creationTimestamp")) meta["creationTimestamp"] = Now();
    if (!meta.contains("generation")) meta["generation"] = 1;
    meta["resourceVersion"] = NextVersion();
    objects[a.ItemKey()] = object;
    return object;
  }

  std::vector<json> Collection(const Address& a, const std::string& labels, const std::string& fields) const {
    std::vector<json> out;
    for (const auto& entry : objects) {
      const json& object = entry.second;  // a named reference: clang 14 cannot capture a binding
      const Address item = Parse(entry.first);
      if (item.prefix != a.prefix || item.resource != a.resource) continue;
      if (!a.ns.empty() && item.ns != a.ns) continue;
      const json empty = json::object();
      const json& meta = object.contains("metadata") ? object["metadata"] : empty;
      const json labels_of = meta.contains("labels") && meta["labels"].is_object() ? meta["labels"] : empty;
      const auto label = [&labels_of](const std::string& k) -> std::optional<std::string> {
        if (!labels_of.contains(k) || !labels_of[k].is_string()) return std::nullopt;
        return labels_of[k].get<std::string>();
      };
      const auto field = [&object](const std::string& k) -> std::optional<std::string> { return FieldText(object, k); };
      if (!Matches(labels, label, true) || !Matches(fields, field, false)) continue;
      out.push_back(object);
    }
    std::sort(out.begin(), out.end(), [](const json& x, const json& y) {
      const auto key = [](const json& o) {
        return o["metadata"].value("namespace", "") + "/" + o["metadata"].value("name", "");
      };
      return key(x) < key(y);
    });
    return out;
  }

  // POST pods/NAME/binding, as the API server's BindingREST answers it: the pod's spec.nodeName set
  // to target.name, once; a Binding whose metadata.uid is not the pod's (a precondition) or a pod
  // already assigned is a 409 Conflict.
  std::pair<int, json> Bind(const httplib::Request& req, const Address& a) {
    json binding = json::parse(req.body, nullptr, false);
    if (!binding.is_object()) return {400, Status(400, "BadRequest", "the body is not a JSON object")};
    if (binding.value("kind", "") != "Binding" || binding.value("apiVersion", "") != "v1")
      return {400, Status(400, "BadRequest", "the body is not a v1 Binding")};
    const json meta = binding.contains("metadata") && binding["metadata"].is_object() ? binding["metadata"] : json::object();
    if (meta.value("name", "") != a.name)
      return {400, Status(400, "BadRequest", "name in URL does not match name in Binding object")};
    const std::string node = binding.contains("target") && binding["target"].is_object()
                                 ? binding["target"].value("name", "")
                                 : "";
    if (node.empty()) return {422, Status(422, "Invalid", "Binding.target.name: Required value")};
    Address pod = a;
    pod.subresource.clear();
    auto it = objects.find(pod.ItemKey());
    if (it == objects.end()) return {404, Status(404, "NotFound", "pods \"" + a.name + "\" not found")};
    json& stored = it->second;
    const std::string uid = stored["metadata"].value("uid", "");
    if (!meta.value("uid", "").empty() && meta.value("uid", "") != uid)
      return {409, Status(409, "Conflict", "Operation cannot be fulfilled on pods/binding \"" + a.name +
                                               "\": Precondition failed: UID in precondition: " + meta.value("uid", "") +
                                               ", UID in object meta: " + uid)};
    const std::string bound = stored.contains("spec") && stored["spec"].is_object() ? stored["spec"].value("nodeName", "") : "";
    if (!bound.empty())
      return {409, Status(409, "Conflict", "Operation cannot be fulfilled on pods/binding \"" + a.name + "\": pod " +
                                               a.name + " is already assigned to node \"" + bound + "\"")};
    stored["spec"]["nodeName"] = node;
    stored["metadata"]["resourceVersion"] = NextVersion();
    json ok = {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Success"}, {"code", 201}};
    return {201, ok};
  }

  // Answers one request; the caller holds mu. Returns status and body.
  std::pair<int, json> Handle(const httplib::Request& req, const Address& a) {
    const std::string what = a.Qualified() + " \"" + a.name + "\"";
    if (req.method == "GET" && a.name.empty()) {
      std::vector<json> items = Collection(a, req.get_param_value("labelSelector"), req.get_param_value("fieldSelector"));
      size_t start = 0;
      if (req.has_param("continue")) start = std::stoul(req.get_param_value("continue"));
      long long limit = req.has_param("limit") ? std::stoll(req.get_param_value("limit")) : 0;
      if (page_size > 0 && (limit <= 0 || limit > page_size)) limit = page_size;
      json list = {{"kind", "List"}, {"apiVersion", a.prefix.substr(a.prefix.find('/', 1) + 1)},
                   {"metadata", {{"resourceVersion", std::to_string(resource_version)}}}, {"items", json::array()}};
      size_t end = items.size();
      if (limit > 0 && start + static_cast<size_t>(limit) < items.size()) {
        end = start + static_cast<size_t>(limit);
        list["metadata"]["continue"] = std::to_string(end);
      }
      for (size_t i = start; i < end && i < items.size(); ++i) {
        items[i].erase("apiVersion");  // the API server omits them in list items
        items[i].erase("kind");
        list["items"].push_back(items[i]);
      }
      return {200, list};
    }
    if (req.method == "POST" && a.resource == "pods" && a.subresource == "binding") return Bind(req, a);
    if (req.method == "POST") {
      if (!a.name.empty()) return {405, Status(405, "MethodNotAllowed", "POST goes to a collection")};
      json object = json::parse(req.body, nullptr, false);
      if (!object.is_object()) return {400, Status(400, "BadRequest", "the body is not a JSON object")};
      Address item = a;
      const json meta = object.contains("metadata") && object["metadata"].is_object() ? object["metadata"] : json::object();
      item.name = meta.value("name", "");
      if (item.name.empty() && meta.contains("generateName") && meta["generateName"].is_string())
        item.name = meta["generateName"].get<std::string>() + std::to_string(uid_counter + 1);
      if (item.name.empty())
        return {422, Status(422, "Invalid", a.Qualified() + " is invalid: metadata.name: Required value")};
      if (objects.count(item.ItemKey()))
        return {409, Status(409, "AlreadyExists", a.Qualified() + " \"" + item.name + "\" already exists")};
      object["metadata"].erase("resourceVersion");
      object["metadata"].erase("uid");
      object["metadata"].erase("generation");
      return {201, StoreNew(item, std::move(object))};
    }
    if (a.name.empty()) return {405, Status(405, "MethodNotAllowed", req.method + " needs an item path")};
    auto it = objects.find(a.ItemKey());
    if (it == objects.end()) return {404, Status(404, "NotFound", what + " not found")};
    json& stored = it->second;
    if (req.method == "GET") return {200, stored};
    if (req.method == "DELETE") {
      json gone = stored;
      objects.erase(it);
      return {200, gone};
    }
    json object = json::parse(req.body, nullptr, false);
    if (!object.is_object()) return {400, Status(400, "BadRequest", "the body is not a JSON object")};
    json updated;
    if (req.method == "PATCH") {
      const std::string type = req.get_header_value("Content-Type");
      if (type.rfind("application/merge-patch+json", 0) != 0)
        return {415, Status(415, "UnsupportedMediaType", "the fake API server only applies merge patches")};
      updated = stored;
      if (a.subresource == "status") {
        if (object.contains("status")) updated["status"].merge_patch(object["status"]);
      } else {
        updated.merge_patch(object);
      }
    } else if (req.method == "PUT") {
      const json meta = object.contains("metadata") && object["metadata"].is_object() ? object["metadata"] : json::object();
      if (meta.value("name", a.name) != a.name)
        return {400, Status(400, "BadRequest", "the name of the object (" + meta.value("name", "") +
                                                   ") does not match the name on the URL (" + a.name + ")")};
      const std::string rv = meta.contains("resourceVersion") && meta["resourceVersion"].is_string()
                                 ? meta["resourceVersion"].get<std::string>()
                                 : "";
      if (rv.empty())
        return {422, Status(422, "Invalid", what + " is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update")};
      if (rv != stored["metadata"]["resourceVersion"].get<std::string>())
        return {409, Status(409, "Conflict", "Operation cannot be fulfilled on " + what +
                                                 ": the object has been modified; please apply your changes to the latest version and try again")};
      if (a.subresource == "status") {
        updated = stored;
        updated["status"] = object.contains("status") ? object["status"] : json::object();
      } else {
        updated = object;
        for (const char* kept : {"uid", "creationTimestamp", "generation", "name", "namespace"}) {
          if (stored["metadata"].contains(kept)) updated["metadata"][kept] = stored["metadata"][kept];
        }
      }
    } else {
      return {405, Status(405, "MethodNotAllowed", req.method + " is not served")};
    }
    if (SpecPart(updated) != SpecPart(stored))
      updated["metadata"]["generation"] = stored["metadata"].value("generation", 1) + 1;
    updated["metadata"]["resourceVersion"] = NextVersion();
    stored = updated;
    return {200, stored};
  }

  void Serve(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    Request r;
    r.method = req.method;
    r.path = req.path;
    for (const auto& [k, v] : req.params) r.query.emplace(k, v);
    for (const auto& [k, v] : req.headers) {
      std::string name = k;
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      r.headers[name] = v;
    }
    r.body = req.body;
    const Address a = Parse(req.path);
    int status = 0;
    json body;
    std::string garbage;
    for (auto it = failures.begin(); it != failures.end(); ++it) {
      if ((!it->method.empty() && it->method != req.method) || (!it->path.empty() && it->path != req.path)) continue;
      status = it->status;
      if (!it->retry_after.empty()) res.set_header("Retry-After", it->retry_after);
      if (it->garbage) {
        garbage = "<html><body>502 Bad Gateway</body></html>";
      } else {
        static const std::map<int, std::string> reasons = {
            {400, "BadRequest"},      {401, "Unauthorized"}, {403, "Forbidden"},          {404, "NotFound"},
            {409, "Conflict"},        {422, "Invalid"},      {429, "TooManyRequests"},   {500, "InternalError"},
            {503, "ServiceUnavailable"}, {504, "Timeout"}};
        const auto reason = reasons.find(it->status);
        body = Status(it->status, reason == reasons.end() ? "" : reason->second, it->message);
      }
      if (--it->count <= 0) failures.erase(it);
      break;
    }
    if (status == 0 && !token.empty() && req.get_header_value("Authorization") != "Bearer " + token) {
      status = 401;
      body = Status(401, "Unauthorized", "Unauthorized");
    }
    if (status == 0 && !a.ok) {
      status = 404;
      body = Status(404, "NotFound", "the server could not find the requested resource");
    }
    if (status == 0) {
      const std::string verb = Verb(req.method, a);
      for (const Forbidden& f : forbidden) {
        if (f.verb != verb || f.resource != a.Qualified()) continue;
        status = 403;
        const std::string scope = a.ns.empty() ? "at the cluster scope" : "in the namespace \"" + a.ns + "\"";
        body = Status(403, "Forbidden",
                      a.Qualified() + (a.name.empty() ? "" : " \"" + a.name + "\"") + " is forbidden: User \"" + f.user +
                          "\" cannot " + verb + " resource \"" + a.resource + "\" in API group \"" + a.group + "\" " + scope);
        break;
      }
    }
    if (status == 0) std::tie(status, body) = Handle(req, a);
    res.status = status;
    r.status = status;
    log.push_back(std::move(r));
    if (!garbage.empty()) {
      res.set_content(garbage, "text/html");
    } else if (req.method == "GET" && a.name.empty() && status == 200) {
      // Lists go chunked, as the real server sends long answers.
      auto text = std::make_shared<std::string>(body.dump());
      res.set_chunked_content_provider("application/json", [text](size_t offset, httplib::DataSink& sink) {
        if (offset < text->size()) {
          const size_t n = std::min<size_t>(1000, text->size() - offset);
          sink.write(text->data() + offset, n);
        } else {
          sink.done();
        }
        return true;
      });
    } else {
      res.set_content(body.dump(), "application/json");
    }
  }
};

FakeApiServer::FakeApiServer() : impl_(std::make_unique<Impl>()) {
  Impl* impl = impl_.get();
  const auto handler = [impl](const httplib::Request& req, httplib::Response& res) { impl->Serve(req, res); };
  impl->http.Get(".*", handler);
  impl->http.Post(".*", handler);
  impl->http.Put(".*", handler);
  impl->http.Patch(".*", handler);
  impl->http.Delete(".*", handler);
  impl->port = impl->http.bind_to_any_port("127.0.0.1");
  if (impl->port <= 0) throw std::runtime_error("FakeApiServer: cannot bind 127.0.0.1");
  impl->thread = std::thread([impl] { impl->http.listen_after_bind(); });
  // Stop() before the accept loop runs would be lost; wait for it (the socket already queues).
  while (!impl->http.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

FakeApiServer::~FakeApiServer() {
  impl_->http.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string FakeApiServer::url() const { return "http://127.0.0.1:" + std::to_string(impl_->port); }
int FakeApiServer::port() const { return impl_->port; }

kubeapi::KubeConfig FakeApiServer::Config(const std::string& token) const {
  kubeapi::KubeConfig c;
  c.server = url();
  c.source = "the fake API server";
  c.identity = "test client";
  c.token = token;
  return c;
}

nlohmann::json FakeApiServer::Put(const std::string& path, nlohmann::json object) {
  const Address a = Parse(path);
  if (!a.ok || a.name.empty() || !a.subresource.empty())
    throw std::invalid_argument("FakeApiServer::Put: not an item path: " + path);
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (!object.is_object()) object = nlohmann::json::object();
  if (!object.contains("metadata") || !object["metadata"].is_object()) object["metadata"] = nlohmann::json::object();
  object["metadata"].erase("resourceVersion");
  // Replacing a seeded object keeps its identity unless the test gives another.
  if (const auto it = impl_->objects.find(a.ItemKey()); it != impl_->objects.end() && !object["metadata"].contains("uid"))
    object["metadata"]["uid"] = it->second["metadata"]["uid"];
  return impl_->StoreNew(a, std::move(object));
}

std::optional<nlohmann::json> FakeApiServer::Get(const std::string& path) const {
  const Address a = Parse(path);
  std::lock_guard<std::mutex> lock(impl_->mu);
  const auto it = impl_->objects.find(a.ItemKey());
  if (!a.ok || a.name.empty() || it == impl_->objects.end()) return std::nullopt;
  return it->second;
}

bool FakeApiServer::Remove(const std::string& path) {
  const Address a = Parse(path);
  std::lock_guard<std::mutex> lock(impl_->mu);
  return a.ok && !a.name.empty() && impl_->objects.erase(a.ItemKey()) > 0;
}

std::vector<nlohmann::json> FakeApiServer::List(const std::string& collection_path) const {
  const Address a = Parse(collection_path);
  if (!a.ok || !a.name.empty()) throw std::invalid_argument("FakeApiServer::List: not a collection path: " + collection_path);
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Collection(a, "", "");
}

std::vector<FakeApiServer::Request> FakeApiServer::requests() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->log;
}

std::vector<FakeApiServer::Request> FakeApiServer::requests(const std::string& method, const std::string& path_prefix) const {
  std::vector<Request> out;
  for (Request& r : requests()) {
    if ((method.empty() || r.method == method) && r.path.rfind(path_prefix, 0) == 0) out.push_back(std::move(r));
  }
  return out;
}

std::vector<FakeApiServer::Request> FakeApiServer::writes() const {
  std::vector<Request> out;
  for (Request& r : requests()) {
    if (r.method != "GET") out.push_back(std::move(r));
  }
  return out;
}

void FakeApiServer::ClearRequests() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->log.clear();
}

void FakeApiServer::FailNext(Failure failure) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (failure.count > 0) impl_->failures.push_back(std::move(failure));
}

void FakeApiServer::FailNext(const std::string& path, int status, int count) {
  Failure f;
  f.path = path;
  f.status = status;
  f.count = count;
  FailNext(std::move(f));
}

void FakeApiServer::RequireToken(const std::string& token) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->token = token;
}

void FakeApiServer::Forbid(const std::string& verb, const std::string& resource, const std::string& user) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->forbidden.push_back({verb, resource, user});
}

void FakeApiServer::SetPageSize(int n) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->page_size = n;
}

}  // namespace accel::test_support
