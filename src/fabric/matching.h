// The exact assignment behind GPU↔NIC pairing: each GPU gets one NIC, each NIC serves at most
// a capacity of GPUs, and the sum of the pairs' costs, compared lexicographically, is minimal.
//
// The lexicographic cost is folded into one 128-bit integer whose digits are wide enough that
// sums over all GPUs never carry into the next field, and solved with the Hungarian method on
// NIC slots (each NIC repeated `capacity` times): O(G² · N·capacity), microseconds at 8×8.
// Pure function; thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace accel::fabric {

/// The cost of giving one GPU one NIC; lower is better, fields compared in order.
struct PairCost {
  int type = 0;              ///< NCCL path type (PathType value)
  double bandwidth_gbs = 0;  ///< path bandwidth; higher is better (counted in 1/1024 GB/s)
  int hops = 0;              ///< PCIe hops
  int nic_rank = 0;          ///< the NIC's position in PCI order (prefers lower addresses)
};

/// Returns, for each of `gpus` GPUs, the NIC index in [0, nics) it gets, minimising
/// (Σ type, −Σ bandwidth, Σ hops, Σ nic_rank) lexicographically with each NIC used by at most
/// `capacity` GPUs (0 = ceil(gpus / nics)). `costs` is row-major gpus × nics. Returns `gpus`
/// entries of -1 when nics == 0 or capacity × nics < gpus. Deterministic: the same input
/// always gives the same assignment.
std::vector<int> AssignWithCapacity(size_t gpus, size_t nics, const std::vector<PairCost>& costs,
                                    size_t capacity = 0);

}  // namespace accel::fabric
