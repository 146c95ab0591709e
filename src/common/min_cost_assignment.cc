#include "common/min_cost_assignment.h"

#include "common/small_vector.h"

namespace accel {

bool MinCostAssignment(const AssignmentCost* cost, int rows, int cols, int* out) {
  if (rows == 0 || rows > cols) return false;
  const AssignmentCost inf = static_cast<AssignmentCost>(1) << 120;
  // Potentials u (rows) and v (columns), 1-based with a virtual column 0 (e-maxx formulation).
  SmallVector<AssignmentCost, 65> u(rows + 1, 0), v(cols + 1, 0), minv(cols + 1, inf);
  SmallVector<int, 65> match(cols + 1, 0), way(cols + 1, 0);
  SmallVector<char, 65> used(cols + 1, 0);
  for (int i = 1; i <= rows; ++i) {
    match[0] = i;
    int j0 = 0;
    minv.assign(cols + 1, inf);
    used.assign(cols + 1, 0);
    do {
      used[j0] = 1;
      const int i0 = match[j0];
      const AssignmentCost* row = cost + static_cast<size_t>(i0 - 1) * cols;
      AssignmentCost delta = inf;
      int j1 = 0;
      for (int j = 1; j <= cols; ++j) {
        if (used[j]) continue;
        AssignmentCost cur = row[j - 1] - u[i0] - v[j];
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
  for (int i = 0; i < rows; ++i) out[i] = -1;
  for (int j = 1; j <= cols; ++j)
    if (match[j] != 0) out[match[j] - 1] = j - 1;
  for (int i = 0; i < rows; ++i)
    if (out[i] < 0 || cost[static_cast<size_t>(i) * cols + out[i]] >= kForbidden) return false;
  return true;
}

bool SameRowsAssignment(const AssignmentCost* row, int rows, int cols, int* out) {
  if (rows == 0 || rows > cols) return false;
  // Selection, not a sort: rows is the guest's cell count, a handful.
  SmallVector<char, 64> taken(cols, 0);
  for (int i = 0; i < rows; ++i) {
    int best = -1;
    for (int j = 0; j < cols; ++j)
      if (!taken[j] && row[j] < kForbidden && (best < 0 || row[j] < row[best])) best = j;
    if (best < 0) return false;
    taken[best] = 1;
    out[i] = best;
  }
  return true;
}

std::vector<int> MinCostAssignment(const std::vector<std::vector<AssignmentCost>>& cost) {
  const int rows = static_cast<int>(cost.size());
  if (rows == 0) return {};
  const int cols = static_cast<int>(cost[0].size());
  if (rows > cols) return {};
  std::vector<AssignmentCost> flat;
  flat.reserve(static_cast<size_t>(rows) * cols);
  for (const auto& row : cost) flat.insert(flat.end(), row.begin(), row.end());
  std::vector<int> result(rows, -1);
  if (!MinCostAssignment(flat.data(), rows, cols, result.data())) return {};
  return result;
}

}  // namespace accel
