#include "common/min_cost_assignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace accel {
namespace min_cost_assignment_test {

// Small costs with many ties, some forbidden pairs, and a level far up (as the engine's score).
AssignmentCost RandomCost(std::mt19937& rng, int range) {
  if (rng() % 5 == 0) return kForbidden;
  return static_cast<AssignmentCost>(rng() % range) << (rng() % 2 ? 70 : 3);
}

TEST(Assignment, FlatFormMatchesVectorForm) {
  std::mt19937 rng(3);
  for (int it = 0; it < 20000; ++it) {
    const int cols = 1 + static_cast<int>(rng() % 12), rows = 1 + static_cast<int>(rng() % cols);
    std::vector<std::vector<AssignmentCost>> m(rows, std::vector<AssignmentCost>(cols));
    std::vector<AssignmentCost> flat;
    for (auto& row : m)
      for (AssignmentCost& c : row) flat.push_back(c = RandomCost(rng, 1 + static_cast<int>(rng() % 8)));
    const std::vector<int> want = MinCostAssignment(m);
    std::vector<int> got(rows);
    const bool ok = MinCostAssignment(flat.data(), rows, cols, got.data());
    ASSERT_EQ(ok, !want.empty()) << "case " << it;
    if (ok) {
      ASSERT_EQ(got, want) << "case " << it;
    }
  }
}

// Equal rows (guest cells with the same demand) take the shortcut; it must give the Hungarian
// algorithm's answer exactly, ties and forbidden columns included.
TEST(Assignment, SameRowsShortcutMatchesHungarian) {
  std::mt19937 rng(5);
  for (int it = 0; it < 100000; ++it) {
    const int cols = 1 + static_cast<int>(rng() % 20), rows = 1 + static_cast<int>(rng() % std::min(cols, 8));
    std::vector<AssignmentCost> row(cols);
    const int range = 1 + static_cast<int>(rng() % 10);
    for (AssignmentCost& c : row) c = RandomCost(rng, range);
    const std::vector<int> want = MinCostAssignment(std::vector<std::vector<AssignmentCost>>(rows, row));
    std::vector<int> got(rows);
    const bool ok = SameRowsAssignment(row.data(), rows, cols, got.data());
    ASSERT_EQ(ok, !want.empty()) << "case " << it;
    if (ok) {
      ASSERT_EQ(got, want) << "case " << it;
    }
  }
}

TEST(Assignment, MoreRowsThanColumnsHasNoAssignment) {
  const AssignmentCost row[2] = {1, 2};
  int out[3];
  EXPECT_FALSE(SameRowsAssignment(row, 3, 2, out));
  EXPECT_TRUE(MinCostAssignment({{1, 2}, {1, 2}, {1, 2}}).empty());
}

}  // namespace
}  // namespace accel
