// Minimum-cost assignment of rows to distinct columns (Hungarian algorithm, O(rows² · cols)).
//
// The engine uses it to put guest cells (rows) on distinct host nodes (columns). Costs are
// 128-bit so that lexicographic score levels can be packed into one number without overflow.
// Pure function.
#pragma once

#include <vector>

namespace accel::placement {

using Cost = __int128;

/// A cost that marks a forbidden (row, column) pair.
constexpr Cost kForbidden = static_cast<Cost>(1) << 100;

/// Assigns each of the rows of `cost` (rows ≤ columns; every row the same length) to a distinct
/// column, minimizing the total. Returns the column of each row, or an empty vector when rows
/// exceed columns or every complete assignment uses a kForbidden pair. Ties are broken the same
/// way for the same input.
std::vector<int> MinCostAssignment(const std::vector<std::vector<Cost>>& cost);

}  // namespace accel::placement
