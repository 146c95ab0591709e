// Minimum-cost assignment of rows to distinct columns (Hungarian algorithm, O(rows² · cols)).
//
// Placement uses it to put guest cells (rows) on distinct host nodes (columns); fabric to give
// GPUs their NICs (columns: NIC slots). Costs are
// 128-bit so that lexicographic score levels can be packed into one number without overflow.
// Pure functions; the flat form allocates nothing for up to 64 columns.
#pragma once

#include <vector>

namespace accel {

using AssignmentCost = __int128;

/// A cost that marks a forbidden (row, column) pair.
constexpr AssignmentCost kForbidden = static_cast<AssignmentCost>(1) << 100;

/// Assigns each of the rows of `cost` (rows ≤ columns; every row the same length) to a distinct
/// column, minimizing the total. Returns the column of each row, or an empty vector when rows
/// exceed columns or every complete assignment uses a kForbidden pair. Ties are broken the same
/// way for the same input.
std::vector<int> MinCostAssignment(const std::vector<std::vector<AssignmentCost>>& cost);

/// The same on a row-major rows x cols matrix: writes the column of each row to out[0..rows)
/// and returns true, or returns false (out unspecified) where the vector form returns empty.
bool MinCostAssignment(const AssignmentCost* cost, int rows, int cols, int* out);

/// MinCostAssignment of a matrix whose `rows` rows all equal `row` (guest cells with the same
/// demand), in O(rows · cols): the cheapest columns in order of cost, ties to the lower column,
/// which is what the Hungarian algorithm returns on such a matrix (assignment_test.cc holds it
/// to that). Same return contract.
bool SameRowsAssignment(const AssignmentCost* row, int rows, int cols, int* out);

}  // namespace accel
