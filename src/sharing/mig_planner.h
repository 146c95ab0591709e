// The MIG planner: given a node's or a fleet's GPUs (model, current instances, which are busy)
// and a demand (profile name → instances wanted), choose a target layout with explicit
// placements for every GPU.
//
// Objectives, in this order (lexicographic):
//   1. satisfy the most demand: maximise Σ_profile min(demand, instances of it after the plan);
//   2. reconfigure the fewest GPUs (a GPU whose instance set changes, or whose MIG mode must be
//      turned on), and never destroy a busy instance (hard constraint);
//   3. leave the largest free profiles possible: maximise Σ_gpu FreeScore(target).
// Existing instances count toward the demand whether busy or idle. Instances of profiles
// nobody demands are kept unless their GPU is reconfigured anyway and the space is needed:
// among a changed GPU's layouts that supply the same demanded instances, only those keeping the
// most such idle instances are candidates (so this comes before objective 3 on that GPU). Ties
// after objective 3: create the fewest instances; on one GPU, keep the most existing instances
// in place, then the first in EnumerateLayouts order; among identical GPUs the earlier change.
// A GPU with MIG off that is left alone has an empty target; turning MIG on counts as a change.
//
// How: identical GPUs are grouped; per group the candidate targets are reduced to one per
// distinct supply vector and dominated ones dropped; a greedy pass by marginal demand per
// changed GPU, local search (single and paired moves), then an exact branch and bound on small
// fleets (PlanOptions). Plain data and pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sharing/mig_geometry.h"
#include "sharing/mig_layout.h"
#include "sharing/mig_parted_config.h"

namespace accel::sharing {

/// A GPU instance that exists now.
struct ExistingInstance {
  MigPlacement placement;
  /// Processes run on it (or a pod holds it): it must not be destroyed.
  bool busy = false;
};

/// One GPU of the fleet as it is now.
struct FleetGpu {
  /// Node name ("" for a single-node plan).
  std::string node;
  /// NVML index on its node (mig-parted `devices: [index]`).
  int index = 0;
  /// Catalog model; never null in a parsed fleet.
  const GpuModel* model = nullptr;
  /// MIG mode on now.
  bool mig_enabled = true;
  /// A GPU with MIG off that runs work: it must not be touched.
  bool busy = false;
  /// Its GPU instances now (valid layout; empty with MIG off).
  std::vector<ExistingInstance> instances;
};

/// The GPUs to plan for.
struct Fleet {
  std::vector<FleetGpu> gpus;
};

/// Instances wanted per profile name, e.g. {"1g.10gb", 20}, {"3g.40gb", 4}. A name is resolved
/// on each GPU's model; models without that name cannot serve it.
using Demand = std::vector<std::pair<std::string, int>>;

/// Reads a fleet file (JSON or YAML, same shape):
///   gpus:
///     - {node: gpu-a, index: 0, model: H100-SXM5-80GB, mig-enabled: true,
///        instances: [{profile: 3g.40gb, start: 4, busy: true}]}
///     - {node: gpu-b, model: A100-SXM4-40GB, count: 8}      # 8 empty GPUs, indices 0..7
/// Throws InputError naming the file, the gpu entry and the field (unknown model, unknown
/// profile on that model, invalid current layout with the validator's reasons, ...).
Fleet ParseFleet(std::string_view text, const std::string& source);
Fleet LoadFleet(const std::string& path);

/// Reads a demand file: a map profile name → count ≥ 0 (JSON or YAML), optionally under a
/// top-level `demand:` key. Throws InputError.
Demand ParseDemand(std::string_view text, const std::string& source);
Demand LoadDemand(const std::string& path);

/// The plan for one GPU.
struct GpuPlan {
  /// Index into Fleet::gpus.
  int gpu = 0;
  /// The layout it should have (canonical); contains every busy instance.
  MigLayout target;
  /// Whether anything changes (instances or MIG mode).
  bool changed = false;
  /// Instances to destroy and to create, canonical order (empty when !changed).
  MigLayout destroy;
  MigLayout create;
};

/// Planner settings.
struct PlanOptions {
  /// Upper bound on planner work for big fleets: local-improvement rounds after the greedy
  /// pass. The result stays deterministic for a given input.
  int improvement_rounds = 2;
  /// Fleets of at most this many GPUs then get an exact branch-and-bound search seeded with the
  /// heuristic plan, stopped after `exact_node_limit` nodes (a count, not a time, so results do
  /// not depend on the machine). 0 nodes = heuristic only.
  int exact_max_gpus = 16;
  int64_t exact_node_limit = 2'000'000;
};

/// A whole plan.
struct Plan {
  /// One per fleet GPU, in fleet order.
  std::vector<GpuPlan> gpus;
  /// Per demanded profile name (demand order): {name, instances after the plan, capped at the
  /// demand}.
  std::vector<std::pair<std::string, int>> satisfied;
  /// Σ satisfied, Σ demand.
  int satisfied_total = 0;
  int demand_total = 0;
  /// GPUs with changed == true.
  int gpus_changed = 0;
  /// Σ FreeScore(target) over the fleet (a busy GPU with MIG off counts 0).
  int free_score = 0;
  /// Whether the plan is known to be optimal (the exact search finished, or nothing had to
  /// change); false says only that optimality was not proven.
  bool proven_optimal = false;
};

/// Plans `demand` on `fleet`. Never fails on well-formed input: unsatisfiable demand shows as
/// satisfied < demand. Runs in O(GPUs × patterns) for big fleets (1,000 GPUs well under 1 s).
Plan PlanMig(const Fleet& fleet, const Demand& demand, const PlanOptions& options = {});

/// The exhaustive optimum under the same objectives, for tests and small fleets only
/// (exponential: throws std::invalid_argument for more than 4 GPUs of one model or more than
/// 5·10^7 combinations).
Plan PlanMigExhaustive(const Fleet& fleet, const Demand& demand);

/// The plan as a mig-parted config: one config per node named `<prefix><node>` ("" node →
/// `<prefix>node`), one entry per GPU (`devices: [index]`, mig-enabled, its target counts).
/// mig-parted cannot express placements; the per-GPU placements are in Plan::gpus.
MigPartedConfig PlanToMigPartedConfig(const Fleet& fleet, const Plan& plan,
                                      const std::string& prefix = "accel-");

}  // namespace accel::sharing
