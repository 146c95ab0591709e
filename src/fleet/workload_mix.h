// WorkloadMix: the requests a fleet expects, by kind and how often each comes — what
// fragmentation is measured against ("GPU capacity the expected requests cannot use") and what
// the fragmentation-aware policies (fleet/gpu_policy.h) keep usable.
//
// Built from a pod list (each distinct shape once, weighted by how many pods have it: the
// "typical pods" of the FGD paper), from flavors (each once, equal weights unless given), or
// from the live claims of a store. Plain data; immutable once built, so one mix may be read by
// many schedulers at once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "placement/request.h"

namespace accel::fleet {

/// One kind of request and its share of the mix.
struct MixEntry {
  std::string name;            ///< a readable key, e.g. "1x470m cpu 6000m mem 12288Mi" or a flavor name
  int64_t cpu_milli = 0;       ///< CPU thousandths (pods), or vcpus x 1000 (flavors)
  uint64_t memory_mib = 0;     ///< memory
  int gpu_count = 0;           ///< GPUs; 0 = a CPU-only request
  int gpu_milli = 0;           ///< thousandths of each GPU (1000 = whole)
  std::string mig_profile;     ///< MIG profile; "" = none
  std::vector<std::string> models;  ///< allowed GPU models; empty = any
  /// The request a scheduler would place for this entry (flavor, or a pod-shaped request).
  placement::PlacementRequest request;
  double weight = 0;           ///< how often it comes, relative; the mix normalizes to sum 1
  /// GPU thousandths it asks for: gpu_count x gpu_milli.
  int64_t GpuMilli() const { return static_cast<int64_t>(gpu_count) * gpu_milli; }
};

struct WorkloadMix {
  std::vector<MixEntry> entries;  ///< weights sum to 1 (or the mix is empty)
  /// Scales weights to sum 1; entries of weight 0 are dropped.
  void Normalize();
};

/// A pod-shaped request: `cpu_milli` thousandths of shared CPU, `memory_mib`, and `gpu_count`
/// GPUs of `gpu_milli` thousandths each (count 1 with milli < 1000 = a share; count 0 = none),
/// of `models` (empty = any). The request has no guest NUMA cells.
placement::PlacementRequest PodRequest(const std::string& name, int64_t cpu_milli, uint64_t memory_mib,
                                       int gpu_count, int gpu_milli, const std::vector<std::string>& models);

/// The mix entry of `request` (weight 0): its CPU, memory and GPU demand read off the request
/// (cpu_milli + vcpus x 1000; a GpuRequest, or whole GPUs of PCI aliases).
MixEntry MixEntryOf(const placement::PlacementRequest& request);

}  // namespace accel::fleet
