#include "placement/assignment.h"

#include <limits>

namespace accel::placement {

std::vector<int> MinCostAssignment(const std::vector<std::vector<Cost>>& cost) {
  const int rows = static_cast<int>(cost.size());
  if (rows == 0) return {};
  const int cols = static_cast<int>(cost[0].size());
  if (rows > cols) return {};
  const Cost inf = static_cast<Cost>(1) << 120;
  // Potentials u (rows) and v (columns), 1-based with a virtual column 0 (e-maxx formulation).
  std::vector<Cost> u(rows + 1, 0), v(cols + 1, 0);
  std::vector<int> match(cols + 1, 0), way(cols + 1, 0);
  for (int i = 1; i <= rows; ++i) {
    match[0] = i;
    int j0 = 0;
    std::vector<Cost> minv(cols + 1, inf);
    std::vector<bool> used(cols + 1, false);
    do {
      used[j0] = true;
      const int i0 = match[j0];
      Cost delta = inf;
      int j1 = 0;
      for (int j = 1; j <= cols; ++j) {
        if (used[j]) continue;
        Cost cur = cost[i0 - 1][j - 1] - u[i0] - v[j];
        if (cur < minv[j]) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j] < delta) {
          delta = minv[j];
          j1 = j;
        }
      }
      for (int j = 0; j <= cols; ++j) {
        if (used[j]) {
          u[match[j]] += delta;
          v[j] -= delta;
        } else {
          minv[j] -= delta;
        }
      }
      j0 = j1;
    } while (match[j0] != 0);
    do {
      int j1 = way[j0];
      match[j0] = match[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  std::vector<int> result(rows, -1);
  for (int j = 1; j <= cols; ++j)
    if (match[j] != 0) result[match[j] - 1] = j - 1;
  for (int i = 0; i < rows; ++i)
    if (result[i] < 0 || cost[i][result[i]] >= kForbidden) return {};
  return result;
}

}  // namespace accel::placement
