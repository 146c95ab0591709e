// SchedulerExtender: kube-scheduler's scheduler extender over the fleet — Kubernetes pods that ask
// for GPUs (whole, a share, a MIG slice: fleet/pod_ask.h) are filtered, ranked and claimed by the
// same scheduler and the same store as `accel fleet place`, so a pod's share is held exactly like a
// VM's GPU. FleetService serves it (service.h routes):
//
//   POST /scheduler/filter      ExtenderArgs -> ExtenderFilterResult
//   POST /scheduler/prioritize  ExtenderArgs -> HostPriorityList
//   POST /scheduler/bind        ExtenderBindingArgs -> ExtenderBindingResult
//
// (the JSON of k8s.io/kube-scheduler/extender/v1: fleet/extender_types.h). kube-scheduler's
// extender config: urlPrefix http://SERVICE:9470/scheduler, filterVerb filter, prioritizeVerb
// prioritize, bindVerb bind, nodeCacheCapable true (both node forms are served), managedResources
// as deploy/kubernetes/scheduler-extender/kube-scheduler-config.yaml lists (docs/fleet-kubernetes.md).
//
// Kubernetes nodes are fleet hosts of the same name (the node agent publishes its host under the
// node name).
//   - filter: a pod that is not accel's (PodAsk::accel() false) passes every node unchanged. For
//     the others, each node is judged with JudgeHosts (scheduler.h) under the options' GPU policy:
//     it passes when the pod fits there now. A node that is not a fleet host, a host that is not
//     enabled or whose agent is stale, a pod no accelerator of the fleet could take, or a pod that
//     breaks the contract fails as FailedAndUnresolvableNodes (preempting pods there would not
//     help); a host that is full now fails as FailedNodes. Reasons start with "accel: ".
//   - prioritize: JudgeHosts' score (0..100, the best host 100) scaled to 0..10 (rounded); 0 for
//     hosts that do not fit and for pods that are not accel's.
//   - bind: the claim, then the Binding. The pod's ask is the one filter or prioritize saw for
//     that pod UID (remembered), else read from the API server (options.read_pod). The pod is
//     placed on exactly that node (Schedule over a view of that one host, then the store's claim
//     with its generation check: PlaceInFleet, up to kBindRounds rounds when concurrent claims on the
//     host refuse it), stored with flavor "pod/NAMESPACE/NAME" and the note "pod uid UID" in its
//     placement. Then options.bind creates the pod's v1.Binding. If the Binding fails and the API
//     server says the pod is not bound there (or there is no reader to ask), the claim is
//     released; when the pod turns out bound to that node already (an earlier try whose answer
//     was lost), that is success. Idempotent: a second bind of the same pod UID to the same node
//     finds the pod's claim there and only binds again. Pods that are not accel's are bound
//     without a claim. Binds of one pod UID are serialized within a replica.
//   - Claims of pods that are gone: ReleaseGonePods (every options.release_gone_every, started by
//     the service) releases each claim "pod/NS/NAME" whose pod the API server no longer has, has
//     with another UID, has in phase Succeeded or Failed, or has bound to another node.
//
// Errors: a body that is not the verb's JSON (or a pod without metadata.name, namespace or uid)
// is InputError, answered 400 with {"Error": "..."}. Store failures are SystemError (503 from the
// service). A bind that cannot be done answers 200 with Error set, as the protocol says.
//
// Thread-safety: every method may be called from many threads at once; the view and the store
// are reached only through the ExtenderHost.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/periodic_thread.h"
#include "fleet/extender_types.h"
#include "fleet/fleet_store.h"
#include "fleet/fleet_view.h"
#include "fleet/gpu_policy.h"
#include "fleet/placing.h"
#include "fleet/pod_ask.h"

namespace accel::fleet {

/// The Binding bind creates: pod NAMESPACE/NAME (UID) onto NODE.
struct PodBinding {
  std::string ns;    ///< the pod's namespace
  std::string name;  ///< the pod's name
  std::string uid;   ///< the pod's UID (the Binding's metadata.uid: a precondition the API checks)
  std::string node;  ///< the node (the Binding's target)
};

/// What the extender is given by whoever starts the service (`accel fleet serve` builds these from
/// its API server access, --kubeconfig or --in-cluster).
struct ExtenderOptions {
  /// Creates the pod's v1.Binding (POST /api/v1/namespaces/NS/pods/NAME/binding, as
  /// kube-scheduler's DefaultBinder does). Throws on failure (its message goes into the answer).
  /// Unset: the service has no API server access, and bind answers an error without claiming.
  std::function<void(const PodBinding&)> bind;
  /// Reads pod NAMESPACE/NAME from the API server: the object, or nullopt when there is none.
  /// Throws when the API server cannot answer. Unset: bind knows only the pods filter or
  /// prioritize saw, and ReleaseGonePods does nothing.
  std::function<std::optional<nlohmann::json>(const std::string& ns, const std::string& name)> read_pod;
  /// The MIG catalog, for pods asking nvidia.com/mig-PROFILE; unset: those fit nowhere.
  MigShapeResolver mig_shapes;
  /// The policy that ranks hosts (and GPUs on a host) for pods.
  GpuPolicy policy = GpuPolicy::kAccel;
  /// How many pods (by UID) filter and prioritize remember for bind; the oldest go first.
  size_t remembered_pods = 10000;
  /// How often the service runs ReleaseGonePods; 0 = never.
  std::chrono::milliseconds release_gone_every{60000};
};

/// What the extender needs of the service it runs in (FleetService implements it).
class ExtenderHost {
 public:
  virtual ~ExtenderHost() = default;
  /// Calls `read` with the service's current view of the fleet, under its read lock.
  virtual void ReadView(const std::function<void(const FleetView&)>& read) = 0;
  /// Calls `use` with one of the service's store connections (never while holding the view).
  virtual void WithStore(const std::function<void(FleetStore&)>& use) = 0;
  /// Brings the view up to the store (between the rounds of a claim that the store refused).
  virtual void CatchUp(FleetStore& store) = 0;
  /// After this extender's committed claims (`outcome` placed) or releases (`outcome` null):
  /// the view learns them.
  virtual void AfterWrite(FleetStore& store, const PlaceOutcome* outcome) = 0;
};

/// An answer of the extender: HTTP status and JSON body.
struct ExtenderReply {
  int status = 200;
  std::string body;
};

/// How many calls of one verb ended one way (for /metrics).
struct ExtenderCount {
  const char* verb = "";    ///< "filter", "prioritize", "bind"
  /// "ok"; "error" (200 with Error set: a bind that could not be done); "bad_request" (400);
  /// "store_unavailable" (the store failed: 503).
  const char* result = "";
  uint64_t count = 0;
};

class SchedulerExtender {
 public:
  /// The routes' prefix.
  static constexpr const char* kPrefix = "/scheduler/";
  /// Rounds of a bind's claim (each after a refusal looks at the store again): binds of many pods
  /// to one node at once refuse each other's first tries, and a bind that gives up sends the pod
  /// back to kube-scheduler's queue.
  static constexpr int kBindRounds = 8;

  SchedulerExtender(ExtenderHost& host, ExtenderOptions options);
  ~SchedulerExtender();
  SchedulerExtender(const SchedulerExtender&) = delete;
  SchedulerExtender& operator=(const SchedulerExtender&) = delete;

  /// Whether `verb` ("filter", "prioritize", "bind") is one this extender answers.
  static bool IsVerb(const std::string& verb);
  /// Answers POST kPrefix + `verb` with `body` (see the header comment). Throws SystemError when
  /// the store fails.
  ExtenderReply Handle(const std::string& verb, const std::string& body);

  /// The protocol's three calls, typed. Filter and Prioritize throw InputError for a pod without
  /// metadata.name, namespace or uid; Bind returns "" when bound, else the error.
  ExtenderFilterResult Filter(const ExtenderArgs& args);
  std::vector<HostPriority> Prioritize(const ExtenderArgs& args);
  std::string Bind(const ExtenderBindingArgs& args);

  /// Releases the claims of pods that are gone (see the header comment). Returns how many. A pod
  /// the API server cannot be asked about now keeps its claim until the next time.
  int ReleaseGonePods();

  /// Every (verb, result) pair with its count so far, zeros included, in a fixed order.
  std::vector<ExtenderCount> Counts() const;

  /// Starts ReleaseGonePods every options.release_gone_every (when read_pod is set and the
  /// interval is not 0); Stop stops it (idempotent).
  void Start();
  void Stop();

 private:
  /// The pods' asks, by UID, as filter and prioritize saw them (most recent first).
  void Remember(const PodAsk& ask);
  std::optional<PodAsk> Recall(const std::string& uid);
  /// The ask of the pod being bound: remembered, else read from the API server. "" or why not.
  std::string AskOf(const ExtenderBindingArgs& args, PodAsk* ask);
  /// options_.bind, then a check that a failed Binding did not in fact bind the pod to the node.
  /// Returns "" when the pod is bound there; else the error, with *release saying whether the
  /// pod is known not to be bound there (so its claim may go).
  std::string CreateBinding(const ExtenderBindingArgs& args, bool* release);
  ScheduleOptions Options() const;

  ExtenderHost& host_;
  const ExtenderOptions options_;

  std::mutex remembered_mu_;
  std::list<PodAsk> remembered_;  ///< guarded by remembered_mu_; most recent first
  std::unordered_map<std::string, std::list<PodAsk>::iterator> by_uid_;  ///< guarded by remembered_mu_

  std::mutex binding_mu_;
  std::condition_variable binding_cv_;
  std::set<std::string> binding_;  ///< pod UIDs being bound now; guarded by binding_mu_

  PeriodicThread gone_;  ///< ReleaseGonePods every options_.release_gone_every

  static constexpr int kVerbs = 3, kResults = 4;
  std::atomic<uint64_t> counts_[kVerbs][kResults] = {};  ///< by verb, then result (Counts order)
};

/// The note a pod's claim carries in its placement: "pod uid UID".
std::string PodUidNote(const std::string& uid);

}  // namespace accel::fleet
