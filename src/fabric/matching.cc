#include "fabric/matching.h"

#include <algorithm>
#include <cmath>

#include "common/min_cost_assignment.h"

namespace accel::fabric {
namespace {

using Cost = AssignmentCost;

// Bandwidths are compared in 1/1024 GB/s steps: NCCL's link bandwidths (multiples of
// 0.1875 GB/s) are exact there, so sums compare exactly.
long long Quantize(double gbs) { return std::llround(std::max(gbs, 0.0) * 1024); }

}  // namespace

std::vector<int> AssignWithCapacity(size_t gpus, size_t nics, const std::vector<PairCost>& costs,
                                    size_t capacity) {
  std::vector<int> out(gpus, -1);
  if (gpus == 0 || nics == 0 || costs.size() < gpus * nics) return out;
  if (capacity == 0) capacity = (gpus + nics - 1) / nics;
  if (capacity * nics < gpus) return out;

  // Field maxima, then digit widths: a digit holds the sum of its field over all GPUs.
  long long max_type = 0, max_bw = 0, max_hops = 0, max_rank = 0;
  for (const PairCost& c : costs) {
    max_type = std::max<long long>(max_type, c.type);
    max_bw = std::max(max_bw, Quantize(c.bandwidth_gbs));
    max_hops = std::max<long long>(max_hops, c.hops);
    max_rank = std::max<long long>(max_rank, c.nic_rank);
  }
  Cost g = static_cast<Cost>(gpus);
  Cost r_rank = g * max_rank + 1, r_hops = g * max_hops + 1, r_bw = g * max_bw + 1;
  auto encode = [&](const PairCost& c) {
    Cost bw_loss = max_bw - Quantize(c.bandwidth_gbs);
    return ((static_cast<Cost>(std::max(c.type, 0)) * r_bw + bw_loss) * r_hops +
            std::max(c.hops, 0)) * r_rank + std::max(c.nic_rank, 0);
  };

  size_t slots = nics * capacity;
  std::vector<Cost> matrix(gpus * slots);
  for (size_t i = 0; i < gpus; ++i) {
    for (size_t j = 0; j < slots; ++j) matrix[i * slots + j] = encode(costs[i * nics + j / capacity]);
  }
  std::vector<int> col(gpus, -1);
  if (!MinCostAssignment(matrix.data(), static_cast<int>(gpus), static_cast<int>(slots), col.data()))
    return out;
  for (size_t i = 0; i < gpus; ++i) out[i] = col[i] < 0 ? -1 : col[i] / static_cast<int>(capacity);
  return out;
}

}  // namespace accel::fabric
