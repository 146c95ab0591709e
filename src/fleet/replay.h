// Replay: a workload trace (fleet/trace.h) run through the fleet's real decision code — the
// scheduler and engine `accel fleet place` and `accel fleet serve` use (fleet/scheduler.h),
// on a FleetView of the trace's nodes — to measure how much GPU capacity a placement policy
// keeps allocated. `accel fleet replay` is its command.
//
// The protocol without departures is the FGD paper's, as ../shared/data/openb/README.md states
// it: the pod list, then pods drawn from it at random (with replacement) and appended until the
// GPU demand of the whole list (num_gpu x gpu_milli / 1000 per pod) reaches `tune` x the
// cluster's GPUs; the order of the whole list shuffled; one seed fixes both. Pods arrive one at
// a time and are placed at once or never. After every 1 % of capacity has arrived (0 .. 130 %),
// the GPU capacity allocated (the placed pods' GPU thousandths) as % of the cluster's GPUs.
// The random numbers are splitmix64 draws with unbiased bounded integers, so a seed gives the
// same list on every machine and standard library.
//
// With departures: the trace's own pods (no draws) in creation-time order, each leaving at its
// deletion time (a pod without times is never placed); allocation sampled at 101 points evenly
// over the trace's time span.
//
// Thread-safety: Replay runs (policy, seed) pairs on `threads` threads, each on its own copy of
// the view; the result does not depend on the thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleet/fleet_view.h"
#include "fleet/gpu_policy.h"
#include "fleet/trace.h"
#include "fleet/workload_mix.h"

namespace accel::fleet {

struct ReplayOptions {
  std::vector<GpuPolicy> policies = {GpuPolicy::kAccel};  ///< each is run on every seed
  std::vector<uint64_t> seeds = {42};
  double tune = 1.3;          ///< arrivals until this x the cluster's GPU capacity
  bool departures = false;    ///< honour creation and deletion times instead (no draws)
  int threads = 0;            ///< 0 = hardware threads
  bool assignments = false;   ///< keep every pod's assignment (for --assignments)
};

/// Where one arriving pod went.
struct ReplayAssignment {
  int seq = 0;                ///< arrival order, from 0
  int pod = 0;                ///< index in the pod list
  int node = -1;              ///< index in the node list; -1 = not placed
  /// The GPUs it got: (index among the node's GPUs, thousandths); empty when unplaced or CPU-only.
  std::vector<std::pair<int, int>> gpus;
};

struct ReplayRun {
  uint64_t seed = 0;
  int pods = 0;               ///< pods that arrived
  int placed = 0;             ///< of them placed
  /// Without departures: allocated GPU capacity in % of the cluster's GPUs after 0, 1, ..., 130 %
  /// of capacity arrived (131 numbers; a point not reached repeats the last value). With
  /// departures: at 0, 1, ..., 100 % of the trace's time span (101 numbers).
  std::vector<double> allocated_pct;
  /// Without departures, an upper bound of allocated_pct at each point (ReplayBound).
  std::vector<double> bound_pct;
  std::vector<ReplayAssignment> assignments;  ///< with ReplayOptions::assignments
};

struct ReplayResult {
  GpuPolicy policy = GpuPolicy::kAccel;
  int nodes = 0;
  int64_t gpus = 0;           ///< the cluster's GPUs
  std::vector<ReplayRun> runs;  ///< one per seed, in the order given
  std::vector<double> mean_allocated_pct;  ///< mean over runs, point by point
  std::vector<double> mean_bound_pct;      ///< mean of the runs' bounds
  double seconds = 0;         ///< CPU-independent wall time of this policy's runs
};

/// The fleet of a trace's nodes: one enabled host per node (TraceHostTopology, TraceHostPolicy),
/// nodes of one shape sharing their hardware, nothing claimed. Host i of the view is the node
/// named like it (the view sorts hosts by name).
FleetView TraceFleetView(const std::vector<TraceNode>& nodes);

/// The arrival list of one seed (indexes into `pods`), as the protocol above builds it.
std::vector<int> ArrivalOrder(const std::vector<TracePod>& pods, int64_t capacity_milli, double tune, uint64_t seed);

/// FGD's "typical pods" of a pod list: shapes (CPU, GPU count, thousandths, models; memory
/// ignored) weighted by how many pods have each, the most common first until they cover 95 % of
/// the pods, weights renormalized. The mix FGD keeps usable.
WorkloadMix TypicalPodsMix(const std::vector<TracePod>& pods);

/// Runs every (policy, seed) of `options`. Throws InputError when the nodes have no GPUs or a
/// policy needs what the trace lacks (departures without times).
std::vector<ReplayResult> Replay(const std::vector<TraceNode>& nodes, const std::vector<TracePod>& pods,
                                 const ReplayOptions& options);

}  // namespace accel::fleet
