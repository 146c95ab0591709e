// FleetService: the scheduler service behind `accel fleet serve`. It holds the fleet in memory
// (a FleetView), keeps it current from the store — any number of replicas on one PostgreSQL
// see each other's claims within one refresh interval (default 500 ms) — and answers the JSON API
// (docs/fleet-api.yaml), the Prometheus metrics and the fleet page.
//
// Transport-free: Handle() takes a method, path, query and body and returns status, content type
// and body; the CLI puts it behind accel's HTTP server (TLS and basic auth from the same web
// config file as `accel exporter`).
//
// Routes:
//   GET    /api/v1/hosts[?where=k=v]     accel.fleet-hosts/v1
//   GET    /api/v1/hosts/NAME            one host, with its claims
//   GET    /api/v1/claims[?host=NAME]    accel.claims/v1
//   DELETE /api/v1/claims/ID             release one claim
//   POST   /api/v1/release               {"ids": [...]}
//   POST   /api/v1/place                 {"flavor": {...}, "aliases": [...], "count", "claim", ...}
//   POST   /api/v1/capacity              {"flavors": [...], "aliases": [...], "where", "group_by"}
//   POST   /api/v1/filter                {"flavor", "aliases", "hosts": [...], "count", "usage":
//                                          {host: Nova's usage (nova_usage.h)}}: which can take it
//   POST   /scheduler/filter             kube-scheduler's extender (scheduler_extender.h): ExtenderArgs
//   POST   /scheduler/prioritize           -> ExtenderFilterResult / HostPriorityList; ExtenderBindingArgs
//   POST   /scheduler/bind                 -> ExtenderBindingResult (claim, then the pod's Binding)
//   GET    /metrics                      Prometheus text (served by the HTTP server from Metrics())
//   GET    /                             the fleet page (HTML + inline SVG)
// Errors: 400 bad input {"error": "..."} ({"Error": "..."} on /scheduler/, the extender
// protocol's field); 404 unknown path or name; 405 wrong method; 503 the store is unreachable
// (the next request tries again).
//
// Thread-safety: Handle and Metrics may be called from many threads at once; the view is read
// under a shared lock and changed under an exclusive one; the store is reached through a small
// pool of connections (one per concurrent request).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/periodic_thread.h"
#include "fleet/capacity.h"
#include "fleet/fleet_store.h"
#include "fleet/fleet_view.h"
#include "fleet/scheduler.h"
#include "fleet/scheduler_extender.h"
#include "placement/request.h"

namespace accel::fleet {

struct ServiceOptions {
  std::string store_url;                              ///< the fleet store
  std::chrono::milliseconds refresh{500};             ///< how often to look for others' changes
  /// Flavors whose capacity /metrics and the page report (recomputed every capacity_every).
  std::vector<placement::PlacementRequest> capacity_flavors;
  std::chrono::milliseconds capacity_every{30000};
  std::string seed;                                   ///< replica identity for tie-breaks
  /// Default subset_size of a placement (ScheduleOptions::subset_size, Nova's host_subset_size):
  /// with several replicas, about their number keeps them from racing for one host.
  int subset_size = 1;
  /// This replica's share of the fleet (ScheduleOptions::partition): replica i of n prefers the
  /// hosts whose name hashes to i, so n replicas race only when a share runs out of fitting
  /// hosts. Default for a place request's "partition"; {0, 1} = none.
  SchedulePartition partition;
  int connections = 4;                                ///< store connections (concurrent requests)
  /// kube-scheduler's extender under /scheduler/: its API server access (to bind pods), MIG
  /// catalog and GPU policy. Without `bind`, /scheduler/bind answers an error.
  ExtenderOptions extender;
};

struct ServiceRequest {
  std::string method;  ///< "GET", "POST", ...
  std::string path;    ///< without the query
  std::string query;   ///< after '?', undecoded
  std::string body;
};

struct ServiceReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string allow;   ///< for 405: "GET, HEAD", "POST", ...
};

class FleetService {
 public:
  /// Opens `options.connections` store connections and loads the fleet. Throws InputError or
  /// SystemError as FleetStore::Open does, and InputError for a partition that is not
  /// 0 <= index < count.
  explicit FleetService(ServiceOptions options);
  ~FleetService();
  FleetService(const FleetService&) = delete;
  FleetService& operator=(const FleetService&) = delete;

  /// Starts the background refresher (others' claims, hosts, heartbeats; capacity) and the
  /// extender's release of claims whose pods are gone.
  void Start();
  /// Stops it; idempotent.
  void Stop();

  /// Answers one API/page request (routes above).
  ServiceReply Handle(const ServiceRequest& request);
  /// The Prometheus text exposition (format 0.0.4).
  std::string Metrics();

  /// Looks at the store once now (what the refresher does every interval). Returns false when
  /// the store could not be reached (the view stays as it was).
  bool RefreshNow();

 private:
  class Pool;
  class ExtenderLink;
  ServiceReply Place(const ServiceRequest& r);
  ServiceReply Capacity(const ServiceRequest& r);
  ServiceReply Filter(const ServiceRequest& r);
  ServiceReply Release(const std::vector<std::string>& ids, bool single);
  ServiceReply Hosts(const ServiceRequest& r);
  ServiceReply Page();
  /// Asks `store` what changed after change_mark_ (FleetStore::ChangedSince: one statement when
  /// no generation moved, plus one for the hosts whose generation did, with their claims),
  /// reloads those hosts, drops the removed ones, takes new heartbeats, and advances the mark.
  /// Called every refresh interval, after this replica's own claims and releases, and between
  /// the rounds of a placement whose candidates were all taken. Throws what the store throws
  /// (the mark stays then).
  void RefreshChanged(FleetStore& store);
  /// RefreshChanged after this replica's own committed claims or releases; a store failure then
  /// only marks the store down (the write stands and is answered; the refresher catches up).
  void RefreshAfterWrite(FleetStore& store);
  /// Adds this replica's own committed claim `claim_id` of candidate `c` to the view, when the
  /// view still has the host at the generation the candidate was decided on.
  void ApplyOwnClaim(const Candidate& c, const std::string& claim_id);
  void RecomputeCapacity();

  ServiceOptions options_;
  std::unique_ptr<Pool> pool_;
  std::mutex refresher_mu_;                     ///< serializes RefreshNow
  std::unique_ptr<FleetStore> refresher_store_;  ///< guarded by refresher_mu_

  /// Hosts this replica's requests are claiming on right now (name -> requests), so concurrent
  /// decisions skip them until the claim is in the view. Taken before view_mu_, and held while
  /// deciding: one decision at a time per replica (a decision is ~1 ms; a claim several).
  std::mutex in_flight_mu_;
  std::map<std::string, int> in_flight_;  ///< guarded by in_flight_mu_
  mutable std::shared_mutex view_mu_;
  FleetView view_;                    ///< guarded by view_mu_
  std::mutex changes_mu_;              ///< serializes RefreshChanged (poll and apply)
  /// The change feed's mark view_ is current to (FleetStore::ChangedSince).
  std::atomic<int64_t> change_mark_{0};
  CapacityReport capacity_;           ///< guarded by view_mu_; of options_.capacity_flavors
  std::chrono::steady_clock::time_point capacity_at_{};  ///< refresher thread only

  PeriodicThread refresher_;          ///< RefreshNow every options_.refresh
  /// The extender and its way into this service (the view, the pool); the link outlives it.
  std::unique_ptr<ExtenderLink> extender_link_;
  std::unique_ptr<SchedulerExtender> extender_;

  // Metrics.
  std::atomic<bool> store_up_{true};
  std::atomic<int64_t> refreshed_at_{0};      ///< unix seconds of the last good refresh
  std::atomic<uint64_t> placed_{0}, no_fit_{0}, lost_race_{0};
  std::atomic<uint64_t> retries_{0}, conflicted_requests_{0};
  /// Instances placed (and claimed, for claim requests) outside the request's partition.
  std::atomic<uint64_t> partition_fallbacks_{0};
  std::mutex histogram_mu_;
  std::vector<uint64_t> latency_buckets_;     ///< guarded by histogram_mu_; cumulative on output
  uint64_t latency_count_ = 0;                ///< guarded by histogram_mu_
  double latency_sum_ = 0;                    ///< guarded by histogram_mu_
};

}  // namespace accel::fleet
