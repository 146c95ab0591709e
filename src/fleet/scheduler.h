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
//   3. Rank the rest: (0) with a partition (replica i of n), the replica's own hosts first —
//      those whose name hashes to i (PartitionOf) — then every other host, each group in the
//      order below; (a) the strategy — pack: fewest free accelerators, then fewest free
//      pinnable CPUs; spread: most of each; (b) fragmentation — prefer a host with a node whose
//      accelerators are already partly used (so whole free GPU nodes stay whole), then a host
//      that is not idle (so whole free hosts stay whole); (c) the host name, or with a
//      tiebreak seed (one per scheduler replica) a seeded hash of it, so replicas that see the
//      same fleet do not all race for the same host.
//   4. Run the engine down that order, once per distinct (hardware, policy, usage), until the
//      best host that fits plus `alternates` more are found (at least `subset_size` hosts).
//   5. With subset_size > 1 and a seed, choose among the best subset_size by the seeded order
//      (Nova's host_subset_size, made deterministic) — with a partition, among the best of the
//      replica's own hosts while one of them fits; the rest, best first, are the alternates.
// Deterministic: same view, request, options and seed, same answer.
//
// Partitions: replicas that see the same fleet rank the same hosts first, and under pack there
// is often one best host (exact free CPU counts rarely tie), so without a partition they race
// for it however they break ties (docs/benchmarks.md, "Fleet"). With `partition` {i, n} on each
// of n replicas, each prefers its own 1/n of the hosts, so two replicas only meet on a host
// when one's share has no fitting host left in its view (or their claims' alternates reach into
// the others' shares); then it takes the best of all hosts (nothing fits
// less than without a partition). The cost: the strategy and fragmentation order hold within
// each share, not across the fleet — a replica opens an idle host of its share while another
// share still has a partly used one that fits; with requests spread evenly over the replicas,
// each share packs as the whole fleet would.
//
// When not every instance fits, every host that did not take one is explained, counted per
// cause across the fleet ("4,812 hosts: PCI devices — e.g. gpu-0042: PCI alias 'h100': 2 free
// matching devices on the host, needs 4").
//
// The fleet's "no" is a return value in one form per level, never an exception (exceptions are
// failures: bad input, a store that cannot be reached):
//   - one host does not take a flavor: a reason line (NoFitReason for the engine's answer);
//   - a request over the fleet is not placed: CauseCount per cause, most hosts first
//     (ScheduleResult::why_not, PlaceOutcome::why_not, `why_not` in the API; DescribeCauses
//     writes the lines for people);
//   - the store refuses one claim: ClaimResult::refused (fleet_store.h).
//
// Thread-safety: Schedule only reads the view; many may run at once on a const view.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fleet/fleet_view.h"
#include "fleet/gpu_policy.h"
#include "fleet/labels.h"
#include "fleet/workload_mix.h"
#include "placement/engine.h"
#include "placement/request.h"

namespace accel::fleet {

enum class FleetStrategy {
  kPack,    ///< fill used hosts first: whole hosts stay free for the biggest flavors
  kSpread,  ///< use the emptiest hosts first: fewer noisy neighbours
};

/// Replica `index` of `count` scheduler replicas sharing one fleet: its own hosts are those
/// with PartitionOf(name_hash, count) == index. {0, 1} (the default) is no partition.
struct SchedulePartition {
  int index = 0;  ///< this replica, 0 .. count - 1 (e.g. a StatefulSet pod's ordinal)
  int count = 1;  ///< how many replicas share the fleet; 1 = every host is every replica's own
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
  /// This replica's share of the hosts: ranked before every other host (step 3 (0) above); the
  /// subset choice stays within it while it has a fit. count 1 = none.
  SchedulePartition partition;
  /// Identifies the scheduler replica; "" = rank equal hosts by name. Replicas that each use
  /// their own seed spread over equally good hosts instead of racing for the first.
  std::string tiebreak_seed;
  int64_t now_unix = 0;           ///< for staleness; 0 = the view's taken_at
  /// For requests with GPUs by model and size or pod CPU (PlacementRequest::gpu, cpu_milli):
  /// the policy that ranks (host, GPUs) pairs (fleet/gpu_policy.h). `strategy` does not apply
  /// to them.
  GpuPolicy gpu_policy = GpuPolicy::kAccel;
  /// The expected request mix the fragmentation-aware policies keep usable; null = the request
  /// itself, and for a share or MIG slice also a whole GPU of its models (GpuScorer::UseAskAsMix).
  std::shared_ptr<const WorkloadMix> mix;
  /// Seed of GpuPolicy::kRandom's draws (with the decision's count of earlier draws).
  uint64_t random_seed = 0;
  /// A scorer kept across decisions (it memoizes fragmentation per host state, which is most of
  /// a decision's time on a large fleet); when set, its policy and mix are used and gpu_policy,
  /// mix and random_seed are not. Not thread-safe: one decision at a time per scorer.
  std::shared_ptr<GpuScorer> scorer;
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
  /// Hosts that passed the filters and counts, of the last instance decided. With a partition
  /// only the partition's own hosts when they gave enough candidates (the others are not looked
  /// at then).
  int hosts_ranked = 0;
};

/// Decides `options.count` instances of `request` on `view`. A request with GPUs by model and
/// size or pod CPU is ranked by options.gpu_policy instead of steps 2-4 above (every eligible
/// host whose free CPU, memory and GPUs can hold it is scored per GPU choice; the engine then
/// checks the best, PlaceWithGpuChoice); filters, partitions, alternates and causes are the same. Instances after the first see the
/// earlier ones applied to a working copy (the view itself is not changed). Returns as many as
/// fit; all_placed says whether that is all of them. Throws InputError when options.partition
/// is not 0 <= index < count.
ScheduleResult Schedule(const FleetView& view, const placement::PlacementRequest& request,
                        const ScheduleOptions& options);

/// One host's answer to a request with GPUs by model and size or pod CPU, for a caller that
/// asks about given hosts (the Kubernetes scheduler extender's filter and prioritize).
struct HostVerdict {
  size_t host_index = 0;   ///< index in FleetView::hosts()
  bool fits = false;       ///< the engine places the request there
  std::string reason;      ///< why not, when it does not fit (NoFitReason or a filter's cause)
  /// The policy's cost of the best GPU choice there (lower is better); with the others',
  /// what ranks hosts.
  double cost = 0;
  /// 0..100, higher is better: the costs of the fitting hosts mapped linearly (the best 100,
  /// the worst 0; all 100 when they are equal).
  int score = 0;
};

/// Judges `request` (one with PlacementRequest::gpu or cpu_milli) on each of `hosts` (indexes
/// into view.hosts()) with options' filters (state, staleness, where) and policy, in the order
/// given. Throws InputError when the request has neither.
std::vector<HostVerdict> JudgeHosts(const FleetView& view, const placement::PlacementRequest& request,
                                    const ScheduleOptions& options, const std::vector<size_t>& hosts);

/// The partition (0 .. count - 1) of a host whose name has FNV-1a `name_hash` (RankRow::name_hash):
/// the hash mixed by splitmix64's finalizer, modulo count. (FNV-1a's low bits depend only on the
/// low bits of each byte — modulo 2 it is the parity of the odd bytes — so unmixed, a power-of-two
/// count would split hosts by their names' digits, not evenly.) Stable: a host keeps its partition
/// as long as its name and the replica count stay. count < 1 is read as 1.
int PartitionOf(uint64_t name_hash, int count);
/// PartitionOf(Fnv1a(host_name), count).
int PartitionOfHost(const std::string& host_name, int count);

/// Reads "INDEX/COUNT" (e.g. "0/2": the first of two replicas; 0-based, as a StatefulSet's pod
/// ordinals). Throws InputError naming `where` (a flag or field) unless 1 <= COUNT <= 1024 and
/// 0 <= INDEX < COUNT.
SchedulePartition ParsePartition(const std::string& text, const std::string& where);
/// "INDEX/COUNT".
std::string FormatPartition(const SchedulePartition& partition);

/// A host's one-line answer when the engine does not fit a flavor there: the engine's first
/// reason (e.g. "node 0: 2 free whole cores, needs 8"), "does not fit" when it gave none. What
/// the scheduler's examples, capacity's stop reasons and /api/v1/filter's rejections say.
std::string NoFitReason(const placement::NoFit& no_fit);

/// The cause category of an engine no-fit reason: "CPUs", "memory", "PCI devices",
/// "NUMA cells" or "other".
std::string CauseOf(const std::string& reason);

/// "4,812 hosts: PCI devices (e.g. gpu-0042: ...)" lines for people.
std::vector<std::string> DescribeCauses(const std::vector<CauseCount>& causes);

}  // namespace accel::fleet
