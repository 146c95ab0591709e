// SlicePublisher: keeps this node's ResourceSlices (resource.k8s.io/v1, cluster-scoped) on the
// API server equal to the slices the driver wants published, the way the kubelet plugin helper
// (k8s.io/dynamic-resource-allocation/resourceslice) does:
//   - lists what is published for this driver and node (fieldSelector spec.driver, spec.nodeName);
//   - per pool, when the desired content differs from what is published (a slice added, changed
//     or gone), bumps the pool's generation to the highest published one + 1, so the scheduler
//     never mixes old and new slices of a pool; when nothing changed it writes nothing and keeps
//     the generation;
//   - creates or updates (PUT with resourceVersion) each desired slice, then deletes published
//     slices that are no longer desired (stale names, gone pools);
//   - owns every slice by the Node (ownerReferences apiVersion v1, kind Node, name, uid; the Node
//     is read once with GET /api/v1/nodes/NODE), so the garbage collector removes them with the
//     node. When the Node cannot be read the slices go out without an owner, it is logged, and the
//     next Publish tries again.
// Whether a published slice is current is decided by a fingerprint of the desired slice (spec
// without pool.generation, labels, annotations, owner) kept in the annotation
// accel.io/slice-hash, not by comparing the stored spec, which the API server may default.
//
// Thread-safe: Publish and DeleteAll may be called from any thread; calls run one at a time.
// Not copyable. The KubeClient is not owned and must outlive the publisher.
#pragma once

#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kubeapi/client.h"

namespace accel::dra {

/// What one Publish did, for logs and metrics.
struct PublishResult {
  int created = 0;    ///< slices POSTed
  int updated = 0;    ///< slices PUT (content, generation or owner changed)
  int deleted = 0;    ///< stale slices deleted
  int unchanged = 0;  ///< desired slices already published as they are
  /// The pool generation now published: the highest over this node's pools; 0 when nothing is
  /// published.
  long long generation = 0;
  bool owner_set = false;  ///< the slices carry the Node as owner
};

class SlicePublisher {
 public:
  /// Logs one line (e.g. "dra: cannot read Node n1 ..."); may be empty.
  using Log = std::function<void(const std::string&)>;

  /// `client` is not owned. `driver` ("accel.io") and `node` (the Node's name) select what this
  /// publisher owns: every ResourceSlice with spec.driver == driver and spec.nodeName == node.
  SlicePublisher(kubeapi::KubeClient* client, std::string driver, std::string node, Log log = {});

  SlicePublisher(const SlicePublisher&) = delete;
  SlicePublisher& operator=(const SlicePublisher&) = delete;

  /// Makes the published slices equal to `desired`: full ResourceSlice objects, each with a
  /// unique metadata.name (deterministic, so a republish finds it) and spec.pool.name. The
  /// publisher sets apiVersion, kind, spec.driver, spec.nodeName, spec.pool.generation and
  /// spec.pool.resourceSliceCount (the number of desired slices in the pool), the owner and its
  /// annotation; everything else is published as given. Empty `desired` deletes every slice.
  /// Retries the whole pass (from a fresh list) when a write meets a 409 (changed or created
  /// concurrently), up to 3 passes. Throws InputError for a desired slice without a name or pool,
  /// or a duplicate name; kubeapi::ApiError (a SystemError) when the API server refuses (403:
  /// which verb the service account lacks); SystemError when it cannot be reached or answers
  /// garbage. A failed pass may have written part of the change: the next Publish completes it.
  PublishResult Publish(const std::vector<nlohmann::json>& desired);

  /// Deletes every slice of this driver and node (the driver is being removed from the node).
  /// Returns how many were deleted. Throws as Publish.
  int DeleteAll();

  /// The collection path of ResourceSlices.
  static const std::string& CollectionPath();

 private:
  PublishResult PublishOnce(const std::vector<nlohmann::json>& desired);
  std::vector<nlohmann::json> ListPublished();
  void EnsureOwner();

  kubeapi::KubeClient* const client_;
  const std::string driver_;
  const std::string node_;
  const Log log_;

  std::mutex mu_;  ///< one Publish/DeleteAll at a time
  std::optional<nlohmann::json> owner_;  ///< the ownerReferences entry, once the Node was read
};

}  // namespace accel::dra
