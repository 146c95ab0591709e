// Branch and bound for the planner on small fleets. GPUs of one class are interchangeable, so the
// search picks how many GPUs of each class take each option (a multiset), not which GPU does.
// Bounds for the GPUs still undecided: per row, the most any of their options could supply; in
// all, no more instances than fit in their weighted capacity (each option's Σ weight × supply,
// weight = memory slices, filled smallest rows first); the best free score each. All optimistic,
// so pruning never loses the optimum.
#include <algorithm>

#include "sharing/mig_plan_search.h"

namespace accel::sharing::plan_internal {
namespace {

class BranchAndBound {
 public:
  BranchAndBound(const Problem& problem, const std::vector<int>& weight, Assignment incumbent,
                 int64_t node_limit)
      : p_(problem), weight_(weight), rows_(problem.want.size()), limit_(node_limit),
        best_(std::move(incumbent)), best_score_(Evaluate(problem, best_)),
        current_(KeepAll(problem)), supply_(rows_, 0) {
    for (auto& counts : current_) std::fill(counts.begin(), counts.end(), 0);
    for (size_t r = 0; r < rows_; ++r) by_weight_.push_back(r);
    std::stable_sort(by_weight_.begin(), by_weight_.end(),
                     [&](size_t a, size_t b) { return weight_[a] < weight_[b]; });
    Precompute();
  }

  Assignment Run(bool* proven) {
    if (!p_.classes.empty()) Dfs(0, 0, p_.classes[0].gpus);
    *proven = !aborted_;
    return best_;
  }

 private:
  // suffix_[c][o]: per row, the most one GPU of class c supplies among options ≥ o; then the
  // best free score, then the largest weighted size. later_[c]: the same summed over every GPU
  // of classes ≥ c.
  void Precompute() {
    const size_t classes = p_.classes.size();
    suffix_.resize(classes);
    later_.assign(classes + 1, std::vector<int>(rows_ + 2, 0));
    for (size_t c = classes; c-- > 0;) {
      const OptionClass& k = p_.classes[c];
      suffix_[c].assign(static_cast<size_t>(k.options) + 1, std::vector<int>(rows_ + 2, 0));
      for (int o = k.options - 1; o >= 0; --o) {
        const int* s = k.Supply(o, static_cast<int>(rows_));
        int size = 0;
        for (size_t r = 0; r < rows_; ++r) {
          suffix_[c][o][r] = std::max(suffix_[c][o + 1][r], s[r]);
          size += weight_[r] * s[r];
        }
        suffix_[c][o][rows_] = std::max(suffix_[c][o + 1][rows_], k.free[static_cast<size_t>(o)]);
        suffix_[c][o][rows_ + 1] = std::max(suffix_[c][o + 1][rows_ + 1], size);
      }
      for (size_t r = 0; r < rows_ + 2; ++r) later_[c][r] = later_[c + 1][r] + k.gpus * suffix_[c][0][r];
    }
  }

  // Whether some completion of the current partial assignment could beat the incumbent.
  bool Promising(size_t c, int o, int rem) const {
    Score ub;
    const std::vector<int>& here = suffix_[c][static_cast<size_t>(o)];
    const std::vector<int>& later = later_[c + 1];
    int per_row = 0, now = 0;
    for (size_t r = 0; r < rows_; ++r) {
      per_row += std::min(p_.want[r], supply_[r] + rem * here[r] + later[r]);
      now += std::min(p_.want[r], supply_[r]);
    }
    int capacity = rem * here[rows_ + 1] + later[rows_ + 1];
    int by_capacity = now;
    for (size_t r : by_weight_) {
      const int missing = std::max(0, p_.want[r] - supply_[r]);
      const int fit = std::min(missing, capacity / std::max(weight_[r], 1));
      by_capacity += fit;
      capacity -= fit * weight_[r];
    }
    ub.satisfied = std::min(per_row, by_capacity);
    ub.changed = changed_ + (o > 0 ? rem : 0);
    ub.free = free_ + rem * here[rows_] + later[rows_];
    ub.created = created_;
    return ub > best_score_;
  }

  void Take(size_t c, int o, int n) {
    const OptionClass& k = p_.classes[c];
    const int* s = k.Supply(o, static_cast<int>(rows_));
    for (size_t r = 0; r < rows_; ++r) supply_[r] += n * s[r];
    current_[c][static_cast<size_t>(o)] += n;
    if (o != 0) changed_ += n;
    free_ += n * k.free[static_cast<size_t>(o)];
    created_ += n * k.created[static_cast<size_t>(o)];
  }

  void Leaf() {
    Score s;
    for (size_t r = 0; r < rows_; ++r) s.satisfied += std::min(p_.want[r], supply_[r]);
    s.changed = changed_;
    s.free = free_;
    s.created = created_;
    if (s > best_score_) best_score_ = s, best_ = current_;
  }

  // Decides how many of the `rem` undecided GPUs of class c take option o.
  void Dfs(size_t c, int o, int rem) {
    if (aborted_) return;
    if (++nodes_ > limit_) {
      aborted_ = true;
      return;
    }
    if (c == p_.classes.size()) return Leaf();
    const OptionClass& k = p_.classes[c];
    const size_t next_c = c + 1;
    const int next_rem = next_c < p_.classes.size() ? p_.classes[next_c].gpus : 0;
    if (o == k.options - 1) {
      Take(c, o, rem);
      Dfs(next_c, 0, next_rem);
      Take(c, o, -rem);
      return;
    }
    if (!Promising(c, o, rem)) return;
    for (int take = rem; take >= 0 && !aborted_; --take) {
      Take(c, o, take);
      Dfs(c, o + 1, rem - take);
      Take(c, o, -take);
    }
  }

  const Problem& p_;
  const std::vector<int>& weight_;
  const size_t rows_;
  const int64_t limit_;
  Assignment best_;
  Score best_score_;
  Assignment current_;
  std::vector<int> supply_;
  int changed_ = 0, free_ = 0, created_ = 0;
  int64_t nodes_ = 0;
  bool aborted_ = false;
  std::vector<std::vector<std::vector<int>>> suffix_;
  std::vector<std::vector<int>> later_;
  std::vector<size_t> by_weight_;  // rows, lightest first
};

}  // namespace

Assignment ExactSearch(const Problem& problem, const std::vector<int>& row_weight,
                       Assignment incumbent, int64_t node_limit, bool* proven) {
  return BranchAndBound(problem, row_weight, std::move(incumbent), node_limit).Run(proven);
}

}  // namespace accel::sharing::plan_internal
