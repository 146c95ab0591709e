// GPU placement policies and the fragmentation measure: how the fleet ranks (host, GPUs) pairs
// for requests with GPUs by model and size (shares, MIG slices, whole GPUs of a model list) and
// pod CPU, and how much GPU capacity an expected request mix can no longer use.
//
// Fragmentation (docs/fleet-efficiency.md): for a host h and one kind of request m of the mix,
// F_m(h) is the free GPU capacity of h (thousandths) that m cannot use:
//   - all of it when m does not fit on h at all (CPU, memory, GPU count/size/model, MIG room);
//   - when m fits: for a share of d thousandths, the free part of each GPU with less than d
//     free; for whole GPUs, the free part of each GPU that is partly held; for a MIG profile,
//     the free part of each GPU where the profile has no room; for a CPU-only request, none
//     (FGD: a CPU-only task uses no GPU, so it makes none unusable);
// and F(h) = sum over m of weight(m) x F_m(h). This is FGD's measure (Weng et al., ATC'23);
// the fleet's figure is the sum over hosts. Beside it, GPU capacity on GPUs of a model no
// request of the mix may use is "not wanted by the mix" — not fragmentation, counted apart.
//
// Policies (the cost of giving a request on a host with one GPU choice; the lowest cost wins,
// ties by host order):
//   - kAccel (the default): FGD's fragmentation delta, with accel's corrections (see
//     gpu_policy.cc and docs/fleet-efficiency.md);
//   - kFgd: FGD as published: the increase of F(h);
//   - kBestFit, kPacking, kClustering, kDotProduct, kRandom: the paper's baselines.
//
// Thread-safety: a GpuScorer is used by one decision at a time (it memoizes per host state);
// the mix it reads is immutable.
#pragma once

#include <cstdint>
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
  /// Free GPU capacity in thousandths (sum of free_milli).
  int64_t FreeGpuMilli() const;
};

/// Fragmentation of one host for a mix, in GPU thousandths.
struct HostFragmentation {
  double fragmented_milli = 0;   ///< F(h): free capacity the mix (weighted) cannot use
  int64_t unwanted_milli = 0;    ///< free capacity on GPUs of models no entry allows
  int64_t free_milli = 0;        ///< all free GPU capacity
};

/// F(h) and the parts above for `host` under `mix` (host.allowed must be set when any entry
/// names models).
HostFragmentation FragmentationOf(const ShareHostState& host, const WorkloadMix& mix);

/// Scores GPU choices for one request under one policy.
class GpuScorer {
 public:
  /// `mix` may be null (the request alone is the mix). `seed` drives kRandom.
  GpuScorer(GpuPolicy policy, std::shared_ptr<const WorkloadMix> mix, uint64_t seed);

  /// The cost of giving `request` (its mix entry `ask`) to `host` with `choice` (lower is
  /// better). `before` is the host now; `after` the host with the request given. `host_key`
  /// identifies `before`'s state (equal keys: equal states) for memoizing F.
  double Cost(const MixEntry& ask, const ShareHostState& before, const ShareHostState& after,
              uint64_t before_key, uint64_t after_key, const placement::GpuChoice& choice);

  GpuPolicy policy() const { return policy_; }
  const WorkloadMix& mix() const { return *mix_; }

 private:
  double Fragmentation(const ShareHostState& host, uint64_t key);
  GpuPolicy policy_;
  std::shared_ptr<const WorkloadMix> mix_;
  uint64_t rng_;
  std::unordered_map<uint64_t, double> memo_;
};

}  // namespace accel::fleet
