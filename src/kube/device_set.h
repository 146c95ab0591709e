// Choosing which devices a container gets: the set of `size` devices with the best
// interconnect (GetPreferredAllocation), and the spreading of time-sliced replicas over
// physical GPUs.
//
// Pure functions over small inputs; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "devices/interconnect.h"

namespace accel::kube {

/// The best set of `size` devices among `available` (indices into `interconnect`) that contains
/// every index in `required`: maximal set score (sum of PairScore over the set's pairs). Ties
/// (fragmentation): the set whose remainder (available minus the set) has the largest sum of
/// pair scores — for sets of equal score that is the set with the smallest sum of "degrees",
/// a device's degree being its PairScore summed over all available devices, so the devices
/// least tied to the rest go first; then the lexicographically smallest ascending index list.
/// Deterministic and independent of the order of `available` (duplicates and indices outside
/// the interconnect are ignored). Returns indices ascending; empty when size ≤ 0,
/// |required| > size, a required index is not available, or fewer than `size` (or more than
/// 64) are available. Exact (equals BestDeviceSetExhaustive) for up to 16 available devices,
/// by branch and bound, well under 50 µs there; above 16 a node-budgeted branch and bound
/// (its first dive is the greedy set) polished by best-improvement single swaps: a good set,
/// not always the best.
std::vector<int> BestDeviceSet(const devices::Interconnect& interconnect,
                               const std::vector<int>& available, const std::vector<int>& required,
                               int size);

/// The same answer by exhaustive search over all subsets; for tests (exponential).
std::vector<int> BestDeviceSetExhaustive(const devices::Interconnect& interconnect,
                                         const std::vector<int>& available,
                                         const std::vector<int>& required, int size);

/// How replicas of shared devices are spread (NVIDIA's sharedDevicesAllocationPolicy).
enum class ReplicaPolicy {
  kDistributed,  ///< take from the physical device with the fewest replicas already in use
  kPacked,       ///< take from the one with the most (keeps whole GPUs free)
};

/// One replica offered by the kubelet.
struct ReplicaCandidate {
  std::string id;        ///< "GPU-…::3"
  std::string physical;  ///< "GPU-…"
};

/// Picks `size` replica ids from `available` (plus every id of `required`, first): each next
/// pick comes from the physical device chosen by `policy`, where "in use" counts that device's
/// replicas not in `available` (`total_replicas` per physical device minus its available ones)
/// plus those already picked in this request; ties by fewer picks in this request, then
/// physical id, then replica id (shorter first, so "::2" before "::10"). So two replicas of one
/// request land on two GPUs whenever two GPUs have a free replica. Returns required ids (in
/// their order, duplicates dropped) then picks in pick order; empty when size ≤ 0,
/// |required| > size, a required id is not in `available`, or fewer than `size` are available.
std::vector<std::string> PickReplicas(const std::vector<ReplicaCandidate>& available,
                                      const std::vector<std::string>& required, int size,
                                      int total_replicas, ReplicaPolicy policy);

}  // namespace accel::kube
