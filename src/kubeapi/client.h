// KubeClient: a small Kubernetes API client for what the node agent does with the API server
// (the DRA driver publishes ResourceSlices, reads ResourceClaims and its Node): GET, LIST with
// label/field selectors, CREATE, UPDATE (PUT with resourceVersion, conflicts retried by
// UpdateWithRetry), merge PATCH and DELETE, on JSON objects addressed by API path
// ("/apis/resource.k8s.io/v1/resourceslices/NAME", "/api/v1/nodes/NAME",
// "/apis/resource.k8s.io/v1/namespaces/NS/resourceclaims/NAME"; ApiPath builds them).
//
// Transport is http::HttpCall: one connection per request, TLS per KubeConfig, a bearer
// token re-read from its file at most every options.token_reread and after a 401 (bound service
// account tokens rotate). Every request is retried with exponential backoff on 429 (honouring
// Retry-After), 5xx (except 501) and connection errors, a bounded number of times and total wait.
// A retried create whose first try reached the server may then answer AlreadyExists.
//
// Idioms: Get answers std::nullopt for 404; Delete treats 404 as done. Every other failure throws:
//   - ApiError (a SystemError) for an error status: the message names the verb, the path, the
//     HTTP status and the API's Status.message; 401/403 name the identity that was refused, the
//     verb and resource, and the RBAC fix; IsConflict()/IsAlreadyExists()/... tell them apart;
//   - SystemError when the server cannot be reached (after the retries) or answers garbage
//     (not JSON, or not the expected kind of JSON), naming the path;
//   - InputError when the KubeConfig's files (CA, client certificate, token file) cannot be used.
//
// Thread-safe: any number of threads may call one KubeClient (the DRA driver calls it from gRPC
// threads and its publisher thread); the only shared state is the cached token, under a mutex.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kubeapi/api_error.h"
#include "kubeapi/kube_config.h"

namespace accel::kubeapi {

struct KubeClientOptions {
  /// Tries per request, the first included (>= 1).
  int attempts = 5;
  /// Wait before the first retry; doubled each retry up to max_backoff. A Retry-After header
  /// (seconds) replaces the computed wait when longer.
  std::chrono::milliseconds initial_backoff{250};
  std::chrono::milliseconds max_backoff{8000};
  /// A request gives up retrying when the next wait would bring its waits past this.
  std::chrono::milliseconds max_total_wait{30000};
  /// Connect, send and receive timeout of each try.
  std::chrono::milliseconds timeout{30000};
  /// How long a token read from KubeConfig::token_file is used before it is read again.
  std::chrono::milliseconds token_reread{60000};
  /// Tries of UpdateWithRetry's read-modify-write on a 409 Conflict.
  int conflict_attempts = 5;
  /// Where the RBAC fix is, named in 403 errors.
  std::string rbac_manifest = "deploy/kubernetes/accel-dra.yaml";
  /// How a wait happens; empty = std::this_thread::sleep_for. Tests record waits instead.
  std::function<void(std::chrono::milliseconds)> sleep;
};

/// "/api/v1/..." for the core group ("v1"), "/apis/GROUP/VERSION/..." otherwise; namespaced when
/// `ns` is not empty; the collection when `name` is empty.
/// ApiPath("resource.k8s.io/v1", "resourceslices") == "/apis/resource.k8s.io/v1/resourceslices",
/// ApiPath("v1", "nodes", "", "n1") == "/api/v1/nodes/n1".
std::string ApiPath(const std::string& api_version, const std::string& resource, const std::string& ns = "",
                    const std::string& name = "");

class KubeClient {
 public:
  /// Nothing is contacted until the first request. Throws InputError when config.server is not
  /// an http(s) URL.
  explicit KubeClient(KubeConfig config, KubeClientOptions options = {});

  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  const KubeConfig& config() const { return config_; }

  /// The object at `path`, or std::nullopt when the server answers 404.
  std::optional<nlohmann::json> Get(const std::string& path);

  /// The items of the collection at `path` (every page: follows metadata.continue), filtered by
  /// `label_selector` ("a=b,c!=d,e") and `field_selector` ("spec.nodeName=n,spec.driver=d"),
  /// each "" for none. Items of a list carry no apiVersion/kind (the API server omits them).
  std::vector<nlohmann::json> List(const std::string& path, const std::string& label_selector = "",
                                   const std::string& field_selector = "");

  /// POSTs `object` to the collection `collection_path`; returns the object as stored.
  nlohmann::json Create(const std::string& collection_path, const nlohmann::json& object);

  /// PUTs `object` (with metadata.resourceVersion, so a concurrent change is a 409 ApiError with
  /// IsConflict()) to its item `path`; returns the object as stored.
  nlohmann::json Update(const std::string& path, const nlohmann::json& object);

  /// Applies a JSON merge patch (application/merge-patch+json) at `path`; returns the result.
  nlohmann::json Patch(const std::string& path, const nlohmann::json& merge_patch);

  /// Deletes the object at `path`. Returns true when it was deleted, false when it was already
  /// gone (404): deleting twice is fine.
  bool Delete(const std::string& path);

  /// Read-modify-write with optimistic concurrency: GETs `path`, calls `mutate` on the object,
  /// PUTs it (with the resourceVersion it was read at) unless `mutate` returns false, and starts
  /// over on a 409 Conflict, up to options.conflict_attempts times. Returns the object as stored
  /// (as read when mutate returned false). Throws ApiError with IsNotFound() when the object does
  /// not exist, with IsConflict() when every try conflicted; `mutate`'s exceptions pass through.
  nlohmann::json UpdateWithRetry(const std::string& path, const std::function<bool(nlohmann::json&)>& mutate);

 private:
  struct Answer;
  Answer Send(const std::string& method, const std::string& path_and_query, const std::string& body,
              const std::string& content_type);
  nlohmann::json JsonOf(const Answer& answer, const std::string& method, const std::string& path) const;
  [[noreturn]] void ThrowStatus(const Answer& answer, const std::string& method, const std::string& path) const;
  std::string Token(bool force_reread);
  void Sleep(std::chrono::milliseconds wait) const;

  const KubeConfig config_;
  const KubeClientOptions options_;
  std::string base_url_;  ///< scheme://host:port of config_.server
  std::string prefix_;    ///< the path part of config_.server ("" or "/k8s/clusters/c-1")

  std::mutex token_mu_;
  std::string token_;  ///< the token last read from config_.token_file
  std::chrono::steady_clock::time_point token_read_at_{};
  bool token_read_ = false;
};

}  // namespace accel::kubeapi
