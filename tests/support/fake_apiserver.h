// FakeApiServer: an in-test Kubernetes API server (plain HTTP on 127.0.0.1, an ephemeral port)
// that keeps objects in memory by API path, records every request, and fails on demand. What
// kubeapi::KubeClient, the DRA driver's slice publisher and claim reader are tested against.
//
// Paths are the API's: "/api/v1/nodes/n1", "/apis/resource.k8s.io/v1/resourceslices/s",
// "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c". A path with a name is an item (GET,
// PUT, PATCH as a JSON merge patch, DELETE; ".../status" updates only the status); one without is
// a collection (GET lists, POST creates). Listing a namespaced resource without a namespace lists
// every namespace. Like the real server it:
//   - sets metadata.uid, creationTimestamp, generation (1, +1 when anything outside metadata and
//     status changes) and resourceVersion (one counter for the whole server, as a string);
//   - answers 409 AlreadyExists for a create of an existing name, 409 Conflict for a PUT whose
//     metadata.resourceVersion is not the stored one, 422 Invalid for a PUT without one, 404
//     NotFound for a missing item, 400 BadRequest for a body that is not a JSON object or whose
//     name differs from the path's, all with a Status body (kind, status, message, reason, code);
//   - filters lists by labelSelector (k=v, k==v, k!=v, k, !k; comma = and) and fieldSelector
//     (dotted paths: spec.nodeName=x,spec.driver=y, = == !=; any field, not only the indexed ones),
//     honours limit/continue (see SetPageSize) and sends lists chunked (Transfer-Encoding), as the
//     real one does for long answers.
// Pods have the binding subresource (POST .../pods/NAME/binding with a v1 Binding sets
// spec.nodeName once; a second binding, or one whose metadata.uid is not the pod's, is a 409
// Conflict), as kube-scheduler and scheduler extenders use it.
// It has no watch, no admission, no defaulting, no server-side apply, no validation of objects.
//
// Thread-safe: tests may seed, inspect and inject failures while clients call it from any thread.
// The namespace is test_support (see fake_kubelet.h).
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kubeapi/kube_config.h"

namespace accel::test_support {

class FakeApiServer {
 public:
  /// One request as it arrived, and what it was answered.
  struct Request {
    std::string method;  ///< "GET", "POST", "PUT", "PATCH", "DELETE"
    std::string path;    ///< decoded path without the query
    std::multimap<std::string, std::string> query;  ///< decoded query parameters
    std::map<std::string, std::string> headers;     ///< header names lower-cased
    std::string body;
    int status = 0;  ///< the status it was answered with
  };

  /// An injected failure: the next `count` requests that match answer `status`.
  struct Failure {
    std::string method;     ///< "" = any method
    std::string path;       ///< exact path without query; "" = any path
    int status = 500;
    int count = 1;
    bool garbage = false;   ///< answer an HTML page instead of a Status object
    std::string retry_after;  ///< Retry-After header value; "" = none
    std::string message = "injected failure";  ///< the Status.message
  };

  /// Starts serving on 127.0.0.1 (an ephemeral port) on a background thread. Throws
  /// std::runtime_error when it cannot bind.
  FakeApiServer();
  /// Stops the server.
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  /// "http://127.0.0.1:PORT".
  std::string url() const;
  int port() const;

  /// A KubeConfig for this server: its url, the identity "test client", and `token` as the
  /// bearer token ("" = none).
  kubeapi::KubeConfig Config(const std::string& token = "") const;

  /// Seeds or replaces the object at item `path`, as if created there: sets metadata.name and
  /// namespace from the path, keeps the uid it has (or the replaced object's, or a fresh one),
  /// sets a new resourceVersion. Requests are not recorded for it. Returns the stored object.
  nlohmann::json Put(const std::string& path, nlohmann::json object);
  /// The stored object at item `path`, or std::nullopt.
  std::optional<nlohmann::json> Get(const std::string& path) const;
  /// Removes the object at item `path`; false when there was none.
  bool Remove(const std::string& path);
  /// Every stored object in the collection at `path` (across namespaces for a cluster-wide path
  /// of a namespaced resource), sorted by namespace and name.
  std::vector<nlohmann::json> List(const std::string& collection_path) const;

  /// Every request received so far, in arrival order.
  std::vector<Request> requests() const;
  /// Requests with this method ("" = any) whose path starts with `path_prefix`.
  std::vector<Request> requests(const std::string& method, const std::string& path_prefix) const;
  /// Requests that change something (POST, PUT, PATCH, DELETE), in order.
  std::vector<Request> writes() const;
  void ClearRequests();

  /// Queues a failure; failures are matched in the order queued.
  void FailNext(Failure failure);
  /// Shorthand: the next `count` requests to `path` (any method) answer `status` with a Status.
  void FailNext(const std::string& path, int status, int count = 1);
  /// Every request must carry "Authorization: Bearer <token>" (401 Unauthorized otherwise);
  /// "" = no authentication (the default).
  void RequireToken(const std::string& token);
  /// Answers 403 Forbidden to `verb` ("get", "list", "create", "update", "patch", "delete") on
  /// `resource` (plural, with its group when it has one: "resourceslices.resource.k8s.io",
  /// "nodes"), as RBAC would for user `user`.
  void Forbid(const std::string& verb, const std::string& resource,
              const std::string& user = "system:serviceaccount:accel-system:accel-dra");
  /// Lists answer at most `n` items per page, with metadata.continue for the rest; 0 = the
  /// client's limit only (the default).
  void SetPageSize(int n);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace accel::test_support
