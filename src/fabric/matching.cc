#include "fabric/matching.h"

#include <algorithm>
#include <cmath>

namespace accel::fabric {
namespace {

using Cost = __int128;

constexpr Cost kInfinity = static_cast<Cost>(1) << 120;

// Bandwidths are compared in 1/1024 GB/s steps: NCCL's link bandwidths (multiples of
// 0.1875 GB/s) are exact there, so sums compare exactly.
long long Quantize(double gbs) { return std::llround(std::max(gbs, 0.0) * 1024); }

// Hungarian method (potentials, shortest augmenting paths) for rows <= cols; returns the
// column of each row.
std::vector<int> Hungarian(size_t rows, size_t cols, const std::vector<Cost>& a) {
  size_t n = rows, m = cols;
  std::vector<Cost> u(n + 1, 0), v(m + 1, 0), minv(m + 1);
  std::vector<size_t> p(m + 1, 0), way(m + 1, 0);
  std::vector<char> used(m + 1);
  for (size_t i = 1; i <= n; ++i) {
    p[0] = i;
    size_t j0 = 0;
    std::fill(minv.begin(), minv.end(), kInfinity);
    std::fill(used.begin(), used.end(), 0);
    do {
      used[j0] = 1;
      size_t i0 = p[j0], j1 = 0;
      Cost delta = kInfinity;
      for (size_t j = 1; j <= m; ++j) {
        if (used[j]) continue;
        Cost cur = a[(i0 - 1) * m + (j - 1)] - u[i0] - v[j];
        if (cur < minv[j]) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j] < delta) {
          delta = minv[j];
          j1 = j;
        }
      }
      for (size_t j = 0; j <= m; ++j) {
        if (used[j]) {
          u[p[j]] += delta;
          v[j] -= delta;
        } else {
          minv[j] -= delta;
        }
      }
      j0 = j1;
    } while (p[j0] != 0);
    do {
      size_t j1 = way[j0];
      p[j0] = p[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> col(n, -1);
  for (size_t j = 1; j <= m; ++j) {
    if (p[j] != 0) col[p[j] - 1] = static_cast<int>(j - 1);
  }
  return col;
}

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
  std::vector<int> col = Hungarian(gpus, slots, matrix);
  for (size_t i = 0; i < gpus; ++i) out[i] = col[i] < 0 ? -1 : col[i] / static_cast<int>(capacity);
  return out;
}

}  // namespace accel::fabric
