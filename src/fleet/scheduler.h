// The fleet scheduler: which host takes a flavor, and exactly where on it — one decision over
// the whole fleet with the same engine and the same validity as `accel place`.
//
// For each instance:
//   1. Filter: the host is enabled, its agent not stale, its labels match every --where term,
//      and (--different-hosts) no earlier instance of the request is on it.
//   2. Skip without the engine hosts that cannot fit by count: fewer free matching PCI devices
//      or pinnable CPUs than the flavor asks, or, for a PCI request with numa_policy required or
//      legacy, fewer free matching devices on the guest's number of host NUMA nodes (those with
//      the most) than it asks — devices must be local to the guest's cells, which sit on
//      distinct host nodes. These bounds are necessary conditions: they never skip a host the
//      engine would fit. They read FleetView::rows() only.
//   3. Rank the rest: (a) the strategy — pack: fewest free accelerators, then fewest free
//      pinnable CPUs; spread: most of each; (b) fragmentation — prefer a host with a node whose
//      accelerators are already partly used (so whole free GPU nodes stay whole), then a host
//      that is not idle (so whole free hosts stay whole); (c) the host name, or with a
//      tiebreak seed (one per scheduler replica) a seeded hash of it, so replicas that see the
//      same fleet do not all race for the same host.
//   4. Run the engine down that order, once per distinct (hardware, policy, usage), until the
//      best host that fits plus `alternates` more are found (at least `subset_size` hosts).
//   5. With subset_size > 1 and a seed, choose among the best subset_size by the seeded order
//      (Nova's host_subset_size, made deterministic); the rest, best first, are the alternates.
// Deterministic: same view, request, options and seed, same answer.
//
// When not every instance fits, every host that did not take one is explained, counted per
// cause across the fleet ("4,812 hosts: PCI devices — e.g. gpu-0042: PCI alias 'h100': 2 free
// matching devices on the host, needs 4").
//
// Thread-safety: Schedule only reads the view; many may run at once on a const view.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleet/fleet_view.h"
#include "fleet/labels.h"
#include "placement/engine.h"
#include "placement/request.h"

namespace accel::fleet {

enum class FleetStrategy {
  kPack,    ///< fill used hosts first: whole hosts stay free for the biggest flavors
  kSpread,  ///< use the emptiest hosts first: fewer noisy neighbours
};

struct ScheduleOptions {
  std::vector<LabelRequirement> where;  ///< every term must match the host's labels
  FleetStrategy strategy = FleetStrategy::kPack;
  int count = 1;                  ///< instances to place
  bool different_hosts = false;   ///< no two instances on one host
  int alternates = 4;             ///< ranked next-best hosts kept per instance for claim retries
  /// Nova's host_subset_size: with a tiebreak seed, the chosen host is one of the best
  /// `subset_size` hosts that fit (the one first in the seed's order), the others stay
  /// alternates. Replicas that see the same fleet then choose different hosts even where the
  /// ranking has no ties (pack orders by exact free CPU counts). 1 = always the best host.
  int subset_size = 1;
  /// Hosts (indexes in the view) this scheduler is claiming on right now: not considered, so
  /// concurrent requests of one replica do not choose the same host before its claim lands in
  /// the view (kube-scheduler's "assumed" pods, in reverse). Counted as cause "claim in flight".
  std::vector<size_t> skip_hosts;
  /// Identifies the scheduler replica; "" = rank equal hosts by name. Replicas that each use
  /// their own seed spread over equally good hosts instead of racing for the first.
  std::string tiebreak_seed;
  int64_t now_unix = 0;           ///< for staleness; 0 = the view's taken_at
};

/// A host and the placement the engine made there.
struct Candidate {
  size_t host_index = 0;        ///< index in FleetView::hosts()
  std::string host;             ///< its name
  int64_t generation = 0;       ///< the host's generation in the view the placement was made on
  placement::Placement placement;
  /// Earlier instances of this request the placement assumed on this host (their indexes):
  /// it stays valid as long as the instances actually claimed there are among them.
  std::vector<int> assumed_instances;
};

struct InstanceDecision {
  Candidate chosen;                 ///< the best host
  std::vector<Candidate> alternates;  ///< next best, in order, for claim retries
};

/// Hosts that did not take an instance, by cause.
struct CauseCount {
  std::string cause;    ///< "disabled", "labels", "stale", "CPUs", "PCI devices", "memory", ...
  int hosts = 0;        ///< how many hosts
  std::string example;  ///< one host and its reason, e.g. "gpu-0042: node 0: 2 free whole cores, needs 8"
};

struct ScheduleResult {
  std::vector<InstanceDecision> instances;  ///< one per placed instance, in order
  bool all_placed = false;                  ///< instances.size() == count
  /// For the first instance that did not fit: why, per cause, most hosts first.
  std::vector<CauseCount> why_not;
  int engine_calls = 0;                     ///< placement-engine runs (distinct host states)
  int hosts_ranked = 0;                     ///< hosts that passed the filters and counts
};

/// Decides `options.count` instances of `request` on `view`. Instances after the first see the
/// earlier ones applied to a working copy (the view itself is not changed). Returns as many as
/// fit; all_placed says whether that is all of them.
ScheduleResult Schedule(const FleetView& view, const placement::PlacementRequest& request,
                        const ScheduleOptions& options);

/// The cause category of an engine no-fit reason: "CPUs", "memory", "PCI devices",
/// "NUMA cells" or "other".
std::string CauseOf(const std::string& reason);

/// "4,812 hosts: PCI devices (e.g. gpu-0042: ...)" lines for people.
std::vector<std::string> DescribeCauses(const std::vector<CauseCount>& causes);

}  // namespace accel::fleet
