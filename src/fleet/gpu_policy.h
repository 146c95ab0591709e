// GPU placement policies and the fragmentation measure: how the fleet ranks (host, GPUs) pairs
// for requests with GPUs by model and size (shares, MIG slices, whole GPUs of a model list) and
// pod CPU, and how much GPU capacity an expected request mix can no longer use.
//
// Fragmentation (docs/fleet-efficiency.md), FGD's measure (Weng et al., ATC'23): for a host h
// and one kind of request m of the mix, F_m(h) is the free GPU capacity of h (thousandths) that
// m cannot use — all of it when m does not fit on h at all (CPU, GPU count/size/model, MIG room;
// memory is not part of it, as in FGD) or uses no GPU; when m fits, the free part of each GPU
// that has less free than a share of m asks (for whole GPUs: each partly held GPU; for a MIG
// profile: each GPU where no allowed start of the profile is free). F(h) = sum over m of
// weight(m) x F_m(h). The scorer's F (GpuScorer::Fragmentation) is this; what `accel fleet
// capacity` reports is the same idea with the engine's exact fills (fleet/capacity.h).
//
// Policies (the cost of giving a request on a host with one GPU choice; the lowest cost wins,
// ties by host order):
//   - kAccel (the default): FGD's score of the change of F(h) + S(h), where S(h) is the GPU
//     capacity of h its free CPU cannot serve at the mix's CPU per GPU (CpuStranded): FGD only
//     sees CPU once a kind of request no longer fits at all, so it spends the CPU of hosts whose
//     GPUs will need it (CPU-only pods on CPU-poor hosts, CPU-heavy pods beside GPUs that then
//     starve); ties: the fullest GPU within a host, then the seeded host order. Measured on the
//     openb traces in docs/fleet-efficiency.md;
//   - kFgd: FGD as published: the increase of F(h);
//   - kBestFit, kPacking, kClustering, kDotProduct, kRandom: the paper's baselines.
//
// Thread-safety: a GpuScorer is used by one decision at a time (it memoizes per host state);
// the mix it reads is immutable.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "fleet/workload_mix.h"
#include "placement/gpu_fit.h"

namespace accel::fleet {

enum class GpuPolicy {
  kAccel,       ///< accel's fragmentation-aware policy (default)
  kFgd,         ///< Fragmentation Gradient Descent as published
  kBestFit,     ///< least weighted free resource left on the host
  kPacking,     ///< GPUs already in use first: shared, then partly used hosts, then idle ones
  kClustering,  ///< hosts already running the same kind of request first
  kDotProduct,  ///< largest dot product of the request and the host's free resources
  kRandom,      ///< any host that fits, uniformly
};

/// "accel", "fgd", "best-fit", "packing", "clustering", "dot-product", "random".
const char* GpuPolicyName(GpuPolicy policy);
/// Reads a policy name; throws InputError naming `where` and every name when it is none.
GpuPolicy ParseGpuPolicy(const std::string& text, const std::string& where);
/// Every policy, default first.
const std::vector<GpuPolicy>& AllGpuPolicies();

/// What the policies read of one host: free and total CPU and memory, and its GPUs.
struct ShareHostState {
  int64_t free_cpu_milli = 0;      ///< shared CPU thousandths free
  int64_t total_cpu_milli = 0;     ///< shared CPU capacity in thousandths
  uint64_t free_memory_mib = 0;    ///< base-page memory free for floating guests
  uint64_t total_memory_mib = 0;
  std::vector<placement::GpuSlot> gpus;  ///< the host's accelerators, PCI order
  /// Per mix entry, the GPUs of a model it allows (bit i = gpus[i]); all ones without models.
  const std::vector<uint64_t>* allowed = nullptr;
  /// Per mix entry asking for a MIG profile, per GPU: the profile's shape on that GPU's model
  /// (null: the model has no such profile); empty for other entries. Null = no MIG entries.
  const std::vector<std::vector<const placement::MigShape*>>* mig_shapes = nullptr;
  /// Placements on the host by their GPU shape: whole GPUs by count (1, 2, 8, ...), 0 for a
  /// share or MIG slice (what GpuClustering groups by); null = unknown.
  const std::map<int, int>* gpu_shapes = nullptr;
  /// Identifies the hardware (equal ids: same GPUs and models), for memoizing.
  uint32_t hardware = 0;
  /// Identifies the host's hardware, policy and share state (fields above but allowed and
  /// gpu_shapes, plus the hardware's identity): set by Summarize, read by memos.
  uint64_t key = 0;
  /// Free GPU capacity in thousandths (sum of free_milli).
  int64_t FreeGpuMilli() const;
};

/// ShareHostState::key of `host` on hardware identified by `hardware_identity`.
uint64_t ShareStateKey(const ShareHostState& host, uint64_t hardware_identity);


/// A choice's cost under a policy: hosts are ranked by the cost of their best choice (lower
/// first); within a host, choices by (cost, within), then GPU order.
struct ChoiceCost {
  double cost = 0;    ///< the host's rank under the policy
  double within = 0;  ///< the policy's preference among one host's choices (GPU selection)
};

/// Scores GPU choices for one request under one policy.
class GpuScorer {
 public:
  /// `mix` may be null (UseAskAsMix then makes one from the first request). `seed` drives kRandom.
  GpuScorer(GpuPolicy policy, std::shared_ptr<const WorkloadMix> mix, uint64_t seed);

  /// The cost of giving `ask` to a host with `choice`: `before` is the host now, `after` the
  /// host with the request given.
  ChoiceCost Cost(const MixEntry& ask, const ShareHostState& before, const ShareHostState& after,
                  const placement::GpuChoice& choice);

  /// F(h) of `host` under the mix the policy keeps usable (FGD's, CPU-only entries included as
  /// FGD counts them), memoized by host state.
  double Fragmentation(const ShareHostState& host);
  /// GPU thousandths of `host` its free CPU cannot serve at the mix's CPU per GPU thousandth:
  /// max(0, free GPU - free CPU / CpuPerGpuMilli()).
  double CpuStranded(const ShareHostState& host);
  /// The mix's CPU thousandths per GPU thousandth over its GPU-asking entries (weighted); 0
  /// without any.
  double CpuPerGpuMilli();

  GpuPolicy policy() const { return policy_; }
  const WorkloadMix& mix() const { return *mix_; }
  /// When the scorer has no mix: the mix becomes `ask`, and for a share or MIG slice also a whole
  /// GPU of the models it allows, equally weighted (more of the same, and whole GPUs kept whole).
  void UseAskAsMix(const MixEntry& ask);
  /// Starts a decision (kRandom draws anew) and, per host, a host's choices (kRandom gives all
  /// of one host's choices the same host rank).
  void BeginDecision();
  void BeginHost(uint64_t host_hash);

  /// A host's best choice for one kind of request, kept across decisions by (host state key,
  /// request shape): for policies whose cost depends on the host state only (not kRandom,
  /// kClustering).
  struct CachedBest {
    bool fits = false;
    placement::GpuChoice choice;
    ChoiceCost cost;
    std::string why;  ///< when it does not fit: why (the scheduler's cause and example)
  };
  std::unordered_map<uint64_t, CachedBest>& best_cache() { return best_cache_; }

  /// Per mix entry, the GPUs of `accelerators` (a host's, PCI order) its models allow, as
  /// ShareHostState::allowed wants it; memoized per hardware (`hardware` identifies it).
  const std::vector<uint64_t>& AllowedMasks(const void* hardware,
                                            const std::vector<const topology::PciDevice*>& accelerators);
  /// Per mix entry with a MIG profile, per GPU of `accelerators`, its MIG shape (see
  /// ShareHostState::mig_shapes); memoized per hardware like AllowedMasks.
  const std::vector<std::vector<const placement::MigShape*>>& MigShapes(
      const void* hardware, const std::vector<const topology::PciDevice*>& accelerators);

 private:
  GpuPolicy policy_;
  std::shared_ptr<const WorkloadMix> mix_;
  uint64_t rng_;
  uint64_t decision_draw_ = 0;
  uint64_t host_draw_ = 0;
  double cpu_per_gpu_milli_ = -1;  ///< computed on first use
  std::unordered_map<uint64_t, double> memo_;
  std::unordered_map<const void*, std::vector<uint64_t>> allowed_;
  std::unordered_map<const void*, std::vector<std::vector<const placement::MigShape*>>> mig_;
  std::unordered_map<uint64_t, CachedBest> best_cache_;
};

}  // namespace accel::fleet
