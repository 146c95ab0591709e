// The planner's search over an abstract problem: classes of interchangeable GPUs, each with a
// few options (option 0 = keep the GPU as it is; the others change it), each option supplying
// instances per demand row and a free score. Internal to mig_planner.cc; not part of the
// contract.
//
// Objective, lexicographic: maximise Σ_row min(want, supply); minimise GPUs not on option 0;
// maximise Σ free; then, as a tie-break, create the fewest instances. Plain data and free
// functions; thread-safe.
#pragma once

#include <cstdint>
#include <tuple>
#include <vector>

namespace accel::sharing::plan_internal {

/// GPUs that are identical for planning (same model, layout, busy instances).
struct OptionClass {
  /// GPUs in the class.
  int gpus = 0;
  /// Options; option 0 keeps the GPU unchanged.
  int options = 0;
  /// options × rows: instances each option supplies per demand row.
  std::vector<int> supply;
  /// Free score per option.
  std::vector<int> free;
  /// Instances each option creates (0 for keep).
  std::vector<int> created;

  const int* Supply(int option, int rows) const { return supply.data() + option * rows; }
};

struct Problem {
  /// Instances wanted per demand row.
  std::vector<int> want;
  std::vector<OptionClass> classes;
};

/// (satisfied, -changed, free, -created): bigger is better.
struct Score {
  int satisfied = 0;
  int changed = 0;
  int free = 0;
  int created = 0;
  auto Key() const { return std::tuple(satisfied, -changed, free, -created); }
  bool operator>(const Score& o) const { return Key() > o.Key(); }
  bool operator==(const Score& o) const { return Key() == o.Key(); }
};

/// count[class][option]: how many GPUs of the class take the option.
using Assignment = std::vector<std::vector<int>>;

/// Everyone keeps.
Assignment KeepAll(const Problem& problem);

Score Evaluate(const Problem& problem, const Assignment& assignment);

/// Changes kept GPUs one at a time, always the change that adds the most weighted unsatisfied
/// demand (weight per row; ties: higher free score, fewer instances created, earlier class,
/// earlier option), until no change adds demand.
Assignment Greedy(const Problem& problem, const std::vector<int>& row_weight);

/// Local search from `start`: moves one GPU to another option, or (when the number of possible
/// moves is at most `pair_limit`) two GPUs at once, accepting strict improvements; at most
/// `rounds` sweeps over the moves.
Assignment Improve(const Problem& problem, Assignment start, int rounds, int64_t pair_limit);

/// Branch and bound over the options of every class, seeded with `incumbent`; `row_weight`
/// (positive, e.g. memory slices per instance) sharpens its capacity bound. Visits at most
/// `node_limit` nodes; *proven is set when it finished (the result is optimal).
Assignment ExactSearch(const Problem& problem, const std::vector<int>& row_weight,
                       Assignment incumbent, int64_t node_limit, bool* proven);

}  // namespace accel::sharing::plan_internal
